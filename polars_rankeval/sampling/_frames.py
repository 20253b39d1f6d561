"""Inputs shared by the sampling functions: tables read once, columns checked, keys aligned."""

from __future__ import annotations

import os
from collections.abc import Sequence

import polars as pl

from polars_rankeval._engine.columns import as_polars
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    DuplicateItemError,
    InvalidOptionError,
)

#: How many offending rows an error message shows.
SHOWN = 5


def read(value: object, option: str) -> pl.DataFrame:
    """A table given as a Polars/pandas/Arrow frame, a LazyFrame or a Parquet/CSV path."""
    if isinstance(value, (str, os.PathLike)):
        path = os.fspath(value)
        if not os.path.exists(path):
            msg = f"option {option}=: no file or directory {path!r}"
            raise InvalidOptionError(msg)
        if path.lower().endswith(".csv"):
            return pl.read_csv(path)
        return pl.read_parquet(path)
    frame = as_polars(value, option)
    return frame.collect() if isinstance(frame, pl.LazyFrame) else frame


def require(frame: pl.DataFrame, columns: Sequence[str], option: str) -> None:
    """Each column must be present, with what the function reads it as in the message."""
    for column in columns:
        if column not in frame.columns:
            msg = (
                f"column {column!r} is not in the {option}= table; columns present: "
                f"{frame.columns} (name the columns with query=, item=, score=, by=)"
            )
            raise ColumnNotFoundError(msg)


def by_columns(by: str | Sequence[str] | None) -> list[str]:
    if by is None:
        return []
    return [by] if isinstance(by, str) else list(by)


def align(frame: pl.DataFrame, column: str, dtype: pl.DataType, option: str) -> pl.DataFrame:
    """Give ``frame``'s key ``column`` the reference table's dtype, so joins match ids.

    Integers of different widths are cast (checked: an id that does not fit is an error, not a
    silent wrap); strings and categoricals meet as strings; anything else must already agree.
    """
    own = frame.schema[column]
    if own == dtype:
        return frame
    if own.is_integer() and dtype.is_integer():
        try:
            return frame.with_columns(pl.col(column).cast(dtype, strict=True))
        except pl.exceptions.InvalidOperationError as error:
            msg = f"column {column!r} of the {option}= table has ids that do not fit {dtype}"
            raise ColumnTypeError(msg) from error
    text = (pl.String, pl.Categorical)
    if isinstance(own, text) and isinstance(dtype, text):
        return frame.with_columns(pl.col(column).cast(pl.String))
    msg = (
        f"column {column!r} of the {option}= table is {own} but the reference table's is "
        f"{dtype}; cast one of them so the ids match"
    )
    raise ColumnTypeError(msg)


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
