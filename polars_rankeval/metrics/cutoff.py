"""Set-based measures over the top ``k``: precision, recall, success, hits, F1, judged, R-precision.

All count rows in the top ``k``; as in trec_eval, a list shorter than ``k`` is padded with
non-relevant rows (``p@k`` always divides by ``k``).
"""

from __future__ import annotations

import polars as pl

from polars_rankeval.context import RankingContext
from polars_rankeval.metrics._base import (
    Lookup,
    Metric,
    Partials,
    at,
    check_cutoff,
    hits_partial,
    num_rel_partial,
    ratio_or_zero,
)


def _cutoff(k: int | None, name: str) -> int:
    checked = check_cutoff(k, name, required=True)
    assert checked is not None  # required=True never returns None
    return checked


def precision(k: int) -> Metric:
    """``p@k = hits@k / k`` (trec_eval ``P_k``)."""
    k = _cutoff(k, "p")
    key = at("hits", k)
    return Metric(at("p", k), lambda ctx: hits_partial(ctx, k), lambda p: p(key) / k)


def hits(k: int) -> Metric:
    """``hits@k``: relevant rows in the top ``k``."""
    k = _cutoff(k, "hits")
    key = at("hits", k)
    return Metric(at("hits", k), lambda ctx: hits_partial(ctx, k), lambda p: p(key))


def recall(k: int) -> Metric:
    """``recall@k = hits@k / R``, 0 when ``R = 0`` (trec_eval ``recall_k``)."""
    k = _cutoff(k, "recall")
    key = at("hits", k)
    return Metric(
        at("recall", k),
        lambda ctx: {**hits_partial(ctx, k), **num_rel_partial(ctx)},
        lambda p: ratio_or_zero(p(key), p("num_rel")),
    )


def success(k: int, *, name: str = "success") -> Metric:
    """``success@k``: 1 if any relevant row is in the top ``k`` (trec_eval ``success_k``).

    Under ``ties="expected"``: ``1 - P(no relevant row in the top k)``. Only the tie group that
    holds rank ``k`` is uncertain; it has no relevant row in its first ``o`` positions with
    probability ``C(t - r, o) / C(t, o)`` (zero if a relevant row sits above the group).
    """
    k = _cutoff(k, name)
    key = at("hits", k)

    def partials(ctx: RankingContext) -> Partials:
        if not ctx.expected:
            return hits_partial(ctx, k)
        tie = ctx.tie_groups(name)
        at_k = (ctx.rank == k).fill_null(value=False) & (tie.relevant_above == 0)
        return {
            at("p_none", k): tie.none_through.filter(at_k).sum(),
            "num_ret": ctx.retrieved.sum(),
            "num_rel_ret": (ctx.relevant & ctx.retrieved).sum(),
        }

    def value(p: Lookup) -> pl.Expr:
        # Under trec ties only "hits@k" exists; under expected ties only the others do.
        return (p(key) > 0).cast(pl.Float64)

    def expected_value(p: Lookup) -> pl.Expr:
        return (
            pl.when(p("num_ret") >= k)
            .then(1.0 - p(at("p_none", k)))
            .otherwise((p("num_rel_ret") > 0).cast(pl.Float64))
        )

    return Metric(at(name, k), partials, value, expected_value=expected_value)


def f1(k: int) -> Metric:
    """``f1@k = 2·p@k·recall@k / (p@k + recall@k) = 2·hits@k / (k + R)``; 0 when no hit."""
    k = _cutoff(k, "f1")
    key = at("hits", k)
    return Metric(
        at("f1", k),
        lambda ctx: {**hits_partial(ctx, k), **num_rel_partial(ctx)},
        lambda p: (2.0 * p(key)) / (k + p("num_rel")),
    )


def judged(k: int) -> Metric:
    """``judged@k``: rows in the top ``k`` that carry a non-negative label, divided by ``k``.

    Equals ``min(k, n)/k - unj_k`` of trec_eval, where ``n`` is the list length.
    """
    k = _cutoff(k, "judged")

    def partials(ctx: RankingContext) -> Partials:
        return {at("judged", k): ctx.judged_weight.filter(ctx.within(k)).sum()}

    return Metric(at("judged", k), partials, lambda p: p(at("judged", k)) / k)


def r_precision() -> Metric:
    """``hits@R / R`` with ``R`` relevant rows; 0 when ``R = 0`` (trec_eval ``Rprec``)."""

    def partials(ctx: RankingContext) -> Partials:
        in_top_r = (ctx.rank <= ctx.num_rel).fill_null(value=False)
        return {"hits@R": ctx.rel_weight.filter(in_top_r).sum(), **num_rel_partial(ctx)}

    return Metric("r_precision", partials, lambda p: ratio_or_zero(p("hits@R"), p("num_rel")))
