"""From a per-query table to paired values: systems, checks, what each column means.

A comparison reads one row per ``(by, query)``. Here the table is checked (keys present,
one row per pair, finite values, distinct system names), each metric column gets its
:class:`~polars_rankeval._engine.meaning.Meaning` (direction and summary rule), and the values are
paired by query for every matchup.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import polars as pl

from polars_rankeval._engine.columns import as_polars
from polars_rankeval._engine.meaning import (
    Directions,
    LowerIsBetter,
    Meaning,
    meanings,
    on_test_scale,
    summarise,
)
from polars_rankeval._engine.options import check_choice
from polars_rankeval._engine.vocabulary import VALUE, baseline_column
from polars_rankeval.comparison._stats import _ZERO
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    ColumnValueError,
    InvalidOptionError,
)
from polars_rankeval.metrics._base import Metric

Missing = Literal["drop", "zero"]

#: How the values of several ``by`` columns are joined into one system name.
SYSTEM_SEPARATOR = " / "


@dataclass(frozen=True)
class Table:
    """A checked per-query table: ``__system``, ``__query`` and one Float64 column per metric."""

    named: pl.DataFrame
    keys: list[str]
    metrics: list[str]
    meanings: dict[str, Meaning]
    systems: list[str]
    # queries × systems per (metric, missing): pivoted once, read by the pairs, the Tukey
    # matrix and the overall values alike
    matrices: dict[tuple[str, str], pl.DataFrame] = field(default_factory=dict)


@dataclass(frozen=True)
class Pair:
    """One matchup on one metric: the paired values (as evaluated) of both systems."""

    metric: str
    meaning: Meaning
    baseline: str
    system: str
    x: np.ndarray  # baseline values, paired
    y: np.ndarray  # system values, paired
    n_dropped: int

    @property
    def differences(self) -> np.ndarray:
        """``system − baseline`` per query on the test scale (logs for a geometric mean)."""
        x = on_test_scale(self.x, self.meaning.summary)
        y = on_test_scale(self.y, self.meaning.summary)
        d = y - x
        scale = np.maximum(1.0, np.maximum(np.abs(x), np.abs(y)))
        return np.where(np.abs(d) <= _ZERO * scale, 0.0, d)


@dataclass(frozen=True)
class Overall:
    """A system's summary over all the queries it has a value for, and their number."""

    value: float
    queries: int


def system_names(by: Sequence[str]) -> pl.Expr:
    """A system's name: its ``by`` value as text, or the values joined by ``" / "``.

    compare, the CLI and the plots name systems with this one rule.
    """
    if len(by) == 1:
        return pl.col(by[0]).cast(pl.String)
    return pl.concat_str([pl.col(name).cast(pl.String) for name in by], separator=SYSTEM_SEPARATOR)


def system_columns(columns: Sequence[str]) -> list[str]:
    """The ``by`` columns of a comparison result: each column ``X`` beside a ``baseline_X``.

    A compare (or bootstrap) result names its systems by their ``by`` columns and the
    baseline's by ``baseline_<by>`` (:func:`~polars_rankeval._engine.vocabulary.baseline_column`);
    the report, the plots, the gate and the CLI find the keys here, never by a fixed name.
    ``value`` is not a key: ``baseline_value`` is the baseline's value beside it.

    Examples
    --------
    >>> system_columns(
    ...     [
    ...         "metric",
    ...         "run",
    ...         "version",
    ...         "baseline_run",
    ...         "baseline_version",
    ...         "value",
    ...         "baseline_value",
    ...         "delta",
    ...     ]
    ... )
    ['run', 'version']
    """
    present = set(columns)
    return [name for name in columns if name != VALUE and baseline_column(name) in present]


def with_pair_names(
    frame: pl.DataFrame, *, system: str = "system", baseline: str = "baseline"
) -> pl.DataFrame:
    """``frame`` (a comparison result) plus each row's system and baseline names, for display.

    The names are :func:`system_names` of the ``by`` columns and of their ``baseline_<by>``
    columns (joined with ``" / "`` for several keys): the report, the plots, the CLI and the
    gate show systems by this one rule. The columns are added under ``system`` and
    ``baseline`` (replacing a key column of that name, which holds the same value as text).

    Examples
    --------
    >>> rows = pl.DataFrame(
    ...     {
    ...         "metric": ["map"],
    ...         "run": ["bm25"],
    ...         "v": [2],
    ...         "baseline_run": ["qe"],
    ...         "baseline_v": [1],
    ...         "delta": [0.1],
    ...     }
    ... )
    >>> with_pair_names(rows).select("baseline", "system").row(0)
    ('qe / 1', 'bm25 / 2')
    """
    keys = system_columns(frame.columns)
    if not keys:
        msg = (
            "the comparison has no system columns (a column X beside baseline_X, as compare "
            f"gives them); columns: {frame.columns}"
        )
        raise ColumnNotFoundError(msg)
    return frame.with_columns(
        system_names(keys).alias(system),
        system_names([baseline_column(name) for name in keys]).alias(baseline),
    )


def display_order(names: Iterable[str]) -> list[str]:
    """Systems in the order the report and the charts list them: case-folded, then exact.

    The one rule of every table and chart, so ``"fub03"`` sits beside ``"FUB02"`` rather than
    after every capital (byte order), and a report and its chart list systems alike.

    Examples
    --------
    >>> display_order(["uwmtCR0", "InexpC2", "apl", "Apl"])
    ['Apl', 'apl', 'InexpC2', 'uwmtCR0']
    """
    return sorted(set(names), key=lambda name: (name.casefold(), name))


def system_value(value: object) -> str:
    """The name of a system given by the user: a value, or a tuple of the ``by`` values."""
    if isinstance(value, tuple):
        return SYSTEM_SEPARATOR.join(str(part) for part in value)
    return str(value)


def resolve_baseline(baseline: object, systems: list[str]) -> str | None:
    """The baseline's system name (a tuple names one value per ``by`` column)."""
    if baseline is None:
        return None
    return check_choice("baseline", system_value(baseline), systems)


def _refuse_unpairable(column: str, meaning: Meaning) -> None:
    """Counts, direction-less and per-system metrics have no paired per-query comparison."""
    if meaning.level == "system":
        msg = (
            f"metric {column!r} is a per-system value (it exists only over a whole run), so "
            "compare cannot pair it by query; rke.bootstrap(log, metrics, by=..., "
            "baseline=...) gives its interval and a paired difference over resampled queries "
            "(users), and rke.evaluate(..., by=...) its value per system"
        )
        raise InvalidOptionError(msg)
    if meaning.summary == "sum":
        msg = (
            f"metric {column!r} is a count that evaluate sums over queries, not a per-query "
            "score to compare; leave it out of compare (evaluate gives its total), or compare "
            "a rate such as recall or p@k"
        )
        raise InvalidOptionError(msg)
    if meaning.direction == "none":
        msg = (
            f"metric {column!r} has no direction (no value of it is better than another), so "
            "compare cannot say which system is better; leave it out, or declare its direction "
            f"with direction={{{column!r}: 'higher'}} (or 'lower')"
        )
        raise InvalidOptionError(msg)


def check_pairable(
    columns: Sequence[str], known: Mapping[str, Metric], direction: Directions = None
) -> dict[str, Meaning]:
    """The meanings of ``columns``, refusing those a paired per-query test cannot compare."""
    found = meanings(columns, known=known, direction=direction)
    for name, meaning in found.items():
        _refuse_unpairable(name, meaning)
    return found


def _check_finite(named: pl.DataFrame, metrics: list[str]) -> None:
    """±inf per-query values are an error: no mean, test or tie rule is defined for them."""
    for metric in metrics:
        infinite = named.filter(pl.col(metric).is_infinite())
        if infinite.height:
            system, query_id = (
                infinite.sort("__system", "__query").select("__system", "__query").row(0)
            )
            msg = (
                f"metric column {metric!r} holds {infinite.height} infinite value(s), e.g. system "
                f"{system!r}, query {query_id!r}: per-query values must be finite numbers "
                "(null or NaN marks an undefined value, which is left out)"
            )
            raise ColumnValueError(msg)


def _check_distinct_names(frame: pl.DataFrame, keys: list[str]) -> None:
    """Two systems must not share a joined name (``("x / y", "z")`` and ``("x", "y / z")``)."""
    if len(keys) == 1:
        return
    systems = frame.select(*keys, system_names(keys).alias("__system")).unique()
    shared = systems.group_by("__system").len().filter(pl.col("len") > 1)
    if shared.height:
        name = shared.sort("__system").item(0, "__system")
        values = systems.filter(pl.col("__system") == name).drop("__system").sort(keys).rows()
        msg = (
            f"systems {values} of by={keys} all join to the name {name!r} (values are joined "
            f"with {SYSTEM_SEPARATOR!r}); rename the values so that each system has its own name"
        )
        raise ColumnValueError(msg)


def prepare(
    per_query: object,
    by: str | Sequence[str],
    query: str,
    metrics: Sequence[str] | None,
    *,
    lower_is_better: LowerIsBetter = None,
    known: Mapping[str, Metric] | None = None,
    direction: Directions = None,
) -> Table:
    """Check the per-query table and give every metric column its meaning."""
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
    found = meanings(metrics, lower_is_better=lower_is_better, known=known, direction=direction)
    for name, meaning in found.items():
        _refuse_unpairable(name, meaning)
    named = frame.select(
        system_names(keys).alias("__system"),
        pl.col(query).alias("__query"),
        *(pl.col(name).cast(pl.Float64).fill_nan(None).alias(name) for name in metrics),
    )
    if named["__system"].null_count():
        msg = f"a by= column ({keys}) holds nulls: every row needs a system"
        raise ColumnValueError(msg)
    _check_distinct_names(frame, keys)
    repeated = named.group_by("__system", "__query").len().filter(pl.col("len") > 1)
    if repeated.height:
        example = repeated.sort("__system", "__query").row(0)
        msg = (
            f"the per-query table has {repeated.height} (system, query) pair(s) with more than "
            f"one row, e.g. system {example[0]!r}, query {example[1]!r}: it needs one row per "
            f"({', '.join(keys)}, {query}); did you leave a segment column out of by=?"
        )
        raise ColumnValueError(msg)
    _check_finite(named, metrics)
    # Systems in sorted order of their names, as evaluate(by=...) sorts its groups.
    systems = named.get_column("__system").unique().sort().to_list()
    return Table(named, keys, metrics, found, systems)


def wide(table: Table, metric: str, missing: Missing) -> pl.DataFrame:
    """Queries × systems for one metric: null where a system has no value for a query.

    With ``missing="zero"`` a query that a system has *no row* for scores 0 (trec_eval -c); a
    row whose value is undefined (null or NaN, e.g. ``frp`` without a relevant item) stays out.
    """
    cached = table.matrices.get((metric, missing))
    if cached is not None:
        return cached
    named, systems = table.named, table.systems
    long = named.select("__system", "__query", metric, pl.lit(value=True).alias("__present"))
    if missing == "zero":
        grid = (
            named.select("__query").unique().join(pl.DataFrame({"__system": systems}), how="cross")
        )
        long = grid.join(long, on=["__system", "__query"], how="left").with_columns(
            pl.when(pl.col("__present").is_null()).then(0.0).otherwise(pl.col(metric)).alias(metric)
        )
    pivoted = long.pivot(on="__system", index="__query", values=metric)
    for system in systems:
        if system not in pivoted.columns:
            pivoted = pivoted.with_columns(pl.lit(None, dtype=pl.Float64).alias(system))
    # Sorted by query: the resampling draws meet the queries in an order that does not depend
    # on the input's row order (or on how Polars ordered a unique()).
    matrix = pivoted.select("__query", *systems).sort("__query")
    table.matrices[(metric, missing)] = matrix
    return matrix


def _column(matrix: pl.DataFrame, system: str) -> np.ndarray:
    return matrix[system].to_numpy().astype(np.float64)


def overall(table: Table, metric: str, missing: Missing) -> dict[str, Overall]:
    """Each system's summary over every query it has a value for: what evaluate prints."""
    matrix = wide(table, metric, missing)
    summary = table.meanings[metric].summary
    found = {}
    for system in table.systems:
        values = _column(matrix, system)
        found[system] = Overall(summarise(values, summary), int((~np.isnan(values)).sum()))
    return found


def matchups(systems: list[str], baseline: str | None) -> list[tuple[str, str]]:
    """``(baseline, system)`` pairs: every system against the baseline, or every pair."""
    if baseline is not None:
        return [(baseline, system) for system in systems if system != baseline]
    return list(itertools.combinations(systems, 2))


def pairs(table: Table, baseline: str | None, missing: Missing) -> list[Pair]:
    """Every matchup on every metric, over the queries both systems have a value for."""
    found = []
    for metric in table.metrics:
        matrix = wide(table, metric, missing)
        for first, second in matchups(table.systems, baseline):
            x, y = _column(matrix, first), _column(matrix, second)
            either = ~np.isnan(x) | ~np.isnan(y)
            both = ~np.isnan(x) & ~np.isnan(y)
            found.append(
                Pair(
                    metric,
                    table.meanings[metric],
                    first,
                    second,
                    x[both],
                    y[both],
                    int(either.sum() - both.sum()),
                )
            )
    return found


def all_systems(table: Table, metric: str, missing: Missing) -> tuple[np.ndarray, np.ndarray]:
    """Queries × systems values (raw) over the queries every system has, and that row mask."""
    matrix = wide(table, metric, missing)
    scores = matrix.select(table.systems).to_numpy().astype(np.float64)
    complete = ~np.isnan(scores).any(axis=1)
    return scores, complete
