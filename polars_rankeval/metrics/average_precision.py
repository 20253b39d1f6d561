"""Rank-position measures: average precision, reciprocal rank and mean average recall.

``map``, ``map@k`` (trec_eval ``map``, ``map_cut_k``), ``mrr``, ``mrr@k`` (``recip_rank``)
and ``mar``, ``mar@k``.
"""

from __future__ import annotations

from typing import Literal

import polars as pl

from polars_rankeval._engine.context import (
    ITEM_ASC_RANK,
    RankingContext,
    TieOrder,
    check_tie_order,
    item_ascending_later_rows,
    item_ascending_rows,
)
from polars_rankeval._engine.exact_sum import exact_sum
from polars_rankeval._engine.options import check_choice
from polars_rankeval.metrics._base import (
    Lookup,
    Metric,
    NonPositiveScores,
    Partials,
    at,
    check_cutoff,
    check_nonpositive_scores,
    counted_rows,
    hits_key,
    hits_partial,
    named,
    no_closed_form,
    num_rel_partial,
    ratio_or_zero,
)


def hits_at_own_rank(ctx: RankingContext) -> pl.Expr:
    """``rel_i · hits@i`` per retrieved row: the relevant count at or above a relevant row.

    Under ``ties="expected"`` its expectation (McSherry & Najork 2008): for offset ``j`` in a
    tie group of size ``t`` with ``r`` relevant rows and ``R_<`` relevant rows above it,
    ``(r/t) · (R_< + 1 + j·(r - 1)/(t - 1))`` (the fraction is 0 when ``t = 1``).
    """
    if not ctx.expected:
        return ctx.relevant_rank.cast(pl.Float64).fill_null(0.0)
    tie = ctx.tie_groups("map")
    size, rel = tie.size.cast(pl.Float64), tie.relevant.cast(pl.Float64)
    others = pl.when(size > 1).then(tie.offset * (rel - 1.0) / (size - 1.0)).otherwise(0.0)
    return ctx.rel_weight * (tie.relevant_above.cast(pl.Float64) + 1.0 + others)


APDenominator = Literal["R", "min_k_R", "hits"]


def average_precision(
    k: int | None = None,
    *,
    denominator: APDenominator = "R",
    nonpositive_scores: NonPositiveScores = "keep",
) -> Metric:
    """AP over the top ``k``: ``(1/D) Σ_{relevant i ≤ k} hits@i / i``; 0 when ``D = 0``.

    ``denominator``: ``"R"`` (default) divides by all ``R`` relevant rows, retrieved or not, as
    trec_eval ``map`` / ``map_cut_k`` and ranx; ``"min_k_R"`` by ``min(k, R)`` (Spark
    ``meanAveragePrecisionAt``, Recommenders ``map_at_k``); ``"hits"`` by the relevant rows
    retrieved in the top ``k`` (torchmetrics).

    ``nonpositive_scores="nonrelevant"``: a row scored ``<= 0`` is not relevant, neither in the
    sum nor in a ``"hits"`` denominator (torchmetrics >= 1.8); it keeps its rank.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {"query": "q", "item": ["a", "b", "c"], "score": [2.0, 1.0, -1.0], "relevance": 1}
    ... )
    >>> # torchmetrics: c (score -1) is not relevant; a and b give AP (1/1 + 2/2) / 2 = 1.
    >>> map_tm = rke.metrics.average_precision(denominator="hits", nonpositive_scores="nonrelevant")
    >>> rke.evaluate(log, ["map", map_tm]).row(0)
    (1.0, 1.0)
    >>> rke.evaluate(log, ["map"], convention="torchmetrics").row(0)
    (1.0,)
    """
    k = check_cutoff(k, "map", required=False)
    denominator = check_choice("denominator", denominator, ["R", "min_k_R", "hits"])
    nonpositive_scores = check_nonpositive_scores(nonpositive_scores)
    shown: dict[str, object] = {}
    if denominator != "R":
        shown["denominator"] = denominator
    if nonpositive_scores != "keep":
        shown["nonpositive_scores"] = nonpositive_scores
    suffix = named("", shown)
    key = at("ap_sum", k) + named(
        "", {"nonpositive_scores": nonpositive_scores} if nonpositive_scores != "keep" else {}
    )
    hits = hits_key(k, nonpositive_scores)

    def partials(ctx: RankingContext) -> Partials:
        term = hits_at_own_rank(ctx) / ctx.rank.cast(pl.Float64)
        rows = ctx.within(k) & counted_rows(ctx, nonpositive_scores)
        extra = hits_partial(ctx, k, nonpositive_scores) if denominator == "hits" else {}
        return {key: exact_sum(term, rows), **num_rel_partial(ctx), **extra}

    def value(p: Lookup) -> pl.Expr:
        if denominator == "hits":
            return ratio_or_zero(p(key), p(hits))
        if denominator == "min_k_R" and k is not None:
            return ratio_or_zero(p(key), pl.min_horizontal(p("num_rel"), pl.lit(k)))
        return ratio_or_zero(p(key), p("num_rel"))

    return Metric(at("map", k) + suffix, partials, value)


def mean_average_recall(k: int | None = None) -> Metric:
    """AR over the top ``k``: ``Σ_{i ≤ k} recall@i · rel_i / R = (1/R²) Σ_{relevant i ≤ k} hits@i``.

    0 when ``R = 0``.
    """
    k = check_cutoff(k, "mar", required=False)
    key = at("ar_sum", k)

    def partials(ctx: RankingContext) -> Partials:
        return {key: exact_sum(hits_at_own_rank(ctx), ctx.within(k)), **num_rel_partial(ctx)}

    def value(p: Lookup) -> pl.Expr:
        return ratio_or_zero(p(key), p("num_rel") * p("num_rel"))

    return Metric(at("mar", k), partials, value)


def reciprocal_rank(
    k: int | None = None,
    *,
    tie_order: TieOrder = "item_desc",
    nonpositive_scores: NonPositiveScores = "keep",
) -> Metric:
    """``1 / rank`` of the first relevant row if it is within the top ``k``, else 0.

    ``mrr`` equals trec_eval ``recip_rank``; ``mrr@k`` equals it under ``-M k``. Under
    ``ties="expected"``: the first tie group holding a relevant row has its first relevant row
    at offset ``i`` with probability ``C(t-r, i)/C(t, i) · r/(t-i)``.

    ``tie_order="item_asc"`` breaks tied scores by item **ascending**, as the MS MARCO
    evaluation script behind ir_measures' ``RR@k`` (ignored under ``ties="expected"``).
    ``nonpositive_scores="nonrelevant"``: a row scored ``<= 0`` is not relevant (torchmetrics
    >= 1.8 ``retrieval_reciprocal_rank``).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {"query": "q", "item": ["a", "b", "c"], "score": 1.0, "relevance": [1, 0, 0]}
    ... )
    >>> # All tied: trec_eval ranks c, b, a (item descending); MS MARCO a, b, c.
    >>> rke.evaluate(log, ["mrr@10", "mrr@10(tie_order=item_asc)"]).row(0)
    (0.3333333333333333, 1.0)
    """
    k = check_cutoff(k, "mrr", required=False)
    tie_order = check_tie_order(tie_order)
    nonpositive_scores = check_nonpositive_scores(nonpositive_scores)
    shown: dict[str, object] = {}
    if tie_order != "item_desc":
        shown["tie_order"] = tie_order
    if nonpositive_scores != "keep":
        shown["nonpositive_scores"] = nonpositive_scores
    name = at("mrr", k) + named("", shown)
    key = at("rr", k) + named("", shown)
    first_key = at("first_rank", None) + named("", shown)

    def item_asc(ctx: RankingContext) -> bool:
        return tie_order == "item_asc" and not ctx.expected

    def partials(ctx: RankingContext) -> Partials:
        counted = counted_rows(ctx, nonpositive_scores)
        if ctx.expected:
            tie = ctx.tie_groups("mrr")
            first_group = (tie.relevant > 0) & (tie.relevant_above == 0)
            size, rel = tie.size.cast(pl.Float64), tie.relevant.cast(pl.Float64)
            p_first = tie.none_before * rel / (size - tie.offset)
            term = p_first / ctx.rank.cast(pl.Float64)
            return {key: exact_sum(term, first_group & ctx.within(k) & counted)}
        if item_asc(ctx):
            # The first relevant row under the other order: the smallest such rank.
            ranks = ctx.extra[ITEM_ASC_RANK].filter(ctx.relevant & ctx.retrieved & counted)
            return {first_key: ranks.min()}
        first_hit = (ctx.relevant_rank == 1).fill_null(value=False) & ctx.within(k) & counted
        return {key: (1.0 / ctx.rank.cast(pl.Float64)).filter(first_hit).sum()}

    def value(p: Lookup) -> pl.Expr:
        return p(key)

    def item_asc_value(p: Lookup) -> pl.Expr:
        first = p(first_key).cast(pl.Float64)
        inside = first.is_not_null() if k is None else (first <= k)
        return pl.when(inside).then(1.0 / first).otherwise(0.0)

    return Metric(
        name,
        partials,
        item_asc_value if tie_order == "item_asc" else value,
        rows=lambda ctx: item_ascending_rows(ctx) if item_asc(ctx) else {},
        later_rows=lambda ctx: item_ascending_later_rows(ctx) if item_asc(ctx) else {},
        expected_value=value if tie_order == "item_asc" else None,
    )


_INFAP_EPSILON = 0.00001  # trec_eval's INFAP_EPSILON


def inferred_average_precision() -> Metric:
    """trec_eval ``infAP`` (Yilmaz & Aslam 2006), exactly as ``m_infap.c``.

    For a relevant row at 0-based position ``j > 0`` with ``r`` relevant, ``nr`` judged
    non-relevant and ``u`` pooled-but-unjudged (negative label) rows above it, the term is
    ``1/(j+1) + (j/(j+1)) · ((r + nr + u)/j) · ((r + ε)/(r + nr + 2ε))``; position 0 gives 1.
    Rows outside the pool (null label) are skipped but still count in ``j``. The sum is divided
    by ``R``.
    """

    def partials(ctx: RankingContext) -> Partials:
        no_closed_form(ctx, "infap")
        j = ctx.rank.cast(pl.Float64) - 1.0
        rel_above = ctx.relevant_rank.cast(pl.Float64) - 1.0
        nonrel_above = (ctx.judged_rank - ctx.relevant_rank).cast(pl.Float64)
        unjudged_above = (ctx.labelled_rank - ctx.judged_rank).cast(pl.Float64)
        eps = _INFAP_EPSILON
        later = 1.0 / (j + 1.0) + (j / (j + 1.0)) * (
            (rel_above + nonrel_above + unjudged_above) / j
        ) * ((rel_above + eps) / (rel_above + nonrel_above + 2 * eps))
        term = pl.when(j == 0).then(1.0).otherwise(later)
        return {
            "infap_sum": exact_sum(term, ctx.relevant & ctx.retrieved),
            **num_rel_partial(ctx),
        }

    return Metric("infap", partials, lambda p: ratio_or_zero(p("infap_sum"), p("num_rel")))
