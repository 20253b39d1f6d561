"""A metric's value does not depend on the other metrics in the same call.

Each metric is computed over the lists its own rule selects: a metric that reads labels over
trec_eval's (lists with judgments, and a retrieved row unless ``missing_queries="zero"``), a
label-free metric (novelty, coverage, diversity ...) over every list with a retrieved row, as
the recommender tools compute it over every recommended user. A mixed call has a per-query row
for every list some metric evaluates, null for a metric that does not evaluate it, and each
summary is taken over the metric's own lists.

The generated log has two systems, tied scores, graded, negative and null labels, users with
no label at all (recommending items nobody else does, so coverage moves), and a list with
judgments but no retrieved row. The expected means of novelty and coverage come from a
plain-Python computation over the ranked lists, never from this library.
"""

from __future__ import annotations

import math
import os
import random
import shutil
import sys
import warnings
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from polars_rankeval._engine.settings import settings_for
from polars_rankeval._names.registry import resolve_metrics

K = 3
N_CATALOG = 60
SYSTEMS = ("a", "b")
LABELLED_USERS = range(12)
UNLABELLED_USERS = range(12, 18)  # retrieved rows, no label
EMPTY_USER = 18  # judgments, no retrieved row


def _item(number: int) -> str:
    return f"i{number:02d}"  # zero-padded: the string order is the number order


def _log() -> pl.DataFrame:
    rng = random.Random(27)
    rows: list[tuple[str, int, str, float | None, int | None]] = []
    for system in SYSTEMS:
        for user in [*LABELLED_USERS, *UNLABELLED_USERS]:
            # the unlabelled users recommend items 40..59, nobody else does
            pool = range(40, 60) if user in UNLABELLED_USERS else range(40)
            items = rng.sample(list(pool), rng.randint(2, 6))
            for item in items:
                score = float(rng.randint(0, 3))  # few values: ties, across the cutoff too
                label: int | None = None
                if user in LABELLED_USERS:
                    label = rng.choice([None, None, -1, 0, 1, 2, 3])
                rows.append((system, user, _item(item), score, label))
            if user in LABELLED_USERS and user % 3 == 0:  # a judged, unretrieved row
                rows.append((system, user, _item(70 + user), None, 2))
        rows.append((system, EMPTY_USER, _item(5), None, 1))
        rows.append((system, EMPTY_USER, _item(6), None, 0))
    return pl.DataFrame(
        rows,
        schema={
            "system": pl.String,
            "user": pl.Int64,
            "item": pl.String,
            "score": pl.Float64,
            "relevance": pl.Int64,
        },
        orient="row",
    )


LOG = _log()
# items 0..49 seen in train, item n (n % 7) + 1 times; 50..59 never
TRAIN = pl.concat(
    [
        pl.DataFrame(
            {"user": [200 + n] * ((n % 7) + 1), "item": [_item(n)] * ((n % 7) + 1)},
        )
        for n in range(50)
    ]
)
ITEMS = pl.DataFrame(
    {
        "item": [_item(n) for n in range(60)],
        "x": [float(n % 5) for n in range(60)],
        "y": [float(n % 3) + 1.0 for n in range(60)],
        "category": [f"c{n % 4}" for n in range(60)],
    }
)
TABLES: dict[str, Any] = {"train": TRAIN, "items": ITEMS, "catalog": N_CATALOG}

LABEL_FREE = [
    *("novelty@3", "novelty@3(absent=zero)", "surprisal@3", "unseen@3", "arp@3", "aplt@3"),
    *("aclt@3", "ild@3", "ils@3", "categorical_diversity@3", "serendipity@3(relevant=all)"),
]
LABEL_FREE_SYSTEM = ["coverage@3", "coverage@3(of=train)", "entropy@3", "gini@3"]
LABEL_FREE_SYSTEM += ["personalization@3"]
LABELLED = ["ndcg@3", "map", "num_q", "p@3(rel=2)", "p@3(judged_only=True)"]


def test_the_metrics_under_test_are_label_free_and_the_others_read_labels() -> None:
    preset, _ = settings_for("trec_eval", {})
    for _, metric in resolve_metrics([*LABEL_FREE, *LABEL_FREE_SYSTEM], preset):
        assert not metric.reads_labels
    for _, metric in resolve_metrics(LABELLED, preset):
        assert metric.reads_labels


def _run(metrics: list[str], route: str, **kw: Any) -> pl.DataFrame:
    """``evaluate`` by ``route``: DataFrame, LazyFrame, 2 passes, 5 (spilled) passes."""
    keywords: dict[str, Any] = {"query": "user", "by": "system", **TABLES, **kw}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # per-system metrics left out of per_query, ties
        if route == "frame":
            return rke.evaluate(LOG, metrics, **keywords)
        buckets = {"lazy": 1, "passes": 2, "spilled": 5}[route]
        out = rke.evaluate(LOG.lazy(), metrics, n_buckets=buckets, **keywords)
        return out.collect()


ROUTES = ["frame", "lazy", "passes", "spilled"]
CALLS = [
    pytest.param({}, id="trec"),
    pytest.param({"missing_queries": "zero"}, id="missing_zero"),
    pytest.param({"empty_queries": "drop"}, id="drop"),
]


@pytest.mark.parametrize("keywords", CALLS)
@pytest.mark.parametrize("route", ROUTES)
def test_per_query_values_alone_equal_those_in_a_mixed_call(
    route: str, keywords: dict[str, Any]
) -> None:
    mixed = _run([*LABEL_FREE, *LABELLED], route, per_query=True, **keywords)
    for metric in [*LABEL_FREE, *LABELLED]:
        alone = _run([metric], route, per_query=True, **keywords)
        own = mixed.filter(pl.col(metric).is_not_null()).select("system", "user", metric)
        # a metric's null values alone (no train item in its top k ...) are null in the mix
        assert_frame_equal(own, alone.drop_nulls(metric), check_exact=False, rel_tol=1e-12)
        assert alone.select("system", "user").is_duplicated().sum() == 0
        # every list it evaluates alone has a row in the mix
        missing = alone.join(mixed, on=["system", "user"], how="anti")
        assert missing.height == 0, (metric, missing)


@pytest.mark.parametrize("keywords", CALLS)
@pytest.mark.parametrize("route", ROUTES)
def test_means_alone_equal_those_in_a_mixed_call(route: str, keywords: dict[str, Any]) -> None:
    every = [*LABEL_FREE, *LABEL_FREE_SYSTEM, *LABELLED]
    mixed = _run(every, route, **keywords)
    for metric in every:
        alone = _run([metric], route, **keywords)
        assert_frame_equal(mixed.select("system", metric), alone, check_exact=False, rel_tol=1e-12)


def test_label_free_per_query_rows_are_every_ranked_list() -> None:
    mixed = _run([*LABEL_FREE, "ndcg@3"], "frame", per_query=True)
    ranked = LOG.filter(pl.col("score").is_not_null()).select("system", "user").unique()
    assert_frame_equal(mixed.select("system", "user"), ranked, check_row_order=False)
    unlabelled = mixed.filter(pl.col("user").is_in(list(UNLABELLED_USERS)))
    assert unlabelled["ndcg@3"].null_count() == unlabelled.height > 0
    assert unlabelled["ils@3"].null_count() == 0


# ---- plain Python: the top k of each ranked list, and novelty and coverage over them ----


def _tops() -> dict[tuple[str, int], list[str]]:
    """Each list with a retrieved row: its top ``K`` (score descending, ties by item descending,
    trec_eval's order)."""
    lists: dict[tuple[str, int], list[tuple[float, str]]] = {}
    for system, user, item, score, _ in LOG.iter_rows():
        if score is not None:
            lists.setdefault((system, user), []).append((score, item))
    return {key: [i for _, i in sorted(rows, reverse=True)[:K]] for key, rows in lists.items()}


def _expected_novelty() -> dict[str, float]:
    counts: dict[str, int] = {}
    for _, item in TRAIN.iter_rows():
        counts[item] = counts.get(item, 0) + 1
    total = TRAIN.height
    per_system: dict[str, list[float]] = {}
    for (system, _), top in _tops().items():
        found = [-math.log2(counts[i] / total) for i in top if i in counts]
        if found:  # absent items left out; a list with none has no value
            per_system.setdefault(system, []).append(sum(found) / len(found))
    return {s: sum(v) / len(v) for s, v in per_system.items()}


def _expected_coverage(of_train: bool) -> dict[str, float]:
    known = set(TRAIN["item"].to_list())
    items: dict[str, set[str]] = {}
    for (system, _), top in _tops().items():
        items.setdefault(system, set()).update(top)
    if of_train:
        return {s: len(i & known) / len(known) for s, i in items.items()}
    return {s: len(i) / N_CATALOG for s, i in items.items()}


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("others", [[], ["ndcg@3", "map"]], ids=["alone", "mixed"])
def test_novelty_and_coverage_are_over_every_ranked_list(route: str, others: list[str]) -> None:
    metrics = ["novelty@3", "coverage@3", "coverage@3(of=train)", *others]
    got = {row["system"]: row for row in _run(metrics, route).iter_rows(named=True)}
    novelty = _expected_novelty()
    catalog, train = _expected_coverage(False), _expected_coverage(True)
    for system in SYSTEMS:
        assert got[system]["novelty@3"] == pytest.approx(novelty[system], rel=1e-12)
        assert got[system]["coverage@3"] == pytest.approx(catalog[system], rel=1e-12)
        assert got[system]["coverage@3(of=train)"] == pytest.approx(train[system], rel=1e-12)


def test_the_unlabelled_users_move_the_expected_values() -> None:
    """The test above would not see the old rule if the unlabelled users changed nothing."""
    tops = _tops()
    labelled = {k: v for k, v in tops.items() if k[1] not in UNLABELLED_USERS}
    assert {i for v in labelled.values() for i in v} != {i for v in tops.values() for i in v}


def test_compare_pairs_each_metric_on_its_own_lists() -> None:
    # no correction: Holm's adjusts over every metric of the call
    keywords: dict[str, Any] = {"by": "system", "query": "user", "train": TRAIN}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ties; train= unread by ndcg alone
        mixed = rke.compare(LOG, ["novelty@3", "ndcg@3"], correction=None, **keywords)
        for metric in ("novelty@3", "ndcg@3"):
            alone = rke.compare(LOG, [metric], correction=None, **keywords)
            assert_frame_equal(mixed.filter(pl.col("metric") == metric), alone)


@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")
def test_spark_gives_the_local_mixed_call() -> None:
    """Spark's plain-aggregation route (no finishing step): the per-query nulls and means."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("Spark needs a Java runtime: no `java` on the PATH")
    from pyspark.sql import SparkSession

    from polars_rankeval import spark as rke_spark

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master("local[1]")
        .appName("polars-rankeval-mixed")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    metrics = ["novelty@3", "arp@3", "ndcg@3", "num_q"]
    keywords: dict[str, Any] = {"query": "user", "by": "system", "train": TRAIN}
    try:
        sdf = session.createDataFrame(LOG.to_arrow())
        for per_query in (True, False):
            got = rke_spark.evaluate(sdf, metrics, per_query=per_query, **keywords)
            arrow = pl.from_arrow(got.toArrow())
            assert isinstance(arrow, pl.DataFrame)
            remote = arrow.sort("system", *(["user"] if per_query else []))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # ties
                local = rke.evaluate(LOG, metrics, per_query=per_query, **keywords)
            assert_frame_equal(remote, local, check_exact=False, rel_tol=1e-12, check_dtypes=False)
            if per_query:  # the unlabelled users' lists: novelty's, not ndcg's
                unlabelled = remote.filter(pl.col("user").is_in(list(UNLABELLED_USERS)))
                assert unlabelled.height == 2 * len(UNLABELLED_USERS)
                assert unlabelled["ndcg@3"].null_count() == unlabelled.height
    finally:
        session.stop()


@pytest.mark.parametrize("keywords", CALLS)
def test_label_free_beside_metrics_of_other_levels_only(keywords: dict[str, Any]) -> None:
    """The evaluation's own level holds only label-free metrics: the levels' plans still
    join on every list of any of them (the judged lists without a retrieved row too)."""
    metrics = ["novelty@3", "p@3(rel=2)", "map(judged_only=True)"]
    mixed = _run(metrics, "frame", per_query=True, **keywords)
    for metric in metrics:
        alone = _run([metric], "frame", per_query=True, **keywords)
        own = mixed.filter(pl.col(metric).is_not_null()).select("system", "user", metric)
        assert_frame_equal(own, alone.drop_nulls(metric), check_exact=False, rel_tol=1e-12)


def test_a_label_metric_that_evaluates_nothing_beside_label_free_ones_is_said() -> None:
    # the empty-result warning cannot fire (novelty has rows); ndcg's null must still be said
    log = pl.DataFrame(
        {
            "user": [1, 1, 2, 2],
            "item": [10, 11, 12, 13],
            "score": [2.0, 1.0, 2.0, 1.0],
            "relevance": [None, None, None, None],
        },
        schema_overrides={"relevance": pl.Int64},
    )
    train = pl.DataFrame({"user": [5, 6, 7], "item": [10, 11, 12]})
    with pytest.warns(rke.EmptyEvaluationWarning, match=r"\['ndcg@2'\] evaluated no query") as got:
        out = rke.evaluate(log, ["novelty@2", "ndcg@2"], query="user", train=train)
    assert got[0].filename == __file__
    assert out["ndcg@2"].to_list() == [None]
    assert out["novelty@2"].to_list() == [pytest.approx(math.log2(3))]


@pytest.mark.parametrize("route", ["DataFrame", "LazyFrame", "passes"])
def test_the_tie_warning_averages_over_the_metrics_own_lists(route: str) -> None:
    # one judged list whose tie decides p@1 (range 1), and 8 unjudged lists that only the
    # label-free metric evaluates: p@1's mean moves by 1.0, not by 1/9
    rows = [("q0", "a", 1.0, 1), ("q0", "b", 1.0, 0)]
    for i in range(1, 9):
        rows += [(f"q{i}", "a", 2.0, None), (f"q{i}", "b", 1.0, None)]
    log = pl.DataFrame(rows, schema=["query", "item", "score", "relevance"], orient="row")
    data: Any = log if route == "DataFrame" else log.lazy()
    extra: dict[str, Any] = {"n_buckets": 3} if route == "passes" else {}
    metrics = ["p@1", "coverage@2(of=catalog)"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = rke.evaluate(data, metrics, catalog=10, tie_warning=0.2, **extra)
        if isinstance(out, pl.LazyFrame):
            out.collect()
    said = [str(w.message) for w in caught if issubclass(w.category, rke.TieWarning)]
    assert len(said) == 1
    assert "p@1 by up to 1.0000" in said[0]
