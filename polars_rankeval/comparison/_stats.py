"""The tests' statistics: p-values, intervals and effect sizes of paired differences.

Every function takes plain numpy arrays (``d`` = system − baseline per query, or a queries ×
systems matrix for Tukey), so the tests are checked here against scipy and hand-worked values
without building a comparison.

The smallest p-value each test can report
-----------------------------------------
No test reports a p-value below what its null distribution can produce with the queries at
hand. Below, ``k`` is the number of queries that carry information: for the paired tests the
queries whose difference is not a tie, for the randomized Tukey HSD the queries whose systems
do not all score the same.

* **randomization** and **bootstrap**: never below ``2^(1−k)``. Under the null hypothesis of the
  randomization test the ``2^k`` sign vectors of the non-zero differences are equally likely,
  and a two-sided statistic cannot tell ``d`` from ``−d``, so the most extreme outcome has
  probability ``2 · 2^(−k)``. The exact enumeration (used when ``2^n ≤ n_resamples``) never goes
  below it; the Monte Carlo p ``(count + 1) / (B + 1)`` and the shifted-bootstrap p are raised
  to it. The shifted bootstrap needs this most: with few queries no resampled mean reaches 0,
  so without the floor it returned ``1 / (B + 1)`` from one query.
  One query gives 1, two 0.5, three 0.25, five 0.0625, ten 0.00195.
* **tukey** (randomized Tukey HSD): never below ``(m!)^(1−k)`` for ``m`` systems. Relabelling
  the systems the same way in every query leaves the range of the system means unchanged, so
  at least ``m!`` of the ``(m!)^k`` equally likely arrangements are as extreme as the observed
  one. The exact enumeration (used when ``(m!)^n ≤ n_resamples``) never goes below it; the Monte
  Carlo p is raised to it. One query gives 1; with 3 systems two queries give 1/6.
* **sign**: scipy's ``binomtest`` is exact at every n, so its smallest p is ``2^(1−k)`` already.
* **wilcoxon**: scipy's ``wilcoxon`` (``method="auto"``) uses the exact null distribution of the
  signed-rank statistic for ``n ≤ 50`` without ties or zeros, the exact permutation
  distribution over all ``2^n`` sign vectors for ``n ≤ 13`` with ties or zeros, and the normal
  approximation otherwise. Its p is raised to ``2^(1−k)`` as well, a guard for the normal
  approximation (no data set we tried reached the floor there).
* **t** and **tukey_hsd** (parametric): the null distributions (Student's t, the studentized
  range) are continuous under the normal model, so there is no floor; they need two queries
  (one query: NaN, no degrees of freedom). A constant non-zero difference has zero variance
  and gives ``p = 0``, scipy's limit for ``t = ±inf``.

So one query gives ``p = 1`` for randomization, bootstrap, tukey, wilcoxon and sign, and NaN for
t and tukey_hsd: a single query is never significant.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, NamedTuple

import numpy as np

_ZERO = 1e-12  # |d| below this (relative to the values) is a tie
_EXTREME = 1e-9  # resampled statistics this close (relative to Σ|d|) are "as extreme"
_CHUNK_CELLS = 4_000_000  # resamples × queries (× systems for Tukey) held at once


def _scipy_stats(caller: str = "compare()") -> Any:
    """``scipy.stats``, or an ImportError naming ``caller`` and the ``stats`` extra."""
    try:
        from scipy import stats  # type: ignore[import-untyped]  # the stats extra
    except ImportError as error:
        msg = (
            f"{caller} needs scipy for the distributions of its tests: "
            'pip install "polars-rankeval[stats]"'
        )
        raise ImportError(msg) from error
    return stats


# ---------------------------------------------------------------------------------------------
# Floors: the smallest p-value an exact null distribution can give (module docstring)
# ---------------------------------------------------------------------------------------------


def sign_flip_floor(k: np.ndarray | int) -> np.ndarray:
    """``min(1, 2^(1−k))``: the smallest two-sided sign-flip p of ``k`` non-zero differences.

    Examples
    --------
    >>> sign_flip_floor(np.array([0, 1, 2, 3, 5])).tolist()
    [1.0, 1.0, 0.5, 0.25, 0.0625]
    """
    return np.minimum(1.0, np.exp2(1.0 - np.asarray(k, dtype=np.float64)))


def permutation_floor(m: int, k: int) -> float:
    """``min(1, (m!)^(1−k))``: the smallest exact randomized Tukey p (``k`` queries, ``m`` systems).

    Examples
    --------
    >>> round(permutation_floor(3, 2), 6), permutation_floor(3, 1), permutation_floor(17, 0)
    (0.166667, 1.0, 1.0)
    """
    if k <= 1:
        return 1.0
    return math.exp((1 - k) * math.lgamma(m + 1))


# ---------------------------------------------------------------------------------------------
# Resampling tests
# ---------------------------------------------------------------------------------------------


def _rng(seed: int, n: int) -> np.random.Generator:
    # One stream per (seed, number of queries): a pair's p-value does not depend on which
    # other pairs share the call.
    return np.random.default_rng([seed, n])


def _chunks(total: int, cells: int) -> list[int]:
    size = max(1, _CHUNK_CELLS // max(cells, 1))
    return [min(size, total - start) for start in range(0, total, size)]


def randomization_p(d: np.ndarray, n_resamples: int, seed: int) -> float:
    """Fisher's paired randomization (sign-flip) test of mean(d) = 0, two-sided.

    Exact over all ``2^n`` sign vectors when that is at most ``n_resamples``; otherwise Monte
    Carlo over ``n_resamples`` random sign vectors with ``p = (count + 1) / (B + 1)``, never
    below ``2^(1−k)`` for ``k`` non-zero differences (the exact distribution's smallest p).

    Examples
    --------
    >>> randomization_p(np.array([1.0, 2.0, 3.0]), 10_000, 0)  # 2 of the 8 sign vectors
    0.25
    >>> randomization_p(np.array([0.4]), 1, 0)  # Monte Carlo (2^1 > 1 draw), one query: 1
    1.0
    """
    return float(randomization_ps(d[:, None], n_resamples, seed)[0])


def randomization_ps(differences: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """:func:`randomization_p` for the columns of an ``n × P`` matrix, sharing the draws."""
    n = differences.shape[0]
    if n == 0:
        return np.full(differences.shape[1], np.nan)
    observed = np.abs(differences.sum(axis=0))
    tolerance = _EXTREME * np.abs(differences).sum(axis=0)
    total = differences.sum(axis=0)
    if n < 63 and 2**n <= n_resamples:
        # Every subset of flipped queries once: Σ s·d = total − 2·Σ_{flipped} d.
        count = np.zeros(differences.shape[1])
        start = 0
        for size in _chunks(2**n, n):
            codes = np.arange(start, start + size)
            start += size
            masks = ((codes[:, None] >> np.arange(n)[None, :]) & 1).astype(np.float64)
            stats = np.abs(total[None, :] - 2.0 * (masks @ differences))
            count += (stats >= observed[None, :] - tolerance[None, :]).sum(axis=0)
        return np.asarray(count / 2**n, dtype=np.float64)
    rng = _rng(seed, n)
    count = np.zeros(differences.shape[1])
    for size in _chunks(n_resamples, n):
        bits = np.unpackbits(
            np.frombuffer(rng.bytes(size * ((n + 7) // 8)), dtype=np.uint8).reshape(size, -1),
            axis=1,
            count=n,
        )
        flipped = bits.astype(np.float64) @ differences
        stats = np.abs(total[None, :] - 2.0 * flipped)
        count += (stats >= observed[None, :] - tolerance[None, :]).sum(axis=0)
    # The observed sign vector counts as one draw (a valid Monte Carlo p), and no p goes below
    # what the exact distribution can give: B random draws cannot know more than all 2^n.
    floor = sign_flip_floor(np.count_nonzero(differences, axis=0))
    return np.asarray(np.maximum(floor, (count + 1.0) / (n_resamples + 1.0)), dtype=np.float64)


def bootstrap_means(differences: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """``n_resamples × P`` means of the columns over queries resampled with replacement."""
    n = differences.shape[0]
    rng = _rng(seed, n)
    means = []
    for size in _chunks(n_resamples, n):
        picks = rng.integers(0, n, size=(size, n)) + (np.arange(size) * n)[:, None]
        weights = np.bincount(picks.ravel(), minlength=size * n).reshape(size, n)
        means.append(weights.astype(np.float64) @ differences / n)
    return np.vstack(means)


def _bootstrap(
    differences: np.ndarray, n_resamples: int, seed: int, alpha: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Percentile interval and shifted-bootstrap p for each column.

    The p is never below ``2^(1−k)`` for ``k`` non-zero differences: with few queries the
    shifted bootstrap is far too liberal (one query gave ``1 / (B + 1)``), and no test of a
    symmetric null can tell more from ``k`` differences than the exact sign-flip test.

    Examples
    --------
    >>> _bootstrap(np.array([[0.1], [0.3]]), 1_000, 0, 0.05)[2].tolist()  # randomization: 0.5
    [0.5]
    >>> _bootstrap(np.array([[0.1]]), 1_000, 0, 0.05)[2].tolist()  # one query: no evidence
    [1.0]
    """
    means = bootstrap_means(differences, n_resamples, seed)
    observed = differences.mean(axis=0)
    low = np.quantile(means, alpha / 2, axis=0)
    high = np.quantile(means, 1 - alpha / 2, axis=0)
    tolerance = _EXTREME * np.abs(differences).sum(axis=0) / differences.shape[0]
    # Resampling d − mean(d) with the same weights shifts every mean by mean(d).
    shifted = np.abs(means - observed[None, :])
    count = (shifted >= np.abs(observed)[None, :] - tolerance[None, :]).sum(axis=0)
    floor = sign_flip_floor(np.count_nonzero(differences, axis=0))
    return low, high, np.maximum(floor, (count + 1.0) / (n_resamples + 1.0))


# ---------------------------------------------------------------------------------------------
# Tukey HSD: randomized (permutation) and parametric (two-way ANOVA)
# ---------------------------------------------------------------------------------------------


def _count_at_least(ranges: np.ndarray, gaps: np.ndarray, tolerance: float) -> np.ndarray:
    """For each gap, how many ranges are at least it (minus the rounding tolerance)."""
    ordered = np.sort(ranges)
    below = np.searchsorted(ordered, gaps - tolerance, side="left")
    return np.asarray(ordered.size - below, dtype=np.float64)


def _tukey_exact_count(scores: np.ndarray, gaps: np.ndarray, tolerance: float) -> np.ndarray:
    """Over all ``(m!)^n`` within-query arrangements, lazily: memory O(chunk × m)."""
    n, m = scores.shape
    orders = np.array(list(itertools.permutations(range(m))))  # m! ≤ n_resamples rows
    factorial = len(orders)
    arranged = scores[:, orders]  # (n, m!, m): query q's scores under each order
    count = np.zeros_like(gaps)
    start, total = 0, factorial**n
    for size in _chunks(total, n * m):
        # Arrangement number c → one order per query: the digits of c in base m!.
        rest = np.arange(start, start + size, dtype=np.int64)
        start += size
        column = np.zeros((size, m))
        for query in range(n):
            rest, digit = np.divmod(rest, factorial)
            column += arranged[query, digit]
        count += _count_at_least(column.max(axis=1) - column.min(axis=1), gaps, tolerance)
    return np.asarray(count / total, dtype=np.float64)


def tukey_hsd_p(scores: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """Randomized Tukey HSD p-values (``m × m``) for an ``n × m`` matrix of paired scores.

    In each trial the ``m`` scores of every query are permuted; the statistic is the range
    (largest minus smallest) of the system means. ``p_ij`` is the share of trials whose range
    is at least ``|mean_i − mean_j|``. Exact over all ``(m!)^n`` arrangements when that is at
    most ``n_resamples`` (enumerated lazily); otherwise Monte Carlo in chunks (memory
    O(chunk × m), a fixed number of cells), counting the observed arrangement as one trial
    (``(count + 1) / (B + 1)``) and never below ``(m!)^(1−k)``, the exact distribution's
    smallest p for ``k`` queries whose scores are not all equal.

    Examples
    --------
    >>> p = tukey_hsd_p(np.array([[1.0, 0.0], [1.0, 0.0]]), 10_000, 0)
    >>> float(p[0, 1])  # 4 arrangements; the range of the means reaches 1 in 2 of them
    0.5
    >>> float(tukey_hsd_p(np.array([[1.0, 0.0, 0.5]]), 10_000, 0)[0, 1])  # one query
    1.0
    """
    n, m = scores.shape
    if n == 0:
        return np.full((m, m), np.nan)
    sums = scores.sum(axis=0)
    gaps = np.abs(sums[:, None] - sums[None, :])
    tolerance = _EXTREME * max(float(np.abs(scores).sum()), 1e-300)
    scale = max(1.0, float(np.abs(scores).max()))
    informative = int((np.ptp(scores, axis=1) > _ZERO * scale).sum())
    if informative <= 1:
        # Queries whose systems tie add the same to every mean: every arrangement has the range
        # of the one informative query (or none), so p = 1 (and no m! table for one query).
        return np.ones((m, m))
    if n * math.lgamma(m + 1) <= math.log(n_resamples) + 1e-9:
        return _tukey_exact_count(scores, gaps, tolerance)
    rng = _rng(seed, n)
    count = np.zeros((m, m))
    for size in _chunks(n_resamples, n * m):
        shuffled = rng.permuted(np.broadcast_to(scores, (size, n, m)), axis=2)
        column = shuffled.sum(axis=1)
        count += _count_at_least(column.max(axis=1) - column.min(axis=1), gaps, tolerance)
    floor = permutation_floor(m, informative)
    return np.maximum(floor, (count + 1.0) / (n_resamples + 1.0))


class TwoWayAnova(NamedTuple):
    """Two-way ANOVA without replication of an ``n × m`` (topics × systems) matrix.

    The sums of squares are Sakai's ``S_A`` (systems), ``S_B`` (topics) and ``S_E`` (residual);
    ``residual_variance`` is ``V_E = S_E / ((m − 1)(n − 1))``.
    """

    system_means: np.ndarray
    topic_means: np.ndarray
    system_ss: float
    topic_ss: float
    residual_ss: float
    df_residual: int

    @property
    def residual_variance(self) -> float:
        """``V_E``, the residual mean square (NaN without degrees of freedom)."""
        if self.df_residual <= 0:
            return math.nan
        return self.residual_ss / self.df_residual


def two_way_anova(scores: np.ndarray) -> TwoWayAnova:
    """The pieces of the two-way ANOVA without replication (systems × topics).

    Examples
    --------
    >>> anova = two_way_anova(np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 2.0]]))
    >>> anova.system_means.tolist(), anova.df_residual, round(anova.residual_variance, 4)
    ([1.5, 3.0, 2.5], 2, 1.1667)
    """
    n, m = scores.shape
    grand = float(scores.mean())
    systems = scores.mean(axis=0)
    topics = scores.mean(axis=1)
    residual = scores - systems[None, :] - topics[:, None] + grand
    return TwoWayAnova(
        system_means=systems,
        topic_means=topics,
        system_ss=float(n * ((systems - grand) ** 2).sum()),
        topic_ss=float(m * ((topics - grand) ** 2).sum()),
        residual_ss=float((residual**2).sum()),
        df_residual=(m - 1) * (n - 1),
    )


def tukey_hsd_parametric_p(scores: np.ndarray) -> np.ndarray:
    """Tukey HSD p-values (``m × m``) over the two-way ANOVA without replication.

    ``q_ij = |mean_i − mean_j| / sqrt(V_E / n)`` with ``V_E`` the residual mean square on
    ``(m − 1)(n − 1)`` degrees of freedom, and ``p_ij`` the studentized range's upper tail
    (scipy's ``studentized_range.sf(q, m, df)``): Sakai's Tukey HSD for paired (topic-blocked)
    scores. (ranx's ``stat_test="tukey"`` is scipy's ``tukey_hsd``, the one-way unpaired test,
    which ignores the topics.) NaN with fewer than two queries; with a residual of zero (every
    system differs from another by the same amount on every topic) a gap gives 0 and no gap 1.

    Examples
    --------
    >>> p = tukey_hsd_parametric_p(np.array([[0.2, 0.4], [0.5, 0.6], [0.1, 0.4]]))
    >>> round(float(p[0, 1]), 4)  # two systems: the paired t-test's p (scipy ttest_rel)
    0.0742
    """
    n, m = scores.shape
    if n < 2 or m < 2:
        return np.full((m, m), np.nan)
    anova = two_way_anova(scores)
    means = anova.system_means
    gaps = np.abs(means[:, None] - means[None, :])
    scale = max(1.0, float(np.abs(scores).max()))
    if anova.residual_ss <= (_ZERO * scale) ** 2 * n * m:
        # No residual variance: q = gap / 0. As for the t-test, a difference is certain.
        return np.where(gaps > _ZERO * scale, 0.0, 1.0)
    q = gaps / math.sqrt(anova.residual_variance / n)
    upper = np.triu_indices(m, k=1)
    p = np.ones((m, m))
    # studentized_range.sf integrates numerically (about 10 ms a value): once per pair.
    p[upper] = _scipy_stats().studentized_range.sf(q[upper], m, anova.df_residual)
    p.T[upper] = p[upper]
    return np.clip(p, 0.0, 1.0)


def tukey_hsd_half_width(scores: np.ndarray, alpha: float) -> float:
    """Half-width of Tukey's simultaneous ``1 − alpha`` intervals of ``mean_i − mean_j``.

    ``q_{1−alpha}(m, (m − 1)(n − 1)) · sqrt(V_E / n)``: every interval
    ``mean_i − mean_j ± half-width`` holds at once with probability ``1 − alpha``.

    Examples
    --------
    >>> scores = np.array([[0.2, 0.4], [0.5, 0.6], [0.1, 0.4]])
    >>> round(tukey_hsd_half_width(scores, 0.05), 4)  # two systems: the paired t interval's
    0.2484
    """
    n, m = scores.shape
    if n < 2 or m < 2:
        return math.nan
    anova = two_way_anova(scores)
    quantile = float(_scipy_stats().studentized_range.ppf(1 - alpha, m, anova.df_residual))
    return quantile * math.sqrt(anova.residual_variance / n)


# ---------------------------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------------------------


def _t_interval(d: np.ndarray, alpha: float, stats: Any) -> tuple[float, float]:
    n = d.size
    if n < 2:
        return math.nan, math.nan
    half = float(stats.t.ppf(1 - alpha / 2, n - 1)) * float(d.std(ddof=1)) / math.sqrt(n)
    mean = float(d.mean())
    return mean - half, mean + half


def _constant(d: np.ndarray) -> bool:
    """All differences equal, up to rounding (``0.6 − 0.4`` and ``0.4 − 0.2`` differ by 1 ulp)."""
    return bool(np.ptp(d) <= _ZERO * max(1.0, float(np.abs(d).max())))


def _t_p(d: np.ndarray, stats: Any) -> float:
    """Paired t-test p (scipy's ``ttest_1samp``); NaN below two queries.

    Examples
    --------
    >>> from scipy import stats
    >>> _t_p(np.array([0.2, 0.2, 0.2]), stats)  # constant non-zero: t = inf (as scipy)
    0.0
    >>> _t_p(np.array([0.5]), stats)
    nan
    """
    if d.size < 2:
        return math.nan
    if _constant(d):
        # No variance: identical systems give no evidence (scipy: NaN); a constant non-zero
        # difference is certain (scipy: t = ±inf, p = 0).
        return 1.0 if not d.any() else 0.0
    return float(stats.ttest_1samp(d, 0.0).pvalue)


def _wilcoxon_p(d: np.ndarray, stats: Any) -> float:
    """Wilcoxon signed-rank p (scipy, zeros dropped), never below ``2^(1−k)``."""
    if d.size == 0:
        return math.nan
    if not d.any():
        return 1.0
    floor = float(sign_flip_floor(int(np.count_nonzero(d))))
    return max(floor, float(stats.wilcoxon(d).pvalue))


def _sign_p(d: np.ndarray, stats: Any) -> float:
    """Exact two-sided sign test (scipy's ``binomtest``) over the non-tied queries."""
    if d.size == 0:
        return math.nan
    return sign_p(int((d > 0).sum()), int((d < 0).sum()), stats)


def sign_p(wins: int, losses: int, stats: Any) -> float:
    """Exact two-sided sign test (scipy's ``binomtest``, p = 1/2) of wins against losses.

    Ties are left out; no win and no loss is p = 1. ``compare``'s ``test="sign"`` and
    ``interleaving`` both ask it.
    """
    if wins + losses == 0:
        return 1.0
    return float(stats.binomtest(wins, wins + losses, 0.5).pvalue)


def _effect_size(d: np.ndarray) -> float:
    """mean(d) / sd(d): NaN when undefined, ±inf for a constant non-zero difference."""
    if d.size < 2:
        return math.nan
    mean = float(d.mean())
    if _constant(d):
        return math.nan if mean == 0 else math.copysign(math.inf, mean)
    return mean / float(d.std(ddof=1))
