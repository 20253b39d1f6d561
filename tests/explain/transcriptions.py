"""Plain-Python transcriptions of each tool's definition, for the recorded cases (never our code).

Each follows the tool's code (or docs) as it was when its thread was filed:

* trec_eval 9 (and pytrec_eval, its C code): ranks by score descending, ties by docno
  descending (``strcmp``); evaluates queries with a judgment and a retrieved row; linear gain
  over ``log2(rank + 1)``, the ideal list from every judged row, cut at ``k`` in ``ndcg_cut``;
* torchmetrics ``retrieval_normalized_dcg`` (1.x): a query's supplied rows only, gain the
  target, discount ``log2(rank + 1)``, tied scores averaged; a 2-D input flattened into one
  list (issue #3216, before PR #3229);
* scikit-learn ``ndcg_score``: each row of ``y_true`` one query, ties averaged
  (``ignore_ties=False``), a row whose ideal DCG is 0 scores 0 and counts in the mean;
* LensKit (lkpy 0.14 ``topn.py``): ``_dcg`` divides by ``max(log2(rank), 1)`` (Järvelin's
  discount); before PR #310 the ideal list was the whole sorted truth list;
* gdeval.pl 1.3 (TREC Web track): only positive judgments; ``(2^g - 1) / log2(rank + 1)``;
  ideal from the positive judgments cut at ``k``; a topic with no positive judgment is not
  evaluated and not averaged;
* trectools (``trec_eval.py``): ``get_ndcg(depth=k)`` sums over the first ``k`` rows but keeps
  the whole ideal list ("TREC_Eval does not cut the IDCG rank"); before PR #27 (issue #24) the
  means divided by the run's queries, judged or not;
* ranx: ``ndcg-lN`` gives labels below ``N`` no gain, in the run and the ideal list;
* Recommenders 1.1 ``ndcg_at_k``: 1 per recommended item found in ``rating_true`` (any
  rating) over ``ln(1 + rank)``, the ideal ``min(k, |rating_true|)`` hits;
* ranking-metrics-torch ``ndcg_at`` before the fix of its issue #1: the ideal from the top-k
  labels of the ranking;
* AP@k over ``R`` (trec_eval ``map_cut_k``, trectools) or ``min(R, k)`` (Spark, Recommenders).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import polars as pl

#: One retrieved or judged row of a query: (item, score or None, label or None).
Row = tuple[str, float | None, int | None]


@dataclass(frozen=True)
class ToolResult:
    """A tool's numbers: per query (the queries it evaluates) and its mean."""

    per_query: Mapping[str, float]
    mean: float


# --- the log ----------------------------------------------------------------------------------
_SCHEMA = {"query": pl.String, "item": pl.String, "score": pl.Float64, "relevance": pl.Int64}


def log_of(queries: Mapping[str, Sequence[Row]]) -> pl.DataFrame:
    """A long log from ``{query: [(item, score, label), ...]}``, in the order given."""
    rows = [(query, *row) for query, query_rows in queries.items() for row in query_rows]
    return pl.DataFrame(rows, schema=_SCHEMA, orient="row")


def rows_of(log: pl.DataFrame) -> dict[str, list[Row]]:
    """The log back as ``{query: [(item, score, label), ...]}``, in input order."""
    out: dict[str, list[Row]] = {}
    for query, item, score, label in log.select(list(_SCHEMA)).iter_rows():
        out.setdefault(query, []).append((item, score, label))
    return out


# --- the tools ----------------------------------------------------------------
def _log2_discount(rank: int) -> float:
    return 1.0 / math.log2(rank + 1)


def _trec_order(rows: Sequence[Row]) -> list[Row]:
    """trec_eval's ranking: the retrieved rows by score descending, ties by docno descending."""
    retrieved = [row for row in rows if row[1] is not None]
    return sorted(retrieved, key=lambda row: (row[1], row[0]), reverse=True)


def _judged(rows: Sequence[Row]) -> bool:
    return any(row[2] is not None for row in rows)


def _mean(values: Mapping[str, float]) -> float:
    return sum(values.values()) / len(values) if values else 0.0


def trec_ap(rows: Sequence[Row], level: int = 1, order: Sequence[Row] | None = None) -> float:
    """trec_eval ``map`` of one query (``-l level``): precision at each relevant row / R."""
    relevant = {item for item, _, label in rows if label is not None and label >= level}
    ranked = _trec_order(rows) if order is None else order
    found, total = 0, 0.0
    for rank, (item, _, _) in enumerate(ranked, start=1):
        if item in relevant:
            found += 1
            total += found / rank
    return total / len(relevant) if relevant else 0.0


def trec_ndcg(
    rows: Sequence[Row],
    k: int | None = None,
    *,
    order: Sequence[Row] | None = None,
    cut_ideal: bool = True,
) -> float:
    """trec_eval ``ndcg`` (``k=None``) / ``ndcg_cut_k``: linear gain, ideal from judged rows."""

    def gain(label: int | None) -> float:
        return float(label) if label is not None and label > 0 else 0.0

    ranked = (_trec_order(rows) if order is None else list(order))[:k]
    dcg = sum(gain(label) * _log2_discount(r) for r, (_, _, label) in enumerate(ranked, 1))
    ideal = sorted((gain(label) for _, _, label in rows), reverse=True)
    if cut_ideal:
        ideal = ideal[:k]
    idcg = sum(g * _log2_discount(r) for r, g in enumerate(ideal, 1))
    return dcg / idcg if idcg > 0 else 0.0


Tool = Callable[[pl.DataFrame], ToolResult]


def trec_eval_tool(measure: Callable[[Sequence[Row]], float]) -> Tool:
    """trec_eval's averaging: the queries with a judgment and a retrieved row."""

    def run(log: pl.DataFrame) -> ToolResult:
        per_query = {
            query: measure(rows)
            for query, rows in rows_of(log).items()
            if _judged(rows) and any(row[1] is not None for row in rows)
        }
        return ToolResult(per_query, _mean(per_query))

    return run


def _tie_averaged_dcg(scores: Sequence[float], gains: Sequence[float], k: int | None) -> float:
    """DCG with tied scores sharing their mean gain (McSherry & Najork; sklearn, torchmetrics)."""
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    total, start = 0.0, 0
    limit = len(order) if k is None else min(k, len(order))
    while start < len(order):
        end = start
        while end < len(order) and scores[order[end]] == scores[order[start]]:
            end += 1
        mean_gain = sum(gains[i] for i in order[start:end]) / (end - start)
        total += mean_gain * sum(_log2_discount(r + 1) for r in range(start, min(end, limit)))
        start = end
    return total


def _one_list_ndcg(scores: Sequence[float], gains: Sequence[float], k: int | None) -> float:
    """sklearn's ``_ndcg_sample_scores`` and torchmetrics' 1-D ``retrieval_normalized_dcg``:
    the ideal from the supplied targets sorted, ties in the run averaged; 0 when ideal is 0."""
    ideal_gains = sorted(gains, reverse=True)
    ideal = sum(g * _log2_discount(r) for r, g in enumerate(ideal_gains[:k], 1))
    return _tie_averaged_dcg(scores, gains, k) / ideal if ideal > 0 else 0.0


def supplied_rows_tool(k: int | None = None) -> Callable[[pl.DataFrame], ToolResult]:
    """torchmetrics / sklearn per query: only the supplied (scored) rows, a null target is 0."""

    def run(log: pl.DataFrame) -> ToolResult:
        per_query = {}
        for query, rows in rows_of(log).items():
            supplied = [row for row in rows if row[1] is not None]
            scores = [float(row[1]) for row in supplied if row[1] is not None]
            gains = [float(row[2] or 0) for row in supplied]
            per_query[query] = _one_list_ndcg(scores, gains, k)
        return ToolResult(per_query, _mean(per_query))

    return run


def torchmetrics_flattened(log: pl.DataFrame) -> ToolResult:
    """torchmetrics #3216: a 2-D ``[queries, documents]`` input ranked as ONE flattened list."""
    scores, gains = [], []
    for rows in rows_of(log).values():
        for _, score, label in rows:
            if score is not None:
                scores.append(score)
                gains.append(float(label or 0))
    value = _one_list_ndcg(scores, gains, None)
    return ToolResult({}, value)


def sklearn_drop_empty(log: pl.DataFrame) -> ToolResult:
    """What sklearn #29521 expected: a row whose ideal DCG is 0 left out of the mean."""
    full = supplied_rows_tool()(log)
    kept = {
        query: value
        for query, value in full.per_query.items()
        if any((row[2] or 0) > 0 for row in rows_of(log)[query] if row[1] is not None)
    }
    return ToolResult(kept, _mean(kept))


def _lenskit_dcg(gains: Sequence[float]) -> float:
    """lkpy 0.14 ``_dcg``: ``Σ gain / max(log2(rank), 1)``."""
    return sum(g / max(math.log2(rank), 1.0) for rank, g in enumerate(gains, start=1))


def lenskit_ndcg(k: int, *, whole_ideal: bool) -> Callable[[pl.DataFrame], ToolResult]:
    """lkpy's ``ndcg(recs, truth, k)``: recs in score order; ``whole_ideal`` = before PR #310."""

    def run(log: pl.DataFrame) -> ToolResult:
        per_query = {}
        for query, rows in rows_of(log).items():
            truth = {item: float(label) for item, _, label in rows if label is not None}
            recs = [item for item, _, _ in _trec_order(rows)][:k]
            ideal = sorted(truth.values(), reverse=True)
            achieved = _lenskit_dcg([truth.get(item, 0.0) for item in recs])
            per_query[query] = achieved / _lenskit_dcg(ideal if whole_ideal else ideal[:k])
        return ToolResult(per_query, _mean(per_query))

    return run


def gdeval(k: int) -> Callable[[pl.DataFrame], ToolResult]:
    """gdeval.pl 1.3 ``ndcg@k``, averaged over the run's topics with a positive judgment."""

    def dcg(gains: Sequence[int]) -> float:
        return sum((2.0**g - 1.0) / math.log2(i + 2) for i, g in enumerate(gains[:k]))

    def run(log: pl.DataFrame) -> ToolResult:
        per_query = {}
        for query, rows in rows_of(log).items():
            judgment = {item: label for item, _, label in rows if label is not None and label > 0}
            if not judgment:  # not in %seen: topicDone skips it, it is not averaged
                continue
            ideal = dcg(sorted(judgment.values(), reverse=True))
            ranked = [judgment.get(item, 0) for item, _, _ in _trec_order(rows)]
            per_query[query] = dcg(ranked) / ideal
        return ToolResult(per_query, _mean(per_query))

    return run


def trectools_ndcg(k: int, *, run_queries: bool) -> Callable[[pl.DataFrame], ToolResult]:
    """trectools ``get_ndcg(depth=k)``: first k rows, the whole ideal list (not cut).

    ``run_queries``: the mean divides by every run query (before PR #27, issue #24); else by
    the queries in both the run and the qrels.
    """

    def run(log: pl.DataFrame) -> ToolResult:
        per_query = {}
        for query, rows in rows_of(log).items():
            if _judged(rows):
                per_query[query] = trec_ndcg(rows, k, cut_ideal=False)
            elif run_queries and any(row[1] is not None for row in rows):
                # no qrels: no per-query value, but the mean's divisor counts it: a 0
                per_query[query] = 0.0
        return ToolResult(per_query, _mean(per_query))

    return run


def rounded_scores(log: pl.DataFrame, decimals: int) -> pl.DataFrame:
    """The run as a tool that prints ``%.{decimals}f`` and reads it back sees it."""
    rows = {
        query: [
            (item, None if score is None else float(f"{score:.{decimals}f}"), label)
            for item, score, label in query_rows
        ]
        for query, query_rows in rows_of(log).items()
    }
    return log_of(rows)


def ranx_ndcg(k: int, level: int) -> Callable[[pl.DataFrame], ToolResult]:
    """ranx ``ndcg@k-l{level}``: labels below ``level`` give no gain, run and ideal alike."""

    def run(log: pl.DataFrame) -> ToolResult:
        per_query = {}
        for query, rows in rows_of(log).items():
            if not _judged(rows):
                continue
            kept = [(i, s, lab if lab is not None and lab >= level else 0) for i, s, lab in rows]
            per_query[query] = trec_ndcg(kept, k)
        return ToolResult(per_query, _mean(per_query))

    return run


def recommenders_ndcg(k: int) -> Tool:
    """Recommenders 1.1 ``ndcg_at_k``: a hit is a recommended item in ``rating_true`` (whatever
    its rating), ``dcg = Σ 1/ln(1 + rank)`` over the hits in the top k, ``idcg`` the same over
    ``min(k, |rating_true|)`` ranks."""

    def run(log: pl.DataFrame) -> ToolResult:
        per_query = {}
        for query, rows in rows_of(log).items():
            truth = {item for item, _, label in rows if label is not None}
            ranked = [item for item, _, _ in _trec_order(rows)][:k]
            dcg = sum(1 / math.log1p(r) for r, item in enumerate(ranked, 1) if item in truth)
            idcg = sum(1 / math.log1p(r) for r in range(1, min(k, len(truth)) + 1))
            per_query[query] = dcg / idcg
        return ToolResult(per_query, _mean(per_query))

    return run


def ranking_metrics_torch_ndcg(k: int) -> Tool:
    """ranking-metrics-torch ``ndcg_at`` before the fix of its issue #1 (largest k below the
    list's length): the normalizing gains are the top-k labels of the ranking, sorted."""

    def run(log: pl.DataFrame) -> ToolResult:
        per_query = {}
        for query, rows in rows_of(log).items():
            top = [float(label or 0) for _, _, label in _trec_order(rows)][:k]
            dcg = sum(g * _log2_discount(r) for r, g in enumerate(top, 1))
            ideal = sum(g * _log2_discount(r) for r, g in enumerate(sorted(top, reverse=True), 1))
            per_query[query] = dcg / ideal if ideal > 0 else 0.0
        return ToolResult(per_query, _mean(per_query))

    return run


def map_at_k(k: int, *, min_k_r: bool) -> Tool:
    """AP@k: precision at each relevant row of the first k, over R (trec_eval ``map_cut_k``,
    trectools ``get_map(depth=k)``) or over ``min(R, k)`` (Spark ``meanAveragePrecisionAt``,
    Recommenders ``map_at_k``, trectools #36's proposal)."""

    def measure(rows: Sequence[Row]) -> float:
        relevant = {item for item, _, label in rows if label is not None and label >= 1}
        found, total = 0, 0.0
        for rank, (item, _, _) in enumerate(_trec_order(rows)[:k], start=1):
            if item in relevant:
                found += 1
                total += found / rank
        divisor = min(len(relevant), k) if min_k_r else len(relevant)
        return total / divisor if divisor else 0.0

    return trec_eval_tool(measure)


def input_order(measure: Callable[..., float]) -> Callable[[pl.DataFrame], ToolResult]:
    """What pytrec_eval #56's user expected: ties kept in the order the run lists them."""

    def run(log: pl.DataFrame) -> ToolResult:
        per_query = {}
        for query, rows in rows_of(log).items():
            listed = [row for row in rows if row[1] is not None]
            order = sorted(listed, key=lambda row: -(row[1] or 0.0))  # stable: input order
            per_query[query] = measure(rows, order=order)
        return ToolResult(per_query, _mean(per_query))

    return run


def trec_ndcg_tool_at(k: int) -> Callable[[pl.DataFrame], ToolResult]:
    """trec_eval ``ndcg_cut_k``, averaged as trec_eval does."""
    return trec_eval_tool(lambda rows: trec_ndcg(rows, k))
