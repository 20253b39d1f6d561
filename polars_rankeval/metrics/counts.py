"""Count measures, summed over queries as trec_eval does.

``num_ret``, ``num_rel``, ``num_rel_ret`` and ``num_q``.
"""

from __future__ import annotations

import polars as pl

from polars_rankeval._engine.context import RankingContext
from polars_rankeval.metrics._base import Metric, Partials, num_rel_partial


def num_ret() -> Metric:
    """Number of retrieved rows (rows with a score)."""

    def partials(ctx: RankingContext) -> Partials:
        return {"num_ret": ctx.retrieved.sum()}

    return Metric(
        "num_ret", partials, lambda p: p("num_ret").cast(pl.Int64), summary="sum", direction="none"
    )


def num_rel() -> Metric:
    """Number of relevant judged rows, retrieved or not (``R``)."""
    return Metric(
        "num_rel",
        num_rel_partial,
        lambda p: p("num_rel").cast(pl.Int64),
        summary="sum",
        direction="none",
    )


def num_rel_ret() -> Metric:
    """Number of relevant rows retrieved."""

    def partials(ctx: RankingContext) -> Partials:
        # Not hits_partial: the count does not depend on how ties are ordered.
        return {"num_rel_ret": (ctx.relevant & ctx.retrieved).sum()}

    return Metric("num_rel_ret", partials, lambda p: p("num_rel_ret").cast(pl.Int64), summary="sum")


def num_q() -> Metric:
    """Number of evaluated queries (1 per query, summed)."""
    return Metric(
        "num_q",
        lambda ctx: {},
        lambda p: pl.lit(1, dtype=pl.Int64),
        summary="sum",
        direction="none",
    )
