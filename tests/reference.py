"""Brute-force reference implementation of every metric, independent of polars_rankeval.

Plain Python loops over dicts, written from trec_eval's C sources (``form_res_rels.c``,
``m_P.c``, ``m_map.c``, ``m_ndcg.c``, ``m_bpref.c`` ...), not from the package. It is the
oracle for the metrics pytrec_eval lacks (``hits@k``, ``f1@k``, ``judged@k``, ``dcg``,
``mrr@k``, ``hit_rate@k``) and a second opinion on the rest.

Input rows are ``(query, item, score, relevance)`` tuples:

* ``score is None``: judged but not retrieved (counts for R and the ideal DCG, never ranked);
* ``relevance is None``: retrieved but unjudged (not relevant, not judged);
* ``relevance < 0``: pooled but unjudged, as trec_eval: not relevant, not in R, gain 0,
  skipped by bpref, unjudged for ``judged@k``.

Ranking: score descending, ties broken by ``str(item)`` descending in byte order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

Row = tuple[Any, Any, float | None, int | None]

#: metric families with a required cutoff, one with an optional cutoff, and without
REQUIRED_CUTOFF = ("p", "recall", "success", "hit_rate", "hits", "f1", "judged")
OPTIONAL_CUTOFF = ("map", "mrr", "ndcg", "dcg")
NO_CUTOFF = ("r_precision", "bpref", "num_ret", "num_rel", "num_rel_ret", "num_q")
#: metrics summed (not averaged) over queries, and those whose values are integers
SUMMED = ("num_ret", "num_rel", "num_rel_ret", "num_q")
INTEGER_VALUED = ("hits", *SUMMED)


def all_metrics(cutoffs: Sequence[int]) -> list[str]:
    """Every metric string, each cutoff family at every cutoff."""
    names: list[str] = []
    for k in cutoffs:
        names += [f"{family}@{k}" for family in (*REQUIRED_CUTOFF, *OPTIONAL_CUTOFF)]
    names += list(OPTIONAL_CUTOFF)
    names += list(NO_CUTOFF)
    return names


def trec_sort_key(item: Any, score: float) -> tuple[float, bytes]:
    """Key whose *descending* order is trec_eval's order (score, then docno, both descending)."""
    return (score, str(item).encode("utf-8"))


class Query:
    """One query's judgments and ranking, with every metric as a plain loop."""

    def __init__(self, rows: Iterable[tuple[Any, float | None, int | None]], level: int) -> None:
        self.level = level
        # item -> label, for every row that has a label (negative ones included)
        self.labels: dict[Any, int] = {}
        retrieved: list[tuple[Any, float]] = []
        for item, score, label in rows:
            if label is not None:
                self.labels[item] = label
            if score is not None:
                retrieved.append((item, score))
        retrieved.sort(key=lambda pair: trec_sort_key(*pair), reverse=True)
        self.ranking: list[Any] = [item for item, _ in retrieved]
        # R: relevant judged items, retrieved or not
        self.num_rel = sum(1 for label in self.labels.values() if self.is_rel(label))

    # -- per-item predicates ----------------------------------------------------------------
    def is_rel(self, label: int | None) -> bool:
        return label is not None and label >= 0 and label >= self.level

    def is_judged(self, label: int | None) -> bool:
        return label is not None and label >= 0

    def label_at(self, position: int) -> int | None:
        """Label of the item at 0-based ``position`` of the ranking (None if unjudged)."""
        return self.labels.get(self.ranking[position])

    @staticmethod
    def gain(label: int | None) -> float:
        return float(label) if label is not None and label > 0 else 0.0

    def top(self, k: int | None) -> int:
        """How many ranked positions the cutoff ``k`` covers."""
        return len(self.ranking) if k is None else min(k, len(self.ranking))

    # -- metrics ---------------------------------------------------------------------------
    def hits(self, k: int | None) -> int:
        return sum(1 for i in range(self.top(k)) if self.is_rel(self.label_at(i)))

    def precision(self, k: int) -> float:
        return self.hits(k) / k

    def recall(self, k: int) -> float:
        return self.hits(k) / self.num_rel if self.num_rel else 0.0

    def success(self, k: int) -> float:
        return 1.0 if self.hits(k) > 0 else 0.0

    def f1(self, k: int) -> float:
        # 2 P R / (P + R) with P = h/k, R = h/num_rel  ==  2h / (k + num_rel); 0 when h = 0
        h = self.hits(k)
        if h == 0:
            return 0.0
        p = h / k
        r = h / self.num_rel
        return 2 * p * r / (p + r)

    def judged(self, k: int) -> float:
        return sum(1 for i in range(self.top(k)) if self.is_judged(self.label_at(i))) / k

    def average_precision(self, k: int | None) -> float:
        total = 0.0
        rel_so_far = 0
        for i in range(self.top(k)):
            if self.is_rel(self.label_at(i)):
                rel_so_far += 1
                total += rel_so_far / (i + 1)
        return total / self.num_rel if self.num_rel else 0.0

    def reciprocal_rank(self, k: int | None) -> float:
        for i in range(self.top(k)):
            if self.is_rel(self.label_at(i)):
                return 1.0 / (i + 1)
        return 0.0

    def r_precision(self) -> float:
        if not self.num_rel:
            return 0.0
        return self.hits(self.num_rel) / self.num_rel

    def dcg(self, k: int | None) -> float:
        total = 0.0
        for i in range(self.top(k)):
            g = self.gain(self.label_at(i))
            if g > 0:
                total += g / math.log2(i + 2)
        return total

    def ideal_dcg(self, k: int | None) -> float:
        gains = sorted((self.gain(label) for label in self.labels.values()), reverse=True)
        gains = [g for g in gains if g > 0]
        if k is not None:
            gains = gains[:k]
        return sum(g / math.log2(i + 2) for i, g in enumerate(gains))

    def ndcg(self, k: int | None) -> float:
        ideal = self.ideal_dcg(k)
        return self.dcg(k) / ideal if ideal > 0 else 0.0

    def bpref(self) -> float:
        # m_bpref.c: judged non-relevant = label in [0, level)
        n_nonrel = sum(
            1 for label in self.labels.values() if self.is_judged(label) and not self.is_rel(label)
        )
        total = 0.0
        nonrel_so_far = 0
        for i in range(len(self.ranking)):
            label = self.label_at(i)
            if not self.is_judged(label):
                continue  # unjudged (null or negative label): skipped
            if self.is_rel(label):
                if nonrel_so_far > 0:
                    total += 1.0 - min(nonrel_so_far, self.num_rel) / min(n_nonrel, self.num_rel)
                else:
                    total += 1.0
            else:
                nonrel_so_far += 1
        return total / self.num_rel if self.num_rel else 0.0

    def value(self, metric: str) -> float | int:
        """Value of one metric string (``"ndcg@10"``, ``"map"`` ...)."""
        name, _, k_text = metric.partition("@")
        k = int(k_text) if k_text else None
        if name in REQUIRED_CUTOFF and k is None:
            raise ValueError(metric)
        dispatch: dict[str, Any] = {
            "p": lambda: self.precision(k),
            "recall": lambda: self.recall(k),
            "success": lambda: self.success(k),
            "hit_rate": lambda: self.success(k),
            "hits": lambda: self.hits(k),
            "f1": lambda: self.f1(k),
            "judged": lambda: self.judged(k),
            "map": lambda: self.average_precision(k),
            "mrr": lambda: self.reciprocal_rank(k),
            "ndcg": lambda: self.ndcg(k),
            "dcg": lambda: self.dcg(k),
            "r_precision": self.r_precision,
            "bpref": self.bpref,
            "num_ret": lambda: len(self.ranking),
            "num_rel": lambda: self.num_rel,
            "num_rel_ret": lambda: self.hits(None),
            "num_q": lambda: 1,
        }
        return dispatch[name]()


def per_query(
    rows: Iterable[Row],
    metrics: Sequence[str],
    *,
    relevance_level: int = 1,
    missing_queries: str = "skip",
) -> dict[Any, dict[str, float | int]]:
    """``{query: {metric: value}}`` over the evaluated queries.

    A query is evaluated when it has at least one label (negative labels count) and, with
    ``missing_queries="skip"``, at least one retrieved row (trec_eval without ``-c``).
    """
    grouped: dict[Any, list[tuple[Any, float | None, int | None]]] = {}
    for query, item, score, relevance in rows:
        grouped.setdefault(query, []).append((item, score, relevance))
    result: dict[Any, dict[str, float | int]] = {}
    for query, query_rows in grouped.items():
        has_label = any(label is not None for _, _, label in query_rows)
        has_retrieved = any(score is not None for _, score, _ in query_rows)
        if not has_label or (missing_queries == "skip" and not has_retrieved):
            continue
        q = Query(query_rows, relevance_level)
        result[query] = {metric: q.value(metric) for metric in metrics}
    return result


def summary(
    values: dict[Any, dict[str, float | int]], metrics: Sequence[str]
) -> dict[str, float | int | None]:
    """Means over queries (sums for ``num_*``); a mean over no query is None."""
    out: dict[str, float | int | None] = {}
    for metric in metrics:
        column = [row[metric] for row in values.values()]
        if metric in SUMMED:
            out[metric] = sum(column)
        else:
            out[metric] = sum(column) / len(column) if column else None
    return out
