"""``polars_rankeval.spark.similarity``: each query's lists compared on one worker."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl
import pyarrow as pa

from polars_rankeval._names.split import split_each
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.spark._common import _arrow_schema, _plain_type, _pyspark, _spark_schema
from polars_rankeval.spark._workers import _Pairs

if TYPE_CHECKING:  # pragma: no cover - pyspark is an optional extra
    from pyspark.sql import DataFrame


def similarity(
    sdf: DataFrame,
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
) -> DataFrame:
    """:func:`polars_rankeval.similarity` over a Spark DataFrame: the same values, on Spark.

    The rows are repartitioned on the query, so that every system's list of a query meets on
    one worker, which compares them with the local code (RBO, Jaccard, overlap, Kendall's τ
    per pair of systems); the means per pair (``queries``, ``unpaired``) are Spark
    aggregations. The options are those of the local function; ``n_partitions`` and
    ``min_rows`` as for :func:`evaluate`. The systems (the distinct ``by`` values) are
    collected on the driver to list the pairs.

    Returns
    -------
    pyspark.sql.DataFrame
        The local function's columns: per pair and query with ``per_query=True``, else the
        means per pair.
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
    empty = pl.from_arrow(_arrow_schema(sdf).empty_table())
    assert isinstance(empty, pl.DataFrame)
    name = "__rke_system"
    named_sdf = sdf.withColumn(
        name,
        functions.concat_ws(
            SYSTEM_SEPARATOR, *(functions.col(f"`{c}`").cast("string") for c in by_list)
        ),
    )
    systems = sorted(
        row[0] for row in named_sdf.select(name).distinct().collect() if row[0] is not None
    )
    chosen = resolve_baseline(baseline, systems) if baseline is not None else None
    first, second = ("baseline", "system") if chosen is not None else ("system", "other")
    options: dict[str, Any] = {
        "by": name,
        "baseline": chosen,
        "ties": ties,
        "query": query,
        "item": item,
        "score": score,
    }
    from polars_rankeval.agreement._similarity import similarity as local_similarity

    local_similarity(  # options, metrics and columns, checked on the driver
        empty.with_columns(pl.lit(None, pl.String).alias(name)),
        texts,
        **{**options, "baseline": None},
    )
    query_type = _plain_type(_arrow_schema(sdf).field(query).type)
    output = pa.schema(
        [(first, pa.string()), (second, pa.string()), (query, query_type)]
        + [(label, pa.float64()) for label in labels]
    )
    key = functions.col(f"`{query}`")
    shuffled = (
        named_sdf.repartition(n_partitions, key) if n_partitions else named_sdf.repartition(key)
    )
    ordered = shuffled.sortWithinPartitions(key)
    pairs_fn = _Pairs(texts, options, (query,), output, min_rows)
    per_query_sdf: DataFrame = ordered.mapInArrow(pairs_fn, _spark_schema(output))
    if per_query:
        return per_query_sdf.orderBy(first, second, f"`{query}`")
    spark = sdf.sparkSession
    pair_list = (
        [(chosen, s) for s in systems if s != chosen]
        if chosen is not None
        else [(a, b) for i, a in enumerate(systems) for b in systems[i + 1 :]]
    )
    pairs = spark.createDataFrame(pair_list, schema=f"`{first}` string, `{second}` string")
    means = per_query_sdf.groupBy(first, second).agg(
        *(functions.avg(functions.col(f"`{label}`")).alias(label) for label in labels),
        functions.count(functions.lit(1)).cast("bigint").alias("queries"),
    )
    counts = named_sdf.groupBy(name).agg(functions.countDistinct(key).alias("__n"))
    first_n = counts.withColumnRenamed(name, "__a").withColumnRenamed("__n", "__n_a")
    second_n = counts.withColumnRenamed(name, "__b").withColumnRenamed("__n", "__n_b")
    joined = (
        pairs.join(means, on=[first, second], how="left")
        .join(first_n, pairs[first] == first_n["__a"], how="left")
        .join(second_n, pairs[second] == second_n["__b"], how="left")
        .withColumn("queries", functions.coalesce(functions.col("queries"), functions.lit(0)))
    )
    unpaired = (
        functions.coalesce(functions.col("__n_a"), functions.lit(0))
        + functions.coalesce(functions.col("__n_b"), functions.lit(0))
        - 2 * functions.col("queries")
    ).cast("bigint")
    return joined.select(
        first,
        second,
        *(functions.col(f"`{label}`") for label in labels),
        functions.col("queries").cast("bigint").alias("queries"),
        unpaired.alias("unpaired"),
    ).orderBy(first, second)
