"""Interpolated precision at recall levels: trec_eval ``iprec_at_recall`` and ``11pt_avg``.

trec_eval 10 (``m_iprec_at_recall.c``) turns a recall level into a number of relevant rows,
``lround(level * R)`` (v9 and before truncated ``level * R + 0.9``), then walks the ranking
bottom-up keeping the running maximum of the precision; the value is that maximum at the rank
where that many relevant rows have been retrieved, or 0 when fewer are retrieved.
Equivalently: the largest precision ``hits@i / i`` over the ranks ``i`` at which at least that
many relevant rows are retrieved. Between two relevant rows precision only falls, so the
largest is found at a relevant row: one filtered ``max`` over the relevant retrieved rows, a
plain aggregation that streams. A level of 0 takes the largest precision at any rank.

``11pt_avg`` (``m_11pt_avg.c``) runs the same walk and averages the values over its levels
(default the 11 levels ``0.0, 0.1, ..., 1.0``; trec_eval ``-m 11pt_avg..25,.5,.75``). Metrics
that share a level share its partial, so a sweep of levels and ``11pt_avg`` cost one pass.

Neither has a closed form under ``ties="expected"`` (a maximum): it is refused.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import polars as pl

from polars_rankeval.context import RankingContext
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.metrics._base import Lookup, Metric, Partials, no_closed_form

#: trec_eval's default recall levels. ``i / 10`` is the double nearest to each decimal, the
#: same value as the C literals 0.1, 0.2 ... in ``m_iprec_at_recall.c`` and ``m_11pt_avg.c``.
RECALL_LEVELS: tuple[float, ...] = tuple(i / 10 for i in range(11))


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


def _key(level: float) -> str:
    return f"iprec_at_recall@{level!r}"


def _iprec_partial(ctx: RankingContext, level: float, metric: str) -> Partials:
    no_closed_form(ctx, metric)
    # lround: halves away from zero. level * R is the same double product as in C.
    needed = (pl.lit(level, dtype=pl.Float64) * ctx.num_rel.cast(pl.Float64)).round(
        0, mode="half_away_from_zero"
    )
    precision = ctx.relevant_rank.cast(pl.Float64) / ctx.rank.cast(pl.Float64)
    counted = ctx.relevant & ctx.retrieved & (ctx.relevant_rank.cast(pl.Float64) >= needed)
    return {_key(level): precision.filter(counted).max()}


def _iprec_value(partial: Lookup, level: float) -> pl.Expr:
    # No rank reaches the level (fewer relevant rows retrieved, or none): 0.
    return partial(_key(level)).fill_null(0.0)


def iprec_at_recall(*, level: float | None = None, name: str | None = None) -> Metric:
    """trec_eval ``iprec_at_recall`` at one recall ``level`` (``iprec_at_recall(level=0.5)``).

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
    """
    checked = check_level(level, "iprec_at_recall")
    return Metric(
        name or f"iprec_at_recall(level={checked:g})",
        lambda ctx: _iprec_partial(ctx, checked, "iprec_at_recall"),
        lambda partial: _iprec_value(partial, checked),
    )


def iprec_at_recall_levels(levels: Sequence[float] = RECALL_LEVELS) -> list[Metric]:
    """One :func:`iprec_at_recall` metric per level (default trec_eval's 11); one pass for all.

    Examples
    --------
    >>> [metric.name for metric in iprec_at_recall_levels([0.0, 0.25])]
    ['iprec_at_recall(level=0)', 'iprec_at_recall(level=0.25)']
    """
    return [iprec_at_recall(level=level) for level in check_levels(levels, "iprec_at_recall")]


def eleven_pt_avg(*, levels: Sequence[float] = RECALL_LEVELS) -> Metric:
    """trec_eval ``11pt_avg``: the mean of ``iprec_at_recall`` over ``levels``.

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
    shown = "" if tuple(checked) == RECALL_LEVELS else f"(levels={checked})"

    def partials(ctx: RankingContext) -> Partials:
        result: Partials = {}
        for level in checked:
            result |= _iprec_partial(ctx, level, "11pt_avg")
        return result

    def value(partial: Lookup) -> pl.Expr:
        return pl.sum_horizontal([_iprec_value(partial, level) for level in checked]) / len(checked)

    return Metric("11pt_avg" + shown, partials, value)
