"""The ``convention="torchmetrics"`` preset against torchmetrics' functional retrieval metrics.

torchmetrics needs torch, which the ``test`` extra does not pull in (it is large); install the
``torchmetrics`` extra to run these (``pip install -e ".[test,torchmetrics]"``). Without it the
preset is still checked against its documented formulas in ``test_conventions.py``.

The data avoid what the preset deliberately does not copy: scores are positive (torchmetrics
>= 1.8 drops rows scored <= 0 from AP, P, R and RR) and distinct except in the NDCG tie test
(its other metrics order ties with an unstable sort). torchmetrics computes in float32, so
values agree to 2e-7.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import polars_rankeval as rke

torch = pytest.importorskip("torch")
tm = pytest.importorskip("torchmetrics.functional.retrieval")


def _log(seed: int, *, ties: bool = False, graded: bool = False) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(12):
        n = int(rng.integers(1, 12))
        scores = (
            rng.integers(1, 4, size=n).astype(float)
            if ties
            else rng.permutation(n) + 1.0 + rng.random()
        )
        labels = rng.integers(0, 4, size=n) if graded else (rng.random(n) < 0.35).astype(int)
        rows += [
            (f"q{q}", f"d{i}", float(s), int(y))
            for i, (s, y) in enumerate(zip(scores, labels, strict=True))
        ]
        # a judged relevant item the system did not return: torchmetrics never sees it
        rows.append((f"q{q}", "unseen", None, 1))
    return pl.DataFrame(rows, schema=["query", "item", "score", "relevance"], orient="row")


def _per_query_torch(log: pl.DataFrame, fn, **kwargs) -> dict[str, float]:
    out = {}
    for (query,), group in log.filter(pl.col("score").is_not_null()).group_by("query"):
        preds = torch.tensor(group["score"].to_list(), dtype=torch.float64)
        target = torch.tensor(group["relevance"].to_list())
        out[query] = float(fn(preds, target, **kwargs))
    return out


CASES = [
    ("p@3", tm.retrieval_precision, {"top_k": 3}),
    ("p@10", tm.retrieval_precision, {"top_k": 10}),
    ("recall@3", tm.retrieval_recall, {"top_k": 3}),
    ("hit_rate@2", tm.retrieval_hit_rate, {"top_k": 2}),
    ("map", tm.retrieval_average_precision, {}),
    ("map@3", tm.retrieval_average_precision, {"top_k": 3}),
    ("mrr", tm.retrieval_reciprocal_rank, {}),
    ("mrr@2", tm.retrieval_reciprocal_rank, {"top_k": 2}),
    ("r_precision", tm.retrieval_r_precision, {}),
]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("metric", "fn", "kwargs"), CASES, ids=[c[0] for c in CASES])
def test_binary_metrics_match_torchmetrics(seed, metric, fn, kwargs):
    log = _log(seed)
    ours = rke.evaluate(log, [metric], per_query=True, convention="torchmetrics")
    theirs = _per_query_torch(log, fn, **kwargs)
    got = dict(zip(ours["query"], ours[metric], strict=True))
    assert sorted(got) == sorted(theirs)
    for query, value in theirs.items():
        assert got[query] == pytest.approx(value, abs=2e-7), (metric, query)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k", [None, 1, 3, 5])
def test_ndcg_matches_torchmetrics_with_graded_labels_and_ties(seed, k):
    log = _log(seed, ties=True, graded=True)
    metric = "ndcg" if k is None else f"ndcg@{k}"
    ours = rke.evaluate(log, [metric], per_query=True, convention="torchmetrics")
    theirs = _per_query_torch(log, tm.retrieval_normalized_dcg, top_k=k)
    got = dict(zip(ours["query"], ours[metric], strict=True))
    for query, value in theirs.items():
        assert got[query] == pytest.approx(value, abs=2e-7), query
