"""``polars_rankeval.spark.evaluate``'s routes give the local engine's numbers, every one.

``route="partitions"`` (the default) gathers each hash partition whole and evaluates it without
a sort, ``"buckets"`` evaluates hash buckets through ``groupBy(...).applyInArrow`` (Spark >= 4.0)
and ``"sorted"`` streams sorted partitions. The expected values are the local
``rke.evaluate``'s, which ``tests/properties/test_differential.py`` checks against brute force.
"""

from __future__ import annotations

import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval.errors import InvalidOptionError

pytest.importorskip("pyspark")

from polars_rankeval import spark as rke_spark
from tests.spark.test_spark import (  # skips this module too without java
    METRICS,
    assert_same,
    generated_log,
    to_polars,
    to_spark,
)

pytestmark = [
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning"),
]

# The metrics Spark's RankingEvaluator has (the benchmark's), with the NaN- and null-valued
# ones whose means leave values out, and a count.
ROUTE_METRICS = ["p@10", "recall@10", "ndcg@10(gain=binary)", *METRICS]  # METRICS has map
ROUTES = ["partitions", "buckets", "sorted"]


@pytest.fixture(scope="module")
def log() -> pl.DataFrame:
    # ties (scores with one decimal), unjudged (null label) and unretrieved (null score) rows,
    # negative labels and queries with judgments only
    frame = generated_log(23, n_queries=90, systems=2)
    assert frame["score"].is_null().any()
    assert frame["relevance"].is_null().any()
    assert frame.group_by("system", "query", "score").len()["len"].max() > 1  # type: ignore[operator]
    return frame


@pytest.fixture(scope="module")
def log_sdf(spark, log):
    return to_spark(spark, log).cache()


@pytest.mark.parametrize("route", ROUTES)
def test_each_route_equals_local_per_query_and_means(log, log_sdf, route):
    want = rke.evaluate(log, ROUTE_METRICS, by="system", per_query=True)
    got = rke_spark.evaluate(log_sdf, ROUTE_METRICS, by="system", per_query=True, route=route)
    assert_same(to_polars(got), want, ["system", "query"])
    means = rke_spark.evaluate(log_sdf, ROUTE_METRICS, by="system", route=route)
    assert_same(to_polars(means), rke.evaluate(log, ROUTE_METRICS, by="system"), [])


@pytest.mark.parametrize("route", ["partitions", "buckets"])
def test_without_by_and_with_one_partition_or_many(spark, log, route):
    one = log.filter(pl.col("system") == "s0").drop("system")
    sdf = to_spark(spark, one)
    want = rke.evaluate(one, ROUTE_METRICS)
    for n in (1, 7):  # one partition (bucket) holding every list; more than the cores
        got = rke_spark.evaluate(sdf, ROUTE_METRICS, route=route, n_partitions=n)
        assert_same(to_polars(got), want, [])


@pytest.mark.parametrize("route", ["partitions", "buckets"])
def test_lists_split_across_tiny_arrow_batches(spark, log, log_sdf, route):
    # Batches of 7 rows: every list reaches the worker in pieces, which are gathered before
    # the local engine runs (the routes need no order within a partition or bucket).
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "7")
    try:
        got = rke_spark.evaluate(log_sdf, ROUTE_METRICS, by="system", per_query=True, route=route)
        want = rke.evaluate(log, ROUTE_METRICS, by="system", per_query=True)
        assert_same(to_polars(got), want, ["system", "query"])
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")


@pytest.mark.parametrize("route", ["partitions", "buckets"])
def test_an_empty_input_on_each_route(spark, log, route):
    empty = log.clear()
    sdf = to_spark(spark, empty)
    got = rke_spark.evaluate(sdf, ROUTE_METRICS, by="system", per_query=True, route=route)
    assert to_polars(got).height == 0
    means = rke_spark.evaluate(sdf, ROUTE_METRICS, route=route)
    assert_same(to_polars(means), rke.evaluate(empty, ROUTE_METRICS), [])


def test_the_route_is_checked_on_the_driver(log_sdf):
    with pytest.raises(InvalidOptionError, match=r"route= must be one of .*'buckets'.*'fast'"):
        rke_spark.evaluate(log_sdf, ["map"], route="fast")


def test_spark_35_gets_the_partitions_route_and_a_clear_error_for_buckets(log_sdf, monkeypatch):
    # The version check reads the session's Spark version; 3.5 has no applyInArrow.
    monkeypatch.setattr(type(log_sdf.sparkSession), "version", property(lambda _: "3.5.6"))
    assert rke_spark._pick_route("auto", log_sdf) == "sorted"
    assert rke_spark._pick_route("sorted", log_sdf) == "sorted"
    with pytest.raises(InvalidOptionError, match=r"route='buckets' needs Spark >= 4\.0.*3\.5\.6"):
        rke_spark.evaluate(log_sdf, ["map"], route="buckets")
    monkeypatch.undo()
    assert rke_spark._pick_route("buckets", log_sdf) == "buckets"
