"""The statistics of every pair of one table: p-values, intervals, means, wins and losses.

One table is one call of :func:`~polars_rankeval.comparison.compare_per_query`, or one segment of
it with ``within=``; the rows come back before the multiple-testing correction, which runs
over the whole family in :mod:`polars_rankeval.comparison`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import polars as pl

from polars_rankeval._engine.meaning import on_test_scale, summarise
from polars_rankeval.comparison._pairing import Missing, Pair, Table, all_systems, overall, pairs
from polars_rankeval.comparison._stats import (
    _bootstrap,
    _effect_size,
    _scipy_stats,
    _sign_p,
    _t_interval,
    _t_p,
    _wilcoxon_p,
    randomization_ps,
    tukey_hsd_half_width,
    tukey_hsd_p,
    tukey_hsd_parametric_p,
)

Test = Literal["t", "wilcoxon", "sign", "randomization", "bootstrap", "tukey", "tukey_hsd"]
#: Tests over all systems at once, whose p-values control the family-wise error themselves.
MULTI_SYSTEM_TESTS: tuple[Test, ...] = ("tukey", "tukey_hsd")


@dataclass(frozen=True)
class _Plan:
    """The test settings of one call."""

    test: Test
    alpha: float
    n_resamples: int
    seed: int
    missing: Missing


def _by_size(pairs: list[Pair]) -> dict[int, list[int]]:
    """Pair indices grouped by their number of queries (resampling draws are shared)."""
    groups: dict[int, list[int]] = {}
    for index, pair in enumerate(pairs):
        groups.setdefault(pair.x.size, []).append(index)
    return groups


def _p_values(
    pairs: list[Pair], plan: _Plan, joint: _Joint | None
) -> tuple[list[float], list[tuple[float, float]]]:
    """Each pair's p-value and interval of the mean difference."""
    stats = _scipy_stats()
    differences = [pair.differences for pair in pairs]
    intervals = [_t_interval(d, plan.alpha, stats) for d in differences]
    one_at_a_time = {"t": _t_p, "wilcoxon": _wilcoxon_p, "sign": _sign_p}
    if plan.test in one_at_a_time:
        return [one_at_a_time[plan.test](d, stats) for d in differences], intervals
    if plan.test in MULTI_SYSTEM_TESTS:
        assert joint is not None
        shown = [
            own if own is not None else t_interval
            for own, t_interval in zip(joint.intervals, intervals, strict=True)
        ]
        return list(joint.p_values), shown
    p_values = [math.nan] * len(pairs)
    for n, indices in _by_size(pairs).items():
        if n == 0:
            continue
        matrix = np.column_stack([differences[i] for i in indices])
        if plan.test == "randomization":
            found = randomization_ps(matrix, plan.n_resamples, plan.seed)
        else:
            low, high, found = _bootstrap(matrix, plan.n_resamples, plan.seed, plan.alpha)
            for position, i in enumerate(indices):
                intervals[i] = (float(low[position]), float(high[position]))
        for i, p in zip(indices, found, strict=True):
            p_values[i] = float(p)
    return p_values, intervals


@dataclass(frozen=True)
class _Joint:
    """What a test over all systems at once gives each pair: its p and, maybe, its interval."""

    p_values: list[float]
    intervals: list[tuple[float, float] | None]


def _multi_system_pairs(
    table: Table, baseline: str | None, plan: _Plan
) -> tuple[list[Pair], _Joint]:
    """Pairs over the queries every system has, and their Tukey HSD p-values.

    The parametric Tukey HSD also gives Tukey's simultaneous intervals of the mean
    differences; the randomized one keeps the paired t-interval.
    """
    systems = table.systems
    found: list[Pair] = []
    joint = _Joint([], [])
    for metric in table.metrics:
        meaning = table.meanings[metric]
        scores, complete = all_systems(table, metric, plan.missing)
        matrix = scores[complete]
        p = np.full((len(systems), len(systems)), np.nan)
        half_width = math.nan
        if matrix.shape[0]:
            on_scale = on_test_scale(matrix, meaning.summary)
            if plan.test == "tukey":
                p = tukey_hsd_p(on_scale, plan.n_resamples, plan.seed)
            else:
                p = tukey_hsd_parametric_p(on_scale)
                half_width = tukey_hsd_half_width(on_scale, plan.alpha)
        for i, j in itertools.combinations(range(len(systems)), 2):
            if baseline is not None and baseline not in (systems[i], systems[j]):
                continue
            first, second = (j, i) if systems[j] == baseline else (i, j)
            either = ~np.isnan(scores[:, first]) | ~np.isnan(scores[:, second])
            found.append(
                Pair(
                    metric,
                    meaning,
                    systems[first],
                    systems[second],
                    matrix[:, first],
                    matrix[:, second],
                    int(either.sum() - complete.sum()),
                )
            )
            joint.p_values.append(float(p[first, second]))
            if plan.test == "tukey_hsd":
                centre = float(found[-1].differences.mean()) if matrix.shape[0] else math.nan
                joint.intervals.append((centre - half_width, centre + half_width))
            else:
                joint.intervals.append(None)
    return found, joint


def _rows(
    table: Table, pairs: list[Pair], plan: _Plan, joint: _Joint | None
) -> list[dict[str, Any]]:
    p_values, intervals = _p_values(pairs, plan, joint)
    totals = {metric: overall(table, metric, plan.missing) for metric in table.metrics}
    rows = []
    for pair, p, (low, high) in zip(pairs, p_values, intervals, strict=True):
        d = pair.differences
        n = d.size
        meaning = pair.meaning
        # Positive means "the system is better", whichever way the metric points.
        oriented = meaning.oriented(d)
        baseline_mean = summarise(pair.x, meaning.summary) if n else math.nan
        system_mean = summarise(pair.y, meaning.summary) if n else math.nan
        base_total, system_total = (
            totals[pair.metric][pair.baseline],
            totals[pair.metric][pair.system],
        )
        rows.append(
            {
                "metric": pair.metric,
                "baseline": pair.baseline,
                "system": pair.system,
                "higher_is_better": meaning.higher_is_better,
                "summary": meaning.summary,
                "n_queries": n,
                "n_dropped": pair.n_dropped,
                "baseline_mean": baseline_mean,
                "system_mean": system_mean,
                "delta": system_mean - baseline_mean,
                "ci_low": low,
                "ci_high": high,
                "effect_size": _effect_size(d),
                "p_value": p,
                "wins": int((oriented > 0).sum()),
                "ties": int((d == 0).sum()),
                "losses": int((oriented < 0).sum()),
                "test_scale": "log" if meaning.summary == "gm" else "value",
                "direction_source": meaning.source,
                "baseline_overall": base_total.value,
                "system_overall": system_total.value,
                "baseline_queries": base_total.queries,
                "system_queries": system_total.queries,
            }
        )
    return rows


def _raw(table: Table, baseline: str | None, plan: _Plan) -> pl.DataFrame:
    """The comparison rows of one table, before the correction (no ``p_adjusted`` yet)."""
    joint = None
    if plan.test in MULTI_SYSTEM_TESTS:
        found, joint = _multi_system_pairs(table, baseline, plan)
    else:
        found = pairs(table, baseline, plan.missing)
    return pl.DataFrame(
        _rows(table, found, plan, joint),
        schema_overrides={
            "p_value": pl.Float64,
            "higher_is_better": pl.Boolean,
            "baseline_overall": pl.Float64,
            "system_overall": pl.Float64,
        },
    )
