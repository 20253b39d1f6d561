"""Where the relevant rows sit: ``frp`` (first relevant position) and ``mean_rank``.

* ``frp``: the rank of the first relevant row. ``frp@k`` gives ``k + 1`` when no relevant row
  is in the top ``k``; uncut ``frp`` gives ``n + 1`` (``n`` = rows retrieved) when no relevant
  row is retrieved.
* ``mean_rank``: the mean rank of the query's ``R`` relevant rows, where a relevant row that is
  not retrieved (or, for ``mean_rank@k``, not in the top ``k``) counts as ``n + 1`` (``k + 1``).

Lower is better for both. A query with no relevant row (``R = 0``) has no position to report:
its value is null and the mean over queries leaves it out (``num_q`` still counts it).

Under ``ties="expected"`` both are expectations over the orderings of tied rows: a tie group of
``t`` rows holding ``r`` relevant ones after ``c`` rows puts its first relevant row at
``c + (t + 1)/(r + 1)`` on average (PyKEEN's "realistic" rank for ``r = 1``).
"""

from __future__ import annotations

import polars as pl

from polars_rankeval._engine.context import RankingContext
from polars_rankeval._engine.exact_sum import exact_sum
from polars_rankeval.metrics._base import Lookup, Metric, Partials, at, check_cutoff, hits_partial


def _beyond(ctx: RankingContext, k: int | None) -> pl.Expr:
    """The position given to a relevant row outside the (cut) list: ``k + 1`` or ``n + 1``."""
    return pl.lit(float(k + 1)) if k is not None else ctx.retrieved.sum().cast(pl.Float64) + 1.0


def first_relevant_position(k: int | None = None) -> Metric:
    """``frp`` / ``frp@k``."""
    k = check_cutoff(k, "frp", required=False)
    key = at("frp", k)

    def partials(ctx: RankingContext) -> Partials:
        beyond = _beyond(ctx, k)
        common = {"num_rel": ctx.relevant.sum(), at("frp_beyond", k): beyond}
        if not ctx.expected:
            first = (ctx.relevant_rank == 1).fill_null(value=False) & ctx.within(k)
            found = ctx.rank.cast(pl.Float64).filter(first)
            return {**common, key: found.sum(), at("frp_found", k): found.len()}
        tie = ctx.tie_groups("frp")
        first_group = (tie.relevant > 0) & (tie.relevant_above == 0) & ctx.retrieved
        start = tie.start.cast(pl.Float64)
        if k is None:
            size, rel = tie.size.cast(pl.Float64), tie.relevant.cast(pl.Float64)
            # one term per row of the group, each carrying 1/t of the group's expectation
            term = (start + (size + 1.0) / (rel + 1.0)) / size
            in_group = term.filter(first_group)
            return {**common, key: in_group.sum(), at("frp_found", k): in_group.len()}
        # E[min(X, k + 1)] = Σ_{m=0..k} P(X > m): 1 up to the group's start, then the chance
        # that the group's first positions hold no relevant row.
        head = pl.min_horizontal(start, pl.lit(float(k))) + 1.0
        head_once = exact_sum(head / tie.size.cast(pl.Float64), first_group)
        tail = exact_sum(tie.none_through, first_group & ctx.within(k))
        return {
            **common,
            key: head_once + tail,
            at("frp_found", k): first_group.sum(),
        }

    def value(p: Lookup) -> pl.Expr:
        found = p(key).cast(pl.Float64)
        return (
            pl.when(p("num_rel") == 0)
            .then(None)
            .when(p(at("frp_found", k)) > 0)
            .then(found)
            .otherwise(p(at("frp_beyond", k)))
        )

    # Uncut, a query with nothing relevant retrieved scores n + 1: a shorter list scores better.
    return Metric(key, partials, value, direction="lower", depth_sensitive=k is None)


def mean_rank(k: int | None = None) -> Metric:
    """``mean_rank`` / ``mean_rank@k``."""
    k = check_cutoff(k, "mean_rank", required=False)
    key = at("rank_sum", k)
    hits_key = at("hits", k)

    def partials(ctx: RankingContext) -> Partials:
        in_list = ctx.rel_weight * ctx.rank.cast(pl.Float64)
        return {
            key: in_list.filter(ctx.within(k)).sum(),
            **hits_partial(ctx, k),
            "num_rel": ctx.relevant.sum(),
            at("frp_beyond", k): _beyond(ctx, k),
        }

    def value(p: Lookup) -> pl.Expr:
        num_rel = p("num_rel").cast(pl.Float64)
        missing = num_rel - p(hits_key).cast(pl.Float64)
        total = p(key) + missing * p(at("frp_beyond", k))
        return pl.when(num_rel > 0).then(total / num_rel)

    # Uncut, a relevant row not retrieved counts as n + 1: a shorter list scores better.
    return Metric(at("mean_rank", k), partials, value, direction="lower", depth_sensitive=k is None)
