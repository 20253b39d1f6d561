"""compare and compare_per_query: the paired comparison over a per-query table (see the package)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import polars as pl

from polars_rankeval._engine.columns import as_polars
from polars_rankeval._engine.evaluate import evaluate_frame
from polars_rankeval._engine.meaning import Directions, LowerIsBetter
from polars_rankeval._engine.options import check_choice
from polars_rankeval._engine.settings import settings_for
from polars_rankeval._engine.vocabulary import (
    BASELINE_VALUE,
    CI_HIGH,
    CI_LOW,
    DELTA,
    METRIC,
    N_QUERIES,
    VALUE,
    EvaluateOptions,
    baseline_column,
    renamed,
)
from polars_rankeval._names.registry import MetricRequest, resolve_metrics
from polars_rankeval._names.split import metric_list
from polars_rankeval.comparison._corrections import Correction, adjust_family
from polars_rankeval.comparison._depth import (
    depth_column,
    depth_metric,
    needs_depths,
    warn_if_depths_differ,
)
from polars_rankeval.comparison._pairing import (
    Missing,
    Table,
    check_pairable,
    prepare,
    resolve_baseline,
    system_names,
)
from polars_rankeval.comparison._rows import MULTI_SYSTEM_TESTS, Test, _Plan, _raw
from polars_rankeval.comparison._ties import split_tie_ranges, warn_about_flips, with_tie_flags
from polars_rankeval.comparison._within import by_segment, empty_pairs_warning, segment_columns
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.metrics._base import Metric

if TYPE_CHECKING:
    from typing_extensions import Unpack

CorrectionScope = Literal["all", "metric"]

TESTS: tuple[Test, ...] = (
    *("t", "wilcoxon", "sign", "randomization", "bootstrap", "tukey", "tukey_hsd"),
)
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

# The rows as the engine builds them (_rows.py): each system named by its joined ``by``
# values under ``baseline`` and ``system``; :func:`_to_schema` turns them into the output.
_ROW_COLUMNS = [
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
    "tie_range",
    "tie_flip",
]
_OUTPUT_NAMES = {"system_mean": VALUE, "baseline_mean": BASELINE_VALUE}

#: compare's columns after the metric, the segments and the systems' keys, in order.
STATISTICS: list[str] = [
    "higher_is_better",
    "summary",
    N_QUERIES,
    "n_dropped",
    VALUE,
    BASELINE_VALUE,
    DELTA,
    CI_LOW,
    CI_HIGH,
    *_ROW_COLUMNS[_ROW_COLUMNS.index("effect_size") :],
]


def compare_columns(by: Sequence[str], within: Sequence[str] = ()) -> list[str]:
    """The columns of a compare result, in order: the one template of compare's output.

    ``metric``; the segment columns (``within=``); the compared system's ``by`` columns under
    their own names; the baseline's as ``baseline_<by>``; then :data:`STATISTICS`
    (``value`` is the system's summary over the paired queries, ``baseline_value`` the
    baseline's, ``delta`` their difference).

    Examples
    --------
    >>> compare_columns(["run", "version"])[:7]
    ['metric', 'run', 'version', 'baseline_run', 'baseline_version', 'higher_is_better', 'summary']
    >>> compare_columns(["system"], within=["activity"])[:4]
    ['metric', 'activity', 'system', 'baseline_system']
    """
    return [METRIC, *within, *by, *(baseline_column(name) for name in by), *STATISTICS]


def _check_output_names(keys: Sequence[str], segments: Sequence[str] = ()) -> None:
    """A ``by`` column cannot take a name of compare's output (``delta``, ``overall``, ...)."""
    names = compare_columns(keys, segments)
    for key in keys:
        for name in (key, baseline_column(key)):
            if names.count(name) > 1:
                msg = (
                    f"by= column {key!r} gives compare's output the column {name!r} twice "
                    f"(the system's key {key!r} and its baseline's {baseline_column(key)!r} "
                    "sit beside compare's own columns); rename the column"
                )
                raise InvalidOptionError(msg)


def _to_schema(rows: pl.DataFrame, source: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """The output of compare from the engine's rows: each system's ``by`` values, not its name.

    ``source`` holds the ``by`` columns (their values and types); a system's joined name maps
    back to exactly one combination of them (``prepare`` refuses two systems of one name).
    """
    names = source.select(keys).unique().drop_nulls()
    joined = names.select(system_names(keys)).to_series()

    def key(side: str, name: str) -> pl.Expr:
        return pl.col(side).replace_strict(joined, names[name], return_dtype=names.schema[name])

    segments = [name for name in rows.columns if name not in _ROW_COLUMNS]
    return rows.select(
        METRIC,
        *segments,
        *(key("system", name).alias(name) for name in keys),
        *(key("baseline", name).alias(baseline_column(name)) for name in keys),
        *(pl.col(old).alias(new) for old, new in _OUTPUT_NAMES.items()),
        *(
            name
            for name in _ROW_COLUMNS
            if name not in {"metric", "baseline", "system", *_OUTPUT_NAMES}
        ),
    ).select(compare_columns(keys, segments))


def readable_interval(
    ci_low: float | None, ci_high: float | None, test_scale: str
) -> tuple[float | None, float | None, Literal["delta", "ratio"]]:
    """A row's interval on the scale a reader can set beside its Δ.

    A geometric mean (``test_scale == "log"``) is tested on the logs, so its ``ci_low`` /
    ``ci_high`` bound the mean log difference, a scale on which Δ (a difference of the means)
    can lie outside its own interval. Their exponentials bound the ratio system / baseline of
    the geometric means: ``"ratio"``, shown ``×[low, high]`` (it clears 1 where the log interval
    clears 0). Every other interval is already one of Δ: ``"delta"``. The CLI's compare table
    and the gate (:func:`~polars_rankeval.check`) both show intervals through this function.

    Examples
    --------
    >>> readable_interval(-0.1459, 0.1078, "log")  # doctest: +ELLIPSIS
    (0.8642..., 1.1138..., 'ratio')
    >>> readable_interval(0.01, 0.03, "value")
    (0.01, 0.03, 'delta')
    """
    if test_scale != "log":
        return ci_low, ci_high, "delta"

    def exp(bound: float | None) -> float | None:
        return None if bound is None else math.exp(bound)

    return exp(ci_low), exp(ci_high), "ratio"


def _check_number(option: str, value: object, low: float, high: float | None = None) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value > low
    if ok and high is not None:
        ok = value < high  # type: ignore[operator]
    if not ok:
        bound = f"in ({low:g}, {high:g})" if high is not None else f"> {low:g}"
        msg = f"option {option}= must be a number {bound}, got {value!r}"
        raise InvalidOptionError(msg)


@renamed(per_query="data", missing="unpaired_queries")
def compare_per_query(
    data: pl.DataFrame | pl.LazyFrame,
    *,
    by: str | Sequence[str],
    within: str | Sequence[str] | None = None,
    query: str = "query",
    metrics: Sequence[str] | None = None,
    baseline: object = None,
    test: Test = "t",
    correction: Correction | None = "holm",
    correction_scope: CorrectionScope = "all",
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int = 0,
    unpaired_queries: Missing = "drop",
    lower_is_better: LowerIsBetter = None,
    direction: Directions = None,
) -> pl.DataFrame:
    """Compare systems on any per-query table, paired by query.

    Parameters
    ----------
    data
        The per-query table (a LazyFrame is collected: a comparison needs every per-query
        value). One row per ``(by, query)`` and one column per metric: the output of
        ``evaluate(..., per_query=True, by=...)``, or any tool's per-query table (a pandas
        DataFrame or pyarrow Table works too).
    by
        The column(s) whose values are the systems. The output keeps them under their own
        names (the compared system's values) and as ``baseline_<by>`` (the baseline's).
    within
        Segment column(s) (e.g. ``"activity"``): the systems are compared inside each segment
        (each combination of their values, null included), exactly as if the segment were the
        whole table, and the output has these columns right after ``metric``. The
        correction still runs over the whole family (every segment, as ``correction_scope``
        says). A segment with one system or without the baseline, and a pair with no shared
        query in a segment, are left out with an
        :class:`~polars_rankeval.errors.EmptyEvaluationWarning` naming them.
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
        ``"all"``: one family of every comparison in the call, across systems, metrics and
        segments; ``"metric"``: one family per metric (as PyTerrier), across systems and
        segments.
    alpha
        Significance level: ``significant`` is ``p_adjusted < alpha`` and the intervals are at
        ``1 − alpha``.
    n_resamples, seed
        Resamples of the randomization, bootstrap and Tukey tests, and their seed (results are
        reproducible; a pair's draws depend only on the seed and its number of queries).
    unpaired_queries
        A query only some systems have a value for. ``"drop"`` (default): a pair uses the
        queries both systems have a value for (Tukey: the queries every system has), and
        ``n_dropped`` counts the others. ``"zero"``: a query a system has no row for scores
        0; undefined values (null, NaN) are still dropped. (evaluate's ``missing_queries=``,
        which :func:`compare` forwards, decides whether a judged query a system did not
        answer has a row at all: ``"zero"`` gives it 0, as trec_eval ``-c``.)
    lower_is_better
        Columns of another tool's table whose lower values are better: the list shorthand of
        ``direction={column: "lower"}``, which may not contradict one of our metrics.
    direction
        ``{column: "higher" | "lower"}``: each column's direction, overriding our metrics' own
        declarations (``{"arp@10": "higher"}`` for an analyst who wants popularity). Any other
        column that is not one of our metrics is taken as a higher-is-better mean, and
        ``direction_source`` says ``"assumed"``. Uncut ``frp`` and ``mean_rank`` warn
        (:class:`~polars_rankeval.errors.DepthWarning`) when the table's ``num_ret`` column
        shows systems of different list depths.

    Returns
    -------
    pl.DataFrame
        One row per metric and pair of systems (per segment with ``within``), in the columns
        of :func:`compare_columns`: ``metric``; the segment columns; the compared system's
        ``by`` columns (e.g. ``run, version``) and the baseline's (``baseline_run,
        baseline_version``); ``higher_is_better, summary`` (the metric's direction and
        summary rule), ``n_queries, n_dropped, value, baseline_value`` (each system's summary
        over the paired queries), ``delta`` (``value − baseline_value``), ``ci_low,
        ci_high`` (interval of the mean difference on the test scale),
        ``effect_size`` (mean(d)/sd(d)), ``p_value, p_adjusted, significant, wins, ties,
        losses`` (wins: the system is better by the metric's direction), ``test, test_scale``
        (``"log"`` for geometric means), ``missing`` (the ``unpaired_queries`` option),
        ``correction, alpha, direction_source``, and ``baseline_overall, system_overall,
        baseline_queries, system_queries``: each system's summary over all the queries it
        has a value for, as evaluate gives it.
        ``tie_range, tie_flip``: null here (a per-query table holds no ties); :func:`compare`
        fills them from the log (:func:`polars_rankeval.ties.with_tie_flags`).

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
    >>> out.select("system", "baseline_system", "delta", "p_value", "wins", "ties", "losses")
    shape: (1, 7)
    ┌────────┬─────────────────┬───────┬─────────┬──────┬──────┬────────┐
    │ system ┆ baseline_system ┆ delta ┆ p_value ┆ wins ┆ ties ┆ losses │
    │ ---    ┆ ---             ┆ ---   ┆ ---     ┆ ---  ┆ ---  ┆ ---    │
    │ str    ┆ str             ┆ f64   ┆ f64     ┆ i64  ┆ i64  ┆ i64    │
    ╞════════╪═════════════════╪═══════╪═════════╪══════╪══════╪════════╡
    │ b      ┆ a               ┆ 0.125 ┆ 0.25    ┆ 3    ┆ 1    ┆ 0      │
    └────────┴─────────────────┴───────┴─────────┴──────┴──────┴────────┘
    """
    plan, correction, correction_scope = _settings(
        test, correction, correction_scope, alpha, n_resamples, seed, unpaired_queries
    )
    frame = as_polars(data, "data")
    frame = frame.collect() if isinstance(frame, pl.LazyFrame) else frame
    keys = [by] if isinstance(by, str) else list(by)
    _check_output_names(keys)
    checked = _Checked(keys, query, metrics, lower_is_better, direction=direction)
    rows = _compare(frame, checked, within, baseline, plan, correction, correction_scope)
    return _to_schema(rows, frame, keys)


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
    chosen_missing: Missing = check_choice("unpaired_queries", missing, ["drop", "zero"])
    _check_number("alpha", alpha, 0.0, 1.0)
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 1:
        msg = f"option n_resamples= must be a positive int, got {n_resamples!r}"
        raise InvalidOptionError(msg)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        msg = f"option seed= must be a non-negative int, got {seed!r}"
        raise InvalidOptionError(msg)
    plan = _Plan(chosen_test, float(alpha), n_resamples, seed, chosen_missing)  # type: ignore[arg-type]
    return plan, chosen_correction, scope


@dataclass(frozen=True)
class _Checked:
    """How the per-query table is read: its keys, metric columns and their meanings."""

    keys: list[str]
    query: str
    metrics: Sequence[str] | None
    lower_is_better: LowerIsBetter = None
    known: dict[str, Metric] | None = None
    direction: Directions = None

    def prepare(self, frame: pl.DataFrame) -> Table:
        return prepare(
            frame,
            self.keys,
            self.query,
            self.metrics,
            lower_is_better=self.lower_is_better,
            known=self.known,
            direction=self.direction,
        )


def _compare(  # noqa: PLR0917  (compare's own options, checked)
    frame: pl.DataFrame,
    checked: _Checked,
    within: object,
    baseline: object,
    plan: _Plan,
    correction: Correction | None,
    correction_scope: CorrectionScope,
) -> pl.DataFrame:
    keys, query = checked.keys, checked.query
    if within is None:
        table = checked.prepare(frame)
        systems, found = table.systems, table.meanings
    else:
        segments = segment_columns(
            within, frame.columns, keys, query, reserved=compare_columns(keys)
        )
        # The columns and metrics checked once, on no rows, before any segment is compared.
        found = checked.prepare(frame.drop(segments).clear()).meanings
        named = frame.select(system_names(keys).unique().drop_nulls().sort())
        systems = named.to_series().to_list()
    depths = depth_column(frame.columns, list(found))
    warn_if_depths_differ(frame, keys, depths, found)
    chosen = resolve_baseline(baseline, systems)
    if len(systems) < 2:
        msg = f"compare needs at least two systems in by={keys}, found {systems}"
        raise InvalidOptionError(msg)
    if within is None:
        raw = _raw(table, chosen, plan)
        empty_pairs_warning(raw, frame, keys, query)
    else:
        raw = by_segment(
            frame, segments, chosen, checked.prepare, lambda part: _raw(part, chosen, plan)
        )
    return _finish(raw, plan, correction, correction_scope)


def _finish(
    frame: pl.DataFrame,
    plan: _Plan,
    correction: Correction | None,
    correction_scope: CorrectionScope,
) -> pl.DataFrame:
    """The correction over the whole family of rows (every segment), and the settings."""
    p = frame["p_value"].to_numpy()
    # Tukey's p-values control the family-wise error themselves: no correction applies.
    corrected = plan.test not in MULTI_SYSTEM_TESTS and correction is not None
    adjusted = adjust_family(
        p,
        frame["metric"].to_numpy(),
        correction if corrected else None,
        per_metric=correction_scope == "metric",
    )
    segments = [name for name in frame.columns if name not in _ROW_COLUMNS]
    return frame.with_columns(
        pl.Series("p_adjusted", adjusted, dtype=pl.Float64),
        pl.Series("significant", np.nan_to_num(adjusted, nan=1.0) < plan.alpha, dtype=pl.Boolean),
        pl.lit(plan.test).alias("test"),
        pl.lit(plan.missing).alias("missing"),
        pl.lit(correction if corrected else "none").alias("correction"),
        pl.lit(plan.alpha).alias("alpha"),
        # compare() bounds Δ over the orders of tied scores; a per-query table cannot
        pl.lit(None, dtype=pl.Float64).alias("tie_range"),
        pl.lit(None, dtype=pl.Boolean).alias("tie_flip"),
    ).select(*segments, *_ROW_COLUMNS)


@renamed(log="data", missing="unpaired_queries")
def compare(
    data: pl.DataFrame | pl.LazyFrame,
    metrics: Sequence[str | Metric | MetricRequest] | str | Metric,
    *,
    by: str | Sequence[str],
    within: str | Sequence[str] | None = None,
    baseline: object = None,
    test: Test = "t",
    correction: Correction | None = "holm",
    correction_scope: CorrectionScope = "all",
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int = 0,
    unpaired_queries: Missing = "drop",
    direction: Directions = None,
    **options: Unpack[EvaluateOptions],
) -> pl.DataFrame:
    """Evaluate ``data`` per query and compare its systems (the values of ``by``), paired by query.

    ``evaluate(data, metrics, per_query=True, by=[*within, *by], **options)`` followed by
    :func:`compare_per_query`; see there for the options (``within=`` compares the systems
    inside each segment, ``direction=`` overrides a metric's direction, ``unpaired_queries=``
    pairs the queries) and the output: one row per metric and pair of systems, the system's
    ``by`` columns under their own names and the baseline's as ``baseline_<by>``. A
    LazyFrame is evaluated and collected (a comparison needs every per-query value): the
    result is always a DataFrame. When a compared metric depends on the list depth (uncut
    ``frp``, ``mean_rank``), each list's depth is evaluated too, and a
    :class:`~polars_rankeval.errors.DepthWarning` names the systems when their depths differ.

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
    evaluate_keywords: dict[str, Any] = dict(options)
    if "per_query" in evaluate_keywords:
        msg = "option per_query= is set by compare (it always evaluates per query)"
        raise InvalidOptionError(msg)
    plan, correction, correction_scope = _settings(
        test, correction, correction_scope, alpha, n_resamples, seed, unpaired_queries
    )
    query = evaluate_keywords.get("query", "query")
    # The metrics as evaluate resolves them (same preset), so each column's meaning is the
    # metric's own declaration; a count or direction-less metric is refused before the log
    # is read.
    preset, _ = settings_for(evaluate_keywords.get("convention", "trec_eval"), evaluate_keywords)
    known = dict(resolve_metrics(metrics, preset))
    labels = list(known)
    keys = [by] if isinstance(by, str) else list(by)
    found = check_pairable(labels, known, direction)
    evaluated_metrics: Any = metrics
    if needs_depths(found):
        # Each list's depth beside the metrics, in the same pass, under a hidden name.
        given = [metrics] if isinstance(metrics, (Metric, MetricRequest)) else metric_list(metrics)
        evaluated_metrics = [*given, depth_metric()]  # type: ignore[misc]
    table = as_polars(data, "data")
    segments: list[str] = []
    if within is not None:
        segments = segment_columns(
            within,
            table.collect_schema().names(),
            keys,
            query,
            reserved=compare_columns(keys),
            where="log",
        )
    _check_output_names(keys, segments)
    evaluated = evaluate_frame(  # type: ignore[type-var]
        table,
        evaluated_metrics,
        per_query=True,
        by=[*segments, *keys],
        # each list's tie range, in the same pass (tie_warning=None turns it off)
        keep_tie_ranges=evaluate_keywords.get("tie_warning", 0.01) is not None,
        **evaluate_keywords,
    )
    per_query = evaluated.collect() if isinstance(evaluated, pl.LazyFrame) else evaluated
    per_query, ranges = split_tie_ranges(per_query, [*segments, *keys, query])
    checked = _Checked(keys, query, labels, known=known, direction=direction)
    compared = _compare(per_query, checked, within, baseline, plan, correction, correction_scope)
    compared = with_tie_flags(compared, ranges, keys=keys, segments=segments, query=query)
    warn_about_flips(compared)  # where the tie order could flip a verdict (D9)
    return _to_schema(compared, per_query, keys)
