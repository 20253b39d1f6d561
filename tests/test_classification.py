"""AUC, fall-out and GAUC against sklearn, published values and brute force."""

from __future__ import annotations

from collections import defaultdict

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from tests.recsys_brute import generated


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
