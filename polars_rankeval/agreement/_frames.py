"""Inputs shared by the agreement functions."""

from __future__ import annotations

from typing import Any

import polars as pl

from polars_rankeval.errors import ColumnTypeError


def collect(frame: Any, name: str) -> pl.DataFrame:
    if isinstance(frame, pl.LazyFrame):
        return frame.collect()
    if isinstance(frame, pl.DataFrame):
        return frame
    msg = f"{name} must be a polars DataFrame or LazyFrame, got {type(frame).__name__}"
    raise ColumnTypeError(msg)
