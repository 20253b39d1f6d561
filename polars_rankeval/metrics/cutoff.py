"""Set-based measures over the top ``k``: precision, recall, success, hits, F1, judged, R-precision.

All count rows in the top ``k``; as in trec_eval, a list shorter than ``k`` is padded with
non-relevant rows (``p@k`` always divides by ``k``).
"""

from __future__ import annotations

import polars as pl

from polars_rankeval.context import RankingContext
from polars_rankeval.metrics._base import (
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
    return Metric(at("hits", k), lambda ctx: hits_partial(ctx, k), lambda p: p(key).cast(pl.Int64))


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
    """``success@k``: 1 if any relevant row is in the top ``k`` (trec_eval ``success_k``)."""
    k = _cutoff(k, name)
    key = at("hits", k)
    return Metric(
        at(name, k),
        lambda ctx: hits_partial(ctx, k),
        lambda p: (p(key) > 0).cast(pl.Float64),
    )


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
        return {at("judged", k): (ctx.judged & ctx.within(k)).sum()}

    return Metric(at("judged", k), partials, lambda p: p(at("judged", k)) / k)


def r_precision() -> Metric:
    """``hits@R / R`` with ``R`` relevant rows; 0 when ``R = 0`` (trec_eval ``Rprec``)."""

    def partials(ctx: RankingContext) -> Partials:
        in_top_r = (ctx.rank <= ctx.num_rel).fill_null(value=False)
        return {"hits@R": (ctx.relevant & in_top_r).sum(), **num_rel_partial(ctx)}

    return Metric("r_precision", partials, lambda p: ratio_or_zero(p("hits@R"), p("num_rel")))
