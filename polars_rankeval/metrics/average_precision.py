"""Rank-position measures: average precision and reciprocal rank.

``map``, ``map@k`` (trec_eval ``map``, ``map_cut_k``) and ``mrr``, ``mrr@k`` (``recip_rank``).
"""

from __future__ import annotations

import polars as pl

from polars_rankeval.context import RankingContext
from polars_rankeval.metrics._base import (
    Metric,
    Partials,
    at,
    check_cutoff,
    num_rel_partial,
    ratio_or_zero,
)


def average_precision(k: int | None = None) -> Metric:
    """AP over the top ``k``: ``(1/R) Σ_{relevant i ≤ k} hits@i / i``.

    The denominator is all ``R`` relevant rows, retrieved or not, as trec_eval ``map`` and
    ``map_cut_k``; 0 when ``R = 0``.
    """
    k = check_cutoff(k, "map", required=False)
    key = at("ap_sum", k)

    def partials(ctx: RankingContext) -> Partials:
        precision_at_hit = ctx.relevant_rank.cast(pl.Float64) / ctx.rank.cast(pl.Float64)
        in_top = ctx.relevant & ctx.within(k)
        return {key: precision_at_hit.filter(in_top).sum(), **num_rel_partial(ctx)}

    return Metric(at("map", k), partials, lambda p: ratio_or_zero(p(key), p("num_rel")))


def reciprocal_rank(k: int | None = None) -> Metric:
    """``1 / rank`` of the first relevant row if it is within the top ``k``, else 0.

    ``mrr`` equals trec_eval ``recip_rank``; ``mrr@k`` equals it under ``-M k``.
    """
    k = check_cutoff(k, "mrr", required=False)
    key = at("rr", k)

    def partials(ctx: RankingContext) -> Partials:
        first_hit = (ctx.relevant_rank == 1).fill_null(value=False) & ctx.within(k)
        return {key: (1.0 / ctx.rank.cast(pl.Float64)).filter(first_hit).sum()}

    return Metric(at("mrr", k), partials, lambda p: p(key))
