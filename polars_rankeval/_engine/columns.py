"""The long-format input contract: column names, dtype checks and the validated frame."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from polars_rankeval.errors import ColumnNotFoundError, ColumnTypeError, InvalidOptionError


@dataclass(frozen=True)
class Columns:
    """Names of the four contract columns plus the optional grouping keys.

    Parameters
    ----------
    query, item, score, relevance
        Column names in the user's table.
    by
        Extra keys (e.g. a model or date column). Each combination of ``by`` values is
        evaluated as a separate run, so the ranking partition is ``(*by, query)``.
    """

    query: str = "query"
    item: str = "item"
    score: str = "score"
    relevance: str = "relevance"
    by: tuple[str, ...] = ()

    @property
    def partition(self) -> list[str]:
        """Columns that identify one ranked list."""
        return [*self.by, self.query]


def as_polars(data: object, option: str = "data") -> pl.DataFrame | pl.LazyFrame:
    """A Polars frame from a Polars, pandas or Arrow table (converted once).

    Arrow data is wrapped without a copy where Arrow allows (``rechunk=False``); pandas goes
    through Arrow, with a named (non-default) index kept as a column and NaN read as null, so
    pandas' float labels with gaps stay unjudged rows rather than NaN.
    """
    if isinstance(data, (pl.DataFrame, pl.LazyFrame)):
        return data
    kind = type(data)
    package = kind.__module__.split(".", 1)[0]
    if package == "pandas" and kind.__name__ == "DataFrame":
        return pl.from_pandas(data, include_index=True)
    if package == "pyarrow" and kind.__name__ in ("Table", "RecordBatch"):
        converted = pl.from_arrow(data, rechunk=False)
        if isinstance(converted, pl.DataFrame):
            return converted
    elif hasattr(data, "__arrow_c_stream__"):
        # Anything speaking the Arrow PyCapsule protocol (DuckDB, Arrow readers, ...).
        return pl.DataFrame(data)
    msg = (
        f"{option} must be a polars DataFrame or LazyFrame, a pandas DataFrame or a pyarrow "
        f"Table, got {kind.__module__}.{kind.__name__}"
    )
    raise InvalidOptionError(msg)


def by_list(by: object) -> list[str]:
    """``by=`` as a list of column names (None: none; one name: a list of one).

    >>> by_list(None), by_list("system"), by_list(("model", "date"))
    ([], ['system'], ['model', 'date'])
    """
    if by is None:
        return []
    if isinstance(by, str):
        return [by]
    if isinstance(by, (list, tuple)) and all(isinstance(b, str) for b in by):
        return list(by)
    msg = f"by must be a column name or a list of them, got {by!r}"
    raise InvalidOptionError(msg)


def make_columns(
    *,
    query: str,
    item: str,
    score: str,
    relevance: str,
    by: str | Sequence[str] | None,
) -> Columns:
    """Build :class:`Columns`, checking that the names are usable strings."""
    by_tuple: tuple[str, ...] = () if by is None else (by,) if isinstance(by, str) else tuple(by)
    for option, name in (
        ("query", query),
        ("item", item),
        ("score", score),
        ("relevance", relevance),
        *(("by", b) for b in by_tuple),
    ):
        if not isinstance(name, str):
            msg = f"option {option}= must be a column name (str), got {name!r}"
            raise InvalidOptionError(msg)
    roles = [query, item, score, relevance]
    if len(set(roles)) != len(roles):
        msg = (
            "options query=, item=, score= and relevance= must name four different columns, "
            f"got {roles}"
        )
        raise InvalidOptionError(msg)
    clash = set(by_tuple) & set(roles)
    if clash:
        msg = f"by= must not repeat the query/item/score/relevance columns: {sorted(clash)}"
        raise InvalidOptionError(msg)
    return Columns(query=query, item=item, score=score, relevance=relevance, by=by_tuple)


def check_schema(
    schema: pl.Schema,
    columns: Columns,
    *,
    need_score: bool = True,
    need_relevance: bool = True,
) -> None:
    """Raise a clear error if a column is missing or has an unusable dtype.

    Reading the schema of a LazyFrame does not read its data, so this keeps evaluation lazy.
    """
    present = list(schema.names())
    wanted = [
        *(("by", b) for b in columns.by),
        ("query", columns.query),
        ("item", columns.item),
    ]
    if need_relevance:
        wanted.append(("relevance", columns.relevance))
    if need_score:
        wanted.append(("score", columns.score))
    hint = list_shaped(schema, columns)
    for option, name in wanted:
        if name not in schema:
            msg = (
                f"column {name!r} (option {option}=) is not in the input; "
                f"columns present: {present}"
            )
            if hint:
                msg += f"; {hint}"
            raise ColumnNotFoundError(msg)
    if need_score:
        score_dtype = schema[columns.score]
        if not (score_dtype.is_numeric() or score_dtype == pl.Null):
            msg = (
                f"column {columns.score!r} (score) must be numeric (int or float), "
                f"got {score_dtype}"
            )
            raise ColumnTypeError(msg)
    rel_dtype = schema[columns.relevance] if need_relevance else pl.Int64
    # Floats are accepted when every label is whole (pandas turns int labels with gaps into
    # floats); a fraction is refused when the data is read (see validation.py).
    if not (rel_dtype.is_integer() or rel_dtype.is_float() or rel_dtype in (pl.Boolean, pl.Null)):
        msg = (
            f"column {columns.relevance!r} (relevance) must hold integer labels "
            f"(as trec_eval qrels do), got {rel_dtype}; cast it, e.g. "
            f"pl.col({columns.relevance!r}).cast(pl.Int64), after checking no label has a "
            "fraction"
        )
        raise ColumnTypeError(msg)
    for option, name in (("query", columns.query), ("item", columns.item)):
        dtype = schema[name]
        if dtype.is_nested() or dtype == pl.Null:
            msg = f"column {name!r} ({option} id) must be a scalar id (str, int, ...), got {dtype}"
            if hint:
                msg += f"; {hint}"
            raise ColumnTypeError(msg)


def check_relevance_level(relevance_level: object) -> int:
    """Validate ``relevance_level=``: an integer, like trec_eval ``-l``."""
    if isinstance(relevance_level, bool) or not isinstance(relevance_level, int):
        msg = f"relevance_level= must be an int (like trec_eval -l), got {relevance_level!r}"
        raise InvalidOptionError(msg)
    return relevance_level


def holds_lists(dtype: pl.DataType) -> bool:
    """Whether a column of this type holds lists (a list-shaped input's columns)."""
    return isinstance(dtype, pl.List | pl.Array)


def list_shaped(schema: pl.Schema, columns: Columns) -> str | None:
    """A hint when the input looks list-shaped (one row per user with list columns), else None."""
    nested = [name for name in schema.names() if holds_lists(schema[name])]
    if not nested or (columns.item in schema and not holds_lists(schema[columns.item])):
        return None
    recommended = columns.item if columns.item in nested else nested[0]
    others = [name for name in nested if name != recommended]
    relevant = f", relevant={others[0]!r}" if others else ""
    return (
        f"the input has list columns {nested}: one row per user with lists. Convert it with "
        f"rke.from_lists(frame, query={columns.query!r}, recommended={recommended!r}"
        f"{relevant}), or pass item={recommended!r}"
        + (f", relevance={others[0]!r}" if others else "")
        + " to evaluate it as it is"
    )
