"""The checks and names the charts share: by columns, frames, columns, system names.

Polars only (no Altair): every ``*_data`` function validates its input here.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from polars_rankeval._columns import as_polars
from polars_rankeval.errors import ColumnNotFoundError, InvalidOptionError
from polars_rankeval.meaning import LowerIsBetter, Meaning, meanings

#: How the values of several ``by`` columns are joined into one system name (as ``compare``).
SYSTEM_SEPARATOR = " / "


def _meaning(metric: str, lower_is_better: LowerIsBetter) -> Meaning:
    """The metric's direction and summary (meaning.py), refusing a metric with no direction."""
    found = meanings([metric], lower_is_better=lower_is_better)[metric]
    if found.direction == "none":
        msg = (
            f"metric {metric!r} has no direction (a count of the input): no system is better, "
            "so there are no wins or losses to draw"
        )
        raise InvalidOptionError(msg)
    return found


def _keys(by: str | Sequence[str] | None) -> list[str]:
    if by is None:
        return []
    keys = [by] if isinstance(by, str) else list(by)
    for key in keys:
        if not isinstance(key, str):
            msg = f"option by= must name columns (str), got {key!r}"
            raise InvalidOptionError(msg)
    return keys


def _frame(data: object, option: str) -> pl.DataFrame:
    frame = as_polars(data, option)
    return frame.collect() if isinstance(frame, pl.LazyFrame) else frame


def _check_columns(frame: pl.DataFrame, wanted: Sequence[tuple[str, str]], table: str) -> None:
    for option, name in wanted:
        if name not in frame.columns:
            msg = (
                f"column {name!r} (option {option}=) is not in the {table}; "
                f"columns present: {frame.columns}"
            )
            raise ColumnNotFoundError(msg)


def _system_name(keys: Sequence[str]) -> pl.Expr:
    """One string naming the system: the ``by`` value, or the values joined with " / "."""
    if len(keys) == 1:
        return pl.col(keys[0]).cast(pl.String)
    return pl.concat_str([pl.col(key).cast(pl.String) for key in keys], separator=SYSTEM_SEPARATOR)


def _system_value(value: object) -> str:
    """A system given by the user: a value, or a tuple of the values of several by columns."""
    if isinstance(value, tuple):
        return SYSTEM_SEPARATOR.join(str(part) for part in value)
    return str(value)


def _with_run(data: pl.DataFrame, keys: Sequence[str]) -> tuple[pl.DataFrame, str | None]:
    """The column that colours a chart: the by column itself, or a joined ``run`` column."""
    if not keys:
        return data, None
    if len(keys) == 1:
        return data, keys[0]
    return data.with_columns(_system_name(keys).alias("run")), "run"
