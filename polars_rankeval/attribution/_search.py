"""Which setup reproduces another tool's numbers: a per-query table, or the mean it printed.

The search starts from every preset that defines the metric, keeps the closest, then changes
one setting at a time (each to the values its type allows, and to the values other presets
give it), keeping the change that brings the numbers closest, until they match to the
target's precision or no change helps. The settings and their values are the engine's
(:mod:`polars_rankeval.attribution._setup`), so the search tries what the engine can compute.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from polars_rankeval._engine.columns import as_polars
from polars_rankeval.attribution._attribute import VALUE, Columns, Result, evaluate_setup
from polars_rankeval.attribution._setup import BASE, Setup, choices, describe, resolve, same
from polars_rankeval.conventions import CONVENTIONS
from polars_rankeval.errors import ColumnNotFoundError, ColumnTypeError, InvalidOptionError

#: Rounds of changes from a starting preset (each round keeps one change, of one or two settings).
MAX_ROUNDS = 4
# How many of the closest presets the search starts from (and trec_eval's, always).
_STARTS = 3
# A number given with fewer decimals is taken as printed with this many (trec_eval's).
_MIN_DIGITS = 4
# Below this, two floats are the same number summed in another order.
_FLOOR = 1e-9


@dataclass(frozen=True)
class Target:
    """Another tool's numbers: per query (``table``: query, value) or only their mean."""

    table: pl.DataFrame | None
    mean: float | None
    tolerance: float
    what: str  # how the report names it: "the table (50 queries)", "the mean 0.5371"


def decimals_tolerance(values: list[float]) -> float:
    """Half a unit of the last digit printed: 0.5371 matches to 5e-5, 0.53712 to 5e-6.

    A float does not keep the digits it was printed with: ``1.0`` may be a printed ``1.0000``.
    So fewer than 4 decimals count as 4 (trec_eval's), never as a loose match (``1.0`` would
    otherwise match anything from 0.5 on); pass ``tolerance=`` for a tool that prints fewer.

    >>> decimals_tolerance([0.5371]), decimals_tolerance([0.5, 0.25]), decimals_tolerance([0.53712])
    (5e-05, 5e-05, 5e-06)
    """
    digits = 0
    for value in values:
        text = repr(float(value))
        if "e" in text or "inf" in text or "nan" in text:
            return _FLOOR
        digits = max(digits, len(text.split(".")[1].rstrip("0")) if "." in text else 0)
    digits = max(digits, _MIN_DIGITS)
    return max(0.5 * 10.0 ** (-digits), _FLOOR) if digits < 12 else _FLOOR


def as_target(side: object, metric: str, query: str, tolerance: float | None) -> Target | None:
    """The other tool's numbers, or None when ``side`` is a setup (a preset or a mapping)."""
    if isinstance(side, (str, Mapping)):
        return None
    if isinstance(side, bool) or not isinstance(side, (int, float)):
        return _table_target(side, metric, query, tolerance)
    mean = float(side)
    if not math.isfinite(mean):
        msg = f"explain: a tool's mean must be a finite number, got {side!r}"
        raise InvalidOptionError(msg)
    tol = decimals_tolerance([mean]) if tolerance is None else tolerance
    return Target(None, mean, tol, f"the mean {side!r}")


def _table_target(side: object, metric: str, query: str, tolerance: float | None) -> Target:
    try:
        frame = as_polars(side, "a table side of explain")
    except InvalidOptionError:
        msg = (
            "explain: a side must be a convention name, a mapping of settings, a per-query table "
            f"(the {query!r} column and one value column) or a mean (a float), got "
            f"{type(side).__name__}"
        )
        raise InvalidOptionError(msg) from None
    if isinstance(frame, pl.LazyFrame):
        frame = frame.collect()
    if query not in frame.columns:
        msg = f"explain: the per-query table has no {query!r} column (query=); its columns: "
        msg += ", ".join(frame.columns)
        raise ColumnNotFoundError(msg)
    others = [name for name in frame.columns if name != query]
    chosen = [name for name in others if name in (metric, VALUE)] or others
    if len(chosen) != 1:
        msg = (
            f"explain: the per-query table must hold {query!r} and one value column (or one "
            f"named {metric!r} or 'value'); it has {others}"
        )
        raise InvalidOptionError(msg)
    column = chosen[0]
    if not frame.schema[column].is_numeric():
        msg = f"explain: the per-query table's column {column!r} must be numeric, got "
        msg += str(frame.schema[column])
        raise ColumnTypeError(msg)
    table = frame.select(
        pl.col(query).cast(pl.String), pl.col(column).cast(pl.Float64).alias(VALUE)
    ).drop_nulls(VALUE)
    if table.get_column(query).is_duplicated().any():
        repeated = table.filter(pl.col(query).is_duplicated()).get_column(query).head(3)
        msg = f"explain: the per-query table repeats queries: {repeated.to_list()}"
        raise InvalidOptionError(msg)
    values = table.get_column(VALUE).to_list()
    tol = decimals_tolerance(values) if tolerance is None else tolerance
    return Target(table, None, tol, f"the table ({table.height} queries)")


@dataclass(frozen=True)
class Distance:
    """How far a setup's numbers are from the target.

    ``unmatched``: queries missing on either side or off by more than the tolerance (1 for a
    mean that does not match); ``error``: the largest gap; ``total``: the sum of the gaps,
    which orders two setups that leave as many queries unmatched (a change that brings every
    query closer is progress even before one of them matches).
    """

    unmatched: int
    error: float
    total: float = 0.0

    @property
    def key(self) -> tuple[int, float]:
        return (self.unmatched, self.total)


def distance(result: Result, target: Target, query: str) -> Distance:
    """Queries missing on either side or off by more than the tolerance; the largest error."""
    if target.table is None:
        assert target.mean is not None
        error = abs(result.value - target.mean) if math.isfinite(result.value) else math.inf
        return Distance(int(error > target.tolerance), error, error)
    if result.per_query is None:
        msg = "explain: a per-system metric has no per-query values; give the tool's value"
        raise InvalidOptionError(msg)
    ours = result.per_query.select(pl.col(query).cast(pl.String), pl.col(VALUE).alias("ours"))
    joined = ours.join(target.table, on=query, how="full", coalesce=True, nulls_equal=True)
    gap = (pl.col("ours") - pl.col(VALUE)).abs()
    row = joined.select(
        missing=(pl.col("ours").is_null() | pl.col(VALUE).is_null()).sum(),
        off=(gap > target.tolerance).sum(),
        error=gap.max(),
        total=gap.sum(),
    ).row(0, named=True)
    error = row["error"] if row["error"] is not None else math.inf
    return Distance(int(row["missing"] + row["off"]), float(error), float(row["total"] or 0.0))


def identify(
    frame: pl.DataFrame, metric: str, target: Target, columns: Columns
) -> tuple[Setup, Distance, list[str]]:
    """The setup whose numbers come closest to ``target`` (exact when the distance is 0).

    Also the other presets that reproduce the target as well (two tools can agree on it).
    """
    cache: dict[str, tuple[Result, Distance]] = {}

    def score(setup: Setup) -> Distance:
        key = repr(sorted((name, describe(value)) for name, value in setup.values.items()))
        if key not in cache:
            try:
                result = evaluate_setup(frame, setup, columns)
            except InvalidOptionError:  # a combination the metric refuses (ties=expected ...)
                return Distance(10**9, math.inf)
            cache[key] = (result, distance(result, target, columns.query))
        return cache[key][1]

    presets = []
    for name in CONVENTIONS:
        try:
            presets.append(resolve(name, metric))
        except InvalidOptionError:  # the tool has no such metric
            continue
    ranked = sorted(presets, key=lambda setup: score(setup).key)
    also = [p.label for p in ranked[1:] if score(p).key <= score(ranked[0]).key]
    # The closest preset may lead away from the tool (sklearn is closer to LensKit than
    # trec_eval is, yet LensKit is trec_eval with another discount): start from a few.
    starts = ranked[:_STARTS] + [p for p in ranked[_STARTS:] if p.label == BASE]
    best = ranked[0]
    for start in starts:
        found = _descend(start, presets, score)
        if score(found).key < score(best).key:
            best = found
        if score(best).unmatched == 0:
            break
    if " + " in best.label:  # a changed setup: the presets alone did not reproduce it
        also = []
    return best, score(best), also


def _descend(start: Setup, presets: list[Setup], score: Callable[[Setup], Distance]) -> Setup:
    """From ``start``, keep the change of one setting (or two) that brings the numbers closest.

    Two settings are tried together only when no single change helps, and only among the
    settings that move the numbers at all (a tool two settings away from every preset, where
    neither change alone helps: ranx's gain_level needs its relevance_level).
    """
    best = start
    for _ in range(MAX_ROUNDS):
        if score(best).unmatched == 0:
            break
        singles = [
            (name, value) for name in best.values for value in _values_to_try(best, name, presets)
        ]
        if not singles:
            break
        changed = {pair: _changed(best, *pair) for pair in singles}
        closest = min(changed.values(), key=lambda setup: score(setup).key)
        if score(closest).key < score(best).key:
            best = closest
            continue
        moving = [pair for pair, setup in changed.items() if score(setup).key != score(best).key]
        doubles = [
            _changed(changed[first], *second)
            for i, first in enumerate(moving)
            for second in moving[i + 1 :]
            if first[0] != second[0]
        ]
        if not doubles:
            break
        closest = min(doubles, key=lambda setup: score(setup).key)
        if score(closest).key >= score(best).key:
            break
        best = closest
    return best


def _values_to_try(setup: Setup, name: str, presets: list[Setup]) -> list[Any]:
    """The other values of one setting: those its type allows and those the presets give it."""
    tried: list[Any] = []
    # the lists cut at the metric's own cutoff (a tool that ranks only its top k)
    own = [setup.k] if name == "depth" and setup.k is not None else []
    for value in [*choices(setup.family, name), *own, *(p.values.get(name) for p in presets)]:
        if same(value, setup.values[name]) or any(same(value, seen) for seen in tried):
            continue
        tried.append(value)
    return tried


def _changed(setup: Setup, name: str, value: Any) -> Setup:
    changed = setup.with_values({name: value})
    label = f"{setup.label}, {name}={describe(value)}"
    if " + " not in setup.label:
        label = f"{setup.label} + {name}={describe(value)}"
    return Setup(label, changed.family, changed.k, changed.values)
