"""sample_negatives: the documented keys, reproducibility, exclusions, proportions, bad input.

References: a plain-Python transcription of the key recipe (``_reference.py``), hard-coded
samples it produced (so a numpy, Polars or platform change that moves a key fails here), and
Vigna's published splitmix64 test value.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np
import pandas as pd  # type: ignore[import-untyped]
import polars as pl
import pytest

from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnValueError,
    InvalidOptionError,
)
from polars_rankeval.sampling import PROTOCOLS, sample_negatives
from polars_rankeval.sampling._negatives import Per, Strategy, id_hash, splitmix64
from tests.sampling import _reference as ref

POSITIVES = pl.DataFrame({"query": [1, 1, 2, 3], "item": [0, 1, 2, 3]})
TRAIN = pl.DataFrame({"query": [1, 2, 2], "item": [4, 5, 6]})
EXCLUDED = {1: {0, 1, 4}, 2: {2, 5, 6}, 3: {3}}


def _lists(frame: pl.DataFrame, keys: list[str]) -> dict[tuple[object, ...], list[int]]:
    grouped = frame.group_by(keys).agg(pl.col("item").sort())
    return {tuple(row[:-1]): row[-1] for row in grouped.rows()}


def test_splitmix64_matches_vignas_published_value() -> None:
    # splitmix64 seeded with 0 outputs 0xE220A8397B1DCDAF first (Vigna's splitmix64.c)
    assert int(splitmix64(np.array([0], dtype=np.uint64))[0]) == 0xE220A8397B1DCDAF
    assert ref.splitmix64(0) == 0xE220A8397B1DCDAF


def test_hashes_match_the_transcription() -> None:
    values = [0, 12, "12", "user a", -5, 2**40]
    got = [int(v) for v in id_hash(values)]
    assert got == [ref.id_hash(v) for v in values]
    assert got[1] == got[2]  # an id's string form is hashed: 12 and "12" alike
    rng = np.random.default_rng(0)
    raw = rng.integers(0, 2**63, size=50, dtype=np.uint64)
    assert [int(v) for v in splitmix64(raw)] == [ref.splitmix64(int(v)) for v in raw]


def test_hard_coded_sample_reproduces_across_machines() -> None:
    # computed once by the plain-Python transcription; any change in the keys fails here
    for seed, expected in (
        (0, {(1,): [2, 6, 8], (2,): [1, 8, 9], (3,): [4, 6, 9]}),
        (7, {(1,): [2, 5, 7], (2,): [1, 3, 7], (3,): [0, 1, 9]}),
    ):
        out = sample_negatives(POSITIVES, catalog=10, n_negatives=3, train=TRAIN, seed=seed)
        assert _lists(out, ["query"]) == expected


@pytest.mark.parametrize("seed", [0, 1, 2**63 + 5])
def test_uniform_and_per_positive_match_the_transcription(seed: int) -> None:
    rng = random.Random(seed % 1000)
    rows = {(q, i) for q in range(6) for i in rng.sample(range(40), 4)}
    positives = pl.DataFrame(sorted(rows), schema=["query", "item"], orient="row")
    out = sample_negatives(positives, catalog=40, n_negatives=7, seed=seed)
    per = sample_negatives(positives, catalog=40, n_negatives=5, per="positive", seed=seed)
    for q in range(6):
        mine = {i for qq, i in rows if qq == q}
        candidates = [i for i in range(40) if i not in mine]
        assert _lists(out, ["query"])[(q,)] == sorted(ref.uniform_sample(seed, q, candidates, 7))
        for p in mine:
            expected = sorted(ref.uniform_sample(seed, q, candidates, 5, positive=p))
            assert _lists(per, ["query", "positive"])[(q, p)] == expected


def test_popularity_matches_the_transcription() -> None:
    train = pl.DataFrame({"query": [9] * 6 + [8] * 3, "item": [0, 1, 2, 3, 4, 5, 0, 1, 0]})
    positives = pl.DataFrame({"query": [1, 2], "item": [1, 7]})
    counts = {0: 3, 1: 3, 2: 1, 3: 1, 4: 1, 5: 1, 7: 1}  # train and positives together
    out = sample_negatives(
        positives, catalog=10, n_negatives=3, strategy="popularity", train=train, seed=3
    )
    for q, own in ((1, 1), (2, 7)):
        candidates = [i for i in range(10) if i != own]
        expected = sorted(ref.popularity_sample(3, q, candidates, counts, 3))
        assert _lists(out, ["query"])[(q,)] == expected
    # items 6, 8, 9 have no interaction: never drawn
    assert not set(out["item"]) & {6, 8, 9}


def test_same_seed_same_rows_whatever_the_order_or_type() -> None:
    rng = np.random.default_rng(1)
    positives = pl.DataFrame(
        {"query": rng.integers(0, 30, 90), "item": rng.integers(0, 200, 90)}
    ).unique()
    train = pl.DataFrame({"query": rng.integers(0, 30, 300), "item": rng.integers(0, 200, 300)})
    first = sample_negatives(positives, catalog=200, n_negatives=20, train=train, seed=5)
    shuffled = sample_negatives(
        positives.sample(fraction=1.0, shuffle=True, seed=3).to_pandas(),
        catalog=list(reversed(range(200))),
        n_negatives=20,
        train=train.sample(fraction=1.0, shuffle=True, seed=4).lazy(),
        seed=5,
    )
    assert first.equals(shuffled)
    arrow = sample_negatives(
        positives.to_arrow(),
        catalog=pd.DataFrame({"item": range(200)}),
        n_negatives=20,
        train=train,
        seed=5,
    )
    assert first.equals(arrow)
    assert not first.equals(
        sample_negatives(positives, catalog=200, n_negatives=20, train=train, seed=6)
    )


def test_exactly_n_and_never_an_interacted_item() -> None:
    rng = np.random.default_rng(2)
    positives = pl.DataFrame(
        {"query": rng.integers(0, 40, 120), "item": rng.integers(0, 300, 120)}
    ).unique()
    train = pl.DataFrame({"query": rng.integers(0, 40, 900), "item": rng.integers(0, 300, 900)})
    used = pl.concat([positives, train]).unique()
    cases: tuple[tuple[Per, Callable[[int], int]], ...] = (
        ("query", lambda n: 25),
        ("pooled", lambda n: 25 * n),
    )
    for per, size in cases:
        out = sample_negatives(positives, catalog=300, n_negatives=25, per=per, train=train, seed=9)
        assert out.join(used, on=["query", "item"]).height == 0
        assert out.unique().height == out.height  # without replacement
        counts = (
            positives.group_by("query")
            .len()
            .join(out.group_by("query").len(name="got"), on="query")
        )
        assert all(got == size(n) for _, n, got in counts.rows())
    out = sample_negatives(
        positives, catalog=300, n_negatives=25, per="positive", train=train, seed=9
    )
    assert out.join(used, on=["query", "item"]).height == 0
    assert out.group_by("query", "positive").len()["len"].to_list() == [25] * positives.height


@pytest.mark.parametrize("strategy", ["uniform", "popularity"])
def test_single_draw_frequencies_follow_the_weights(strategy: Strategy) -> None:
    # one negative per list: Efraimidis-Spirakis picks item i with probability w_i / sum(w)
    # exactly; 4,000 lists (each query's keys differ: independent draws); each frequency
    # within 4.5 binomial standard deviations
    weights = {0: 8, 1: 4, 2: 2, 3: 1, 4: 1}
    train = pl.DataFrame(
        {"query": list(range(100, 116)), "item": [i for i, w in weights.items() for _ in range(w)]}
    )
    positives = pl.DataFrame({"query": list(range(4000)), "item": [5] * 4000})
    out = sample_negatives(
        positives, catalog=6, n_negatives=1, strategy=strategy, train=train, seed=11
    )
    counts = dict(out.group_by("item").len().rows())
    total = sum(weights.values())
    for i, w in weights.items():
        p = w / total if strategy == "popularity" else 1 / 5
        sd = (4000 * p * (1 - p)) ** 0.5
        assert abs(counts.get(i, 0) - 4000 * p) < 4.5 * sd


def test_protocols() -> None:
    assert PROTOCOLS["ncf"] == (99, "uniform", "positive")
    assert PROTOCOLS["uni100"] == (100, "uniform", "pooled")
    positives = pl.DataFrame({"query": [1, 1], "item": [0, 1]})
    train = pl.DataFrame({"query": [1], "item": [2]})
    ncf = sample_negatives(positives, catalog=300, protocol="ncf")
    assert ncf.group_by("query", "positive").len()["len"].to_list() == [99, 99]
    uni = sample_negatives(positives, catalog=300, protocol="uni100")
    assert uni.height == 200  # 100 per positive, pooled in the user's one list
    others = pl.DataFrame({"query": [2] * 40, "item": list(range(10, 50))})
    pop = sample_negatives(
        positives, catalog=300, protocol="pop7", train=pl.concat([train, others])
    )
    assert pop.height == 14  # RecBole's popN: N per positive, pooled
    assert pop["item"].is_between(10, 49).all()  # only items with an interaction


def test_bad_input() -> None:
    with pytest.raises(InvalidOptionError, match="strategy="):
        sample_negatives(POSITIVES, catalog=10, strategy="zipf")  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match="protocol="):
        sample_negatives(POSITIVES, catalog=10, protocol="uni")
    with pytest.raises(InvalidOptionError, match="contradicts protocol"):
        sample_negatives(POSITIVES, catalog=500, protocol="ncf", n_negatives=50)
    with pytest.raises(InvalidOptionError, match="n_negatives="):
        sample_negatives(POSITIVES, catalog=10, n_negatives=0)
    with pytest.raises(InvalidOptionError, match="per="):
        sample_negatives(POSITIVES, catalog=10, n_negatives=1, per="user")  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match="seed="):
        sample_negatives(POSITIVES, catalog=10, n_negatives=1, seed=-1)
    with pytest.raises(InvalidOptionError, match="catalog="):
        sample_negatives(POSITIVES, catalog=None, n_negatives=1)
    with pytest.raises(InvalidOptionError, match="needs train="):
        sample_negatives(POSITIVES, catalog=10, n_negatives=1, strategy="popularity")
    with pytest.raises(ColumnValueError, match="null"):
        sample_negatives(pl.DataFrame({"query": [1, None], "item": [0, 1]}), catalog=10)
    with pytest.raises(ColumnNotFoundError, match="'user'"):
        sample_negatives(POSITIVES, catalog=10, n_negatives=1, query="user")
    # query 1 has 7 candidates (10 items minus 0, 1 and train's 4)
    with pytest.raises(ColumnValueError, match=r"\(1, 8, 7\)"):
        sample_negatives(POSITIVES, catalog=10, n_negatives=8, train=TRAIN)
