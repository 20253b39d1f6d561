"""Off-policy estimates on Spark: the local parts, summed per partition, merged on the driver.

Every estimator is per-row parts summed (:mod:`polars_rankeval.offpolicy._core`), so a Spark
job needs no estimator of its own: each worker builds the parts of its partition with the
local family code and returns their sums (a few rows per policy and segment), the driver
merges them and computes the values, a second job returns each partition's spread around
those values, and the driver summarises, with the local code, into the local result. The
rows are repartitioned on the unit (the context or slate id) when there is one, so that a
slate or a context's candidate actions meet on one worker.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import polars as pl
import pyarrow as pa

from polars_rankeval import errors
from polars_rankeval.errors import InvalidOptionError, RankEvalError
from polars_rankeval.offpolicy._core import (
    Parts,
    check_alpha,
    finish_values,
    merge_sums,
    partial_sums,
    spread_sums,
    summarise,
)
from polars_rankeval.spark._common import _arrow_schema, _plain_arrow, _spark_schema

if TYPE_CHECKING:  # pragma: no cover - pyspark is an optional extra
    from pyspark.sql import DataFrame

#: Builds one partition's parts from its rows (a picklable callable: Spark ships it).
Build = Callable[[pl.LazyFrame], Parts]


@dataclass(frozen=True)
class _PartitionSums:
    """``mapInArrow``'s function: one partition's parts, summed (stage 1) or spread (stage 2)."""

    build: Build
    schema: pa.Schema
    stage: Literal["sums", "spread"]
    values: pl.DataFrame | None = None
    constants: pl.DataFrame | None = None

    def sums(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The partition's sums, in this stage's columns."""
        parts = self.build(frame.lazy())
        if self.stage == "sums":
            return partial_sums(parts).collect()
        assert self.values is not None
        assert self.constants is not None
        return spread_sums(parts, self.values, self.constants).collect()

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        frames = []
        for batch in batches:
            frame = pl.from_arrow(batch, rechunk=False)
            assert isinstance(frame, pl.DataFrame)
            frames.append(frame)
        if frames:
            whole = pl.concat(frames, how="vertical", rechunk=False)
            if whole.height:
                yield from self.sums(whole).to_arrow().cast(self.schema).to_batches()


_ERROR_NAME = re.compile(r"\b([A-Z][A-Za-z]+Error): (.*)", re.DOTALL)


def _collect(sdf: DataFrame) -> pl.DataFrame:
    """A small Spark DataFrame on the driver; a worker's RankEvalError raised as itself.

    Spark re-raises a worker's exception as a ``PythonException`` holding its traceback; the
    user asked the driver, so the driver raises our error class with our message.
    """
    try:
        table = sdf.toArrow() if hasattr(sdf, "toArrow") else pa.Table.from_pandas(sdf.toPandas())
    except Exception as error:
        found = _ERROR_NAME.findall(str(error))
        for name, message in reversed(found):
            kind = getattr(errors, name, None)
            if isinstance(kind, type) and issubclass(kind, RankEvalError):
                raise kind(message.strip().split("\n\n", 1)[0]) from error
        raise
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame


def estimate_on_spark(
    data: DataFrame,
    build: Build,
    *,
    unit: list[str] | None,
    alpha: float,
    n_partitions: int | None,
) -> pl.DataFrame:
    """The local ``estimate`` of ``build``'s parts over a Spark DataFrame's rows.

    Parameters
    ----------
    data
        The log, a ``pyspark.sql.DataFrame``.
    build
        Builds (and validates) one partition's parts, as the local function does.
    unit
        The columns a unit's rows share (the slate or context id, with the segments): the rows
        are hash-repartitioned on them so that a unit is whole in one partition. None: every
        row is a unit, the partitions are used as they are.
    alpha
        Interval level ``1 - alpha``.
    n_partitions
        The partitions of the repartition (None: Spark's ``spark.sql.shuffle.partitions``).
    """
    alpha = check_alpha(alpha)
    if n_partitions is not None and (
        isinstance(n_partitions, bool) or not isinstance(n_partitions, int) or n_partitions < 1
    ):
        msg = f"option n_partitions= must be a positive int, got {n_partitions!r}"
        raise InvalidOptionError(msg)
    # The driver builds the parts of an empty frame of the schema: options and columns are
    # checked here, and the sums' schema is known before any job runs.
    empty = pl.from_arrow(_arrow_schema(data).empty_table())
    assert isinstance(empty, pl.DataFrame)
    model = build(empty.lazy())
    if unit:
        data = (
            data.repartition(n_partitions, *unit)
            if n_partitions is not None
            else data.repartition(*unit)
        )
    sums_schema = _plain_arrow(partial_sums(model).collect().to_arrow().schema)
    stage_one = _PartitionSums(build, sums_schema, "sums")
    sums = _collect(data.mapInArrow(stage_one, _spark_schema(sums_schema)))
    values, constants = finish_values(*merge_sums(sums, model), model)
    spread_schema = _plain_arrow(spread_sums(model, values, constants).collect().to_arrow().schema)
    stage_two = _PartitionSums(build, spread_schema, "spread", values, constants)
    spread = _collect(data.mapInArrow(stage_two, _spark_schema(spread_schema)))
    return summarise(values, spread, model, alpha=alpha)


def as_spark(frame: pl.DataFrame, like: DataFrame) -> Any:
    """A small local result as a Spark DataFrame of ``like``'s session."""
    table = frame.to_arrow()
    return like.sparkSession.createDataFrame(
        table.cast(_plain_arrow(table.schema)).to_pandas(),
        schema=_spark_schema(_plain_arrow(table.schema)),
    )
