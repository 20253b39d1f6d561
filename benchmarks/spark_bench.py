"""polars_rankeval.spark against Spark's own RankingEvaluator and against the local path.

``python benchmarks/spark_bench.py [ROWS]`` (default 10M) reads the suite's generated log
(``benchmarks/_data/log_ROWS.parquet``, written by ``generate.py`` if missing) and times, in
one process with one Spark session in ``local[2]``:

* ``rke_spark``: ``rke_spark.evaluate(spark.read.parquet(...), METRICS)``, the means collected;
* ``spark_own``: Spark's ``RankingEvaluator`` on the same metrics. It needs one row per query
  with ``array<double>`` predictions and labels, so the time includes building them
  (``groupBy`` + ``collect_list``, the predictions sorted as trec_eval ranks: score descending,
  ties by item string descending), cached once and then evaluated once per metric;
* ``rke_local``: ``rke.evaluate(pl.scan_parquet(...), METRICS)`` in this process.

Spark's metrics take every label in the array as relevant (binary gain), so the metrics are the
ones both compute identically: P@10, recall@10, MAP and NDCG@10 with binary gain, the labels
being the items with relevance >= 1; queries without a judged row are dropped on Spark's side
(Spark would score them 0 and count them). Wall times in seconds; the means of every route are
compared with the local ones.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path

import polars as pl

import polars_rankeval as rke

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate import generate  # noqa: E402

METRICS = ["p@10", "recall@10", "map", "ndcg@10(gain=binary)"]
SPARK_NAMES = {
    "p@10": ("precisionAtK", 10),
    "recall@10": ("recallAtK", 10),
    "map": ("meanAveragePrecision", 10),
    "ndcg@10(gain=binary)": ("ndcgAtK", 10),
}


def session():
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("rke-spark-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "8g")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def spark_own(spark, path: Path) -> dict[str, float]:
    from pyspark.ml.evaluation import RankingEvaluator
    from pyspark.sql import functions as sf

    log = spark.read.parquet(str(path))
    retrieved = sf.col("score").isNotNull()
    key = sf.struct(
        sf.col("score"),
        sf.col("item").cast("string").alias("s"),
        sf.col("item").cast("double").alias("d"),
    )
    lists = (
        log.groupBy("query")
        .agg(
            sf.sort_array(sf.collect_list(sf.when(retrieved, key)), asc=False).alias("ranked"),
            sf.collect_list(sf.when(sf.col("relevance") >= 1, sf.col("item").cast("double"))).alias(
                "label"
            ),
            sf.count("relevance").alias("judged"),
        )
        .where(sf.col("judged") > 0)
        .select(sf.col("ranked.d").alias("prediction"), "label")
        .cache()
    )
    lists.count()
    return {
        label: RankingEvaluator(metricName=name, k=k).evaluate(lists)
        for label, (name, k) in SPARK_NAMES.items()
    }


def timed(function, *args):
    start = time.perf_counter()
    value = function(*args)
    return time.perf_counter() - start, value


def main() -> None:
    rows = int(float(sys.argv[1])) if len(sys.argv) > 1 else 10_000_000
    path = HERE / "_data" / f"log_{rows}.parquet"
    if not path.exists():
        path.parent.mkdir(exist_ok=True)
        generate(rows, path)
    warnings.filterwarnings("ignore", category=FutureWarning)  # pyspark on pandas 3
    from polars_rankeval import spark as rke_spark

    started, spark = timed(session)
    results: dict[str, tuple[float, dict[str, float]]] = {}

    def local() -> dict[str, float]:
        return rke.evaluate(pl.scan_parquet(path), METRICS).collect().row(0, named=True)

    def on_spark() -> dict[str, float]:
        return rke_spark.evaluate(spark.read.parquet(str(path)), METRICS).collect()[0].asDict()

    results["rke_local"] = timed(local)
    results["rke_spark"] = timed(on_spark)
    results["spark_own"] = timed(spark_own, spark, path)
    spark.stop()
    local = results["rke_local"][1]
    print(f"rows {rows:,}; Spark session start {started:.1f} s (not counted)")
    print("| route | time (s) | time / rke_spark | max abs diff of means vs local |")
    print("| --- | --- | --- | --- |")
    for name, (seconds, means) in results.items():
        diff = max(abs(means[m] - local[m]) for m in METRICS)
        ratio = seconds / results["rke_spark"][0]
        print(f"| {name} | {seconds:.1f} | {ratio:.2f}x | {diff:.1e} |")


if __name__ == "__main__":
    main()
