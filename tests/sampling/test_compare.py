"""sampled_vs_full against brute force: full and sampled ranks in plain Python, the corrected
credit from exact fractions (``_reference.py``), ranks and Kendall's tau by counting pairs."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import polars as pl
import pytest

from polars_rankeval.errors import ColumnValueError, InvalidOptionError
from polars_rankeval.sampling import sample_negatives, sampled_vs_full
from tests.sampling import _reference as ref

SYSTEMS = ("s1", "s2", "s3")
ITEMS = list(range(10, 22))  # 12 items, two-digit ids: no string/number tie-order question


def _world() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    rng = random.Random(4)
    users = range(8)
    train = [(u, i) for u in users for i in rng.sample(ITEMS, rng.randint(0, 3))]
    positives = []
    for u in users:
        left = [i for i in ITEMS if (u, i) not in train]
        positives += [(u, i) for i in rng.sample(left, 2)]
    scores = [
        (s, u, i, rng.random())
        for s in SYSTEMS
        for u in users
        for i in ITEMS
        if (u, i) not in train
    ]
    return (
        pl.DataFrame(scores, schema=["system", "query", "item", "score"], orient="row"),
        pl.DataFrame(positives, schema=["query", "item"], orient="row"),
        pl.DataFrame(
            train,
            schema=["query", "item"],
            schema_overrides={"query": pl.Int64, "item": pl.Int64},
            orient="row",
        ),
    )


def _rank(scores: dict[int, float], target: int) -> int:
    return sorted(scores, key=lambda i: (scores[i], i), reverse=True).index(target) + 1


def _kendall(a: list[float], b: list[float]) -> float:
    pairs = list(itertools.combinations(range(len(a)), 2))
    signs = [math.copysign(1, (a[i] - a[j]) * (b[i] - b[j])) for i, j in pairs]
    return sum(signs) / len(pairs)


def test_values_ranks_tau_and_correction_match_brute_force() -> None:
    scores, positives, train = _world()
    negatives = sample_negatives(
        positives, catalog=ITEMS, n_negatives=3, per="positive", train=train, seed=1
    )
    out = sampled_vs_full(
        scores,
        positives,
        ["recip_rank"],
        negatives=negatives,
        train=train,
        estimator="bv",
        gamma=0.5,
    )
    table = {(s, u, i): v for s, u, i, v in scores.rows()}
    seen = set(train.rows())
    mine: dict[int, set[int]] = {}
    for u, i in positives.rows():
        mine.setdefault(u, set()).add(i)
    drawn = {
        (u, p): items for u, p, items in negatives.group_by("query", "positive").agg("item").rows()
    }
    expected: dict[str, tuple[float, float, float]] = {}
    for system in SYSTEMS:
        full, sampled, corrected = [], [], []
        for (user, positive), negs in drawn.items():
            candidates = [
                i for i in ITEMS if (user, i) not in seen and (i == positive or i not in mine[user])
            ]
            r = _rank({i: table[(system, user, i)] for i in candidates}, positive)
            rs = _rank({i: table[(system, user, i)] for i in [positive, *negs]}, positive)
            full.append(1 / r)
            sampled.append(1 / rs)
            n = len(candidates)
            credit = ref.bias_variance(
                [Fraction(1, k) for k in range(1, n + 1)], len(negs), Fraction(1, 2)
            )
            corrected.append(float(credit[rs - 1]))
        expected[system] = (
            sum(full) / len(full),
            sum(sampled) / len(sampled),
            sum(corrected) / len(corrected),
        )
    values = out.values
    assert values.columns == [
        "metric",
        "system",
        "full",
        "sampled",
        "corrected",
        "rank_full",
        "rank_sampled",
        "rank_corrected",
    ]
    for (
        _,
        system,
        full,
        sampled,
        corrected,
        rank_full,
        rank_sampled,
        rank_corrected,
    ) in values.rows():
        assert (full, sampled, corrected) == pytest.approx(expected[system], rel=1e-9)
        for column, rank in ((0, rank_full), (1, rank_sampled), (2, rank_corrected)):
            better = sum(expected[s][column] > expected[system][column] for s in SYSTEMS)
            assert rank == better + 1
    taus = {(row[1]): row[3] for row in out.agreement.rows()}
    firsts = [expected[s][0] for s in SYSTEMS]
    assert taus["sampled"] == pytest.approx(_kendall(firsts, [expected[s][1] for s in SYSTEMS]))
    assert taus["corrected"] == pytest.approx(_kendall(firsts, [expected[s][2] for s in SYSTEMS]))


def test_per_query_lists_hold_all_positives_in_both_evaluations() -> None:
    scores, positives, train = _world()
    negatives = sample_negatives(positives, catalog=ITEMS, n_negatives=4, train=train, seed=2)
    out = sampled_vs_full(scores, positives, "recall@3", negatives=negatives, train=train)
    table = {(s, u, i): v for s, u, i, v in scores.rows()}
    seen = set(train.rows())
    mine: dict[int, set[int]] = {}
    for u, i in positives.rows():
        mine.setdefault(u, set()).add(i)
    drawn = dict(negatives.group_by("query").agg("item").rows())
    for _, system, full, sampled, *_ in out.values.rows():
        f, s = [], []
        for user, pos in mine.items():
            everything = {i: table[(system, user, i)] for i in ITEMS if (user, i) not in seen}
            few = {i: table[(system, user, i)] for i in [*pos, *drawn[user]]}
            f.append(sum(_rank(everything, p) <= 3 for p in pos) / len(pos))
            s.append(sum(_rank(few, p) <= 3 for p in pos) / len(pos))
        assert full == pytest.approx(sum(f) / len(f))
        assert sampled == pytest.approx(sum(s) / len(s))


def test_recsys_leaderboards_flip() -> None:
    # data/recsys: smooth never ranks a held-out item in a full top 10 but leads the sampled one
    test = pl.read_parquet("data/recsys/test.parquet")
    train = pl.read_parquet("data/recsys/train.parquet")
    scores = pl.read_parquet("data/recsys/scores.parquet")
    negatives = sample_negatives(
        test, catalog=1000, train=train, protocol="one_plus_100", query="user"
    )
    out = sampled_vs_full(scores, test, "hits@10", negatives=negatives, train=train, query="user")
    smooth = out.values.filter(pl.col("system") == "smooth").row(0, named=True)
    assert smooth["full"] == 0.0
    assert smooth["rank_full"] == 4
    assert smooth["rank_sampled"] == 1


def test_refusals() -> None:
    scores, positives, train = _world()
    negatives = sample_negatives(positives, catalog=ITEMS, n_negatives=3, train=train)
    with pytest.raises(InvalidOptionError, match="exactly one positive per list"):
        sampled_vs_full(
            scores, positives, "hits@3", negatives=negatives, train=train, estimator="bv"
        )
    with pytest.raises(InvalidOptionError, match="needs estimator='bv'"):
        sampled_vs_full(scores, positives, "hits@3", negatives=negatives, gamma=0.1)
    with pytest.raises(InvalidOptionError, match="estimator="):
        sampled_vs_full(scores, positives, "hits@3", negatives=negatives, estimator="x")  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match="metrics="):
        sampled_vs_full(scores, positives, [], negatives=negatives)
    leaked = pl.concat([train, positives.head(1)])
    with pytest.raises(ColumnValueError, match=r"1 positive\(s\) are train interactions"):
        sampled_vs_full(scores, positives, "hits@3", negatives=negatives, train=leaked)
    bad = pl.concat([negatives, train.head(1)])
    with pytest.raises(ColumnValueError, match="train interactions"):
        sampled_vs_full(scores, positives, "hits@3", negatives=bad, train=train)
