"""Labels and cutoffs at the edges of their dtypes: refused with our error, never a raw Polars
error, a null or a NaN (reliability audit round 3: E10, E12, E31, E42, S16b; F6, F8, F9).

Every expected value below is worked out by hand in a comment next to it.
"""

from __future__ import annotations

import math
import os
import shutil
import sys
from collections.abc import Callable

import polars as pl
import pytest

import polars_rankeval as rke

NAN, INF = float("nan"), float("inf")


def frame(labels: pl.Series) -> pl.DataFrame:
    """q1 ranks a, b; q2 ranks a, b; the labels in that row order."""
    return pl.DataFrame(
        {
            "query": ["q1", "q1", "q2", "q2"],
            "item": ["a", "b", "a", "b"],
            "score": [2.0, 1.0, 2.0, 1.0],
            "relevance": labels,
        }
    )


def _lazy(buckets: int, engine: str = "auto") -> Callable[[pl.DataFrame, list[str]], object]:
    def run(df: pl.DataFrame, metrics: list[str]) -> object:
        return rke.evaluate(df.lazy(), metrics, n_buckets=buckets).collect(engine=engine)  # type: ignore[call-overload]

    return run


def _agg(df: pl.DataFrame, metrics: list[str]) -> object:
    name = metrics[0]
    expr = getattr(pl.col("relevance").rank_eval, name)()
    return df.group_by(pl.lit("all").alias("run")).agg(expr)


# Every local route the data can take: a DataFrame, a LazyFrame in one pass, in re-read passes
# (2) and in spilled passes (4), the streaming engine, and the expression namespace.
PATHS = {
    "dataframe": rke.evaluate,
    "lazy_1": _lazy(1),
    "lazy_2": _lazy(2),
    "lazy_4": _lazy(4),
    "streaming": _lazy(1, "streaming"),
    "agg": _agg,
}


@pytest.mark.parametrize("path", PATHS)
def test_nan_label_is_a_column_value_error_on_every_path(path):
    df = frame(pl.Series([1.0, NAN, 0.0, 1.0]))
    # One bad label, in q1 only: the count and the example name exactly that.
    with pytest.raises(
        rke.ColumnValueError, match=r"^1 label\(s\) in 'relevance'.*1 NaN.*1 ranked list.*'q1'"
    ) as caught:
        PATHS[path](df, ["map"])
    assert "null, not NaN" in str(caught.value)
    assert "conversion from" not in str(caught.value)  # no Polars cast error inside ours


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    ("labels", "found"),
    [
        ([1.0, INF, -INF, 1.0], r"2 ±inf"),
        ([1.0, 1e20, 0.0, 1.5], r"1 with a fraction, 1 outside the Int64 range"),
        ([1.0, 2.0**63, 0.0, 1.0], r"1 outside the Int64 range"),
    ],
    ids=["inf", "huge_and_fraction", "two_to_63"],
)
def test_infinite_and_out_of_range_float_labels_are_refused(path, labels, found):
    df = frame(pl.Series(labels))
    with pytest.raises(rke.ColumnValueError, match=rf"'relevance'.*\({found}\)"):
        PATHS[path](df, ["map"])


def test_the_largest_whole_float_below_two_to_63_is_a_label():
    # 2^63 - 1024 is the float just below 2^63 and fits in Int64. q1: a (label huge, relevant)
    # at rank 1, b (1) at rank 2: AP = (1/1 + 2/2) / 2 = 1; q2: b relevant at rank 2: 1/2.
    df = frame(pl.Series([2.0**63 - 1024, 1.0, 0.0, 1.0]))
    assert rke.evaluate(df, ["map"]).item() == pytest.approx((1.0 + 0.5) / 2)


@pytest.mark.parametrize("path", PATHS)
def test_uint64_label_past_int64_is_a_column_value_error(path):
    df = frame(pl.Series([1, 2**64 - 1, 0, 1], dtype=pl.UInt64))
    with pytest.raises(
        rke.ColumnValueError, match=r"^1 label\(s\) in 'relevance'.*outside the Int64 range.*'q1'"
    ):
        PATHS[path](df, ["map"])


@pytest.mark.parametrize("path", PATHS)
def test_uint64_label_at_int64_max_is_read(path):
    # q1: a (2^63-1) and b (1) both relevant, at ranks 1, 2: AP = 1; q2: b at rank 2: AP = 1/2.
    df = frame(pl.Series([2**63 - 1, 1, 0, 1], dtype=pl.UInt64))
    out = PATHS[path](df, ["map"])
    assert isinstance(out, pl.DataFrame)
    assert out["map"].item() == pytest.approx(0.75)


@pytest.mark.parametrize("metric", ["ndcg(gain=exp)", "dcg(gain=exp)", "ndcg@5(gain=exp)"])
@pytest.mark.parametrize("path", ["dataframe", "lazy_2", "streaming"])
def test_exp_gain_overflow_names_the_label(metric, path):
    # 2^1100 is inf in Float64: ndcg was inf/inf = NaN, dcg inf.
    df = frame(pl.Series([1, 1100, 0, 1]))
    with pytest.raises(rke.ColumnValueError, match=r"label 1100 overflows 2\^label") as caught:
        PATHS[path](df, [metric])
    assert str(caught.value).startswith(metric + ": ")
    assert "gain=exp" in str(caught.value)
    assert "gain=linear" in str(caught.value)


def test_exp_gain_overflow_in_the_expression_namespace():
    df = frame(pl.Series([1, 1100, 0, 1]))
    with pytest.raises(rke.ColumnValueError, match=r"ndcg\(gain=exp\): relevance label 1100"):
        df.group_by(pl.lit(1).alias("run")).agg(pl.col("relevance").rank_eval.ndcg(gain="exp"))


def test_exp_gain_sum_overflow_is_refused_too():
    # Three labels 1023: each gain 2^1023 - 1 is finite, but the ideal DCG
    # 2^1023 (1 + 1/log2(3) + 1/2) ≈ 2.13 · 2^1023 is past the Float64 maximum (≈ 2 · 2^1023).
    df = pl.DataFrame(
        {"query": "q", "item": ["a", "b", "c"], "score": [3.0, 2.0, 1.0], "relevance": 1023}
    )
    with pytest.raises(rke.ColumnValueError, match=r"labels up to 1023\) overflows Float64"):
        rke.evaluate(df, ["ndcg(gain=exp)"])


def test_exp_gain_at_label_1023_is_computed():
    # One relevant row, label 1023, at rank 1: dcg = (2^1023 - 1) / log2(2) = 2^1023 in Float64
    # (the -1 is below its precision); ndcg = 1. q2 has no positive label: dcg 0, ndcg 0.
    df = frame(pl.Series([1023, 0, 0, 0]))
    out = rke.evaluate(df, ["dcg(gain=exp)", "ndcg(gain=exp)"], per_query=True)
    assert out.rows() == [("q1", 2.0**1023, 1.0), ("q2", 0.0, 0.0)]


def test_exp_gain_past_the_cutoff_does_not_overflow():
    # The label 1100 sits at rank 2, outside dcg@1: dcg@1 = 2^1 - 1 = 1, exactly.
    df = frame(pl.Series([1, 1100, 0, 1]))
    out = rke.evaluate(df, ["dcg@1(gain=exp)"], per_query=True)
    assert out["dcg@1(gain=exp)"].to_list() == [1.0, 0.0]


def test_err_max_grade_past_float_range_is_an_option_error():
    df = frame(pl.Series([1, 0, 0, 1]))
    with pytest.raises(rke.InvalidOptionError, match=r"max_grade=.*at most 1023.*got 1024"):
        rke.evaluate(df, ["err(max_grade=1024)"])
    with pytest.raises(rke.InvalidOptionError, match="max_grade"):
        rke.metrics.err(max_grade=5000)


def test_err_with_a_satisfaction_that_rounds_to_one_is_not_nan():
    df = pl.DataFrame(
        {"query": "q", "item": ["a", "b", "c"], "score": [3.0, 2.0, 1.0], "relevance": [1, 60, 1]}
    )
    out = rke.evaluate(df, ["err(max_grade=60)", "err(transform=sigmoid)"]).row(0)
    # exp, max_grade 60: R = (1, 2^60 - 1, 1) / 2^60; ERR = R1 + (1 - R1) R2 / 2 + 0 ≈ 1/2
    # (R2 rounds to 1, so the third row is never reached).
    r1 = 1 / 2**60
    assert out[0] == pytest.approx(r1 + (1 - r1) * (1 - r1) / 2, rel=1e-12)
    # sigmoid: R = σ(1), σ(60) = 1.0 in Float64, σ(1): ERR = σ(1) + (1 - σ(1)) / 2.
    s1 = 1 / (1 + math.exp(-1))
    assert out[1] == pytest.approx(s1 + (1 - s1) / 2, rel=1e-12)


@pytest.mark.parametrize(
    "metric",
    ["p@18446744073709551616", "p@18446744073709551615", "p@9223372036854775808", "P_" + "9" * 30],
)
def test_cutoff_past_int64_is_an_option_error(metric):
    df = frame(pl.Series([1, 0, 0, 1]))
    with pytest.raises(rke.InvalidOptionError, match=r"at most 9223372036854775807 \(2\^63-1"):
        rke.evaluate(df, [metric])


def test_cutoff_with_thousands_of_digits_is_an_option_error():
    # Python's int() refuses strings over 4300 digits with a bare ValueError.
    df = frame(pl.Series([1, 0, 0, 1]))
    expected = r"^cutoff k for 'ndcg' must be at most 9223372036854775807 .*a 5000-digit number$"
    with pytest.raises(rke.InvalidOptionError, match=expected):
        rke.evaluate(df, ["ndcg@" + "9" * 5000])


@pytest.mark.parametrize(
    "build", [rke.metrics.precision, rke.metrics.recall, rke.metrics.ndcg, rke.metrics.f1]
)
def test_builders_refuse_a_cutoff_past_int64(build):
    with pytest.raises(rke.InvalidOptionError, match=r"cutoff k for '\w+' must be at most"):
        build(2**63)


def test_cutoff_at_int64_max_computes():
    k = 2**63 - 1
    df = frame(pl.Series([1, 0, 0, 1]))
    names = [f"{m}@{k}" for m in ("p", "recall", "ndcg", "map", "success", "judged")]
    out = rke.evaluate(df, names).row(0)
    # Each query: one relevant row of two (q1 at rank 1, q2 at rank 2), both judged.
    # p = 1/k; recall 1; ndcg: q1 1, q2 (1/log2(3)) / 1; map: q1 1, q2 1/2; success 1;
    # judged = 2/k. Means over the two queries.
    assert out[0] == pytest.approx(1 / k)
    assert out[1] == 1.0
    assert out[2] == pytest.approx((1 + 1 / math.log2(3)) / 2)
    assert out[3] == pytest.approx(0.75)
    assert out[4] == 1.0
    assert out[5] == pytest.approx(2 / k)


@pytest.fixture
def spark():
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("Spark needs a Java runtime: no `java` on the PATH")
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # Another module's session in this worker is reused and left running; ours is stopped.
    ours = SparkSession.getActiveSession() is None
    session = (
        SparkSession.builder.master("local[1]")
        .appName("polars-rankeval-label-checks")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "1g")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    yield session
    if ours:
        session.stop()


@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")
def test_nan_label_through_spark_is_our_error(spark):
    from pyspark.errors import PythonException

    from polars_rankeval import spark as rke_spark

    df = frame(pl.Series([1.0, NAN, 0.0, 1.0]))
    result = rke_spark.evaluate(spark.createDataFrame(df.to_arrow()), ["map"])
    # Spark wraps the worker's exception: its message ends with our exception's name and text.
    with pytest.raises(PythonException, match=r"ColumnValueError: 1 label\(s\) in 'relevance'"):
        result.collect()
