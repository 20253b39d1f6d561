"""``spearman`` and ``kendall_tau`` against SciPy, on every path, with ties and NaN values.

Per query, over the retrieved rows (non-null score) with null and negative labels read as 0,
the values must equal ``scipy.stats.spearmanr`` and ``scipy.stats.kendalltau`` (tau-b) within
1e-12, NaN where SciPy gives NaN. The frame path, the ``group_by().agg()`` expression path and
a LazyFrame collected on the streaming engine must agree, and the mean over queries leaves
the NaN values out.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import polars_rankeval as rke

stats = pytest.importorskip("scipy.stats")

METRICS = ["spearman", "kendall_tau"]
SCORES = [None, None, -1.5, -0.0, 0.0, 0.5, 0.5, 1.0, 2.0, 2.0, 3.0]
# heavy ties, unjudged (null) and pooled-unjudged (negative) labels, and a few labels that
# use the high bits of the Int64 label
LABELS = [None, -3, -1, 0, 0, 1, 1, 2, 3, 4, 7, 2**31, 2**40 + 1, 2**62 - 1, 2**62 + 5]


def scipy_values(scores: list[float], labels: list[int | None]) -> dict[str, float]:
    """SciPy's rho and tau-b on the retrieved rows, labels null/negative read as 0."""
    x = np.array([s for s in scores if s is not None], dtype=np.float64)
    clipped = [max(lab or 0, 0) for s, lab in zip(scores, labels, strict=True) if s is not None]
    # SciPy works in float64, which merges labels above 2**53: pass their dense ranks (both
    # statistics depend on the order only)
    dense = {label: rank for rank, label in enumerate(sorted(set(clipped)))}
    y = np.array([dense[label] for label in clipped], dtype=np.int64)
    if len(x) < 2:  # SciPy gives NaN too (with a warning), or raises on empty input
        return dict.fromkeys(METRICS, math.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant input: SciPy warns and returns NaN
        rho = float(stats.spearmanr(x, y).statistic)
        tau = float(stats.kendalltau(x, y, variant="b").statistic)
    return {"spearman": rho, "kendall_tau": tau}


def assert_close(actual: float | None, expected: float, context: object) -> None:
    assert actual is not None, context
    if math.isnan(expected):
        assert math.isnan(actual), (actual, expected, context)
    else:
        assert abs(actual - expected) <= 1e-12, (actual, expected, context)


@st.composite
def logs(draw: st.DrawFn) -> pl.DataFrame:
    """Several queries of 0-15 rows, string or int ids, float or int scores."""
    int_ids = draw(st.booleans())
    int_scores = draw(st.booleans())
    rows: dict[str, list[Any]] = {"query": [], "item": [], "score": [], "relevance": []}
    for q in range(draw(st.integers(1, 6))):
        n = draw(st.integers(0, 15))
        scores = draw(st.lists(st.sampled_from(SCORES), min_size=n, max_size=n))
        if int_scores:
            scores = [None if s is None else int(s * 2) for s in scores]
        labels = draw(st.lists(st.sampled_from(LABELS), min_size=n, max_size=n))
        for i in range(n):
            rows["query"].append(q if int_ids else f"q{q}")
            rows["item"].append(i if int_ids else f"d{i}")
        rows["score"] += scores
        rows["relevance"] += labels
    score_type = pl.Int64 if int_scores else pl.Float64
    return pl.DataFrame(
        rows,
        schema={
            "query": pl.Int64 if int_ids else pl.String,
            "item": pl.Int64 if int_ids else pl.String,
            "score": score_type,
            "relevance": pl.Int64,
        },
    )


def expected_per_query(log: pl.DataFrame) -> dict[Any, dict[str, float]]:
    """SciPy's values for the queries the frame path evaluates (a label and a retrieved row)."""
    expected = {}
    for (query,), rows in log.group_by("query"):
        scores, labels = rows["score"].to_list(), rows["relevance"].to_list()
        has_label = any(lab is not None for lab in labels)
        if has_label and any(s is not None for s in scores):
            expected[query] = scipy_values(scores, labels)
    return expected


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=logs())
def test_matches_scipy_on_every_path(log: pl.DataFrame) -> None:
    expected = expected_per_query(log)
    frame = rke.evaluate(log, METRICS, per_query=True)
    assert sorted(frame["query"].to_list()) == sorted(expected)
    for row in frame.iter_rows(named=True):
        for metric in METRICS:
            assert_close(row[metric], expected[row["query"]][metric], (metric, row))

    # the expression path: the same values, null for groups the frame path skips
    grouped = log.group_by("query").agg(rke.metric_expr(metric) for metric in METRICS)
    for row in grouped.iter_rows(named=True):
        for metric in METRICS:
            if row["query"] in expected:
                assert_close(row[metric], expected[row["query"]][metric], (metric, row))
            else:
                assert row[metric] is None

    # a LazyFrame on the streaming engine, and expected ties (which do not change them)
    lazy = rke.evaluate(log.lazy(), METRICS, per_query=True)
    assert isinstance(lazy, pl.LazyFrame)
    assert_frame_equal(lazy.collect(engine="streaming"), frame, rel_tol=1e-12, abs_tol=1e-12)
    expected_ties = rke.evaluate(log, METRICS, per_query=True, ties="expected")
    assert_frame_equal(expected_ties, frame, rel_tol=1e-12, abs_tol=1e-12)


@settings(max_examples=15, deadline=None)
@given(log=logs())
def test_summary_is_nanmean(log: pl.DataFrame) -> None:
    per_query = rke.evaluate(log, METRICS, per_query=True)
    summary = rke.evaluate(log, METRICS)
    for metric in METRICS:
        values = [v for v in per_query[metric].to_list() if not math.isnan(v)]
        mean = summary[metric].item()
        if values:
            assert abs(mean - sum(values) / len(values)) <= 1e-12
        else:
            assert mean is None


def test_hand_example_nan_left_out_of_the_mean() -> None:
    log = pl.DataFrame(
        {
            "query": ["q1"] * 4 + ["q2"] * 3 + ["q3"] * 2 + ["q4"] * 2,
            "item": ["a", "b", "c", "d", "a", "b", "c", "a", "b", "a", "b"],
            # q1 is perfectly ordered; q2 reversed; q3 has one retrieved row; q4 equal scores
            "score": [4.0, 3.0, 2.0, 1.0, 1.0, 2.0, 3.0, 1.0, None, 0.5, 0.5],
            "relevance": [3, 2, 1, 0, 2, 1, None, 1, 2, 1, 0],
        }
    )
    per_query = rke.evaluate(log, METRICS, per_query=True)
    assert per_query["query"].to_list() == ["q1", "q2", "q3", "q4"]
    assert per_query["spearman"].to_list()[:2] == [1.0, -1.0]
    assert per_query["kendall_tau"].to_list()[:2] == [1.0, -1.0]
    for metric in METRICS:
        assert all(math.isnan(v) for v in per_query[metric].to_list()[2:])
    # the mean over q1 and q2 only: q3 (one row) and q4 (constant score) are NaN
    assert rke.evaluate(log, METRICS).row(0) == (0.0, 0.0)


def test_ties_are_part_of_the_definition() -> None:
    # x = (0.9, 0.5, 0.5, 0.1), y = (2, 1, 0, 0): x ties {b, c}, y ties {c, d}
    log = pl.DataFrame(
        {
            "query": ["q"] * 4,
            "item": ["a", "b", "c", "d"],
            "score": [0.9, 0.5, 0.5, 0.1],
            "relevance": [2, 1, None, -1],
        }
    )
    values = rke.evaluate(log, METRICS, per_query=True).row(0, named=True)
    # 4 concordant pairs, none discordant, 6 pairs of which 1 tied in x and 1 in y: 4 / 5
    assert abs(values["kendall_tau"] - 0.8) <= 1e-15
    assert abs(values["spearman"] - 0.8333333333333334) <= 1e-15
    same = rke.evaluate(log, METRICS, per_query=True, ties="expected")
    assert same.row(0, named=True) == values


def test_signed_zeros_and_nan_scores() -> None:
    log = pl.DataFrame(
        {
            "query": ["z"] * 3 + ["n"] * 3,
            "item": ["a", "b", "c"] * 2,
            "score": [-0.0, 0.0, 1.0, 1.0, float("nan"), 2.0],
            "relevance": [1, 0, 2, 0, 1, 2],
        }
    )
    # a NaN score is refused by default ...
    with pytest.raises(rke.ColumnValueError, match="NaN"):
        rke.evaluate(log, METRICS, per_query=True)
    # ... and with nan_scores="last" it is ranked, but still makes a correlation NaN
    per_query = rke.evaluate(log, METRICS, per_query=True, nan_scores="last").sort("query")
    z = per_query.filter(pl.col("query") == "z").row(0, named=True)
    expected = scipy_values([-0.0, 0.0, 1.0], [1, 0, 2])  # the two zeros are tied
    for metric in METRICS:
        assert_close(z[metric], expected[metric], metric)
    # a NaN score makes the query's value NaN, as SciPy's default nan_policy="propagate"
    n = per_query.filter(pl.col("query") == "n").row(0, named=True)
    assert all(math.isnan(n[metric]) for metric in METRICS)


def test_long_list_many_distinct_labels() -> None:
    rng = np.random.default_rng(7)
    n = 600
    scores = rng.integers(0, 40, n).astype(np.float64)
    labels = rng.integers(-5, 3000, n)
    log = pl.DataFrame(
        {"query": ["q"] * n, "item": np.arange(n), "score": scores, "relevance": labels}
    )
    expected = scipy_values(scores.tolist(), labels.tolist())
    row = rke.evaluate(log, METRICS, per_query=True).row(0, named=True)
    for metric in METRICS:
        assert_close(row[metric], expected[metric], metric)


def test_by_groups_and_columns_named_otherwise() -> None:
    log = pl.DataFrame(
        {
            "run": ["A"] * 4 + ["B"] * 4,
            "qid": ["q"] * 8,
            "doc": ["a", "b", "c", "d"] * 2,
            "s": [4.0, 3.0, 2.0, 1.0, 1.0, 2.0, 3.0, 4.0],
            "rel": [3, 2, 1, 0] * 2,
        }
    )
    result = rke.evaluate(
        log, METRICS, by="run", query="qid", item="doc", score="s", relevance="rel"
    )
    assert result.rows() == [("A", 1.0, 1.0), ("B", -1.0, -1.0)]


@pytest.mark.parametrize(
    ("dtype", "top"),
    [
        (pl.Int8, 127),
        (pl.UInt8, 255),
        (pl.Int16, 2**15 - 1),
        (pl.UInt16, 2**16 - 1),
        (pl.Int32, 2**31 - 1),
        (pl.UInt32, 2**32 - 1),
        (pl.Boolean, 1),
        (pl.Float32, 2**20),
    ],
)
def test_narrow_label_dtypes_use_their_top_bit(dtype: pl.DataType, top: int) -> None:
    # kendall_tau sorts once per bit a label of the column's dtype can have: the largest
    # value of each dtype (its top bit set) must still count exactly
    rng = np.random.default_rng(11)
    n = 300
    scores = rng.integers(0, 30, n).astype(np.float64)
    pool = np.array([0, 0, 1, top // 2, top - 1, top]) if top > 1 else np.array([0, 1])
    labels = rng.choice(pool, n)
    log = pl.DataFrame(
        {"query": ["q"] * n, "item": np.arange(n), "score": scores, "relevance": labels}
    ).with_columns(pl.col("relevance").cast(dtype))
    expected = scipy_values(scores.tolist(), labels.tolist())
    row = rke.evaluate(log, METRICS, per_query=True).row(0, named=True)
    for metric in METRICS:
        assert_close(row[metric], expected[metric], (dtype, metric))


def test_values_do_not_depend_on_the_other_metrics_of_the_call() -> None:
    # kendall_tau's sparse windows run over the rows other metrics' sparse ranks also need
    # (ndcg: positive gains, bpref: judged rows): only its own rows may count
    rng = np.random.default_rng(5)
    n = 400
    log = pl.DataFrame(
        {
            "query": rng.integers(0, 8, n).astype(str),
            "item": np.arange(n),
            "score": rng.integers(0, 20, n).astype(np.float64),
            "relevance": rng.choice([None, -1, 0, 0, 1, 2, 3], n).tolist(),
        }
    )
    alone = rke.evaluate(log, METRICS, per_query=True)
    together = rke.evaluate(log, ["ndcg", "bpref", *METRICS, "map"], per_query=True)
    assert_frame_equal(alone, together.select(alone.columns))
    for row in alone.iter_rows(named=True):
        part = log.filter(pl.col("query") == row["query"])
        expected = scipy_values(part["score"].to_list(), part["relevance"].to_list())
        for metric in METRICS:
            assert_close(row[metric], expected[metric], (row["query"], metric))
