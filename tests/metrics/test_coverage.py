"""Per-system exposure metrics against published values and brute force."""

from __future__ import annotations

import math
from collections import Counter

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from tests.metrics.test_popularity import RECOMMENDERS_RECO, RECOMMENDERS_TRAIN
from tests.support.recsys_brute import generated, top_k

# RecBole tests/metrics/test_rec_metrics.py fixture: each row is one user's top-3 item ids,
# num_items = 8 (RUCAIBox/RecBole, recbole/evaluator/metrics.py ItemCoverage, GiniIndex,
# ShannonEntropy): coverage 7/8, Gini 41/120, entropy 0.263056.
RECBOLE_TOP = [[5, 7, 3], [4, 5, 2], [2, 3, 5], [1, 4, 6], [5, 3, 7]]
RECBOLE_LOG = pl.DataFrame(
    {
        "query": [u for u, row in enumerate(RECBOLE_TOP) for _ in row],
        "item": [i for row in RECBOLE_TOP for i in row],
        "score": [3.0 - j for row in RECBOLE_TOP for j in range(len(row))],
    }
)


def test_recbole_published_values() -> None:
    metrics = ["coverage@3", "gini@3(over=catalog)", f"entropy@3(base={math.e},normalize=distinct)"]
    out = rke.evaluate(RECBOLE_LOG, metrics, catalog=8)
    assert out.row(0) == pytest.approx((7 / 8, 41 / 120, 0.263056), abs=1e-6)


def test_recommenders_published_values() -> None:
    # test_python_evaluation.py: catalog_coverage 0.8, distributional_coverage 1.9183
    out = rke.evaluate(
        RECOMMENDERS_RECO,
        ["coverage@2(of=train,intersect=False)", "entropy@2"],
        train=RECOMMENDERS_TRAIN,
    )
    assert out.row(0) == pytest.approx((0.8, 1.9183), abs=1e-4)


def _brute(log: pl.DataFrame, train: pl.DataFrame, k: int, catalog: int) -> dict[str, dict]:
    tops = top_k(log, k)
    train_items = {str(i) for i in train["item"]}
    result: dict[str, dict] = {}
    for system in sorted({s for s, _ in tops}):
        lists = [items for (s, _), items in tops.items() if s == system]
        counts = Counter(str(i) for items in lists for i in items)
        total = sum(counts.values())
        shares = [c / total for c in counts.values()]
        ordered = sorted(counts.values())
        m = len(ordered)
        gini_rec = sum((2 * j - m - 1) * c for j, c in enumerate(ordered, 1)) / ((m - 1) * total)
        full = [0] * (catalog - m) + ordered
        gini_cat = sum((2 * j - catalog - 1) * c for j, c in enumerate(full, 1)) / (catalog * total)
        n = len(lists)
        shared = sum(
            len(set(a) & set(b)) for x, a in enumerate(lists) for y, b in enumerate(lists) if x != y
        )
        result[system] = {
            f"coverage@{k}": len(counts) / catalog,
            f"coverage@{k}(of=train)": len(set(counts) & train_items) / len(train_items),
            f"coverage@{k}(of=train,intersect=False)": len(counts) / len(train_items),
            f"entropy@{k}": -sum(p * math.log2(p) for p in shares),
            f"entropy@{k}(normalize=distinct)": -sum(p * math.log2(p) for p in shares) / m,
            f"gini@{k}": gini_rec,
            f"gini@{k}(over=catalog)": gini_cat,
            f"personalization@{k}": 1 - shared / (k * n * (n - 1)),
        }
    return result


@pytest.mark.parametrize("k", [1, 3, 10])
def test_brute_force_per_system(k: int) -> None:
    log, train = generated(seed=9)
    expected = _brute(log, train, k, catalog=50)
    metrics = list(next(iter(expected.values())))
    out = rke.evaluate(log, metrics, by="system", train=train, catalog=50)
    for row in out.iter_rows(named=True):
        for metric in metrics:
            assert row[metric] == pytest.approx(expected[row["system"]][metric], rel=1e-12), metric
    # lazily, in passes, from a catalog table: the same values
    catalog = pl.DataFrame({"item": range(50)})
    lazy = rke.evaluate(
        log.lazy(),
        metrics,
        by="system",
        train=train.lazy(),
        catalog=catalog,
        n_buckets=3,
    ).collect()
    assert_frame_equal(lazy, out, rel_tol=1e-12)
    # one system alone, without by
    alone = rke.evaluate(log.filter(pl.col("system") == "b"), metrics, train=train, catalog=50)
    for metric in metrics:
        assert alone[metric].item() == pytest.approx(expected["b"][metric], rel=1e-12)


def test_beside_a_label_metric_the_same_queries_count() -> None:
    # Each metric counts its own lists whatever else is asked: ndcg the lists with a judgment
    # (trec_eval's rule), the per-system metrics every ranked list, as alone (and as the
    # recommender tools, over every recommended user).
    log, _train = generated(seed=9)
    judged = log.filter(pl.col("relevance").is_not_null().any().over("system", "query"))
    assert judged.height < log.height
    mixed = rke.evaluate(log, ["ndcg@5", "coverage@3", "gini@3"], by="system", catalog=50)
    alone = rke.evaluate(log, ["coverage@3", "gini@3"], by="system", catalog=50)
    assert_frame_equal(mixed.drop("ndcg@5"), alone)
    # (the lists without a judgment change them: not the judged lists' values)
    assert not alone.equals(rke.evaluate(judged, ["coverage@3", "gini@3"], by="system", catalog=50))
    assert_frame_equal(mixed.select("system", "ndcg@5"), rke.evaluate(log, ["ndcg@5"], by="system"))


def test_per_system_metrics_are_declared_and_refused_where_they_mean_nothing() -> None:
    log, _train = generated(seed=9)
    metric = rke.parse_metric("gini@5")
    assert (metric.level, metric.direction) == ("system", "lower")
    with pytest.warns(rke.PerSystemMetricWarning):
        out = rke.evaluate(log, ["p@5", "coverage@5"], by="system", catalog=50, per_query=True)
    assert "coverage@5" not in out.columns
    with pytest.raises(rke.InvalidOptionError, match="per-system value"):
        rke.compare(log, ["coverage@5"], by="system", baseline="a", catalog=50)
    with pytest.raises(rke.InvalidOptionError, match="needs the catalog table"):
        rke.evaluate(log, ["coverage@5"], by="system")
    with pytest.raises(rke.InvalidOptionError, match="intersect"):
        rke.evaluate(log, ["coverage@5(intersect=False)"], by="system", catalog=50)
    # one list: no pair, null, and said (audit RS20), once for both systems
    with pytest.warns(rke.UndefinedMetricWarning, match=r"system='a' \(2 group\(s\) in all\)"):
        single = rke.evaluate(log.filter(pl.col("query") == 3), ["personalization@5"], by="system")
    assert single["personalization@5"].to_list() == [None, None]


def test_namespace_methods() -> None:
    log, _ = generated(seed=9)
    assert_frame_equal(
        log.rank_eval.gini(5, by="system"), rke.evaluate(log, ["gini@5"], by="system")
    )


def test_per_system_metrics_stream(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tests.engine.test_streaming import assert_streams

    log, train = generated(seed=9)
    log.write_parquet(tmp_path / "log.parquet")
    metrics = ["coverage@3", "coverage@3(of=train)", "entropy@3", "gini@3", "gini@3(over=catalog)"]
    plan = rke.evaluate(
        pl.scan_parquet(tmp_path / "log.parquet"),
        [*metrics, "personalization@3"],
        by="system",
        train=train.lazy(),
        catalog=50,
        n_buckets=1,
    )
    assert_streams(plan)


def test_a_catalog_that_misses_recommended_items_is_refused() -> None:
    # coverage above 1 or a negative number of never-recommended items is no answer
    log = pl.DataFrame({"query": [1, 1, 2, 2], "item": ["a", "b", "c", "d"], "score": 1.0})
    for metric in ["coverage@2", "gini@2(over=catalog)"]:
        with pytest.raises(rke.ColumnValueError, match="recommend 4 distinct items but catalog=2"):
            rke.evaluate(log, [metric], catalog=2)
        with pytest.raises(rke.ColumnValueError, match=r"not in the catalog= table, e\.g\. 'b'"):
            rke.evaluate(log.lazy(), [metric], catalog=pl.DataFrame({"item": ["a"]})).collect()
