"""Metrics carry their meaning through compare: direction, summary rule, level.

The newcomer trial and the reliability audit (round 3) found compare showing ``gm_map`` as the
arithmetic MAP, counts as per-query means, lower-is-better metrics read backwards, systems
merged by their joined names and ``+inf`` counted as a tie. Each case is here, with expected
values from the per-query frame worked out by hand (numpy, scipy), never from compare itself.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval._engine.meaning import meanings, recognise

stats = pytest.importorskip("scipy.stats")

SAMPLE = "data/sample.parquet"


@pytest.fixture(scope="module")
def sample() -> pl.DataFrame:
    return pl.read_parquet(SAMPLE)


@pytest.fixture(scope="module")
def per_query(sample: pl.DataFrame) -> pl.DataFrame:
    return rke.evaluate(sample, ["map", "frp", "mean_rank"], per_query=True, by="system")


def _row(frame: pl.DataFrame, metric: str) -> dict[str, object]:
    rows = frame.filter(pl.col("metric") == metric)
    assert rows.height == 1
    return rows.row(0, named=True)


def test_every_registered_metric_declares_a_direction_summary_and_level() -> None:
    for name in rke.known_metrics():
        spec = f"{name}@5" if name in {"p", "recall", "success", "hit_rate", "hits"} else name
        metric = recognise(spec)
        if metric is None:  # families that need options or a cutoff form
            continue
        assert metric.direction in {"higher", "lower", "none"}
        assert metric.summary in {"mean", "sum", "nanmean", "gm"}
        assert metric.level in {"query", "system"}
    lower = ["frp", "mean_rank", "unj@10", "rbp_resid"]
    assert all(recognise(name).direction == "lower" for name in lower)  # type: ignore[union-attr]
    assert recognise("num_q").direction == "none"  # type: ignore[union-attr]
    assert recognise("gm_map").summary == "gm"  # type: ignore[union-attr]


def test_lower_is_better_metrics_are_read_the_right_way(
    sample: pl.DataFrame, per_query: pl.DataFrame
) -> None:
    # Trial F3: neural's frp is 1.63 against bm25's 2.19; neural is better.
    out = rke.compare(sample, ["frp", "mean_rank"], by="system", baseline="bm25")
    wide = per_query.pivot(on="system", index="query", values=["frp", "mean_rank"])
    for metric in ["frp", "mean_rank"]:
        row = _row(out, metric)
        assert row["higher_is_better"] is False
        both = wide.drop_nulls([f"{metric}_bm25", f"{metric}_neural"])
        bm25, neural = both[f"{metric}_bm25"].to_numpy(), both[f"{metric}_neural"].to_numpy()
        assert row["wins"] == int((neural < bm25).sum())  # neural ranks the first hit higher
        assert row["losses"] == int((neural > bm25).sum())
        assert row["wins"] > row["losses"]
        assert row["delta"] == pytest.approx(neural.mean() - bm25.mean(), rel=1e-12)
        assert row["delta"] < 0
    assert _row(out, "frp")["wins"] == 1075
    assert _row(out, "frp")["losses"] == 567


def test_gm_map_is_shown_as_the_geometric_mean_and_tested_on_logs(sample: pl.DataFrame) -> None:
    # Trial F2: compare showed the arithmetic MAP (0.4392) under gm_map (0.3853 for bm25).
    out = rke.compare(sample, ["gm_map", "map"], by="system", baseline="bm25")
    means = rke.evaluate(sample, ["gm_map", "map"], by="system")
    aps = rke.evaluate(sample, ["map"], per_query=True, by="system").pivot(
        on="system", index="query", values="map"
    )
    row = _row(out, "gm_map")
    assert row["summary"] == "gm"
    assert row["test_scale"] == "log"
    for system, column in [("bm25", "baseline"), ("neural", "system")]:
        shown = means.filter(pl.col("system") == system)["gm_map"].item()
        assert row[f"{column}_overall"] == pytest.approx(shown, rel=1e-12)
    assert row["baseline_overall"] == pytest.approx(0.385304, abs=5e-7)
    x, y = aps["bm25"].to_numpy(), aps["neural"].to_numpy()
    # trec_eval's geometric mean: exp(mean(log(max(AP, 1e-5)))), by hand.
    assert row["baseline_value"] == pytest.approx(np.exp(np.log(np.maximum(x, 1e-5)).mean()))
    assert row["delta"] == pytest.approx(row["value"] - row["baseline_value"])
    logs = stats.ttest_rel(np.log(np.maximum(y, 1e-5)), np.log(np.maximum(x, 1e-5)))
    assert row["p_value"] == pytest.approx(logs.pvalue, rel=1e-9)
    plain = _row(out, "map")
    assert plain["baseline_value"] == pytest.approx(x.mean(), rel=1e-12)
    assert plain["test_scale"] == "value"


@pytest.mark.parametrize("metric", ["num_rel_ret", "num_ret", "num_rel", "num_q"])
def test_counts_are_refused_with_a_reason(sample: pl.DataFrame, metric: str) -> None:
    with pytest.raises(rke.InvalidOptionError, match=metric):
        rke.compare(sample, ["map", metric], by="system")


def test_counts_in_a_per_query_table_are_refused() -> None:
    table = pl.DataFrame(
        {"system": ["a", "a", "b", "b"], "query": [1, 2, 1, 2], "num_rel_ret": [3, 4, 5, 6]}
    )
    with pytest.raises(rke.InvalidOptionError, match="count that evaluate sums"):
        rke.compare_per_query(table, by="system")


def test_other_tools_columns_declared_assumed_and_contradicted() -> None:
    table = pl.DataFrame(
        {
            "run": ["a"] * 3 + ["b"] * 3,
            "qid": [1, 2, 3] * 2,
            "latency": [10.0, 20.0, 30.0, 5.0, 25.0, 15.0],
            "AP": [0.1, 0.2, 0.3, 0.2, 0.2, 0.4],
            "click_rate": [0.1, 0.1, 0.1, 0.2, 0.2, 0.0],
        }
    )
    out = rke.compare_per_query(table, by="run", query="qid", lower_is_better=["latency"])
    latency, ap, clicks = _row(out, "latency"), _row(out, "AP"), _row(out, "click_rate")
    assert (latency["higher_is_better"], latency["direction_source"]) == (False, "option")
    assert (latency["wins"], latency["ties"], latency["losses"]) == (2, 0, 1)
    assert (ap["higher_is_better"], ap["direction_source"]) == (True, "metric")
    assert (clicks["higher_is_better"], clicks["direction_source"]) == (True, "assumed")
    assert (clicks["wins"], clicks["losses"]) == (2, 1)
    mapped = rke.compare_per_query(table, by="run", query="qid", lower_is_better={"AP": "higher"})
    assert _row(mapped, "AP")["direction_source"] == "option"
    with pytest.raises(rke.InvalidOptionError, match="higher-is-better"):
        rke.compare_per_query(table, by="run", query="qid", lower_is_better=["AP"])
    with pytest.raises(rke.InvalidOptionError, match="not compared columns"):
        rke.compare_per_query(table, by="run", query="qid", lower_is_better=["latncy"])
    with pytest.raises(rke.InvalidOptionError, match="one of"):
        rke.compare_per_query(table, by="run", query="qid", lower_is_better={"latency": "down"})


def test_meanings_of_trec_spellings() -> None:
    found = meanings(["P_10", "recip_rank", "gm_bpref", "Rprec", "year"])
    assert [m.source for m in found.values()] == ["metric"] * 4 + ["assumed"]
    assert found["gm_bpref"].summary == "gm"


def test_each_system_overall_value_comes_from_all_its_queries() -> None:
    # Audit R08: A's mean is 0.5 over its 10 queries; the A-B pair sees only 5 (0.1 each).
    table = pl.DataFrame(
        {
            "system": ["A"] * 10 + ["B"] * 5 + ["C"] * 10,
            "query": list(range(10)) + list(range(5)) + list(range(10)),
            "map": [0.1] * 5 + [0.9] * 5 + [0.5] * 5 + [0.4] * 10,
        }
    )
    out = rke.compare_per_query(table, by="system")
    a_b = out.filter((pl.col("baseline_system") == "A") & (pl.col("system") == "B")).row(
        0, named=True
    )
    assert a_b["baseline_value"] == pytest.approx(0.1)
    assert (a_b["baseline_overall"], a_b["baseline_queries"]) == (pytest.approx(0.5), 10)
    assert (a_b["system_overall"], a_b["system_queries"]) == (pytest.approx(0.5), 5)
    a_c = (
        out.filter(pl.col("system") == "C")
        .filter(pl.col("baseline_system") == "A")
        .row(0, named=True)
    )
    assert a_c["baseline_overall"] == pytest.approx(0.5)
    zero = rke.compare_per_query(table, by="system", unpaired_queries="zero")
    b_row = (
        zero.filter(pl.col("system") == "B")
        .filter(pl.col("baseline_system") == "A")
        .row(0, named=True)
    )
    assert (b_row["system_overall"], b_row["system_queries"]) == (pytest.approx(0.25), 10)


def test_overall_equals_evaluate_for_every_metric_kind(sample: pl.DataFrame) -> None:
    metrics = ["ndcg@10", "gm_map", "frp", "kendall_tau", "gm_bpref"]
    out = rke.compare(sample, metrics, by="system")
    means = rke.evaluate(sample, metrics, by="system")
    for metric in metrics:
        row = _row(out, metric)
        for column, system in [("baseline", row["baseline_system"]), ("system", row["system"])]:
            want = means.filter(pl.col("system") == system)[metric].item()
            assert row[f"{column}_overall"] == pytest.approx(want, rel=1e-12), metric


def test_systems_whose_joined_names_collide_are_an_error() -> None:
    # Audit F2 / C11.
    rows = [
        ("x / y", "z", "q1", "d", 1.0, 1),
        ("x", "y / z", "q2", "d", 1.0, 0),
        ("w", "w", "q1", "d", 1.0, 0),
        ("w", "w", "q2", "d", 1.0, 1),
    ]
    log = pl.DataFrame(rows, schema=["m", "k", "query", "item", "score", "relevance"], orient="row")
    assert rke.evaluate(log, ["mrr"], by=["m", "k"]).height == 3
    with pytest.raises(rke.ColumnValueError, match="x / y / z"):
        rke.compare(log, ["mrr"], by=["m", "k"])


@pytest.mark.parametrize("bad", [math.inf, -math.inf])
def test_infinite_per_query_values_are_an_error(bad: float) -> None:
    # Audit F4 / P04: +inf was turned into a tie.
    table = pl.DataFrame(
        {"system": ["a", "a", "b", "b"], "query": [1, 2, 1, 2], "map": [0.2, 0.4, bad, 0.1]}
    )
    with pytest.raises(rke.ColumnValueError, match=r"'map'.*system 'b', query 1"):
        rke.compare_per_query(table, by="system")


def test_compare_refuses_before_reading_the_log(tmp_path: object) -> None:
    # The count is refused from the metric list alone: no evaluation of a missing file.
    lazy = pl.scan_parquet("does-not-exist-*.parquet")
    with pytest.raises(rke.InvalidOptionError, match="num_q"):
        rke.compare(lazy, ["map", "num_q"], by="system")


def test_geometric_means_are_tested_on_the_log_scale() -> None:
    # Small values dominate a geometric mean: the test must see their logs, not the values.
    x = np.array([0.5, 0.4, 0.0, 0.3, 0.2, 0.6])
    y = np.array([0.45, 0.42, 0.01, 0.31, 0.001, 0.58])
    table = pl.DataFrame(
        {"system": ["a"] * 6 + ["b"] * 6, "query": list(range(6)) * 2, "gm_map": [*x, *y]}
    )
    row = _row(rke.compare_per_query(table, by="system", baseline="a"), "gm_map")
    on_logs = stats.ttest_rel(np.log(np.maximum(y, 1e-5)), np.log(np.maximum(x, 1e-5)))
    assert row["p_value"] == pytest.approx(on_logs.pvalue, rel=1e-9)
    assert row["p_value"] != pytest.approx(stats.ttest_rel(y, x).pvalue, rel=1e-3)
    interval = on_logs.confidence_interval(0.95)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((interval.low, interval.high))
    gm = [float(np.exp(np.log(np.maximum(v, 1e-5)).mean())) for v in (x, y)]
    assert (row["baseline_value"], row["value"]) == pytest.approx(gm)


def _trec_files(tmp_path: Path, n_runs: int = 5, n_topics: int = 25) -> tuple[list[Path], Path]:
    """TREC-style runs (100 docs per topic, some tied scores) and graded qrels."""
    rng = np.random.default_rng(2003)
    qrels = tmp_path / "qrels.txt"
    lines = []
    for topic in range(301, 301 + n_topics):
        for doc in range(150):
            if rng.random() < 0.5:
                label = int(rng.choice([0, 0, 0, 1, 2]))
                lines.append(f"{topic} 0 D{doc:04d} {label}")
    qrels.write_text("\n".join(lines) + "\n")
    runs = []
    for run in range(n_runs):
        path = tmp_path / f"run{run:02d}.txt"
        out = []
        for topic in range(301, 301 + n_topics):
            docs = rng.permutation(150)[:100]
            scores = np.round(rng.random(100) * (3 + run), 1)  # rounding makes ties
            for rank, (doc, score) in enumerate(zip(docs, scores, strict=True)):
                out.append(f"{topic} Q0 D{doc:04d} {rank + 1} {score} r{run}")
        path.write_text("\n".join(out) + "\n")
        runs.append(path)
    return runs, qrels


def _report_cells(text: str) -> dict[tuple[str, str], float]:
    lines = [line for line in text.splitlines() if line.startswith("| (")]
    header = text.splitlines()[0].strip("| ").split(" | ")[1:]
    cells = {}
    for line in lines:
        parts = [part.strip() for part in line.strip("|").split("|")]
        system = parts[0].split(") ", 1)[1]
        for metric, cell in zip(header, parts[1:], strict=True):
            cells[(system, metric)] = float(cell.split("<sup>")[0].strip("*"))
    return cells


def test_every_number_shown_by_cli_compare_equals_evaluate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The trial's check on TREC Robust 2003 runs, on generated TREC files: the report's
    # numbers (gm_map, frp, bpref, ...) are the ones `rank-eval RUN` prints for each run.
    from polars_rankeval.cli import main

    runs, qrels = _trec_files(tmp_path)
    metrics = "gm_map,map,P_10,ndcg_cut_10,bpref,frp,gm_bpref"
    argv = ["compare", *map(str, runs), "--qrels", str(qrels), "-m", metrics, "-f", "markdown"]
    code = main(argv)
    shown = capsys.readouterr().out
    assert code == 0, shown
    cells = _report_cells(shown)
    for run in runs:
        code = main([str(run), "--qrels", str(qrels), "-m", metrics, "--format", "csv"])
        single = pl.read_csv(io.StringIO(capsys.readouterr().out))
        assert code == 0
        for metric in metrics.split(","):
            assert cells[(run.stem, metric)] == pytest.approx(single[metric].item(), abs=5e-5)
    bold_frp = [s for (s, m), v in cells.items() if m == "frp"]
    best = min(cells[(s, "frp")] for s in bold_frp)
    assert f"**{best:.4f}**" in shown  # lower is better: the smallest frp is bold


def test_cli_compare_refuses_a_count_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from polars_rankeval.cli import main

    code = main(["compare", SAMPLE, "--by", "system", "-m", "map,num_rel_ret"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert "'num_rel_ret' is a count" in err


def test_a_huge_trec_style_cutoff_is_refused_by_name() -> None:
    with pytest.raises(rke.InvalidOptionError, match=r"cutoff k for 'p' must be at most"):
        rke.parse_metric("P_" + "9" * 5000)
