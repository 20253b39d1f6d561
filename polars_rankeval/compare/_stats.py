"""The tests' statistics: p-values, intervals and effect sizes of paired differences.

Every function takes plain numpy arrays (``d`` = system − baseline per query, or a queries ×
systems matrix for Tukey), so the tests are checked here against scipy and hand-worked values
without building a comparison.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

_ZERO = 1e-12  # |d| below this (relative to the values) is a tie
_EXTREME = 1e-9  # resampled statistics this close (relative to Σ|d|) are "as extreme"
_CHUNK_CELLS = 4_000_000  # resamples × queries held at once


def _scipy_stats() -> Any:
    try:
        from scipy import stats  # type: ignore[import-untyped]  # the stats extra
    except ImportError as error:
        msg = (
            "compare() needs scipy for the distributions of its tests: "
            'pip install "polars-rankeval[stats]"'
        )
        raise ImportError(msg) from error
    return stats


# ---------------------------------------------------------------------------------------------
# Resampling tests
# ---------------------------------------------------------------------------------------------


def _rng(seed: int, n: int) -> np.random.Generator:
    # One stream per (seed, number of queries): a pair's p-value does not depend on which
    # other pairs share the call.
    return np.random.default_rng([seed, n])


def _chunks(total: int, n: int) -> list[int]:
    size = max(1, _CHUNK_CELLS // max(n, 1))
    return [min(size, total - start) for start in range(0, total, size)]


def randomization_p(d: np.ndarray, n_resamples: int, seed: int) -> float:
    """Fisher's paired randomization (sign-flip) test of mean(d) = 0, two-sided.

    Exact over all ``2^n`` sign vectors when that is at most ``n_resamples``; otherwise Monte
    Carlo over ``n_resamples`` random sign vectors with ``p = (count + 1) / (B + 1)``.

    Examples
    --------
    >>> randomization_p(np.array([1.0, 2.0, 3.0]), 10_000, 0)  # 2 of the 8 sign vectors
    0.25
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
    return np.asarray((count + 1.0) / (n_resamples + 1.0), dtype=np.float64)


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
    """Percentile interval and shifted-bootstrap p for each column."""
    means = bootstrap_means(differences, n_resamples, seed)
    observed = differences.mean(axis=0)
    low = np.quantile(means, alpha / 2, axis=0)
    high = np.quantile(means, 1 - alpha / 2, axis=0)
    tolerance = _EXTREME * np.abs(differences).sum(axis=0) / differences.shape[0]
    # Resampling d − mean(d) with the same weights shifts every mean by mean(d).
    shifted = np.abs(means - observed[None, :])
    count = (shifted >= np.abs(observed)[None, :] - tolerance[None, :]).sum(axis=0)
    return low, high, (count + 1.0) / (n_resamples + 1.0)


def tukey_hsd_p(scores: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """Randomized Tukey HSD p-values (``m × m``) for an ``n × m`` matrix of paired scores.

    In each trial the ``m`` scores of every query are permuted; the statistic is the range
    (largest minus smallest) of the system means. ``p_ij`` is the share of trials whose range
    is at least ``|mean_i − mean_j|``. Exact over all ``(m!)^n`` arrangements when that is at
    most ``n_resamples``; otherwise Monte Carlo, counting the observed arrangement as one trial
    (``(count + 1) / (B + 1)``).

    Examples
    --------
    >>> p = tukey_hsd_p(np.array([[1.0, 0.0], [1.0, 0.0]]), 10_000, 0)
    >>> float(p[0, 1])  # 4 arrangements; the range of the means reaches 1 in 2 of them
    0.5
    """
    n, m = scores.shape
    sums = scores.sum(axis=0)
    gaps = np.abs(sums[:, None] - sums[None, :])
    tolerance = _EXTREME * max(float(np.abs(scores).sum()), 1e-300)
    orders = np.array(list(itertools.permutations(range(m))))
    if n * math.log(len(orders)) <= math.log(n_resamples):
        ranges = []
        for choice in itertools.product(range(len(orders)), repeat=n):
            permuted = scores[np.arange(n)[:, None], orders[list(choice)]]
            column = permuted.sum(axis=0)
            ranges.append(column.max() - column.min())
        stats = np.array(ranges)
        count = (stats[:, None, None] >= gaps[None, :, :] - tolerance).sum(axis=0)
        return np.asarray(count / len(stats), dtype=np.float64)
    rng = _rng(seed, n)
    count = np.zeros((m, m))
    for size in _chunks(n_resamples, n * m):
        shuffled = rng.permuted(np.broadcast_to(scores, (size, n, m)), axis=2)
        column = shuffled.sum(axis=1)
        stats = column.max(axis=1) - column.min(axis=1)
        count += (stats[:, None, None] >= gaps[None, :, :] - tolerance).sum(axis=0)
    return np.asarray((count + 1.0) / (n_resamples + 1.0), dtype=np.float64)


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
    if d.size < 2:
        return math.nan
    if _constant(d):
        # No variance: identical systems give no evidence (scipy: NaN); a constant non-zero
        # difference is certain (scipy: t = ±inf, p = 0).
        return 1.0 if not d.any() else 0.0
    return float(stats.ttest_1samp(d, 0.0).pvalue)


def _wilcoxon_p(d: np.ndarray, stats: Any) -> float:
    if d.size == 0:
        return math.nan
    if not d.any():
        return 1.0
    return float(stats.wilcoxon(d).pvalue)


def _sign_p(d: np.ndarray, stats: Any) -> float:
    wins, losses = int((d > 0).sum()), int((d < 0).sum())
    if d.size == 0:
        return math.nan
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
