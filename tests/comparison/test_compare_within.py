"""``compare(..., within=...)``: systems compared inside each segment.

Each segment's rows must be those of comparing the segment alone (the specification), and their
p-values those of scipy's paired tests on the segment's values; the adjusted p-values must be
statsmodels' ``multipletests`` over the pooled raw p-values of every segment (or per metric
with ``correction_scope="metric"``). Comparisons that cannot be made are warnings naming the
segment, never rows of NaN.
"""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from polars_rankeval.errors import (
    ColumnNotFoundError,
    EmptyEvaluationWarning,
    InvalidOptionError,
)

stats = pytest.importorskip("scipy.stats")
multitest = pytest.importorskip("statsmodels.stats.multitest")

SEGMENTS = ["heavy", "light", "new"]
SYSTEMS = ["a", "b", "c"]
METRICS = ["map", "ndcg@10"]
# What differs between a segment alone and the same segment in a call over every segment.
FAMILY_COLUMNS = ["p_adjusted", "significant"]


@pytest.fixture(scope="module")
def per_query() -> pl.DataFrame:
    """3 segments x 3 systems x 12-20 queries (a query belongs to one segment), 2 metrics.

    System "b" is better than "a" in "heavy" only; a few values are missing (null) so that
    pairs drop queries.
    """
    rng = np.random.default_rng(7)
    rows = []
    for s, segment in enumerate(SEGMENTS):
        for q in range(12 + 4 * s):
            query = f"{segment}-{q}"
            base = rng.uniform(0.1, 0.7)
            for system in SYSTEMS:
                shift = 0.15 if (system == "b" and segment == "heavy") else 0.0
                values = [base + shift + rng.normal(0, 0.1) for _ in METRICS]
                rows.append((segment, system, query, *values))
    frame = pl.DataFrame(
        rows, schema=["activity", "system", "query", *METRICS], orient="row"
    ).with_columns(pl.col(METRICS).clip(0.0, 1.0))
    # Missing values: query light-0 of system c has no map, query new-3 of a has no ndcg@10.
    return frame.with_columns(
        pl.when((pl.col("system") == "c") & (pl.col("query") == "light-0"))
        .then(None)
        .otherwise(pl.col("map"))
        .alias("map"),
        pl.when((pl.col("system") == "a") & (pl.col("query") == "new-3"))
        .then(None)
        .otherwise(pl.col("ndcg@10"))
        .alias("ndcg@10"),
    )


def _alone(per_query: pl.DataFrame, **options: object) -> pl.DataFrame:
    """Every segment compared on its own, stacked, the segment column right after metric."""
    parts = []
    for segment in SEGMENTS:
        rows = per_query.filter(pl.col("activity") == segment).drop("activity")
        out = rke.compare_per_query(rows, by="system", **options)  # type: ignore[arg-type]
        parts.append(out.select("metric", pl.lit(segment).alias("activity"), pl.exclude("metric")))
    return pl.concat(parts)


@pytest.mark.parametrize(
    ("test", "baseline", "correction", "scope"),
    [
        ("t", "a", "holm", "all"),
        ("t", None, "holm", "metric"),
        ("wilcoxon", "a", "bonferroni", "all"),
        ("randomization", "a", "fdr_bh", "metric"),
        ("bootstrap", None, "holm", "all"),
    ],
)
def test_each_segment_as_if_alone_and_the_correction_pooled(
    per_query, test, baseline, correction, scope
):
    options = {"test": test, "baseline": baseline, "n_resamples": 2000}
    got = rke.compare_per_query(
        per_query,
        by="system",
        within="activity",
        correction=correction,
        correction_scope=scope,
        **options,
    )
    alone = _alone(per_query, correction=correction, **options)
    n_pairs = 2 if baseline else 3
    assert got.height == len(SEGMENTS) * n_pairs * len(METRICS)
    assert got.columns[:2] == ["metric", "activity"]
    assert_frame_equal(got.drop(FAMILY_COLUMNS), alone.drop(FAMILY_COLUMNS))
    # The correction over the pooled raw p-values of every segment (statsmodels), per metric
    # with correction_scope="metric".
    raw = got["p_value"].to_numpy()
    expected = np.empty_like(raw)
    groups = got["metric"].to_numpy() if scope == "metric" else np.zeros(raw.size)
    for group in np.unique(groups):
        mask = groups == group
        expected[mask] = multitest.multipletests(raw[mask], method=correction)[1]
    np.testing.assert_allclose(got["p_adjusted"].to_numpy(), expected, rtol=1e-12)
    assert (got["significant"].to_numpy() == (expected < 0.05)).all()
    # A bigger family than any segment alone: the adjusted p-values are not the segment's own.
    assert (got["p_adjusted"] > alone["p_adjusted"]).any()


def test_p_values_are_scipys_on_each_segment(per_query):
    got = rke.compare_per_query(per_query, by="system", within="activity", baseline="a")
    for row in got.iter_rows(named=True):
        segment = per_query.filter(pl.col("activity") == row["activity"])
        wide = segment.pivot(on="system", index="query", values=row["metric"])
        wide = wide.select("a", row["system"]).drop_nulls()
        x, y = wide["a"].to_numpy(), wide[row["system"]].to_numpy()
        assert row["n_queries"] == len(x)
        assert row["p_value"] == pytest.approx(stats.ttest_rel(y, x).pvalue, rel=1e-9)
        assert row["delta"] == pytest.approx(y.mean() - x.mean(), rel=1e-9)
    heavy_b = got.filter(
        (pl.col("activity") == "heavy") & (pl.col("system") == "b") & (pl.col("metric") == "map")
    )
    assert heavy_b["significant"].item()


def test_tukey_is_not_corrected_and_is_the_segments_own(per_query):
    got = rke.compare_per_query(
        per_query, by="system", within="activity", test="tukey_hsd", baseline="a"
    )
    alone = _alone(per_query, test="tukey_hsd", baseline="a")
    assert_frame_equal(got, alone)
    assert (got["correction"] == "none").all()
    assert_frame_equal(got.select("p_adjusted"), got.select(pl.col("p_value").alias("p_adjusted")))


def test_compare_on_a_log_and_the_namespaces():
    log = pl.read_parquet("data/sample.parquet").with_columns(
        activity=pl.when(pl.col("query") < "q1000").then(pl.lit("heavy")).otherwise(pl.lit("light"))
    )
    got = rke.compare(log, ["ndcg@10", "map"], by="system", within="activity", baseline="bm25")
    assert got["activity"].to_list() == ["heavy", "heavy", "light", "light"]
    heavy = rke.compare(
        log.filter(pl.col("activity") == "heavy"), ["ndcg@10", "map"], by="system", baseline="bm25"
    )
    assert_frame_equal(
        got.filter(pl.col("activity") == "heavy").drop(["activity", *FAMILY_COLUMNS]),
        heavy.drop(FAMILY_COLUMNS),
    )
    assert got.filter(pl.col("activity") == "heavy")["n_queries"].to_list() == [1000, 1000]
    for frame in (log, log.lazy()):
        through = frame.rank_eval.compare(
            ["ndcg@10", "map"], by="system", within="activity", baseline="bm25"
        )
        # the lazy namespace is lazy in, lazy out
        assert_frame_equal(through.lazy().collect(), got)


def test_several_segment_columns_nulls_and_their_types():
    per_query = pl.DataFrame(
        {
            "region": ["eu"] * 8 + [None] * 8 + ["us"] * 8,
            "tier": [1, 1, 1, 1, 2, 2, 2, 2] * 3,
            "system": (["a"] * 2 + ["b"] * 2) * 6,
            "query": [f"q{i // 4}-{i % 2}" for i in range(24)],
            "map": [0.2, 0.4, 0.3, 0.6] * 6,
        }
    )
    got = rke.compare_per_query(per_query, by="system", within=["region", "tier"], metrics=["map"])
    assert got.columns[:3] == ["metric", "region", "tier"]
    assert got.schema["tier"] == pl.Int64
    # sorted segments, the null one last
    assert got.select("region", "tier").rows() == [
        ("eu", 1),
        ("eu", 2),
        ("us", 1),
        ("us", 2),
        (None, 1),
        (None, 2),
    ]
    assert got["delta"].to_list() == pytest.approx([0.15] * 6)


def _warned(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    messages = [str(w.message) for w in caught if issubclass(w.category, EmptyEvaluationWarning)]
    return result, messages


def test_a_segment_without_the_baseline_or_with_one_system_is_left_out(per_query):
    # "new" loses system a (the baseline); "light" keeps only system b.
    cut = per_query.filter(
        ~((pl.col("activity") == "new") & (pl.col("system") == "a"))
        & ~((pl.col("activity") == "light") & (pl.col("system") != "b"))
    )
    got, messages = _warned(
        lambda: rke.compare_per_query(cut, by="system", within="activity", baseline="a")
    )
    assert got["activity"].unique().to_list() == ["heavy"]
    assert not got.select(pl.col(pl.Float64).is_nan().any()).row(0).count(True)
    assert len(messages) == 2
    assert "activity='light'" in messages[0]
    assert "one system ('b')" in messages[0]
    assert "activity='new'" in messages[1]
    assert "baseline 'a'" in messages[1]
    # Every segment left out: an error, not an empty frame.
    only = cut.filter((pl.col("activity") != "heavy") | (pl.col("system") == "a"))
    with pytest.raises(InvalidOptionError, match="no segment of within=\\['activity'\\]"):
        _warned(lambda: rke.compare_per_query(only, by="system", within="activity", baseline="a"))


def test_a_pair_with_no_shared_query_in_a_segment_is_left_out(per_query):
    # In "new", system c has no map value for any query: c's map pairs there cannot be made.
    cut = per_query.with_columns(
        pl.when((pl.col("activity") == "new") & (pl.col("system") == "c"))
        .then(None)
        .otherwise(pl.col("map"))
        .alias("map")
    )
    got, messages = _warned(lambda: rke.compare_per_query(cut, by="system", within="activity"))
    assert got.height == len(SEGMENTS) * 3 * len(METRICS) - 2
    new_c_map = got.filter(
        (pl.col("activity") == "new")
        & (pl.col("metric") == "map")
        & ((pl.col("system") == "c") | (pl.col("baseline_system") == "c"))
    )
    assert new_c_map.height == 0
    assert not got["p_value"].is_nan().any()
    assert messages == [
        "compare: in segment activity='new', 'a' vs 'c' (map); 'b' vs 'c' (map) share no query "
        "with a value for both systems; those rows are left out"
    ]


def test_systems_times_segments_in_by_warns_and_suggests_within(per_query):
    got, messages = _warned(
        lambda: rke.compare_per_query(per_query, by=["system", "activity"], metrics=["map"])
    )
    # 9 systems, 36 pairs, of which 3 x 3 share their segment's queries
    assert got.height == 36
    assert int(got["p_value"].is_nan().sum()) == 27
    assert len(messages) == 1
    assert "27 of 36 system pair(s) share no query" in messages[0]
    assert "pass by='system', within='activity'" in messages[0]
    assert "--by system --within activity" in messages[0]
    # Pairs sharing queries say nothing.
    _, quiet = _warned(lambda: rke.compare_per_query(per_query, by="system", metrics=["map"]))
    assert quiet == []


@pytest.mark.parametrize(
    ("within", "error", "fragment"),
    [
        ("segment", ColumnNotFoundError, "column 'segment' (option within=)"),
        ("system", InvalidOptionError, "names 'system', a column of by="),
        ("query", InvalidOptionError, "names 'query', a column of query="),
        ([], InvalidOptionError, "must be a column name or a list"),
        ([1], InvalidOptionError, "must name columns (strings), got 1"),
        (["activity", "activity"], InvalidOptionError, "names a column twice"),
    ],
)
def test_bad_within_is_refused(per_query, within, error, fragment):
    with pytest.raises(error) as raised:
        rke.compare_per_query(per_query, by="system", within=within)
    assert fragment in str(raised.value)


def test_a_segment_column_named_like_an_output_column_is_refused(per_query):
    renamed = per_query.rename({"activity": "metric"}).drop("ndcg@10")
    with pytest.raises(InvalidOptionError, match="a column of compare's output"):
        rke.compare_per_query(renamed, by="system", within="metric")


def test_an_unknown_baseline_is_refused_before_any_segment(per_query):
    with pytest.raises(InvalidOptionError, match="baseline"):
        rke.compare_per_query(per_query, by="system", within="activity", baseline="zz")


def test_compare_checks_within_before_evaluating():
    log = pl.read_parquet("data/sample.parquet")
    with pytest.raises(ColumnNotFoundError, match="option within=\\) is not in the log"):
        rke.compare(log, ["map"], by="system", within="activity")
