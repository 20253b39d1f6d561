"""The checks and names the charts share: by columns, frames, columns, system names.

Polars only (no Altair): every ``*_data`` function validates its input here.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from polars_rankeval._engine.columns import as_polars
from polars_rankeval._engine.meaning import Directions, LowerIsBetter, Meaning, meanings
from polars_rankeval.comparison._pairing import system_names
from polars_rankeval.errors import ColumnNotFoundError, InvalidOptionError


def _meaning(metric: str, lower_is_better: LowerIsBetter, direction: Directions = None) -> Meaning:
    """The metric's direction and summary (meaning.py), refusing a metric with no direction."""
    found = meanings([metric], lower_is_better=lower_is_better, direction=direction)[metric]
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


def _with_run(data: pl.DataFrame, keys: Sequence[str]) -> tuple[pl.DataFrame, str | None]:
    """The column that colours a chart: the by column itself, or a joined ``run`` column."""
    if not keys:
        return data, None
    if len(keys) == 1:
        return data, keys[0]
    return data.with_columns(system_names(keys).alias("run")), "run"
