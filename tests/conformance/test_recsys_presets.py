"""Each recommender preset reproduces its tool's own unit-test and doctest values.

The fixtures are transcribed from the tools' tests (cited at each one); ranks become scores
(rank 1 highest). Nothing here computes an expected value with this library.
"""

from __future__ import annotations

import math

import polars as pl
import pytest

import polars_rankeval as rke
from tests.metrics.test_coverage import RECBOLE_LOG
from tests.metrics.test_diversity import RECOMMENDERS_ITEMS
from tests.metrics.test_popularity import RECOMMENDERS_RECO, RECOMMENDERS_TRAIN


def _ranked(users: list[object], items: list[object], ranks: list[int]) -> pl.DataFrame:
    return pl.DataFrame(
        {"query": users, "item": items, "score": [-float(r) for r in ranks]},
    )


def test_recommenders() -> None:
    # recommenders-team/recommenders tests/unit/recommenders/evaluation/
    # test_python_evaluation.py: novelty 2.83333, catalog_coverage 0.8,
    # distributional_coverage 1.9183, diversity 0.43096, serendipity 0.43408
    # the preset's diversity and serendipity use train co-occurrence: items= is not read, and
    # passing it says so (trial 2.4: a user expected ild from the item features)
    with pytest.warns(rke.UnusedTableWarning, match=r"option items= .*'ild@2' .*co-occurrence"):
        out = rke.evaluate(
            RECOMMENDERS_RECO,
            ["novelty@2", "coverage@2", "entropy@2", "ild@2", "serendipity@2"],
            convention="recommenders",
            train=RECOMMENDERS_TRAIN,
            items=RECOMMENDERS_ITEMS,
        )
    assert out.row(0) == pytest.approx((2.83333, 0.8, 1.9183, 0.43096, 0.43408), abs=1e-5)


# evidentlyai/evidently tests/metrics/recsys/test_popularity_bias.py and test_novelty.py
EVIDENTLY_RECS = _ranked([1, 2, 2, 3, 3], [3, 2, 3, 1, 2], [1, 1, 2, 1, 2])
EVIDENTLY_TRAIN = pl.DataFrame({"query": [1, 1, 2, 3], "item": [1, 2, 1, 1]})


def test_evidently_popularity_bias_and_novelty() -> None:
    out = rke.evaluate(
        EVIDENTLY_RECS,
        ["arp@3", "coverage@3", "gini@3", "novelty@3"],
        convention="evidently",
        train=EVIDENTLY_TRAIN,
    )
    assert out.row(0)[:3] == pytest.approx((1.5, 1.0, 0.2), abs=1e-12)
    # asserted there with np.isclose (rtol 1e-5): the exact value is 1.1887218755...
    assert out.row(0)[3] == pytest.approx(1.18872199999, rel=1e-5)


@pytest.mark.parametrize(("k", "expected"), [(1, 1 / 3), (2, 2 / 3), (3, 1.0)])
def test_evidently_coverage(k: int, expected: float) -> None:
    recs = _ranked([1, 1, 1, 2, 2, 2, 3, 3, 3], [1, 2, 3] * 3, [1, 2, 3] * 3)
    train = pl.DataFrame({"query": [1, 1, 2, 3], "item": [1, 2, 1, 3]})
    out = rke.evaluate(recs, [f"coverage@{k}"], convention="evidently", train=train)
    assert out.item() == pytest.approx(expected, abs=1e-12)


def test_evidently_personalization_and_diversity() -> None:
    # test_personalisation.py: 0.16666666; test_diversity.py: 1.0963345074906863
    recs = _ranked(
        [1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3],
        [1, 2, 3, 4, 1, 2, 3, 4, 1, 3, 2, 5],
        [1, 2, 3, 4] * 3,
    )
    out = rke.evaluate(recs, ["personalization@4"], convention="evidently")
    assert out.item() == pytest.approx(0.16666666, abs=1e-8)
    items = ["0a", "1a", "5a", "6a", "0a", "1a", "5a", "6a", "0a", "4a", "6a", "10a"]
    f1 = [1.0, 1, 1, -0.1, 1, 1, 1, -0.1, 1, 1, -0.1, -1]
    f2 = [0.0, 0.1, 1, 0.9, 0, 0.1, 1, 0.9, 0, 0.9, 0.9, -1]
    log = _ranked(["1"] * 4 + ["2"] * 4 + ["3"] * 4, items, [1, 2, 3, 4] * 3)
    features = pl.DataFrame({"item": items, "item_f1": f1, "item_f2": f2}).unique("item")
    out = rke.evaluate(log, ["ild@4"], convention="evidently", items=features)
    assert out.item() == pytest.approx(1.0963345074906863, abs=1e-12)


def test_recbole() -> None:
    # RUCAIBox/RecBole tests/metrics/test_rec_metrics.py: ItemCoverage 7/8, GiniIndex 41/120,
    # ShannonEntropy 0.263056 (num_items = 8)
    out = rke.evaluate(
        RECBOLE_LOG, ["coverage@3", "gini@3", "entropy@3"], convention="recbole", catalog=8
    )
    assert out.row(0) == pytest.approx((7 / 8, 41 / 120, 0.263056), abs=1e-6)


def test_torchrec_and_torchmetrics() -> None:
    # meta-pytorch/torchrec GAUC test: predictions [.9, .8, .7, .6, .5], labels [1, 0, 1, 1, 0],
    # num_candidates [3, 2] -> 0.75
    log = pl.DataFrame(
        {
            "query": [1, 1, 1, 2, 2],
            "item": list("abcde"),
            "score": [0.9, 0.8, 0.7, 0.6, 0.5],
            "relevance": [1, 0, 1, 1, 0],
        }
    )
    assert rke.evaluate(log, ["gauc"], convention="torchrec").item() == pytest.approx(0.75)
    # TorchRec skips a session whose predictions are all equal; RecBole would score it 0.5
    tied = pl.concat(
        [
            log,
            pl.DataFrame(
                {"query": [3, 3], "item": ["f", "g"], "score": [0.4, 0.4], "relevance": [1, 0]}
            ),
        ]
    )
    assert rke.evaluate(tied, ["gauc"], convention="torchrec").item() == pytest.approx(0.75)
    # Lightning-AI/torchmetrics RetrievalAUROC / RetrievalFallOut docstrings: 0.75 and 0.5;
    # a query with one class scores 0 for AUROC, and one without negatives 1 for fall-out
    doc = pl.DataFrame(
        {
            "query": [0, 0, 0, 1, 1, 1, 1, 2],
            "item": list("abcdefgh"),
            "score": [0.2, 0.3, 0.5, 0.1, 0.3, 0.5, 0.2, 0.9],
            "relevance": [0, 0, 1, 0, 1, 0, 1, 1],
        }
    )
    out = rke.evaluate(doc, ["auc", "fall_out@2"], convention="torchmetrics", per_query=True)
    assert out["auc"].to_list() == [1.0, 0.5, 0.0]
    assert out["fall_out@2"].to_list() == [0.5, 0.5, 1.0]


def test_presets_refuse_what_the_tool_does_not_define() -> None:
    with pytest.raises(rke.InvalidOptionError, match="convention 'torchrec' has no 'ndcg'"):
        rke.evaluate(RECBOLE_LOG, ["ndcg@3"], convention="torchrec")
    with pytest.raises(rke.InvalidOptionError, match="convention 'evidently' has no 'gauc'"):
        rke.evaluate(RECBOLE_LOG, ["gauc"], convention="evidently")
    # an explicit option still wins over the preset
    out = rke.evaluate(RECBOLE_LOG, ["gini@3(over=recommended)"], convention="recbole")
    expected_counts = sorted([1, 2, 3, 2, 4, 1, 2])  # items 1..7 over the five lists
    m, total = len(expected_counts), sum(expected_counts)
    gini = sum((2 * j - m - 1) * c for j, c in enumerate(expected_counts, 1)) / ((m - 1) * total)
    assert out.item() == pytest.approx(gini, rel=1e-12)
    assert math.isfinite(gini)


def test_replay() -> None:
    # sb-ai-lab/RePlay replay/metrics/coverage.py doctest fixture (recommendations with
    # scores, train), also used by its Surprisal and Novelty doctests: Coverage@2
    # 0.5555555555555556, Surprisal@2 0.6845351232142715, Novelty@2 0.3333
    recs = pl.DataFrame(
        {
            "query": [1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3],
            "item": [3, 7, 10, 11, 2, 5, 8, 11, 1, 3, 4, 9, 2],
            "score": [0.6, 0.5, 0.4, 0.3, 0.2, 0.6, 0.5, 0.4, 0.3, 0.2, 1.0, 0.5, 0.1],
        }
    )
    train = pl.DataFrame(
        {
            "query": [1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3],
            "item": [5, 6, 8, 9, 2, 5, 8, 11, 1, 3, 4, 9, 2],
        }
    )
    out = rke.evaluate(
        recs, ["coverage@2", "surprisal@2", "unseen@2"], convention="replay", train=train
    )
    assert out.row(0) == pytest.approx((0.5555555555555556, 0.6845351232142715, 1 / 3), rel=1e-12)
