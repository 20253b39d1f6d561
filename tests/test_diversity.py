"""Diversity, serendipity and unexpectedness against published values and brute force."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from tests.recsys_brute import generated, top_k
from tests.test_popularity import RECOMMENDERS_RECO, RECOMMENDERS_TRAIN

# Recommenders' item features (conftest.py diversity_data)
RECOMMENDERS_ITEMS = pl.DataFrame(
    {
        "item": [1, 2, 3, 4, 5],
        "features": [
            [0, 1, 1, 0, 0],
            [0, 1, 0, 1, 0],
            [0, 0, 1, 1, 0],
            [0, 0, 1, 0, 1],
            [0, 0, 0, 1, 1],
        ],
    }
)


def test_recommenders_published_values() -> None:
    # test_python_evaluation.py: user_diversity co-occurrence {1: 0.29289, 2: 1.0, 3: 0.0},
    # diversity 0.43096; with item features {0.5, 0.5, 0.5}, 0.5; serendipity co-occurrence
    # users [0.363915, 0.53455, 0.403775], 0.43408; features users [0.25, 0.625, 0.3333], 0.4028
    options = {"train": RECOMMENDERS_TRAIN, "items": RECOMMENDERS_ITEMS}
    metrics = [
        "ild@2(similarity=cooccurrence)",
        "ild@2",
        "serendipity@2(similarity=cooccurrence)",
        "serendipity@2",
    ]
    per_user = rke.evaluate(RECOMMENDERS_RECO, metrics, per_query=True, **options)
    expected = [
        [0.29289, 1.0, 0.0],
        [0.5, 0.5, 0.5],
        [0.363915, 0.53455, 0.403775],
        [0.25, 0.625, 0.3333],
    ]
    for metric, values in zip(metrics, expected, strict=True):
        assert per_user[metric].to_list() == pytest.approx(values, abs=1e-4), metric
    means = rke.evaluate(RECOMMENDERS_RECO, metrics, **options)
    assert means.row(0) == pytest.approx((0.43096, 0.5, 0.43408, 0.4028), abs=1e-4)


@pytest.fixture(scope="module")
def data() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    log, train = generated(seed=21)
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(40, 4))
    vectors[5] = 0.0  # a zero vector
    items = pl.DataFrame(
        {
            "item": list(range(38)),  # items 38 and 39 have no row
            "embedding": vectors[:38].tolist(),
            "genre": [f"g{i % 5}" for i in range(38)],
        }
    )
    return log, train, items


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    return 0.0 if na == 0 or nb == 0 else float(a @ b / (na * nb))


def test_ild_and_categories_brute_force(data: tuple) -> None:
    log, _train, items = data
    vectors = {row[0]: np.array(row[1]) for row in items.iter_rows()}
    genre = dict(zip(items["item"], items["genre"], strict=True))
    tops = top_k(log, 5)
    expected: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (system, _), listed in tops.items():
        known = [i for i in listed if i in vectors]
        pairs = [(a, b) for x, a in enumerate(known) for b in known[x + 1 :]]
        sims = [_cos(vectors[a], vectors[b]) for a, b in pairs]
        if len(known) >= 2:
            expected[system]["ild@5(features=embedding)"].append(1 - sum(sims) / len(sims))
        if known:
            expected[system]["ild@5(features=embedding,normalize=length)"].append(
                sum(1 - s for s in sims) / len(known)
            )
        cats = {genre[i] for i in listed if i in genre}
        expected[system]["categorical_diversity@5(category=genre)"].append(len(cats) / 5)
    metrics = list(expected["a"])
    out = rke.evaluate(log, metrics, by="system", items=items)
    for row in out.iter_rows(named=True):
        for metric in metrics:
            values = expected[row["system"]][metric]
            assert row[metric] == pytest.approx(sum(values) / len(values), rel=1e-9), metric
    lazy = rke.evaluate(log.lazy(), metrics, by="system", items=items.lazy(), n_buckets=3)
    assert_frame_equal(lazy.collect(), out, rel_tol=1e-12)


def test_cooccurrence_brute_force(data: tuple) -> None:
    log, train, _ = data
    users: dict[int, set[int]] = defaultdict(set)
    for user, item in train.iter_rows():
        users[item].add(user)

    def sim(a: int, b: int) -> float:
        both = len(users[a] & users[b])
        return both / math.sqrt(len(users[a]) * len(users[b])) if both else 0.0

    values: dict[str, list[float]] = defaultdict(list)
    for (system, _), listed in top_k(log, 4).items():
        if len(listed) >= 2:
            pairs = [(a, b) for x, a in enumerate(listed) for b in listed[x + 1 :]]
            values[system].append(1 - sum(sim(a, b) for a, b in pairs) / len(pairs))
    out = rke.evaluate(log, ["ild@4(similarity=cooccurrence)"], by="system", train=train)
    for system, value in out.iter_rows():
        assert value == pytest.approx(sum(values[system]) / len(values[system]), rel=1e-9)


def test_unexpectedness_brute_force(data: tuple) -> None:
    log, _, _ = data
    tops = top_k(log, 3)
    out = rke.evaluate(log, ["unexpectedness@3(baseline=a)"], by="system", per_query=True)
    for system, query, value in out.iter_rows():
        base = set(tops.get(("a", query), []))
        assert value == pytest.approx(1 - len(set(tops[(system, query)]) & base) / 3)
    with pytest.raises(
        rke.InvalidOptionError, match=r"baseline='nope' .* its values: \['a', 'b'\]"
    ):
        rke.evaluate(log, ["unexpectedness@3(baseline=nope)"], by="system")
    with pytest.raises(rke.InvalidOptionError, match="needs baseline="):
        rke.evaluate(log, ["unexpectedness@3"], by="system")
    with pytest.raises(rke.InvalidOptionError, match="one by= column"):
        rke.evaluate(log.filter(pl.col("system") == "a"), ["unexpectedness@3(baseline=a)"])


def test_errors_name_the_table_and_columns(data: tuple) -> None:
    log, _train, items = data
    with pytest.raises(rke.InvalidOptionError, match="needs the items table"):
        rke.evaluate(log, ["ild@3"], by="system")
    with pytest.raises(rke.ColumnNotFoundError, match="'nope'"):
        rke.evaluate(log, ["ild@3(features=nope)"], by="system", items=items)
    with pytest.raises(rke.ColumnNotFoundError, match="option category="):
        rke.evaluate(log, ["categorical_diversity@3"], by="system", items=items)
    both = items.with_columns(pl.col("embedding").alias("other"))
    with pytest.raises(rke.InvalidOptionError, match="features="):
        rke.evaluate(log, ["ild@3"], by="system", items=both)
    with pytest.raises(rke.InvalidOptionError, match="needs the train table"):
        rke.evaluate(log, ["serendipity@3"], by="system", items=items)


def test_diversity_streams(data: tuple, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tests.test_streaming import assert_streams

    log, _train, items = data
    log.write_parquet(tmp_path / "log.parquet")
    metrics = ["ild@3", "categorical_diversity@3(category=genre)", "unexpectedness@3(baseline=a)"]
    scan = pl.scan_parquet(tmp_path / "log.parquet")
    options = {"by": "system", "items": items.lazy(), "n_buckets": 1}
    # the ranking plan over the log streams; the finishing steps run on its per-query rows
    ranking = rke.evaluate(scan, metrics, per_query=True, _hidden=True, **options)
    assert_streams(ranking)
    lazy = rke.evaluate(scan, metrics, **options).collect()
    assert_frame_equal(lazy, rke.evaluate(log, metrics, by="system", items=items))
