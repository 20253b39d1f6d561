"""Diversity, serendipity and unexpectedness against published values and brute force."""

from __future__ import annotations

import math
import re
from collections import defaultdict

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from polars_rankeval._engine.evaluate import evaluate_frame
from tests.metrics.test_popularity import RECOMMENDERS_RECO, RECOMMENDERS_TRAIN
from tests.support.recsys_brute import generated, top_k

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
    from tests.engine.test_streaming import assert_streams

    log, _train, items = data
    log.write_parquet(tmp_path / "log.parquet")
    metrics = [
        "ild@3",
        "ils@3",
        "categorical_diversity@3(category=genre)",
        "unexpectedness@3(baseline=a)",
        "serendipity@3(normalize=history)",
    ]
    scan = pl.scan_parquet(tmp_path / "log.parquet")
    options = {"by": "system", "items": items.lazy(), "train": _train.lazy(), "n_buckets": 1}
    # the ranking plan over the log streams; the finishing steps run on its per-query rows
    ranking = evaluate_frame(scan, metrics, per_query=True, raw=True, **options)
    assert_streams(ranking)
    lazy = rke.evaluate(scan, metrics, **options).collect()
    eager = rke.evaluate(log, metrics, by="system", items=items, train=_train)
    assert_frame_equal(lazy, eager)


def _evaluated(log: pl.DataFrame) -> set[tuple[str, int]]:
    """Lists a labelled metric evaluates: those with a judged row (trec_eval's rule)."""
    return {(system, query) for system, query, _, _, label in log.iter_rows() if label is not None}


@pytest.mark.parametrize("similarity", ["features", "cooccurrence"])
def test_serendipity_brute_force(data: tuple, similarity: str) -> None:
    log, train, items = data
    # a repeated train row must not weigh twice (distinct train items per user)
    train = pl.concat([train, train.head(5)])
    # train items 1 and 2 have no vector (nor do the listed items 38 and 39)
    items = items.filter(~pl.col("item").is_in([1, 2]))
    vectors = {row[0]: np.array(row[1]) for row in items.iter_rows()}
    users: dict[int, set[int]] = defaultdict(set)
    history: dict[int, set[int]] = defaultdict(set)
    for user, item in train.iter_rows():
        users[item].add(user)
        history[user].add(item)

    def sim(a: int, b: int) -> float:
        if similarity == "features":
            # an item without a row in items= counts as a zero vector
            zero = np.zeros(4)
            return _cos(vectors.get(a, zero), vectors.get(b, zero))
        if a == b:
            return 1.0
        both = len(users[a] & users[b])
        return both / math.sqrt(len(users[a]) * len(users[b])) if both else 0.0

    labels = {(s, q, i): label for s, q, i, _, label in log.iter_rows()}
    tops = top_k(log, 4)
    expected: dict[str, dict[tuple[str, int], float | None]] = {"items": {}, "history": {}}
    for system, query in _evaluated(log):
        listed = tops.get((system, query), [])
        past = history.get(query, set())
        relevant = [i for i in listed if (labels[(system, query, i)] or 0) > 0]
        items_value = history_value = None
        if past and listed:
            terms = [1 - sum(sim(i, j) for j in past) / len(past) for i in relevant]
            items_value = sum(terms) / len(listed)
        if past and relevant:
            total = sum(sim(i, j) for i in relevant for j in past)
            history_value = 1 - total / len(past)
        expected["items"][(system, query)] = items_value
        expected["history"][(system, query)] = history_value
    name = "serendipity@4(features=embedding)"
    if similarity == "cooccurrence":
        name = "serendipity@4(similarity=cooccurrence)"
    options = {"by": "system", "train": train}
    if similarity == "features":  # co-occurrence reads no items= (passing it warns)
        options["items"] = items
    for normalize in ("items", "history"):
        metric = name[:-1] + (",normalize=history)" if normalize == "history" else ")")
        out = rke.evaluate(log, [metric], per_query=True, **options)
        got = {(s, q): v for s, q, v in out.iter_rows()}
        assert set(got) == set(expected[normalize])
        for key, value in expected[normalize].items():
            if value is None:
                assert got[key] is None, (normalize, key)
            else:
                assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-12), (normalize, key)
        means = rke.evaluate(log, [metric], **options)
        for system, mean in means.iter_rows():
            values = [
                v for (s, _), v in expected[normalize].items() if s == system and v is not None
            ]
            assert mean == pytest.approx(sum(values) / len(values), rel=1e-9)
        lazy_options = {name: table.lazy() for name, table in options.items() if name != "by"}
        lazy = rke.evaluate(log.lazy(), [metric], by="system", n_buckets=3, **lazy_options)
        assert_frame_equal(lazy.collect(), means, rel_tol=1e-12)


def test_ils_brute_force(data: tuple) -> None:
    log, _train, items = data
    vectors = {row[0]: np.array(row[1]) for row in items.iter_rows()}
    per_list: dict[tuple[str, int], float | None] = {}
    for key, listed in top_k(log, 3).items():
        known = [i for i in listed if i in vectors]
        pairs = [(a, b) for x, a in enumerate(known) for b in known[x + 1 :]]
        # LensKit: mean pairwise similarity; one item 1.0; none NaN (null here)
        if len(known) >= 2:
            per_list[key] = sum(_cos(vectors[a], vectors[b]) for a, b in pairs) / len(pairs)
        else:
            per_list[key] = 1.0 if known else None
    assert 1.0 in per_list.values()  # the single-item rule is exercised
    out = rke.evaluate(log, ["ils@3"], by="system", items=items, per_query=True)
    for system, query, value in out.iter_rows():
        expected = per_list[(system, query)]
        if expected is None:
            assert value is None
        else:
            assert value == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert rke.metrics.ils(3).higher_is_better is False


# evidentlyai/evidently tests/metrics/recsys/test_serendipity.py (test_curr_rank): k=3,
# item features item_f1/item_f2 from the recommendations and the train data
EVIDENTLY_ITEMS = ["0a", "1a", "5a", "6a", "0a", "1a", "5a", "6a", "0a", "4a", "6a", "10a"]
EVIDENTLY_F1 = [1.0, 1, 1, -0.1, 1, 1, 1, -0.1, 1, 1, -0.1, -1]
EVIDENTLY_F2 = [0.0, 0.1, 1, 0.9, 0, 0.1, 1, 0.9, 0, 0.9, 0.9, -1]


def test_evidently_serendipity_published_value() -> None:
    log = pl.DataFrame(
        {
            "query": ["1b"] * 4 + ["2b"] * 4 + ["3b"] * 4,
            "item": EVIDENTLY_ITEMS,
            "score": [-float(r) for r in [1, 2, 3, 4] * 3],  # ranks 1..4
            "relevance": [0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0],
        }
    )
    train = pl.DataFrame({"query": ["1b", "2b", "3b"], "item": ["10a", "2a", "5a"]})
    # The asserted value needs item 10a's features from the train rows, (-1, 0): its
    # recommendation row says (-1, -1), which gives 1.0097 (Evidently's PairwiseDistance today
    # takes the first of the rows ranked <= k + 1, then the train rows; worked by hand).
    train_features = {"item": ["10a", "2a", "5a"], "item_f1": [-1.0, 1, 1], "f2": [0.0, 0.2, 1]}
    items = pl.concat(
        [
            pl.DataFrame(train_features),
            pl.DataFrame({"item": EVIDENTLY_ITEMS, "item_f1": EVIDENTLY_F1, "f2": EVIDENTLY_F2}),
        ]
    ).unique("item", keep="first")
    out = rke.evaluate(
        log, ["serendipity@3(normalize=history)"], items=items, train=train, per_query=True
    )
    # user 3b has no relevant top-3 item: left out (Evidently keeps users with one)
    assert out.row(2)[1] is None
    mean = rke.evaluate(log, ["serendipity@3(normalize=history)"], items=items, train=train)
    assert mean.item() == pytest.approx(0.8632630527478137, abs=1e-12)
    preset = rke.evaluate(log, ["serendipity@3"], convention="evidently", items=items, train=train)
    assert preset.item() == pytest.approx(0.8632630527478137, abs=1e-12)
    # a list of columns shows as "x+y" in the name, and that name parses back
    typed = rke.metrics.serendipity(3, features=["item_f1", "f2"], normalize="history")
    assert typed.name == "serendipity@3(features=item_f1+f2,normalize=history)"
    again = rke.evaluate(log, [typed.name], items=items.with_columns(x=pl.lit("s")), train=train)
    assert again.item() == pytest.approx(0.8632630527478137, abs=1e-12)


# sb-ai-lab/RePlay replay/metrics/categorical_diversity.py and unexpectedness.py doctests:
# the recommendations (query, item or category, rating) and the baseline's
REPLAY_RECS = pl.DataFrame(
    {
        "system": ["model"] * 13,
        "query": [1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3],
        "item": [3, 7, 10, 11, 2, 5, 8, 11, 1, 3, 4, 9, 2],
        "score": [0.6, 0.5, 0.4, 0.3, 0.2, 0.6, 0.5, 0.4, 0.3, 0.2, 1.0, 0.5, 0.1],
    }
)
REPLAY_BASE = pl.DataFrame(
    {
        "system": ["base"] * 8,
        "query": [1, 1, 1, 2, 2, 2, 3, 3],
        "item": [3, 7, 2, 5, 8, 3, 4, 9],
        "score": [0.5, 0.5, 0.7, 0.6, 0.6, 0.3, 1.0, 0.5],
    }
)


def test_replay_published_values() -> None:
    # CategoricalDiversity([3, 5]): 1.0 and 0.8666666666666667; per user @5 {1: 1, 2: 1, 3: 0.6}.
    # There the rows carry category ids: here each id is an item whose category is itself.
    categories = pl.DataFrame({"item": range(12), "category": range(12)})
    metrics = ["categorical_diversity@3", "categorical_diversity@5"]
    recs = REPLAY_RECS.drop("system")
    out = rke.evaluate(recs, metrics, convention="replay", items=categories)
    assert out.row(0) == pytest.approx((1.0, 0.8666666666666667), rel=1e-12)
    per_user = rke.evaluate(recs, metrics[1:], items=categories, per_query=True)
    assert per_user[metrics[1]].to_list() == pytest.approx([1.0, 1.0, 0.6])
    # Unexpectedness([2, 4]): 0.16666666666666666 and 0.5; per user @2 {0.5, 0, 0},
    # @4 {0.5, 0.5, 0.5}
    log = pl.concat([REPLAY_RECS, REPLAY_BASE])
    metrics = ["unexpectedness@2(baseline=base)", "unexpectedness@4(baseline=base)"]
    out = rke.evaluate(log, metrics, by="system", convention="replay")
    assert out.filter(pl.col("system") == "model").row(0)[1:] == pytest.approx(
        (0.16666666666666666, 0.5), rel=1e-12
    )
    per_user = rke.evaluate(log, metrics, by="system", per_query=True).filter(
        pl.col("system") == "model"
    )
    assert per_user[metrics[0]].to_list() == pytest.approx([0.5, 0.0, 0.0])
    assert per_user[metrics[1]].to_list() == pytest.approx([0.5, 0.5, 0.5])


def test_unexpectedness_absent_baseline() -> None:
    # query 4 has no baseline list: RePlay scores it 0 (absent=zero)
    extra = pl.DataFrame({"system": ["model"], "query": [4], "item": [1], "score": [1.0]})
    log = pl.concat([REPLAY_RECS, REPLAY_BASE, extra])
    values = {}
    for absent in ("one", "zero", "drop"):
        metric = f"unexpectedness@2(baseline=base,absent={absent})"
        out = rke.evaluate(log, [metric], by="system", per_query=True)
        model = out.filter(pl.col("system") == "model")
        values[absent] = model.filter(pl.col("query") == 4).row(0)[2]
        assert model.filter(pl.col("query") < 4)[metric].to_list() == pytest.approx([0.5, 0, 0])
    assert values == {"one": 1.0, "zero": 0.0, "drop": None}
    assert rke.metrics.unexpectedness(2, baseline="base").name == "unexpectedness@2(baseline=base)"
    with pytest.raises(rke.InvalidOptionError, match="absent="):
        rke.metrics.unexpectedness(2, baseline="base", absent="none")  # type: ignore[arg-type]


def test_bad_options_name_the_option(data: tuple) -> None:
    log, train, items = data
    with pytest.raises(rke.InvalidOptionError, match="normalize="):
        rke.evaluate(log, ["serendipity@3(normalize=pairs)"], by="system", train=train)
    with pytest.raises(rke.InvalidOptionError, match="similarity="):
        rke.evaluate(log, ["ils@3(similarity=jaccard)"], by="system", items=items)
    with pytest.raises(rke.InvalidOptionError, match="features= applies only"):
        rke.metrics.ils(3, similarity="cooccurrence", features="embedding")
    with pytest.raises(rke.ColumnTypeError, match="genre"):
        rke.evaluate(log, ["ils@3(features=genre)"], by="system", items=items)


def test_namespace_methods(data: tuple) -> None:
    log, train, items = data
    frame = log.filter(pl.col("system") == "a").drop("system")
    for method, name in [("ils", "ils@3"), ("ild", "ild@3"), ("serendipity", "serendipity@3")]:
        # only serendipity reads train= (a table no metric reads warns)
        tables = {"items": items, "train": train} if method == "serendipity" else {"items": items}
        alone = getattr(frame.rank_eval, method)(3, **tables)
        together = rke.evaluate(frame, [name], **tables)
        assert alone.columns == [name]
        assert alone.item() == pytest.approx(together.item(), rel=1e-12), method


def test_item_tables_with_repeated_items_or_ragged_vectors_are_refused() -> None:
    log = pl.DataFrame({"query": [1, 1], "item": ["a", "b"], "score": [2.0, 1.0]})
    repeated = pl.DataFrame({"item": ["a", "a", "b"], "embedding": [[1.0, 0], [0.0, 1], [1.0, 1]]})
    with pytest.raises(rke.ColumnValueError, match=r"one row per item: .* e\.g\. 'a'"):
        rke.evaluate(log, ["ild@2"], items=repeated)
    ragged = pl.DataFrame({"item": ["a", "b"], "embedding": [[1.0, 0.0], [0.0, 1.0, 3.0]]})
    with pytest.raises(rke.ColumnValueError, match="must all have one length"):
        rke.evaluate(log, ["ild@2"], items=ragged)


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize(
    ("embedding", "features"),
    [
        ([float("nan"), 1.0], None),  # audit RS05: ild was NaN
        ([None, 1.0], None),  # audit RS08b: the null counted as 0.0
        ([float("inf"), 1.0], None),
        ([None, 1.0], ["x", "y"]),  # a null in one of several numeric feature columns
    ],
)
def test_a_bad_value_inside_a_vector_is_refused(
    embedding: list[float | None], features: list[str] | None, lazy: bool
) -> None:
    log = pl.DataFrame(
        {"query": [1, 1, 1], "item": ["a", "b", "c"], "score": [3.0, 2.0, 1.0], "relevance": 1}
    )
    vectors = [embedding, [1.0, 0.0], [0.5, 0.5]]
    if features is None:
        items = pl.DataFrame(
            {"item": ["a", "b", "c"], "emb": vectors},
            schema={"item": pl.String, "emb": pl.List(pl.Float64)},
        )
        metric, column = "ild@3", "column 'emb'"
    else:
        items = pl.DataFrame(
            {"item": ["a", "b", "c"], "x": [v[0] for v in vectors], "y": [v[1] for v in vectors]}
        )
        metric, column = "ild@3(features=x+y)", "columns ['x', 'y']"
    frame = log.lazy() if lazy else log
    train = pl.DataFrame({"query": [2], "item": ["b"]})

    def run(name: str) -> None:
        tables = {"train": train} if name.startswith("serendipity") else {}
        out = rke.evaluate(frame, [name], items=items, **tables)
        if isinstance(out, pl.LazyFrame):
            out.collect()

    for name in (metric, metric.replace("ild", "serendipity")):
        with pytest.raises(rke.ColumnValueError, match=rf"{re.escape(column)} of items=.*item 'a'"):
            run(name)


def test_a_missing_vector_stays_a_zero_vector() -> None:
    # a whole null embedding, or every numeric feature null, keeps its documented meaning
    log = pl.DataFrame({"query": [1, 1, 1], "item": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    zero = pl.DataFrame({"item": ["a", "b", "c"], "emb": [[0.0, 0.0], [1.0, 0.0], [0.5, 0.5]]})
    expected = rke.evaluate(log, ["ild@3"], items=zero).item()
    # brute force: sims a-b 0, a-c 0, b-c 1/sqrt(2): 1 - mean
    assert expected == pytest.approx(1 - (1 / math.sqrt(2)) / 3, abs=1e-12)
    for emb in (None, [None, None]):
        items = pl.DataFrame(
            {"item": ["a", "b", "c"], "emb": [emb, [1.0, 0.0], [0.5, 0.5]]},
            schema={"item": pl.String, "emb": pl.List(pl.Float64)},
        )
        assert rke.evaluate(log, ["ild@3"], items=items).item() == pytest.approx(expected)
    numeric = pl.DataFrame({"item": ["a", "b", "c"], "x": [None, 1.0, 0.5], "y": [None, 0.0, 0.5]})
    assert rke.evaluate(log, ["ild@3(features=x+y)"], items=numeric).item() == pytest.approx(
        expected
    )
