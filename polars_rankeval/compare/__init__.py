"""Is system B better than A? Paired tests, intervals, effect sizes and corrections.

:func:`compare` evaluates per query and hands the per-query frame to :func:`compare_per_query`,
which works on any table with one row per ``(by, query)`` and one column per metric (ours, or
one written by another tool). Systems are the values of ``by``; they are compared **paired by
query**.

Statistics (``d`` = system − baseline per query, ``n`` paired queries):

* ``delta`` = mean(d); ``effect_size`` = mean(d) / sd(d) (Cohen's d_z, Sakai's paired ES);
  ``wins``/``ties``/``losses`` count d > 0, d = 0, d < 0.
* ``test="t"``: paired Student t, two-sided (scipy ``ttest_rel``); ``"wilcoxon"``: signed-rank
  (scipy ``wilcoxon`` defaults); ``"sign"``: exact binomial on wins vs losses (``binomtest``);
  ``"randomization"``: Fisher's paired sign-flip test, exact when ``2^n <= n_resamples``, else
  Monte Carlo with ``p = (count + 1) / (B + 1)``; ``"bootstrap"``: queries resampled with
  replacement, percentile interval and shifted-bootstrap p ``(count + 1) / (B + 1)``;
  ``"tukey"``: randomized Tukey HSD over all systems (scores permuted within each query; the
  statistic is the range of the system means), whose p-values already control the family-wise
  error.
* ``ci_low``/``ci_high``: the interval of mean(d) at ``1 − alpha``: percentile bootstrap for
  ``"bootstrap"``, the paired t-interval for every other test.

Floating-point noise never decides a result: differences within ``1e-12`` of zero (relative to
the values) are ties, and resampled statistics within ``1e-9`` (relative to ``Σ|d|``) of the
observed one count as "at least as extreme".
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
from polars_rankeval.compare._corrections import Correction, adjust
from polars_rankeval.compare._stats import (
    _ZERO,
    _bootstrap,
    _effect_size,
    _scipy_stats,
    _sign_p,
    _t_interval,
    _t_p,
    _wilcoxon_p,
    randomization_ps,
    tukey_hsd_p,
)
from polars_rankeval.compare._stats import (
    randomization_p as randomization_p,
)
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    ColumnValueError,
    InvalidOptionError,
)
from polars_rankeval.evaluate import evaluate
from polars_rankeval.metrics._base import Metric
from polars_rankeval.registry import MetricRequest

Test = Literal["t", "wilcoxon", "sign", "randomization", "bootstrap", "tukey"]
CorrectionScope = Literal["all", "metric"]
Missing = Literal["drop", "zero"]

TESTS: tuple[Test, ...] = ("t", "wilcoxon", "sign", "randomization", "bootstrap", "tukey")
CORRECTIONS: tuple[Correction, ...] = ("bonferroni", "holm", "fdr_bh")
TEST_NAMES = {
    "t": "paired t-test",
    "wilcoxon": "Wilcoxon signed-rank test",
    "sign": "sign test",
    "randomization": "paired randomization test",
    "bootstrap": "paired bootstrap test",
    "tukey": "randomized Tukey HSD",
}
CORRECTION_NAMES = {"bonferroni": "Bonferroni", "holm": "Holm", "fdr_bh": "Benjamini-Hochberg"}

#: How the values of several ``by`` columns are joined into one system name.
SYSTEM_SEPARATOR = " / "

COLUMNS = [
    "metric",
    "baseline",
    "system",
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
    "missing",
    "correction",
    "alpha",
]


@dataclass(frozen=True)
class _Plan:
    """The test settings of one call."""

    test: Test
    alpha: float
    n_resamples: int
    seed: int
    missing: Missing


@dataclass(frozen=True)
class _Pair:
    metric: str
    baseline: str
    system: str
    x: np.ndarray  # baseline values, paired
    y: np.ndarray  # system values, paired
    n_dropped: int

    @property
    def differences(self) -> np.ndarray:
        d = self.y - self.x
        scale = np.maximum(1.0, np.maximum(np.abs(self.x), np.abs(self.y)))
        return np.where(np.abs(d) <= _ZERO * scale, 0.0, d)


# ---------------------------------------------------------------------------------------------
# Pairing
# ---------------------------------------------------------------------------------------------


def _system_names(frame: pl.DataFrame, by: list[str]) -> pl.Expr:
    if len(by) == 1:
        return pl.col(by[0]).cast(pl.String)
    return pl.concat_str([pl.col(name).cast(pl.String) for name in by], separator=SYSTEM_SEPARATOR)


def _resolve_baseline(baseline: object, systems: list[str]) -> str | None:
    if baseline is None:
        return None
    name = (
        SYSTEM_SEPARATOR.join(str(value) for value in baseline)
        if isinstance(baseline, tuple)
        else str(baseline)
    )
    return check_choice("baseline", name, systems)


def _prepare(
    per_query: object,
    by: str | Sequence[str],
    query: str,
    metrics: Sequence[str] | None,
) -> tuple[pl.DataFrame, list[str], list[str]]:
    frame = as_polars(per_query, "per_query")
    if isinstance(frame, pl.LazyFrame):
        frame = frame.collect()
    keys = [by] if isinstance(by, str) else list(by)
    if not keys:
        msg = "by= must name the column(s) whose values are the systems, e.g. by='system'"
        raise InvalidOptionError(msg)
    for option, name in [*(("by", key) for key in keys), ("query", query)]:
        if name not in frame.columns:
            msg = (
                f"column {name!r} (option {option}=) is not in the per-query table; "
                f"columns present: {frame.columns}"
            )
            raise ColumnNotFoundError(msg)
    if metrics is None:
        metrics = [
            name
            for name in frame.columns
            if name not in (*keys, query) and frame.schema[name].is_numeric()
        ]
        if not metrics:
            msg = "the per-query table has no numeric metric column besides the keys"
            raise ColumnNotFoundError(msg)
    metrics = list(metrics)
    for name in metrics:
        if name not in frame.columns:
            msg = f"metric column {name!r} is not in the per-query table; columns: {frame.columns}"
            raise ColumnNotFoundError(msg)
        if not frame.schema[name].is_numeric():
            msg = f"metric column {name!r} must be numeric, got {frame.schema[name]}"
            raise ColumnTypeError(msg)
    named = frame.select(
        _system_names(frame, keys).alias("__system"),
        pl.col(query).alias("__query"),
        *(pl.col(name).cast(pl.Float64).fill_nan(None).alias(name) for name in metrics),
    )
    repeated = named.group_by("__system", "__query").len().filter(pl.col("len") > 1)
    if repeated.height:
        example = repeated.sort("__system", "__query").row(0)
        msg = (
            f"the per-query table has {repeated.height} (system, query) pair(s) with more than "
            f"one row, e.g. system {example[0]!r}, query {example[1]!r}: it needs one row per "
            f"({', '.join(keys)}, {query}); did you leave a segment column out of by=?"
        )
        raise ColumnValueError(msg)
    if named["__system"].null_count():
        msg = f"a by= column ({keys}) holds nulls: every row needs a system"
        raise ColumnValueError(msg)
    return named, keys, metrics


def _wide(named: pl.DataFrame, metric: str, systems: list[str], missing: Missing) -> pl.DataFrame:
    """Queries × systems for one metric: null where a system has no value for a query.

    With ``missing="zero"`` a query that a system has *no row* for scores 0 (trec_eval -c); a
    row whose value is undefined (null or NaN, e.g. ``frp`` without a relevant item) stays out.
    """
    long = named.select("__system", "__query", metric, pl.lit(value=True).alias("__present"))
    if missing == "zero":
        grid = (
            named.select("__query").unique().join(pl.DataFrame({"__system": systems}), how="cross")
        )
        long = grid.join(long, on=["__system", "__query"], how="left").with_columns(
            pl.when(pl.col("__present").is_null()).then(0.0).otherwise(pl.col(metric)).alias(metric)
        )
    wide = long.pivot(on="__system", index="__query", values=metric)
    for system in systems:
        if system not in wide.columns:
            wide = wide.with_columns(pl.lit(None, dtype=pl.Float64).alias(system))
    # Sorted by query: the resampling draws meet the queries in an order that does not depend
    # on the input's row order (or on how Polars ordered a unique()).
    return wide.select("__query", *systems).sort("__query")


def _pairs(
    named: pl.DataFrame,
    metrics: list[str],
    systems: list[str],
    baseline: str | None,
    missing: Missing,
) -> list[_Pair]:
    matchups = (
        [(baseline, system) for system in systems if system != baseline]
        if baseline is not None
        else list(itertools.combinations(systems, 2))
    )
    pairs = []
    for metric in metrics:
        wide = _wide(named, metric, systems, missing)
        for first, second in matchups:
            x, y = wide[first].to_numpy(), wide[second].to_numpy()
            x, y = x.astype(np.float64), y.astype(np.float64)
            either = ~np.isnan(x) | ~np.isnan(y)
            both = ~np.isnan(x) & ~np.isnan(y)
            pairs.append(
                _Pair(metric, first, second, x[both], y[both], int(either.sum() - both.sum()))
            )
    return pairs


def _tukey_pairs(
    named: pl.DataFrame,
    metrics: list[str],
    systems: list[str],
    baseline: str | None,
    plan: _Plan,
) -> tuple[list[_Pair], list[float]]:
    """Pairs over the queries every system has, and their randomized Tukey HSD p-values."""
    pairs, p_values = [], []
    for metric in metrics:
        wide = _wide(named, metric, systems, plan.missing)
        scores = wide.select(systems).to_numpy().astype(np.float64)
        complete = ~np.isnan(scores).any(axis=1)
        matrix = scores[complete]
        p = (
            tukey_hsd_p(matrix, plan.n_resamples, plan.seed)
            if matrix.shape[0]
            else np.full((len(systems), len(systems)), np.nan)
        )
        for i, j in itertools.combinations(range(len(systems)), 2):
            if baseline is not None and baseline not in (systems[i], systems[j]):
                continue
            first, second = (j, i) if systems[j] == baseline else (i, j)
            either = ~np.isnan(scores[:, first]) | ~np.isnan(scores[:, second])
            pairs.append(
                _Pair(
                    metric,
                    systems[first],
                    systems[second],
                    matrix[:, first],
                    matrix[:, second],
                    int(either.sum() - complete.sum()),
                )
            )
            p_values.append(float(p[first, second]))
    return pairs, p_values


def _by_size(pairs: list[_Pair]) -> dict[int, list[int]]:
    """Pair indices grouped by their number of queries (resampling draws are shared)."""
    groups: dict[int, list[int]] = {}
    for index, pair in enumerate(pairs):
        groups.setdefault(pair.x.size, []).append(index)
    return groups


def _p_values(
    pairs: list[_Pair], plan: _Plan, tukey_p: list[float] | None
) -> tuple[list[float], list[tuple[float, float]]]:
    """Each pair's p-value and interval of the mean difference."""
    stats = _scipy_stats()
    differences = [pair.differences for pair in pairs]
    intervals = [_t_interval(d, plan.alpha, stats) for d in differences]
    one_at_a_time = {"t": _t_p, "wilcoxon": _wilcoxon_p, "sign": _sign_p}
    if plan.test in one_at_a_time:
        return [one_at_a_time[plan.test](d, stats) for d in differences], intervals
    if plan.test == "tukey":
        assert tukey_p is not None
        return list(tukey_p), intervals
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


def _rows(pairs: list[_Pair], plan: _Plan, tukey_p: list[float] | None) -> list[dict[str, Any]]:
    p_values, intervals = _p_values(pairs, plan, tukey_p)
    rows = []
    for pair, p, (low, high) in zip(pairs, p_values, intervals, strict=True):
        d = pair.differences
        n = d.size
        rows.append(
            {
                "metric": pair.metric,
                "baseline": pair.baseline,
                "system": pair.system,
                "n_queries": n,
                "n_dropped": pair.n_dropped,
                "baseline_mean": float(pair.x.mean()) if n else math.nan,
                "system_mean": float(pair.y.mean()) if n else math.nan,
                "delta": float(d.mean()) if n else math.nan,
                "ci_low": low,
                "ci_high": high,
                "effect_size": _effect_size(d),
                "p_value": p,
                "wins": int((d > 0).sum()),
                "ties": int((d == 0).sum()),
                "losses": int((d < 0).sum()),
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
    baseline
        A system (a ``by`` value, or a tuple of values for several ``by`` columns): every
        other system is compared with it. None compares every pair.
    test
        ``"t"`` (default), ``"wilcoxon"``, ``"sign"``, ``"randomization"``, ``"bootstrap"`` or
        ``"tukey"`` (see the module docstring).
    correction
        ``"holm"`` (default), ``"bonferroni"``, ``"fdr_bh"`` or None. Not applied to
        ``"tukey"``, whose p-values already control the family-wise error.
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

    Returns
    -------
    pl.DataFrame
        One row per ``(metric, baseline, system)``: ``n_queries, n_dropped, baseline_mean,
        system_mean, delta`` (system − baseline), ``ci_low, ci_high`` (interval of the mean
        difference), ``effect_size`` (mean(d)/sd(d)), ``p_value, p_adjusted, significant,
        wins, ties, losses, test, missing, correction, alpha``.

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
    test = check_choice("test", test, TESTS)
    if correction is not None:
        correction = check_choice("correction", correction, CORRECTIONS)
    correction_scope = check_choice("correction_scope", correction_scope, ["all", "metric"])
    missing = check_choice("missing", missing, ["drop", "zero"])
    _check_number("alpha", alpha, 0.0, 1.0)
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 1:
        msg = f"option n_resamples= must be a positive int, got {n_resamples!r}"
        raise InvalidOptionError(msg)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        msg = f"option seed= must be a non-negative int, got {seed!r}"
        raise InvalidOptionError(msg)
    named, keys, metric_names = _prepare(per_query, by, query, metrics)
    # Systems in sorted order of their names, as evaluate(by=...) sorts its groups.
    ordered = named.get_column("__system").unique().sort().to_list()
    chosen = _resolve_baseline(baseline, ordered)
    if len(ordered) < 2:
        msg = f"compare needs at least two systems in by={keys}, found {ordered}"
        raise InvalidOptionError(msg)
    plan = _Plan(test, float(alpha), n_resamples, seed, missing)
    tukey_p = None
    if test == "tukey":
        pairs, tukey_p = _tukey_pairs(named, metric_names, ordered, chosen, plan)
    else:
        pairs = _pairs(named, metric_names, ordered, chosen, missing)
    rows = _rows(pairs, plan, tukey_p)
    frame = pl.DataFrame(rows, schema_overrides={"p_value": pl.Float64})
    p = frame["p_value"].to_numpy()
    if test == "tukey" or correction is None:
        adjusted = p.copy()
    elif correction_scope == "all":
        adjusted = adjust(p, correction)
    else:
        adjusted = p.copy()
        for metric in metric_names:
            mask = (frame["metric"] == metric).to_numpy()
            adjusted[mask] = adjust(p[mask], correction)
    return frame.with_columns(
        pl.Series("p_adjusted", adjusted, dtype=pl.Float64),
        pl.Series("significant", np.nan_to_num(adjusted, nan=1.0) < alpha, dtype=pl.Boolean),
        pl.lit(test).alias("test"),
        pl.lit(missing).alias("missing"),
        # Tukey's p-values control the family-wise error themselves: no correction applies.
        pl.lit("none" if test == "tukey" or correction is None else correction).alias("correction"),
        pl.lit(float(alpha)).alias("alpha"),
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
    query = evaluate_keywords.get("query", "query")
    data = as_polars(log, "log")
    evaluated = evaluate(data, metrics, per_query=True, by=by, **evaluate_keywords)  # type: ignore[type-var]
    per_query = evaluated.collect() if isinstance(evaluated, pl.LazyFrame) else evaluated
    keys = [by] if isinstance(by, str) else list(by)
    labels = [name for name in per_query.columns if name not in (*keys, query)]
    return compare_per_query(
        per_query,
        by=keys,
        query=query,
        metrics=labels,
        baseline=baseline,
        test=test,
        correction=correction,
        correction_scope=correction_scope,
        alpha=alpha,
        n_resamples=n_resamples,
        seed=seed,
        missing=missing,
    )
