"""polars_rankeval.spark against Spark's own RankingEvaluator and against the local path.

``python benchmarks/spark_bench.py [ROWS] [--batch N] [--partitions N] [--routes A,B]``
(default 10M rows, Arrow batches of 10,000 rows, 4 shuffle partitions, every route) reads
the suite's generated log (``benchmarks/_data/log_ROWS.parquet``, written by ``generate.py``
if missing) and times, in one process with one Spark session in ``local[2]`` (the same
settings for every route):

* ``rke_spark[ROUTE]``: ``rke_spark.evaluate(spark.read.parquet(...), METRICS, route=ROUTE)``,
  the means collected, for the routes ``partitions`` (the default), ``buckets`` and ``sorted``;
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

Before the timings every Spark route runs once on the first 1M rows, so that the JVM's
warm-up and the Python workers' start (imports included) are charged to none of them. Each
route's CPU time is the sum over this process and its children (the JVM, the Python workers),
read from ``/proc``: on a machine other jobs share it moves less than the wall time.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
import warnings
from pathlib import Path

import polars as pl

import polars_rankeval as rke

HERE = Path(__file__).resolve().parent
# benchmarks/profile.py would shadow the stdlib module pyspark imports (cProfile): the
# script's folder leaves the path, and generate.py is loaded from its file.
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != HERE]
_spec = importlib.util.spec_from_file_location("generate", HERE / "generate.py")
assert _spec is not None
assert _spec.loader is not None
_generate_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_generate_module)
generate = _generate_module.generate

METRICS = ["p@10", "recall@10", "map", "ndcg@10(gain=binary)"]
SPARK_NAMES = {
    "p@10": ("precisionAtK", 10),
    "recall@10": ("recallAtK", 10),
    "map": ("meanAveragePrecision", 10),
    "ndcg@10(gain=binary)": ("ndcgAtK", 10),
}


ROUTES = ("partitions", "buckets", "sorted")


def session(batch: int, partitions: int):
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("rke-spark-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "8g")
        .config("spark.sql.shuffle.partitions", str(partitions))
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(batch))
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


def tree_cpu() -> float:
    """CPU seconds (user + system, reaped children included) of this process and its children."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    seconds: dict[int, float] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:  # the process ended meanwhile
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        parents[int(name)] = int(fields[1])
        seconds[int(name)] = sum(int(value) for value in fields[11:15]) / tick
    family = {os.getpid()}
    grew = True
    while grew:
        found = {pid for pid, parent in parents.items() if parent in family} - family
        family |= found
        grew = bool(found)
    return sum(seconds[pid] for pid in family if pid in seconds)


def timed(function, *args):
    cpu = tree_cpu()
    start = time.perf_counter()
    value = function(*args)
    return time.perf_counter() - start, tree_cpu() - cpu, value


def option(name: str, default: int) -> int:
    return int(float(sys.argv[sys.argv.index(name) + 1])) if name in sys.argv else default


def main() -> None:
    numbers = [a for a in sys.argv[1:] if not a.startswith("--")]
    numbers = [
        a for a in numbers if sys.argv[sys.argv.index(a) - 1] not in ("--batch", "--partitions")
    ]
    rows = int(float(numbers[0])) if numbers else 10_000_000
    batch, partitions = option("--batch", 10_000), option("--partitions", 4)
    path = HERE / "_data" / f"log_{rows}.parquet"
    if not path.exists():
        path.parent.mkdir(exist_ok=True)
        generate(rows, path)
    warnings.filterwarnings("ignore", category=FutureWarning)  # pyspark on pandas 3
    from polars_rankeval import spark as rke_spark

    started, _, spark = timed(session, batch, partitions)
    results: dict[str, tuple[float, float, dict[str, float]]] = {}

    def local() -> dict[str, float]:
        return rke.evaluate(pl.scan_parquet(path), METRICS).collect().row(0, named=True)

    def on_spark(route: str, head: int | None = None) -> dict[str, float]:
        log = spark.read.parquet(str(path))
        log = log.limit(head) if head else log
        return rke_spark.evaluate(log, METRICS, route=route).collect()[0].asDict()

    for route in ROUTES:  # warm-up, not timed
        on_spark(route, 1_000_000)
    load = os.getloadavg()
    results["rke_local"] = timed(local)
    order = (
        sys.argv[sys.argv.index("--routes") + 1].split(",") if "--routes" in sys.argv else ROUTES
    )
    for route in order:  # --routes sorted,partitions: another order, to see the drift
        results[f"rke_spark[{route}]"] = timed(on_spark, route)
    results["spark_own"] = timed(spark_own, spark, path)
    spark.stop()
    local = results["rke_local"][2]
    after = os.getloadavg()
    print(
        f"rows {rows:,}; Arrow batches of {batch:,} rows, {partitions} shuffle partitions; "
        f"Spark session start {started:.1f} s (not counted); load average "
        f"{load[0]:.1f} before, {after[0]:.1f} after (1 min), {after[2]:.1f} (15 min)"
    )
    print("| route | time (s) | CPU time (s) | time / spark_own | max abs diff of means vs local |")
    print("| --- | --- | --- | --- | --- |")
    for name, (seconds, cpu, means) in results.items():
        diff = max(abs(means[m] - local[m]) for m in METRICS)
        ratio = seconds / results["spark_own"][0]
        print(f"| {name} | {seconds:.1f} | {cpu:.1f} | {ratio:.2f}x | {diff:.1e} |")


if __name__ == "__main__":
    main()
