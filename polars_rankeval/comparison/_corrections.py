"""Multiple-testing corrections of one family of p-values."""

from __future__ import annotations

from typing import Literal

import numpy as np

Correction = Literal["bonferroni", "holm", "fdr_bh"]


def adjust(p_values: np.ndarray, correction: Correction | None) -> np.ndarray:
    """Adjusted p-values of one family (NaN p-values stay NaN and are not counted).

    Examples
    --------
    >>> adjust(np.array([0.01, 0.04, 0.03]), "holm").round(4).tolist()
    [0.03, 0.06, 0.06]
    >>> adjust(np.array([0.01, 0.04, 0.03]), "fdr_bh").round(4).tolist()
    [0.03, 0.04, 0.04]
    """
    adjusted = np.array(p_values, dtype=np.float64)
    valid = ~np.isnan(adjusted)
    p = adjusted[valid]
    m = p.size
    if correction is None or m == 0:
        return adjusted
    order = np.argsort(p, kind="stable")
    ranked = p[order]
    if correction == "bonferroni":
        result = np.minimum(1.0, p * m)
    elif correction == "holm":
        steps = np.maximum.accumulate((m - np.arange(m)) * ranked)
        result = np.empty(m)
        result[order] = np.minimum(1.0, steps)
    else:
        steps = np.minimum.accumulate((m / np.arange(m, 0, -1)) * ranked[::-1])[::-1]
        result = np.empty(m)
        result[order] = np.minimum(1.0, steps)
    adjusted[valid] = result
    return adjusted


def adjust_family(
    p_values: np.ndarray, metrics: np.ndarray, correction: Correction | None, per_metric: bool
) -> np.ndarray:
    """Adjusted p-values of every comparison of a call: one family, or one per metric.

    ``metrics`` holds each p-value's metric; with ``per_metric`` each metric's p-values are
    their own family (``correction_scope="metric"``), across every system pair and segment.

    Examples
    --------
    >>> p = np.array([0.01, 0.04, 0.03])
    >>> adjust_family(p, np.array(["a", "b", "a"]), "holm", per_metric=True).round(4).tolist()
    [0.02, 0.04, 0.03]
    """
    if not per_metric:
        return adjust(p_values, correction)
    adjusted = np.array(p_values, dtype=np.float64)
    for metric in dict.fromkeys(metrics.tolist()):
        mask = metrics == metric
        adjusted[mask] = adjust(adjusted[mask], correction)
    return adjusted
