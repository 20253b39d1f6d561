"""What a metric column means: which way is better, how it is summarised, at which level.

Every :class:`~polars_rankeval.metrics.Metric` declares its ``direction``, ``summary`` and
``level``. The layers above :func:`~polars_rankeval.evaluate` (``compare``, ``report``, the
plots, the CLI, Spark) look a column's meaning up here and read nothing else: a column named
like one of our metrics (``"map"``, ``"P_10"``, ``"gm_map"``, ``"frp"``) means what that
metric declares; anything else is assumed to be a higher-is-better mean, and says so
(``source="assumed"``).

A call declares directions with ``direction={column: "higher" | "lower" | "none"}``: for a
column of another tool's table, or to override one of our metrics' own declaration (an analyst
who wants popularity passes ``direction={"arp@10": "higher"}``). A declared direction is
recorded with ``source="option"``, and ``compare`` writes it on every row of its result
(``higher_is_better``, ``direction_source``), which ``report``, the plots and the gate read.
``lower_is_better=["latency"]`` is the list shorthand for ``direction={"latency": "lower"}``
for other tools' columns; being a blanket list it may not contradict one of our metrics (that
is an error pointing at ``direction=``, so a column listed by mistake never flips a verdict).

A metric whose value depends on how deep the lists go (``frp`` and ``mean_rank`` score a
relevant row that was not retrieved as ``n + 1``, so a shorter list scores better) declares
``depth_sensitive``; ``compare`` warns when it compares such a metric across systems whose list
depths differ (:class:`~polars_rankeval.errors.DepthWarning`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import polars as pl

from polars_rankeval._engine.exact_sum import exact_mean
from polars_rankeval.errors import InvalidOptionError, RankEvalError
from polars_rankeval.metrics._base import Direction, Level, Metric, Summary
from polars_rankeval.metrics.geometric import MIN_GEO_MEAN

Source = Literal["metric", "option", "assumed"]


#: How users may declare the direction of other tools' columns (the list shorthand).
LowerIsBetter = Sequence[str] | Mapping[str, str] | None

#: A call's directions: ``{column: "higher" | "lower" | "none"}``, our metrics included.
Directions = Mapping[str, str] | None

_DIRECTIONS: tuple[Direction, ...] = ("higher", "lower", "none")


@dataclass(frozen=True)
class Meaning:
    """The meaning of one metric column.

    Attributes
    ----------
    direction
        ``"higher"``, ``"lower"`` or ``"none"`` (a count of the input: no system is better).
    summary
        How per-query values combine: ``"mean"``, ``"sum"``, ``"nanmean"`` or ``"gm"``.
    level
        ``"query"`` or ``"system"``.
    source
        ``"metric"`` (the column names one of our metrics), ``"option"`` (declared by the
        caller, with ``direction=`` or ``lower_is_better=``) or ``"assumed"`` (unknown column:
        a higher-is-better mean).
    depth_sensitive
        The metric's value depends on the list depth (``frp``, ``mean_rank``: a relevant row
        not retrieved counts as ``n + 1``), so systems of different depths are not comparable
        on it. Read from the metric's declaration; False for other tools' columns.
    """

    direction: Direction
    summary: Summary
    level: Level
    source: Source
    depth_sensitive: bool = False

    @property
    def higher_is_better(self) -> bool | None:
        """True, False, or None when the metric has no direction."""
        return None if self.direction == "none" else self.direction == "higher"

    def better(self, difference: float) -> bool:
        """Whether ``system − baseline = difference`` (on the test scale) favours the system."""
        if self.direction == "lower":
            return difference < 0
        return difference > 0

    def oriented(self, differences: np.ndarray) -> np.ndarray:
        """Differences signed so that positive means "the system is better"."""
        return -differences if self.direction == "lower" else differences


def of_metric(metric: Metric) -> Meaning:
    """The meaning a :class:`Metric` declares."""
    return Meaning(metric.direction, metric.summary, metric.level, "metric", metric.depth_sensitive)


def recognise(column: str) -> Metric | None:
    """Our metric named by ``column`` (its spelling as an output column), or None.

    Examples
    --------
    >>> recognise("P_10").name
    'p@10'
    >>> recognise("latency_ms") is None
    True
    """
    from polars_rankeval._names.registry import parse_metric  # registry imports the metric families

    try:
        return parse_metric(column)
    except RankEvalError:
        return None


def _mapped(option: str, declared: Mapping[Any, Any]) -> dict[str, Direction]:
    found: dict[str, Direction] = {}
    for column, direction in declared.items():
        if not isinstance(column, str):
            msg = f"option {option}= must map column names (str), got the key {column!r}"
            raise InvalidOptionError(msg)
        if direction not in _DIRECTIONS:
            msg = (
                f"option {option}= maps {column!r} to {direction!r}; "
                f"each direction must be one of {list(_DIRECTIONS)}"
            )
            raise InvalidOptionError(msg)
        found[column] = direction  # checked just above: one of _DIRECTIONS
    return found


def directions(direction: object) -> dict[str, Direction]:
    """The checked ``direction=`` option: ``{column: "higher" | "lower" | "none"}``.

    Examples
    --------
    >>> directions({"arp@10": "higher"})
    {'arp@10': 'higher'}
    """
    if direction is None:
        return {}
    if not isinstance(direction, Mapping):
        msg = (
            "option direction= must be a mapping {column: 'higher' | 'lower' | 'none'}, "
            f"e.g. {{'arp@10': 'higher'}}; got {direction!r}"
        )
        raise InvalidOptionError(msg)
    return _mapped("direction", direction)


def _declared(lower_is_better: LowerIsBetter) -> dict[str, Direction]:
    if lower_is_better is None:
        return {}
    if isinstance(lower_is_better, str):
        return {lower_is_better: "lower"}
    if isinstance(lower_is_better, Mapping):
        return _mapped("lower_is_better", lower_is_better)
    if isinstance(lower_is_better, Sequence):
        return {str(column): "lower" for column in lower_is_better}
    msg = (
        "option lower_is_better= must be a list of column names or a mapping "
        f"{{column: 'higher' | 'lower'}}, got {lower_is_better!r}"
    )
    raise InvalidOptionError(msg)


def meanings(
    columns: Sequence[str],
    *,
    lower_is_better: LowerIsBetter = None,
    known: Mapping[str, Metric] | None = None,
    direction: Directions = None,
) -> dict[str, Meaning]:
    """The meaning of each metric column: the one place that decides a column's direction.

    Parameters
    ----------
    columns
        The metric columns.
    lower_is_better
        Columns of another tool's table whose lower values are better (a list), or a mapping
        ``{column: "higher" | "lower" | "none"}``. A declaration here that contradicts one of
        our metrics' own direction is an error (use ``direction=`` to override it).
    known
        Metrics already resolved for some columns (``compare`` passes what it evaluated).
    direction
        ``{column: "higher" | "lower" | "none"}``: the call's directions, which override our
        metrics' own declarations (``{"arp@10": "higher"}``). Recorded as ``source="option"``.
        A column named both here and in ``lower_is_better`` must get the same direction.

    Examples
    --------
    >>> found = meanings(["map", "frp", "latency"], lower_is_better=["latency"])
    >>> [(c, m.direction, m.summary, m.source) for c, m in found.items()]
    [('map', 'higher', 'mean', 'metric'), ('frp', 'lower', 'mean', 'metric'), ('latency', 'lower', 'mean', 'option')]
    >>> meanings(["arp@10"], direction={"arp@10": "higher"})["arp@10"].source
    'option'
    """  # noqa: E501
    listed = _declared(lower_is_better)
    overrides = directions(direction)
    for option, declared in (("lower_is_better", listed), ("direction", overrides)):
        unknown = sorted(set(declared) - set(columns))
        if unknown:
            msg = (
                f"option {option}= names {unknown}, which are not compared columns; "
                f"columns: {list(columns)}"
            )
            raise InvalidOptionError(msg)
    for column in sorted(set(listed) & set(overrides)):
        if listed[column] != overrides[column]:
            msg = (
                f"options direction= and lower_is_better= disagree on {column!r} "
                f"({overrides[column]} against {listed[column]}); declare it once, in direction="
            )
            raise InvalidOptionError(msg)
    found: dict[str, Meaning] = {}
    for column in columns:
        metric = (known or {}).get(column) or recognise(column)
        own = of_metric(metric) if metric is not None else None
        lists_ours = own is not None and column in listed and column not in overrides
        if lists_ours and own is not None and own.direction != listed[column]:
            msg = (
                f"option lower_is_better= declares {column!r} {listed[column]}-is-better, "
                f"but {column!r} names polars_rankeval's metric, which is "
                f"{own.direction}-is-better; to override its direction pass "
                f"direction={{{column!r}: {listed[column]!r}}}, or rename the column if it "
                "is another measure"
            )
            raise InvalidOptionError(msg)
        chosen = overrides.get(column, listed.get(column))
        if chosen is not None:
            summary: Summary = own.summary if own is not None else "mean"
            level: Level = own.level if own is not None else "query"
            depth = own.depth_sensitive if own is not None else False
            found[column] = Meaning(chosen, summary, level, "option", depth)
        elif own is not None:
            found[column] = own
        else:
            found[column] = Meaning("higher", "mean", "query", "assumed")
    return found


def summary_expr(values: pl.Expr, summary: Summary) -> pl.Expr:
    """The aggregation of per-query values by a summary rule: the one rule every layer uses.

    ``"mean"`` (nulls left out), ``"sum"``, ``"nanmean"`` (NaN left out too) or ``"gm"``
    (trec_eval's ``gm_map``: the log of each value floored at MIN_GEO_MEAN, mean, exp).
    """
    # Order-free sums: the same per-query values give the same summary bit for bit, in any
    # order of the queries and in passes (polars_rankeval._engine.exact_sum). "sum" adds counts
    # (integers), whose sums are exact in any order and keep their integer dtype.
    if summary == "sum":
        return values.sum()
    if summary == "nanmean":
        return exact_mean(pl.when(values.is_not_nan()).then(values))
    if summary == "gm":
        return exact_mean(values.clip(lower_bound=MIN_GEO_MEAN).log()).exp()
    return exact_mean(values)


def summarise(values: np.ndarray, summary: Summary) -> float:
    """One system's summary of its per-query values, as :func:`evaluate` computes it.

    NaN marks a missing or undefined value and is left out (evaluate's per-query frame holds
    null there, which its aggregations skip). NaN when no value is left (0 for a sum).

    Examples
    --------
    >>> summarise(np.array([0.5, 0.0, np.nan]), "gm")  # exp(mean(log(max(v, 1e-5))))
    0.0022360679774997894
    """
    column = pl.Series("v", values, dtype=pl.Float64, nan_to_null=True).to_frame()
    found = column.select(summary_expr(pl.col("v"), summary)).item()
    return math.nan if found is None else float(found)


def on_test_scale(values: np.ndarray, summary: Summary) -> np.ndarray:
    """The per-query values on the scale their summary averages: the log for ``"gm"``.

    A geometric mean is the exponential of a mean of logs, so its paired test compares the
    logs (floored at trec_eval's MIN_GEO_MEAN); every other summary is tested as it is.
    """
    if summary == "gm":
        return np.asarray(np.log(np.maximum(values, MIN_GEO_MEAN)), dtype=np.float64)
    return values
