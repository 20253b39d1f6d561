"""sampled_log + evaluate against a brute-force ranking of each list in plain Python.

The tie rule tested is evaluate's default (trec_eval's): tied scores are ordered by the item id
as a string, descending (so item 9 comes before item 11 at equal score).
"""

from __future__ import annotations

import math
import random

import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval.errors import ColumnValueError, DuplicateItemError
from polars_rankeval.sampling import sample_negatives, sampled_log


def _rank(scores: dict[int, float], target: int) -> int:
    """1-based rank of ``target``: score descending, ties by str(item) descending."""
    order = sorted(scores, key=lambda i: (scores[i], str(i)), reverse=True)
    return order.index(target) + 1


def _world(seed: int) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    rng = random.Random(seed)
    users, items = range(12), range(5, 130)  # ids of 1, 2 and 3 digits: the string rule bites
    positives = pl.DataFrame(
        [(u, i) for u in users for i in rng.sample(items, 3)],
        schema=["query", "item"],
        orient="row",
    )
    scores = pl.DataFrame(
        [
            (s, u, i, float(rng.randint(0, 6)))  # few distinct scores: many ties
            for s in ("a", "b")
            for u in users
            for i in items
        ],
        schema=["system", "query", "item", "score"],
        orient="row",
    )
    train = pl.DataFrame(
        [(u, i) for u in users for i in rng.sample(items, 10)],
        schema=["query", "item"],
        orient="row",
    )
    return scores, positives, train


@pytest.mark.parametrize("seed", [0, 1])
def test_per_positive_hr_and_ndcg_match_brute_force(seed: int) -> None:
    scores, positives, train = _world(seed)
    train = train.join(positives, on=["query", "item"], how="anti")
    negatives = sample_negatives(
        positives, catalog=range(5, 130), n_negatives=30, per="positive", train=train, seed=seed
    )
    log = sampled_log(scores, positives, negatives, by="system")
    got = rke.evaluate(log, ["hits@10", "ndcg@10"], by="system", tie_warning=None).sort("system")
    table = {(s, u, i): v for s, u, i, v in scores.rows()}
    lists = negatives.group_by("query", "positive").agg("item").rows()
    for system, hits, ndcg in got.rows():
        hr_sum, ndcg_sum = 0.0, 0.0
        for user, positive, drawn in lists:
            ranked = {i: table[(system, user, i)] for i in [positive, *drawn]}
            r = _rank(ranked, positive)
            hr_sum += r <= 10
            ndcg_sum += 1 / math.log2(r + 1) if r <= 10 else 0.0
        assert hits == pytest.approx(hr_sum / len(lists), abs=1e-12)
        assert ndcg == pytest.approx(ndcg_sum / len(lists), abs=1e-12)


def test_per_query_ndcg_with_several_positives_matches_brute_force() -> None:
    scores, positives, train = _world(3)
    train = train.join(positives, on=["query", "item"], how="anti")
    negatives = sample_negatives(
        positives, catalog=range(5, 130), n_negatives=20, train=train, seed=4
    )
    log = sampled_log(scores, positives, negatives, by="system")
    got = rke.evaluate(log, ["ndcg@10"], by="system", tie_warning=None).sort("system")
    table = {(s, u, i): v for s, u, i, v in scores.rows()}
    relevant = positives.group_by("query").agg("item")
    mine = dict(relevant.rows())
    drawn = dict(negatives.group_by("query").agg("item").rows())
    for system, ndcg in got.rows():
        total = 0.0
        for user, pos in mine.items():
            ranked = {i: table[(system, user, i)] for i in [*pos, *drawn[user]]}
            dcg = sum(1 / math.log2(_rank(ranked, p) + 1) for p in pos if _rank(ranked, p) <= 10)
            ideal = sum(1 / math.log2(k + 2) for k in range(min(len(pos), 10)))
            total += dcg / ideal
        assert ndcg == pytest.approx(total / len(mine), abs=1e-12)


def test_the_log_holds_every_list_for_every_system() -> None:
    scores, positives, train = _world(5)
    train = train.join(positives, on=["query", "item"], how="anti")
    negatives = sample_negatives(positives, catalog=range(5, 130), n_negatives=8, train=train)
    log = sampled_log(scores, positives, negatives, by="system")
    assert log.columns == ["system", "query", "item", "score", "relevance"]
    assert log.height == 2 * (positives.height + negatives.height)
    assert log.filter(pl.col("relevance") == 1).height == 2 * positives.height
    per = sample_negatives(
        positives, catalog=range(5, 130), n_negatives=8, per="positive", train=train
    )
    log = sampled_log(scores, positives, per, by="system")
    assert log["query"].dtype == pl.String
    assert log.group_by("system", "query").agg(pl.col("relevance").sum())[
        "relevance"
    ].unique().to_list() == [1]


def test_keys_of_other_integer_widths_are_matched() -> None:
    scores = pl.DataFrame(
        {"query": [1, 1, 1], "item": [5, 6, 7], "score": [0.9, 0.5, 0.7]},
        schema={"query": pl.Int16, "item": pl.Int16, "score": pl.Float32},
    )
    positives = pl.DataFrame({"query": [1], "item": [6]})
    negatives = pl.DataFrame({"query": [1, 1], "item": [5, 7]})
    log = sampled_log(scores, positives, negatives)
    assert log.height == 3


def test_bad_input() -> None:
    scores = pl.DataFrame({"query": [1, 1, 1], "item": [5, 6, 7], "score": [0.9, 0.5, 0.7]})
    positives = pl.DataFrame({"query": [1], "item": [6]})
    with pytest.raises(ColumnValueError, match=r"no score, e\.g\. \(query, item\) \[\(1, 8\)\]"):
        sampled_log(scores, positives, pl.DataFrame({"query": [1], "item": [8]}))
    with pytest.raises(DuplicateItemError, match="negatives= table repeats"):
        sampled_log(scores, positives, pl.DataFrame({"query": [1, 1], "item": [5, 5]}))
    with pytest.raises(DuplicateItemError, match="data= table repeats"):
        sampled_log(
            pl.concat([scores, scores]), positives, pl.DataFrame({"query": [1], "item": [5]})
        )
    with pytest.raises(DuplicateItemError, match="positives= table repeats"):
        sampled_log(
            scores, pl.concat([positives, positives]), pl.DataFrame({"query": [1], "item": [5]})
        )
    with pytest.raises(ColumnValueError, match="are positives"):
        sampled_log(scores, positives, pl.DataFrame({"query": [1], "item": [6]}))
    two = pl.DataFrame({"query": [1, 2], "item": [6, 6]})
    with pytest.raises(
        ColumnValueError, match=r"no negative in negatives=, e\.g\. \(query\) \[\(2,\)\]"
    ):
        sampled_log(scores, two, pl.DataFrame({"query": [1], "item": [5]}))
    per = pl.DataFrame({"query": [1], "positive": [7], "item": [5]})
    with pytest.raises(ColumnValueError, match=r"\(query, positive\) \[\(1, 6\)\]"):
        sampled_log(scores, positives, per)
