"""``polars_rankeval.spark.similarity``: each query's lists compared on one worker."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl
import pyarrow as pa

from polars_rankeval._engine.vocabulary import (
    METRIC,
    N_DROPPED,
    N_QUERIES,
    VALUE,
    baseline_column,
    renamed,
)
from polars_rankeval._names.split import split_each
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.spark._common import _arrow_schema, _plain_type, _pyspark, _spark_schema
from polars_rankeval.spark._workers import _Pairs

if TYPE_CHECKING:  # pragma: no cover - pyspark is an optional extra
    from pyspark.sql import DataFrame


@renamed(sdf="data")
def similarity(
    data: DataFrame,
    metrics: str | Sequence[str],
    *,
    by: str | Sequence[str],
    baseline: object = None,
    per_query: bool = False,
    ties: str = "trec",
    n_partitions: int | None = None,
    min_rows: int = 100_000,
    query: str = "query",
    item: str = "item",
    score: str = "score",
    relevance: str | None = None,
) -> DataFrame:
    """:func:`polars_rankeval.similarity` over a Spark DataFrame: the same frame, on Spark.

    The rows are repartitioned on the query, so that every system's list of a query meets on
    one worker, which compares them with the local code (RBO, Jaccard, overlap, Kendall's τ
    per pair of systems); the means per pair (``n_queries``, ``n_dropped``) are Spark
    aggregations. The options are those of the local function; ``n_partitions`` and
    ``min_rows`` as for :func:`evaluate`. The systems (the distinct ``by`` values) are
    collected on the driver to list the pairs.

    Parameters
    ----------
    data
        A ``pyspark.sql.DataFrame`` in the long format.

    Returns
    -------
    pyspark.sql.DataFrame
        The local function's long columns: ``metric``, the ``by`` columns, ``baseline_<by>``,
        then ``query`` and ``value`` per (metric, pair, query) with ``per_query=True``, else
        ``n_queries``, ``value`` and ``n_dropped`` per (metric, pair).
    """
    from polars_rankeval.agreement._similarity import parse_measure
    from polars_rankeval.comparison._pairing import SYSTEM_SEPARATOR, resolve_baseline

    functions = _pyspark()
    by_list = [by] if isinstance(by, str) else list(by)
    if not by_list or not all(isinstance(name, str) for name in by_list):
        msg = f"option by= must name the system column(s), got {by!r}"
        raise InvalidOptionError(msg)
    if isinstance(min_rows, bool) or not isinstance(min_rows, int) or min_rows < 1:
        msg = f"option min_rows= must be a positive int, got {min_rows!r}"
        raise InvalidOptionError(msg)
    texts = split_each(metrics)  # "rbo(p=0.9),jaccard@10" is two, as the command line's -m
    labels = [parse_measure(text).label for text in texts]
    # the local function checks the options and columns on an empty frame of this schema
    empty = pl.from_arrow(_arrow_schema(data).empty_table())
    assert isinstance(empty, pl.DataFrame)
    name = "__rke_system"
    other = baseline_column(name)
    named_sdf = data.withColumn(
        name,
        functions.concat_ws(
            SYSTEM_SEPARATOR, *(functions.col(f"`{c}`").cast("string") for c in by_list)
        ),
    )
    systems = sorted(
        row[0] for row in named_sdf.select(name).distinct().collect() if row[0] is not None
    )
    chosen = resolve_baseline(baseline, systems) if baseline is not None else None
    options: dict[str, Any] = {
        "by": name,
        "baseline": chosen,
        "ties": ties,
        "query": query,
        "item": item,
        "score": score,
        "relevance": relevance,
    }
    from polars_rankeval.agreement._similarity import similarity as local_similarity

    local_similarity(  # options, metrics and columns, checked on the driver
        empty.with_columns(pl.lit(None, pl.String).alias(name)),
        texts,
        **{**options, "baseline": None},
    )
    query_type = _plain_type(_arrow_schema(data).field(query).type)
    # what the local function gives for the one system-name column (by=name)
    output = pa.schema(
        [
            (METRIC, pa.string()),
            (name, pa.string()),
            (other, pa.string()),
            (query, query_type),
            (VALUE, pa.float64()),
        ]
    )
    key = functions.col(f"`{query}`")
    shuffled = (
        named_sdf.repartition(n_partitions, key) if n_partitions else named_sdf.repartition(key)
    )
    ordered = shuffled.sortWithinPartitions(key)
    pairs_fn = _Pairs(texts, options, (query,), output, min_rows)
    per_query_sdf: DataFrame = ordered.mapInArrow(pairs_fn, _spark_schema(output))
    spark = data.sparkSession
    # the metrics in the order asked, as the local function lists its rows
    order = spark.createDataFrame(
        list(enumerate(labels)), schema=f"`__rke_order` int, `{METRIC}` string"
    )
    # each system name's by values: several by columns come back as columns, in their types
    keys = named_sdf.select(*(functions.col(f"`{c}`") for c in by_list), name).distinct()
    base_keys = keys.select(
        *(functions.col(f"`{c}`").alias(baseline_column(c)) for c in by_list),
        functions.col(name).alias(other),
    )
    key_columns = [*by_list, *(baseline_column(c) for c in by_list)]

    def keyed(frame: DataFrame, *rest: str) -> DataFrame:
        joined = frame.join(keys, on=name, how="left").join(base_keys, on=other, how="left")
        return (
            joined.join(order, on=METRIC, how="left")
            .orderBy("__rke_order", other, name, *(f"`{c}`" for c in rest))
            .select(METRIC, *(functions.col(f"`{c}`") for c in [*key_columns, *rest]))
        )

    if per_query:
        return keyed(per_query_sdf, query, VALUE)
    pair_list = (
        [(chosen, s) for s in systems if s != chosen]
        if chosen is not None
        else [(a, b) for i, a in enumerate(systems) for b in systems[i + 1 :]]
    )
    pairs = spark.createDataFrame(
        [(label, first, second) for label in labels for first, second in pair_list],
        schema=f"`{METRIC}` string, `{other}` string, `{name}` string",
    )
    means = per_query_sdf.groupBy(METRIC, name, other).agg(
        functions.avg(functions.col(VALUE)).alias(VALUE),
        functions.count(functions.lit(1)).cast("bigint").alias(N_QUERIES),
    )
    counts = named_sdf.groupBy(name).agg(functions.countDistinct(key).alias("__n"))
    system_n = counts.withColumnRenamed("__n", "__n_system")
    other_n = counts.withColumnRenamed(name, other).withColumnRenamed("__n", "__n_other")
    joined = (
        pairs.join(means, on=[METRIC, name, other], how="left")
        .join(system_n, on=name, how="left")
        .join(other_n, on=other, how="left")
        .withColumn(N_QUERIES, functions.coalesce(functions.col(N_QUERIES), functions.lit(0)))
    )
    unpaired = (
        functions.coalesce(functions.col("__n_system"), functions.lit(0))
        + functions.coalesce(functions.col("__n_other"), functions.lit(0))
        - 2 * functions.col(N_QUERIES)
    ).cast("bigint")
    summary = joined.select(
        METRIC,
        name,
        other,
        functions.col(N_QUERIES).cast("bigint").alias(N_QUERIES),
        functions.col(VALUE),
        unpaired.alias(N_DROPPED),
    )
    return keyed(summary, N_QUERIES, VALUE, N_DROPPED)
