"""Is system B better than A? Paired tests, intervals, effect sizes and corrections.

:func:`compare` evaluates per query and hands the per-query frame to :func:`compare_per_query`,
which works on any table with one row per ``(by, query)`` and one column per metric (ours, or
one written by another tool). Systems are the values of ``by``; they are compared **paired by
query**.

Every metric column carries its meaning (:mod:`polars_rankeval.meaning`): its direction and its
summary rule. Nothing here assumes "higher is better" or "mean":

* ``higher_is_better`` states each row's direction. ``wins``/``losses`` count the queries where
  the system is better/worse by that direction; ``delta`` stays ``system − baseline``.
* ``baseline_mean``/``system_mean`` are each system's summary over the paired queries (the
  geometric mean for ``gm_map``/``gm_bpref``, the NaN-free mean for correlations), and
  ``baseline_overall``/``system_overall`` its summary over all the queries it has a value for:
  what :func:`~polars_rankeval.evaluate` prints for it (with ``baseline_queries`` /
  ``system_queries``).
* A geometric mean is tested on its own scale: the logs of the per-query values (floored at
  trec_eval's 0.00001), so ``ci_low``/``ci_high`` and ``effect_size`` of such rows are on the
  log scale (``test_scale = "log"``).
* Counts (``num_rel_ret``: evaluate sums them), metrics with no direction (``num_q``) and
  per-system metrics are refused with a message: a paired per-query test does not apply.
* A column that is not one of our metrics is a higher-is-better mean unless declared with
  ``lower_is_better=``; ``direction_source`` says which (``"metric"``, ``"option"``,
  ``"assumed"``).

Statistics (``d`` = system − baseline per query on the test scale, ``n`` paired queries):

* ``effect_size`` = mean(d) / sd(d) (Cohen's d_z, Sakai's paired ES), signed system − baseline.
* ``test="t"``: paired Student t, two-sided (scipy ``ttest_rel``); ``"wilcoxon"``: signed-rank
  (scipy ``wilcoxon`` defaults); ``"sign"``: exact binomial on wins vs losses (``binomtest``);
  ``"randomization"``: Fisher's paired sign-flip test, exact when ``2^n <= n_resamples``, else
  Monte Carlo; ``"bootstrap"``: queries resampled with replacement, percentile interval and
  shifted-bootstrap p; ``"tukey"``: randomized Tukey HSD over all systems (scores permuted
  within each query; the statistic is the range of the system means); ``"tukey_hsd"``: the
  parametric Tukey HSD over the two-way ANOVA without replication (systems × queries), as
  ranx and Sakai's textbook. Both Tukey tests control the family-wise error themselves.
  No test reports a p-value below what its null distribution can produce for ``n`` queries
  (see :mod:`polars_rankeval.compare._stats`).
* ``ci_low``/``ci_high``: the interval of mean(d) at ``1 − alpha``: percentile bootstrap for
  ``"bootstrap"``, Tukey's simultaneous interval for ``"tukey_hsd"``, the paired t-interval for
  every other test.

Floating-point noise never decides a result: differences within ``1e-12`` of zero (relative to
the values) are ties, and resampled statistics within ``1e-9`` (relative to ``Σ|d|``) of the
observed one count as "at least as extreme". Infinite per-query values and two systems whose
``by`` values join to the same name are errors.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import polars as pl

from polars_rankeval._columns import as_polars
from polars_rankeval._options import check_choice
from polars_rankeval.compare._bootstrap import bootstrap as bootstrap
from polars_rankeval.compare._corrections import Correction, adjust
from polars_rankeval.compare._pairing import (
    SYSTEM_SEPARATOR as SYSTEM_SEPARATOR,
)
from polars_rankeval.compare._pairing import (
    Missing,
    Pair,
    Table,
    all_systems,
    check_pairable,
    overall,
    pairs,
    prepare,
    resolve_baseline,
)
from polars_rankeval.compare._power import discriminative_power as discriminative_power
from polars_rankeval.compare._power import queries_needed as queries_needed
from polars_rankeval.compare._stats import (
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
from polars_rankeval.compare._stats import (
    randomization_p as randomization_p,
)
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.evaluate import evaluate, settings_for
from polars_rankeval.meaning import LowerIsBetter, on_test_scale, summarise
from polars_rankeval.metrics._base import Metric
from polars_rankeval.registry import MetricRequest, resolve_metrics

Test = Literal["t", "wilcoxon", "sign", "randomization", "bootstrap", "tukey", "tukey_hsd"]
CorrectionScope = Literal["all", "metric"]

TESTS: tuple[Test, ...] = (
    *("t", "wilcoxon", "sign", "randomization", "bootstrap", "tukey", "tukey_hsd"),
)
#: Tests over all systems at once, whose p-values control the family-wise error themselves.
MULTI_SYSTEM_TESTS: tuple[Test, ...] = ("tukey", "tukey_hsd")
CORRECTIONS: tuple[Correction, ...] = ("bonferroni", "holm", "fdr_bh")
TEST_NAMES = {
    "t": "paired t-test",
    "wilcoxon": "Wilcoxon signed-rank test",
    "sign": "sign test",
    "randomization": "paired randomization test",
    "bootstrap": "paired bootstrap test",
    "tukey": "randomized Tukey HSD",
    "tukey_hsd": "Tukey HSD",
}
CORRECTION_NAMES = {"bonferroni": "Bonferroni", "holm": "Holm", "fdr_bh": "Benjamini-Hochberg"}

COLUMNS = [
    "metric",
    "baseline",
    "system",
    "higher_is_better",
    "summary",
    "n_queries",
    "n_dropped",
    "baseline_mean",
    "system_mean",
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
]


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


def _check_number(option: str, value: object, low: float, high: float | None = None) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value > low
    if ok and high is not None:
        ok = value < high  # type: ignore[operator]
    if not ok:
        bound = f"in ({low:g}, {high:g})" if high is not None else f"> {low:g}"
        msg = f"option {option}= must be a number {bound}, got {value!r}"
        raise InvalidOptionError(msg)


def compare_per_query(
    per_query: pl.DataFrame | pl.LazyFrame,
    *,
    by: str | Sequence[str],
    query: str = "query",
    metrics: Sequence[str] | None = None,
    baseline: object = None,
    test: Test = "t",
    correction: Correction | None = "holm",
    correction_scope: CorrectionScope = "all",
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int = 0,
    missing: Missing = "drop",
    lower_is_better: LowerIsBetter = None,
) -> pl.DataFrame:
    """Compare systems on any per-query table, paired by query.

    Parameters
    ----------
    per_query
        One row per ``(by, query)`` and one column per metric: the output of
        ``evaluate(..., per_query=True, by=...)``, or any tool's per-query table (a pandas
        DataFrame or pyarrow Table works too).
    by
        The column(s) whose values are the systems. With several columns a system is named by
        its values joined with ``" / "`` (e.g. ``"bm25 / 2024-06-01"``).
    query
        The query id column.
    metrics
        Metric columns to compare; None means every numeric column other than the keys.
        A column named like one of our metrics (``"map"``, ``"P_10"``, ``"gm_map"``,
        ``"frp"``) is compared by that metric's direction and summary rule; counts
        (``num_rel_ret``) and direction-less columns (``num_q``) are refused.
    baseline
        A system (a ``by`` value, or a tuple of values for several ``by`` columns): every
        other system is compared with it. None compares every pair.
    test
        ``"t"`` (default), ``"wilcoxon"``, ``"sign"``, ``"randomization"``, ``"bootstrap"`` or
        ``"tukey"`` (randomized) or ``"tukey_hsd"`` (parametric), see the module docstring.
    correction
        ``"holm"`` (default), ``"bonferroni"``, ``"fdr_bh"`` or None. Not applied to the
        Tukey tests, whose p-values already control the family-wise error.
    correction_scope
        ``"all"``: one family of every comparison in the call, across systems and metrics;
        ``"metric"``: one family per metric (as PyTerrier).
    alpha
        Significance level: ``significant`` is ``p_adjusted < alpha`` and the intervals are at
        ``1 − alpha``.
    n_resamples, seed
        Resamples of the randomization, bootstrap and Tukey tests, and their seed (results are
        reproducible; a pair's draws depend only on the seed and its number of queries).
    missing
        ``"drop"`` (default): a pair uses the queries both systems have a value for (Tukey:
        the queries every system has), and ``n_dropped`` counts the others. ``"zero"``: a
        query a system has no row for scores 0, as trec_eval ``-c`` does; undefined values
        (null, NaN) are still dropped.
    lower_is_better
        Columns of another tool's table whose lower values are better (a list), or a mapping
        ``{column: "higher" | "lower"}``. Any other column that is not one of our metrics is
        taken as a higher-is-better mean, and ``direction_source`` says ``"assumed"``.

    Returns
    -------
    pl.DataFrame
        One row per ``(metric, baseline, system)``: ``higher_is_better, summary`` (the
        metric's direction and summary rule), ``n_queries, n_dropped, baseline_mean,
        system_mean`` (each system's summary over the paired queries), ``delta`` (system −
        baseline), ``ci_low, ci_high`` (interval of the mean difference on the test scale),
        ``effect_size`` (mean(d)/sd(d)), ``p_value, p_adjusted, significant, wins, ties,
        losses`` (wins: the system is better by the metric's direction), ``test, test_scale``
        (``"log"`` for geometric means), ``missing, correction, alpha, direction_source``,
        and ``baseline_overall, system_overall, baseline_queries, system_queries``: each
        system's summary over all the queries it has a value for, as evaluate gives it.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> per_query = pl.DataFrame(
    ...     {
    ...         "system": ["a"] * 4 + ["b"] * 4,
    ...         "query": [1, 2, 3, 4] * 2,
    ...         "map": [0.2, 0.4, 0.1, 0.3, 0.3, 0.6, 0.1, 0.5],
    ...     }
    ... )
    >>> out = rke.compare_per_query(per_query, by="system", baseline="a", test="randomization")
    >>> out.select("system", "delta", "p_value", "wins", "ties", "losses")
    shape: (1, 6)
    ┌────────┬───────┬─────────┬──────┬──────┬────────┐
    │ system ┆ delta ┆ p_value ┆ wins ┆ ties ┆ losses │
    │ ---    ┆ ---   ┆ ---     ┆ ---  ┆ ---  ┆ ---    │
    │ str    ┆ f64   ┆ f64     ┆ i64  ┆ i64  ┆ i64    │
    ╞════════╪═══════╪═════════╪══════╪══════╪════════╡
    │ b      ┆ 0.125 ┆ 0.25    ┆ 3    ┆ 1    ┆ 0      │
    └────────┴───────┴─────────┴──────┴──────┴────────┘
    """
    plan, correction, correction_scope = _settings(
        test, correction, correction_scope, alpha, n_resamples, seed, missing
    )
    table = prepare(per_query, by, query, metrics, lower_is_better=lower_is_better)
    return _compare(table, baseline, plan, correction, correction_scope)


def _settings(  # noqa: PLR0917  (one call site, in compare's own keyword order)
    test: object,
    correction: object,
    correction_scope: object,
    alpha: object,
    n_resamples: object,
    seed: object,
    missing: object,
) -> tuple[_Plan, Correction | None, CorrectionScope]:
    """Check the options before anything is evaluated."""
    chosen_test: Test = check_choice("test", test, TESTS)
    chosen_correction: Correction | None = (
        None if correction is None else check_choice("correction", correction, CORRECTIONS)
    )
    scope: CorrectionScope = check_choice("correction_scope", correction_scope, ["all", "metric"])
    chosen_missing: Missing = check_choice("missing", missing, ["drop", "zero"])
    _check_number("alpha", alpha, 0.0, 1.0)
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 1:
        msg = f"option n_resamples= must be a positive int, got {n_resamples!r}"
        raise InvalidOptionError(msg)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        msg = f"option seed= must be a non-negative int, got {seed!r}"
        raise InvalidOptionError(msg)
    plan = _Plan(chosen_test, float(alpha), n_resamples, seed, chosen_missing)  # type: ignore[arg-type]
    return plan, chosen_correction, scope


def _compare(
    table: Table,
    baseline: object,
    plan: _Plan,
    correction: Correction | None,
    correction_scope: CorrectionScope,
) -> pl.DataFrame:
    chosen = resolve_baseline(baseline, table.systems)
    if len(table.systems) < 2:
        msg = f"compare needs at least two systems in by={table.keys}, found {table.systems}"
        raise InvalidOptionError(msg)
    joint = None
    if plan.test in MULTI_SYSTEM_TESTS:
        found, joint = _multi_system_pairs(table, chosen, plan)
    else:
        found = pairs(table, chosen, plan.missing)
    rows = _rows(table, found, plan, joint)
    frame = pl.DataFrame(
        rows,
        schema_overrides={
            "p_value": pl.Float64,
            "higher_is_better": pl.Boolean,
            "baseline_overall": pl.Float64,
            "system_overall": pl.Float64,
        },
    )
    p = frame["p_value"].to_numpy()
    corrected = plan.test not in MULTI_SYSTEM_TESTS and correction is not None
    if not corrected:
        adjusted = p.copy()
    elif correction_scope == "all":
        adjusted = adjust(p, correction)
    else:
        adjusted = p.copy()
        for metric in table.metrics:
            mask = (frame["metric"] == metric).to_numpy()
            adjusted[mask] = adjust(p[mask], correction)
    return frame.with_columns(
        pl.Series("p_adjusted", adjusted, dtype=pl.Float64),
        pl.Series("significant", np.nan_to_num(adjusted, nan=1.0) < plan.alpha, dtype=pl.Boolean),
        pl.lit(plan.test).alias("test"),
        pl.lit(plan.missing).alias("missing"),
        # Tukey's p-values control the family-wise error themselves: no correction applies.
        pl.lit(correction if corrected else "none").alias("correction"),
        pl.lit(plan.alpha).alias("alpha"),
    ).select(COLUMNS)


def compare(
    log: pl.DataFrame | pl.LazyFrame,
    metrics: Sequence[str | Metric | MetricRequest] | str | Metric,
    *,
    by: str | Sequence[str],
    baseline: object = None,
    test: Test = "t",
    correction: Correction | None = "holm",
    correction_scope: CorrectionScope = "all",
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int = 0,
    missing: Missing = "drop",
    **evaluate_keywords: Any,
) -> pl.DataFrame:
    """Evaluate ``log`` per query and compare its systems (the values of ``by``), paired by query.

    ``evaluate(log, metrics, per_query=True, by=by, **evaluate_keywords)`` followed by
    :func:`compare_per_query`; see there for the options and the output.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.read_parquet("data/sample.parquet")
    >>> out = rke.compare(log, ["ndcg@10", "map"], by="system", baseline="bm25")
    >>> out.select("metric", "system", "delta", "significant").with_columns(
    ...     pl.col("delta").round(4)
    ... )
    shape: (2, 4)
    ┌─────────┬────────┬────────┬─────────────┐
    │ metric  ┆ system ┆ delta  ┆ significant │
    │ ---     ┆ ---    ┆ ---    ┆ ---         │
    │ str     ┆ str    ┆ f64    ┆ bool        │
    ╞═════════╪════════╪════════╪═════════════╡
    │ ndcg@10 ┆ neural ┆ 0.1772 ┆ true        │
    │ map     ┆ neural ┆ 0.1591 ┆ true        │
    └─────────┴────────┴────────┴─────────────┘
    """
    if "per_query" in evaluate_keywords:
        msg = "option per_query= is set by compare (it always evaluates per query)"
        raise InvalidOptionError(msg)
    plan, correction, correction_scope = _settings(
        test, correction, correction_scope, alpha, n_resamples, seed, missing
    )
    query = evaluate_keywords.get("query", "query")
    # The metrics as evaluate resolves them (same preset), so each column's meaning is the
    # metric's own declaration; a count or direction-less metric is refused before the log
    # is read.
    preset, _ = settings_for(evaluate_keywords.get("convention", "trec_eval"), evaluate_keywords)
    known = dict(resolve_metrics(metrics, preset))
    labels = list(known)
    keys = [by] if isinstance(by, str) else list(by)
    check_pairable(labels, known)
    data = as_polars(log, "log")
    evaluated = evaluate(data, metrics, per_query=True, by=by, **evaluate_keywords)  # type: ignore[type-var]
    per_query = evaluated.collect() if isinstance(evaluated, pl.LazyFrame) else evaluated
    table = prepare(per_query, keys, query, labels, known=known)
    return _compare(table, baseline, plan, correction, correction_scope)
