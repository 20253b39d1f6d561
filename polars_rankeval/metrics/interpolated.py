"""Interpolated precision at recall levels: trec_eval ``iprec_at_recall`` and ``11pt_avg``.

trec_eval 10 (``m_iprec_at_recall.c``) turns a recall level into a number of relevant rows,
``lround(level * R)`` (v9 and before truncated ``level * R + 0.9``), then walks the ranking
bottom-up keeping the running maximum of the precision; the value is that maximum at the rank
where that many relevant rows have been retrieved, or 0 when fewer are retrieved.
Equivalently: the largest precision ``hits@i / i`` over the ranks ``i`` at which at least that
many relevant rows are retrieved. Between two relevant rows precision only falls, so the
largest is found at a relevant row: one filtered ``max`` over the relevant retrieved rows, a
plain aggregation that streams. A level of 0 takes the largest precision at any rank.

``rounding="v9"`` turns the level into relevant rows the way trec_eval 9 and before did,
``(long) (level * R + 0.9)``: the trec_eval that pytrec_eval bundles, so ir_measures' ``IPrec``
(``convention="ir_measures"`` sets it). The two differ where the fraction of ``level * R`` lies
in ``[0.1, 0.5)``: ``IPrec@0.3`` of a query with R = 7 needs 2 relevant rows in trec_eval 10
and 3 in pytrec_eval.

``11pt_avg`` (``m_11pt_avg.c``) runs the same walk and averages the values over its levels
(default the 11 levels ``0.0, 0.1, ..., 1.0``; trec_eval ``-m 11pt_avg..25,.5,.75``). Metrics
that share a level share its partial, so a sweep of levels and ``11pt_avg`` cost one pass.
The values are added one by one from the highest level down, the order of trec_eval's walk:
a fixed chain of additions, where ``pl.sum_horizontal`` adds in an order that changes with
the engine and the thread count (the last bit of ``11pt_avg`` did); the sum is divided by the
number of levels once (:func:`~polars_rankeval._engine.exact_sum.exact_quotient`), as in C.

Neither has a closed form under ``ties="expected"`` (a maximum): it is refused.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Sequence
from typing import Literal

import polars as pl

from polars_rankeval._engine.context import RankingContext
from polars_rankeval._engine.exact_sum import exact_quotient
from polars_rankeval._engine.options import check_choice
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.metrics._base import Lookup, Metric, Partials, no_closed_form

#: trec_eval's default recall levels. ``i / 10`` is the double nearest to each decimal, the
#: same value as the C literals 0.1, 0.2 ... in ``m_iprec_at_recall.c`` and ``m_11pt_avg.c``.
RECALL_LEVELS: tuple[float, ...] = tuple(i / 10 for i in range(11))

Rounding = Literal["nearest", "v9"]
#: How a recall level becomes a number of relevant rows: trec_eval 10's ``lround(level * R)``
#: or trec_eval 9's ``(long) (level * R + 0.9)`` (pytrec_eval, hence ir_measures).
ROUNDINGS: tuple[Rounding, ...] = ("nearest", "v9")


def check_level(level: object, metric: str) -> float:
    """Validate one recall level: a number in ``[0, 1]``."""
    if level is None:
        msg = f"metric {metric!r} needs a recall level, e.g. {metric}(level=0.5)"
        raise InvalidOptionError(msg)
    if (
        isinstance(level, bool)
        or not isinstance(level, (int, float))
        or not math.isfinite(level)
        or not 0 <= level <= 1
    ):
        msg = f"recall level for {metric!r} must be a number in [0, 1], got {level!r}"
        raise InvalidOptionError(msg)
    return float(level)


def check_levels(levels: object, metric: str) -> list[float]:
    """Validate a non-empty list of distinct recall levels."""
    if isinstance(levels, (str, bytes)) or not isinstance(levels, Sequence) or not levels:
        msg = f"levels= of {metric!r} must be a non-empty list of numbers in [0, 1], got {levels!r}"
        raise InvalidOptionError(msg)
    checked = [check_level(level, metric) for level in levels]
    if len(set(checked)) != len(checked):
        msg = f"levels= of {metric!r} repeats a level: {list(levels)}"
        raise InvalidOptionError(msg)
    return checked


def _key(level: float, rounding: Rounding) -> str:
    return f"iprec_at_recall@{level!r}" + ("" if rounding == "nearest" else f":{rounding}")


def _needed(level: float, num_rel: pl.Expr, rounding: Rounding) -> pl.Expr:
    """The relevant rows that reach ``level``: the same double operations as trec_eval's C."""
    product = pl.lit(level, dtype=pl.Float64) * num_rel.cast(pl.Float64)
    if rounding == "v9":
        # (long) (x + 0.9) truncates; x + 0.9 is positive, so truncation is floor
        return (product + pl.lit(0.9, dtype=pl.Float64)).floor()
    # lround: halves away from zero
    return product.round(0, mode="half_away_from_zero")


def _iprec_partial(ctx: RankingContext, level: float, metric: str, rounding: Rounding) -> Partials:
    no_closed_form(ctx, metric)
    needed = _needed(level, ctx.num_rel, rounding)
    precision = ctx.relevant_rank.cast(pl.Float64) / ctx.rank.cast(pl.Float64)
    counted = ctx.relevant & ctx.retrieved & (ctx.relevant_rank.cast(pl.Float64) >= needed)
    return {_key(level, rounding): precision.filter(counted).max()}


def _iprec_value(partial: Lookup, level: float, rounding: Rounding) -> pl.Expr:
    # No rank reaches the level (fewer relevant rows retrieved, or none): 0.
    return partial(_key(level, rounding)).fill_null(0.0)


def _check_rounding(rounding: object) -> Rounding:
    return check_choice("rounding", rounding, ROUNDINGS)


def iprec_at_recall(
    *, level: float | None = None, rounding: Rounding = "nearest", name: str | None = None
) -> Metric:
    """trec_eval ``iprec_at_recall`` at one recall ``level`` (``iprec_at_recall(level=0.5)``).

    ``rounding="v9"`` counts the relevant rows a level needs as trec_eval 9 and pytrec_eval
    do (``(long) (level * R + 0.9)``); the default is trec_eval 10's ``lround(level * R)``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": "q1",
    ...         "item": ["a", "b", "c", "d", "e", "f"],
    ...         "score": [6.0, 5.0, 4.0, 3.0, 2.0, None],
    ...         "relevance": [1, 0, 0, 1, 1, 1],
    ...     }
    ... )
    >>> # precision at the relevant ranks: a 1/1, d 2/4, e 3/5; R = 4, so recall 0.5 needs
    >>> # 2 relevant rows: max(2/4, 3/5); recall 1 is never reached.
    >>> rke.evaluate(log, ["iprec_at_recall(level=0.5)", "iprec_at_recall(level=1)"]).row(0)
    (0.6, 0.0)
    >>> # recall 0.3 of R = 4: lround(1.2) = 1 relevant row (a, 1/1) in trec_eval 10,
    >>> # (long) (1.2 + 0.9) = 2 (max(2/4, 3/5)) in trec_eval 9 and pytrec_eval
    >>> levels = ["iprec_at_recall(level=0.3)", "iprec_at_recall(level=0.3,rounding=v9)"]
    >>> rke.evaluate(log, levels).row(0)
    (1.0, 0.6)
    """
    checked = check_level(level, "iprec_at_recall")
    how = _check_rounding(rounding)
    shown = "" if how == "nearest" else f",rounding={how}"
    return Metric(
        name or f"iprec_at_recall(level={checked:g}{shown})",
        lambda ctx: _iprec_partial(ctx, checked, "iprec_at_recall", how),
        lambda partial: _iprec_value(partial, checked, how),
    )


def iprec_at_recall_levels(levels: Sequence[float] = RECALL_LEVELS) -> list[Metric]:
    """One :func:`iprec_at_recall` metric per level (default trec_eval's 11); one pass for all.

    Examples
    --------
    >>> [metric.name for metric in iprec_at_recall_levels([0.0, 0.25])]
    ['iprec_at_recall(level=0)', 'iprec_at_recall(level=0.25)']
    """
    return [iprec_at_recall(level=level) for level in check_levels(levels, "iprec_at_recall")]


def eleven_pt_avg(
    *, levels: Sequence[float] = RECALL_LEVELS, rounding: Rounding = "nearest"
) -> Metric:
    """trec_eval ``11pt_avg``: the mean of ``iprec_at_recall`` over ``levels``.

    ``rounding`` as in :func:`iprec_at_recall` (``"v9"``: trec_eval 9's cutoffs).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {"query": "q", "item": ["a", "b"], "score": [2.0, 1.0], "relevance": [0, 1]}
    ... )
    >>> # precision 1/2 at every level up to 1
    >>> rke.evaluate(log, [rke.metrics.eleven_pt_avg(levels=[0.25, 0.5, 0.75])]).item()
    0.5
    """
    checked = check_levels(levels, "11pt_avg")
    how = _check_rounding(rounding)
    shown = [] if tuple(checked) == RECALL_LEVELS else [f"levels={checked}"]
    shown += [] if how == "nearest" else [f"rounding={how}"]
    # trec_eval sorts the levels and adds their values from the highest level down
    walk = sorted(checked, reverse=True)

    def partials(ctx: RankingContext) -> Partials:
        result: Partials = {}
        for level in checked:
            result |= _iprec_partial(ctx, level, "11pt_avg", how)
        return result

    def value(partial: Lookup) -> pl.Expr:
        # a left fold of "+": one fixed order on every engine and thread count
        terms = [_iprec_value(partial, level, how) for level in walk]
        return exact_quotient(functools.reduce(operator.add, terms), len(checked))

    return Metric("11pt_avg" + (f"({','.join(shown)})" if shown else ""), partials, value)
