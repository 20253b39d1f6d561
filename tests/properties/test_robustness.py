"""Every row of the README's "What happens when..." table, one test (or more) each.

Errors must be the documented exception types with messages naming the column, option or value;
answers must be right. Expected values are worked by hand in comments.
"""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke


@pytest.fixture
def log() -> pl.DataFrame:
    # q1 ranking: b (rel 1) 0.9, a (rel 0) 0.5; q2 ranking: c (rel 2) 2.0, d (unjudged) 1.0
    return pl.DataFrame(
        {
            "query": ["q1", "q1", "q2", "q2"],
            "item": ["a", "b", "c", "d"],
            "score": [0.5, 0.9, 2.0, 1.0],
            "relevance": [0, 1, 2, None],
        }
    )


# ---- columns and dtypes -----------------------------------------------------------------------


def test_missing_column_lists_present_columns(log):
    with pytest.raises(rke.ColumnNotFoundError) as info:
        rke.evaluate(log, ["map"], score="scores")
    message = str(info.value)
    assert "'scores'" in message
    assert "score=" in message
    assert "['query', 'item', 'score', 'relevance']" in message


def test_misspelled_keyword_is_named(log):
    with pytest.raises(TypeError, match="relevence"):
        rke.evaluate(log, ["map"], relevence="relevance")


def test_non_numeric_score(log):
    with pytest.raises(rke.ColumnTypeError, match=r"'score'.*numeric.*String"):
        rke.evaluate(log.with_columns(pl.col("score").cast(pl.String)), ["map"])


def test_fractional_relevance_is_refused_and_whole_floats_are_accepted(log):
    whole = log.with_columns(pl.col("relevance").cast(pl.Float64))
    assert_frame_equal(rke.evaluate(whole, ["map", "ndcg"]), rke.evaluate(log, ["map", "ndcg"]))
    fractional = whole.with_columns(pl.col("relevance").replace(2.0, 1.5))
    with pytest.raises(rke.ColumnValueError, match=r"'relevance'.*fraction.*'q2'"):
        rke.evaluate(fractional, ["map"])
    with pytest.raises(rke.ColumnValueError):  # lazily too, at collect
        rke.evaluate(fractional.lazy(), ["map"]).collect()


# ---- scores ------------------------------------------------------------------------------------


def test_nan_score_is_an_error_with_count_and_example(log):
    bad = log.with_columns(
        pl.when(pl.col("item") == "c").then(float("nan")).otherwise("score").alias("score")
    )
    with pytest.raises(
        rke.ColumnValueError, match=r"1 NaN value.*'score'.*'q2'.*nan_scores='last'"
    ):
        rke.evaluate(bad, ["mrr"])
    # ranked last instead: q2 becomes d (unjudged), c (relevant) -> RR 1/2; q1 RR 1
    out = rke.evaluate(bad, ["mrr"], nan_scores="last", per_query=True)
    assert out["mrr"].to_list() == [1.0, 0.5]


def test_infinite_scores_are_ordered_naturally():
    data = pl.DataFrame(
        {
            "query": ["q"] * 4,
            "item": ["a", "b", "c", "d"],
            "score": [float("-inf"), 0.0, float("inf"), 1e308],
            "relevance": [1, 0, 0, 0],
        }
    )
    # order: c (+inf), d (1e308), b (0), a (-inf): the relevant item is 4th
    assert rke.evaluate(data, ["mrr"])["mrr"][0] == 0.25


# ---- duplicates --------------------------------------------------------------------------------


def test_duplicates_error_lists_examples(log):
    dup = pl.concat([log, log.filter(pl.col("item") == "c").with_columns(score=pl.lit(5.0))])
    with pytest.raises(rke.DuplicateItemError, match=r"1 duplicate.*'q2'.*duplicates="):
        rke.evaluate(dup, ["map"])


@pytest.mark.parametrize(
    ("policy", "expected_q2_rr"),
    [
        # the duplicate c scores -1.0 (below d), the original c 2.0 (above d)
        ("first", 1.0),  # original row first in input order
        ("last", 0.5),  # the appended row
        ("max_score", 1.0),  # the higher score
    ],
)
def test_duplicates_can_be_resolved(log, policy, expected_q2_rr):
    dup = pl.concat([log, log.filter(pl.col("item") == "c").with_columns(score=pl.lit(-1.0))])
    out = rke.evaluate(dup, ["mrr"], duplicates=policy, per_query=True)
    assert out["mrr"].to_list() == [1.0, expected_q2_rr]
    lazy = rke.evaluate(dup.lazy(), ["mrr"], duplicates=policy, per_query=True).collect()
    assert_frame_equal(lazy, out)


# One query, rows in this input order: a (1st copy), b (1.5, label 0), c (0.5, label 1), a (2nd
# copy). The two copies of a carry different labels, so the metric shows which one was kept:
#   a kept with label 1 at score 1.0 or 1.2: ranking b (0), a (1), c (1); R = 2
#       AP = (1/2 + 2/3) / 2 = 7/12, RR = 1/2
#   a kept with label 0 at score 1.0 or 1.2: ranking b (0), a (0), c (1); R = 1
#       AP = (1/3) / 1 = 1/3, RR = 1/3
#   a kept unretrieved (null score) with label 1: ranking b (0), c (1); R = 2 (a counts)
#       AP = (1/2) / 2 = 1/4, RR = 1/2
#   a kept unretrieved with label 0: ranking b (0), c (1); R = 1
#       AP = (1/2) / 1 = 1/2, RR = 1/2
KEPT_LABEL_1 = (7 / 12, 1 / 2, 2)
KEPT_LABEL_0 = (1 / 3, 1 / 3, 1)
KEPT_UNRETRIEVED_1 = (1 / 4, 1 / 2, 2)
KEPT_UNRETRIEVED_0 = (1 / 2, 1 / 2, 1)


@pytest.mark.parametrize(
    ("first_copy", "second_copy", "policy", "expected"),
    [
        # equal scores: max_score keeps the first occurrence, whichever label it has
        ((1.0, 1), (1.0, 0), "max_score", KEPT_LABEL_1),
        ((1.0, 0), (1.0, 1), "max_score", KEPT_LABEL_0),
        ((1.0, 1), (1.0, 0), "first", KEPT_LABEL_1),
        ((1.0, 0), (1.0, 1), "first", KEPT_LABEL_0),
        ((1.0, 1), (1.0, 0), "last", KEPT_LABEL_0),
        ((1.0, 0), (1.0, 1), "last", KEPT_LABEL_1),
        # different scores: max_score keeps the higher one, first/last go by input order
        ((1.0, 0), (1.2, 1), "max_score", KEPT_LABEL_1),
        ((1.2, 1), (1.0, 0), "max_score", KEPT_LABEL_1),
        ((1.0, 0), (1.2, 1), "first", KEPT_LABEL_0),
        ((1.2, 1), (1.0, 0), "last", KEPT_LABEL_0),
        # a null score (judged, not retrieved) loses to any score under max_score
        ((None, 1), (1.0, 0), "max_score", KEPT_LABEL_0),
        ((1.0, 0), (None, 1), "max_score", KEPT_LABEL_0),
        ((None, 1), (1.0, 0), "first", KEPT_UNRETRIEVED_1),
        ((1.0, 1), (None, 0), "last", KEPT_UNRETRIEVED_0),
    ],
)
def test_duplicates_keep_the_documented_row(first_copy, second_copy, policy, expected):
    data = pl.DataFrame(
        {
            "query": ["q"] * 4,
            "item": ["a", "b", "c", "a"],
            "score": [first_copy[0], 1.5, 0.5, second_copy[0]],
            "relevance": [first_copy[1], 0, 1, second_copy[1]],
        }
    )
    metrics = ["map", "mrr", "num_rel"]
    out = rke.evaluate(data, metrics, duplicates=policy)
    assert out.row(0) == pytest.approx(expected, abs=1e-12)
    lazy = rke.evaluate(data.lazy(), metrics, duplicates=policy, n_buckets=2).collect()
    assert lazy.row(0) == pytest.approx(expected, abs=1e-12)
    # the same pairs in another by= group are not duplicates of these
    both = pl.concat([data.with_columns(run=pl.lit(run)) for run in ("x", "y")])
    by_run = rke.evaluate(both, metrics, duplicates=policy, by="run")
    assert by_run["run"].to_list() == ["x", "y"]
    for row in by_run.drop("run").rows():
        assert row == pytest.approx(expected, abs=1e-12)


def test_unknown_duplicates_policy_suggests(log):
    with pytest.raises(rke.InvalidOptionError, match=r"duplicates=.*did you mean 'max_score'"):
        rke.evaluate(log, ["map"], duplicates="max-score")


# ---- labels ------------------------------------------------------------------------------------


def test_negative_labels_are_pooled_but_unjudged():
    # metric-conventions E5: qrels a=2 b=1 c=-1 d=0; run c > b > a > d
    data = pl.DataFrame(
        {
            "query": ["q"] * 4,
            "item": ["a", "b", "c", "d"],
            "score": [2.0, 3.0, 4.0, 1.0],
            "relevance": [2, 1, -1, 0],
        }
    )
    out = rke.evaluate(data, ["map", "bpref", "num_rel", "judged@2"])
    # c is not relevant, not in R (= 2), skipped by bpref, unjudged for judged@2
    assert out.row(0) == pytest.approx((7 / 12, 1.0, 2, 0.5))


def test_all_null_relevance_evaluates_nothing_and_says_why(log):
    unjudged = log.with_columns(pl.lit(None, dtype=pl.Int64).alias("relevance"))
    with pytest.warns(rke.EmptyEvaluationWarning, match="entirely null"):
        out = rke.evaluate(unjudged, ["map", "num_q"])
    assert out.row(0) == (None, 0)
    with pytest.warns(rke.EmptyEvaluationWarning, match="entirely null"):
        per_query = rke.evaluate(unjudged.lazy(), ["map"], per_query=True).collect()
    assert per_query.height == 0


# ---- ids ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("column", ["query", "item"])
def test_null_ids_are_errors(log, column):
    bad = log.with_columns(
        pl.when(pl.col("item") == "a").then(None).otherwise(pl.col(column)).alias(column)
    )
    with pytest.raises(rke.ColumnValueError, match=rf"null '{column}'"):
        rke.evaluate(bad, ["map"])


@pytest.mark.parametrize(
    "dtype",
    [
        pl.Int64,
        pl.Int32,
        pl.UInt16,
        pl.String,
        pl.Categorical,
        pl.Enum([str(i) for i in range(12)]),
    ],
)
def test_id_dtypes_give_the_same_results_as_strings(dtype):
    # integer-like ids, so string order ("10" < "9") matters on ties
    data = pl.DataFrame(
        {
            "query": ["1", "1", "1", "2", "2"] * 2,
            "item": ["9", "10", "11", "3", "4", "0", "1", "2", "5", "6"],
            "score": [1.0, 1.0, 0.5, 2.0, 2.0, 0.1, 0.1, 0.1, 3.0, 3.0],
            "relevance": [0, 1, 1, 1, 0, None, 2, 0, 1, 1],
        }
    )
    expected = rke.evaluate(data, ["map", "ndcg@3", "mrr", "bpref"], per_query=True)
    typed = data.with_columns(pl.col("query").cast(dtype), pl.col("item").cast(dtype))
    out = rke.evaluate(typed, ["map", "ndcg@3", "mrr", "bpref"], per_query=True)
    assert out.drop("query").rows() == expected.drop("query").rows()
    assert out["query"].cast(pl.String).to_list() == expected["query"].to_list()


# ---- cutoffs and options -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("k", "pattern"), [(0, "positive"), (-3, "positive"), (2.5, "positive int")]
)
def test_bad_cutoffs(log, k, pattern):
    with pytest.raises(rke.InvalidOptionError, match=pattern):
        log.rank_eval.precision(k=k)


def test_cutoff_larger_than_any_list(log):
    out = rke.evaluate(log, ["p@1000", "recall@1000", "ndcg@1000", "ndcg"], per_query=True)
    # p@1000 = hits / 1000; recall and ndcg as if uncut
    assert out["p@1000"].to_list() == [1 / 1000, 1 / 1000]
    assert out["recall@1000"].to_list() == [1.0, 1.0]
    assert out["ndcg@1000"].to_list() == out["ndcg"].to_list()


def test_unknown_metric_and_option_values_suggest(log):
    with pytest.raises(rke.UnknownMetricError, match="did you mean 'ndcg'"):
        rke.evaluate(log, ["ndgc"])
    with pytest.raises(rke.InvalidOptionError, match="did you mean 'expected'"):
        rke.evaluate(log, ["map"], ties="expectd")
    with pytest.raises(rke.InvalidOptionError, match="did you mean 'sklearn'"):
        rke.evaluate(log, ["ndcg"], convention="sklean")
    with pytest.raises(rke.InvalidOptionError, match="its options: gain"):
        rke.evaluate(log, ["ndcg@5(gian=exp)"])


def test_conflicting_options_explain_the_conflict(log):
    with pytest.raises(
        rke.InvalidOptionError, match=r"ties='expected' has no closed form for 'bpref'"
    ):
        rke.evaluate(log, ["bpref"], ties="expected")


# ---- empty inputs ------------------------------------------------------------------------------


def test_empty_table_gives_empty_per_query_and_null_mean(log):
    empty = log.clear()
    with pytest.warns(rke.EmptyEvaluationWarning, match="no rows"):
        per_query = rke.evaluate(empty, ["map"], per_query=True)
    assert per_query.height == 0
    with pytest.warns(rke.EmptyEvaluationWarning):
        means = rke.evaluate(empty, ["map", "num_q"])
    assert means.row(0) == (None, 0)


def test_all_queries_filtered_out_warns(log):
    nothing_retrieved = log.with_columns(pl.lit(None, dtype=pl.Float64).alias("score"))
    with pytest.warns(rke.EmptyEvaluationWarning, match="no row was retrieved"):
        out = rke.evaluate(nothing_retrieved, ["map"])
    assert out["map"][0] is None


@pytest.mark.parametrize(
    ("change", "error", "pattern"),
    [
        (pl.lit("a").alias("item"), rke.DuplicateItemError, "duplicate"),
        (pl.lit(None, dtype=pl.String).alias("item"), rke.ColumnValueError, "null .item."),
        (pl.lit(float("nan")).alias("score"), rke.ColumnValueError, "NaN value"),
        (pl.col("relevance").cast(pl.Float64) + 0.5, rke.ColumnValueError, "fraction"),
    ],
)
def test_expression_namespace_refuses_bad_values(log, change, error, pattern):
    bad = log.with_columns(change)
    with pytest.raises(error, match=pattern):
        bad.group_by("query").agg(pl.col("relevance").rank_eval.map())
