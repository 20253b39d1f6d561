"""The same evaluation on Apache Spark: per-partition Polars over Arrow batches.

``polars_rankeval.spark.evaluate(sdf, metrics, by=...)`` takes a Spark DataFrame in the long
format and returns a Spark DataFrame, of per-query rows or of the means per ``by`` group. The
rows are hash-partitioned on ``(*by, query)`` and sorted within each partition, so every ranked
list arrives whole and contiguous at one Python worker; ``mapInArrow`` hands that worker Arrow
batches, which become Polars frames without a copy, and every complete list is evaluated with
the local engine (:func:`polars_rankeval.evaluate`). The means are computed in Spark with the
library's summary rules.

The workers import ``polars_rankeval``: it must be installed in the Python environment that
``PYSPARK_PYTHON`` names on every executor (or shipped with ``--py-files``); see the docs'
Spark guide. pyspark itself is imported only when a function here is called.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl
import pyarrow as pa

from polars_rankeval._columns import Columns, check_schema, make_columns
from polars_rankeval._metric_lists import split_each
from polars_rankeval.errors import EmptyEvaluationWarning, InvalidOptionError
from polars_rankeval.evaluate import drop_empty_queries, finish_all, per_query_only, settings_for
from polars_rankeval.evaluate import evaluate as _local_evaluate
from polars_rankeval.evaluate import summary as _local_summary
from polars_rankeval.metrics._base import Metric
from polars_rankeval.metrics.geometric import MIN_GEO_MEAN
from polars_rankeval.registry import MetricRequest, resolve_metrics
from polars_rankeval.tables import make_tables, read_table

if TYPE_CHECKING:  # pragma: no cover - pyspark is an optional extra
    from pyspark.sql import DataFrame

__all__ = ["evaluate", "join_run_qrels"]

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

    The per-query rows come back raw (``_hidden``): per-system metrics' hidden values and the
    ``empty_queries="drop"`` flag are finished on the driver, over all the lists.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyEvaluationWarning)
        return _local_evaluate(frame, metrics, per_query=True, _hidden=True, **options)


@dataclass(frozen=True)
class _Lists:
    """The function ``mapInArrow`` runs on each partition (a class, so it pickles by reference).

    The partition's rows arrive sorted on ``partition`` (``*by, query``), so the rows of one
    ranked list are contiguous; a list may straddle two Arrow batches. Each batch is evaluated
    up to its last list, which is carried over to the next batch: memory holds about one batch
    (at least ``min_rows`` rows) plus the largest list.
    """

    metrics: Any
    options: dict[str, Any]
    partition: tuple[str, ...]
    schema: pa.Schema
    min_rows: int

    def _evaluated(self, frame: pl.DataFrame) -> Iterator[pa.RecordBatch]:
        if frame.height == 0:
            return
        result = _quiet_evaluate(frame, self.metrics, **self.options)
        if result.height:
            yield from result.to_arrow().cast(self.schema).to_batches()

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        pending: list[pl.DataFrame] = []
        rows = 0
        for batch in batches:
            frame = pl.from_arrow(batch, rechunk=False)
            assert isinstance(frame, pl.DataFrame)
            pending.append(frame)
            rows += frame.height
            if rows < self.min_rows or frame.height == 0:
                continue
            whole = pl.concat(pending, how="vertical", rechunk=False)
            # The last list may go on in the next batch: keep it for then.
            last = whole.row(whole.height - 1, named=True)
            is_last = pl.all_horizontal(pl.col(c).eq_missing(last[c]) for c in self.partition)
            tail = int(whole.select(is_last.sum()).item())
            yield from self._evaluated(whole.slice(0, whole.height - tail))
            pending = [whole.slice(whole.height - tail)]
            rows = tail
        if pending:
            yield from self._evaluated(pl.concat(pending, how="vertical", rechunk=False))


def _options(**options: Any) -> dict[str, Any]:
    """The keywords passed on to the local ``evaluate``, Nones dropped (its defaults)."""
    return {key: value for key, value in options.items() if value is not None}


def _summary_column(label: str, metric: Metric, functions: Any) -> Any:
    """Spark's form of ``evaluate.summary_of``: mean, sum, NaN-free mean or geometric mean."""
    values = functions.col(f"`{label}`")
    if metric.summary == "sum":
        # Polars sums an empty frame to 0; Spark to null.
        return functions.coalesce(functions.sum(values), functions.lit(0))
    if metric.summary == "nanmean":
        return functions.avg(functions.when(~functions.isnan(values), values))
    if metric.summary == "gm":
        # greatest() would turn a null into the floor: nulls stay null, as Polars' clip.
        floored = functions.when(
            values.isNotNull(), functions.greatest(values, functions.lit(MIN_GEO_MEAN))
        )
        return functions.exp(functions.avg(functions.log(floored)))
    return functions.avg(values)


def evaluate(
    sdf: DataFrame,
    metrics: Sequence[str | Metric | MetricRequest] | str | Metric,
    *,
    per_query: bool = False,
    by: str | Sequence[str] | None = None,
    n_partitions: int | None = None,
    min_rows: int = 100_000,
    relevance_level: int | None = None,
    missing_queries: str | None = None,
    ties: str | None = None,
    convention: str = "trec_eval",
    negative_labels: str | None = None,
    unretrieved: str | None = None,
    duplicates: str | None = None,
    nan_scores: str | None = None,
    empty_queries: str | None = None,
    train: object = None,
    items: object = None,
    catalog: object = None,
    query: str = "query",
    item: str = "item",
    score: str = "score",
    relevance: str = "relevance",
) -> DataFrame:
    """Evaluate ranking metrics over a Spark DataFrame, one row per (query, item).

    The same results as :func:`polars_rankeval.evaluate` (to the last bits of floating-point
    sums), computed on Spark's executors.

    Parameters
    ----------
    sdf
        A ``pyspark.sql.DataFrame`` in the long format (the docs' input contract guide).
    metrics
        As for :func:`polars_rankeval.evaluate`.
    per_query
        One row per evaluated (``by``, query), with the columns of the local per-query frame;
        otherwise the means per ``by`` group (mean over evaluated queries, ``num_*`` summed,
        NaN left out for the NaN-free metrics, geometric mean for ``gm_map``/``gm_bpref``).
    by
        Columns whose values split the table into separate runs.
    n_partitions
        Partitions of the hash repartition on ``(*by, query)``; default
        ``spark.sql.shuffle.partitions``. Results do not depend on it; aim for a few million
        rows per partition.
    min_rows
        Arrow batches are gathered up to this many rows before the local engine runs (each
        evaluation has a fixed cost); memory per worker holds about this many rows plus the
        largest ranked list.
    relevance_level, missing_queries, ties, convention, negative_labels, unretrieved, \
duplicates, nan_scores, empty_queries, query, item, score, relevance
        As for :func:`polars_rankeval.evaluate`. Spark keeps no row order, so
        ``duplicates="first"``/``"last"`` keep an arbitrary one of the duplicated rows.
    train, items, catalog
        The extra tables of the beyond-accuracy metrics, as for
        :func:`polars_rankeval.evaluate`: a Polars, pandas or Arrow table, a path, or a Spark
        DataFrame. They are read on the driver and shipped to every worker with the
        evaluation, so each must fit in a worker's memory (a train table of a few million
        interactions does).


    Returns
    -------
    pyspark.sql.DataFrame
        Lazy, as any Spark DataFrame: nothing runs before an action. Options, column names and
        dtypes are checked here, on the driver; checks of the values (duplicates, NaN scores,
        null ids) run on the executors, and Spark raises them at the action as a
        ``pyspark.errors.PythonException`` whose message holds ``DuplicateItemError: ...``
        (our exception's name and message) after the worker's traceback. A duplicate count in
        that message is the count within one worker's batch, not the whole table's.

    Notes
    -----
    Per-system metrics (coverage, Gini, GAUC ...), the diversity metrics' finishing step and
    ``empty_queries="drop"`` need all of a run's lists at once: the workers compute each
    list's hidden value (about ``k`` item ids), the driver collects those per-query rows (one
    per list) and finishes them with the local code, so ``evaluate`` runs a Spark job right
    away and returns a small Spark DataFrame built from the result. The driver holds one row
    per list.
    """
    functions = _pyspark()
    if not isinstance(per_query, bool):
        msg = f"option per_query= must be True or False, got {per_query!r}"
        raise InvalidOptionError(msg)
    if isinstance(min_rows, bool) or not isinstance(min_rows, int) or min_rows < 1:
        msg = f"option min_rows= must be a positive int, got {min_rows!r}"
        raise InvalidOptionError(msg)
    if n_partitions is not None and (
        isinstance(n_partitions, bool) or not isinstance(n_partitions, int) or n_partitions < 1
    ):
        msg = f"option n_partitions= must be a positive int or None, got {n_partitions!r}"
        raise InvalidOptionError(msg)
    columns = make_columns(query=query, item=item, score=score, relevance=relevance, by=by)
    options = _options(
        by=list(columns.by) or None,
        empty_queries=empty_queries,
        train=_driver_table(train, "train"),
        items=_driver_table(items, "items"),
        catalog=catalog if isinstance(catalog, int) else _driver_table(catalog, "catalog"),
        relevance_level=relevance_level,
        missing_queries=missing_queries,
        ties=ties,
        convention=convention,
        negative_labels=negative_labels,
        unretrieved=unretrieved,
        duplicates=duplicates,
        nan_scores=nan_scores,
        query=query,
        item=item,
        score=score,
        relevance=relevance,
    )
    # Everything that needs no data is checked here: options, metrics, columns and dtypes,
    # by evaluating an empty frame of the input's schema; its result gives the output schema.
    empty = pl.from_arrow(_arrow_schema(sdf).empty_table())
    assert isinstance(empty, pl.DataFrame)
    output = _plain_arrow(_quiet_evaluate(empty, metrics, **options).to_arrow().schema)
    preset, settings = settings_for(convention, options)
    resolved = resolve_metrics(metrics, preset)

    keys = [functions.col(f"`{name}`") for name in columns.partition]
    shuffled = sdf.repartition(n_partitions, *keys) if n_partitions else sdf.repartition(*keys)
    ordered = shuffled.sortWithinPartitions(*keys)
    lists = _Lists(metrics, options, tuple(columns.partition), output, min_rows)
    per_query_sdf: DataFrame = ordered.mapInArrow(lists, _spark_schema(output))
    if settings.empty_queries == "drop" or any(
        metric.finish is not None or metric.level == "system" for _, metric in resolved
    ):
        return _finished_on_driver(
            per_query_sdf, resolved, columns, options, empty.schema, per_query=per_query
        )
    if per_query:
        return per_query_sdf
    return _summary(per_query_sdf, resolved, columns, functions)


def _driver_table(value: object, option: str) -> pl.DataFrame | None:
    """An extra table read on the driver (a Spark DataFrame is collected through Arrow)."""
    if value is None:
        return None
    if hasattr(value, "sparkSession") and hasattr(value, "schema"):
        spark_frame: Any = value
        if hasattr(spark_frame, "toArrow"):  # Spark >= 4
            table = pl.from_arrow(spark_frame.toArrow())
        else:  # Spark 3.5
            table = pl.from_pandas(spark_frame.toPandas())
        assert isinstance(table, pl.DataFrame)
        return table
    return read_table(value, option).collect()  # type: ignore[arg-type]


def _finished_on_driver(
    per_query_sdf: DataFrame,
    resolved: list[tuple[str, Metric]],
    columns: Columns,
    options: dict[str, Any],
    log_schema: pl.Schema,
    *,
    per_query: bool,
) -> DataFrame:
    """Collect the per-query rows and finish them as the local ``evaluate`` does."""
    if hasattr(per_query_sdf, "toArrow"):  # Spark >= 4
        collected = pl.from_arrow(per_query_sdf.toArrow())
    else:
        collected = pl.from_pandas(per_query_sdf.toPandas())
    assert isinstance(collected, pl.DataFrame)
    if collected.height == 0:  # keep the declared types
        empty = pl.from_arrow(_arrow_schema(per_query_sdf).empty_table())
        assert isinstance(empty, pl.DataFrame)
        collected = empty
    tables = make_tables(
        log_schema,
        columns,
        train=options.get("train"),
        items=options.get("items"),
        catalog=options.get("catalog"),
    )
    lazy = finish_all(collected.lazy(), resolved, columns.partition, tables)
    done = drop_empty_queries(lazy.collect(), stacklevel=3)
    if per_query:
        result = per_query_only(done, resolved, stacklevel=3)
    else:
        result = _local_summary(done.lazy(), resolved, columns.by, tables).collect()
    schema = _spark_schema(_plain_arrow(result.to_arrow().schema))
    session = per_query_sdf.sparkSession
    return session.createDataFrame(result.rows(), schema)


def _summary(
    per_query: DataFrame, resolved: list[tuple[str, Metric]], columns: Columns, functions: Any
) -> DataFrame:
    """The means per ``by`` group, with the local summary's column types."""
    aggregations = []
    for label, metric in resolved:
        value = _summary_column(label, metric, functions)
        kind = "bigint" if metric.summary == "sum" else "double"
        aggregations.append(value.cast(kind).alias(label))
    if not columns.by:
        return per_query.agg(*aggregations)
    by = [functions.col(f"`{name}`") for name in columns.by]
    return per_query.groupBy(*by).agg(*aggregations).orderBy(*by)


def join_run_qrels(
    run: DataFrame,
    qrels: DataFrame,
    *,
    query: str = "query",
    item: str = "item",
    score: str = "score",
    relevance: str = "relevance",
) -> DataFrame:
    """Full outer join of a run and judgments in Spark, as :func:`polars_rankeval.join_run_qrels`.

    Judged rows missing from the run get a null score (judged, not retrieved); retrieved rows
    missing from the judgments get a null relevance (unjudged). The key columns are coalesced
    and null keys never match. The columns are ``query, item, score, relevance``.
    """
    functions = _pyspark()
    columns = make_columns(query=query, item=item, score=score, relevance=relevance, by=None)
    run_schema = pl.from_arrow(_arrow_schema(run).empty_table())
    qrels_schema = pl.from_arrow(_arrow_schema(qrels).empty_table())
    assert isinstance(run_schema, pl.DataFrame)
    assert isinstance(qrels_schema, pl.DataFrame)
    check_schema(run_schema.schema, columns, need_relevance=False)
    check_schema(qrels_schema.schema, columns, need_score=False)

    def picked(sdf: DataFrame, names: list[str]) -> DataFrame:
        return sdf.select(*(functions.col(f"`{name}`") for name in names))

    joined: DataFrame = picked(run, [query, item, score]).join(
        picked(qrels, [query, item, relevance]), on=[query, item], how="full"
    )
    return joined.select(*(functions.col(f"`{name}`") for name in (query, item, score, relevance)))


@dataclass(frozen=True)
class _Pairs(_Lists):
    """``mapInArrow``'s function for :func:`similarity`: each query's systems compared locally.

    The rows arrive sorted on the query, so every system's list of one query is in one chunk;
    ``options`` are the local :func:`~polars_rankeval.similarity` keywords (``by`` is the one
    system-name column made on the driver).
    """

    def _evaluated(self, frame: pl.DataFrame) -> Iterator[pa.RecordBatch]:
        from polars_rankeval.similarity import similarity as local_similarity

        if frame.height == 0:
            return
        baseline = self.options.get("baseline")
        if baseline is not None and baseline not in set(frame[self.options["by"]].to_list()):
            return  # no query of this chunk has the baseline: no pair to compare
        result = local_similarity(frame, self.metrics, per_query=True, **self.options)
        if result.height:
            yield from result.to_arrow().cast(self.schema).to_batches()


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
    from polars_rankeval.compare._pairing import SYSTEM_SEPARATOR, resolve_baseline
    from polars_rankeval.similarity import parse_measure

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
    from polars_rankeval.similarity import similarity as local_similarity

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
