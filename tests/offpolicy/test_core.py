"""The off-policy core: parts -> value, standard error, interval, against plain Python.

Every expected value here is computed in the test from the parts' definition (a mean, a
ratio of sums, a sum of per-term ratios weighted by the term's share of the units) and the
delta method written out with the ``statistics`` module, never with the package's code.
"""

from __future__ import annotations

import math
import random
import statistics
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval.offpolicy._core import (
    MAX_LITERAL_ROWS,
    RESULT_COLUMNS,
    WEIGHT,
    Parts,
    estimate,
    finish_values,
    merge_sums,
    partial_sums,
    spread_sums,
    summarise,
)
from tests.engine.test_streaming import assert_streams


def _bandit_rows(n: int, seed: int, policies: tuple[str, ...] = ("new", "old")) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for policy in policies:
        for i in range(n):
            w = rng.choice([0.0, 0.5, 1.0, 1.5, 2.0])  # mean 1, as real weights
            r = rng.choice([0.0, 1.0, -0.5, 2.0])
            rows.append(
                {
                    "policy": policy,
                    "segment": rng.choice(["a", "b", None]),
                    "row": i,
                    "ips__m": w * r,
                    "snips__a": w * r,
                    "snips__b": w,
                    "sndr__m": r / 2,
                    "sndr__a": w * (r - 0.25),
                    "sndr__b": w,
                    WEIGHT: w,
                }
            )
    return rows


def _brute(rows: list[dict], keys: list[str]) -> dict[tuple, dict[str, tuple[float, float]]]:
    """Per key and estimator: (value, se) by the definitions and the delta method."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        groups[tuple(row[k] for k in keys)].append(row)
    out: dict[tuple, dict[str, tuple[float, float]]] = {}
    for key, group in groups.items():
        n = len(group)
        ips = [r["ips__m"] for r in group]
        ratio = sum(r["snips__a"] for r in group) / sum(r["snips__b"] for r in group)
        mean_b = sum(r["snips__b"] for r in group) / n
        psi_snips = [ratio + (r["snips__a"] - ratio * r["snips__b"]) / mean_b for r in group]
        sndr_ratio = sum(r["sndr__a"] for r in group) / sum(r["sndr__b"] for r in group)
        sndr = sum(r["sndr__m"] for r in group) / n + sndr_ratio
        psi_sndr = [
            r["sndr__m"] + sndr_ratio + (r["sndr__a"] - sndr_ratio * r["sndr__b"]) / mean_b
            for r in group
        ]
        out[key] = {
            "ips": (statistics.fmean(ips), statistics.stdev(ips) / math.sqrt(n)),
            "snips": (ratio, statistics.stdev(psi_snips) / math.sqrt(n)),
            "sndr": (sndr, statistics.stdev(psi_sndr) / math.sqrt(n)),
        }
    return out


@pytest.mark.parametrize("keys", [["policy"], ["policy", "segment"]])
def test_values_and_standard_errors_equal_the_definitions(keys: list[str]) -> None:
    rows = _bandit_rows(200, seed=1)
    frame = pl.LazyFrame(rows).drop("row")
    result = estimate(Parts(frame, keys=keys, estimators=["ips", "snips", "sndr"]))
    expected = _brute(rows, keys)
    assert result.height == 3 * len(expected)
    assert result.columns == ["metric", *keys, *RESULT_COLUMNS]
    z = statistics.NormalDist().inv_cdf(0.975)
    for row in result.iter_rows(named=True):
        value, se = expected[tuple(row[k] for k in keys)][row["metric"]]
        assert row["value"] == pytest.approx(value, rel=1e-12, abs=1e-12)
        assert row["se"] == pytest.approx(se, rel=1e-9)
        assert row["ci_low"] == pytest.approx(value - z * se, rel=1e-9, abs=1e-12)
        assert row["ci_high"] == pytest.approx(value + z * se, rel=1e-9, abs=1e-12)


def test_ips_standard_error_is_numpys_standard_error_of_the_mean() -> None:
    x = np.random.default_rng(3).gamma(2.0, size=500)
    out = estimate(Parts(pl.LazyFrame({"policy": ["p"] * 500, "ips__m": x}), ["policy"], ["ips"]))
    assert out["value"][0] == pytest.approx(x.mean(), rel=1e-12)
    assert out["se"][0] == pytest.approx(x.std(ddof=1) / math.sqrt(500), rel=1e-10)


def _slate_rows(seed: int) -> list[dict]:
    """Slates of 1-4 positions (some missing), one policy: per-row a = r*w, b = w, m = r*w."""
    rng = random.Random(seed)
    rows = []
    for slate in range(40):
        positions = sorted(rng.sample(range(4), rng.randint(1, 4)))
        for position in positions:
            w, r = rng.choice([0.2, 1.0, 1.5, 4.0]), rng.choice([0.0, 1.0])
            rows.append({"policy": "p", "slate": slate, "position": position, "a": r * w, "b": w})
    return rows


def test_per_term_ratios_are_weighted_by_each_terms_share_of_the_units() -> None:
    rows = _slate_rows(5)
    frame = pl.LazyFrame(rows).select(
        "policy",
        "slate",
        "position",
        pl.col("a").alias("sn__a"),
        pl.col("b").alias("sn__b"),
        pl.col("a").alias("plain__m"),
    )
    parts = Parts(frame, ["policy"], ["sn", "plain"], unit="slate", term="position")
    out = estimate(parts)
    n = len({r["slate"] for r in rows})
    # obp's self-normalised slate estimators: reward * iw / mean(iw at that position), summed
    # over the rows and divided by the number of slates.
    mean_w = {
        p: statistics.fmean(r["b"] for r in rows if r["position"] == p)
        for p in {r["position"] for r in rows}
    }
    sn = sum(r["a"] / mean_w[r["position"]] for r in rows) / n
    plain = sum(r["a"] for r in rows) / n
    got = dict(zip(out["metric"], out["value"], strict=True))
    assert got["sn"] == pytest.approx(sn, rel=1e-12)
    assert got["plain"] == pytest.approx(plain, rel=1e-12)
    assert out["n_queries"].to_list() == [n, n]
    # per_query: one psi per slate, whose mean is the value.
    psi = estimate(parts, per_query=True)
    assert psi.height == n
    assert psi["sn"].mean() == pytest.approx(sn, rel=1e-12)
    assert psi["plain"].mean() == pytest.approx(plain, rel=1e-12)
    # The plain part's psi is the slate's sum of m.
    per_slate = defaultdict(float)
    for r in rows:
        per_slate[r["slate"]] += r["a"]
    assert psi.sort("slate")["plain"].to_list() == pytest.approx(
        [per_slate[s] for s in sorted(per_slate)]
    )


def test_a_ratio_over_zero_weights_is_null_not_nan() -> None:
    frame = pl.LazyFrame({"policy": ["p", "p"], "snips__a": [0.0, 0.0], "snips__b": [0.0, 0.0]})
    out = estimate(Parts(frame, ["policy"], ["snips"]))
    assert out["value"].to_list() == [None]


def test_row_order_and_input_form_do_not_change_the_result(tmp_path: Path) -> None:
    rows = _bandit_rows(200, seed=7)
    frame = pl.DataFrame(rows)
    path = tmp_path / "parts.parquet"
    frame.write_parquet(path)
    keys = ["policy", "segment"]
    names = ["ips", "snips", "sndr"]
    first = estimate(Parts(frame.lazy(), keys, names, unit="row"))
    shuffled = estimate(Parts(frame.sample(fraction=1.0, shuffle=True, seed=2).lazy(), keys, names))
    parquet = estimate(Parts(pl.scan_parquet(path), keys, names), engine="in-memory")
    slates = pl.DataFrame(_slate_rows(3)).select(
        "policy", "slate", "position", pl.col("a").alias("sn__a"), pl.col("b").alias("sn__b")
    )
    by_position = Parts(slates.lazy(), ["policy"], ["sn"], unit="slate", term="position")
    # Order-free sums: the same bits, not only close ones, in every order and on every engine.
    for other in (shuffled, parquet):
        assert other.equals(first)
    for seed in range(3):
        reordered = slates.sample(fraction=1.0, shuffle=True, seed=seed).lazy()
        again = estimate(Parts(reordered, ["policy"], ["sn"], unit="slate", term="position"))
        assert again.equals(estimate(by_position))


def test_sums_stream_from_parquet(tmp_path: Path) -> None:
    path = tmp_path / "parts.parquet"
    pl.DataFrame(_bandit_rows(200, seed=2)).write_parquet(path)
    parts = Parts(pl.scan_parquet(path), ["policy", "segment"], ["ips", "snips", "sndr"])
    assert_streams(partial_sums(parts))


def test_baseline_pairs_policies_on_their_units() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    rows = _bandit_rows(80, seed=11)
    frame = pl.LazyFrame(rows).drop("segment")
    parts = Parts(frame, ["policy"], ["ips", "snips"], unit="row")
    psi = estimate(parts, per_query=True)
    out = estimate(parts, baseline="old")
    assert out["policy"].to_list() == ["new", "new"]
    assert out["baseline_policy"].to_list() == ["old", "old"]
    values = estimate(parts)
    for row in out.iter_rows(named=True):
        name = row["metric"]
        value = dict(zip(values["policy"], values.filter(metric=name)["value"], strict=False))
        assert row["delta"] == pytest.approx(value["new"] - value["old"], rel=1e-9)
        new = psi.filter(policy="new").sort("row")[name].to_numpy()
        old = psi.filter(policy="old").sort("row")[name].to_numpy()
        assert row["p_value"] == pytest.approx(scipy_stats.ttest_rel(new, old).pvalue, rel=1e-9)


def test_per_query_without_units_is_a_clear_error() -> None:
    frame = pl.LazyFrame({"policy": ["p"], "ips__m": [1.0]})
    with pytest.raises(rke.InvalidOptionError, match="query="):
        estimate(Parts(frame, ["policy"], ["ips"]), per_query=True)


def test_bootstrap_interval_brackets_the_value_and_is_reproducible() -> None:
    rng = np.random.default_rng(0)
    w = rng.exponential(size=400)
    r = rng.binomial(1, 0.3, size=400).astype(float)
    frame = pl.LazyFrame({"policy": ["p"] * 400, "snips__a": w * r, "snips__b": w, "ips__m": w * r})
    parts = Parts(frame, ["policy"], ["ips", "snips"])
    normal = estimate(parts)
    boot = estimate(parts, interval="bootstrap", n_resamples=400, seed=3)
    again = estimate(parts, interval="bootstrap", n_resamples=400, seed=3)
    assert boot.equals(again)
    assert boot["value"].equals(normal["value"])
    for b, n in zip(boot.iter_rows(named=True), normal.iter_rows(named=True), strict=True):
        assert b["ci_low"] < b["value"] < b["ci_high"]
        # 400 iid rows: the percentile interval is close to the normal one.
        assert b["ci_high"] - b["ci_low"] == pytest.approx(n["ci_high"] - n["ci_low"], rel=0.2)


def test_weight_warnings_name_the_policy_and_the_numbers() -> None:
    n = 1000
    balanced = np.tile([0.5, 1.5], n // 2)
    skewed = np.zeros(n)
    skewed[0] = float(n)  # one row carries everything: ESS 1, mean weight 1
    off = np.full(n, 2.0) + np.tile([-0.1, 0.1], n // 2)  # mean 2: propensities wrong
    frame = pl.LazyFrame(
        {
            "policy": ["balanced"] * n + ["skewed"] * n + ["off"] * n,
            "ips__m": np.concatenate([balanced, skewed, off]),
            WEIGHT: np.concatenate([balanced, skewed, off]),
        }
    )
    with pytest.warns(rke.WeightWarning) as caught:
        out = estimate(Parts(frame, ["policy"], ["ips"]))
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2, messages
    assert any(
        "policy='skewed'" in m and "effective sample size is 1.0 of 1000" in m for m in messages
    )
    assert any("policy='off'" in m and "average 2" in m for m in messages)
    assert all(w.filename == __file__ for w in caught)
    ess = dict(zip(out["policy"], out["ess"], strict=True))
    assert ess["balanced"] == pytest.approx(n**2 / (n / 2 * (0.25 + 2.25)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        estimate(Parts(frame.filter(policy="balanced"), ["policy"], ["ips"]))


@pytest.mark.parametrize(
    ("option", "value"),
    [("alpha", 0), ("alpha", 1.5), ("interval", "wald"), ("n_resamples", 5)],
)
def test_bad_options_are_named(option: str, value: object) -> None:
    frame = pl.LazyFrame({"policy": ["p"], "ips__m": [1.0]})
    with pytest.raises(rke.InvalidOptionError, match=f"{option}="):
        estimate(Parts(frame, ["policy"], ["ips"]), **{option: value})


def test_sums_of_partitions_merge_to_the_whole() -> None:
    """Spark's route: whole units per partition, partial sums stacked and merged."""
    rows = _slate_rows(9)
    frame = pl.DataFrame(rows).select(
        pl.lit("p").alias("policy"),
        "slate",
        "position",
        pl.col("a").alias("sn__a"),
        pl.col("b").alias("sn__b"),
        pl.col("a").alias("plain__m"),
        pl.when(pl.col("position") == 0).then(pl.col("b")).alias(WEIGHT),
    )
    whole = Parts(frame.lazy(), ["policy"], ["sn", "plain"], unit="slate", term="position")
    expected = estimate(whole)
    pieces = [frame.filter(pl.col("slate") % 3 == i) for i in range(3)]
    sums = pl.concat(
        [partial_sums(Parts(p.lazy(), **_same(whole))).collect() for p in pieces],
        how="vertical_relaxed",
    )
    values, constants = finish_values(*merge_sums(sums, whole), whole)
    spread = pl.concat(
        [spread_sums(Parts(p.lazy(), **_same(whole)), values, constants).collect() for p in pieces]
    )
    got = summarise(values, spread, whole, alpha=0.05)
    assert got.select("metric", "policy", "n_queries").equals(
        expected.select("metric", "policy", "n_queries")
    )
    for column in ("value", "se", "ess", "max_weight", "mean_weight"):
        np.testing.assert_allclose(got[column], expected[column], rtol=1e-12)


def _same(parts: Parts) -> dict:
    return {
        "keys": parts.keys,
        "estimators": parts.estimators,
        "unit": parts.unit,
        "term": parts.term,
    }


def test_a_ratio_over_several_rows_per_unit_counts_units_not_rows() -> None:
    """One term, units with several rows: N_t is the number of units (slates), not rows."""
    rows = _slate_rows(4)
    frame = pl.LazyFrame(rows).select(
        "policy", "slate", pl.col("a").alias("sn__a"), pl.col("b").alias("sn__b")
    )
    out = estimate(Parts(frame, ["policy"], ["sn"], unit="slate"))
    # sum(a) / sum(b): the units' share of the one term is 1.
    expected = sum(r["a"] for r in rows) / sum(r["b"] for r in rows)
    assert out["value"][0] == pytest.approx(expected, rel=1e-12)
    assert out["n_queries"][0] == len({r["slate"] for r in rows})


def test_a_scaled_ratio_is_exact_and_merges_across_partitions() -> None:
    """obp's snsips: sum(a) / sum(b) * (rows / slates), the scale as a sum of l over units."""
    rows = _slate_rows(12)
    frame = pl.DataFrame(rows).select(
        "policy",
        "slate",
        pl.col("a").alias("s__a"),
        pl.col("b").alias("s__b"),
        pl.lit(1.0).alias("s__l"),
    )
    parts = Parts(frame.lazy(), ["policy"], ["s"], unit="slate")
    out = estimate(parts)
    n = len({r["slate"] for r in rows})
    ratio = sum(r["a"] for r in rows) / sum(r["b"] for r in rows)
    scale = len(rows) / n
    assert out["value"][0] == pytest.approx(ratio * scale, rel=1e-12)
    # The delta method of R * Lambda over slates (a, b, l summed per slate), by hand.
    per = defaultdict(lambda: [0.0, 0.0, 0.0])
    for r in rows:
        per[r["slate"]][0] += r["a"]
        per[r["slate"]][1] += r["b"]
        per[r["slate"]][2] += 1.0
    mean_b = sum(v[1] for v in per.values()) / n
    psi = [
        ratio * scale + scale * (a - ratio * b) / mean_b + ratio * (length - scale)
        for a, b, length in per.values()
    ]
    assert out["se"][0] == pytest.approx(statistics.stdev(psi) / math.sqrt(n), rel=1e-9)
    per_query = estimate(parts, per_query=True)
    assert per_query["s"].mean() == pytest.approx(ratio * scale, rel=1e-12)
    # Spark's route: whole slates per partition.
    pieces = [frame.filter(pl.col("slate") % 2 == i) for i in range(2)]
    sums = pl.concat(
        [partial_sums(Parts(p.lazy(), **_same(parts))).collect() for p in pieces],
        how="vertical_relaxed",
    )
    values, constants = finish_values(*merge_sums(sums, parts), parts)
    spread = pl.concat(
        [spread_sums(Parts(p.lazy(), **_same(parts)), values, constants).collect() for p in pieces]
    )
    merged = summarise(values, spread, parts, alpha=0.05)
    np.testing.assert_allclose(merged["value"], out["value"], rtol=1e-12)
    np.testing.assert_allclose(merged["se"], out["se"], rtol=1e-9)
    boot = estimate(parts, interval="bootstrap", n_resamples=200, seed=1)
    assert boot["ci_low"][0] < boot["value"][0] < boot["ci_high"][0]


def test_many_segments_give_the_same_estimates_as_few() -> None:
    """Past MAX_LITERAL_ROWS keys the constants are joined, not written as literals."""
    rng = np.random.default_rng(5)
    n = 3 * (MAX_LITERAL_ROWS + 50)
    segment = np.repeat(np.arange(MAX_LITERAL_ROWS + 50), 3)
    w = rng.choice([0.5, 1.0, 1.5], size=n)
    r = rng.choice([0.0, 1.0], size=n)
    frame = pl.DataFrame(
        {"policy": "p", "segment": segment, "snips__a": w * r, "snips__b": w, "ips__m": w * r}
    )
    many = estimate(Parts(frame.lazy(), ["policy", "segment"], ["ips", "snips"]))
    few = pl.concat(
        [
            estimate(Parts(frame.filter(segment=s).lazy(), ["policy", "segment"], ["ips", "snips"]))
            for s in (0, 7, MAX_LITERAL_ROWS + 10)
        ]
    )
    picked = many.filter(pl.col("segment").is_in([0, 7, MAX_LITERAL_ROWS + 10]))
    for column in ("value", "se"):
        np.testing.assert_allclose(
            picked.sort("metric", "segment")[column], few.sort("metric", "segment")[column]
        )
