"""``polars_rankeval.spark``: the Spark route gives the local engine's numbers.

One Spark session in ``local[2]`` per test module (per xdist worker under ``-n auto``), bound
to 127.0.0.1. Skipped without pyspark (the ``spark`` extra) or without a ``java`` on the PATH.
"""

from __future__ import annotations

import shutil
import sys

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke

pytest.importorskip("pyspark")
if shutil.which("java") is None:
    pytest.skip("Spark needs a Java runtime: no `java` on the PATH", allow_module_level=True)

from pyspark.errors import PythonException

from polars_rankeval import spark as rke_spark

pytestmark = [
    # PySpark 4.x warns that it does not yet support pandas 3; the Arrow route uses no pandas.
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning"),
]

METRICS = [
    "ndcg@10",
    "ndcg",
    "map",
    "mrr",
    "p@5",
    "recall@20",
    "bpref",
    "num_q",
    "num_ret",
    "num_rel_ret",
    "gm_map",
    "frp",
    "spearman",  # NaN where undefined, left out of the mean
]


def generated_log(seed: int, n_queries: int = 120, systems: int = 3) -> pl.DataFrame:
    """Several systems over the same queries: tied scores, graded and negative labels,
    unjudged rows (null label), unretrieved rows (null score) and judgment-only queries."""
    rng = np.random.default_rng(seed)
    frames = []
    for system in range(systems):
        n_items = rng.integers(1, 30, size=n_queries)
        query = np.repeat(np.arange(n_queries), n_items)
        item = np.concatenate([rng.choice(60, size=n, replace=False) for n in n_items])
        score = np.round(rng.random(query.size), 1)  # one decimal: many ties
        label = rng.choice([-1, 0, 1, 2, 3], size=query.size, p=[0.05, 0.45, 0.25, 0.15, 0.1])
        frames.append(
            pl.DataFrame(
                {
                    "system": f"s{system}",
                    "query": [f"q{q}" for q in query],
                    "item": item.astype(np.int64),
                    "score": pl.Series(score).set(pl.Series(rng.random(query.size) < 0.1), None),
                    "relevance": pl.Series(label).set(
                        pl.Series(rng.random(query.size) < 0.3), None
                    ),
                }
            )
        )
    return pl.concat(frames)


def to_spark(spark, frame: pl.DataFrame):
    return spark.createDataFrame(frame.to_arrow())


def to_polars(sdf) -> pl.DataFrame:
    frame = (
        pl.from_arrow(sdf.toArrow()) if hasattr(sdf, "toArrow") else pl.from_pandas(sdf.toPandas())
    )
    assert isinstance(frame, pl.DataFrame)
    return frame


def assert_same(got: pl.DataFrame, want: pl.DataFrame, keys: list[str]) -> None:
    if keys:
        got = got.sort(keys)
    assert got.columns == want.columns
    assert_frame_equal(got, want, check_dtypes=False, abs_tol=1e-12, rel_tol=0)


@pytest.fixture(scope="module")
def log() -> pl.DataFrame:
    return generated_log(11)


@pytest.fixture(scope="module")
def log_sdf(spark, log):
    return to_spark(spark, log).cache()


def test_per_query_and_means_equal_local(spark, log, log_sdf):
    got = to_polars(rke_spark.evaluate(log_sdf, METRICS, by="system", per_query=True))
    want = rke.evaluate(log, METRICS, by="system", per_query=True)
    assert want.height > 200
    assert want["spearman"].is_nan().any()
    assert want["frp"].is_null().any()
    assert_same(got, want, ["system", "query"])
    means = to_polars(rke_spark.evaluate(log_sdf, METRICS, by="system"))
    assert_same(means, rke.evaluate(log, METRICS, by="system"), [])
    assert means.schema == rke.evaluate(log, METRICS, by="system").schema


def test_without_by_one_system(spark, log):
    one = log.filter(pl.col("system") == "s1").drop("system")
    sdf = to_spark(spark, one)
    got = to_polars(rke_spark.evaluate(sdf, METRICS, per_query=True))
    assert_same(got, rke.evaluate(one, METRICS, per_query=True), ["query"])
    assert_same(to_polars(rke_spark.evaluate(sdf, METRICS)), rke.evaluate(one, METRICS), [])


def test_an_empty_input_gives_null_means_and_zero_counts(spark, log):
    empty = log.clear()
    sdf = to_spark(spark, empty)
    assert to_polars(rke_spark.evaluate(sdf, METRICS, by="system", per_query=True)).height == 0
    assert_same(to_polars(rke_spark.evaluate(sdf, METRICS)), rke.evaluate(empty, METRICS), [])


def test_the_partition_count_changes_nothing(log, log_sdf):
    want = rke.evaluate(log, ["ndcg@10", "map", "num_q"], by="system", per_query=True)
    for n in (1, 7):
        got = rke_spark.evaluate(
            log_sdf, ["ndcg@10", "map", "num_q"], by="system", per_query=True, n_partitions=n
        )
        assert_same(to_polars(got), want, ["system", "query"])


@pytest.mark.parametrize("min_rows", [1, 50])
def test_lists_split_across_arrow_batches(spark, log, log_sdf, min_rows):
    # The sorted route streams: with batches of 7 rows nearly every ranked list straddles two
    # or more batches, so the carry-over of the last list runs all the time (min_rows=1
    # evaluates every batch; min_rows=50 first gathers several batches).
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "7")
    try:
        got = rke_spark.evaluate(
            log_sdf, METRICS, by="system", per_query=True, route="sorted", min_rows=min_rows
        )
        assert_same(
            to_polars(got),
            rke.evaluate(log, METRICS, by="system", per_query=True),
            ["system", "query"],
        )
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")


OPTIONS = [
    {"relevance_level": 2},
    {"missing_queries": "zero"},
    {"ties": "expected"},
    {"negative_labels": "nonrelevant"},
    {"unretrieved": "drop"},
    {"duplicates": "max_score"},
    {"nan_scores": "last"},
    {"convention": "ranx"},
]


def test_every_option_passes_through(spark, log):
    # One Spark job per option set; metrics every preset and tie mode accepts.
    metrics = ["ndcg@10", "map", "p@5", "recall@20", "num_q"]
    log = log.with_columns(pl.col("score").fill_nan(None))
    dup = pl.concat([log, log.head(40).with_columns(pl.col("score") - 1.0)])  # lower duplicates
    nan = log.with_columns(
        pl.when(pl.col("item") % 11 == 0).then(float("nan")).otherwise("score").alias("score")
    )
    for options in OPTIONS:
        frame = dup if "duplicates" in options else nan if "nan_scores" in options else log
        got = rke_spark.evaluate(to_spark(spark, frame), metrics, by="system", **options)
        want = rke.evaluate(frame, metrics, by="system", **options)
        assert_same(to_polars(got), want, [])


def test_column_names_and_several_by_columns(spark, log):
    renamed = log.rename({"query": "qid", "item": "doc", "score": "s", "relevance": "rel"})
    renamed = renamed.with_columns(day=pl.col("doc") % 2)
    names = {"query": "qid", "item": "doc", "score": "s", "relevance": "rel"}
    got = rke_spark.evaluate(
        to_spark(spark, renamed), ["map", "ndcg@5"], by=["system", "day"], per_query=True, **names
    )
    want = rke.evaluate(renamed, ["map", "ndcg@5"], by=["system", "day"], per_query=True, **names)
    assert_same(to_polars(got), want, ["system", "day", "qid"])


def test_errors_on_the_driver(log_sdf):
    with pytest.raises(rke.ColumnNotFoundError, match="scores"):
        rke_spark.evaluate(log_sdf, ["map"], by="system", score="scores")
    with pytest.raises(rke.UnknownMetricError):
        rke_spark.evaluate(log_sdf, ["ndgc@10"], by="system")
    with pytest.raises(rke.InvalidOptionError):
        rke_spark.evaluate(log_sdf, ["map"], by="system", n_partitions=0)
    with pytest.raises(TypeError):
        rke_spark.evaluate(log_sdf, ["map"], by="system", n_buckets=2)  # type: ignore[call-arg]


def test_value_errors_reach_the_driver_with_our_message(spark, log):
    duplicated = pl.concat([log, log.head(3)])
    result = rke_spark.evaluate(to_spark(spark, duplicated), ["map"], by="system")
    # Spark wraps the worker's exception: its message ends with our exception's name and text.
    with pytest.raises(PythonException, match=r"DuplicateItemError: \d+ duplicate"):
        result.collect()


def test_join_run_qrels_like_the_local_join(spark):
    run = pl.DataFrame(
        {"query": ["q", "q", "r"], "item": ["a", "b", "a"], "score": [1.0, 0.5, 2.0]}
    )
    qrels = pl.DataFrame(
        {"query": ["q", "q", "s"], "item": ["a", "c", "x"], "relevance": [1, 2, 0]}
    )
    got = to_polars(rke_spark.join_run_qrels(to_spark(spark, run), to_spark(spark, qrels)))
    # The local join says that query r has no judgments and s no run rows.
    with pytest.warns(rke.QueryCoverageWarning, match="1 of 2 run queries"):
        want = rke.join_run_qrels(run, qrels).collect()
    assert_same(got, want.sort("query", "item"), ["query", "item"])
    with pytest.raises(rke.ColumnNotFoundError):
        rke_spark.join_run_qrels(to_spark(spark, qrels), to_spark(spark, qrels))


def test_spark_convention_equals_sparks_own_ranking_evaluator(spark):
    from pyspark.ml.evaluation import RankingEvaluator

    # Binary data Spark can take: distinct scores (Spark has no tie rule), every judged item
    # relevant (label 1; PySpark drops graded labels), other items unjudged, some relevant items
    # not retrieved, and every query with at least one relevant item (Spark scores a query with
    # none 0 and counts it, where trec_eval drops it).
    rng = np.random.default_rng(3)
    rows = []
    for q in range(150):
        n = int(rng.integers(3, 25))
        items = rng.choice(1000, size=n, replace=False)
        judged = rng.random(n) < 0.3
        judged[0] = True
        retrieved = rng.random(n) < 0.9
        for item, j, r, s in zip(items, judged, retrieved, rng.permutation(n), strict=True):
            rows.append((q, int(item), float(s) if r else None, 1 if j else None))
    log = pl.DataFrame(rows, schema=["query", "item", "score", "relevance"], orient="row")
    lists = (
        log.sort("score", descending=True, nulls_last=True)
        .group_by("query")
        .agg(
            prediction=pl.col("item").filter(pl.col("score").is_not_null()).cast(pl.Float64),
            label=pl.col("item").filter(pl.col("relevance").is_not_null()).cast(pl.Float64),
        )
    )
    lists_sdf = to_spark(spark, lists)
    ours = to_polars(
        rke_spark.evaluate(
            to_spark(spark, log),
            ["map", "map@10", "p@5", "ndcg@10", "recall@10"],
            convention="spark",
        )
    ).row(0, named=True)
    pairs = {
        "map": ("meanAveragePrecision", 10),
        "map@10": ("meanAveragePrecisionAtK", 10),
        "p@5": ("precisionAtK", 5),
        "ndcg@10": ("ndcgAtK", 10),
        "recall@10": ("recallAtK", 10),
    }
    for label, (name, k) in pairs.items():
        evaluator = RankingEvaluator(metricName=name, k=k)
        assert ours[label] == pytest.approx(evaluator.evaluate(lists_sdf), abs=1e-12), label


def test_without_pyspark_the_error_names_the_extra(monkeypatch):
    # pyspark is imported on first use: a missing one is an ImportError with the install line.
    monkeypatch.setitem(sys.modules, "pyspark.sql", None)
    with pytest.raises(ImportError, match=r'pip install "polars-rankeval\[spark\]"'):
        rke_spark.evaluate(None, ["map"])  # type: ignore[arg-type]


# ---- the recommender metrics: extra tables, per-system metrics, finishing steps -------------

RECSYS_METRICS = [
    "ndcg@10",
    "novelty@5",
    "unseen@5",
    "auc",
    "ild@5",
    "coverage@5",
    "gini@5",
    "gauc",
    "personalization@5",
]


@pytest.fixture(scope="module")
def recsys_tables(log):
    rng = np.random.default_rng(5)
    queries = log["query"].unique().sort()
    train = pl.DataFrame(
        {
            "query": rng.choice(queries.to_numpy(), size=400),
            "item": rng.integers(0, 60, size=400).astype(np.int64),
        }
    )
    items = pl.DataFrame(
        {"item": np.arange(60, dtype=np.int64), "embedding": rng.normal(size=(60, 3)).tolist()}
    )
    return {"train": train, "items": items, "catalog": 70}


@pytest.mark.parametrize("by", ["system", None])
def test_recommender_metrics_equal_local(spark, log, log_sdf, recsys_tables, by) -> None:
    data = log if by else log.filter(pl.col("system") == "s0")
    sdf = log_sdf if by else to_spark(spark, data)
    got = to_polars(rke_spark.evaluate(sdf, RECSYS_METRICS, by=by, **recsys_tables))
    want = rke.evaluate(data, RECSYS_METRICS, by=by, **recsys_tables)
    assert_same(got, want, [by] if by else [])


def test_recommender_tables_as_spark_frames_and_per_query(spark, log, log_sdf, recsys_tables):
    spark_tables = {
        "train": to_spark(spark, recsys_tables["train"]),
        "items": to_spark(spark, recsys_tables["items"]),
        "catalog": recsys_tables["catalog"],
    }
    metrics = ["novelty@5", "ild@5", "coverage@5"]
    with pytest.warns(rke.PerSystemMetricWarning):
        got = to_polars(
            rke_spark.evaluate(log_sdf, metrics, by="system", per_query=True, **spark_tables)
        )
    with pytest.warns(rke.PerSystemMetricWarning):
        want = rke.evaluate(log, metrics, by="system", per_query=True, **recsys_tables)
    assert_same(got, want, ["system", "query"])


def test_empty_queries_drop_on_spark(log, log_sdf):
    with pytest.warns(rke.EmptyQueriesWarning):
        got = to_polars(rke_spark.evaluate(log_sdf, ["p@5"], by="system", empty_queries="drop"))
    with pytest.warns(rke.EmptyQueriesWarning):
        want = rke.evaluate(log, ["p@5"], by="system", empty_queries="drop")
    assert_same(got, want, ["system"])


def test_a_missing_table_is_named_on_the_driver(log_sdf):
    with pytest.raises(rke.InvalidOptionError, match="needs the train table"):
        rke_spark.evaluate(log_sdf, ["novelty@5"], by="system")


# Issue 18's families: C/W/L, NTCIR, Compat/Accuracy/NCG, per-metric rel= and judged_only=,
# tie bounds, and the intent-aware measures (subtopic judgments as a list-of-struct column).
IR_METRICS = [
    "inst(t=2,max_rel=3)",
    "bpm@5(max_rel=3)",
    "q_measure",
    "nerr_ntcir@5",
    "compat",
    "accuracy@5",
    "ncg@5",
    "map(rel=2)",
    "p@5(judged_only=True)",
    "ndcg@5(ties=optimistic)",
    "ndcg@5(ties=pessimistic)",
]
INTENT_AWARE_METRICS = ["alpha_ndcg@5", "err_ia@10", "nnrbp", "map_ia", "strec@5"]


def _with_subtopics(log: pl.DataFrame) -> pl.DataFrame:
    rng = np.random.default_rng(3)
    judgments = [
        None
        if label is None
        else [
            {"subtopic": str(s), "relevance": int(label)}
            for s in range(1, 4)
            if label > 0 and rng.random() < 0.5
        ]
        for label in log["relevance"].to_list()
    ]
    dtype = pl.List(pl.Struct({"subtopic": pl.String, "relevance": pl.Int64}))
    return log.with_columns(pl.Series("subtopics", judgments, dtype=dtype))


def test_ir_families_equal_local(spark, log, log_sdf) -> None:
    got = to_polars(rke_spark.evaluate(log_sdf, IR_METRICS, by="system", per_query=True))
    want = rke.evaluate(log, IR_METRICS, by="system", per_query=True)
    assert_same(got, want, ["system", "query"])
    means = to_polars(rke_spark.evaluate(log_sdf, IR_METRICS, by="system"))
    assert_same(means, rke.evaluate(log, IR_METRICS, by="system"), ["system"])


def test_intent_aware_equal_local(spark, log) -> None:
    diverse = _with_subtopics(log)
    sdf = to_spark(spark, diverse)
    got = to_polars(rke_spark.evaluate(sdf, INTENT_AWARE_METRICS, by="system", per_query=True))
    want = rke.evaluate(diverse, INTENT_AWARE_METRICS, by="system", per_query=True)
    assert_same(got, want, ["system", "query"])


SIMILARITY = [
    "rbo(p=0.9)",
    "rbo(p=0.8,output=min,ties=a)",
    "jaccard@5",
    "overlap@5",
    "kendall_tau@5",
]


@pytest.mark.parametrize("baseline", [None, "s1"])
def test_similarity_equals_local(spark, log, log_sdf, baseline) -> None:
    runs = log.filter(pl.col("score").is_not_null())
    sdf = to_spark(spark, runs)
    got = to_polars(rke_spark.similarity(sdf, SIMILARITY, by="system", baseline=baseline))
    want = rke.similarity(runs, SIMILARITY, by="system", baseline=baseline)
    assert_same(got, want, [])
    assert want.columns == [
        "metric",
        "system",
        "baseline_system",
        "n_queries",
        "value",
        "n_dropped",
    ]
    pairs = ["metric", "system", "baseline_system"]
    got_q = to_polars(
        rke_spark.similarity(sdf, SIMILARITY, by="system", baseline=baseline, per_query=True)
    )
    want_q = rke.similarity(runs, SIMILARITY, by="system", baseline=baseline, per_query=True)
    assert_same(got_q.sort([*pairs, "query"]), want_q.sort([*pairs, "query"]), [])


def test_similarity_keeps_two_key_columns_like_local(spark, log) -> None:
    runs = log.filter(pl.col("score").is_not_null()).with_columns(
        pl.col("system").str.slice(0, 1).alias("family"),
        pl.col("system").str.slice(1).cast(pl.Int32).alias("version"),
    )
    sdf = to_spark(spark, runs.drop("system"))
    keys = ["family", "version"]
    got = to_polars(rke_spark.similarity(sdf, SIMILARITY, by=keys))
    want = rke.similarity(runs.drop("system"), SIMILARITY, by=keys)
    assert want.columns[:5] == [
        "metric",
        "family",
        "version",
        "baseline_family",
        "baseline_version",
    ]
    assert_same(got, want, [])
    assert got.schema["version"] == got.schema["baseline_version"] == pl.Int32


def test_old_sdf_keyword_warns_and_still_works(spark, log, log_sdf) -> None:
    with pytest.warns(rke.RankEvalDeprecationWarning, match="sdf= is renamed data="):
        old = to_polars(rke_spark.evaluate(sdf=log_sdf, metrics=["map"], by="system"))
    assert_same(old, rke.evaluate(log, ["map"], by="system"), [])
    runs = log.filter(pl.col("score").is_not_null())
    with pytest.warns(rke.RankEvalDeprecationWarning, match="sdf= is renamed data="):
        found = rke_spark.similarity(sdf=to_spark(spark, runs), metrics="jaccard@5", by="system")
    assert_same(to_polars(found), rke.similarity(runs, "jaccard@5", by="system"), [])
