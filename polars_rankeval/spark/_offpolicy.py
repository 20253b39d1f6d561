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
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import polars as pl
import pyarrow as pa

from polars_rankeval import errors
from polars_rankeval._engine.warn import Site, user_site
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
        to_arrow: Callable[[], pa.Table] | None = getattr(sdf, "toArrow", None)  # Spark >= 4
        if to_arrow is not None:
            table = to_arrow()
        else:  # Spark 3.5: the same Arrow batches, through the method toArrow wraps
            collect: Callable[[], list[pa.RecordBatch]] = sdf._collect_as_arrow  # type: ignore[assignment]
            batches = collect()
            table = pa.Table.from_batches(batches, schema=_arrow_schema(sdf))
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
    site: Site,
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
    site
        The user's line, where the weight warnings point.
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
    model = Parts(model.frame, model.keys, model.estimators, model.unit, model.term, site)
    values, constants = finish_values(*merge_sums(sums, model), model)
    spread_schema = _plain_arrow(spread_sums(model, values, constants).collect().to_arrow().schema)
    stage_two = _PartitionSums(build, spread_schema, "spread", values, constants)
    spread = _collect(data.mapInArrow(stage_two, _spark_schema(spread_schema)))
    return summarise(values, spread, model, alpha=alpha)


def as_spark(frame: pl.DataFrame, like: DataFrame) -> DataFrame:
    """A small local result as a Spark DataFrame of ``like``'s session (rows, not pandas)."""
    schema = _spark_schema(_plain_arrow(frame.to_arrow().schema))
    created: DataFrame = like.sparkSession.createDataFrame(frame.rows(), schema=schema)
    return created


def off_policy(
    data: DataFrame,
    estimators: str | Sequence[str] = "ips,snips",
    *,
    target: str | Sequence[str] | Mapping[str, str] = "target",
    propensity: str = "propensity",
    reward: str = "reward",
    reward_model: str | None = None,
    target_reward_model: str | Sequence[str] | Mapping[str, str] | None = None,
    query: str | None = None,
    item: str | None = None,
    logged: str | None = None,
    by: str | Sequence[str] | None = None,
    clip: float | None = None,
    switch_threshold: float | None = None,
    shrinkage: float | None = None,
    alpha: float = 0.05,
    n_partitions: int | None = None,
) -> DataFrame:
    """:func:`polars_rankeval.off_policy` over a Spark DataFrame: the same estimates, on Spark.

    Each worker checks its partition's rows and sums their parts with the local code; the
    driver merges the sums (a few rows per target policy and segment) into the local result,
    so the values, standard errors, intervals and weight diagnostics equal the local function's
    (up to the order of float sums). With ``query=`` (a context id) the rows are repartitioned
    on it first, so that a context's candidate rows (``logged=``) meet on one worker. The
    options are the local function's; ``per_query``, ``baseline`` and bootstrap intervals need
    every unit in one place and are local only (collect the log, or its parts, to use them).

    Parameters
    ----------
    data
        A ``pyspark.sql.DataFrame`` holding the log.
    n_partitions
        The partitions of the repartition on ``query`` (None: Spark's default).

    Returns
    -------
    pyspark.sql.DataFrame
        The local function's long result (one row per estimator, policy and segment), built
        on the driver. Options, columns and dtypes are checked on the driver before any job;
        a worker's check of the values (a propensity of 0, target probabilities that do not
        sum to 1) is raised on the driver as the same ``RankEvalError`` the local function
        raises, naming the rows within that worker's partition.
    """
    from polars_rankeval.offpolicy._bandit import prepare

    build = prepare(
        estimators,
        target=target,
        propensity=propensity,
        reward=reward,
        reward_model=reward_model,
        target_reward_model=target_reward_model,
        query=query,
        item=item,
        logged=logged,
        by=by,
        clip=clip,
        switch_threshold=switch_threshold,
        shrinkage=shrinkage,
    )
    unit = [*build.log.by, build.log.query] if build.log.query is not None else None
    result = estimate_on_spark(
        data, build, unit=unit, alpha=alpha, n_partitions=n_partitions, site=user_site()
    )
    return as_spark(result, data)


def slate_off_policy(
    data: DataFrame,
    estimators: str | Sequence[str] = "sips,rips",
    *,
    query: str = "query",
    position: str = "position",
    reward: str = "reward",
    propensity: str | Mapping[str, str] = "propensity",
    target: str | Sequence[str] | Mapping[str, str | Mapping[str, str]] = "target",
    reward_model: str | None = None,
    target_reward_model: str | Sequence[str] | Mapping[str, str] | None = None,
    by: str | Sequence[str] | None = None,
    alpha: float = 0.05,
    n_partitions: int | None = None,
) -> DataFrame:
    """:func:`polars_rankeval.slate_off_policy` over a Spark DataFrame: the same estimates.

    The rows are repartitioned on the slate (``by`` and ``query``), so that a slate's
    positions meet on one worker; each worker checks its slates and sums their parts with the
    local code, and the driver merges the sums into the local result, as
    :func:`polars_rankeval.spark.off_policy` does (two Spark jobs, four when per-position
    self-normalised estimators are asked beside the others).

    Parameters
    ----------
    data
        A ``pyspark.sql.DataFrame`` holding one row per (slate, position).
    n_partitions
        The partitions of the repartition on the slate (None: Spark's default).

    Returns
    -------
    pyspark.sql.DataFrame
        The local function's long result, built on the driver.
    """
    from polars_rankeval.offpolicy._slate import SlateParts, _merge, each_set
    from polars_rankeval.offpolicy._slate_log import prepare

    log = prepare(
        estimators,
        query=query,
        position=position,
        reward=reward,
        propensity=propensity,
        target=target,
        reward_model=reward_model,
        target_reward_model=target_reward_model,
        by=by,
    )
    empty = pl.from_arrow(_arrow_schema(data).empty_table())
    assert isinstance(empty, pl.DataFrame)
    n_sets = len(SlateParts(log).sets(empty.lazy(), engine="in-memory", site=None))
    site = user_site()
    results = each_set(
        n_sets,
        lambda index: estimate_on_spark(
            data,
            SlateParts(log, index),
            unit=[*log.by, log.query],
            alpha=alpha,
            n_partitions=n_partitions,
            site=site,
        ),
    )
    merged = _merge(results, log.names, log.keys, log.query, per_query=False, baseline=None)
    return as_spark(merged, data)
