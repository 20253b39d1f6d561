"""The public API: namespaces, expression namespace, options, errors and laziness.

Expected values here are worked by hand in the comments, never computed with the package.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def log() -> pl.DataFrame:
    # q1: ranking b(rel 2), a(rel 0), c(unjudged); d judged rel 1 but not retrieved -> R = 2.
    # q2: ranking x(rel 0), y(rel 1) -> R = 1.
    # q3: only unjudged rows -> dropped.
    return pl.DataFrame(
        {
            "query": ["q1", "q1", "q1", "q1", "q2", "q2", "q3"],
            "item": ["a", "b", "c", "d", "x", "y", "z"],
            "score": [0.5, 0.9, 0.1, None, 3.0, 2.0, 1.0],
            "relevance": [0, 2, None, 1, 0, 1, None],
        }
    )


def test_namespace_method_returns_one_row_named_by_cutoff(log):
    out = log.rank_eval.precision(k=2)
    # q1 p@2 = 1/2, q2 p@2 = 1/2
    assert out.columns == ["p@2"]
    assert out.height == 1
    assert out["p@2"][0] == pytest.approx(0.5)


def test_lazyframe_namespace_stays_lazy(log):
    out = log.lazy().rank_eval.mrr()
    assert isinstance(out, pl.LazyFrame)
    # q1 RR = 1, q2 RR = 1/2
    assert out.collect()["mrr"][0] == pytest.approx(0.75)


def test_ndcg_method_hand_worked(log):
    # q1: dcg@10 = 2/log2(2) = 2; ideal gains 2, 1 -> idcg = 2 + 1/log2(3)
    # q2: dcg = 1/log2(3); idcg = 1
    q1 = 2 / (2 + 1 / math.log2(3))
    q2 = 1 / math.log2(3)
    out = log.rank_eval.ndcg(k=10, per_query=True)
    assert out["query"].to_list() == ["q1", "q2"]
    assert out["ndcg@10"].to_list() == pytest.approx([q1, q2], abs=1e-12)


def test_every_namespace_method_exists_and_matches_evaluate(log):
    cases = {
        "precision": ("p@3", {"k": 3}),
        "recall": ("recall@3", {"k": 3}),
        "success": ("success@3", {"k": 3}),
        "hit_rate": ("hit_rate@3", {"k": 3}),
        "hits": ("hits@3", {"k": 3}),
        "f1": ("f1@3", {"k": 3}),
        "map": ("map", {}),
        "mrr": ("mrr@1", {"k": 1}),
        "r_precision": ("r_precision", {}),
        "ndcg": ("ndcg", {}),
        "dcg": ("dcg@2", {"k": 2}),
        "bpref": ("bpref", {}),
        "judged": ("judged@3", {"k": 3}),
    }
    together = log.rank_eval.evaluate([name for name, _ in cases.values()])
    for method, (name, kwargs) in cases.items():
        alone = getattr(log.rank_eval, method)(**kwargs)
        assert alone.columns == [name]
        assert alone[name][0] == pytest.approx(together[name][0], abs=1e-15), method


def test_evaluate_keeps_names_exactly_and_is_case_insensitive(log):
    out = rke.evaluate(log, ["NDCG@10", "P_5", "Recip_Rank", "map_cut_10"])
    assert out.columns == ["NDCG@10", "P_5", "Recip_Rank", "map_cut_10"]
    same = rke.evaluate(log, ["ndcg@10", "p@5", "mrr", "map@10"])
    assert out.rows() == same.rows()


def test_per_query_and_by(log):
    two = pl.concat(
        [log.with_columns(model=pl.lit("A")), log.with_columns(model=pl.lit("B"))]
    ).with_columns(
        # Model B reverses q2's order: y(rel) first -> RR 1.
        score=pl.when((pl.col("model") == "B") & (pl.col("query") == "q2"))
        .then(-pl.col("score"))
        .otherwise(pl.col("score"))
    )
    per_query = rke.evaluate(two, ["mrr"], per_query=True, by=["model"])
    assert per_query.columns == ["model", "query", "mrr"]
    assert per_query.rows() == [
        ("A", "q1", 1.0),
        ("A", "q2", 0.5),
        ("B", "q1", 1.0),
        ("B", "q2", 1.0),
    ]
    means = rke.evaluate(two, ["mrr", "num_q"], by="model")
    assert means.rows() == [("A", 0.75, 2), ("B", 1.0, 2)]


def test_counts_are_summed(log):
    out = rke.evaluate(log, ["num_ret", "num_rel", "num_rel_ret", "num_q"])
    # retrieved: q1 3, q2 2; relevant: q1 2 (b, d), q2 1; retrieved relevant: q1 1, q2 1
    assert out.row(0) == (5, 3, 2, 2)


def test_relevance_level_changes_binary_metrics_not_ndcg(log):
    level2 = rke.evaluate(log, ["map", "ndcg", "num_rel"], relevance_level=2, per_query=True)
    # At level 2 only b (label 2) is relevant: q1 AP = 1/1 = 1, q2 AP = 0 (R = 0).
    assert level2["map"].to_list() == [1.0, 0.0]
    assert level2["num_rel"].to_list() == [1, 0]
    level1 = rke.evaluate(log, ["ndcg"], per_query=True)
    assert level2["ndcg"].to_list() == level1["ndcg"].to_list()


def test_missing_queries_zero_counts_unretrieved_query():
    data = pl.DataFrame(
        {
            "query": ["q1", "q1", "q2"],
            "item": ["a", "b", "c"],
            "score": [1.0, 0.5, None],
            "relevance": [1, 0, 1],
        }
    )
    skip = rke.evaluate(data, ["map", "num_q", "num_rel"])
    assert skip.row(0) == (1.0, 1, 1)
    zero = rke.evaluate(data, ["map", "num_q", "num_rel"], missing_queries="zero")
    # q2 joins with AP 0 and R = 1: mean AP 0.5 over 2 queries.
    assert zero.row(0) == (0.5, 2, 2)


def test_query_without_relevant_item_scores_zero_and_counts():
    data = pl.DataFrame(
        {"query": [1, 1, 2], "item": [1, 2, 3], "score": [2.0, 1.0, 1.0], "relevance": [1, 0, 0]}
    )
    out = rke.evaluate(data, ["map", "ndcg", "bpref", "num_q"])
    assert out.row(0) == (0.5, 0.5, 0.5, 2)


def test_tie_break_uses_item_string_descending():
    # Equal scores: trec_eval ranks item "9" before "10" (byte order, descending).
    data = pl.DataFrame(
        {"query": [1, 1], "item": [10, 9], "score": [1.0, 1.0], "relevance": [1, 0]}
    )
    assert rke.evaluate(data, ["mrr"])["mrr"][0] == 0.5


def test_expression_namespace_matches_frame_level(log):
    grouped = (
        log.group_by("query")
        .agg(
            pl.col("relevance").rank_eval.ndcg(k=10, score="score", item="item"),
            pl.col("relevance").rank_eval.map(),
            pl.col("relevance").rank_eval.metric("bpref"),
            rke.metric_expr("p@2"),
        )
        .filter(pl.col("ndcg@10").is_not_null())
        .sort("query")
    )
    frame = rke.evaluate(log, ["ndcg@10", "map", "bpref", "p@2"], per_query=True)
    assert_frame_equal(grouped, frame, rel_tol=1e-12, abs_tol=1e-15)
    # q3 has no judged row: null, as trec_eval skips it.
    q3 = log.filter(pl.col("query") == "q3").group_by("query").agg(rke.metric_expr("map"))
    assert q3["map"].to_list() == [None]


def test_custom_column_names(log):
    renamed = log.rename({"query": "qid", "item": "docno", "score": "sim", "relevance": "rel"})
    out = rke.evaluate(
        renamed, ["map"], per_query=True, query="qid", item="docno", score="sim", relevance="rel"
    )
    assert out.columns == ["qid", "map"]
    assert out["map"].to_list() == rke.evaluate(log, ["map"], per_query=True)["map"].to_list()


def test_join_run_qrels_builds_contract_table():
    run = pl.DataFrame({"query": ["q", "q"], "item": ["a", "x"], "score": [2.0, 1.0]})
    qrels = pl.DataFrame({"query": ["q", "q"], "item": ["a", "b"], "relevance": [0, 1]})
    table = rke.join_run_qrels(run, qrels).collect().sort("item")
    assert table.rows() == [("q", "a", 2.0, 0), ("q", "b", None, 1), ("q", "x", 1.0, None)]
    # b is relevant but unretrieved: R = 1, nothing relevant retrieved.
    assert rke.evaluate(table, ["recall@10", "num_rel"]).row(0) == (0.0, 1)


# ---- errors ---------------------------------------------------------------------------------


def test_missing_column_names_it_and_lists_present(log):
    with pytest.raises(rke.ColumnNotFoundError, match=r"'rel'.*relevance=.*columns present"):
        rke.evaluate(log, ["map"], relevance="rel")


def test_non_numeric_score_is_a_type_error(log):
    bad = log.with_columns(pl.col("score").cast(pl.String))
    with pytest.raises(rke.ColumnTypeError, match=r"'score'.*numeric"):
        rke.evaluate(bad, ["map"])
    with pytest.raises(TypeError):
        rke.evaluate(bad, ["map"])


def test_string_relevance_is_a_type_error(log):
    bad = log.with_columns(pl.col("relevance").cast(pl.String))
    with pytest.raises(rke.ColumnTypeError, match=r"'relevance'.*integer"):
        rke.evaluate(bad, ["map"])


def test_duplicate_pair_is_an_error_for_dataframe_and_lazyframe(log):
    dup = pl.concat([log, log.head(1)])
    with pytest.raises(rke.DuplicateItemError, match=r"duplicate \('query', 'item'\)"):
        rke.evaluate(dup, ["map"])
    plan = rke.evaluate(dup.lazy(), ["map"])  # building the plan does not fail ...
    with pytest.raises(rke.DuplicateItemError):  # ... collecting it does
        plan.collect()


def test_same_item_in_two_by_groups_is_not_a_duplicate(log):
    two = pl.concat([log.with_columns(m=pl.lit(1)), log.with_columns(m=pl.lit(2))])
    assert rke.evaluate(two, ["map"], by="m").height == 2


def test_unknown_metric_suggests_close_names(log):
    with pytest.raises(rke.UnknownMetricError, match=r"'ndgc'.*'ndcg'"):
        rke.evaluate(log, ["ndgc@10"])
    with pytest.raises(ValueError, match="did you mean"):
        rke.parse_metric("recal@5")


@pytest.mark.parametrize(
    ("spec", "pattern"),
    [
        ("p@0", "positive"),
        ("p", "needs a cutoff"),
        ("bpref@10", "takes no cutoff"),
        ("ndcg@x", "positive integer"),
    ],
)
def test_bad_cutoffs(log, spec, pattern):
    with pytest.raises(rke.InvalidOptionError, match=pattern):
        rke.evaluate(log, [spec])


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"missing_queries": "drop"}, "missing_queries"),
        ({"relevance_level": 1.5}, "relevance_level"),
        ({"by": ["query"]}, "by="),
        ({"per_query": "yes"}, "per_query"),
    ],
)
def test_bad_options(log, kwargs, pattern):
    with pytest.raises(rke.InvalidOptionError, match=pattern):
        rke.evaluate(log, ["map"], **kwargs)


def test_namespace_k_validation(log):
    with pytest.raises(rke.InvalidOptionError, match="positive"):
        log.rank_eval.ndcg(k=-1)


# ---- the sample log ------------------------------------------------------------------------


def test_sample_generator_reproduces_committed_sample():
    sys.path.insert(0, str(ROOT / "data"))
    try:
        from make_sample import make_sample
    finally:
        sys.path.pop(0)
    assert_frame_equal(make_sample(), pl.read_parquet(ROOT / "data" / "sample.parquet"))


def test_ties_and_convention_keywords_on_methods_do_not_rename():
    # b and c tie at the top; gains b=1, c=0 (negative label), a=2 at rank 3.
    log = pl.DataFrame(
        {
            "query": ["q"] * 4,
            "item": ["a", "b", "c", "d"],
            "score": [2.0, 3.0, 3.0, 1.0],
            "relevance": [2, 1, -1, 0],
        }
    )
    expected = (0.5 + 0.5 / math.log2(3) + 2 / 2) / (2 + 1 / math.log2(3))
    out = log.rank_eval.ndcg(k=3, ties="expected")
    assert out.columns == ["ndcg@3"]
    assert out["ndcg@3"][0] == pytest.approx(expected, abs=1e-12)
    grouped = log.group_by("query").agg(pl.col("relevance").rank_eval.ndcg(k=3, ties="trec"))
    assert grouped.columns == ["query", "ndcg@3"]
    # The expression path runs the frame plan, so expected ties work there too.
    tie_aware = log.group_by("query").agg(pl.col("relevance").rank_eval.ndcg(k=3, ties="expected"))
    assert tie_aware["ndcg@3"][0] == pytest.approx(expected, abs=1e-12)
    # ranx reads the negative label as judged non-relevant: bpref 0.5 instead of 1.0
    ranx_like = log.group_by("query").agg(pl.col("relevance").rank_eval.bpref(convention="ranx"))
    assert ranx_like["bpref"][0] == 0.5
