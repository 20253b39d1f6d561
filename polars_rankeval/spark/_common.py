"""Shared pieces of the Spark routes: the pyspark import and Arrow/Spark schema mapping."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import polars as pl
import pyarrow as pa

from polars_rankeval._engine.evaluate import evaluate_frame
from polars_rankeval.errors import EmptyEvaluationWarning

if TYPE_CHECKING:  # pragma: no cover - pyspark is an optional extra
    from pyspark.sql import DataFrame

_INSTALL_HINT = 'pip install "polars-rankeval[spark]"'


def _pyspark() -> Any:
    """``pyspark.sql.functions``, imported on first use with an install hint when missing."""
    try:
        from pyspark.sql import functions
    except ImportError as error:
        msg = f"polars_rankeval.spark needs pyspark (>= 3.5): {_INSTALL_HINT}"
        raise ImportError(msg) from error
    return functions


def _arrow_schema(sdf: DataFrame) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(sdf.schema)


def _spark_schema(schema: pa.Schema) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def _plain_type(kind: pa.DataType) -> pa.DataType:
    """One Arrow type as Spark declares it, nested types included."""
    if pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return pa.string()
    if pa.types.is_large_binary(kind) or pa.types.is_binary_view(kind):
        return pa.binary()
    if pa.types.is_unsigned_integer(kind):
        return pa.int64()  # Spark has no unsigned integers
    if pa.types.is_large_list(kind) or pa.types.is_list(kind) or pa.types.is_list_view(kind):
        return pa.list_(_plain_type(kind.value_type))
    if pa.types.is_struct(kind):
        return pa.struct(
            [pa.field(field.name, _plain_type(field.type), nullable=True) for field in kind]
        )
    return kind


def _plain_arrow(schema: pa.Schema) -> pa.Schema:
    """Polars' large and view strings as plain Arrow strings: the type Spark declares.

    Spark (before 4.x, or without ``useLargeVarTypes``) refuses a batch whose types differ
    from the declared schema, and Polars exports strings as ``large_string`` (also inside the
    lists and structs that hold per-system metrics' hidden per-query values).
    """
    return pa.schema(
        [pa.field(field.name, _plain_type(field.type), nullable=True) for field in schema]
    )


def _quiet_evaluate(frame: pl.DataFrame, metrics: Any, **options: Any) -> pl.DataFrame:
    """Local evaluation without the empty-result warning (a batch may hold no judged query).

    The per-query rows come back raw (``raw=True``): per-system metrics' hidden values and the
    ``empty_queries="drop"`` flag are finished on the driver, over all the lists.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyEvaluationWarning)
        return evaluate_frame(frame, metrics, per_query=True, raw=True, **options)
