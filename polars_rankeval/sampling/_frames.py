"""Inputs shared by the sampling functions: tables read once, columns checked, keys aligned."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from polars_rankeval._engine.tables import align_key, read_table
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    DuplicateItemError,
)

#: How many offending rows an error message shows.
SHOWN = 5


def read(value: object, option: str) -> pl.DataFrame:
    """A table given as a Polars/pandas/Arrow frame, a LazyFrame or a file path, read now.

    The extra-tables module reads it (:func:`~polars_rankeval._engine.tables.read_table`:
    Parquet, CSV, TSV, NDJSON, a directory), so every table option reads paths alike.
    """
    return read_table(value, option).collect()


def require(frame: pl.DataFrame, columns: Sequence[str], option: str) -> None:
    """Each column must be present, with what the function reads it as in the message."""
    for column in columns:
        if column not in frame.columns:
            msg = (
                f"column {column!r} is not in the {option}= table; columns present: "
                f"{frame.columns} (name the columns with query=, item=, score=, by=)"
            )
            raise ColumnNotFoundError(msg)


def align(frame: pl.DataFrame, column: str, dtype: pl.DataType, option: str) -> pl.DataFrame:
    """Give ``frame``'s key ``column`` the reference table's dtype, so joins match ids.

    The extra tables' rule (:func:`~polars_rankeval._engine.tables.align_key`); an integer id
    that does not fit the reference's width is an error here, not a silent wrap.
    """
    aligned = align_key(frame.lazy(), column, dtype, option=option, against="the reference table's")
    try:
        return aligned.collect()
    except pl.exceptions.InvalidOperationError as error:
        msg = f"column {column!r} of the {option}= table has ids that do not fit {dtype}"
        raise ColumnTypeError(msg) from error


def no_duplicates(frame: pl.DataFrame, keys: Sequence[str], option: str) -> None:
    """A repeated key row is an error that shows the first few."""
    repeated = frame.group_by(keys).len().filter(pl.col("len") > 1)
    if repeated.height:
        shown = repeated.sort(keys).head(SHOWN).select(keys).rows()
        msg = (
            f"the {option}= table repeats {repeated.height} ({', '.join(keys)}) row(s), "
            f"e.g. {shown}; each must occur once"
        )
        raise DuplicateItemError(msg)
