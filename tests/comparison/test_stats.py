"""The statistics of :mod:`polars_rankeval.comparison._stats` against independent references.

* the smallest p-value of every test at n = 1, 2, 3 and 5 queries against a hand enumeration of
  the exact randomization (sign-flip) distribution, and the bootstrap's former false positives
  (audit F1: one query p = 0.0001);
* the Monte Carlo randomization formula ``(count + 1) / (B + 1)`` and the t-test on a constant
  non-zero difference (the audit's surviving mutants M04 and M02);
* the randomized Tukey HSD against a brute-force enumeration of all within-query permutations,
  its Monte Carlo estimate within sampling error of it, its floor, and its memory at 12 and 17
  systems (audit F7, the trial's OOM at 17 systems);
* the parametric Tukey HSD against Sakai's textbook Table 5.1 (as tested in kampersanda/elinor),
  statsmodels' two-way ANOVA and scipy's paired t-test (two systems).
"""

from __future__ import annotations

import itertools
import math
import tracemalloc
import warnings

import numpy as np
import pytest

from polars_rankeval.comparison._stats import (
    _bootstrap,
    _sign_p,
    _t_p,
    _wilcoxon_p,
    randomization_p,
    randomization_ps,
    tukey_hsd_p,
    tukey_hsd_parametric_p,
    two_way_anova,
)

stats = pytest.importorskip("scipy.stats")

# Differences of one sign and distinct sizes: the most extreme data n queries can give.
ONE_SIGN = {
    1: [0.1],
    2: [0.1, 0.3],
    3: [0.1, 0.3, 0.2],
    5: [0.1, 0.3, 0.2, 0.05, 0.4],
}


def _exact_randomization(d: np.ndarray) -> float:
    """Brute force: the share of the 2^n sign vectors whose |sum| is at least the observed."""
    observed = abs(d.sum())
    hits = 0
    for signs in itertools.product((1.0, -1.0), repeat=d.size):
        hits += abs((np.array(signs) * d).sum()) >= observed - 1e-12
    return hits / 2**d.size


def _exact_signed_rank(d: np.ndarray) -> float:
    """Brute force: the signed-rank sum's sign-flip distribution (zeros dropped, midranks)."""
    d = d[d != 0]
    ranks = stats.rankdata(np.abs(d))
    observed = abs(float(np.sign(d) @ ranks))
    hits = sum(
        abs(float(np.array(signs) @ ranks)) >= observed - 1e-12
        for signs in itertools.product((1.0, -1.0), repeat=d.size)
    )
    return hits / 2**d.size


# ---------------------------------------------------------------------------------------------
# Floors: no p below what the exact null distribution gives for n queries
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", sorted(ONE_SIGN))
def test_hand_enumeration_of_one_signed_differences_is_two_to_one_minus_n(n: int) -> None:
    # The references below rest on this: only the all-plus and all-minus vectors reach |Σd|.
    d = np.array(ONE_SIGN[n])
    assert _exact_randomization(d) == 2 / 2**n
    assert _exact_signed_rank(d) == 2 / 2**n


@pytest.mark.parametrize("n", sorted(ONE_SIGN))
def test_bootstrap_p_is_never_below_the_exact_randomization_p(n: int) -> None:
    # Audit F1: the shifted bootstrap gave p = 1/(B+1) = 0.0001 from 1, 2, 3 and 5 queries.
    d = np.array(ONE_SIGN[n])
    low, high, p = _bootstrap(d[:, None], 10_000, 0, 0.05)
    assert p[0] == _exact_randomization(d)
    assert low[0] <= d.mean() <= high[0]


@pytest.mark.parametrize(
    ("d", "want"),
    [([0.1, 0.0, 0.0], 1.0), ([0.1, 0.0, 0.3, 0.0], 0.5), ([0.2, 0.0, 0.1, 0.0, 0.3], 0.25)],
)
def test_bootstrap_floor_counts_only_non_tied_queries(d: list[float], want: float) -> None:
    # Ties carry no sign: [0.1, 0, 0] is one informative query, so p = 1 as with one query;
    # want = 2^(1−k) for k non-zero one-signed differences, checked by enumeration first.
    array = np.array(d)
    assert _exact_randomization(array) == want
    assert _bootstrap(array[:, None], 10_000, 0, 0.05)[2][0] >= want


@pytest.mark.parametrize("n", sorted(ONE_SIGN))
@pytest.mark.parametrize("resamples", [1, 3, 7, 31, 10_000])
def test_randomization_p_never_below_the_exact_minimum(n: int, resamples: int) -> None:
    # With 2^n > B the Monte Carlo branch runs: with B = 2^n − 1 draws that miss the two extreme
    # sign vectors, (0 + 1)/2^n would be half the exact p. Several seeds make a miss certain.
    d = np.array(ONE_SIGN[n])
    exact = _exact_randomization(d)
    for seed in range(20):
        p = randomization_p(d, resamples, seed)
        assert p >= exact
        if 2**n <= resamples:
            assert p == exact


def test_randomization_ps_floors_each_column_by_its_own_ties() -> None:
    d = np.array([[0.1, 0.1], [0.3, 0.0], [0.2, 0.0], [0.4, 0.0], [0.5, 0.0]])
    # Monte Carlo (2^5 > 4 draws): column 0 has 5 informative queries, column 1 one.
    p = randomization_ps(d, 4, 0)
    assert p[0] >= 2 / 2**5
    assert p[1] == 1.0


@pytest.mark.parametrize("n", sorted(ONE_SIGN))
def test_wilcoxon_and_sign_are_exact_at_small_n(n: int) -> None:
    d = np.array(ONE_SIGN[n])
    assert _wilcoxon_p(d, stats) == pytest.approx(_exact_signed_rank(d), rel=1e-12)
    assert _sign_p(d, stats) == pytest.approx(2 / 2**n, rel=1e-12)  # binomial: hand-worked


@pytest.mark.parametrize(
    "d",
    [[0.1, 0.1, 0.2, 0.3, 0.4], [0.1, 0.0, 0.2, 0.2, -0.3], [0.2, 0.2, 0.2, 0.2, 0.2, 0.2]],
)
def test_wilcoxon_with_ties_or_zeros_is_the_exact_permutation_distribution(d: list[float]) -> None:
    array = np.array(d)
    assert _wilcoxon_p(array, stats) == pytest.approx(_exact_signed_rank(array), rel=1e-9)


def test_wilcoxon_guard_raises_a_normal_approximation_to_the_floor() -> None:
    class TooSmall:
        @staticmethod
        def wilcoxon(d: np.ndarray) -> object:
            class Result:
                pvalue = 1e-9

            return Result()

    d = np.array([0.1, 0.2, 0.0, 0.3])  # three informative queries: at least 2/8
    assert _wilcoxon_p(d, TooSmall()) == 0.25


def test_one_query_is_never_evidence() -> None:
    d = np.array([0.1])
    assert randomization_p(d, 10_000, 0) == 1.0
    assert randomization_p(d, 1, 0) == 1.0  # Monte Carlo branch
    assert _bootstrap(d[:, None], 10_000, 0, 0.05)[2][0] == 1.0
    assert _wilcoxon_p(d, stats) == 1.0
    assert _sign_p(d, stats) == 1.0
    assert math.isnan(_t_p(d, stats))
    scores = np.array([[0.5, 0.6, 0.1]])
    assert np.all(tukey_hsd_p(scores, 10_000, 0) == 1.0)
    assert np.all(tukey_hsd_p(scores, 1, 0) == 1.0)
    assert np.all(np.isnan(tukey_hsd_parametric_p(scores)))


# ---------------------------------------------------------------------------------------------
# The t-test on a constant difference (M02) and the Monte Carlo formula (M04)
# ---------------------------------------------------------------------------------------------


def test_t_on_a_constant_non_zero_difference_is_zero_as_scipy() -> None:
    exact = np.array([0.5, 0.5, 0.5, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # scipy: "nearly identical" data
        want = stats.ttest_1samp(exact, 0.0).pvalue  # scipy: sd 0, t = inf
    assert want == 0.0
    assert _t_p(exact, stats) == want
    # Differences of decimals are not exactly equal (0.6 − 0.4 != 0.4 − 0.2): still constant.
    noisy = np.array([0.6 - 0.4, 0.4 - 0.2, 0.9 - 0.7])
    assert np.ptp(noisy) > 0
    assert _t_p(noisy, stats) == 0.0
    assert _t_p(-noisy, stats) == 0.0
    assert _t_p(np.zeros(4), stats) == 1.0


@pytest.mark.parametrize("n", [2, 3, 5])
def test_t_at_small_n_against_scipy(n: int) -> None:
    d = np.array(ONE_SIGN[n])
    assert _t_p(d, stats) == pytest.approx(stats.ttest_1samp(d, 0.0).pvalue, rel=1e-12)


def test_monte_carlo_randomization_counts_the_observed_draw() -> None:
    # 20 one-signed differences: 2 of the 2^20 sign vectors reach |Σd|, so 1,000 random draws
    # (seeded) hit none and p = (0 + 1) / (1000 + 1); count / B would say 0.
    d = np.arange(1.0, 21.0)
    assert _exact_randomization(d[:12]) == 2 / 2**12  # the pattern, checked where it is cheap
    assert randomization_p(d, 1_000, 0) == 1 / 1_001
    assert _bootstrap(d[:, None], 1_000, 0, 0.05)[2][0] == 1 / 1_001


def test_monte_carlo_randomization_within_sampling_error_of_exact() -> None:
    d = np.random.default_rng(5).normal(0.03, 0.1, 14).round(2)
    exact = _exact_randomization(d)
    found = randomization_p(d, 4_000, 1)  # 2^14 = 16,384 > 4,000: Monte Carlo
    assert abs(found - exact) <= 4 * math.sqrt(exact * (1 - exact) / 4_000) + 2 / 4_000


# ---------------------------------------------------------------------------------------------
# Randomized Tukey HSD
# ---------------------------------------------------------------------------------------------


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
    return np.asarray((found[:, None, None] >= gaps[None, :, :] - 1e-12).mean(axis=0))


@pytest.mark.parametrize(
    "scores",
    [
        [[0.5, 0.25, 0.0], [0.75, 0.5, 0.5], [1.0, 0.25, 0.75], [0.5, 0.5, 0.0]],  # with ties
        [[0.9, 0.1], [0.8, 0.3], [0.7, 0.2], [0.6, 0.6], [0.4, 0.5], [0.3, 0.0]],
        [[0.4, 0.3, 0.2, 0.1], [0.3, 0.4, 0.1, 0.0]],
    ],
)
def test_tukey_exact_branch_is_brute_force_enumeration(scores: list[list[float]]) -> None:
    array = np.array(scores)
    n, m = array.shape
    assert math.factorial(m) ** n <= 10_000  # the exact branch
    assert tukey_hsd_p(array, 10_000, 0) == pytest.approx(_exact_tukey(array), abs=1e-12)


def test_tukey_monte_carlo_within_sampling_error_of_exact_and_seeded() -> None:
    scores = np.random.default_rng(4).integers(0, 5, (6, 3)) / 4  # (3!)^6 = 46,656
    exact = _exact_tukey(scores)
    sampled = tukey_hsd_p(scores, 4_000, 1)
    error = 4 * np.sqrt(exact * (1 - exact) / 4_000) + 2 / 4_000
    assert np.all(np.abs(sampled - exact) <= error)
    assert np.array_equal(tukey_hsd_p(scores, 4_000, 1), sampled)
    assert not np.array_equal(tukey_hsd_p(scores, 4_000, 2), sampled)


@pytest.mark.parametrize(
    "scores",
    [
        [[1.0, 0.0], [0.9, 0.1], [0.8, 0.2]],  # (2!)^3 = 8 arrangements
        [[1.0, 0.5, 0.0], [0.9, 0.45, 0.0]],  # (3!)^2 = 36 arrangements
    ],
)
def test_tukey_monte_carlo_never_below_the_exact_minimum(scores: list[list[float]]) -> None:
    # Well separated systems: the extreme pair's exact p is the minimum, m!/(m!)^n. With one
    # draw fewer than there are arrangements, (count + 1)/(B + 1) falls below it whenever the
    # draws miss the extreme arrangements (about one seed in seven), unless it is floored.
    array = np.array(scores)
    n, m = array.shape
    exact = _exact_tukey(array)
    smallest = math.factorial(m) / math.factorial(m) ** n
    assert exact.min() == pytest.approx(smallest)
    resamples = math.factorial(m) ** n - 1  # Monte Carlo
    for seed in range(50):
        assert tukey_hsd_p(array, resamples, seed).min() >= smallest - 1e-12


def test_tukey_monte_carlo_counts_the_observed_arrangement() -> None:
    # 20 queries ranking three systems alike: only 3! of the (3!)^20 arrangements reach the
    # observed range, so 200 draws hit none and p = (0 + 1)/(200 + 1); count / B would say 0.
    scores = np.tile([1.0, 0.5, 0.0], (20, 1)) + np.linspace(0, 0.1, 20)[:, None]
    assert tukey_hsd_p(scores, 200, 0)[0, 2] == 1 / 201


def test_tukey_one_query_builds_no_permutation_table() -> None:
    # (9!)^1 = 362,880 ≤ B would be the exact branch; one query gives p = 1 without it.
    scores = np.random.default_rng(0).random((1, 9))
    tracemalloc.start()
    p = tukey_hsd_p(scores, 10**6, 0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert np.all(p == 1.0)
    assert peak < 5 * 2**20


@pytest.mark.parametrize("m", [12, 17])
def test_tukey_many_systems_is_memory_safe(m: int) -> None:
    # The old code built all m! permutations: 12 systems needed ~60 GB, 17 were OOM-killed.
    scores = np.random.default_rng(m).random((100, m))
    tracemalloc.start()
    p = tukey_hsd_p(scores, 300, 0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 200 * 2**20
    assert p.shape == (m, m)
    assert np.all((p > 0) & (p <= 1))
    assert np.all(np.diag(p) == 1.0)


# ---------------------------------------------------------------------------------------------
# Parametric Tukey HSD over the two-way ANOVA without replication
# ---------------------------------------------------------------------------------------------

# Sakai, 情報アクセス評価方法論 (2015), Table 5.1: 20 topics × 3 systems, as in
# kampersanda/elinor src/statistical_tests/{two_way_anova_without_replication,tukey_hsd_test}.rs.
SAKAI_A = [0.70, 0.30, 0.20, 0.60, 0.40, 0.40, 0.00, 0.70, 0.10, 0.30]
SAKAI_A += [0.50, 0.40, 0.00, 0.60, 0.50, 0.30, 0.10, 0.50, 0.20, 0.10]
SAKAI_B = [0.50, 0.10, 0.00, 0.20, 0.40, 0.30, 0.00, 0.50, 0.30, 0.30]
SAKAI_B += [0.40, 0.40, 0.10, 0.40, 0.20, 0.10, 0.10, 0.60, 0.30, 0.20]
SAKAI_C = [0.00, 0.00, 0.20, 0.10, 0.30, 0.30, 0.10, 0.20, 0.40, 0.40]
SAKAI_C += [0.40, 0.30, 0.30, 0.20, 0.20, 0.20, 0.10, 0.50, 0.40, 0.30]
SAKAI = np.column_stack([SAKAI_A, SAKAI_B, SAKAI_C])


def test_two_way_anova_against_sakai_table_5_1() -> None:
    anova = two_way_anova(SAKAI)
    assert anova.system_ss == pytest.approx(0.1083, abs=1e-4)  # S_A
    assert anova.topic_ss == pytest.approx(1.0293, abs=1e-4)  # S_B
    assert anova.residual_ss == pytest.approx(0.8317, abs=1e-4)  # S_E
    assert anova.df_residual == 38
    assert anova.residual_variance == pytest.approx(0.0219, abs=1e-4)  # V_E
    f_systems = (anova.system_ss / 2) / anova.residual_variance
    assert f_systems == pytest.approx(2.475, abs=1e-3)
    assert stats.f.sf(f_systems, 2, 38) == pytest.approx(0.098, abs=1e-3)


def test_parametric_tukey_against_sakai_effect_sizes() -> None:
    # Sakai's ES_ij = (mean_i − mean_j) / sqrt(V_E), so q_ij = |ES_ij| · sqrt(n): the p-values
    # follow from the published effect sizes and scipy's studentized range alone.
    published = {(0, 1): 0.5070, (0, 2): 0.6760, (1, 2): 0.1690}
    p = tukey_hsd_parametric_p(SAKAI)
    for (i, j), effect in published.items():
        want = stats.studentized_range.sf(effect * math.sqrt(20), 3, 38)
        # ES is published to 4 decimals: ±5e-5 moves q by 2.2e-4 and p by less than 1e-4.
        assert p[i, j] == pytest.approx(want, abs=1e-4)
        assert p[j, i] == p[i, j]
    assert np.all(np.diag(p) == 1.0)
    # As Sakai's ANOVA F test (p = 0.098), no pair reaches 5%; A vs C comes closest.
    assert 0.05 < p[0, 2] < p[0, 1] < p[1, 2]


def test_parametric_tukey_residual_against_statsmodels_two_way_anova() -> None:
    pd = pytest.importorskip("pandas")
    smf = pytest.importorskip("statsmodels.formula.api")
    anova_lm = pytest.importorskip("statsmodels.stats.anova").anova_lm
    scores = np.random.default_rng(8).beta(2, 5, (30, 4))
    n, m = scores.shape
    frame = pd.DataFrame(
        {
            "y": scores.ravel(),
            "topic": np.repeat(np.arange(n), m),
            "system": np.tile(np.arange(m), n),
        }
    )
    table = anova_lm(smf.ols("y ~ C(system) + C(topic)", data=frame).fit())
    residual = table.loc["Residual"]
    assert residual["df"] == (m - 1) * (n - 1)
    means = frame.groupby("system")["y"].mean().to_numpy()
    q = np.abs(means[:, None] - means[None, :]) / math.sqrt(residual["mean_sq"] / n)
    want = stats.studentized_range.sf(q[np.triu_indices(m, 1)], m, residual["df"])
    found = tukey_hsd_parametric_p(scores)[np.triu_indices(m, 1)]
    assert found == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_parametric_tukey_with_two_systems_is_the_paired_t_test(seed: int) -> None:
    # With m = 2 the studentized range is √2·|t| on (n − 1) df: Tukey HSD = paired t-test.
    rng = np.random.default_rng(seed)
    x = rng.random(25)
    y = x + rng.normal(0.05, 0.1, 25)
    p = tukey_hsd_parametric_p(np.column_stack([x, y]))
    assert p[0, 1] == pytest.approx(stats.ttest_rel(x, y).pvalue, rel=1e-6)


def test_parametric_tukey_without_residual_variance() -> None:
    # Every topic moves all systems alike: zero residual. A gap is certain, no gap is not.
    scores = np.array([[0.1, 0.3, 0.3], [0.4, 0.6, 0.6], [0.2, 0.4, 0.4]])
    p = tukey_hsd_parametric_p(scores)
    assert p[0, 1] == 0.0
    assert p[1, 2] == 1.0
