"""Popularity and novelty metrics against published values and brute force."""

from __future__ import annotations

import math

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from tests.support.recsys_brute import generated, means_by_system, top_k, train_stats

# Microsoft Recommenders' diversity fixture (recommenders-team/recommenders
# tests/unit/recommenders/evaluation/conftest.py::diversity_data): train and top-2 lists.
RECOMMENDERS_TRAIN = pl.DataFrame(
    {"query": [1, 1, 1, 2, 2, 3, 3, 3], "item": [1, 2, 4, 3, 4, 3, 4, 5]}
)
RECOMMENDERS_RECO = pl.DataFrame(
    {
        "query": [1, 1, 2, 2, 3, 3],
        "item": [3, 5, 2, 5, 1, 2],
        "score": [2.0, 1.0, 2.0, 1.0, 2.0, 1.0],  # rows are in rank order
        "relevance": [1, 0, 1, 1, 1, 0],
    }
)


def test_recommenders_historical_novelty_and_novelty() -> None:
    # test_python_evaluation.py: historical_item_novelty {1: 3.0, 2: 3.0, 3: 2.0,
    # 4: 1.41504, 5: 3.0} and novelty 2.83333
    single = pl.DataFrame({"query": [1, 2, 3, 4, 5], "item": [1, 2, 3, 4, 5], "score": 1.0})
    per_item = rke.evaluate(single, ["novelty@1"], train=RECOMMENDERS_TRAIN, per_query=True)
    assert per_item["novelty@1"].to_list() == pytest.approx([3.0, 3.0, 2.0, 1.41504, 3.0], abs=1e-5)
    out = rke.evaluate(RECOMMENDERS_RECO, ["novelty@2"], train=RECOMMENDERS_TRAIN)
    assert out.item() == pytest.approx(2.83333, abs=1e-5)


@pytest.fixture(scope="module")
def data() -> tuple[pl.DataFrame, pl.DataFrame]:
    return generated(seed=4)


def _check(
    data: tuple[pl.DataFrame, pl.DataFrame], metric: str, per_list: dict, **options: object
) -> None:
    log, train = data
    out = rke.evaluate(log, [metric], by="system", train=train, **options)
    expected = means_by_system(per_list)
    got = dict(zip(out["system"], out[metric], strict=True))
    assert got.keys() == expected.keys()
    for system, value in expected.items():
        assert got[system] == pytest.approx(value, rel=1e-12), (metric, system)
    # the same through a LazyFrame in several passes
    lazy = rke.evaluate(log.lazy(), [metric], by="system", train=train.lazy(), n_buckets=3)
    assert_frame_equal(lazy.collect(), out, rel_tol=1e-12)


@pytest.mark.parametrize("k", [1, 5])
@pytest.mark.parametrize("popularity", ["interactions", "users"])
@pytest.mark.parametrize("absent", ["drop", "zero"])
def test_novelty_brute_force(data: tuple, k: int, popularity: str, absent: str) -> None:
    log, train = data
    users, counts, n_users, n_rows = train_stats(train)

    def information(item: int) -> float | None:
        share = len(users[item]) / n_users if popularity == "users" else counts[item] / n_rows
        if share > 0:
            return -math.log2(share)
        return 0.0 if absent == "zero" else None  # Recommenders adds 0 for an unknown item

    per_list = {}
    for key, items in top_k(log, k).items():
        values = [v for v in map(information, items) if v is not None]
        per_list[key] = sum(values) / len(values) if values else None
    _check(data, f"novelty@{k}(popularity={popularity},absent={absent})", per_list)


def test_surprisal_unseen_arp_brute_force(data: tuple) -> None:
    log, train = data
    users, counts, n_users, _ = train_stats(train)
    seen = {(u, i) for u, i in train.iter_rows()}
    tops = top_k(log, 4)

    def weight(item: int) -> float:
        u = len(users[item])
        return math.log2(n_users / u) / math.log2(n_users) if u else 1.0

    _check(data, "surprisal@4", {key: sum(map(weight, items)) / 4 for key, items in tops.items()})
    _check(
        data,
        "unseen@4",
        {key: sum((key[1], i) not in seen for i in items) / 4 for key, items in tops.items()},
    )
    most = max(len(u) for u in users.values())
    most_rows = max(counts.values())
    for option, popularity in [
        ("", lambda i: len(users[i])),
        ("(popularity=interactions)", lambda i: counts[i]),
        ("(normalize=True)", lambda i: len(users[i]) / most),
        ("(popularity=interactions,normalize=True)", lambda i: counts[i] / most_rows),
    ]:
        per_list = {
            key: (sum(map(popularity, items)) / len(items) if items else None)
            for key, items in tops.items()
        }
        _check(data, f"arp@4{option}", per_list)
    dropped = {}
    for key, items in tops.items():
        known = [len(users[i]) for i in items if users[i]]
        dropped[key] = sum(known) / len(known) if known else None
    _check(data, "arp@4(absent=drop)", dropped)


@pytest.mark.parametrize("tail", [0.1, 0.5, 2, 3.0])
def test_long_tail_brute_force(data: tuple, tail: float) -> None:
    log, train = data
    _, counts, _, _ = train_stats(train)
    ordered = sorted(counts.values())
    # a count, or the lower tail-quantile of the train items' counts
    threshold = tail if tail >= 1 else ordered[math.floor(tail * (len(ordered) - 1))]
    tops = top_k(log, 5)
    in_tail = {key: [counts.get(i, 0) <= threshold for i in items] for key, items in tops.items()}
    _check(
        data,
        f"aplt@5(tail={tail})",
        {key: (sum(f) / len(f) if f else None) for key, f in in_tail.items()},
    )
    _check(data, f"aclt@5(tail={tail})", {key: float(sum(f)) for key, f in in_tail.items()})


def test_label_free_log_and_missing_train() -> None:
    log, train = generated(seed=1)
    with_labels = rke.evaluate(log, ["novelty@3", "unseen@3"], by="system", train=train)
    without = rke.evaluate(
        log.drop("relevance"), ["novelty@3", "unseen@3"], by="system", train=train
    )
    assert_frame_equal(with_labels, without)
    with pytest.raises(rke.InvalidOptionError, match=r"'novelty@3' needs the train table"):
        rke.evaluate(log, ["novelty@3"], by="system")


def test_options_are_checked() -> None:
    log, train = generated(seed=1)
    for bad, pattern in [
        ("novelty@3(popularity=clicks)", "popularity"),
        ("arp@3(normalize=yes)", "normalize"),
        ("aplt@3(tail=0)", "tail"),
        ("arp@3(absent=keep)", "absent"),
    ]:
        with pytest.raises(rke.InvalidOptionError, match=pattern):
            rke.evaluate(log, [bad], by="system", train=train)
    with pytest.raises(rke.InvalidOptionError, match="cutoff"):
        rke.evaluate(log, ["novelty"], by="system", train=train)


def test_namespace_methods() -> None:
    log, train = generated(seed=2)
    via_method = log.rank_eval.novelty(3, popularity="users", by="system", train=train)
    via_string = rke.evaluate(log, ["novelty@3(popularity=users)"], by="system", train=train)
    assert_frame_equal(via_method, via_string)
