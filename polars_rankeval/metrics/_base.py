"""The metric abstraction shared by every family module.

A metric is up to three small expression builders:

* ``rows(ctx)`` (optional): metric-specific per-row terms that need a window over the ranked
  list (e.g. ERR's running product). The frame-level path materialises them as columns before
  grouping; inside ``group_by().agg()`` they are inlined. Partials read them from ``ctx.extra``.
* ``partials(ctx)``: named aggregations over one ranked list (``sum``/``min`` of per-row terms
  built from the shared :class:`~polars_rankeval.context.RankingContext`). They are plain
  aggregations, so they stream in a ``group_by``. Metrics that need the same partial (e.g.
  ``p@10``, ``recall@10`` and ``f1@10`` all use ``hits@10``) name it the same way and it is
  computed once.
* ``value(partial)``: the per-query value, an element-wise expression over the partials.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

import polars as pl

from polars_rankeval.context import RankingContext, Ties
from polars_rankeval.errors import InvalidOptionError

Partials = dict[str, pl.Expr]
Lookup = Callable[[str], pl.Expr]
RowTerms = Callable[[RankingContext], dict[str, pl.Expr]]


def _no_rows(ctx: RankingContext) -> dict[str, pl.Expr]:
    return {}


@dataclass(frozen=True)
class Metric:
    """One metric: its name, its per-row terms, its partial aggregations and its value.

    Attributes
    ----------
    name
        Canonical name, e.g. ``"ndcg@10"``; options that differ from the defaults are shown
        in parentheses, e.g. ``"ndcg@10(gain=exp)"``.
    partials
        Builds the named aggregations the value needs from the ranking context.
    value
        Builds the per-query value from the aggregated partials.
    summary
        How per-query values combine over queries: ``"mean"``, ``"sum"`` (trec_eval sums the
        ``num_*`` counts) or ``"nanmean"`` (undefined per-query values are left out).
    rows
        Metric-specific per-row terms (see the module docstring).
    expected_value
        The per-query value under ``ties="expected"`` when its partials differ from the
        trec ones; ``value`` is used otherwise.
    ties
        Tie handling of this metric; None follows the evaluation's ``ties=``.
    later_rows
        Per-row terms that read ``rows``' terms from ``ctx.extra`` (a second window stage).
    """

    name: str
    partials: Callable[[RankingContext], Partials]
    value: Callable[[Lookup], pl.Expr]
    summary: Literal["mean", "sum", "nanmean"] = "mean"
    rows: RowTerms = _no_rows
    expected_value: Callable[[Lookup], pl.Expr] | None = None
    later_rows: RowTerms = _no_rows
    ties: Ties | None = None

    def value_for(self, ctx: RankingContext) -> Callable[[Lookup], pl.Expr]:
        """The value builder that matches the context's tie handling."""
        if ctx.expected and self.expected_value is not None:
            return self.expected_value
        return self.value


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


def named(base: str, options: Mapping[str, object]) -> str:
    """``base`` plus the non-default options, e.g. ``"ndcg@10(gain=exp,log_base=10)"``."""
    if not options:
        return base
    return base + "(" + ",".join(f"{key}={value}" for key, value in options.items()) + ")"


def with_option(name: str, key: str, value: object) -> str:
    """Add one option to a metric name: ``ndcg@10`` → ``ndcg@10(ties=expected)``."""
    if name.endswith(")"):
        return f"{name[:-1]},{key}={value})"
    return f"{name}({key}={value})"


def ratio_or_zero(numerator: pl.Expr, denominator: pl.Expr) -> pl.Expr:
    """``numerator / denominator``, and 0 where the denominator is 0 (trec_eval's convention)."""
    return (
        pl.when(denominator > 0)
        .then(numerator.cast(pl.Float64) / denominator.cast(pl.Float64))
        .otherwise(0.0)
    )


def no_closed_form(ctx: RankingContext, metric: str) -> None:
    """Refuse ``ties="expected"`` for a metric whose expectation has no closed form here."""
    if ctx.expected:
        msg = (
            f"ties='expected' has no closed form for {metric!r}; evaluate it with ties='trec' "
            "(or leave it out of this evaluate call)"
        )
        raise InvalidOptionError(msg)


def num_rel_partial(ctx: RankingContext) -> Partials:
    """``R``: relevant judged rows of the list, retrieved or not."""
    return {"num_rel": ctx.relevant.sum()}


def hits_partial(ctx: RankingContext, k: int | None) -> Partials:
    """Relevant rows retrieved at rank ``<= k`` (whole list when ``k`` is None).

    An integer count under trec ties; its expectation (a float) under ``ties="expected"``.
    """
    if ctx.expected:
        return {at("hits", k): ctx.rel_weight.filter(ctx.within(k)).sum()}
    return {at("hits", k): (ctx.relevant & ctx.within(k)).sum().cast(pl.Int64)}
