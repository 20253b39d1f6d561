"""AUC, fall-out and GAUC against sklearn, published values and brute force."""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from tests.support.recsys_brute import LOG_SCHEMA, generated


def _lists(
    log: pl.DataFrame, k: int | None = None
) -> dict[tuple[str, int], list[tuple[float, int]]]:
    """Judged retrieved (score, relevant) pairs per list, restricted to the trec top k."""
    rows: dict[tuple[str, int], list[tuple[float, str, int | None]]] = defaultdict(list)
    for system, query, item, score, label in log.iter_rows():
        rows[(system, query)]
        if score is not None:
            rows[(system, query)].append((score, str(item), label))
    out = {}
    for key, found in rows.items():
        ranked = sorted(found, reverse=True)[: k if k else None]
        out[key] = [
            (s, int(label >= 1)) for s, _, label in ranked if label is not None and label >= 0
        ]
    return out


def _pairs_auc(pairs: list[tuple[float, int]], tie_credit: float = 0.5) -> float | None:
    pos = [s for s, r in pairs if r]
    neg = [s for s, r in pairs if not r]
    if not pos or not neg:
        return None
    right = sum(1.0 if p > n else tie_credit if p == n else 0.0 for p in pos for n in neg)
    return right / (len(pos) * len(neg))


def _judged_lists(log: pl.DataFrame) -> set[tuple[str, int]]:
    return {(s, q) for s, q, _, _, label in log.iter_rows() if label is not None}


@pytest.mark.parametrize("k", [None, 3])
def test_auc_brute_force_and_sklearn(k: int | None) -> None:
    from sklearn.metrics import roc_auc_score

    log, _ = generated(seed=11)
    metric = "auc" if k is None else f"auc@{k}"
    per_query = rke.evaluate(log, [metric, f"{metric}(empty=zero)"], by="system", per_query=True)
    lists = _lists(log, k)
    for system, query, value, zeroed in per_query.iter_rows():
        pairs = lists[(system, query)]
        expected = _pairs_auc(pairs)
        assert (
            value == pytest.approx(expected, rel=1e-12) if expected is not None else value is None
        )
        if expected is not None:
            scores, labels = zip(*pairs, strict=True)
            assert value == pytest.approx(roc_auc_score(labels, scores), rel=1e-12)
        assert zeroed == (expected if expected is not None else 0.0)
    means = rke.evaluate(log.lazy(), [metric], by="system", n_buckets=3).collect()
    for system, mean in means.iter_rows():
        values = [v for s, _, v, _ in per_query.iter_rows() if s == system and v is not None]
        assert mean == pytest.approx(sum(values) / len(values), rel=1e-12)


def test_fall_out_brute_force() -> None:
    log, _ = generated(seed=12)
    out = rke.evaluate(log, ["fall_out@3", "fall_out@3(empty=one)"], by="system", per_query=True)
    negatives: dict[tuple[str, int], int] = defaultdict(int)
    for system, query, _, _, label in log.iter_rows():
        if label is not None and 0 <= label < 1:
            negatives[(system, query)] += 1
    top3 = _lists(log, 3)
    for system, query, value, one in out.iter_rows():
        n = negatives[(system, query)]
        found = sum(1 for _, r in top3[(system, query)] if not r)
        assert value == (found / n if n else 0.0)
        assert one == (found / n if n else 1.0)
    assert rke.parse_metric("fall_out@3").direction == "lower"


@pytest.mark.parametrize(
    ("options", "tie_credit", "weight", "skip_identical"),
    [
        ("", 0.5, "positives", False),
        ("(weights=impressions)", 0.5, "impressions", False),
        ("(weights=equal,tie_credit=0.0,identical=skip)", 0.0, "equal", True),
    ],
)
def test_gauc_brute_force(
    options: str, tie_credit: float, weight: str, skip_identical: bool
) -> None:
    log, _ = generated(seed=13)
    out = rke.evaluate(log, ["p@3", f"gauc{options}"], by="system")
    lists = _lists(log)
    judged = _judged_lists(log)
    for system, _, value in out.iter_rows():
        total = weighted = 0.0
        for (s, q), pairs in lists.items():
            if s != system or (s, q) not in judged:
                continue
            found = _pairs_auc(pairs, tie_credit)
            if found is None or (skip_identical and len({x for x, _ in pairs}) == 1):
                continue
            w = {"positives": sum(r for _, r in pairs), "impressions": len(pairs), "equal": 1}[
                weight
            ]
            total += w
            weighted += w * found
        assert value == pytest.approx(weighted / total, rel=1e-12)


def test_recbole_gauc_case() -> None:
    # RecBole tests/metrics/test_rec_metrics.py GAUC case 0: users with 2, 3, 5 candidates,
    # 1, 2, 3 positives at descending rank sums 1, 4, 9 -> 0.583333
    ranks = {1: (2, [1]), 2: (3, [1, 3]), 3: (5, [2, 3, 4])}
    rows = [
        (user, f"{user}-{r}", float(n - r), int(r in positive))
        for user, (n, positive) in ranks.items()
        for r in range(1, n + 1)
    ]
    log = pl.DataFrame(rows, schema=["query", "item", "score", "relevance"], orient="row")
    assert rke.evaluate(log, ["gauc"]).item() == pytest.approx(0.583333, abs=1e-6)


def test_gauc_is_per_system() -> None:
    log, _ = generated(seed=13)
    assert rke.parse_metric("gauc").level == "system"
    with pytest.warns(rke.PerSystemMetricWarning):
        out = rke.evaluate(log, ["auc", "gauc"], by="system", per_query=True)
    assert "gauc" not in out.columns
    with pytest.raises(rke.InvalidOptionError, match="tie_credit"):
        rke.evaluate(log, ["gauc(tie_credit=0.3)"], by="system")
    with pytest.raises(rke.InvalidOptionError, match="no closed form"):
        rke.evaluate(log, ["auc"], by="system", ties="expected")
    assert_frame_equal(
        log.rank_eval.gauc(by="system", weights="equal"),
        rke.evaluate(log, ["gauc(weights=equal)"], by="system"),
    )


def _long_lists(seed: int) -> pl.DataFrame:
    """Longer lists than ``generated`` (up to 30 rows), so the ROC curves have many points:
    scores from 6 values (ties), graded, negative and unjudged labels, unretrieved rows."""
    rng = random.Random(seed)
    rows = []
    for system in ("a", "b"):
        for query in range(40):
            for item in rng.sample(range(60), rng.randint(1, 30)):
                score = None if rng.random() < 0.1 else rng.randint(0, 5) / 2
                label = rng.choice([None, 0, 0, 0, 1, 2, -1])
                rows.append((system, query, item, score, label))
    return pl.DataFrame(rows, schema=LOG_SCHEMA, orient="row")


@pytest.mark.parametrize("k", [None, 8])
@pytest.mark.parametrize("max_fpr", [0.05, 0.25, 0.5, 0.8])
def test_partial_auc_matches_sklearn(k: int | None, max_fpr: float) -> None:
    # torchmetrics' own RetrievalAUROC tests use sklearn roc_auc_score(max_fpr=) on the top-k
    # rows as their reference (tests/unittests/retrieval/test_auroc.py, _auroc_at_k)
    from sklearn.metrics import roc_auc_score

    log = _long_lists(seed=21)
    metric = ("auc" if k is None else f"auc@{k}") + f"(max_fpr={max_fpr})"
    zeroed = metric[:-1] + ",empty=zero)"
    out = rke.evaluate(log, [metric, zeroed], by="system", per_query=True)
    lists = _lists(log, k)
    checked = 0
    for system, query, value, zero in out.iter_rows():
        pairs = lists[(system, query)]
        if len({r for _, r in pairs}) < 2:
            assert value is None
            assert zero == 0.0
            continue
        scores, labels = zip(*pairs, strict=True)
        expected = roc_auc_score(labels, scores, max_fpr=max_fpr)
        assert value == pytest.approx(expected, rel=1e-12, abs=1e-12)
        assert zero == value
        checked += 1
    assert checked > 40
    # max_fpr=1 is the full AUC, under the plain name
    assert rke.parse_metric("auc(max_fpr=1)").name == "auc"
    assert rke.parse_metric("auc@8(max_fpr=0.5,empty=zero)").name == (
        "auc@8(empty=zero,max_fpr=0.5)"
    )


def test_partial_auc_hand_worked() -> None:
    # negatives at 0.9 and 0.3, positives at 0.9 (tied), 0.5, 0.1. ROC points (fpr, tpr):
    # (0, 0) -> (1/2, 1/3) [the tied pair] -> (1/2, 2/3) -> (1, 2/3) -> (1, 1).
    # Up to fpr 1/4: the first segment cut at (1/4, 1/6): area 1/4 * 1/6 / 2 = 1/48;
    # standardised: (1 + (1/48 - 1/32) / (1/4 - 1/32)) / 2 = (1 - 1/21) / 2 = 10/21.
    log = pl.DataFrame(
        {
            "query": [1] * 5,
            "item": list("abcde"),
            "score": [0.9, 0.9, 0.5, 0.3, 0.1],
            "relevance": [0, 1, 1, 0, 1],
        }
    )
    out = rke.evaluate(log, ["auc(max_fpr=0.25)", "auc(max_fpr=0.5)", "auc"])
    # up to 1/2: the whole first segment, area 1/2 * 1/3 / 2 = 1/12 -> (1 + (1/12 - 1/8) /
    # (1/2 - 1/8)) / 2 = (1 - 1/9) / 2 = 4/9; the full AUC: (1/2 + 1 + 0) / 3 ... pairs:
    # 0.9+ vs 0.9- tie 1/2, vs 0.3- 1; 0.5+ vs 0.9- 0, vs 0.3- 1; 0.1+ 0, 0 -> 2.5 / 6
    assert out.row(0) == pytest.approx((10 / 21, 4 / 9, 2.5 / 6), rel=1e-12)


def test_torchrec_gauc_hard_case() -> None:
    # meta-pytorch/torchrec torchrec/metrics/tests/test_gauc.py test_calc_gauc_hard:
    # predictions [.3, .9 | .1, .8, .2 | .8, .7, .6 | .5, .5], labels [1, 1 | 1, 0, 0 |
    # 1, 0, 1 | 1, 0], num_candidates [2, 3, 3, 2] -> 0.25 over 2 effective sessions
    # (session 1 has one class, session 4 identical predictions)
    sizes = [2, 3, 3, 2]
    log = pl.DataFrame(
        {
            "query": [q for q, n in enumerate(sizes) for _ in range(n)],
            "item": [f"i{i}" for i in range(10)],
            "score": [0.3, 0.9, 0.1, 0.8, 0.2, 0.8, 0.7, 0.6, 0.5, 0.5],
            "relevance": [1, 1, 1, 0, 0, 1, 0, 1, 1, 0],
        }
    )
    torchrec = "gauc(weights=equal,tie_credit=0.0,identical=skip)"
    assert rke.evaluate(log, [torchrec]).item() == pytest.approx(0.25, abs=1e-12)
    assert rke.evaluate(log, ["gauc"], convention="torchrec").item() == pytest.approx(0.25)
    # without the identical-score rule the tied session counts 1/2 (RecBole-style credit)
    assert rke.evaluate(log, ["gauc(weights=equal)"]).item() == pytest.approx(1 / 3)


def test_recbole_gauc_case_1() -> None:
    # RecBole tests/metrics/test_rank_metrics.py case 1: user_len [3, 6, 4], pos_len [1, 0, 4],
    # pos_rank_sum [3, 0, 6] (descending ranks): user 2 has no positive and user 3 no negative,
    # both left out; user 1's only positive is last -> 0.0
    rows = [(1, "a", 3.0, 0), (1, "b", 2.0, 0), (1, "c", 1.0, 1)]
    rows += [(2, f"n{i}", float(i), 0) for i in range(6)]
    rows += [(3, f"p{i}", float(i), 1) for i in range(4)]
    log = pl.DataFrame(rows, schema=["query", "item", "score", "relevance"], orient="row")
    assert rke.evaluate(log, ["gauc"], convention="recbole").item() == 0.0
    # no list with both classes at all: no value
    assert rke.evaluate(log.filter(pl.col("query") > 1), ["gauc"]).item() is None


def test_paths_agree() -> None:
    log = _long_lists(seed=5)
    metrics = ["auc", "auc@5(max_fpr=0.3)", "fall_out@4", "gauc(weights=impressions)"]
    frame = rke.evaluate(log, metrics, by="system")
    lazy = rke.evaluate(log.lazy(), metrics, by="system", n_buckets=3).collect()
    assert_frame_equal(frame, lazy, check_exact=False, rel_tol=1e-12)
    per_query = ["auc", "auc@5(max_fpr=0.3)", "fall_out@4"]
    grouped = (
        log.group_by("system")
        .agg(pl.col("relevance").rank_eval.metric(m) for m in per_query)
        .sort("system")
    )
    assert_frame_equal(frame.select("system", *per_query), grouped, check_exact=False)


def test_partial_auc_streams(tmp_path: Path) -> None:
    from tests.engine.test_streaming import assert_streams, one_pass

    path = tmp_path / "log.parquet"
    _long_lists(seed=2).write_parquet(path)
    for by in (None, ["system"]):
        plan = one_pass(pl.scan_parquet(path), ["auc@5(max_fpr=0.3)", "gauc"], by=by)
        assert isinstance(plan, pl.LazyFrame)
        assert_streams(plan)


@pytest.mark.parametrize("bad", [0, 0.0, -0.1, 1.5, "half", True])
def test_max_fpr_is_checked(bad: object) -> None:
    with pytest.raises(rke.InvalidOptionError, match="max_fpr"):
        rke.metrics.auc(max_fpr=bad)  # type: ignore[arg-type]
    with pytest.raises(rke.InvalidOptionError, match="max_fpr"):
        rke.evaluate(_long_lists(seed=1), [f"auc(max_fpr={bad})"])


@pytest.mark.parametrize(("k", "max_fpr"), [(None, None), (None, 0.25), (4, None), (10, 0.25)])
def test_torchmetrics_preset_follows_its_reference(k: int | None, max_fpr: float | None) -> None:
    # torchmetrics' reference for RetrievalAUROC (tests/unittests/retrieval/test_auroc.py,
    # _auroc_at_k): the top_k rows by prediction, 0 for one class, else sklearn
    # roc_auc_score(max_fpr=); empty_target_action="neg" also scores a query without
    # positives 0. Scores are distinct when k cuts (torch.topk orders ties arbitrarily).
    from sklearn.metrics import roc_auc_score

    rng = random.Random(31)
    rows = []
    for query in range(60):
        n = rng.randint(1, 15)
        for item in range(n):
            score = rng.random() if k else rng.randint(0, 4) / 4
            rows.append((query, f"d{item}", score, rng.choice([0, 0, 1, 2])))
    log = pl.DataFrame(rows, schema=["query", "item", "score", "relevance"], orient="row")
    metric = "auc" if k is None else f"auc@{k}"
    if max_fpr is not None:
        metric += f"(max_fpr={max_fpr})"
    out = rke.evaluate(log, [metric], convention="torchmetrics", per_query=True)
    values = dict(out.iter_rows())
    expected_all = []
    for query in range(60):
        ranked = sorted((r for r in rows if r[0] == query), key=lambda r: -r[2])[:k]
        target = [int(r[3] >= 1) for r in ranked]
        if 0 not in target or 1 not in target:
            expected = 0.0
        else:
            expected = roc_auc_score(target, [r[2] for r in ranked], max_fpr=max_fpr)
        assert values[query] == pytest.approx(expected, rel=1e-12, abs=1e-12)
        expected_all.append(expected)
    mean = rke.evaluate(log, [metric], convention="torchmetrics").item()
    assert mean == pytest.approx(sum(expected_all) / len(expected_all), rel=1e-12)
