"""``compare`` / ``compare_per_query`` against independent references.

* t, Wilcoxon and sign p-values against scipy (``ttest_rel``, ``wilcoxon``, ``binomtest``), and
  the t-interval against ``ttest_rel(...).confidence_interval``;
* the randomization test against a brute-force enumeration of all sign vectors, and its Monte
  Carlo p within sampling error of the exact value;
* corrections against statsmodels' ``multipletests``;
* randomized Tukey HSD against a brute-force enumeration of all within-query permutations;
* bootstrap interval coverage on generated data with a known difference;
* the pairing policy on systems with different query sets, worked by hand.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval.comparison import adjust, randomization_p, tukey_hsd_p

stats = pytest.importorskip("scipy.stats")


def _table(values: dict[str, list[float]], queries: list[object] | None = None) -> pl.DataFrame:
    """A per-query table: one column ``map``, one row per (system, query)."""
    rows = []
    for system, column in values.items():
        names = queries or list(range(len(column)))
        rows += [(system, query, value) for query, value in zip(names, column, strict=True)]
    return pl.DataFrame(rows, schema=["system", "query", "map"], orient="row")


def _scores(seed: int, n: int, shift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Per-query metric-like values with many exact ties (multiples of 0.1)."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 11, n) / 10
    other = np.clip(base + rng.integers(-3, 4, n) / 10 + shift, 0, 1).round(1)
    return base, other


def _one(out: pl.DataFrame) -> dict[str, object]:
    assert out.height == 1
    return out.row(0, named=True)


@pytest.mark.parametrize("seed", range(6))
def test_t_wilcoxon_sign_against_scipy(seed: int) -> None:
    x, y = _scores(seed, 40, shift=0.05 * (seed % 3))
    table = _table({"a": list(x), "b": list(y)})
    t = _one(rke.compare_per_query(table, by="system", baseline="a", test="t"))
    want = stats.ttest_rel(y, x)
    assert t["p_value"] == pytest.approx(want.pvalue, rel=1e-9)
    interval = want.confidence_interval(0.95)
    assert (t["ci_low"], t["ci_high"]) == pytest.approx((interval.low, interval.high), rel=1e-9)
    d = y - x
    assert t["delta"] == pytest.approx(d.mean())
    assert t["effect_size"] == pytest.approx(d.mean() / d.std(ddof=1))
    assert (t["wins"], t["ties"], t["losses"]) == ((d > 0).sum(), (d == 0).sum(), (d < 0).sum())
    wilcoxon = _one(rke.compare_per_query(table, by="system", baseline="a", test="wilcoxon"))
    assert wilcoxon["p_value"] == pytest.approx(stats.wilcoxon(y - x).pvalue, rel=1e-9)
    sign = _one(rke.compare_per_query(table, by="system", baseline="a", test="sign"))
    wins, losses = int((d > 0).sum()), int((d < 0).sum())
    assert sign["p_value"] == pytest.approx(stats.binomtest(wins, wins + losses).pvalue)


def _exact_randomization(d: np.ndarray) -> float:
    """Brute force: the share of the 2^n sign vectors whose |mean| is at least the observed."""
    observed = abs(d.mean())
    hits = 0
    for signs in itertools.product((1.0, -1.0), repeat=d.size):
        hits += abs((np.array(signs) * d).mean()) >= observed - 1e-12
    return hits / 2**d.size


@pytest.mark.parametrize("seed", range(5))
def test_randomization_is_exact_enumeration_on_small_sets(seed: int) -> None:
    x, y = _scores(seed, 10, shift=0.1)
    d = y - x
    table = _table({"a": list(x), "b": list(y)})
    out = _one(rke.compare_per_query(table, by="system", baseline="a", test="randomization"))
    assert out["p_value"] == pytest.approx(_exact_randomization(d), abs=1e-12)


def test_randomization_monte_carlo_within_sampling_error_of_exact() -> None:
    x, y = _scores(11, 16, shift=0.05)
    d = y - x
    exact = _exact_randomization(d)
    resamples = 20_000  # < 2^16 = 65,536: Monte Carlo
    found = randomization_p(d, resamples, seed=3)
    assert found != exact
    error = 4 * math.sqrt(exact * (1 - exact) / resamples) + 2 / resamples
    assert abs(found - exact) <= error
    # reproducible, and seeded
    assert randomization_p(d, resamples, seed=3) == found
    assert randomization_p(d, resamples, seed=4) != found


def test_randomization_ties_of_the_statistic_count_despite_rounding() -> None:
    # Decimal differences are not exact in binary (0.1 + 0.2 != 0.3), yet many sign vectors tie
    # the observed statistic exactly; the reference counts them in exact rational arithmetic.
    text = ["0.1", "0.2", "-0.3", "0.3", "0.7", "-0.4", "0.6"]
    exact = [Fraction(value) for value in text]
    observed = abs(sum(exact))
    hits = sum(
        abs(sum(sign * value for sign, value in zip(signs, exact, strict=True))) >= observed
        for signs in itertools.product((1, -1), repeat=len(exact))
    )
    d = np.array([float(value) for value in text])
    assert randomization_p(d, 10_000, 0) == hits / 2 ** len(exact)


def _holm_family(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0, 0.2, 9)


@pytest.mark.parametrize("method", ["bonferroni", "holm", "fdr_bh"])
@pytest.mark.parametrize("seed", range(4))
def test_corrections_against_statsmodels(method: str, seed: int) -> None:
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    p = _holm_family(seed)
    want = multitest.multipletests(p, alpha=0.05, method=method)[1]
    assert adjust(p, method) == pytest.approx(want, abs=1e-12)  # type: ignore[arg-type]
    with_nan = np.append(p, np.nan)
    assert adjust(with_nan, method)[:-1] == pytest.approx(want, abs=1e-12)  # type: ignore[arg-type]
    assert math.isnan(adjust(with_nan, method)[-1])  # type: ignore[arg-type]


def _three_systems(n: int = 30, seed: int = 5) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 11, n) / 10
    return _table(
        {
            "a": list(base),
            "b": list(np.clip(base + 0.1, 0, 1)),
            "c": list(np.clip(base + rng.integers(-2, 3, n) / 10, 0, 1)),
        }
    )


@pytest.mark.parametrize("scope", ["all", "metric"])
def test_correction_family_spans_systems_and_metrics(scope: str) -> None:
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    table = _three_systems().with_columns((pl.col("map") * 0.5).alias("p@5"))
    out = rke.compare_per_query(
        table, by="system", baseline="a", correction="holm", correction_scope=scope
    )
    assert out.height == 4  # 2 systems × 2 metrics
    if scope == "all":
        want = multitest.multipletests(out["p_value"].to_numpy(), method="holm")[1]
    else:
        want = np.concatenate(
            [
                multitest.multipletests(part["p_value"].to_numpy(), method="holm")[1]
                for part in out.partition_by("metric", maintain_order=True)
            ]
        )
    assert out["p_adjusted"].to_numpy() == pytest.approx(want)
    assert out["significant"].to_list() == [bool(p < 0.05) for p in want]
    unadjusted = rke.compare_per_query(table, by="system", baseline="a", correction=None)
    assert unadjusted["p_adjusted"].to_list() == unadjusted["p_value"].to_list()


def _exact_tukey(scores: np.ndarray) -> np.ndarray:
    """Brute force: every within-query permutation of the systems' scores, once."""
    n, m = scores.shape
    means = scores.mean(axis=0)
    ranges = []
    for arrangement in itertools.product(itertools.permutations(range(m)), repeat=n):
        permuted = np.array([scores[q, list(order)] for q, order in enumerate(arrangement)])
        column = permuted.mean(axis=0)
        ranges.append(column.max() - column.min())
    found = np.array(ranges)
    gaps = np.abs(means[:, None] - means[None, :])
    return (found[:, None, None] >= gaps[None, :, :] - 1e-12).mean(axis=0)


def test_tukey_against_brute_force_enumeration() -> None:
    rng = np.random.default_rng(2)
    scores = rng.integers(0, 5, (5, 3)) / 4  # (3!)^5 = 7,776 arrangements
    exact = _exact_tukey(scores)
    assert tukey_hsd_p(scores, 10_000, 0) == pytest.approx(exact)  # exact path
    sampled = tukey_hsd_p(scores, 5_000, 1)  # Monte Carlo path
    error = 4 * np.sqrt(exact * (1 - exact) / 5_000) + 2 / 5_000
    assert np.all(np.abs(sampled - exact) <= error)


def test_tukey_rows_are_family_wise_already() -> None:
    table = _three_systems()
    out = rke.compare_per_query(table, by="system", test="tukey", n_resamples=2_000)
    assert out.select("baseline_system", "system").rows() == [("a", "b"), ("a", "c"), ("b", "c")]
    assert out["p_adjusted"].to_list() == out["p_value"].to_list()
    scores = np.column_stack([table.filter(pl.col("system") == s)["map"].to_numpy() for s in "abc"])
    want = tukey_hsd_p(scores, 2_000, 0)
    assert out["p_value"].to_list() == pytest.approx([want[0, 1], want[0, 2], want[1, 2]])
    against_a = rke.compare_per_query(table, by="system", baseline="a", test="tukey")
    assert against_a["system"].to_list() == ["b", "c"]


def test_bootstrap_interval_covers_the_true_difference() -> None:
    # 200 data sets of 40 queries with a true mean difference of 0.05 (normal noise).
    covered = 0
    trials = 200
    rng = np.random.default_rng(0)
    for trial in range(trials):
        x = rng.normal(0.5, 0.2, 40)
        y = x + 0.05 + rng.normal(0, 0.1, 40)
        out = _one(
            rke.compare_per_query(
                _table({"a": list(x), "b": list(y)}),
                by="system",
                baseline="a",
                test="bootstrap",
                n_resamples=1_000,
                seed=trial,
            )
        )
        covered += out["ci_low"] <= 0.05 <= out["ci_high"]
    # 95% intervals (percentile intervals run a little narrow at n = 40).
    assert 0.88 * trials <= covered <= 0.99 * trials


def test_bootstrap_p_and_interval_are_seeded() -> None:
    x, y = _scores(3, 50, shift=0.05)
    table = _table({"a": list(x), "b": list(y)})
    first = rke.compare_per_query(table, by="system", baseline="a", test="bootstrap")
    again = rke.compare_per_query(table, by="system", baseline="a", test="bootstrap")
    other = rke.compare_per_query(table, by="system", baseline="a", test="bootstrap", seed=9)
    assert first.equals(again)
    assert not first.equals(other)
    row = _one(first)
    assert row["ci_low"] < row["delta"] < row["ci_high"]
    assert 0 < row["p_value"] <= 1


@pytest.mark.parametrize("test", ["bootstrap", "randomization"])
@pytest.mark.parametrize("missing", ["drop", "zero"])
def test_resampling_results_do_not_depend_on_row_order(test: str, missing: str) -> None:
    x, y = _scores(8, 60, shift=0.05)
    table = _table({"a": list(x[:55]), "b": list(y[5:])}, None)
    table = table.with_columns(
        pl.when(pl.col("system") == "b").then(pl.col("query") + 5).otherwise("query")
    )  # a has queries 0..54, b has 5..59: 10 queries on one side only
    options = {"by": "system", "baseline": "a", "test": test, "unpaired_queries": missing}
    first = rke.compare_per_query(table, n_resamples=500, **options)  # type: ignore[arg-type]
    for seed in range(3):
        shuffled = table.sample(fraction=1.0, shuffle=True, seed=seed)
        again = rke.compare_per_query(shuffled, n_resamples=500, **options)  # type: ignore[arg-type]
        assert again.equals(first)


def test_pairing_drops_queries_missing_for_one_system_and_counts_them() -> None:
    table = pl.DataFrame(
        {
            "system": ["a", "a", "a", "b", "b", "b"],
            "query": ["q1", "q2", "q3", "q1", "q2", "q4"],
            "map": [0.5, 0.2, 0.9, 0.7, 0.2, 0.4],
        }
    )
    dropped = _one(rke.compare_per_query(table, by="system", baseline="a", test="sign"))
    # paired: q1 (+0.2), q2 (0); dropped: q3 (only a), q4 (only b)
    assert (dropped["n_queries"], dropped["n_dropped"]) == (2, 2)
    assert dropped["delta"] == pytest.approx(0.1)
    assert (dropped["wins"], dropped["ties"], dropped["losses"]) == (1, 1, 0)
    assert dropped["missing"] == "drop"
    zero = _one(
        rke.compare_per_query(
            table, by="system", baseline="a", test="sign", unpaired_queries="zero"
        )
    )
    # q3: b scores 0 (-0.9); q4: a scores 0 (+0.4)
    assert (zero["n_queries"], zero["n_dropped"]) == (4, 0)
    assert zero["delta"] == pytest.approx((0.2 + 0 - 0.9 + 0.4) / 4)
    assert (zero["wins"], zero["ties"], zero["losses"]) == (2, 1, 1)
    assert zero["missing"] == "zero"


def test_undefined_values_are_never_scored_zero() -> None:
    table = pl.DataFrame(
        {
            "system": ["a", "a", "b", "b"],
            "query": ["q1", "q2", "q1", "q2"],
            "frp": [1.0, None, 2.0, 3.0],
        }
    )
    for missing in ("drop", "zero"):
        out = _one(
            rke.compare_per_query(table, by="system", baseline="a", unpaired_queries=missing)
        )
        assert (out["n_queries"], out["n_dropped"]) == (1, 1)


def test_floating_point_noise_is_a_tie() -> None:
    table = _table({"a": [0.3, 0.5, 0.7], "b": [0.1 + 0.2, 0.5, 0.7]})
    out = _one(rke.compare_per_query(table, by="system", baseline="a"))
    assert (out["wins"], out["ties"], out["losses"]) == (0, 3, 0)
    assert out["p_value"] == 1.0
    assert math.isnan(out["effect_size"])


def test_compare_is_evaluate_then_compare_per_query(sample_log) -> None:
    log = sample_log
    direct = rke.compare(log, ["ndcg@10", "map"], by="system", baseline="bm25")
    per_query = rke.evaluate(log, ["ndcg@10", "map"], by="system", per_query=True)
    two_steps = rke.compare_per_query(per_query, by="system", baseline="bm25")
    # compare(log) also bounds each Δ over the orders of tied scores (the log has them)
    assert direct["tie_range"].null_count() == 0
    assert two_steps["tie_range"].null_count() == two_steps.height  # no log, no ties to bound
    direct, two_steps = (
        direct.drop("tie_range", "tie_flip"),
        two_steps.drop("tie_range", "tie_flip"),
    )
    assert direct.drop("p_value", "p_adjusted").equals(two_steps.drop("p_value", "p_adjusted"))
    assert direct["p_value"].to_list() == pytest.approx(two_steps["p_value"].to_list())
    means = rke.evaluate(log, ["ndcg@10", "map"], by="system")
    assert direct["value"].to_list() == pytest.approx(
        means.filter(pl.col("system") == "neural").select("ndcg@10", "map").row(0)
    )
    assert direct["n_queries"].to_list() == [3000, 3000]
    assert log.rank_eval.compare(["map"], by="system", baseline="bm25").height == 1
    assert log.lazy().rank_eval.compare(["map"], by="system").collect().height == 1


def test_all_pairs_and_several_by_columns() -> None:
    table = _three_systems().with_columns(pl.lit("2026-01-01").alias("day"))
    out = rke.compare_per_query(table, by=["system", "day"])
    # both key columns stay columns (no joined name), the baseline's as baseline_<by>
    assert out.select("baseline_system", "baseline_day", "system", "day").rows() == [
        ("a", "2026-01-01", "b", "2026-01-01"),
        ("a", "2026-01-01", "c", "2026-01-01"),
        ("b", "2026-01-01", "c", "2026-01-01"),
    ]
    tuple_baseline = rke.compare_per_query(
        table, by=["system", "day"], baseline=("b", "2026-01-01")
    )
    assert tuple_baseline.select("baseline_system", "baseline_day").unique().rows() == [
        ("b", "2026-01-01")
    ]


def test_any_numeric_column_is_a_metric_and_other_tools_tables_work() -> None:
    pd = pytest.importorskip("pandas")
    table = pd.DataFrame(
        {"run": ["x", "x", "y", "y"], "qid": [1, 2, 1, 2], "AP": [0.1, 0.2, 0.3, 0.2], "note": "z"}
    )
    out = rke.compare_per_query(table, by="run", query="qid")
    assert out["metric"].to_list() == ["AP"]
    assert out.columns == [
        "metric",
        "run",
        "baseline_run",
        "higher_is_better",
        "summary",
        "n_queries",
        "n_dropped",
        "value",
        "baseline_value",
        "delta",
        "ci_low",
        "ci_high",
        "effect_size",
        "p_value",
        "p_adjusted",
        "significant",
        "wins",
        "ties",
        "losses",
        "test",
        "test_scale",
        "missing",
        "correction",
        "alpha",
        "direction_source",
        "baseline_overall",
        "system_overall",
        "baseline_queries",
        "system_queries",
        "tie_range",
        "tie_flip",
    ]


@pytest.mark.parametrize(
    ("options", "pattern"),
    [
        ({"test": "wilcoxen"}, r"test= must be one of .*did you mean 'wilcoxon'"),
        ({"correction": "holms"}, r"did you mean 'holm'"),
        ({"baseline": "bm24"}, r"baseline= must be one of \['a', 'b', 'c'\]"),
        ({"alpha": 1.5}, r"alpha= must be a number in \(0, 1\)"),
        ({"n_resamples": 0}, r"n_resamples= must be a positive int"),
        ({"unpaired_queries": "none"}, r"unpaired_queries= must be one of \['drop', 'zero'\]"),
    ],
)
def test_bad_options_name_the_option(options: dict[str, object], pattern: str) -> None:
    with pytest.raises(rke.InvalidOptionError, match=pattern):
        rke.compare_per_query(_three_systems(), by="system", **options)  # type: ignore[arg-type]


def test_bad_tables_are_clear_errors() -> None:
    table = _three_systems()
    with pytest.raises(rke.ColumnNotFoundError, match=r"'model' \(option by=\)"):
        rke.compare_per_query(table, by="model")
    with pytest.raises(rke.ColumnValueError, match=r"one row per \(system, query\)"):
        rke.compare_per_query(pl.concat([table, table.head(1)]), by="system")
    with pytest.raises(rke.InvalidOptionError, match="at least two systems"):
        rke.compare_per_query(table.filter(pl.col("system") == "a"), by="system")


def test_missing_scipy_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_scipy(name: str, *args: object, **kwargs: object) -> object:
        if name == "scipy" or name.startswith("scipy."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_scipy)
    with pytest.raises(ImportError, match=r"polars-rankeval\[stats\]"):
        rke.compare_per_query(_three_systems(), by="system")


def test_gm_interval_is_shown_as_a_ratio_by_compare_table_and_check_alike() -> None:
    # D8: gm_map's Δ is a difference of geometric means, its interval one of mean log
    # differences; the compact table showed Δ beside the log interval (Δ outside it), check
    # the ratio. Both now show ×[exp(low), exp(high)], worked out here with scipy on the logs.
    from polars_rankeval.cli._compact import compact

    base = [0.5, 0.2, 0.05, 0.3, 0.0, 0.25]
    cand = [0.4, 0.25, 0.02, 0.35, 0.1, 0.3]
    per_query = pl.DataFrame(
        {"system": ["a"] * 6 + ["b"] * 6, "query": list(range(6)) * 2, "gm_map": base + cand}
    )
    logs = np.log(np.maximum(cand, 1e-5)) - np.log(np.maximum(base, 1e-5))
    low, high = stats.t.interval(0.95, len(logs) - 1, loc=logs.mean(), scale=stats.sem(logs))
    ratio = f"×[{math.exp(low):.4f}, {math.exp(high):.4f}]"
    out = rke.compare_per_query(per_query, by="system", baseline="a")
    line = next(x for x in compact(out).splitlines() if x.startswith("gm_map"))
    assert ratio in line
    gm = [math.exp(np.mean(np.log(np.maximum(v, 1e-5)))) for v in (base, cand)]
    assert f"{gm[1] - gm[0]:+.4f} {ratio}" in line
    checked = rke.check(
        per_query.filter(pl.col("system") == "b").drop("system"),
        per_query.filter(pl.col("system") == "a").drop("system"),
        fail_if_significant=True,
    )
    row = checked.table.row(0, named=True)
    assert row["interval_scale"] == "ratio"
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((math.exp(low), math.exp(high)))
    assert ratio in checked.text()
