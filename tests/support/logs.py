"""Seeded generators of tie-free logs for cross-checks against libraries with unstable tie order."""

from __future__ import annotations

import numpy as np
import polars as pl


def tie_free_log(
    seed: int,
    n_queries: int,
    *,
    min_items: int = 2,
    max_items: int = 25,
    label_p: tuple[float, float, float, float] = (0.5, 0.2, 0.2, 0.1),
    first_is_nonrelevant: bool = False,
) -> pl.DataFrame:
    """Distinct scores, labels 0..3 (no negative), some unjudged and some unretrieved rows.

    Every query has a judged first item and at least one retrieved row; with
    ``first_is_nonrelevant`` that item is a judged non-relevant one (ranx's bpref needs one).
    """
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        n_items = int(rng.integers(min_items, max_items))
        items = rng.choice(10_000, size=n_items, replace=False)
        scores = rng.permutation(n_items).astype(float) + rng.random()
        labels = rng.choice([0, 1, 2, 3], size=n_items, p=list(label_p))
        judged = rng.random(n_items) < 0.8
        judged[0] = True
        if first_is_nonrelevant:
            labels[0] = 0
        retrieved = rng.random(n_items) < 0.85
        retrieved[1] = True
        for item, score, label, is_judged, is_retrieved in zip(
            items, scores, labels, judged, retrieved, strict=True
        ):
            if is_judged or is_retrieved:
                rows.append(
                    (
                        f"q{q}",
                        f"d{item}",
                        float(score) if is_retrieved else None,
                        int(label) if is_judged else None,
                    )
                )
    return pl.DataFrame(rows, schema=["query", "item", "score", "relevance"], orient="row")


def trec_dicts(
    log: pl.DataFrame,
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """``qrels`` and ``run`` dicts (pytrec_eval/ranx input) over the queries present in both."""
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for query, item, score, label in log.select("query", "item", "score", "relevance").iter_rows():
        if label is not None:
            qrels.setdefault(query, {})[item] = label
        if score is not None:
            run.setdefault(query, {})[item] = score
    queries = sorted(set(qrels) & set(run))
    return {q: qrels[q] for q in queries}, {q: run[q] for q in queries}
