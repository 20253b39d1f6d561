"""The metric abstraction shared by every family module.

A metric is two small expression builders:

* ``partials(ctx)``: named aggregations over one ranked list (``sum``/``min`` of per-row terms
  built from the shared :class:`~polars_rankeval.context.RankingContext`). They are plain
  aggregations, so they stream in a ``group_by``. Metrics that need the same partial (e.g.
  ``p@10``, ``recall@10`` and ``f1@10`` all use ``hits@10``) name it the same way and it is
  computed once.
* ``value(partial)``: the per-query value, an element-wise expression over the partials.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import polars as pl

from polars_rankeval.context import RankingContext
from polars_rankeval.errors import InvalidOptionError

Partials = dict[str, pl.Expr]
Lookup = Callable[[str], pl.Expr]


@dataclass(frozen=True)
class Metric:
    """One metric: its canonical name, its partial aggregations and its per-query value.

    Attributes
    ----------
    name
        Canonical name, e.g. ``"ndcg@10"``.
    partials
        Builds the named aggregations the value needs from the ranking context.
    value
        Builds the per-query value from the aggregated partials.
    summary
        How per-query values combine over queries: ``"mean"`` or ``"sum"`` (trec_eval sums
        the ``num_*`` counts).
    """

    name: str
    partials: Callable[[RankingContext], Partials]
    value: Callable[[Lookup], pl.Expr]
    summary: Literal["mean", "sum"] = "mean"


def check_cutoff(k: object, metric: str, *, required: bool) -> int | None:
    """Validate a rank cutoff: a positive int, or None where the metric allows it."""
    if k is None:
        if required:
            msg = f"metric {metric!r} needs a cutoff k, e.g. '{metric}@10' or {metric}(k=10)"
            raise InvalidOptionError(msg)
        return None
    if isinstance(k, bool) or not isinstance(k, int):
        msg = f"cutoff k for {metric!r} must be a positive int, got {k!r}"
        raise InvalidOptionError(msg)
    if k <= 0:
        msg = f"cutoff k for {metric!r} must be a positive int, got {k}"
        raise InvalidOptionError(msg)
    return k


def at(name: str, k: int | None) -> str:
    """``"ndcg"`` or ``"ndcg@10"``."""
    return name if k is None else f"{name}@{k}"


def ratio_or_zero(numerator: pl.Expr, denominator: pl.Expr) -> pl.Expr:
    """``numerator / denominator``, and 0 where the denominator is 0 (trec_eval's convention)."""
    return (
        pl.when(denominator > 0)
        .then(numerator.cast(pl.Float64) / denominator.cast(pl.Float64))
        .otherwise(0.0)
    )


def num_rel_partial(ctx: RankingContext) -> Partials:
    """``R``: relevant judged rows of the list, retrieved or not."""
    return {"num_rel": ctx.relevant.sum()}


def hits_partial(ctx: RankingContext, k: int | None) -> Partials:
    """Relevant rows retrieved at rank ``<= k`` (whole list when ``k`` is None)."""
    return {at("hits", k): (ctx.relevant & ctx.within(k)).sum()}
