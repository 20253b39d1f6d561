"""rke.plot: each chart's data against independent expectations, and each chart renders.

* ``*_data`` functions need only Polars and are tested without Altair: ``metric_at_k_data``
  against one ``evaluate`` call per cutoff; ``per_query_delta_data`` against a plain Python
  count of wins, ties and losses (and against ``rke.compare``); ``distribution_data`` against
  ``numpy.histogram``; ``precision_recall_data`` against trec_eval 10's own output
  (``iprec_at_recall_*`` lines of ``tests/data/expected_v10``) and against a line-by-line port
  of trec_eval's ``m_iprec_at_recall.c`` on generated logs.
* Chart tests skip without Altair (``pytest.importorskip`` per test) and render every chart to
  PNG offline with ``vl_convert``.
* Without Altair, ``import polars_rankeval`` and the ``*_data`` functions work and the charts
  raise an ImportError naming the ``plot`` extra.
"""

from __future__ import annotations

import json
import math
import re
import struct
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from tests.support import reference as ref

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample.parquet"
DATA = Path(__file__).parents[1] / "data"
EXPECTED_DIR = DATA / "expected_v10"
EXTRA = 'pip install "polars-rankeval[plot]"'


@pytest.fixture(scope="module")
def log() -> pl.DataFrame:
    return pl.read_parquet(SAMPLE)


@pytest.fixture(scope="module")
def per_query(log: pl.DataFrame) -> pl.DataFrame:
    return rke.evaluate(log, ["ndcg@10", "map", "p@1"], by="system", per_query=True)


def comparison_literal() -> pl.DataFrame:
    """A hand-built frame with the schema of ``rke.compare``'s output (three systems)."""
    return pl.DataFrame(
        {
            "metric": ["ndcg@10"] * 3 + ["map"] * 3,
            "system": ["neural", "splade", "colbert"] * 2,
            "baseline_system": "bm25",
            "n_queries": 3000,
            "n_dropped": 0,
            "baseline_value": [0.53] * 3 + [0.44] * 3,
            "value": [0.71, 0.58, 0.51, 0.60, 0.45, 0.40],
            "delta": [0.18, 0.05, -0.02, 0.16, 0.01, -0.04],
            "ci_low": [0.16, 0.03, -0.05, 0.14, -0.01, -0.06],
            "ci_high": [0.20, 0.07, 0.01, 0.18, 0.03, -0.02],
            "effect_size": [0.9, 0.3, -0.1, 0.8, 0.05, -0.2],
            "p_value": [1e-9, 1e-4, 0.2, 1e-9, 0.4, 1e-3],
            "p_adjusted": [6e-9, 4e-4, 0.4, 6e-9, 0.4, 3e-3],
            "significant": [True, True, False, True, False, True],
            "wins": [2000, 1500, 1400, 2100, 1500, 1300],
            "ties": [100] * 6,
            "losses": [900, 1400, 1500, 800, 1400, 1600],
            "test": "t",
        }
    )


# ---------------------------------------------------------------------------------------------
# metric_at_k
# ---------------------------------------------------------------------------------------------


def test_metric_at_k_data_equals_one_evaluate_per_cutoff(log: pl.DataFrame) -> None:
    ks = [1, 3, 5, 10, 20]
    data = rke.plot.metric_at_k_data(log, "ndcg", ks, by="system")
    assert data.columns == ["system", "metric", "k", "value"]
    assert data.height == 2 * len(ks)
    for k in ks:
        expected = rke.evaluate(log, [f"ndcg@{k}"], by="system")
        got = data.filter(pl.col("k") == k).select("system", pl.col("value").alias(f"ndcg@{k}"))
        assert_frame_equal(got, expected, check_exact=False, rel_tol=0, abs_tol=1e-12)


def test_metric_at_k_data_options_and_no_by(log: pl.DataFrame) -> None:
    bm25 = log.filter(system="bm25")
    data = rke.plot.metric_at_k_data(bm25.lazy(), "p", [5, 1], relevance_level=2)
    assert data.columns == ["metric", "k", "value"]
    assert data["k"].to_list() == [1, 5]
    expected = rke.evaluate(bm25, ["p@1", "p@5"], relevance_level=2).row(0)
    assert data["value"].to_list() == pytest.approx(list(expected), abs=1e-12)
    # metric options go with the name, the cutoffs with ks
    exp = rke.plot.metric_at_k_data(bm25, "ndcg(gain=exp)", [10])
    assert exp["metric"].to_list() == ["ndcg(gain=exp)"]
    want = rke.evaluate(bm25, ["ndcg@10(gain=exp)"]).item()
    assert exp["value"].item() == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize(
    ("metric", "ks", "match"),
    [
        ("ndcg@10", [1, 5], "without a cutoff"),
        ("ndcg", [], "non-empty list"),
        ("ndcg", 5, "non-empty list"),
        ("ndcg", [0, 5], "positive ints"),
        ("ndcg", [1.5], "positive ints"),
    ],
)
def test_metric_at_k_data_refuses(log: pl.DataFrame, metric: str, ks: Any, match: str) -> None:
    with pytest.raises(rke.InvalidOptionError, match=match):
        rke.plot.metric_at_k_data(log, metric, ks, by="system")


# ---------------------------------------------------------------------------------------------
# per_query_delta
# ---------------------------------------------------------------------------------------------


def python_deltas(
    rows: Sequence[dict[str, Any]], metric: str, baseline: str, system: str
) -> tuple[list[tuple[str, float]], int]:
    """Paired differences by plain dict lookups: (query, d) pairs and the number dropped."""

    def values(name: str) -> dict[str, float]:
        out = {}
        for row in rows:
            value = row[metric]
            if row["system"] == name and value is not None and not math.isnan(value):
                out[row["query"]] = float(value)
        return out

    x, y = values(baseline), values(system)
    paired = sorted(set(x) & set(y))
    dropped = len(set(x) ^ set(y))
    deltas = []
    for query in paired:
        d = y[query] - x[query]
        if abs(d) <= 1e-12 * max(1.0, abs(x[query]), abs(y[query])):
            d = 0.0
        deltas.append((query, d))
    return deltas, dropped


def outcome_counts(data: pl.DataFrame) -> dict[str, int]:
    sums = data.group_by("outcome").agg(pl.col("n_queries").sum())
    return dict(zip(sums["outcome"], sums["n_queries"], strict=True))


@pytest.fixture(scope="module")
def holey(per_query: pl.DataFrame) -> pl.DataFrame:
    """The sample's per-query table with rows missing on each side and undefined values."""
    return per_query.filter(
        ~((pl.col("system") == "bm25") & pl.col("query").is_in(["q0001", "q0002", "q0003"]))
        & ~((pl.col("system") == "neural") & pl.col("query").is_in(["q0010", "q0011"]))
    ).with_columns(
        pl.when(pl.col("query") == "q0020")
        .then(float("nan"))
        .when((pl.col("query") == "q0021") & (pl.col("system") == "neural"))
        .then(None)
        .otherwise(pl.col("ndcg@10"))
        .alias("ndcg@10")
    )


@pytest.mark.parametrize("metric", ["ndcg@10", "p@1"])
def test_per_query_delta_counts_equal_a_python_count(holey: pl.DataFrame, metric: str) -> None:
    deltas, dropped = python_deltas(holey.to_dicts(), metric, "bm25", "neural")
    data = rke.plot.per_query_delta_data(holey, metric, "bm25", "neural")
    wins = sum(d > 0 for _, d in deltas)
    ties = sum(d == 0 for _, d in deltas)
    losses = sum(d < 0 for _, d in deltas)
    assert ties > 0
    assert wins > 0
    assert losses > 0
    assert outcome_counts(data) == {"win": wins, "tie": ties, "loss": losses}
    assert set(data["n_dropped"]) == {dropped}
    if metric == "ndcg@10":
        # 3 + 2 rows missing, q0021 null on one side; q0020 is NaN on both sides (not dropped)
        assert dropped == 6
    # binned: about max_bars rows, bins tile the sorted order and never mix outcomes
    assert data.height <= 500 + 3
    assert data["first"][0] == 1
    assert data["last"][-1] == len(deltas)
    assert (data["first"].slice(1) == data["last"].slice(0, data.height - 1) + 1).all()
    assert (data["n_queries"] == data["last"] - data["first"] + 1).all()
    expected_outcomes = ["win"] * wins + ["tie"] * ties + ["loss"] * losses
    for first, last, outcome in data.select("first", "last", "outcome").iter_rows():
        assert set(expected_outcomes[first - 1 : last]) == {outcome}
    # bar area (mean × width) adds up to the sum of the differences
    total = (data["delta"] * data["n_queries"]).sum()
    assert total == pytest.approx(sum(d for _, d in deltas), abs=1e-9)
    assert (data["delta_min"] <= data["delta"] + 1e-15).all()
    assert (data["delta"] <= data["delta_max"] + 1e-15).all()


def test_per_query_delta_unbinned_is_the_sorted_list(holey: pl.DataFrame) -> None:
    deltas, _ = python_deltas(holey.to_dicts(), "ndcg@10", "bm25", "neural")
    data = rke.plot.per_query_delta_data(holey, "ndcg@10", "bm25", "neural", max_bars=10_000)
    expected = sorted(deltas, key=lambda pair: (-pair[1], pair[0]))
    assert data.height == len(expected)
    assert data["query"].to_list() == [query for query, _ in expected]
    assert data["delta"].to_list() == pytest.approx([d for _, d in expected], abs=1e-15)
    assert data["first"].to_list() == list(range(1, len(expected) + 1))


def test_per_query_delta_counts_equal_compare(per_query: pl.DataFrame) -> None:
    compare = getattr(rke, "compare_per_query", None)
    if compare is None:
        pytest.skip("rke.compare_per_query is not there yet")
    pytest.importorskip("scipy")
    stats = compare(per_query, metrics=["ndcg@10", "p@1"], by="system", baseline="bm25")
    for metric in ("ndcg@10", "p@1"):
        data = rke.plot.per_query_delta_data(per_query, metric, "bm25", "neural")
        row = stats.filter(metric=metric).row(0, named=True)
        assert outcome_counts(data) == {
            "win": row["wins"],
            "tie": row["ties"],
            "loss": row["losses"],
        }
        assert data["n_dropped"][0] == row["n_dropped"]


def test_per_query_delta_tolerance_and_several_by_columns() -> None:
    table = pl.DataFrame(
        {
            "date": ["d1"] * 6,
            "model": ["a", "a", "a", "b", "b", "b"],
            "qid": ["q1", "q2", "q3", "q1", "q2", "q3"],
            # q1 differs by floating-point noise only: a tie, not a win
            "map": [0.3, 0.5, 0.9, 0.1 + 0.2, 0.75, 0.25],
        }
    )
    assert 0.1 + 0.2 != 0.3
    data = rke.plot.per_query_delta_data(
        table, "map", ("d1", "a"), ("d1", "b"), by=["date", "model"], query="qid"
    )
    assert data.select("outcome", "query", "delta").rows() == [
        ("win", "q2", 0.25),
        ("tie", "q1", 0.0),
        ("loss", "q3", pytest.approx(-0.65)),
    ]
    # the two systems as compare names them: the by columns, then baseline_<by>
    assert data.columns[:5] == ["metric", "date", "model", "baseline_date", "baseline_model"]
    assert data.select("date", "model", "baseline_date", "baseline_model").unique().rows() == [
        ("d1", "b", "d1", "a")
    ]


def test_per_query_delta_refuses(per_query: pl.DataFrame) -> None:
    with pytest.raises(rke.InvalidOptionError, match=r"baseline='bm2'.*\['bm25', 'neural'\]"):
        rke.plot.per_query_delta_data(per_query, "map", "bm2", "neural")
    with pytest.raises(rke.ColumnNotFoundError, match="'mapp'"):
        rke.plot.per_query_delta_data(per_query, "mapp", "bm25", "neural")
    doubled = pl.concat([per_query, per_query.head(1)])
    with pytest.raises(rke.ColumnValueError, match="1 \\(system, query\\) pair"):
        rke.plot.per_query_delta_data(doubled, "map", "bm25", "neural")
    with pytest.raises(rke.InvalidOptionError, match="max_bars"):
        rke.plot.per_query_delta_data(per_query, "map", "bm25", "neural", max_bars=0)


# ---------------------------------------------------------------------------------------------
# distribution
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("metric", ["ndcg@10", "map"])
def test_distribution_data_equals_numpy_histogram(per_query: pl.DataFrame, metric: str) -> None:
    data = rke.plot.distribution_data(per_query, metric, bins=20)
    assert data.height == 2 * 20
    for system in ("bm25", "neural"):
        values = per_query.filter(system=system)[metric].to_numpy()
        # bin i holds edges[i] <= v < edges[i + 1] (the last one closed), the edges being the
        # doubles nearest to i / 20 (np.linspace would give 3 * 0.05 = 0.15000000000000002)
        counts, edges = np.histogram(values, bins=np.arange(21) / 20)
        rows = data.filter(system=system)
        assert rows["n_queries"].to_list() == counts.tolist()
        assert rows["bin_start"].to_numpy() == pytest.approx(edges[:-1], abs=1e-12)
        assert rows["bin_end"].to_numpy() == pytest.approx(edges[1:], abs=1e-12)
        assert rows["share"].to_numpy() == pytest.approx(counts / len(values), abs=1e-12)


def test_distribution_data_edges_range_and_missing_values() -> None:
    table = pl.DataFrame(
        {
            "system": ["a"] * 6 + ["b"] * 2,
            "query": [f"q{i}" for i in range(8)],
            "v": [0.0, 0.05, 0.3, 1.0, None, float("nan"), 0.3, 0.999],
        }
    )
    data = rke.plot.distribution_data(table, "v", bins=20)
    counts = data.filter(system="a")["n_queries"].to_list()
    # a value on an edge opens its bin; 1.0 closes the last; null and NaN are left out
    assert {i: c for i, c in enumerate(counts) if c} == {0: 1, 1: 1, 6: 1, 19: 1}
    assert data.filter(system="a")["share"].sum() == pytest.approx(1.0)
    # values beyond [0, 1] (a rank): bins over [min, max]
    ranks = pl.DataFrame({"query": ["q1", "q2", "q3"], "frp": [1, 3, 11]})
    data = rke.plot.distribution_data(ranks, "frp", by=None, bins=5)
    assert data.columns == ["metric", "bin_start", "bin_end", "n_queries", "share"]
    assert data["bin_start"].to_list() == [1.0, 3.0, 5.0, 7.0, 9.0]
    assert data["n_queries"].to_list() == [1, 1, 0, 0, 1]
    with pytest.raises(rke.InvalidOptionError, match="bins"):
        rke.plot.distribution_data(ranks, "frp", by=None, bins=0)


# ---------------------------------------------------------------------------------------------
# systems
# ---------------------------------------------------------------------------------------------


def test_systems_data_keeps_rows_and_labels() -> None:
    comparison = comparison_literal()
    data = rke.plot.systems_data(comparison)
    assert data.height == comparison.height
    assert data["label"].to_list() == comparison["system"].to_list()
    for name in ("delta", "ci_low", "ci_high", "significant", "p_adjusted", "wins", "test"):
        assert data[name].to_list() == comparison[name].to_list()
    two_baselines = comparison.with_columns(
        pl.when(pl.col("system") == "colbert")
        .then(pl.lit("neural"))
        .otherwise("baseline_system")
        .alias("baseline_system")
    )
    labels = rke.plot.systems_data(two_baselines)["label"].to_list()
    assert labels[:3] == ["neural vs bm25", "splade vs bm25", "colbert vs neural"]
    with pytest.raises(rke.ColumnNotFoundError, match=r"\['ci_low', 'ci_high'\]"):
        rke.plot.systems_data(comparison.drop("ci_low", "ci_high"))


# ---------------------------------------------------------------------------------------------
# precision_recall: trec_eval's iprec_at_recall
# ---------------------------------------------------------------------------------------------


def read_expected(name: str) -> dict[str, dict[str, str]]:
    """``measure -> query -> printed value`` from a ``trec_eval -q`` output file."""
    table: dict[str, dict[str, str]] = {}
    for line in (EXPECTED_DIR / name).read_text().splitlines():
        if line.strip():
            measure, query, value = line.split("\t")
            table.setdefault(measure.strip(), {})[query.strip()] = value.strip()
    return table


def printed_equal(ours: float, text: str) -> bool:
    """trec_eval's 4 decimals: the same text, or within half a unit of the last decimal."""
    return f"{ours:.4f}" == text or abs(ours - float(text)) <= 5e-5 + 1e-12


# (qrels, run, expected output, keywords): the trec_eval command of each file is in
# tests/data/README.md.
TREC_CASES = {
    "test.aq": ("qrels.test", "results.test", "out.test.aq", {}),
    "test.aql": ("qrels.rel_level", "results.test", "out.test.aql", {"relevance_level": 2}),
    "test.aqc": ("qrels.test", "results.trunc", "out.test.aqc", {"missing_queries": "zero"}),
    "comment": ("qrels.comment.test", "results.comment.test", "out.comment.all_trec.q", {}),
    "302": ("qrels-302.test", "results-302.test", "out.302.all_trec.q", {}),
    # trec_eval -miprec_at_recall..10,.20,.25,.75,.50 (its own cutoffs)
    "meas_params": ("qrels.test", "results.test", "out.test.meas_params", {}),
}


def trec_frame(qrels: str, run: str) -> pl.LazyFrame:
    run_lf, qrels_lf = rke.read_trec_run(DATA / run), rke.read_trec_qrels(DATA / qrels)
    if run not in ("results.trunc", "results.comment.test"):
        return rke.join_run_qrels(run_lf, qrels_lf)
    # results.trunc lacks topic 302; the comment run has 301 topics, 31 of them judged.
    with pytest.warns(rke.errors.QueryCoverageWarning):
        return rke.join_run_qrels(run_lf, qrels_lf)


@pytest.mark.parametrize("case", list(TREC_CASES))
def test_precision_recall_equals_trec_eval(case: str) -> None:
    qrels, run, expected_file, options = TREC_CASES[case]
    expected = {
        measure: values
        for measure, values in read_expected(expected_file).items()
        if measure.startswith("iprec_at_recall_")
    }
    levels = sorted(float(measure.removeprefix("iprec_at_recall_")) for measure in expected)
    assert len(levels) == (5 if case == "meas_params" else 11)
    lf = trec_frame(qrels, run)
    per_query = rke.plot.precision_recall_data(lf, per_query=True, recall_levels=levels, **options)
    means = rke.plot.precision_recall_data(lf, recall_levels=levels, **options)
    compared = 0
    mismatches = []
    for measure, values in expected.items():
        level = float(measure.removeprefix("iprec_at_recall_"))
        ours = dict(per_query.filter(pl.col("recall") == level).select("query", "precision").rows())
        ours["all"] = means.filter(pl.col("recall") == level)["precision"].item()
        # the same evaluated queries as trec_eval, and its value for each and for the mean
        assert set(ours) == set(values), measure
        for query, text in values.items():
            compared += 1
            if not printed_equal(ours[query], text):
                mismatches.append(f"{measure} {query}: ours {ours[query]!r}, trec_eval {text}")
    assert not mismatches, "\n".join(mismatches)
    assert compared == len(expected) * len(next(iter(expected.values())))


def c_lround(x: float) -> int:
    """C's lround for x >= 0: the nearest integer, halves away from zero."""
    whole = math.floor(x)
    return whole + 1 if x - whole >= 0.5 else whole


def trec_iprec(query: ref.Query, levels: Sequence[float]) -> list[float]:
    """A line-by-line port of trec_eval 10's te_calc_iprec_at_recall (m_iprec_at_recall.c)."""
    rels = [query.is_rel(query.label_at(i)) for i in range(len(query.ranking))]
    num_ret, num_rel_ret = len(rels), sum(rels)
    values = [0.0] * len(levels)
    if num_ret == 0:  # trec_eval -c: a query without results scores 0 everywhere
        return values
    cutoffs = [c_lround(level * query.num_rel) for level in levels]
    current = len(levels) - 1
    while current >= 0 and cutoffs[current] > num_rel_ret:
        current -= 1
    int_precis = num_rel_ret / num_ret
    rel_so_far = num_rel_ret
    i = num_ret
    while i > 0 and rel_so_far > 0:
        precis = rel_so_far / i
        int_precis = max(int_precis, precis)
        if rels[i - 1]:
            while current >= 0 and rel_so_far == cutoffs[current]:
                values[current] = int_precis
                current -= 1
            rel_so_far -= 1
        i -= 1
    while current >= 0:
        values[current] = int_precis
        current -= 1
    return values


def generated_log(seed: int, n_queries: int = 60) -> pl.DataFrame:
    """Graded and negative labels, unjudged and unretrieved rows, tied scores, int item ids."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        n_items = int(rng.integers(1, 30))
        items = rng.choice(500, size=n_items, replace=False)
        for item in items:
            retrieved = rng.random() < 0.85
            judged = rng.random() < 0.75
            score = float(rng.integers(0, 8)) / 2 if retrieved else None  # many ties
            label = int(rng.choice([-1, 0, 0, 1, 2, 3])) if judged else None
            if score is None and label is None:
                continue
            rows.append((f"q{q}", int(item), score, label))
    return pl.DataFrame(
        rows,
        schema={"query": pl.String, "item": pl.Int64, "score": pl.Float64, "relevance": pl.Int64},
        orient="row",
    )


@pytest.mark.parametrize(
    ("seed", "relevance_level", "levels"),
    [
        (1, 1, rke.plot.RECALL_LEVELS),
        (2, 2, rke.plot.RECALL_LEVELS),
        # halves: 0.5 * odd R and 0.25 * 2 ... are where lround and other roundings part
        (3, 1, [0.0, 0.125, 0.25, 1 / 3, 0.5, 0.75, 0.9, 1.0]),
    ],
)
def test_precision_recall_equals_a_port_of_trec_eval(
    seed: int, relevance_level: int, levels: Sequence[float]
) -> None:
    log = generated_log(seed)
    got = rke.plot.precision_recall_data(
        log, per_query=True, recall_levels=levels, relevance_level=relevance_level
    )
    expected = []
    for (name,), rows in log.group_by(["query"]):
        triples = list(rows.select("item", "score", "relevance").iter_rows())
        if all(label is None for _, _, label in triples):
            continue  # no judgment: not evaluated
        if all(score is None for _, score, _ in triples):
            continue  # judged, nothing retrieved: skipped without -c
        query = ref.Query(triples, relevance_level)
        expected += zip([name] * len(levels), levels, trec_iprec(query, levels), strict=True)
    want = pl.DataFrame(expected, schema=["query", "recall", "precision"], orient="row").sort(
        "query", "recall"
    )
    assert want.height > 40 * len(levels)
    assert_frame_equal(got, want, check_exact=False, rel_tol=0, abs_tol=1e-12)


def test_precision_recall_means_by_system_and_passes(log: pl.DataFrame) -> None:
    per_query = rke.plot.precision_recall_data(log, by="system", per_query=True)
    means = rke.plot.precision_recall_data(log, by="system")
    assert means.columns == ["system", "recall", "precision"]
    assert means.height == 2 * 11
    by_hand = per_query.group_by("system", "recall").agg(pl.col("precision").mean())
    assert_frame_equal(
        means, by_hand.sort("system", "recall"), check_exact=False, rel_tol=0, abs_tol=1e-12
    )
    # the LazyFrame path in bounded passes gives the same
    lazy = rke.plot.precision_recall_data(log.lazy(), by="system", n_buckets=3)
    assert_frame_equal(means, lazy, check_exact=False, rel_tol=0, abs_tol=1e-12)
    # precision falls (weakly) as recall rises: it is interpolated
    for _, rows in means.group_by("system"):
        values = rows.sort("recall")["precision"].to_list()
        assert values == sorted(values, reverse=True)


def test_precision_recall_refuses(log: pl.DataFrame) -> None:
    bm25 = log.filter(system="bm25")
    with pytest.raises(rke.InvalidOptionError, match="no closed form"):
        rke.plot.precision_recall_data(bm25, ties="expected")
    for levels in ([], [0.5, 1.5], [0.1, 0.1], "0.5"):
        with pytest.raises(rke.InvalidOptionError, match="recall_levels"):
            rke.plot.precision_recall_data(bm25, recall_levels=levels)
    with pytest.raises(rke.DuplicateItemError):
        rke.plot.precision_recall_data(log)  # two systems without by=


# ---------------------------------------------------------------------------------------------
# Charts: Altair specs rendered offline
# ---------------------------------------------------------------------------------------------


def render(chart: Any) -> tuple[int, int, int]:
    """PNG width, height and byte size of a chart rendered by vl_convert (no browser)."""
    vl_convert = pytest.importorskip("vl_convert")
    png = vl_convert.vegalite_to_png(chart.to_json())
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    return width, height, len(png)


def inline_rows(chart: Any) -> list[list[dict[str, Any]]]:
    """The rows of every inline dataset of a chart's spec."""
    spec = json.loads(chart.to_json())
    return list(spec.get("datasets", {}).values())


def assert_same_rows(rows: list[dict[str, Any]], frame: pl.DataFrame) -> None:
    # Means to 1e-12: a second evaluation may sum in another order (the last bit can differ).
    got = pl.DataFrame(rows, schema=frame.schema)
    assert_frame_equal(got, frame, check_exact=False, rel_tol=0, abs_tol=1e-12)


def assert_renders(chart: Any, *, min_height: int = 280) -> None:
    width, height, size = render(chart)
    assert width >= 500
    assert height >= min_height
    # a blank image of this size compresses to a few kB; marks, text and axes do not
    assert size > 10_000


def chart_text(chart: Any) -> str:
    return json.dumps(chart.to_dict()["title"], ensure_ascii=False)


def test_metric_at_k_chart(log: pl.DataFrame) -> None:
    pytest.importorskip("altair")
    ks = [1, 3, 5, 10, 20, 50, 100]
    chart = rke.plot.metric_at_k(log, "ndcg", ks, by="system")
    data = rke.plot.metric_at_k_data(log, "ndcg", ks, by="system")
    (rows,) = inline_rows(chart)
    assert_same_rows(rows, data)
    assert chart.to_dict()["encoding"]["x"]["scale"]["type"] == "log"
    assert_renders(chart)
    # one curve (no by) and several by columns (one colour per combination)
    assert_renders(rke.plot.metric_at_k(log.filter(system="bm25"), "p", [1, 5, 10]))
    dated = log.with_columns(date=pl.lit("2024-06-01"))
    several = rke.plot.metric_at_k(dated, "p", [1, 5], by=["date", "system"])
    assert {row["run"] for row in inline_rows(several)[0]} == {
        "2024-06-01 / bm25",
        "2024-06-01 / neural",
    }
    assert_renders(several)


def test_per_query_delta_chart(per_query: pl.DataFrame, holey: pl.DataFrame) -> None:
    pytest.importorskip("altair")
    chart = rke.plot.per_query_delta(holey, "ndcg@10", "bm25", "neural")
    data = rke.plot.per_query_delta_data(holey, "ndcg@10", "bm25", "neural")
    rows = inline_rows(chart)
    assert len(rows) == 1
    assert len(rows[0]) == data.height < 5000
    counts = outcome_counts(data)
    text = chart_text(chart)
    assert f"{counts['win']:,} wins · {counts['tie']:,} ties · {counts['loss']:,} losses" in text
    assert "6 queries dropped" in text
    assert_renders(chart)
    small = rke.plot.per_query_delta(
        per_query.filter(pl.col("query") < "q0050"), "map", "bm25", "neural"
    )
    assert "bins" not in json.dumps(small.to_dict()["encoding"]["x"])
    assert_renders(small)


def test_per_query_delta_chart_keeps_100k_queries_small() -> None:
    pytest.importorskip("altair")
    rng = np.random.default_rng(0)
    n = 100_000
    values = rng.choice([0.0, 0.25, 0.5, 1.0], size=2 * n)
    table = pl.DataFrame(
        {"system": ["a"] * n + ["b"] * n, "query": list(range(n)) * 2, "v": values}
    )
    data = rke.plot.per_query_delta_data(table, "v", "a", "b")
    a, b = values[:n], values[n:]
    assert outcome_counts(data) == {
        "win": int((b > a).sum()),
        "tie": int((b == a).sum()),
        "loss": int((b < a).sum()),
    }
    chart = rke.plot.per_query_delta(table, "v", "a", "b")
    assert len(inline_rows(chart)[0]) <= 503
    assert_renders(chart)


def test_systems_chart() -> None:
    pytest.importorskip("altair")
    comparison = comparison_literal()
    chart = rke.plot.systems(comparison)
    spec = chart.to_dict()
    # one panel per metric (changed: was one layered chart with colours per system)
    assert spec["facet"]["row"]["field"] == "panel"
    assert len(spec["spec"]["layer"]) == 3
    points = spec["spec"]["layer"][2]
    # filled when significant, hollow (white) otherwise
    assert points["encoding"]["fill"]["condition"]["test"] == "datum.significant"
    assert points["encoding"]["fill"]["value"] == "white"
    datasets = inline_rows(chart)
    assert rke.plot.systems_data(comparison).to_dicts() in datasets
    assert "paired t-test" in chart_text(chart)
    assert_renders(chart)


def test_systems_chart_from_compare(log: pl.DataFrame) -> None:
    pytest.importorskip("altair")
    pytest.importorskip("scipy")
    compare = getattr(rke, "compare", None)
    if compare is None:
        pytest.skip("rke.compare is not there yet")
    comparison = compare(log, ["ndcg@10", "map", "mrr"], by="system", baseline="bm25")
    chart = rke.plot.systems(comparison)
    assert "95% interval" in chart_text(chart)
    assert_renders(chart, min_height=150)
    # every pair (several baselines): one colour per comparison
    three = pl.concat([log, log.filter(system="neural").with_columns(system=pl.lit("hybrid"))])
    pairs = rke.plot.systems(compare(three, ["ndcg@10", "map"], by="system"))
    assert "Differences between systems" in chart_text(pairs)
    (rows,) = [rows for rows in inline_rows(pairs) if "label" in rows[0]]
    assert {row["label"] for row in rows} == {
        "hybrid vs bm25",
        "neural vs bm25",
        "neural vs hybrid",
    }
    assert_renders(pairs, min_height=200)


def test_distribution_chart(per_query: pl.DataFrame) -> None:
    pytest.importorskip("altair")
    chart = rke.plot.distribution(per_query, "ndcg@10")
    data = rke.plot.distribution_data(per_query, "ndcg@10")
    (rows,) = inline_rows(chart)
    assert_same_rows(rows, data)
    means = per_query.group_by("system").agg(pl.col("ndcg@10").mean()).sort("system")
    assert f"bm25 {means['ndcg@10'][0]:.4f}, neural {means['ndcg@10'][1]:.4f}" in chart_text(chart)
    assert_renders(chart)
    one = rke.plot.distribution(per_query.filter(system="bm25").drop("system"), "map", by=None)
    assert_renders(one)


def test_precision_recall_chart(log: pl.DataFrame) -> None:
    pytest.importorskip("altair")
    chart = rke.plot.precision_recall(log, by="system")
    data = rke.plot.precision_recall_data(log, by="system")
    (rows,) = inline_rows(chart)
    assert_same_rows(rows, data)
    assert_renders(chart)


# ---------------------------------------------------------------------------------------------
# Without Altair
# ---------------------------------------------------------------------------------------------


CHARTS = {
    "metric_at_k": lambda log, pq: rke.plot.metric_at_k(log, "p", [1, 5], by="system"),
    "per_query_delta": lambda log, pq: rke.plot.per_query_delta(pq, "map", "bm25", "neural"),
    "systems": lambda log, pq: rke.plot.systems(comparison_literal()),
    "distribution": lambda log, pq: rke.plot.distribution(pq, "map"),
    "precision_recall": lambda log, pq: rke.plot.precision_recall(log, by="system"),
}


@pytest.mark.parametrize("name", list(CHARTS))
def test_chart_without_altair_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, log: pl.DataFrame, per_query: pl.DataFrame, name: str
) -> None:
    # None in sys.modules makes `import altair` raise ImportError, as if it were not installed
    monkeypatch.setitem(sys.modules, "altair", None)
    with pytest.raises(ImportError, match=re.escape(EXTRA)) as raised:
        CHARTS[name](log, per_query)
    assert f"rke.plot.{name}()" in str(raised.value)
    assert f"rke.plot.{name}_data()" in str(raised.value)


def test_import_and_data_functions_need_no_altair() -> None:
    script = f"""
import sys
import polars_rankeval as rke
assert "altair" not in sys.modules, "import polars_rankeval imported altair"
sys.modules["altair"] = None  # from here on, altair cannot be imported
import polars as pl
log = pl.read_parquet({str(SAMPLE)!r}).filter(pl.col("query") < "q0100")
per_query = rke.evaluate(log, ["map"], by="system", per_query=True)
rke.plot.metric_at_k_data(log, "p", [1, 5], by="system")
rke.plot.per_query_delta_data(per_query, "map", "bm25", "neural")
rke.plot.distribution_data(per_query, "map")
rke.plot.precision_recall_data(log, by="system")
try:
    rke.plot.precision_recall(log, by="system")
except ImportError as error:
    print(error)
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    assert EXTRA in result.stdout


# ---------------------------------------------------------------------------------------------
# Direction, many systems, bad values, offline and safe HTML
# ---------------------------------------------------------------------------------------------


def test_per_query_delta_follows_the_direction(per_query: pl.DataFrame, log: pl.DataFrame) -> None:
    """Trial F3: for frp (lower is better) a win is a query where neural's frp is lower."""
    frp = rke.evaluate(log, ["frp"], by="system", per_query=True)
    data = rke.plot.per_query_delta_data(frp, "frp", "bm25", "neural")
    bm25 = dict(frp.filter(system="bm25").select("query", "frp").iter_rows())
    neural = dict(frp.filter(system="neural").select("query", "frp").iter_rows())
    pairs = [(bm25[q], v) for q, v in neural.items() if v is not None and bm25.get(q) is not None]
    assert outcome_counts(data) == {
        "win": sum(1 for b, n in pairs if n < b),
        "tie": sum(1 for b, n in pairs if n == b),
        "loss": sum(1 for b, n in pairs if n > b),
    }
    assert outcome_counts(data)["win"] > outcome_counts(data)["loss"]
    # wins first: the first bar is the most negative difference
    assert data["delta_min"][0] == min(n - b for b, n in pairs)
    # another tool's column, declared lower-is-better, counts the same way
    other = frp.rename({"frp": "latency"})
    declared = rke.plot.per_query_delta_data(
        other, "latency", "bm25", "neural", lower_is_better=["latency"]
    )
    assert outcome_counts(declared) == outcome_counts(data)
    assumed = rke.plot.per_query_delta_data(other, "latency", "bm25", "neural")
    assert outcome_counts(assumed)["win"] == outcome_counts(data)["loss"]
    counts = per_query.with_columns(num_ret=pl.lit(10))
    with pytest.raises(rke.InvalidOptionError, match="'num_ret' has no direction"):
        rke.plot.per_query_delta_data(counts, "num_ret", "bm25", "neural")


def test_per_query_delta_chart_says_lower_is_better(log: pl.DataFrame) -> None:
    pytest.importorskip("altair")
    frp = rke.evaluate(log, ["frp"], by="system", per_query=True)
    chart = rke.plot.per_query_delta(frp, "frp", "bm25", "neural")
    assert "lower is better for frp" in chart_text(chart)
    # the win colour is on the bars below zero
    (rows,) = inline_rows(chart)
    assert all(row["delta"] < 0 for row in rows if row["outcome"] == "win")


def test_systems_reads_direction_and_overall_values(log: pl.DataFrame) -> None:
    pytest.importorskip("scipy")
    comparison = rke.compare(log, ["frp", "map", "gm_map"], by="system", baseline="bm25")
    data = rke.plot.systems_data(comparison)
    means = rke.evaluate(log, ["frp", "map", "gm_map"], by="system")
    value = {(r["system"], m): r[m] for r in means.iter_rows(named=True) for m in means.columns[1:]}
    for row in data.iter_rows(named=True):
        metric = row["metric"]
        # the numbers under each metric's name are evaluate's values
        assert f"bm25 = {value[('bm25', metric)]:.4f}" in row["panel"]
        assert row["axis_label"] == f"neural = {value[('neural', metric)]:.4f}"
        assert row["verdict"] == "better"
    assert data.filter(metric="frp")["panel"].item().startswith("frp (lower is better")
    # gm_map is drawn on its test's log scale, inside its own interval
    gm = data.filter(metric="gm_map").row(0, named=True)
    ratio = math.log(value[("neural", "gm_map")] / value[("bm25", "gm_map")])
    assert gm["position"] == pytest.approx(ratio, rel=1e-6)
    assert gm["ci_low"] <= gm["position"] <= gm["ci_high"]


def test_systems_data_without_direction_columns_looks_the_metric_up() -> None:
    frame = comparison_literal().with_columns(metric=pl.lit("frp"))
    data = rke.plot.systems_data(frame)
    # frp: a negative delta (neural, splade... here colbert -0.02) is better when significant
    verdicts = dict(zip(data["delta"].to_list(), data["verdict"].to_list(), strict=True))
    assert verdicts[0.18] == "worse"
    assert verdicts[-0.04] == "better"
    assert verdicts[0.01] == "not significant"


def many_systems(count: int, n: int = 60) -> pl.DataFrame:
    rng = np.random.default_rng(7)
    names = [f"run{i:02d}" for i in range(count)]
    return pl.DataFrame(
        {
            "system": [s for s in names for _ in range(n)],
            "query": list(range(n)) * count,
            "map": rng.random(count * n),
        }
    )


def test_many_systems_are_labelled_and_told_apart() -> None:
    pytest.importorskip("altair")
    pytest.importorskip("scipy")
    table = many_systems(20)
    # systems(): every system is on the axis, by name
    chart = rke.plot.systems(rke.compare_per_query(table, by="system", baseline="run00"))
    spec = chart.to_dict()
    assert spec["spec"]["layer"][2]["encoding"]["y"]["field"] == "axis_label"
    assert_renders(chart)
    # distribution(): small multiples, one panel per system with its mean
    dist = rke.plot.distribution(table, "map")
    dist_spec = dist.to_dict()
    assert dist_spec["facet"]["field"] == "panel"
    (rows,) = inline_rows(dist)
    mean = float(table.filter(system="run07")["map"].mean())  # type: ignore[arg-type]
    assert {r["panel"] for r in rows if r["system"] == "run07"} == {
        f"run07: mean {mean:.4f} (60 queries)"
    }
    assert_renders(dist)
    # metric_at_k-style colours: 20 distinct colours, and shapes past 20
    log = pl.read_parquet(SAMPLE).filter(pl.col("query") < "q0020", system="bm25")
    runs = pl.concat([log.with_columns(system=pl.lit(f"s{i:02d}")) for i in range(25)])
    curves = rke.plot.metric_at_k(runs, "p", [1, 5], by="system").to_dict()
    colours = curves["encoding"]["color"]["scale"]["range"]
    shapes = curves["encoding"]["shape"]["scale"]["range"]
    assert len(set(zip(colours, shapes, strict=True))) == 25
    assert len(set(colours[:20])) == 20


@pytest.mark.parametrize(
    ("values", "pattern"),
    [
        ([0.5, float("inf")], r"'map' holds 1 infinite value\(s\) \(system\(s\) \['b'\]\)"),  # G05
        (
            [float("-inf"), None],
            r"'map' holds 1 infinite value\(s\) \(system\(s\) \['a'\]\)",
        ),  # G14
    ],
)
def test_distribution_refuses_infinite_values(values: list[float | None], pattern: str) -> None:
    table = pl.DataFrame({"system": ["a", "b"], "query": [1, 1], "map": values})
    with pytest.raises(rke.ColumnValueError, match=pattern):
        rke.plot.distribution_data(table, "map")


def test_distribution_skips_a_system_without_values() -> None:
    """Audit G06: a system whose values are all null shows a dash, not a TypeError."""
    pytest.importorskip("altair")
    table = pl.DataFrame({"system": ["a", "b"], "query": [1, 1], "map": [0.5, None]})
    chart = rke.plot.distribution(table, "map")
    assert "mean: a 0.5000, b –" in chart_text(chart)
    assert_renders(chart)


HOSTILE = "</script><img src=x onerror=alert(2)>"


class _Elements(__import__("html.parser").parser.HTMLParser):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self.tags.append(tag)


def hostile_charts() -> dict[str, Any]:
    table = pl.DataFrame(
        {"system": [HOSTILE] * 3 + ["b"] * 3, "query": [1, 2, 3] * 2, "map": [0.1, 0.2, 0.3] * 2}
    )
    table = table.with_columns(
        pl.col("map") + pl.when(pl.col("system") == "b").then(0.3).otherwise(0)
    )
    return {
        "systems": rke.plot.systems(rke.compare_per_query(table, by="system", baseline="b")),
        "distribution": rke.plot.distribution(table, "map"),
        "per_query_delta": rke.plot.per_query_delta(table, "map", "b", HOSTILE),
    }


@pytest.mark.parametrize("name", ["systems", "distribution", "per_query_delta"])
def test_names_cannot_break_out_of_the_chart_html(name: str, tmp_path: Path) -> None:
    pytest.importorskip("altair")
    pytest.importorskip("scipy")
    chart = hostile_charts()[name]
    path = tmp_path / "chart.html"
    chart.save(path)
    for page in (
        chart.to_html(),
        path.read_text(),
    ):
        parser = _Elements()
        parser.feed(page)
        assert "img" not in parser.tags
        assert parser.tags.count("script") <= 2  # the inlined Vega bundle and the chart
        assert "\\u003c/script>\\u003cimg" in page  # the name is there, as JSON text
    (rke_path,) = [rke.plot.save(chart, tmp_path / "again.html")]
    parser = _Elements()
    parser.feed(rke_path.read_text())
    assert "img" not in parser.tags


def test_saved_html_needs_no_network(tmp_path: Path, per_query: pl.DataFrame) -> None:
    pytest.importorskip("altair")
    pytest.importorskip("vl_convert")
    chart = rke.plot.distribution(per_query, "map")
    path = tmp_path / "d.html"
    chart.save(path)
    page = path.read_text()
    assert "cdn.jsdelivr.net" not in page
    assert not re.search(r"<script[^>]*\bsrc=", page)  # nothing loaded from anywhere
    with pytest.raises(rke.RankEvalError, match=r"d\.html.*exists"):
        rke.plot.save(chart, path)
    # composed charts saved through rke.plot.save are offline too
    both = chart | rke.plot.per_query_delta(per_query, "map", "bm25", "neural")
    assert "cdn.jsdelivr.net" not in rke.plot.save(both, tmp_path / "both.html").read_text()
    # a PNG is a PNG (inline= is only for HTML)
    png = rke.plot.save(chart, tmp_path / "d.png")
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_notebook_display_needs_no_network(per_query: pl.DataFrame) -> None:
    pytest.importorskip("altair")
    pytest.importorskip("vl_convert")
    chart = rke.plot.per_query_delta(per_query, "map", "bm25", "neural")
    bundle = chart._repr_mimebundle_()
    kinds = set(bundle if isinstance(bundle, dict) else bundle[0])
    assert any(kind.startswith("application/vnd.vegalite") for kind in kinds)
    assert "image/svg+xml" in kinds
    assert "text/html" not in kinds


def test_systems_chart_lists_systems_as_the_report_does() -> None:
    # D12: the chart listed systems in byte order (capitals first), the report case-folded.
    pytest.importorskip("altair")
    pytest.importorskip("scipy")
    names = ["uwmtCR0", "InexpC2", "apl", "Zeta", "base"]
    rng = np.random.default_rng(3)
    table = pl.DataFrame(
        {
            "system": [s for s in names for _ in range(20)],
            "query": list(range(20)) * len(names),
            "map": rng.random(20 * len(names)),
        }
    )
    comparison = rke.compare_per_query(table, by="system", baseline="base")
    expected = ["apl", "InexpC2", "uwmtCR0", "Zeta"]  # written out: case-folded order
    shown = rke.report(comparison).text.splitlines()[2:7]
    assert [line.split("|")[1].strip()[4:] for line in shown] == ["base", *expected]
    spec = rke.plot.systems(comparison).to_dict()
    order = spec["spec"]["layer"][2]["encoding"]["y"]["sort"]
    assert [label.split(" = ")[0] for label in order] == expected


def test_systems_chart_dashes_intervals_that_are_not_significant() -> None:
    # D12: an unadjusted interval clearing zero was drawn with a hollow (Holm) point and the
    # same solid line as a significant one.
    pytest.importorskip("altair")
    comparison = comparison_literal().with_columns(
        pl.lit("holm").alias("correction"), pl.lit(0.05).alias("alpha")
    )
    # map/splade: ci [-0.01, 0.03] does not clear zero; pretend one that does is not
    # significant after the correction
    comparison = comparison.with_columns(
        pl.when(pl.col("system") == "splade")
        .then(pl.lit(value=False))
        .otherwise(pl.col("significant"))
        .alias("significant")
    )
    chart = rke.plot.systems(comparison)
    bars = chart.to_dict()["spec"]["layer"][1]["encoding"]
    assert bars["strokeDash"]["condition"] == {"test": "datum.significant", "value": [1, 0]}
    assert bars["strokeDash"]["value"] == [4, 3]
    text = chart_text(chart)
    assert "not Holm-adjusted: a dashed one may clear zero" in text
    assert "hollow, dashed: not significant" in text
    # no correction: the interval and the decision agree, nothing to warn about
    plain = rke.plot.systems(comparison.with_columns(pl.lit("none").alias("correction")))
    assert "adjusted" not in chart_text(plain)


def test_plots_take_direction_and_do_not_contradict_the_comparison() -> None:
    table = pl.DataFrame(
        {"system": ["a"] * 3 + ["b"] * 3, "query": [1, 2, 3] * 2, "arp@10": [5.0, 6, 7, 9, 9, 9]}
    )
    higher = rke.plot.per_query_delta_data(
        table, "arp@10", "a", "b", direction={"arp@10": "higher"}
    )
    lower = rke.plot.per_query_delta_data(table, "arp@10", "a", "b", direction={"arp@10": "lower"})
    assert higher["outcome"].to_list() == ["win"] * 3
    assert lower["outcome"].to_list() == ["loss"] * 3
    comparison = rke.compare_per_query(table, by="system", direction={"arp@10": "lower"})
    assert rke.plot.systems_data(comparison)["verdict"].to_list() == ["worse"]
    # the chart reads the comparison's directions; a second opinion is refused
    with pytest.raises(rke.InvalidOptionError, match=r"pass direction= to rke.compare"):
        rke.plot.systems_data(comparison, direction={"arp@10": "higher"})


def test_systems_data_names_several_by_columns_joined_for_display() -> None:
    comparison = comparison_literal().rename({"system": "model"})
    comparison = (
        comparison.with_columns(
            pl.lit("d1").alias("date"), pl.col("baseline_system").alias("baseline_model")
        )
        .drop("baseline_system")
        .with_columns(pl.lit("d0").alias("baseline_date"))
    )
    data = rke.plot.systems_data(comparison)
    # the key columns pass through; the label joins them for display
    assert data.columns[:5] == ["metric", "model", "date", "baseline_model", "baseline_date"]
    assert data["label"].to_list()[:3] == ["neural / d1", "splade / d1", "colbert / d1"]


def test_plot_old_keywords_warn_and_still_work(log: pl.DataFrame, per_query: pl.DataFrame) -> None:
    calls = [
        (
            lambda: rke.plot.metric_at_k_data(log=log, metric="p", k=[1, 2], by="system"),
            lambda: rke.plot.metric_at_k_data(data=log, metric="p", k=[1, 2], by="system"),
            "log= is renamed data=",
        ),
        (
            lambda: rke.plot.metric_at_k_data(log, "p", ks=[1, 2], by="system"),
            lambda: rke.plot.metric_at_k_data(log, "p", k=[1, 2], by="system"),
            "ks= is renamed k=",
        ),
        (
            lambda: rke.plot.precision_recall_data(log=log, by="system"),
            lambda: rke.plot.precision_recall_data(data=log, by="system"),
            "log= is renamed data=",
        ),
        (
            lambda: rke.plot.distribution_data(per_query=per_query, metric="map"),
            lambda: rke.plot.distribution_data(data=per_query, metric="map"),
            "per_query= is renamed data=",
        ),
        (
            lambda: rke.plot.per_query_delta_data(
                per_query=per_query, metric="map", baseline="bm25", system="neural"
            ),
            lambda: rke.plot.per_query_delta_data(
                data=per_query, metric="map", baseline="bm25", system="neural"
            ),
            "per_query= is renamed data=",
        ),
        (
            lambda: rke.plot.systems_data(comparison=comparison_literal()),
            lambda: rke.plot.systems_data(data=comparison_literal()),
            "comparison= is renamed data=",
        ),
    ]
    for old, new, message in calls:
        with pytest.warns(rke.RankEvalDeprecationWarning, match=message):
            got = old()
        assert got.equals(new())
