"""Bad input to the TREC readers, join_run_qrels and the label/option checks.

Each test is one case of the reliability audit (sections 1a, 1h, 1i; failures F5, F6, F8, F9,
F11) or of the newcomer trial (F4, F7, F8, F10), fed from its repro. Expected values are
written by hand.
"""

from __future__ import annotations

import gzip
import warnings
from pathlib import Path

import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval.errors import (
    ColumnTypeError,
    ColumnValueError,
    InvalidOptionError,
    QueryCoverageWarning,
    RankEvalError,
    TrecFormatError,
)

DATA = Path(__file__).parents[1] / "data"
RUN = "1 Q0 a 1 3.0 r\n1 Q0 b 2 2.0 r\n1 Q0 c 3 1.0 r\n"
QRELS = "1 0 a 0\n1 0 b 1\n1 0 c 1\n"


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def trec_error(read, path: Path) -> TrecFormatError:
    with pytest.raises(TrecFormatError) as caught:
        read(path)
    assert caught.value.path == str(path)
    return caught.value


# --- TREC readers (audit 1h, F5, F11; trial F8) -------------------------------------------


def test_t04_score_that_is_not_a_number_names_file_and_line(tmp_path):
    path = write(tmp_path, "run.txt", "1 Q0 a 1 3.0 r\n1 Q0 b 2 2.0 r\n1 Q0 c 3 abc r\n")
    error = trec_error(rke.read_trec_run, path)
    assert str(error) == f"{path}:3: score 'abc' is not a number"
    assert error.line == 3


@pytest.mark.parametrize("line", ["1 Q0 c", "1 Q0 c 3", "1 Q0 c 3 1.0"])
def test_t05_truncated_run_line_is_an_error_not_unretrieved(tmp_path, line):
    path = write(tmp_path, "run.txt", f"1 Q0 a 1 3.0 r\n\n1 Q0 b 2 2.0 r\n{line}\n")
    error = trec_error(rke.read_trec_run, path)
    got = len(line.split())
    # Line 4: the blank line 2 counts, as in an editor.
    assert str(error) == (f"{path}:4: expected 6 fields (query Q0 item rank score tag), got {got}")


def test_t07_qrels_line_without_label_is_an_error_not_unjudged(tmp_path):
    path = write(tmp_path, "qrels.txt", "1 0 a 0\n1 0 b 1\n1 0 c\n")
    error = trec_error(rke.read_trec_qrels, path)
    assert str(error) == f"{path}:3: expected 4 fields (query iter item label), got 3"


def test_trial_f8_three_column_qrels_names_the_field_count(tmp_path):
    path = write(tmp_path, "qrels.txt", "303 CR93E-1282 1\n303 CR93E-1283 0\n")
    error = trec_error(rke.read_trec_qrels, path)
    assert str(error) == f"{path}:1: expected 4 fields (query iter item label), got 3"


def test_trial_f8_three_column_run_names_the_field_count(tmp_path):
    path = write(tmp_path, "run.txt", "303 doc1 0.2775\n")
    error = trec_error(rke.read_trec_run, path)
    assert "run.txt:1: expected 6 fields" in str(error)
    assert str(error).endswith("got 3")


def test_t08_fractional_label_is_refused(tmp_path):
    path = write(tmp_path, "qrels.txt", "1 0 a 0\n1 0 b 1\n1 0 c 1\n1 0 d 0\n1 0 e 1.5\n")
    error = trec_error(rke.read_trec_qrels, path)
    assert str(error).startswith(f"{path}:5: label '1.5' is not an integer")


def test_t10_header_line_is_named_as_a_likely_header(tmp_path):
    path = write(tmp_path, "run.txt", "query Q0 docno rank score tag\n" + RUN)
    error = trec_error(rke.read_trec_run, path)
    assert str(error) == (
        f"{path}:1: score 'score' is not a number (a header line? TREC files have none)"
    )


def test_t11_non_utf8_byte_names_file_and_line(tmp_path):
    path = write(tmp_path, "run.txt", b"1 Q0 a 1 3.0 r\n1 Q0 b 2 2.0 r\n1 Q0 \xff 3 1.0 r\n")
    error = trec_error(rke.read_trec_run, path)
    assert str(error).startswith(f"{path}:3: a byte sequence that is not UTF-8")
    assert error.line == 3


@pytest.mark.parametrize("text", ["", "\n  \n\t\n"])
def test_t14_empty_file_names_the_file(tmp_path, text):
    path = write(tmp_path, "run.txt", text)
    error = trec_error(rke.read_trec_run, path)
    assert str(error).startswith(f"{path}: the run file is empty")
    qrels = write(tmp_path, "qrels.txt", text)
    assert "qrels file is empty" in str(trec_error(rke.read_trec_qrels, qrels))


def test_five_field_run_line_is_refused(tmp_path):
    # Without the tag or without Q0? The score field would be guessed: refused (trec_eval too).
    path = write(tmp_path, "run.txt", "1 Q0 a 1 3.0\n")
    assert str(trec_error(rke.read_trec_run, path)).endswith("got 5")


def test_fields_after_the_tag_are_ignored(tmp_path):
    path = write(tmp_path, "run.txt", "1 Q0 a 1 3.0 r junk at the end\n")
    assert rke.read_trec_run(path).collect().rows() == [("1", "a", 3.0)]


def test_qrels_line_with_five_fields_is_refused(tmp_path):
    path = write(tmp_path, "qrels.txt", "1 0 a 1 0.5\n")
    assert str(trec_error(rke.read_trec_qrels, path)).endswith("got 5")


def test_missing_file_is_a_file_not_found_error(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nothing\.txt"):
        rke.read_trec_run(tmp_path / "nothing.txt")


def test_gzip_crlf_and_bom_read_the_same_as_plain(tmp_path):
    plain = rke.read_trec_run(write(tmp_path, "run.txt", RUN)).collect()
    crlf_bom = b"\xef\xbb\xbf" + RUN.replace("\n", "\r\n").encode()
    packed = tmp_path / "run.txt.gz"
    packed.write_bytes(gzip.compress(crlf_bom))
    assert rke.read_trec_run(packed).collect().equals(plain)
    assert plain.rows() == [("1", "a", 3.0), ("1", "b", 2.0), ("1", "c", 1.0)]
    qrels = b"\xef\xbb\xbf" + QRELS.replace("\n", "\r\n").encode()
    judged = rke.read_trec_qrels(write(tmp_path, "qrels.txt", qrels)).collect()
    assert judged.rows() == [("1", "a", 0), ("1", "b", 1), ("1", "c", 1)]


def test_run_tag_column_on_request(tmp_path):
    path = write(tmp_path, "run.txt", "1 Q0 a 1 3.0 bm25\n1 Q0 a 1 2.0 dense\n")
    assert rke.read_trec_run(path, tag=True).collect()["tag"].to_list() == ["bm25", "dense"]


def test_f5_well_formed_files_evaluate_by_hand(tmp_path):
    # a (nonrel) 3.0, b (rel) 2.0, c (rel) 1.0: AP = (1/2 + 2/3) / 2.
    run = rke.read_trec_run(write(tmp_path, "run.txt", RUN))
    qrels = rke.read_trec_qrels(write(tmp_path, "qrels.txt", QRELS))
    value = rke.evaluate(rke.join_run_qrels(run, qrels).collect(), ["map"]).item()
    assert value == pytest.approx((1 / 2 + 2 / 3) / 2, abs=1e-15)


# --- join_run_qrels (audit 1i; trial F4, F7, F10) -----------------------------------------


def _run(query_dtype=pl.String, item_dtype=pl.String) -> pl.DataFrame:
    return pl.DataFrame(
        {"query": ["1", "1"], "item": ["1", "2"], "score": [2.0, 1.0]}
    ).with_columns(pl.col("query").cast(query_dtype), pl.col("item").cast(item_dtype))


def _qrels() -> pl.DataFrame:
    return pl.DataFrame({"query": ["1", "1"], "item": ["1", "3"], "relevance": [1, 1]})


@pytest.mark.parametrize(
    ("column", "query_dtype", "item_dtype"),
    [("item", pl.String, pl.Int64), ("query", pl.Int64, pl.String)],
)
def test_j02_j03_trial_f10_int_vs_string_keys_name_both_dtypes(column, query_dtype, item_dtype):
    with pytest.raises(ColumnTypeError) as caught:
        rke.join_run_qrels(_run(query_dtype, item_dtype), _qrels())
    assert str(caught.value).startswith(
        f"column {column!r} has dtype Int64 in the run but String in the qrels"
    )


def test_j06_categorical_vs_string_items_match_as_strings():
    joined = rke.join_run_qrels(_run(item_dtype=pl.Categorical), _qrels()).collect()
    assert joined.schema["item"] == pl.String
    assert sorted(joined.select("item", "relevance").rows()) == [("1", 1), ("2", None), ("3", 1)]


def test_trial_f4_extra_run_columns_are_kept():
    run = _run().with_columns(pl.lit("bm25").alias("system"), pl.lit(7).alias("rank"))
    joined = rke.join_run_qrels(run, _qrels()).collect()
    assert joined.columns == ["query", "item", "score", "system", "rank", "relevance"]


def test_trial_f4_join_by_system_equals_joining_each_system():
    run = pl.DataFrame(
        {
            "system": ["bm25"] * 3 + ["dense"] * 2,
            "query": ["1", "1", "2", "1", "2"],
            "item": ["a", "b", "x", "c", "x"],
            "score": [3.0, 2.0, 1.0, 5.0, 4.0],
        }
    )
    qrels = pl.DataFrame(
        {"query": ["1", "1", "1", "2"], "item": ["a", "b", "c", "x"], "relevance": [0, 1, 1, 2]}
    )
    metrics = ["map", "ndcg", "p@1", "num_rel", "num_ret"]
    joined = rke.join_run_qrels(run, qrels, by="system").collect()
    together = rke.evaluate(joined, metrics, by="system", per_query=True)
    for system in ("bm25", "dense"):
        alone = rke.join_run_qrels(run.filter(pl.col("system") == system).drop("system"), qrels)
        one = rke.evaluate(alone.collect(), metrics, per_query=True)
        assert together.filter(pl.col("system") == system).drop("system").equals(one)
    # By hand: bm25 q1 ranks a (0), b (1) and misses c: AP = (1/2) / 2; dense q1 ranks c only:
    # AP = 1 / 2; both rank x first in q2: AP 1. num_rel counts the unretrieved judged rows.
    means = rke.evaluate(joined, ["map", "num_rel"], by="system").sort("system")
    assert means.rows() == [("bm25", pytest.approx((0.25 + 1) / 2), 3), ("dense", 0.75, 3)]


def test_trial_f7_partial_query_match_warns_with_both_counts():
    run = pl.DataFrame({"query": ["1", "2", "3"], "item": "a", "score": 1.0})
    qrels = pl.DataFrame({"query": ["1", "2x", "3x", "4x"], "item": "a", "relevance": 1})
    with pytest.warns(QueryCoverageWarning) as caught:
        rke.join_run_qrels(run, qrels)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "\n" not in message
    assert "2 of 3 run queries have no judgments (e.g. '2', '3')" in message
    assert "3 of 4 judged queries have no run rows (e.g. '2x', '3x', '4x')" in message


def test_matching_queries_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rke.join_run_qrels(
            rke.read_trec_run(DATA / "results.test"), rke.read_trec_qrels(DATA / "qrels.test")
        )


def test_run_with_its_own_relevance_column_is_refused():
    with pytest.raises(InvalidOptionError, match="already has a column 'relevance'"):
        rke.join_run_qrels(_run().with_columns(pl.lit(1).alias("relevance")), _qrels())


# --- labels and options (audit 1a, F6, F8, F9) -------------------------------------------


def _log(relevance: pl.Series) -> pl.DataFrame:
    return pl.DataFrame(
        {"query": ["q", "q"], "item": ["a", "b"], "score": [2.0, 1.0], "relevance": relevance}
    )


def test_e31_f6_nan_label_is_a_column_value_error():
    log = _log(pl.Series([1.0, float("nan")]))
    expected = r"1 label\(s\) in 'relevance'.*NaN.*query 'q'"
    with pytest.raises(ColumnValueError, match=expected):
        rke.evaluate(log, ["map"])
    plan = rke.evaluate(log.lazy(), ["map"])
    with pytest.raises(ColumnValueError, match=expected):
        plan.collect()


def test_e31_nan_label_in_the_expression_namespace():
    log = _log(pl.Series([1.0, float("nan")]))
    with pytest.raises(ColumnValueError, match="NaN"):
        log.group_by(pl.lit(1).alias("run")).agg(pl.col("relevance").rank_eval.ndcg())


def test_e12_uint64_label_past_int64_is_a_column_value_error():
    with pytest.raises(ColumnValueError, match="outside the Int64 range"):
        rke.evaluate(_log(pl.Series([1, 2**64 - 1], dtype=pl.UInt64)), ["map"])


def test_e10_f8_exp_gain_overflow_names_label_and_gain():
    with pytest.raises(ColumnValueError, match=r"gain=exp.*1100"):
        rke.evaluate(_log(pl.Series([1, 1100])), ["ndcg(gain=exp)"])


def test_e42_f9_cutoff_past_int64_is_an_option_error():
    log = _log(pl.Series([1, 0]))
    with pytest.raises(InvalidOptionError, match="at most 9223372036854775807"):
        rke.evaluate(log, ["p@18446744073709551616"])
    # k = 2^63 - 1 still computes: 1 hit / k.
    assert rke.evaluate(log, [f"p@{2**63 - 1}"]).item() == pytest.approx(1 / (2**63 - 1))


def test_every_reader_error_is_a_rank_eval_error(tmp_path):
    path = write(tmp_path, "qrels.txt", "1 0 a x\n")
    with pytest.raises(RankEvalError):
        rke.read_trec_qrels(path)


def test_comment_lines_are_skipped_as_trec_eval_skips_them(tmp_path: Path) -> None:
    # get_trec_results.c skips a run line whose first non-blank character is '#';
    # get_qrels.c skips a qrels line that starts with '#'. A '#' inside a docno is data.
    run = tmp_path / "run.txt"
    run.write_text("# run of 2024\n  # indented note\n1 Q0 doc#1 1 2.0 r\n1 Q0 b 2 1.0 r\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("# judged by hand\n1 0 doc#1 1\n1 0 b 0\n")
    got = rke.read_trec_run(run).collect()
    assert got["item"].to_list() == ["doc#1", "b"]
    judged = rke.read_trec_qrels(qrels).collect()
    assert judged["item"].to_list() == ["doc#1", "b"]
    only = tmp_path / "only.txt"
    only.write_text("# nothing but a comment\n")
    with pytest.raises(rke.TrecFormatError, match="empty"):
        rke.read_trec_qrels(only)


def _spaced(fields: list[str], separator: str, lead: str = "", trail: str = "") -> str:
    return lead + separator.join(fields) + trail


@pytest.mark.parametrize(
    ("separator", "lead", "trail"),
    [
        ("\t", "", ""),  # tabs
        ("  ", "", ""),  # two spaces
        (" ", "  ", ""),  # leading spaces
        (" ", "", "   "),  # trailing spaces
        (" \x0b", "", ""),  # a vertical tab (whitespace to the regex)
        ("\u00a0", "", ""),  # a no-break space: whitespace to the regex as well
    ],
)
def test_any_whitespace_between_fields_reads_as_single_spaces(tmp_path, separator, lead, trail):
    # Files of single-spaced ASCII lines are split at the space (the fast path); one line with
    # any other whitespace sends the file through the whitespace regex: both read the same.
    odd_run = _spaced(["1", "Q0", "c", "3", "1.0", "r"], separator, lead, trail)
    run = write(tmp_path, "odd.txt", RUN.replace("1 Q0 c 3 1.0 r", odd_run))
    assert rke.read_trec_run(run).collect().rows() == [
        ("1", "a", 3.0),
        ("1", "b", 2.0),
        ("1", "c", 1.0),
    ]
    odd_qrels = _spaced(["1", "0", "c", "1"], separator, lead, trail)
    qrels = write(tmp_path, "qrels.txt", QRELS.replace("1 0 c 1", odd_qrels))
    assert rke.read_trec_qrels(qrels).collect().rows() == [
        ("1", "a", 0),
        ("1", "b", 1),
        ("1", "c", 1),
    ]


def test_non_ascii_ids_keep_their_bytes(tmp_path):
    path = write(tmp_path, "run.txt", "q\u00e9 Q0 d\u00f6c 1 2.0 r\nq\u00e9 Q0 b 2 1.0 r\n")
    assert rke.read_trec_run(path).collect().rows() == [
        ("q\u00e9", "d\u00f6c", 2.0),
        ("q\u00e9", "b", 1.0),
    ]
