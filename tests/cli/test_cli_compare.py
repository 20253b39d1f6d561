"""``rank-eval compare``: the command against ``rke.compare`` / ``rke.report``, and its refusals.

The statistics themselves are tested in ``tests/comparison/test_compare.py`` (against scipy,
statsmodels and brute force); here the command must give the library's frame for the same
options, every option must reach the library (each case also checks that the option changes
the result on its data, so a command that ignored it would fail), and TREC runs must be read
as one system per run (checked against trec_eval's own per-query values).
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal as _assert_frame_equal

import polars_rankeval as rke
from polars_rankeval import cli
from polars_rankeval.cli import _evaluation as cli_evaluation
from polars_rankeval.cli import main as cli_main
from polars_rankeval.cli._compact import compact

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample.parquet"
DATA = ROOT / "tests" / "data"
RESULTS = DATA / "results.test"
QRELS = DATA / "qrels.test"

METRICS = "ndcg@10,map,p@1"


def assert_frame_equal(got: pl.DataFrame, expected: pl.DataFrame) -> None:
    """Equal to a relative 1e-9 and no absolute tolerance.

    No absolute tolerance: p-values near 1e-27 that differ (Holm over 3 vs over 1) would pass
    any. Not exact: per-query values of the TREC join can differ in the last bit between two
    evaluations, and a mean over queries depends on their order.
    """
    _assert_frame_equal(got, expected, rel_tol=1e-9, abs_tol=0.0)


def differ(first: pl.DataFrame, second: pl.DataFrame) -> bool:
    """Different beyond the tolerance of :func:`assert_frame_equal`."""
    try:
        assert_frame_equal(first, second)
    except AssertionError:
        return True
    return False


def run_cli(capsys, *args: object) -> tuple[int, str, str]:
    code = cli_main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_compare(capsys, *args: object) -> tuple[int, str, str]:
    return run_cli(capsys, "compare", *args)


def read_csv(text: str) -> pl.DataFrame:
    # tie_range/tie_flip are empty where no metric has tie bounds (ties=expected): typed here
    types = {"tie_range": pl.Float64, "tie_flip": pl.Boolean}
    return pl.read_csv(io.BytesIO(text.encode()), schema_overrides=types)


def compare_csv(capsys, *args: object) -> pl.DataFrame:
    code, out, err = run_compare(capsys, *args, "--format", "csv")
    assert code == 0, err
    return read_csv(out)


def assert_one_line_error(code: int, out: str, err: str, *fragments: str) -> None:
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("rank-eval: error: ")
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.fixture(scope="module")
def small_log() -> pl.DataFrame:
    """300 queries of the sample; neural retrieves nothing for the first 5 (judged rows stay).

    So ``-c`` and ``--missing zero`` change the result: without them those queries are not
    evaluated for neural and are dropped from the pairs.
    """
    sample = pl.read_parquet(SAMPLE)
    queries = sorted(sample["query"].unique().to_list())[:300]
    unretrieved = (pl.col("system") == "neural") & pl.col("query").is_in(queries[:5])
    return sample.filter(pl.col("query").is_in(queries)).with_columns(
        score=pl.when(unretrieved).then(None).otherwise(pl.col("score"))
    )


@pytest.fixture(scope="module")
def small_path(small_log, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("compare") / "small.parquet"
    small_log.write_parquet(path)
    return path


# ---- the command gives the library's numbers ----------------------------------------------------


def test_csv_equals_compare_on_the_sample(capsys):
    got = compare_csv(
        capsys,
        SAMPLE,
        "--by",
        "system",
        "--baseline",
        "bm25",
        "-m",
        "ndcg@10,map",
        "--test",
        "t",
        "--correction",
        "holm",
    )
    expected = rke.compare(
        pl.read_parquet(SAMPLE),
        ["ndcg@10", "map"],
        by="system",
        baseline="bm25",
        test="t",
        correction="holm",
    )
    assert_frame_equal(got, expected)
    assert got["system"].to_list() == ["neural", "neural"]


def test_default_metrics_and_options(capsys, small_log, small_path):
    got = compare_csv(capsys, small_path, "--by", "system")
    assert got["metric"].to_list() == cli.COMPARE_METRICS.split(",")
    expected = rke.compare(small_log, cli.COMPARE_METRICS.split(","), by="system")
    assert_frame_equal(got, expected)


#: (id, command options, compare() keywords, compare() keywords had the command ignored the
#: option, metrics). Each case checks that the two keyword sets give different frames.
OPTION_CASES: list[tuple[str, list[str], dict[str, Any], dict[str, Any], str]] = [
    ("baseline", ["--baseline", "neural"], {"baseline": "neural"}, {}, METRICS),
    ("wilcoxon", ["--test", "wilcoxon"], {"test": "wilcoxon"}, {}, METRICS),
    ("sign", ["--test", "sign"], {"test": "sign"}, {}, METRICS),
    *(
        (
            test,
            ["--test", test, "--resamples", "500"],
            {"test": test, "n_resamples": 500},
            {"n_resamples": 500},
            METRICS,
        )
        for test in ("randomization", "bootstrap", "tukey")
    ),
    ("bonferroni", ["--correction", "bonferroni"], {"correction": "bonferroni"}, {}, METRICS),
    ("fdr_bh", ["--correction", "fdr_bh"], {"correction": "fdr_bh"}, {}, METRICS),
    ("no-correction", ["--correction", "none"], {"correction": None}, {}, METRICS),
    ("scope", ["--correction-scope", "metric"], {"correction_scope": "metric"}, {}, METRICS),
    ("alpha", ["--alpha", "0.01"], {"alpha": 0.01}, {}, METRICS),
    (
        "resamples",
        ["--test", "bootstrap", "--resamples", "501"],
        {"test": "bootstrap", "n_resamples": 501},
        {"test": "bootstrap"},
        METRICS,
    ),
    (
        "seed",
        ["--test", "bootstrap", "--resamples", "500", "--seed", "7"],
        {"test": "bootstrap", "n_resamples": 500, "seed": 7},
        {"test": "bootstrap", "n_resamples": 500},
        METRICS,
    ),
    ("missing", ["--missing", "zero"], {"unpaired_queries": "zero"}, {}, METRICS),
    ("l", ["-l", "2"], {"relevance_level": 2}, {}, METRICS),
    ("relevance-level", ["--relevance-level", "2"], {"relevance_level": 2}, {}, METRICS),
    ("c", ["-c"], {"missing_queries": "zero"}, {}, METRICS),
    ("complete", ["--complete"], {"missing_queries": "zero"}, {}, METRICS),
    ("ties", ["--ties", "expected"], {"ties": "expected"}, {}, METRICS),
    ("convention", ["--convention", "sklearn"], {"convention": "sklearn"}, {}, "ndcg@10,ndcg"),
    ("metrics", ["-m", "mrr,recall@5"], {}, {}, "mrr,recall@5"),
]


@pytest.mark.parametrize(
    ("args", "keywords", "ignored", "metrics"),
    [pytest.param(*case[1:], id=case[0]) for case in OPTION_CASES],
)
def test_each_option_reaches_compare(
    capsys, small_log, small_path, args, keywords, ignored, metrics
):
    metric_args = [] if "-m" in args else ["-m", metrics]
    got = compare_csv(capsys, small_path, "--by", "system", *metric_args, *args)
    expected = rke.compare(small_log, metrics.split(","), by="system", **keywords)
    assert_frame_equal(got, expected)
    if args[0] == "-m":
        assert got["metric"].unique(maintain_order=True).to_list() == metrics.split(",")
        return
    # The option matters on this data: a command that dropped it would print this instead.
    without = rke.compare(small_log, metrics.split(","), by="system", **ignored)
    assert differ(expected, without)


def test_duplicates_and_nan_scores_reach_evaluate(capsys, small_log, tmp_path):
    # A repeated (query, item) pair and a NaN score in one of bm25's queries.
    first = small_log.filter(pl.col("system") == "bm25", pl.col("query") == "q0010").head(2)
    repeated = first.head(1).with_columns(pl.col("score") + 10)
    nan_row = first.tail(1).with_columns(item=pl.lit("new-item"), score=pl.lit(float("nan")))
    log = pl.concat([small_log, repeated, nan_row])
    path = tmp_path / "log.parquet"
    log.write_parquet(path)
    args = [path, "--by", "system", "-m", METRICS]
    assert_one_line_error(*run_compare(capsys, *args), "duplicate")
    assert_one_line_error(*run_compare(capsys, *args, "--duplicates", "max_score"), "NaN")
    got = compare_csv(capsys, *args, "--duplicates", "max_score", "--nan-scores", "last")
    expected = rke.compare(
        log, METRICS.split(","), by="system", duplicates="max_score", nan_scores="last"
    )
    assert_frame_equal(got, expected)
    assert differ(
        expected,
        rke.compare(log, METRICS.split(","), by="system", duplicates="first", nan_scores="last"),
    )


def test_column_names(capsys, small_log, tmp_path):
    names = {"system": "run", "query": "qid", "item": "doc", "score": "s", "relevance": "rel"}
    path = tmp_path / "renamed.parquet"
    small_log.rename(names).write_parquet(path)
    columns = ["--query", "qid", "--item", "doc", "--score", "s", "--relevance", "rel"]
    got = compare_csv(capsys, path, "--by", "run", "-m", METRICS, *columns)
    expected = rke.compare(small_log, METRICS.split(","), by="system")
    # the systems' column keeps its name in the output (run, baseline_run)
    assert_frame_equal(got, expected.rename({"system": "run", "baseline_system": "baseline_run"}))
    # Each of them is needed.
    for i in range(0, len(columns), 2):
        dropped = columns[:i] + columns[i + 2 :]
        code, out, err = run_compare(capsys, path, "--by", "run", "-m", METRICS, *dropped)
        assert_one_line_error(code, out, err, repr(columns[i][2:]))


def test_buckets_and_progress_reach_evaluate(capsys, monkeypatch, small_log, small_path):
    seen: list[dict[str, Any]] = []
    real = cli_evaluation.evaluate_frame

    def spy(*args: Any, **keywords: Any) -> Any:
        seen.append(keywords)
        return real(*args, **keywords)

    monkeypatch.setattr(cli_evaluation, "evaluate_frame", spy)
    got = compare_csv(
        capsys, small_path, "--by", "system", "-m", METRICS, "--buckets", "3", "--no-progress"
    )
    assert (seen[0]["n_buckets"], seen[0]["progress"]) == (3, False)
    # Passes over buckets of queries give the same numbers.
    assert_frame_equal(got, rke.compare(small_log, METRICS.split(","), by="system"))


def test_two_by_columns_and_a_joined_baseline(capsys, small_log, tmp_path):
    # Two systems x two halves of the queries; the half is a second --by column, so the
    # systems are "bm25 / a", "bm25 / b", ... and only same-half systems share queries.
    half = pl.when(pl.col("query") < "q0150").then(pl.lit("a")).otherwise(pl.lit("b"))
    log = small_log.with_columns(half=half)
    path = tmp_path / "halves.parquet"
    log.write_parquet(path)
    args = [path, "-m", "map", "--by", "system", "--by", "half", "--baseline", "bm25 / a"]
    got = compare_csv(capsys, *args)
    expected = rke.compare(log, ["map"], by=["system", "half"], baseline=("bm25", "a"))
    assert_frame_equal(got, expected)
    assert got.select("system", "half").rows() == [("bm25", "b"), ("neural", "a"), ("neural", "b")]
    code, out, err = run_compare(capsys, *args[:-1], "bm25/a")
    assert_one_line_error(code, out, err, "--baseline 'bm25/a'", "' / '", "did you mean")


# ---- output formats ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def expected_small(small_log) -> pl.DataFrame:
    return rke.compare(small_log, METRICS.split(","), by="system", baseline="bm25")


@pytest.mark.parametrize("fmt", ["markdown", "latex", "html"])
def test_report_formats(capsys, small_path, expected_small, fmt):
    args = [small_path, "--by", "system", "-m", METRICS, "--baseline", "bm25"]
    code, out, err = run_compare(capsys, *args, "--format", fmt)
    assert code == 0, err
    assert out.rstrip("\n") == str(rke.report(expected_small, fmt)).rstrip("\n")
    assert out.endswith("\n")
    code, out, _ = run_compare(capsys, *args, "-f", fmt, "--digits", "2")
    assert code == 0
    assert out.rstrip("\n") == str(rke.report(expected_small, fmt, digits=2)).rstrip("\n")


def test_the_compact_table_is_the_default(capsys, small_path, expected_small):
    # The layout itself is tested in tests/cli/test_cli_compare_compact.py.
    args = [small_path, "--by", "system", "-m", METRICS]
    code, out, _ = run_compare(capsys, *args)
    assert code == 0
    assert out == compact(rke.compare(pl.read_parquet(small_path), METRICS.split(","), by="system"))
    assert "verdict" in out
    assert "|" not in out  # not the markdown report
    code, table, _ = run_compare(capsys, *args, "-f", "table")
    assert table == out
    code, out, _ = run_compare(capsys, *args, "--baseline", "bm25", "--digits", "2")
    assert code == 0
    assert out == compact(expected_small, 2)


def test_json_format(capsys, small_path, expected_small):
    args = [small_path, "--by", "system", "-m", METRICS, "-f", "json"]
    code, out, _ = run_compare(capsys, *args)
    assert code == 0
    assert_frame_equal(pl.DataFrame(json.loads(out)), expected_small)


@pytest.mark.parametrize(
    ("name", "read"),
    [
        ("out.txt", lambda path, frame: path.read_text() == compact(frame)),
        ("out.md", lambda path, frame: path.read_text() == str(rke.report(frame)) + "\n"),
        ("out.tex", lambda path, frame: path.read_text() == str(rke.report(frame, "latex")) + "\n"),
        # a complete page (the fragment is what --format html prints)
        ("out.html", lambda path, frame: path.read_text() == rke.report(frame, "html").document()),
        ("out.csv", lambda path, frame: pl.read_csv(path).equals(frame)),
        ("out.json", lambda path, frame: pl.DataFrame(json.loads(path.read_text())).equals(frame)),
        ("out.parquet", lambda path, frame: pl.read_parquet(path).equals(frame)),
        ("out.pq", lambda path, frame: pl.read_parquet(path).equals(frame)),
    ],
)
def test_output_file_format_from_suffix(capsys, small_path, expected_small, tmp_path, name, read):
    path = tmp_path / name
    code, out, err = run_compare(capsys, small_path, "--by", "system", "-m", METRICS, "-o", path)
    assert (code, out) == (0, ""), err
    assert read(path, expected_small)


def test_format_option_wins_over_suffix(capsys, small_path, tmp_path):
    path = tmp_path / "out.md"
    args = [small_path, "--by", "system", "-m", "map", "-f", "csv", "-o", path]
    assert run_compare(capsys, *args)[0] == 0
    assert path.read_text().startswith("metric,system,baseline_system,")


# ---- TREC runs: one system per run file ---------------------------------------------------------


@pytest.fixture
def reversed_run(tmp_path) -> Path:
    """results.test with topic 301 ranked upside down and topic 303 left out."""
    lines = []
    for line in RESULTS.read_text().splitlines():
        fields = line.split()
        if fields[0] == "303":
            continue
        if fields[0] == "301":
            fields[4] = str(-float(fields[4]))
        fields[5] = "reversed"
        lines.append(" ".join(fields))
    path = tmp_path / "reversed.test"
    path.write_text("\n".join(lines) + "\n")
    return path


def trec_log(runs: dict[str, Path]) -> pl.DataFrame:
    """What the command should build: each run joined with the qrels, named, concatenated."""
    qrels = rke.read_trec_qrels(QRELS)
    with warnings.catch_warnings():
        # reversed_run leaves topic 303 out on purpose: its join warns (QueryCoverageWarning).
        warnings.simplefilter("ignore", rke.errors.QueryCoverageWarning)
        return pl.concat(
            [
                rke.join_run_qrels(rke.read_trec_run(path), qrels)
                .with_columns(system=pl.lit(name))
                .collect()
                for name, path in runs.items()
            ]
        )


#: trec_eval's map of results.test per topic (out.test.aq): 301, 302, 303, all.
TREC_MAP = {"301": 0.0324, "302": 0.4175, "303": 0.0858, "all": 0.1785}


def test_trec_runs_are_systems_named_by_stem(capsys, reversed_run):
    args = [RESULTS, reversed_run, "--qrels", QRELS, "-m", "map,P_5", "--baseline", "results"]
    got = compare_csv(capsys, *args)
    log = trec_log({"results": RESULTS, "reversed": reversed_run})
    expected = rke.compare(log, ["map", "P_5"], by="system", baseline="results")
    assert_frame_equal(got, expected)
    # reversed has no line for 303, which is then not evaluated for it: 2 pairs, 1 dropped.
    map_row = got.row(0, named=True)
    assert (map_row["system"], map_row["n_queries"], map_row["n_dropped"]) == ("reversed", 2, 1)
    assert map_row["baseline_value"] == pytest.approx(
        (TREC_MAP["301"] + TREC_MAP["302"]) / 2, abs=1e-4
    )
    # -c scores 303 as 0 for reversed (trec_eval -c): 3 pairs, results' mean is trec_eval's.
    got = compare_csv(capsys, *args, "-c")
    map_row = got.row(0, named=True)
    assert (map_row["n_queries"], map_row["n_dropped"]) == (3, 0)
    assert map_row["baseline_value"] == pytest.approx(TREC_MAP["all"], abs=1e-4)
    assert_frame_equal(
        got,
        rke.compare(log, ["map", "P_5"], by="system", baseline="results", missing_queries="zero"),
    )


def test_trec_runs_may_come_around_the_options(capsys, reversed_run):
    # RUN --qrels QRELS RUN reads like RUN RUN --qrels QRELS.
    first = compare_csv(capsys, RESULTS, "--qrels", QRELS, reversed_run, "-m", "map")
    second = compare_csv(capsys, RESULTS, reversed_run, "--qrels", QRELS, "-m", "map")
    assert_frame_equal(first, second)


def test_trec_runs_named_by_tag(capsys, reversed_run, tmp_path):
    # Both runs in one file: results.test's lines carry the tag STANDARD, the others reversed.
    both = tmp_path / "both.txt"
    both.write_text(RESULTS.read_text() + reversed_run.read_text())
    got = compare_csv(
        capsys,
        both,
        "--qrels",
        QRELS,
        "--system-name",
        "tag",
        "-m",
        "map,P_5",
        "--baseline",
        "STANDARD",
    )
    by_stem = compare_csv(
        capsys, RESULTS, reversed_run, "--qrels", QRELS, "-m", "map,P_5", "--baseline", "results"
    )
    assert_frame_equal(got, by_stem.with_columns(baseline_system=pl.lit("STANDARD")))


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        ([RESULTS, "--qrels", QRELS], ["at least two systems", "'results'", "two or more run"]),
        ([RESULTS, RESULTS, "--qrels", QRELS], ["two runs are named 'results'", "--system-name"]),
        ([RESULTS, "--qrels", QRELS, "--system-name", "tag"], ["one, 'STANDARD'"]),
        (
            [RESULTS, DATA / "results-302.test", "--qrels", QRELS, "--system-name", "tag"],
            ["run tag 'STANDARD' is in both", "--system-name stem"],
        ),
        ([RESULTS, "{reversed}", "--qrels", QRELS, "--by", "model"], ["--by model", "'system'"]),
        ([RESULTS, "{reversed}", "--qrels", QRELS, "--query", "qid"], ["--query", "fixed"]),
        ([QRELS, "{reversed}", "--qrels", RESULTS], ["other way round"]),
        ([RESULTS, "{reversed}", "--qrels", QRELS, "--baseline", "result"], ["did you mean"]),
        ([SAMPLE, "--by", "system", "--system-name", "tag"], ["--system-name", "--qrels"]),
    ],
)
def test_trec_refusals(capsys, reversed_run, args, fragments):
    args = [str(arg).format(reversed=reversed_run) for arg in args]
    assert_one_line_error(*run_compare(capsys, *args), *fragments)


def test_trec_runs_by_system_is_allowed(capsys, reversed_run):
    args = [RESULTS, reversed_run, "--qrels", QRELS, "-m", "map"]
    assert_frame_equal(compare_csv(capsys, *args, "--by", "system"), compare_csv(capsys, *args))


# ---- mistakes: exit 2 and one line --------------------------------------------------------------


@pytest.fixture(scope="module")
def one_system(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("one") / "bm25.parquet"
    pl.read_parquet(SAMPLE).filter(pl.col("system") == "bm25").write_parquet(path)
    return path


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--by", "system", "--baseline", "bm52"], ["--baseline 'bm52'", "did you mean 'bm25'"]),
        ([], ["needs --by"]),
        (["--by", "model"], ["'model'", "not in the input"]),
        (["--by", "system", "-m", "nope"], ["unknown metric 'nope'"]),
        (["--by", "system", "--alpha", "1.5"], ["argument --alpha", "between 0 and 1"]),
        (["--by", "system", "--alpha", "x"], ["argument --alpha"]),
        (["--by", "system", "--resamples", "0"], ["argument --resamples", "positive"]),
        (["--by", "system", "--seed", "-1"], ["argument --seed", "non-negative"]),
        (["--by", "system", "--digits", "13"], ["argument --digits"]),
        (["--by", "system", "--test", "z"], ["argument --test: invalid choice"]),
        (["--by", "system", "--correction", "sidak"], ["argument --correction: invalid choice"]),
        (["--by", "system", "--missing", "mean"], ["argument --missing: invalid choice"]),
        (["--by", "system", "-f", "trec"], ["argument -f/--format: invalid choice"]),
        (["--by", "system", "-f", "parquet"], ["-o/--output"]),
        (["--by", "system", "-o", "out.xlsx"], ["'.xlsx'", "--format"]),
        (["--by", "system", "--per-query"], ["unrecognized arguments", "rank-eval compare --help"]),
        (["--by", "system", SAMPLE], ["2 inputs", "--qrels", "quotes"]),
    ],
)
def test_refusals(capsys, args, fragments):
    assert_one_line_error(*run_compare(capsys, SAMPLE, *args), *fragments)


def test_one_system_is_refused(capsys, one_system):
    code, out, err = run_compare(capsys, one_system, "--by", "system")
    assert_one_line_error(code, out, err, "at least two systems", "one, 'bm25'")


def test_no_input(capsys):
    assert_one_line_error(*run_compare(capsys), "required: PATH")


def test_trec_run_without_qrels(capsys):
    assert_one_line_error(*run_compare(capsys, RESULTS, "--by", "system"), "--qrels QRELS")


def test_missing_scipy_names_the_extra(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.stats", None)
    code, out, err = run_compare(capsys, SAMPLE, "--by", "system")
    assert_one_line_error(code, out, err, "scipy", 'pip install "polars-rankeval[stats]"')


# ---- the subcommand and the main command --------------------------------------------------------


def test_help_documents_every_option(capsys):
    assert cli_main(["compare", "--help"]) == 0
    out = capsys.readouterr().out
    for option in [
        "--qrels",
        "--system-name",
        "--metrics",
        "--by",
        "--baseline",
        "--test",
        "--correction",
        "--correction-scope",
        "--alpha",
        "--resamples",
        "--seed",
        "--missing",
        "--relevance-level",
        "--complete",
        "--ties",
        "--convention",
        "--duplicates",
        "--nan-scores",
        "--query",
        "--item",
        "--score",
        "--relevance",
        "--format",
        "--digits",
        "--output",
        "--buckets",
        "--no-progress",
        "./compare",
        cli.COMPARE_METRICS,
    ]:
        assert option in out
    assert cli_main(["--help"]) == 0
    assert "rank-eval compare --help" in capsys.readouterr().out


def test_a_log_named_compare_is_read_as_dot_slash_compare(capsys, monkeypatch, tmp_path):
    shutil.copy(SAMPLE, tmp_path / "compare")
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "./compare", "--by", "system", "-m", "num_q", "-f", "csv")
    assert code == 0, err
    assert out.splitlines() == ["system,num_q", "bm25,3000", "neural,3000"]
    # Bare, it is the subcommand (which then lacks its PATH).
    code, out, err = run_cli(capsys, "compare", "--by", "system")
    assert_one_line_error(code, out, err, "rank-eval compare --help")


def test_compare_as_installed_module():
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "polars_rankeval",
            "compare",
            "data/sample.parquet",
            "--by",
            "system",
            "-m",
            "map",
            "-f",
            "csv",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert read_csv(result.stdout)["system"].to_list() == ["neural"]
