"""The ``rank-eval`` command line: inputs, options, output formats and its refusals.

Expected metric values come from trec_eval's own output files (``tests/data/expected_v10``) or
are worked by hand in the comments. Where a test compares the command with another run of it
or with the library, it checks a property (a glob reads the rows of the file it was split from,
an option reaches ``evaluate``), never a value of our own.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from polars_rankeval.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample.parquet"
DATA = ROOT / "tests" / "data"
EXPECTED = DATA / "expected_v10"

#: Every trec_eval measure in the all_trec outputs that we implement under trec_eval's own name,
#: in the order trec_eval prints them.
TREC_MEASURES = [
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "Rprec",
    "bpref",
    "recip_rank",
    *(f"P_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)),
    *(f"recall_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)),
    "infAP",
    "ndcg",
    *(f"ndcg_cut_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)),
    *(f"map_cut_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)),
    *(f"success_{k}" for k in (1, 5, 10)),
    "rbp",
]


def run_cli(capsys, *args: object) -> tuple[int, str, str]:
    code = cli_main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def trec_eval_lines(name: str, *, queries: bool = True) -> list[str]:
    """The lines of a trec_eval output file for TREC_MEASURES, exactly as printed."""
    lines = []
    for line in (EXPECTED / name).read_text().splitlines():
        measure, query, _ = line.split("\t")
        if measure.rstrip() in TREC_MEASURES and (queries or query == "all"):
            lines.append(line)
    return lines


def assert_one_line_error(code: int, out: str, err: str, *fragments: str) -> None:
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("rank-eval: error: ")
    assert "Traceback" not in err
    assert 'col("' not in err  # no Polars expression dump
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.fixture
def hive_logs(tmp_path) -> Path:
    """data/sample.parquet split into logs/model=<system>/part.parquet."""
    sample = pl.read_parquet(SAMPLE)
    for (system,), part in sample.group_by("system"):
        folder = tmp_path / "logs" / f"model={system}"
        folder.mkdir(parents=True)
        part.drop("system").write_parquet(folder / "part.parquet")
    return tmp_path / "logs"


# ---- reading: files, directories, globs, TREC files ------------------------------------------


def test_sample_prints_one_row_per_system(capsys):
    code, out, _ = run_cli(capsys, SAMPLE, "--by", "system", "--format", "csv")
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0].startswith("system,ndcg@10,")
    assert [line.split(",")[0] for line in lines[1:]] == ["bm25", "neural"]


@pytest.mark.parametrize("pattern", ["{logs}", "{logs}/**/*.parquet", "{logs}/*/*.parquet"])
def test_glob_and_directory_read_hive_partition_columns(capsys, hive_logs, pattern):
    path = pattern.format(logs=hive_logs)
    code, out, err = run_cli(capsys, path, "--by", "model", "-m", "map,num_q", "--format", "csv")
    assert code == 0, err
    got = pl.read_csv(out.encode())
    # The partitions hold exactly the rows of the sample, so the metrics per model must equal
    # the metrics per system of the unsplit file.
    code, out, _ = run_cli(capsys, SAMPLE, "--by", "system", "-m", "map,num_q", "--format", "csv")
    assert code == 0
    whole = pl.read_csv(out.encode()).rename({"system": "model"})
    assert_frame_equal(got, whole, rel_tol=1e-12)
    # num_q, counted with plain Polars: queries with a judged row and a retrieved row.
    sample = pl.read_parquet(SAMPLE)
    counted = (
        sample.group_by("system", "query")
        .agg(
            (pl.col("relevance").is_not_null().any() & pl.col("score").is_not_null().any()).alias(
                "evaluated"
            )
        )
        .group_by("system")
        .agg(pl.col("evaluated").sum())
        .sort("system")
    )
    assert got["num_q"].to_list() == counted["evaluated"].to_list()


@pytest.fixture
def dated_log(tmp_path) -> Path:
    # Two models x two dates; the date is the parity of the query number.
    sample = pl.read_parquet(SAMPLE).with_columns(
        date=pl.when(pl.col("query").str.slice(1).cast(pl.Int64) % 2 == 0)
        .then(pl.lit("2024-01-02"))
        .otherwise(pl.lit("2024-01-01")),
    )
    path = tmp_path / "dated.parquet"
    sample.rename({"system": "model"}).write_parquet(path)
    return path


@pytest.mark.parametrize(
    "by_args",
    [
        ["--by", "date,model"],
        ["--by", "date", "--by", "model"],
        ["--by", "date, model"],
        ["--by", "date,", "--by", "model"],
    ],
)
def test_by_splits_on_commas_and_repeats(capsys, dated_log, by_args):
    code, out, err = run_cli(capsys, dated_log, *by_args, "-m", "num_q", "--format", "csv")
    assert code == 0, err
    got = pl.read_csv(out.encode())
    assert got.columns == ["date", "model", "num_q"]
    assert got.select("date", "model").rows() == [
        ("2024-01-01", "bm25"),
        ("2024-01-01", "neural"),
        ("2024-01-02", "bm25"),
        ("2024-01-02", "neural"),
    ]


def test_reads_trec_files(capsys):
    code, out, _ = run_cli(
        capsys,
        DATA / "results.test",
        "--qrels",
        DATA / "qrels.test",
        "-m",
        "map",
        "--format",
        "csv",
    )
    assert code == 0
    # trec_eval: map all 0.1785
    assert out.splitlines()[1].startswith("0.1785")


def test_quickstart_command_runs_as_module():
    result = subprocess.run(
        [sys.executable, "-m", "polars_rankeval", "data/sample.parquet", "--by", "system"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    lines = result.stdout.splitlines()
    assert "ndcg@10" in lines[1]
    assert any("bm25" in line for line in lines)
    assert any("neural" in line for line in lines)


def test_error_exit_status_from_the_installed_module():
    result = subprocess.run(
        [sys.executable, "-m", "polars_rankeval", str(DATA / "results.test")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert_one_line_error(result.returncode, result.stdout, result.stderr, "--qrels QRELS")


# ---- trec_eval options, checked against trec_eval's own output -------------------------------


def test_trec_format_summary_equals_trec_eval(capsys):
    # trec_eval -m all_trec qrels.test results.test: the "all" lines of out.test.aq
    args = [DATA / "results.test", "--qrels", DATA / "qrels.test", "-m", ",".join(TREC_MEASURES)]
    code, out, _ = run_cli(capsys, *args, "--format", "trec")
    assert code == 0
    assert out.splitlines() == trec_eval_lines("out.test.aq", queries=False)


def test_per_query_trec_format_equals_trec_eval_q(capsys):
    # trec_eval -m all_trec -q qrels.test results.test: every query's block, then "all"
    args = [DATA / "results.test", "--qrels", DATA / "qrels.test", "-m", ",".join(TREC_MEASURES)]
    code, out, _ = run_cli(capsys, *args, "--per-query", "--format", "trec")
    assert code == 0
    expected = trec_eval_lines("out.test.aq")
    assert out.splitlines() == expected
    # -q is the short spelling; without it only the summary is printed.
    assert run_cli(capsys, *args, "-q", "--format", "trec")[1] == out
    assert run_cli(capsys, *args, "--format", "trec")[1].splitlines() != expected


def test_complete_c_equals_trec_eval_c(capsys):
    # trec_eval -m all_trec -q -c qrels.test results.trunc (topic 302 has no results)
    args = [DATA / "results.trunc", "--qrels", DATA / "qrels.test", "-m", ",".join(TREC_MEASURES)]
    code, out, _ = run_cli(capsys, *args, "-q", "-c", "--format", "trec")
    assert code == 0
    expected = trec_eval_lines("out.test.aqc")
    assert out.splitlines() == expected
    # Ignoring -c would fail: without it topic 302 is skipped, num_q is 2 and map differs.
    without = run_cli(capsys, *args, "-q", "--format", "trec")[1].splitlines()
    assert "num_q                 \tall\t3" in expected
    assert "map                   \tall\t0.1016" in expected
    assert "num_q                 \tall\t3" not in without
    assert "map                   \tall\t0.1016" not in without
    assert run_cli(capsys, *args, "--complete", "-q", "--format", "trec")[1] == out


def test_relevance_level_l_equals_trec_eval_l(capsys):
    # trec_eval -m all_trec -q -l2 qrels.rel_level results.test
    args = [
        DATA / "results.test",
        "--qrels",
        DATA / "qrels.rel_level",
        "-m",
        ",".join(TREC_MEASURES),
    ]
    code, out, _ = run_cli(capsys, *args, "-q", "-l", "2", "--format", "trec")
    assert code == 0
    expected = trec_eval_lines("out.test.aql")
    assert out.splitlines() == expected
    # Ignoring -l would fail: at level 2 trec_eval's map is 0.1667; label 1 counts at level 1.
    assert "map                   \tall\t0.1667" in expected
    without = run_cli(capsys, *args, "-q", "--format", "trec")[1].splitlines()
    assert "map                   \tall\t0.1667" not in without
    assert run_cli(capsys, *args, "-q", "--relevance-level", "2", "--format", "trec")[1] == out


# ---- output formats ---------------------------------------------------------------------------

TREC_ARGS = [DATA / "results.test", "--qrels", DATA / "qrels.test", "-m", "map,P_5,num_q"]
#: From out.test.aq: map and P_5 of topics 301-303 and of "all"; num_q 1 per topic, 3 in all.
PER_QUERY_ROWS = [
    ("301", 0.0324, 0.0, 1),
    ("302", 0.4175, 0.8, 1),
    ("303", 0.0858, 0.0, 1),
    ("all", 0.1785, 0.2667, 3),
]


def assert_per_query_rows(frame: pl.DataFrame) -> None:
    assert frame.columns == ["query", "map", "P_5", "num_q"]
    assert [str(q) for q in frame["query"]] == [row[0] for row in PER_QUERY_ROWS]
    for got, expected in zip(frame.rows(), PER_QUERY_ROWS, strict=True):
        assert got[1:] == pytest.approx(expected[1:], abs=5e-5)


def test_csv_per_query_ends_with_all_rows(capsys):
    code, out, _ = run_cli(capsys, *TREC_ARGS, "--per-query", "--format", "csv")
    assert code == 0
    assert_per_query_rows(pl.read_csv(out.encode(), schema_overrides={"query": pl.String}))


def test_json_per_query_ends_with_all_rows(capsys):
    code, out, _ = run_cli(capsys, *TREC_ARGS, "--per-query", "--format", "json")
    assert code == 0
    records = json.loads(out)
    assert_per_query_rows(pl.DataFrame(records))


def test_table_per_query_ends_with_all_rows(capsys):
    code, out, _ = run_cli(capsys, *TREC_ARGS, "--per-query")
    assert code == 0
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert [row.split("┆")[0].strip("│ ") for row in rows[1:]] == ["301", "302", "303", "all"]
    assert "0.1785" in rows[-1]
    assert "0.2667" in rows[-1]


def test_per_query_with_integer_query_ids_and_by(capsys, tmp_path):
    # Two systems on one query each (integer ids); the summary rows come last, query "all".
    log = pl.DataFrame(
        {
            "system": ["a", "a", "b", "b"],
            "query": [7, 7, 7, 7],
            "item": ["x", "y", "x", "y"],
            "score": [2.0, 1.0, 1.0, 2.0],
            "relevance": [1, 0, 1, 0],
        }
    )
    path = tmp_path / "log.parquet"
    log.write_parquet(path)
    code, out, err = run_cli(capsys, path, "--by", "system", "-q", "-m", "mrr", "--format", "csv")
    assert code == 0, err
    # a ranks x (relevant) first: mrr 1; b ranks y first, x second: mrr 1/2.
    assert out.splitlines() == [
        "system,query,mrr",
        "a,7,1.0",
        "b,7,0.5",
        "a,all,1.0",
        "b,all,0.5",
    ]
    code, out, _ = run_cli(capsys, path, "--by", "system", "-q", "-m", "mrr", "--format", "trec")
    assert code == 0
    # One trec_eval block per run: its queries, then its runid and summary lines.
    assert out.splitlines() == [
        "mrr                   \t7\t1.0000",
        "runid                 \tall\tsystem=a",
        "mrr                   \tall\t1.0000",
        "mrr                   \t7\t0.5000",
        "runid                 \tall\tsystem=b",
        "mrr                   \tall\t0.5000",
    ]


def test_trec_format_with_two_by_columns(capsys, dated_log):
    code, out, _ = run_cli(capsys, dated_log, "--by", "date,model", "-m", "num_q", "-f", "trec")
    assert code == 0
    runids = [line.split("\t")[2] for line in out.splitlines() if line.startswith("runid")]
    assert runids == [
        "date=2024-01-01/model=bm25",
        "date=2024-01-01/model=neural",
        "date=2024-01-02/model=bm25",
        "date=2024-01-02/model=neural",
    ]


@pytest.mark.parametrize(
    ("name", "reader"),
    [
        ("out.csv", lambda path: pl.read_csv(path, schema_overrides={"query": pl.String})),
        ("out.json", lambda path: pl.DataFrame(json.loads(path.read_text()))),
        ("out.parquet", pl.read_parquet),
        ("out.pq", pl.read_parquet),
    ],
)
def test_output_file_format_from_suffix(capsys, tmp_path, name, reader):
    path = tmp_path / name
    code, out, _ = run_cli(capsys, *TREC_ARGS, "-q", "-o", path)
    assert (code, out) == (0, "")
    assert_per_query_rows(reader(path))


@pytest.mark.parametrize("name", ["out.txt", "out.trec"])
def test_output_text_suffix_is_trec(capsys, tmp_path, name):
    path = tmp_path / name
    assert run_cli(capsys, *TREC_ARGS, "--output", path)[0] == 0
    assert path.read_text().splitlines() == [
        "map                   \tall\t0.1785",
        "P_5                   \tall\t0.2667",
        "num_q                 \tall\t3",
    ]


def test_format_option_wins_over_suffix(capsys, tmp_path):
    path = tmp_path / "out.txt"
    assert run_cli(capsys, *TREC_ARGS, "--format", "csv", "-o", path)[0] == 0
    assert path.read_text().splitlines()[0] == "map,P_5,num_q"


def test_parquet_needs_an_output_file(capsys):
    code, out, err = run_cli(capsys, *TREC_ARGS, "--format", "parquet")
    assert_one_line_error(code, out, err, "-o/--output")


def test_unknown_output_suffix_is_refused(capsys, tmp_path):
    code, out, err = run_cli(capsys, *TREC_ARGS, "-o", tmp_path / "out.xlsx")
    assert_one_line_error(code, out, err, "'.xlsx'", "--format")
    assert not (tmp_path / "out.xlsx").exists()


def test_csv_flag_is_a_deprecated_alias(capsys):
    code, out, err = run_cli(capsys, *TREC_ARGS, "--csv")
    assert code == 0
    assert out.splitlines()[0] == "map,P_5,num_q"
    assert "deprecated" in err
    assert_one_line_error(*run_cli(capsys, *TREC_ARGS, "--csv", "--format", "json"), "--csv")


def test_metric_list_keeps_sweeps_and_options(capsys):
    args = [SAMPLE, "--by", "system", "--format", "csv"]
    code, out, _ = run_cli(capsys, *args, "-m", "ndcg@1,5,map,err@5(max_grade=3,transform=exp)")
    assert code == 0
    assert out.splitlines()[0] == 'system,ndcg@1,ndcg@5,map,"err@5(max_grade=3,transform=exp)"'


def test_convention_and_ties(capsys):
    args = [SAMPLE, "--by", "system", "--format", "csv", "-m", "ndcg@10"]
    code, out, _ = run_cli(capsys, *args, "--convention", "sklearn", "--ties", "trec")
    assert code == 0
    expected = rke.evaluate(
        pl.read_parquet(SAMPLE), ["ndcg@10"], by="system", convention="sklearn", ties="trec"
    )
    assert_frame_equal(pl.read_csv(out.encode()), expected, rel_tol=1e-12)
    code, out, err = run_cli(capsys, *args, "--convention", "sklern")
    assert_one_line_error(code, out, err, "did you mean 'sklearn'")


def test_duplicates_and_nan_scores_options(capsys, tmp_path):
    # q: a appears twice (scores 1 and 3), b once with a NaN score; a is relevant.
    log = pl.DataFrame(
        {
            "query": ["q", "q", "q"],
            "item": ["a", "a", "b"],
            "score": [1.0, 3.0, float("nan")],
            "relevance": [1, 1, 0],
        }
    )
    path = tmp_path / "log.parquet"
    log.write_parquet(path)
    assert_one_line_error(*run_cli(capsys, path, "-m", "mrr"), "duplicate")
    assert_one_line_error(*run_cli(capsys, path, "-m", "mrr", "--duplicates", "max_score"), "NaN")
    # Keeping a (score 3) and ranking the NaN last puts a first: mrr 1.
    code, out, _ = run_cli(
        capsys, path, "-m", "mrr", "--duplicates", "max_score", "--nan-scores", "last", "-f", "csv"
    )
    assert (code, out) == (0, "mrr\n1.0\n")


def test_help_exits_zero(capsys):
    assert cli_main(["--help"]) == 0
    assert "--format" in capsys.readouterr().out


# ---- mistakes: exit 2 and one line on stderr ---------------------------------------------------


def test_unknown_metric(capsys):
    code, out, err = run_cli(capsys, SAMPLE, "-m", "nope")
    assert_one_line_error(code, out, err, "unknown metric 'nope'")


def test_run_and_qrels_swapped(capsys):
    code, out, err = run_cli(capsys, DATA / "qrels.test", "--qrels", DATA / "results.test")
    assert_one_line_error(code, out, err, "qrels.test", "has no scores", "other way round")


def test_qrels_given_a_run_file(capsys):
    code, out, err = run_cli(capsys, DATA / "results.test", "--qrels", DATA / "results.test")
    assert_one_line_error(code, out, err, "like a run", "other way round")


def test_trec_run_without_qrels(capsys):
    code, out, err = run_cli(capsys, DATA / "results.test")
    assert_one_line_error(code, out, err, "results.test", "TREC run", "--qrels QRELS")


def test_trec_qrels_without_run(capsys):
    code, out, err = run_cli(capsys, DATA / "qrels.test")
    assert_one_line_error(code, out, err, "qrels.test", "TREC qrels", "--qrels")


def test_unknown_file_kind(capsys, tmp_path):
    path = tmp_path / "notes.md"
    path.write_text("# not a log\n")
    code, out, err = run_cli(capsys, path)
    assert_one_line_error(code, out, err, "notes.md", "not a Parquet file")


def test_run_and_qrels_without_common_queries(capsys, tmp_path):
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 2.0 tag\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q2 0 d1 1\n")
    code, out, err = run_cli(capsys, run, "--qrels", qrels)
    assert_one_line_error(
        code, out, err, "no query was evaluated", "no query has both", "same query ids"
    )


@pytest.mark.parametrize("buckets", ["auto", "1", "3"])
def test_nothing_judged_in_a_log(capsys, tmp_path, buckets):
    log = pl.DataFrame(
        {"query": ["q"], "item": ["a"], "score": [1.0], "relevance": [None]},
        schema_overrides={"relevance": pl.Int64},
    )
    path = tmp_path / "log.parquet"
    log.write_parquet(path)
    code, out, err = run_cli(capsys, path, "--buckets", buckets)
    # The reason, also with one unbounded pass (where evaluate itself does not warn).
    assert_one_line_error(
        code, out, err, "no query was evaluated", "'relevance' column is entirely null"
    )


def test_zero_row_parquet_is_empty(capsys, tmp_path):
    path = tmp_path / "log.parquet"
    pl.read_parquet(SAMPLE).head(0).write_parquet(path)
    code, out, err = run_cli(capsys, path)
    assert_one_line_error(code, out, err, "log.parquet", "empty")


@pytest.mark.parametrize("name", ["log.csv", "log.tsv", "log.parquet", "log.ndjson"])
def test_empty_file_is_named(capsys, tmp_path, name):
    path = tmp_path / name
    path.write_text("")
    code, out, err = run_cli(capsys, path)
    assert_one_line_error(code, out, err, name, "is empty")


@pytest.mark.parametrize(("name", "sep"), [("log.csv", ","), ("log.tsv", "\t")])
def test_header_only_csv_is_empty_not_a_dtype_problem(capsys, tmp_path, name, sep):
    path = tmp_path / name
    path.write_text(sep.join(["query", "item", "score", "relevance"]) + "\n")
    code, out, err = run_cli(capsys, path)
    assert_one_line_error(code, out, err, name, "empty", "header")
    assert "numeric" not in err
    assert "dtype" not in err


@pytest.mark.parametrize("which", ["run", "qrels"])
def test_empty_trec_file_is_named(capsys, tmp_path, which):
    files = {"run": DATA / "results.test", "qrels": DATA / "qrels.test"}
    files[which] = tmp_path / f"{which}.txt"
    files[which].write_text("\n  \n")
    code, out, err = run_cli(capsys, files["run"], "--qrels", files["qrels"])
    assert_one_line_error(code, out, err, f"{which}.txt", "is empty")


@pytest.mark.parametrize("which", ["run", "qrels"])
def test_missing_trec_file_is_named(capsys, tmp_path, which):
    files = {"run": DATA / "results.test", "qrels": DATA / "qrels.test"}
    files[which] = tmp_path / "absent.txt"
    code, out, err = run_cli(capsys, files["run"], "--qrels", files["qrels"])
    assert_one_line_error(code, out, err, "absent.txt", "no such file")


def test_missing_file_is_named(capsys, tmp_path):
    code, out, err = run_cli(capsys, tmp_path / "absent.parquet")
    assert_one_line_error(code, out, err, "absent.parquet", "no such file")


def test_directory_without_files(capsys, tmp_path):
    (tmp_path / "logs" / "model=x").mkdir(parents=True)
    code, out, err = run_cli(capsys, tmp_path / "logs")
    assert_one_line_error(code, out, err, "logs", "holds no files")


def test_glob_matching_nothing(capsys, hive_logs):
    code, out, err = run_cli(capsys, f"{hive_logs}/**/*.csv", "--by", "model")
    assert_one_line_error(code, out, err, "*.csv", "matches no file")


def test_missing_column_from_a_glob_without_hive(capsys, hive_logs):
    # The partition column is "model"; "system" is nowhere.
    code, out, err = run_cli(capsys, f"{hive_logs}/**/*.parquet", "--by", "system")
    assert_one_line_error(code, out, err, "'system'", "not in the input")


def test_polars_error_is_one_line(capsys, tmp_path):
    # A run line whose score is not a number: the reader names the file, line and field.
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 high tag\n")
    code, out, err = run_cli(capsys, run, "--qrels", DATA / "qrels.test")
    assert_one_line_error(code, out, err, "run.txt:1: score 'high' is not a number")


def test_corrupt_parquet_is_one_line(capsys, tmp_path):
    path = tmp_path / "log.parquet"
    path.write_bytes(b"PAR1" + b"\0" * 20)
    code, out, err = run_cli(capsys, path)
    assert_one_line_error(code, out, err)


def test_column_options_with_trec_files_are_refused(capsys):
    code, out, err = run_cli(capsys, *TREC_ARGS, "--query", "qid")
    assert_one_line_error(code, out, err, "--query", "fixed columns")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--format", "xml"], "argument -f/--format: invalid choice"),
        (["--buckets", "0"], "argument --buckets"),
        (["--ties", "random"], "argument --ties"),
        (["--no-such-option"], "unrecognized arguments"),
    ],
)
def test_usage_errors_are_one_line(capsys, args, fragment):
    code, out, err = run_cli(capsys, SAMPLE, *args)
    assert_one_line_error(code, out, err, fragment)


def test_output_to_a_missing_directory_is_one_line(capsys, tmp_path):
    code, out, err = run_cli(capsys, *TREC_ARGS, "-o", tmp_path / "absent" / "out.csv")
    assert_one_line_error(code, out, err, "absent")


# --- --tie-warning: one meaning with evaluate's tie_warning= --------------------------------
def _tied_log(tmp_path: Path) -> tuple[pl.DataFrame, Path]:
    """One list of 200 whose first two items tie with mixed labels: p@1 moves by 1/200."""
    queries = [f"q{i:03d}" for i in range(200)]
    rows = [(q, "a", 1.0, 1) for q in queries] + [
        (q, "b", 1.0 if q == "q000" else 0.5, 0) for q in queries
    ]
    log = pl.DataFrame(rows, schema=["query", "item", "score", "relevance"], orient="row")
    path = tmp_path / "tied.parquet"
    log.write_parquet(path)
    return log, path


def test_tie_warning_zero_warns_on_any_movement_as_in_python(tmp_path, capsys):
    # the order of a and b in q000 moves mean p@1 by 0.005: under the default 0.01, above 0
    log, path = _tied_log(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", rke.TieWarning)
        rke.evaluate(log, ["p@1"])
    code, _, err = run_cli(capsys, path, "-m", "p@1", "-f", "csv")
    assert (code, err) == (0, "")
    with pytest.warns(rke.TieWarning, match=r"p@1 by up to 0\.0050"):
        rke.evaluate(log, ["p@1"], tie_warning=0)
    code, _, err = run_cli(capsys, path, "-m", "p@1", "-f", "csv", "--tie-warning", "0")
    assert code == 0
    assert "rank-eval: warning: tied scores" in err
    assert "p@1 by up to 0.0050" in err


@pytest.mark.parametrize("spelling", ["off", "none", "OFF"])
def test_tie_warning_off_is_python_s_none(tmp_path, capsys, spelling):
    log, path = _tied_log(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", rke.TieWarning)
        python = rke.evaluate(log, ["p@1"], tie_warning=None)
    code, out, err = run_cli(capsys, path, "-m", "p@1", "-f", "csv", "--tie-warning", spelling)
    assert (code, err) == (0, "")
    assert pl.read_csv(out.encode())["p@1"].to_list() == python["p@1"].to_list()


def test_tie_warning_refuses_a_word_other_than_off(tmp_path, capsys):
    _, path = _tied_log(tmp_path)
    code, _, err = run_cli(capsys, path, "-m", "p@1", "--tie-warning", "never")
    assert code != 0
    assert "must be a number >= 0 or 'off', got 'never'" in err


def test_several_runs_read_at_once_name_the_first_bad_file(capsys, tmp_path):
    # The runs are read in threads; the error is still the first bad file's, in the order given.
    good = (DATA / "results.test").read_text()
    paths = []
    for index in range(6):
        path = tmp_path / f"run{index}.txt"
        bad = index in (2, 4)
        path.write_text(good + ("401 Q0 doc 1 not-a-score run\n" if bad else ""))
        paths.append(path)
    code, out, err = run_cli(capsys, *paths, "--qrels", DATA / "qrels.test")
    assert_one_line_error(code, out, err, "run2.txt", "score")
    assert "run4.txt" not in err
