"""rke.bootstrap: intervals over resampled queries, for per-query and per-system metrics."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import polars_rankeval as rke
from tests.engine.test_tables import LOG, distinct_items


@pytest.fixture(scope="module")
def sample() -> pl.DataFrame:
    return pl.read_parquet("data/sample.parquet")


def test_value_is_evaluates_and_the_interval_matches_the_normal_theory(
    sample: pl.DataFrame,
) -> None:
    out = rke.bootstrap(sample, ["ndcg@10"], by="system", n_resamples=2000, seed=3)
    per_query = rke.evaluate(sample, ["ndcg@10"], by="system", per_query=True)
    for row in out.iter_rows(named=True):
        values = per_query.filter(pl.col("system") == row["system"])["ndcg@10"].to_numpy()
        assert row["value"] == pytest.approx(values.mean(), rel=1e-12)
        assert row["n_queries"] == len(values)
        # the bootstrap of a mean of 3,000 values: mean ± 1.96 sd / sqrt(n), to a few %
        half = 1.959964 * values.std(ddof=1) / np.sqrt(len(values))
        assert row["ci_low"] == pytest.approx(values.mean() - half, abs=0.1 * half)
        assert row["ci_high"] == pytest.approx(values.mean() + half, abs=0.1 * half)


def test_paired_delta_against_a_baseline(sample: pl.DataFrame) -> None:
    out = rke.bootstrap(sample, ["ndcg@10"], by="system", baseline="bm25", n_resamples=500)
    assert out["system"].to_list() == ["neural"]
    row = out.row(0, named=True)
    assert row["delta"] == pytest.approx(row["value"] - row["baseline_value"], rel=1e-12)
    assert row["ci_low"] < row["delta"] < row["ci_high"]
    assert row["value_ci_low"] < row["value"] < row["value_ci_high"]
    assert row["baseline_system"] == "bm25"
    # no draw lies 0.18 away from the observed gap: p at its floor 1 / (n + 1)
    assert row["p_value"] == pytest.approx(1 / 501)


def test_per_system_metric_gets_an_interval_from_whole_recomputations() -> None:
    # 40 users; system a recommends item u % 10 to user u, system b item u % 2:
    # a covers 10 items, b 2 items of a catalog of 10.
    users = np.arange(40)
    log = pl.DataFrame(
        {
            "system": ["a"] * 40 + ["b"] * 40,
            "query": np.concatenate([users, users]),
            "item": [f"i{u % 10}" for u in users] + [f"i{u % 2}" for u in users],
            "score": 1.0,
        }
    )
    out = rke.bootstrap(log, [distinct_items(1)], by="system", baseline="a", catalog=10)
    row = out.row(0, named=True)
    assert (row["baseline_value"], row["value"]) == (1.0, 0.2)
    # Brute force: b stays at 0.2 (both its items are hit by 20 users each); a draw misses
    # each of a's items with probability 0.9^40, so a's coverage is 1.0 in about 86% of draws
    # and 0.9 in most of the rest: the delta's interval is [-0.8, -0.7].
    rng = np.random.default_rng(1)
    drawn = rng.integers(0, 40, size=(20_000, 40))
    coverage_a = np.array([len(set(row % 10)) for row in drawn]) / 10
    coverage_b = np.array([len(set(row % 2)) for row in drawn]) / 10
    delta = coverage_b - coverage_a
    # the basic interval: the observed delta (-0.8) minus the draws' deviations from it
    assert row["ci_low"] == pytest.approx(2 * -0.8 - np.quantile(delta, 0.975))
    assert row["ci_high"] == pytest.approx(2 * -0.8 - np.quantile(delta, 0.025))
    assert row["value_ci_low"] == row["value_ci_high"] == 0.2
    # coverage of resampled users is biased down, which the basic interval corrects: the
    # interval holds the observed difference
    assert row["ci_low"] <= row["delta"] <= row["ci_high"]


def test_options_are_checked() -> None:
    with pytest.raises(rke.InvalidOptionError, match="n_resamples"):
        rke.bootstrap(LOG, ["p@2"], by="system", n_resamples=5)
    with pytest.raises(rke.InvalidOptionError, match="alpha"):
        rke.bootstrap(LOG, ["p@2"], by="system", alpha=1.5)
    with pytest.raises(rke.InvalidOptionError, match="baseline"):
        rke.bootstrap(LOG, ["p@2"], by="system", baseline="zzz")


def test_a_biased_interval_is_left_null_and_the_randomization_test_decides() -> None:
    # Coverage of 400 users' random top-20 lists: a draw of the users with repeats covers
    # fewer items, so the resampled coverage misses the observed one; the interval is left
    # null with a warning, and the paired randomization test (no resampling) gives p.
    recs = pl.read_parquet("data/recsys/recs.parquet")
    with pytest.warns(rke.BootstrapBiasWarning, match="coverage@10"):
        out = rke.bootstrap(
            recs,
            ["coverage@10"],
            by="system",
            baseline="popular",
            query="user",
            item="recommended",
            catalog=1_000,
            n_resamples=100,
        )
    row = out.filter(pl.col("system") == "random").row(0, named=True)
    assert row["delta"] == pytest.approx(0.983 - 0.027, abs=1e-3)
    assert row["ci_low"] is None
    assert row["ci_high"] is None
    assert row["p_value"] == pytest.approx(1 / 101)  # no swap of lists gets near 0.956


def test_the_columns_are_the_shared_schema_without_and_with_a_baseline(
    sample: pl.DataFrame,
) -> None:
    alone = rke.bootstrap(sample, ["ndcg@10"], by="system", n_resamples=20)
    assert alone.columns == [
        "metric",
        "system",
        "value",
        "ci_low",
        "ci_high",
        "n_queries",
        "higher_is_better",
    ]
    paired = rke.bootstrap(sample, ["ndcg@10"], by="system", baseline="bm25", n_resamples=20)
    assert paired.columns == [
        "metric",
        "system",
        "baseline_system",
        "value",
        "baseline_value",
        "delta",
        "ci_low",
        "ci_high",
        "n_queries",
        "p_value",
        "value_ci_low",
        "value_ci_high",
        "higher_is_better",
    ]


def test_two_by_columns_stay_two_columns() -> None:
    # two keys (model, size): each stays a column of its own, the baseline's as baseline_<key>
    log = LOG.with_columns(pl.col("system").alias("model"), pl.lit(1).alias("size")).drop("system")
    out = rke.bootstrap(log, ["p@2"], by=["model", "size"], baseline=("a", "1"), n_resamples=20)
    assert out.columns[:5] == ["metric", "model", "size", "baseline_model", "baseline_size"]
    assert out["size"].dtype == pl.Int32
    assert out.select("model", "size", "baseline_model", "baseline_size").rows() == [
        ("b", 1, "a", 1)
    ]


def test_the_old_log_keyword_warns_and_still_works(sample: pl.DataFrame) -> None:
    new = rke.bootstrap(sample, ["ndcg@10"], by="system", n_resamples=20)
    with pytest.warns(rke.RankEvalDeprecationWarning, match="log= is renamed data="):
        old = rke.bootstrap(log=sample, metrics=["ndcg@10"], by="system", n_resamples=20)
    assert old.equals(new)


@pytest.mark.parametrize("baseline", ["bm25", None])
def test_compare_bootstrap_similarity_queries_needed_stack_and_join(
    sample: pl.DataFrame, baseline: str | None
) -> None:
    # one schema (design review 2.3): the results stack and join on (metric, <by>,
    # baseline_<by>) without a rename; without a baseline every tool pairs systems alike
    keys = ["metric", "system", "baseline_system"]
    shared = [*keys, "n_queries"]
    compared = rke.compare(sample, ["ndcg@10"], by="system", baseline=baseline, test="t")
    similar = rke.similarity(sample, "jaccard@10", by="system", baseline=baseline)
    per_query = rke.evaluate(sample, ["ndcg@10"], by="system", per_query=True)
    needed = rke.queries_needed(per_query, delta=0.02, baseline=baseline)
    results = [compared, similar, needed]
    if baseline is not None:  # bootstrap's rows are about a baseline
        results.append(
            rke.bootstrap(sample, ["ndcg@10"], by="system", baseline=baseline, n_resamples=20)
        )
    stacked = pl.concat([frame.select(shared) for frame in results])
    assert stacked.select("system", "baseline_system").unique().rows() == [("neural", "bm25")]
    joined = compared.join(needed, on=keys, how="inner", suffix="_needed")
    assert joined.height == 1
    assert joined["n_queries"].item() == joined["n_queries_needed"].item() == 3000
    if baseline is not None:
        bootstrapped = results[-1]
        both = compared.join(bootstrapped, on=keys, suffix="_bootstrap")
        assert both["value"].item() == pytest.approx(both["value_bootstrap"].item())
        assert both["delta"].item() == pytest.approx(both["delta_bootstrap"].item())
