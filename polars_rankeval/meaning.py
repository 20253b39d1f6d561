"""What a metric column means: which way is better, how it is summarised, at which level.

Every :class:`~polars_rankeval.metrics.Metric` declares its ``direction``, ``summary`` and
``level``. The layers above :func:`~polars_rankeval.evaluate` (``compare``, ``report``, the
plots, the CLI, Spark) look a column's meaning up here and read nothing else: a column named
like one of our metrics (``"map"``, ``"P_10"``, ``"gm_map"``, ``"frp"``) means what that
metric declares; a column of another tool's table can be declared with ``lower_is_better=``;
anything else is assumed to be a higher-is-better mean, and says so (``source="assumed"``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import polars as pl

from polars_rankeval._exact_sum import exact_mean
from polars_rankeval.errors import InvalidOptionError, RankEvalError
from polars_rankeval.metrics._base import Direction, Level, Metric, Summary
from polars_rankeval.metrics.geometric import MIN_GEO_MEAN

Source = Literal["metric", "option", "assumed"]


#: How users may declare the direction of other tools' columns.
LowerIsBetter = Sequence[str] | Mapping[str, str] | None

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
        caller) or ``"assumed"`` (unknown column: a higher-is-better mean).
    """

    direction: Direction
    summary: Summary
    level: Level
    source: Source

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
    return Meaning(metric.direction, metric.summary, metric.level, "metric")


def recognise(column: str) -> Metric | None:
    """Our metric named by ``column`` (its spelling as an output column), or None.

    Examples
    --------
    >>> recognise("P_10").name
    'p@10'
    >>> recognise("latency_ms") is None
    True
    """
    from polars_rankeval.registry import parse_metric  # registry imports the metric families

    try:
        return parse_metric(column)
    except RankEvalError:
        return None


def _declared(lower_is_better: LowerIsBetter) -> dict[str, Direction]:
    if lower_is_better is None:
        return {}
    if isinstance(lower_is_better, str):
        return {lower_is_better: "lower"}
    if isinstance(lower_is_better, Mapping):
        declared: dict[str, Direction] = {}
        for column, direction in lower_is_better.items():
            if direction not in _DIRECTIONS:
                msg = (
                    f"option lower_is_better= maps {column!r} to {direction!r}; "
                    f"each direction must be one of {list(_DIRECTIONS)}"
                )
                raise InvalidOptionError(msg)
            declared[str(column)] = direction
        return declared
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
) -> dict[str, Meaning]:
    """The meaning of each metric column.

    Parameters
    ----------
    columns
        The metric columns.
    lower_is_better
        Columns of another tool's table whose lower values are better (a list), or a mapping
        ``{column: "higher" | "lower" | "none"}``. A declaration that contradicts one of our
        metrics' own direction is an error.
    known
        Metrics already resolved for some columns (``compare`` passes what it evaluated).

    Examples
    --------
    >>> found = meanings(["map", "frp", "latency"], lower_is_better=["latency"])
    >>> [(c, m.direction, m.summary, m.source) for c, m in found.items()]
    [('map', 'higher', 'mean', 'metric'), ('frp', 'lower', 'mean', 'metric'), ('latency', 'lower', 'mean', 'option')]
    """  # noqa: E501
    declared = _declared(lower_is_better)
    unknown = sorted(set(declared) - set(columns))
    if unknown:
        msg = (
            f"option lower_is_better= names {unknown}, which are not compared columns; "
            f"columns: {list(columns)}"
        )
        raise InvalidOptionError(msg)
    found: dict[str, Meaning] = {}
    for column in columns:
        metric = (known or {}).get(column) or recognise(column)
        own = of_metric(metric) if metric is not None else None
        if column in declared:
            direction = declared[column]
            if own is not None and own.direction != direction:
                msg = (
                    f"option lower_is_better= declares {column!r} {direction}-is-better, but "
                    f"{column!r} names polars_rankeval's metric, "
                    f"which is {own.direction}-is-better; rename the column if it is another "
                    "measure"
                )
                raise InvalidOptionError(msg)
            summary: Summary = own.summary if own is not None else "mean"
            level: Level = own.level if own is not None else "query"
            found[column] = Meaning(direction, summary, level, "option")
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
    # order of the queries and in passes (polars_rankeval._exact_sum). "sum" adds counts
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
