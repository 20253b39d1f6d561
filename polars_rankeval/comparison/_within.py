"""Systems compared inside each segment: ``compare(..., within="activity")``.

A segment is one combination of the values of the ``within`` columns (a null is a value of its
own). Each segment's per-query rows are compared on their own, exactly as if the segment were
the whole table; only the multiple-testing correction sees every segment, because the family
is every comparison of the call. Comparisons that cannot be made (a segment with one system,
without the baseline, or a pair with no shared query) are left out with an
:class:`~polars_rankeval.errors.EmptyEvaluationWarning` naming the segment, never kept as a
row of NaN.

Without ``within``, :func:`empty_pairs_warning` says when pairs share no query and, when one
``by`` column splits the queries into groups, suggests it as ``within``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import polars as pl

from polars_rankeval._engine.warn import warn_at
from polars_rankeval.comparison._pairing import Table
from polars_rankeval.errors import (
    ColumnNotFoundError,
    EmptyEvaluationWarning,
    InvalidOptionError,
)

#: Compares one segment's checked table: the comparison rows before the correction.
CompareOne = Callable[[Table], pl.DataFrame]
#: Checks one segment's per-query rows (without the segment columns) into a table.
Prepare = Callable[[pl.DataFrame], Table]


def segment_columns(
    within: object,
    columns: Sequence[str],
    keys: list[str],
    query: str,
    *,
    reserved: Sequence[str] = (),
    where: str = "per-query table",
) -> list[str]:
    """The ``within`` columns as a list, checked against the table and the other keys.

    ``reserved`` are the output's own column names, which a segment column cannot take;
    ``where`` names the table in the messages.

    Examples
    --------
    >>> segment_columns("activity", ["system", "query", "activity"], ["system"], "query")
    ['activity']
    >>> segment_columns("system", ["system", "query"], ["system"], "query")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    polars_rankeval.errors.InvalidOptionError: option within= names 'system', a column of by=: ...
    """
    names = [within] if isinstance(within, str) else within
    if not isinstance(names, (list, tuple)) or not names:
        msg = f"option within= must be a column name or a list of them, got {within!r}"
        raise InvalidOptionError(msg)
    for name in names:
        if not isinstance(name, str):
            msg = f"option within= must name columns (strings), got {name!r}"
            raise InvalidOptionError(msg)
        if name in keys or name == query:
            where = "by=" if name in keys else "query="
            msg = (
                f"option within= names {name!r}, a column of {where}: a segment column cannot "
                "also name the systems (by=) or the query (query=)"
            )
            raise InvalidOptionError(msg)
        if name in reserved:
            msg = (
                f"option within= names {name!r}, a column of compare's output; rename the "
                "segment column"
            )
            raise InvalidOptionError(msg)
        if name not in columns:
            msg = (
                f"column {name!r} (option within=) is not in the {where}; "
                f"columns present: {list(columns)}"
            )
            raise ColumnNotFoundError(msg)
    if len(set(names)) < len(names):
        msg = f"option within= names a column twice: {list(names)}"
        raise InvalidOptionError(msg)
    return list(names)


def _named(segment: dict[str, object]) -> str:
    """``activity='heavy'``: a segment as the warnings name it."""
    return ", ".join(f"{name}={value!r}" for name, value in segment.items())


def _warn(message: str) -> None:
    warn_at(message, EmptyEvaluationWarning)


def _unpaired(raw: pl.DataFrame) -> pl.DataFrame:
    """The rows of pairs with no shared query (``n_queries == 0``)."""
    return raw.filter(pl.col("n_queries") == 0)


def _describe_unpaired(unpaired: pl.DataFrame) -> str:
    """``'a' vs 'b' (map, ndcg@10)``: each pair once, with the metrics it has no query for."""
    grouped = (
        unpaired.group_by("baseline", "system", maintain_order=True)
        .agg(pl.col("metric"))
        .iter_rows()
    )
    return "; ".join(f"{b!r} vs {s!r} ({', '.join(m)})" for b, s, m in grouped)


def by_segment(
    frame: pl.DataFrame,
    within: list[str],
    baseline: str | None,
    prepare: Prepare,
    compare_one: CompareOne,
) -> pl.DataFrame:
    """Every segment compared alone, segment columns first; uncorrected p-values.

    ``baseline`` is the baseline's system name (already checked against every segment's
    systems) or None for every pair.
    """
    schema = frame.schema
    parts = []
    # Sorted segments (nulls last): the output's order does not depend on the input's.
    segments = frame.select(within).unique().sort(within, nulls_last=True)
    grouped = frame.partition_by(within, as_dict=True, include_key=False)
    for values in segments.iter_rows():
        segment = dict(zip(within, values, strict=True))
        table = prepare(grouped[values])
        if len(table.systems) < 2:
            _warn(
                f"compare: segment {_named(segment)} holds one system ({table.systems[0]!r}), "
                "nothing to compare it with; left out"
            )
            continue
        if baseline is not None and baseline not in table.systems:
            _warn(
                f"compare: segment {_named(segment)} has no rows of the baseline {baseline!r} "
                f"(its systems: {table.systems}); left out"
            )
            continue
        raw = compare_one(table)
        unpaired = _unpaired(raw)
        if unpaired.height:
            _warn(
                f"compare: in segment {_named(segment)}, {_describe_unpaired(unpaired)} share no "
                "query with a value for both systems; those rows are left out"
            )
            raw = raw.filter(pl.col("n_queries") > 0)
        parts.append(
            raw.select(
                *(pl.lit(value, dtype=schema[name]).alias(name) for name, value in segment.items()),
                pl.all(),
            )
        )
    if not parts or not any(part.height for part in parts):
        msg = (
            f"compare: no segment of within={within} has two systems with a shared query"
            + (f" and the baseline {baseline!r}" if baseline is not None else "")
            + " (see the warnings): nothing to compare"
        )
        raise InvalidOptionError(msg)
    return pl.concat(parts, how="vertical")


def _splitting_columns(frame: pl.DataFrame, keys: list[str], query: str) -> list[str]:
    """The ``by`` columns whose values split the queries (each query has one value of them)."""
    if len(keys) < 2:
        return []
    found = []
    for name in keys:
        counts = frame.group_by(query).agg(pl.col(name).n_unique().alias("n"))
        if frame[name].n_unique() > 1 and int(counts["n"].max() or 0) <= 1:  # type: ignore[arg-type]
            found.append(name)
    return found if len(found) < len(keys) else []


def empty_pairs_warning(
    raw: pl.DataFrame, frame: pl.DataFrame, keys: list[str], query: str
) -> None:
    """Warn when pairs share no query: their rows are NaN. Suggest ``within=`` when it fits.

    ``frame`` is the per-query table (with the ``by`` columns), read only when there are
    such pairs.
    """
    unpaired = _unpaired(raw)
    if not unpaired.height:
        return
    pairs = unpaired.select("baseline", "system").unique()
    total = raw.select("baseline", "system").unique().height
    first = unpaired.row(0, named=True)
    message = (
        f"compare: {pairs.height} of {total} system pair(s) share no query with a value for "
        f"both (e.g. {first['baseline']!r} vs {first['system']!r} on {first['metric']!r}): "
        "their rows have no statistics (NaN)"
    )
    splitting = _splitting_columns(frame, keys, query)
    if splitting:
        rest = [name for name in keys if name not in splitting]
        shown_rest = rest[0] if len(rest) == 1 else rest
        shown_split = splitting[0] if len(splitting) == 1 else splitting
        message += (
            f". The queries are split by {splitting} of by={keys}: to compare the systems "
            f"inside each segment, pass by={shown_rest!r}, within={shown_split!r} "
            f"(rank-eval compare: --by {','.join(rest)} --within {','.join(splitting)})"
        )
    warn_at(message, EmptyEvaluationWarning)
