"""trec_eval 10's gain measures: ``binG``, ``G``, ``ndcg_rel``, ``Rndcg``, ``rbp_resid``.

Each follows its ``m_*.c`` file line for line, with trec_eval's default gains (the label when
positive, else 0: ``ctx.gain``). The ideal ordering is every judged row with a positive gain,
gain descending (``ctx.ideal_rank``), retrieved or not. Notation below: ``rank`` is the
1-based rank of a retrieved row, ``P`` the number of judged rows with a positive gain,
``DCG(c)`` / ``IDCG(c)`` the run's / the ideal list's DCG through position ``c`` (discount
``log2(position + 1)``; ``IDCG`` stops growing past ``P``, ``DCG`` past the last retrieved row).

* ``binG`` (``m_binG.c``): ``(1/R) Σ_{relevant retrieved} 1 / log2(2 + non-relevant rows
  above)``, counting unjudged rows as non-relevant; 0 when none is retrieved.
* ``G`` (``m_G.c``): ``Σ_{retrieved, gain > 0} gain / log2(2 + C(rank) − S(rank))`` over the
  total ideal gain, with ``S(rank)`` the run's gain through ``rank`` and ``C(rank)`` the sum of
  ``max(ideal gain_j, 1)`` over ideal positions ``j <= rank`` (trec_eval's ``min_cost`` of 1
  past the ideal list); 0 when the ideal gain is 0.
* ``ndcg_rel`` (``m_ndcg_rel.c``): the mean of ``DCG(rank) / IDCG(min(rank, P))`` over the
  ``P`` positive-gain rows, an unretrieved one taking ``DCG(end) / IDCG(P)``; 0 when that
  sum is 0. "Relevant" is gain > 0 here, ``relevance_level`` does not apply.
* ``Rndcg`` (``m_Rndcg.c``): the mean of ``DCG(c) / IDCG(c)`` over the cutoffs ``c`` at which
  the ideal gain changes (one per distinct positive gain: the number of rows with at least
  that gain), plus ``DCG(end) / IDCG(P)`` when more than ``P + 1`` rows are retrieved
  (trec_eval's loop adds that point only then); 0 when the query has no relevant row
  (``label >= relevance_level``), as trec_eval returns before computing.
* ``rbp_resid`` (``m_rbp_resid.c``): ``p^n + (1 − p) Σ_{retrieved unjudged} p^(rank − 1)``
  with ``n`` the number of retrieved rows, 0 when no retrieved row is unjudged (null or
  negative label); ``p = 0.9`` by default, as ``rbp``.

Under ``ties="expected"`` only ``rbp_resid`` has a closed form (it is linear in per-position
terms); the others depend on the rows above each position and are refused.
"""

from __future__ import annotations

import polars as pl

from polars_rankeval._engine.context import RankingContext
from polars_rankeval._engine.exact_sum import exact_sum
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.metrics._base import (
    JUDGMENT_COVERAGE,
    Lookup,
    Metric,
    Partials,
    named,
    no_closed_form,
    num_rel_partial,
    ratio_or_zero,
)
from polars_rankeval.metrics.user_model import _number


def _log2_discount(position: pl.Expr) -> pl.Expr:
    return 1.0 / (position.cast(pl.Float64) + 1.0).log(2.0)


def _at_position(ctx: RankingContext, terms: pl.Expr, order: pl.Expr, position: pl.Expr) -> pl.Expr:
    """``Σ`` of ``terms`` over the rows whose ``order`` is ``<= position``, for each row.

    The terms are sorted by ``order`` (rows without one last, where their terms must be 0)
    and cumulated once per list; each row then reads the cumulative sum at its own
    ``position`` (1-based; null gives null). A positional lookup rather than a running sum,
    because the position comes from another ordering (e.g. the ideal list read at a run rank).
    """
    cumulated = terms.sort_by(order, nulls_last=True).cum_sum()
    return ctx.over(cumulated.gather(position.cast(pl.Int64) - 1))


def _positive_gain(ctx: RankingContext) -> pl.Expr:
    return ctx.gain > 0


def _ideal_term(ctx: RankingContext) -> pl.Expr:
    # ctx.ideal_rank is null outside the ideal list (gain 0), whose terms are then 0.
    return (ctx.gain * _log2_discount(ctx.ideal_rank)).fill_null(0.0)


def _run_term(ctx: RankingContext) -> pl.Expr:
    return pl.when(ctx.retrieved).then(ctx.gain * _log2_discount(ctx.rank)).otherwise(0.0)


def bin_g() -> Metric:
    """trec_eval ``binG``: binary gain over ``log2(2 + non-relevant rows above)``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": "q",
    ...         "item": ["a", "b", "c"],
    ...         "score": [3.0, 2.0, 1.0],
    ...         "relevance": [0, 1, 1],
    ...     }
    ... )
    >>> # b and c have one non-relevant row above: (1/log2(3) + 1/log2(3)) / 2
    >>> round(rke.evaluate(log, ["binG"]).item(), 4)
    0.6309
    """

    def partials(ctx: RankingContext) -> Partials:
        no_closed_form(ctx, "binG")
        nonrel_above = (ctx.rank.cast(pl.Int64) - ctx.relevant_rank.cast(pl.Int64)).cast(pl.Float64)
        term = 1.0 / (2.0 + nonrel_above).log(2.0)
        return {"bing_sum": exact_sum(term, ctx.relevant & ctx.retrieved), **num_rel_partial(ctx)}

    return Metric("binG", partials, lambda p: ratio_or_zero(p("bing_sum"), p("num_rel")))


def g() -> Metric:
    """trec_eval ``G``: each gain over ``log2(2 + ideal cost so far − gain so far)``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {"query": "q", "item": ["a", "b"], "score": [2.0, 1.0], "relevance": [1, 2]}
    ... )
    >>> # ideal gains 2, 1: a adds 1/log2(2 + 2 - 1), b adds 2/log2(2 + 3 - 3); over 3
    >>> round(rke.evaluate(log, ["G"]).item(), 4)
    0.877
    """

    def rows(ctx: RankingContext) -> dict[str, pl.Expr]:
        no_closed_form(ctx, "G")
        # trec_eval charges at least min_cost = 1 per ideal position, 1 past the ideal list.
        cost = pl.max_horizontal(ctx.gain, pl.lit(1.0))
        return {
            "g_cost": _at_position(ctx, cost, ctx.ideal_rank, ctx.rank),
            "g_gain_so_far": ctx.running_sum(pl.when(ctx.retrieved).then(ctx.gain).otherwise(0.0)),
        }

    def partials(ctx: RankingContext) -> Partials:
        term = ctx.gain / (2.0 + ctx.extra["g_cost"] - ctx.extra["g_gain_so_far"]).log(2.0)
        counted = ctx.retrieved & _positive_gain(ctx)
        return {"g_sum": exact_sum(term, counted), "ideal_gain": ctx.gain.sum()}

    return Metric("G", partials, lambda p: ratio_or_zero(p("g_sum"), p("ideal_gain")), rows=rows)


def _dcg_rows(ctx: RankingContext) -> dict[str, pl.Expr]:
    """The run's DCG through each row's rank and the ideal DCG at that rank."""
    return {
        "trec_dcg_through": ctx.running_sum(_run_term(ctx)),
        "trec_idcg_at_rank": _at_position(ctx, _ideal_term(ctx), ctx.ideal_rank, ctx.rank),
    }


def _totals(ctx: RankingContext) -> Partials:
    return {
        "trec_dcg_all": exact_sum(_run_term(ctx)),
        "trec_idcg_all": exact_sum(_ideal_term(ctx)),
        "num_positive_gain": _positive_gain(ctx).sum().cast(pl.Float64),
    }


def ndcg_rel() -> Metric:
    """trec_eval ``ndcg_rel``: ndcg averaged over the positive-gain rows.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": "q",
    ...         "item": ["a", "b", "c"],
    ...         "score": [2.0, 1.0, None],
    ...         "relevance": [0, 1, 1],
    ...     }
    ... )
    >>> # b: DCG(2)/IDCG(2); c unretrieved: DCG(end)/IDCG(2); both 0.6309/1.6309
    >>> round(rke.evaluate(log, ["ndcg_rel"]).item(), 4)
    0.3869
    """

    def rows(ctx: RankingContext) -> dict[str, pl.Expr]:
        no_closed_form(ctx, "ndcg_rel")
        return _dcg_rows(ctx)

    def partials(ctx: RankingContext) -> Partials:
        ratio = ctx.extra["trec_dcg_through"] / ctx.extra["trec_idcg_at_rank"]
        counted = ctx.retrieved & _positive_gain(ctx)
        return {
            "ndcg_rel_sum": exact_sum(ratio, counted),
            "num_positive_gain_ret": counted.sum().cast(pl.Float64),
            **_totals(ctx),
        }

    def value(p: Lookup) -> pl.Expr:
        positives = p("num_positive_gain")
        # Unretrieved positive-gain rows each count DCG(end) / IDCG(P).
        unretrieved = (positives - p("num_positive_gain_ret")) * ratio_or_zero(
            p("trec_dcg_all"), p("trec_idcg_all")
        )
        total = p("ndcg_rel_sum") + unretrieved
        return pl.when(total > 0).then(total / positives).otherwise(0.0)

    return Metric("ndcg_rel", partials, value, rows=rows)


def rndcg() -> Metric:
    """trec_eval ``Rndcg``: ndcg averaged at the cutoffs where the ideal gain changes.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": "q",
    ...         "item": ["a", "b", "c"],
    ...         "score": [3.0, 2.0, 1.0],
    ...         "relevance": [1, 2, 0],
    ...     }
    ... )
    >>> # cutoffs 1 (gain 2 → 1) and 2 (gain 1 → 0): (0.5 + (1 + 2/log2(3)) / (2 + 1/log2(3))) / 2
    >>> round(rke.evaluate(log, ["Rndcg"]).item(), 4)
    0.6799
    """

    def rows(ctx: RankingContext) -> dict[str, pl.Expr]:
        no_closed_form(ctx, "Rndcg")
        # The last ideal position of each gain level: the number of rows with at least that
        # gain ("max" rank of the gain among the positive-gain rows).
        level_end = ctx.over(
            pl.when(_positive_gain(ctx)).then(ctx.gain).rank("max", descending=True)
        )
        return {
            "rndcg_cutoff": pl.when(level_end == ctx.ideal_rank).then(level_end),
            "rndcg_dcg_at_cutoff": _at_position(ctx, _run_term(ctx), ctx.rank, level_end),
            "rndcg_idcg_at_cutoff": _at_position(ctx, _ideal_term(ctx), ctx.ideal_rank, level_end),
        }

    def partials(ctx: RankingContext) -> Partials:
        at_level_end = ctx.extra["rndcg_cutoff"].is_not_null()
        ratio = ctx.extra["rndcg_dcg_at_cutoff"] / ctx.extra["rndcg_idcg_at_cutoff"]
        return {
            "rndcg_sum": exact_sum(ratio, at_level_end),
            "rndcg_points": at_level_end.sum().cast(pl.Float64),
            "num_ret": ctx.retrieved.sum(),
            **num_rel_partial(ctx),
            **_totals(ctx),
        }

    def value(p: Lookup) -> pl.Expr:
        # trec_eval adds the end of the run as a point only when its loop over the run
        # outlasts the ideal list by two rows: more than P + 1 rows retrieved.
        end_point = p("num_ret").cast(pl.Float64) > p("num_positive_gain") + 1.0
        end_ratio = p("trec_dcg_all") / p("trec_idcg_all")
        total = p("rndcg_sum") + pl.when(end_point).then(end_ratio).otherwise(0.0)
        points = p("rndcg_points") + end_point.cast(pl.Float64)
        return pl.when(p("num_rel") > 0).then(total / points).otherwise(0.0)

    return Metric("Rndcg", partials, value, rows=rows)


def rbp_resid(*, p: float = 0.9) -> Metric:
    """trec_eval ``rbp_resid``: the RBP residual of the unjudged retrieved rows and the tail.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {"query": "q", "item": ["a", "b"], "score": [2.0, 1.0], "relevance": [1, None]}
    ... )
    >>> # 0.9^2 + 0.1 * 0.9^1
    >>> round(rke.evaluate(log, ["rbp_resid"]).item(), 4)
    0.9
    """
    persistence = _number("p", p, low=0.0)
    if persistence >= 1:
        msg = f"option p= must be in (0, 1), got {p!r}"
        raise InvalidOptionError(msg)
    name = named("rbp_resid", {"p": f"{persistence:g}"} if persistence != 0.9 else {})
    key = name + "_sum"

    def unjudged(ctx: RankingContext) -> pl.Expr:
        return (ctx.retrieved & ~ctx.judged).cast(pl.Float64)

    def rows(ctx: RankingContext) -> dict[str, pl.Expr]:
        if ctx.expected:
            # Linear in per-position terms: each tied row carries its group's unjudged share.
            return {"rbp_resid_weight": ctx.tie_groups("rbp_resid").spread(unjudged(ctx))}
        return {}

    def partials(ctx: RankingContext) -> Partials:
        weight = ctx.extra["rbp_resid_weight"] if ctx.expected else unjudged(ctx)
        decay = pl.lit(persistence).pow(ctx.rank.cast(pl.Float64) - 1.0)
        return {
            key: exact_sum(weight * decay, ctx.retrieved),
            "num_unjudged_ret": unjudged(ctx).sum(),
            "num_ret": ctx.retrieved.sum(),
        }

    def value(values: Lookup) -> pl.Expr:
        tail = pl.lit(persistence).pow(values("num_ret").cast(pl.Float64))
        residual = tail + (1.0 - persistence) * values(key)
        return pl.when(values("num_unjudged_ret") > 0).then(residual).otherwise(0.0)

    # The residual is the RBP mass left to unjudged rows: less is a more certain score.
    return Metric(name, partials, value, rows=rows, direction="lower", tie_bounds=JUDGMENT_COVERAGE)
