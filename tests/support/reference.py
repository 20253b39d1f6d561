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

import itertools
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


# ---------------------------------------------------------------------------------------------
# More metrics: mar, err, rbp, infAP, frp, mean_rank and the DCG variants.
# Plain functions of a ``Query``, written from the metric definitions (Chapelle et al. 2009 for
# ERR, trec_eval's ``m_rbp.c`` / ``gain_init.c`` for rbp, ``m_infap.c`` for infAP).
# ---------------------------------------------------------------------------------------------

INFAP_EPSILON = 0.00001  # trec_eval's INFAP_EPSILON


def mean_average_recall(q: Query, k: int | None) -> float:
    """``Σ_{relevant i ≤ k} recall@i / R = Σ_{relevant i ≤ k} hits@i / R²``; 0 when ``R = 0``."""
    if not q.num_rel:
        return 0.0
    total = 0.0
    for i in range(q.top(k)):
        if q.is_rel(q.label_at(i)):
            recall_at_i = q.hits(i + 1) / q.num_rel
            total += recall_at_i
    return total / q.num_rel


def err(
    q: Query,
    k: int | None,
    *,
    transform: str = "exp",
    max_grade: int = 4,
    alpha: float = 1.0,
    beta: float = 0.0,
) -> float:
    """Expected reciprocal rank: ``Σ_r (1/r) R_r Π_{i<r} (1 − R_i)`` over the top ``k``."""
    total = 0.0
    not_stopped = 1.0
    for i in range(q.top(k)):
        label = q.label_at(i)
        grade = float(label) if label is not None and label > 0 else 0.0
        if transform == "exp":
            grade = min(grade, float(max_grade))
            stop = (2.0**grade - 1.0) / 2.0**max_grade
        else:
            stop = 1.0 / (1.0 + math.exp(-alpha * (grade - beta)))
        total += not_stopped * stop / (i + 1)
        not_stopped *= 1.0 - stop
    return total


def rbp(q: Query, *, p: float = 0.9, gain: str = "trec") -> float:
    """Rank-biased precision ``(1 − p) Σ_i g_i p^(i−1)`` over the whole ranking.

    ``gain="trec"``: trec_eval's gains are the label values ``0..max`` of the query's judged
    rows (retrieved or not), rescaled to ``[0, 1]`` when the largest is above 1 (whatever the
    relevance level). ``gain="binary"``: 1 per relevant row. ``gain="raw"``: the label of a
    relevant row, unscaled (ranx drops the labels below its ``rel_lvl``).
    """
    judged = [label for label in q.labels.values() if label >= 0]
    top_label = max(judged) if judged else 0
    total = 0.0
    for i in range(len(q.ranking)):
        label = q.label_at(i)
        if gain == "binary":
            g = 1.0 if q.is_rel(label) else 0.0
        elif gain == "raw":
            g = q.gain(label) if q.is_rel(label) else 0.0
        else:
            g = q.gain(label)
            if gain == "trec" and top_label > 1:
                g /= top_label
        total += g * p**i
    return (1.0 - p) * total


def infap(q: Query) -> float:
    """trec_eval ``infAP``, a transcription of ``te_calc_infap`` (``m_infap.c``).

    A retrieved row without a label is outside the pool (skipped, but it still takes a rank);
    a negative label is in the pool but unjudged.
    """
    nonrel_so_far = rel_so_far = pool_unjudged_so_far = 0
    inf_ap = 0.0
    for j in range(len(q.ranking)):
        label = q.label_at(j)
        if label is None:
            continue
        if label < 0:
            pool_unjudged_so_far += 1
            continue
        if label < q.level:
            nonrel_so_far += 1
            continue
        rel_so_far += 1
        if j == 0:
            inf_ap += 1.0
        else:
            fj = float(j)
            inf_ap += 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * (
                (rel_so_far - 1 + nonrel_so_far + pool_unjudged_so_far) / fj
            ) * (
                (rel_so_far - 1 + INFAP_EPSILON)
                / (rel_so_far - 1 + nonrel_so_far + 2 * INFAP_EPSILON)
            )
    return inf_ap / q.num_rel if q.num_rel else inf_ap


def _beyond(q: Query, k: int | None) -> int:
    """The position of a relevant row outside the (cut) list: ``k + 1``, or ``n + 1`` uncut."""
    return len(q.ranking) + 1 if k is None else k + 1


def first_relevant_position(q: Query, k: int | None) -> float | None:
    """Rank of the first relevant row in the top ``k``, else ``k + 1`` (``n + 1`` uncut).

    None when the query has no relevant row.
    """
    if not q.num_rel:
        return None
    for i in range(q.top(k)):
        if q.is_rel(q.label_at(i)):
            return float(i + 1)
    return float(_beyond(q, k))


def mean_rank(q: Query, k: int | None) -> float | None:
    """Mean rank of the ``R`` relevant rows; those not in the top ``k`` count as ``k + 1``.

    Uncut, relevant rows not retrieved count as ``n + 1``. None when ``R = 0``.
    """
    if not q.num_rel:
        return None
    rank_of = {item: i + 1 for i, item in enumerate(q.ranking)}
    positions = []
    for item, label in q.labels.items():
        if not q.is_rel(label):
            continue
        rank = rank_of.get(item)
        in_list = rank is not None and (k is None or rank <= k)
        positions.append(rank if in_list else _beyond(q, k))
    return sum(positions) / len(positions)


def variant_gain(label: int | None, gain: str | dict[int, float], unmapped: str = "label") -> float:
    """Gain of a label: linear, exp (``2^l − 1``) or a mapping; null labels give 0.

    A mapping overrides the gain of the labels it names (negative ones too, as ir_measures'
    ``nDCG(gains=...)``); another label keeps its own value when positive, as trec_eval's
    ``gain_init.c`` (``unmapped="label"``), or gets 0 (``unmapped="zero"``).
    """
    if label is None:
        return 0.0
    if isinstance(gain, dict):
        if label in gain:
            return float(gain[label])
        return float(label) if unmapped == "label" and label > 0 else 0.0
    if label <= 0:
        return 0.0
    return float(label) if gain == "linear" else 2.0**label - 1.0


def variant_discount(position: int, log_base: float, discount: str) -> float:
    """Discount at 1-based ``position``: ``1/log_b(i + 1)``, or Järvelin's ``1/log_b(i)``."""
    if discount == "jarvelin":
        return 1.0 if position == 1 else 1.0 / math.log(position, log_base)
    return 1.0 / math.log(position + 1, log_base)


def dcg_variant(
    q: Query,
    k: int | None,
    *,
    gain: str | dict[int, float] = "linear",
    log_base: float = 2,
    discount: str = "log",
    unmapped: str = "label",
) -> float:
    """DCG over the top ``k`` with the given gain and discount."""
    return sum(
        variant_gain(q.label_at(i), gain, unmapped) * variant_discount(i + 1, log_base, discount)
        for i in range(q.top(k))
    )


def ndcg_variant(
    q: Query,
    k: int | None,
    *,
    gain: str | dict[int, float] = "linear",
    log_base: float = 2,
    discount: str = "log",
    ideal: str = "judged",
    unmapped: str = "label",
) -> float:
    """``dcg@k / idcg@k`` (0 when the ideal is 0).

    The ideal ranks the positive gains of every judged row (``ideal="judged"``) or of the
    retrieved rows only (``ideal="retrieved"``), best first, cut at ``k``.
    """
    if ideal == "retrieved":
        pool = [q.labels.get(item) for item in q.ranking]
    else:
        pool = list(q.labels.values())  # negative labels have gain 0 unless mapped
    gains = sorted((variant_gain(label, gain, unmapped) for label in pool), reverse=True)
    gains = [g for g in gains if g > 0][:k] if k is not None else [g for g in gains if g > 0]
    ideal_dcg = sum(g * variant_discount(i + 1, log_base, discount) for i, g in enumerate(gains))
    if ideal_dcg <= 0:
        return 0.0
    dcg = dcg_variant(q, k, gain=gain, log_base=log_base, discount=discount, unmapped=unmapped)
    return dcg / ideal_dcg


def queries(
    rows: Iterable[Row], *, relevance_level: int = 1, missing_queries: str = "skip"
) -> dict[Any, Query]:
    """``{query: Query}`` for the evaluated queries (the selection rule of :func:`per_query`)."""
    grouped: dict[Any, list[tuple[Any, float | None, int | None]]] = {}
    for query, item, score, relevance in rows:
        grouped.setdefault(query, []).append((item, score, relevance))
    result: dict[Any, Query] = {}
    for query, query_rows in grouped.items():
        has_label = any(label is not None for _, _, label in query_rows)
        has_retrieved = any(score is not None for _, score, _ in query_rows)
        if not has_label or (missing_queries == "skip" and not has_retrieved):
            continue
        result[query] = Query(query_rows, relevance_level)
    return result


# ---------------------------------------------------------------------------------------------
# Tie orderings: every ranking consistent with the scores, for ties="expected".
# ---------------------------------------------------------------------------------------------


def tie_orderings(
    rows: Sequence[tuple[Any, float | None, int | None]],
) -> list[list[tuple[Any, float | None, int | None]]]:
    """Every ordering of the tied retrieved rows of one query, as rows with distinct scores.

    Rows tied on score are permuted in every way; the result gives the retrieved rows scores
    ``n, n-1, ..., 1`` in that order (so any tie-break is moot) and keeps the unretrieved rows
    as they are. Two orderings that differ only by swapping rows with the same label give the
    same value for every metric, so each distinct label sequence of a group is listed once:
    every such sequence stands for the same number of permutations, so the plain mean over
    the list is the mean over all permutations.
    """
    retrieved = [row for row in rows if row[1] is not None]
    unretrieved = [row for row in rows if row[1] is None]
    groups: dict[float, list[tuple[Any, float | None, int | None]]] = {}
    for row in retrieved:
        groups.setdefault(float(row[1]), []).append(row)  # type: ignore[arg-type]
    per_group: list[list[tuple[tuple[Any, float | None, int | None], ...]]] = []
    for score in sorted(groups, reverse=True):
        seen: dict[tuple[Any, ...], tuple[tuple[Any, float | None, int | None], ...]] = {}
        for perm in itertools.permutations(groups[score]):
            key = tuple(("none",) if label is None else ("label", label) for _, _, label in perm)
            seen.setdefault(key, perm)
        per_group.append(list(seen.values()))
    n = len(retrieved)
    orderings = []
    for combination in itertools.product(*per_group):
        ranked = [row for group in combination for row in group]
        rescored = [(item, float(n - i), label) for i, (item, _, label) in enumerate(ranked)]
        orderings.append(rescored + unretrieved)
    return orderings
