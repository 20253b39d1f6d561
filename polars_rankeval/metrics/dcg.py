"""Discounted cumulative gain: ``dcg``, ``dcg@k``, ``ndcg``, ``ndcg@k``.

Linear gain (the label when positive, else 0) and discount ``log2(rank + 1)``, as trec_eval.
The ideal ordering takes every judged row of the query, retrieved or not. ``ndcg@k`` cuts both
the run and the ideal list at ``k`` (trec_eval ``ndcg_cut_k``); uncut ``ndcg`` compares the
whole run with the whole ideal list (trec_eval ``ndcg``). ``relevance_level`` does not apply,
as in trec_eval.
"""

from __future__ import annotations

import polars as pl

from polars_rankeval.context import RankingContext
from polars_rankeval.metrics._base import Metric, Partials, at, check_cutoff, ratio_or_zero


def _discounted(gain: pl.Expr, position: pl.Expr) -> pl.Expr:
    return gain / (position.cast(pl.Float64) + 1.0).log(2)


def _dcg_partial(ctx: RankingContext, k: int | None) -> Partials:
    mask = ctx.within(k) & (ctx.gain > 0)
    return {at("dcg", k): _discounted(ctx.gain, ctx.rank).filter(mask).sum()}


def _idcg_partial(ctx: RankingContext, k: int | None) -> Partials:
    in_ideal = ctx.ideal_rank.is_not_null()
    if k is not None:
        in_ideal = in_ideal & (ctx.ideal_rank <= k).fill_null(value=False)
    return {at("idcg", k): _discounted(ctx.gain, ctx.ideal_rank).filter(in_ideal).sum()}


def dcg(k: int | None = None) -> Metric:
    """``dcg@k = Σ_{i ≤ k} gain_i / log2(i + 1)`` (uncut: trec_eval ``dcg``)."""
    k = check_cutoff(k, "dcg", required=False)
    return Metric(at("dcg", k), lambda ctx: _dcg_partial(ctx, k), lambda p: p(at("dcg", k)))


def ndcg(k: int | None = None) -> Metric:
    """``ndcg@k = dcg@k / idcg@k``; 0 when the query has no positive label."""
    k = check_cutoff(k, "ndcg", required=False)
    return Metric(
        at("ndcg", k),
        lambda ctx: {**_dcg_partial(ctx, k), **_idcg_partial(ctx, k)},
        lambda p: ratio_or_zero(p(at("dcg", k)), p(at("idcg", k))),
    )
