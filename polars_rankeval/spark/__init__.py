"""The same evaluation on Apache Spark: per-partition Polars over Arrow batches.

``polars_rankeval.spark.evaluate(data, metrics, by=...)`` takes a Spark DataFrame in the long
format and returns a Spark DataFrame, of per-query rows or of the means per ``by`` group. The
rows are hash-partitioned on ``(*by, query)`` so that every ranked list arrives whole at one
Python worker, which evaluates it with the local engine (:func:`polars_rankeval.evaluate`)
over Arrow data turned into Polars frames without a copy. Three routes do that (``route=``):
the whole partition gathered and evaluated at once (``mapInArrow``, no sort), hash buckets of
the lists (``groupBy(bucket).applyInArrow``, Spark >= 4.0), or each partition sorted and
streamed batch by batch (bounded memory). The means are computed in Spark with the library's
summary rules.

The workers import ``polars_rankeval``: it must be installed in the Python environment that
``PYSPARK_PYTHON`` names on every executor (or shipped with ``--py-files``); see the docs'
Spark guide. pyspark itself is imported only when a function here is called.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from polars_rankeval._engine.columns import Columns, check_schema, make_columns
from polars_rankeval._engine.plan import finish_all
from polars_rankeval._engine.settings import settings_for
from polars_rankeval._engine.summary import drop_empty_queries, per_query_only
from polars_rankeval._engine.summary import summary as _local_summary
from polars_rankeval._engine.tables import make_tables, read_table
from polars_rankeval._engine.vocabulary import renamed
from polars_rankeval._names.registry import MetricRequest, resolve_metrics
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.metrics._base import Metric
from polars_rankeval.metrics.geometric import MIN_GEO_MEAN
from polars_rankeval.spark._common import (
    _arrow_schema,
    _plain_arrow,
    _pyspark,
    _quiet_evaluate,
    _spark_schema,
)
from polars_rankeval.spark._offpolicy import off_policy, slate_off_policy
from polars_rankeval.spark._similarity import similarity
from polars_rankeval.spark._workers import _Lists, _Whole, bucket_function

if TYPE_CHECKING:  # pragma: no cover - pyspark is an optional extra
    from pyspark.sql import DataFrame

__all__ = ["evaluate", "join_run_qrels", "off_policy", "similarity", "slate_off_policy"]

ROUTES = ("auto", "partitions", "buckets", "sorted")
_BUCKET = "__rke_bucket"


def _major_version(sdf: DataFrame) -> int:
    """The major version of the Spark that runs ``sdf`` (the JVM's, not the client's)."""
    return int(str(sdf.sparkSession.version).split(".")[0])


def _pick_route(route: str, sdf: DataFrame) -> str:
    """The route ``evaluate`` runs: ``"auto"`` is ``"sorted"`` (bounded memory), on every version.

    The ``"buckets"`` route needs ``GroupedData.applyInArrow`` (Spark >= 4.0); on Spark 3.5
    asking for it is an error that names the routes that work there.
    """
    if not isinstance(route, str) or route not in ROUTES:
        msg = f"option route= must be one of {', '.join(map(repr, ROUTES))}, got {route!r}"
        raise InvalidOptionError(msg)
    if route == "buckets" and _major_version(sdf) < 4:
        msg = (
            f"option route='buckets' needs Spark >= 4.0 (applyInArrow); this is Spark "
            f"{sdf.sparkSession.version}: use route='partitions' or 'sorted'"
        )
        raise InvalidOptionError(msg)
    # The three routes cost about the same CPU (benchmarks/README.md); only "sorted" bounds a
    # worker's memory whatever the partition's size, so a default cannot run out of memory.
    return "sorted" if route == "auto" else route


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


@renamed(sdf="data")
def evaluate(
    data: DataFrame,
    metrics: Sequence[str | Metric | MetricRequest] | str | Metric,
    *,
    per_query: bool = False,
    by: str | Sequence[str] | None = None,
    n_partitions: int | None = None,
    route: str = "auto",
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
    groups: object = None,
    group_target: object = None,
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
    data
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
        Partitions of the hash repartition on ``(*by, query)`` (hash buckets for
        ``route="buckets"``); default ``spark.sql.shuffle.partitions``. Results do not depend
        on it. It sets the memory a worker needs on the first two routes: a partition (or a
        bucket) holds about ``rows / n_partitions`` rows, all in memory at once.
    route
        How the lists reach the local engine; all give the same numbers.
        ``"partitions"`` (every Spark version): hash repartition, then
        ``mapInArrow`` gathers each whole partition and evaluates it in one call (no sort: the
        local engine groups by query itself); a partition must fit in a worker's memory.
        ``"buckets"`` (Spark >= 4.0): ``groupBy`` on a hash bucket of ``(*by, query)`` and
        ``applyInArrow``, one call per bucket; a bucket must fit in a worker's memory (Spark
        sorts the rows by bucket to form the groups). ``"sorted"``: hash repartition, sort
        within partitions, ``mapInArrow`` streams the batches (see ``min_rows``); memory holds
        about ``min_rows`` rows plus the largest list, whatever the partition's size, at the
        cost of Spark's sort. ``"auto"`` (default) is ``"sorted"``.
    min_rows
        ``route="sorted"`` only: Arrow batches are gathered up to this many rows before the
        local engine runs (each evaluation has a fixed cost); memory per worker holds about
        this many rows plus the largest ranked list.
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
    groups, group_target
        The fairness metrics' tables, as for :func:`polars_rankeval.evaluate` (a Spark
        DataFrame is collected on the driver, where the fairness metrics are finished).


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
    picked = _pick_route(route, data)
    columns = make_columns(query=query, item=item, score=score, relevance=relevance, by=by)
    options = _options(
        by=list(columns.by) or None,
        empty_queries=empty_queries,
        train=_driver_table(train, "train"),
        items=_driver_table(items, "items"),
        catalog=catalog if isinstance(catalog, int) else _driver_table(catalog, "catalog"),
        groups=_driver_table(groups, "groups"),
        group_target=(
            group_target
            if group_target is None or isinstance(group_target, (str, dict))
            else _driver_table(group_target, "group_target")
        ),
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
    empty = pl.from_arrow(_arrow_schema(data).empty_table())
    assert isinstance(empty, pl.DataFrame)
    output = _plain_arrow(_quiet_evaluate(empty, metrics, **options).to_arrow().schema)
    preset, settings = settings_for(convention, options)
    resolved = resolve_metrics(metrics, preset)

    per_query_sdf = _per_query(
        data,
        picked,
        metrics=metrics,
        options=options,
        columns=columns,
        output=output,
        n_partitions=n_partitions,
        min_rows=min_rows,
    )
    if settings.empty_queries == "drop" or any(
        metric.finish is not None or metric.level == "system" for _, metric in resolved
    ):
        return _finished_on_driver(
            per_query_sdf, resolved, columns, options, empty.schema, per_query=per_query
        )
    if per_query:
        return per_query_sdf
    return _summary(per_query_sdf, resolved, columns, functions)


def _per_query(
    sdf: DataFrame,
    route: str,
    *,
    metrics: Any,
    options: dict[str, Any],
    columns: Columns,
    output: Any,
    n_partitions: int | None,
    min_rows: int,
) -> DataFrame:
    """The raw per-query rows (``_hidden`` columns included) of one route, lazily."""
    functions = _pyspark()
    keys = [functions.col(f"`{name}`") for name in columns.partition]
    schema = _spark_schema(output)
    if route == "buckets":
        count = n_partitions or int(str(sdf.sparkSession.conf.get("spark.sql.shuffle.partitions")))
        # Spark's own Murmur3 hash: every row of a list gets the same bucket on every executor.
        bucket = functions.pmod(functions.hash(*keys), functions.lit(count)).alias(_BUCKET)
        evaluate_bucket = bucket_function(_Whole(metrics, options, output), _BUCKET)
        return sdf.select("*", bucket).groupBy(_BUCKET).applyInArrow(evaluate_bucket, schema)
    shuffled = sdf.repartition(n_partitions, *keys) if n_partitions else sdf.repartition(*keys)
    if route == "partitions":
        return shuffled.mapInArrow(_Whole(metrics, options, output), schema)
    lists = _Lists(metrics, options, tuple(columns.partition), output, min_rows)
    return shuffled.sortWithinPartitions(*keys).mapInArrow(lists, schema)


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
    return read_table(value, option).collect()


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
        groups=options.get("groups"),
        group_target=options.get("group_target"),
    )
    lazy = finish_all(collected.lazy(), resolved, columns.partition, tables)
    done = drop_empty_queries(lazy.collect())
    if per_query:
        result = per_query_only(done, resolved)
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
