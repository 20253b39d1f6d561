"""Propensity-scored precision and nDCG for long-tailed labels (Jain, Prabhu & Varma, KDD 2016).

Extreme multi-label evaluation rewards rare relevant items more than frequent ones: each item
(label) ``l`` gets the inverse propensity of Jain et al. 2016 (eq. 7), from its frequency in the
training data::

    w_l = 1 + C * (N_l + B) ** (-A),    C = (ln N - 1) * (B + 1) ** A

with ``N`` the number of training instances (the distinct queries of ``train=``) and ``N_l``
the number of them holding ``l`` (the distinct train queries with the item; 0 if absent).
``A``/``B`` are ``a``/``b`` here: 0.55/1.5 by default, 0.5/0.4 for Wikipedia-LSHTC
(``preset="wikipedia"``), 0.6/2.6 for Amazon (``preset="amazon"``), as pyxclib documents them.

The values are pyxclib's (kunaldahiya/pyxclib ``xclib/evaluation/xc_metrics.py``:
``compute_inv_propesity``, ``psprecision``, ``psndcg``), which divide the run's score by the
best any ranking of the true labels can reach, *over the whole test set*::

    psp@k    = sum_q (1/k) sum_{r <= k} w_(q,r) y_(q,r)  /  sum_q (1/k) sum_{j <= k} w*_(q,j)
    psndcg@k = sum_q DCG_w(q) / I(q)                     /  sum_q DCG_w*(q) / I(q)

where ``y`` is relevance at rank ``r`` (label >= the relevance level), ``w*_(q,j)`` the
``j``-th largest weight among the query's relevant items (retrieved or not), ``DCG_w`` sums
``w y / log2(r + 1)`` over the top ``k`` and ``I(q) = sum_{j <= min(|y_q|, k)} 1 / log2(j + 1)``
is the plain ideal DCG of the query's number of relevant items. Both are therefore per-system
metrics (a ratio of sums over queries): ``per_query=True`` leaves them out. A query without a
relevant item adds nothing to either sum; a query the run retrieves nothing for only counts when
its rows are in the log (``missing_queries="zero"``), as pyxclib counts every test instance.
pyxclib's ``N`` counts every training instance, also those without a label, which a train
table of (query, item) rows cannot hold: pass such instances' count through ``a``/``b`` only if
they matter.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import polars as pl

from polars_rankeval._engine.context import RankingContext
from polars_rankeval._engine.exact_sum import exact_sum
from polars_rankeval._engine.options import check_choice
from polars_rankeval._engine.tables import POPULARITY, TRAIN_N_USERS, TRAIN_USERS, Tables
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.metrics._base import (
    Lookup,
    Metric,
    Partials,
    at,
    named,
    no_closed_form,
    per_group,
    required_cutoff,
)

Preset = Literal["default", "wikipedia", "amazon"]
#: pyxclib's typical (A, B) per data set (``compute_inv_propesity``'s docstring).
PRESETS: dict[str, tuple[float, float]] = {
    "default": (0.55, 1.5),
    "wikipedia": (0.5, 0.4),
    "amazon": (0.6, 2.6),
}
_NUMERATOR = "run"
_BEST = "best"
_TIE_BOUNDS = (
    "the optimistic and pessimistic orders sort tied rows by label, not by propensity weight, "
    "so they are not this metric's best and worst cases"
)


def _parameters(metric: str, a: float | None, b: float | None, preset: str) -> tuple[float, float]:
    """``(A, B)`` from the preset, overridden by explicit ``a``/``b``; checked."""
    chosen = check_choice("preset", preset, list(PRESETS))
    default_a, default_b = PRESETS[chosen]
    values = {"a": default_a if a is None else a, "b": default_b if b is None else b}
    for option, value in values.items():
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value < 0
        ):
            msg = f"option {option}= of {metric!r} must be a finite number >= 0, got {value!r}"
            raise InvalidOptionError(msg)
    return float(values["a"]), float(values["b"])


def inverse_propensity(a: float, b: float) -> pl.Expr:
    """``w_l = 1 + C (N_l + B)^-A``, ``C = (ln N - 1)(B + 1)^A`` (pyxclib's formula).

    Reads the train popularity columns joined to each row (``N_l``: distinct train queries
    with the item, ``N``: distinct train queries).
    """
    n = pl.col(TRAIN_N_USERS).cast(pl.Float64)
    n_l = pl.col(TRAIN_USERS).cast(pl.Float64)
    c = (n.log() - 1.0) * float((b + 1.0) ** a)
    return 1.0 + c * (n_l + b).pow(-a)


def _shown(metric: str, a: float, b: float, preset: str) -> dict[str, object]:
    """The options that differ from the defaults (``a``/``b`` beside a preset's own)."""
    shown: dict[str, object] = {}
    if preset != "default":
        shown["preset"] = preset
    base_a, base_b = PRESETS[preset]
    if a != base_a:
        shown["a"] = a
    if b != base_b:
        shown["b"] = b
    return shown


def _reduce(frame: pl.LazyFrame, by: Sequence[str], label: str, tables: Tables) -> pl.LazyFrame:
    """Sum the run's and the best ranking's per-query scores, then divide (pyxclib's ratio)."""
    del tables
    value = pl.col(label)
    # order-free sums: a Float64 sum over the queries would change its last bit with the rows'
    # order (tests/metrics/test_order_free.py)
    run = exact_sum(value.struct.field(_NUMERATOR))
    best = exact_sum(value.struct.field(_BEST))
    ratio = pl.when(best > 0).then(run / best)  # no relevant item anywhere: no value
    return per_group(frame, by, ratio.alias(label))


def _family(base: str, k: int, a: float | None, b: float | None, preset: str) -> Metric:
    cutoff = required_cutoff(k, base)
    a_, b_ = _parameters(base, a, b, preset)
    name = named(at(base, cutoff), _shown(base, a_, b_, preset))
    weight_rank = f"{name}:weight_rank"
    ndcg = base == "psndcg"

    def rows(ctx: RankingContext) -> dict[str, pl.Expr]:
        weight = inverse_propensity(a_, b_)
        # the best ranking: the query's relevant items by weight (any order of equal weights
        # gives the same sum)
        ranked = pl.when(ctx.relevant).then(weight).rank("ordinal", descending=True)
        return {weight_rank: ctx.over(ranked)}

    def partials(ctx: RankingContext) -> Partials:
        no_closed_form(ctx, name)
        weight = inverse_propensity(a_, b_)
        top = ctx.within(cutoff) & ctx.relevant
        best_rank = ctx.extra[weight_rank]
        in_best = (best_rank <= cutoff).fill_null(value=False)
        if ndcg:
            run_term = weight / (ctx.rank.cast(pl.Float64) + 1.0).log(2)
            best_term = weight / (best_rank.cast(pl.Float64) + 1.0).log(2)
        else:
            run_term = best_term = weight / cutoff
        return {
            f"{name}:run": exact_sum(run_term, top),
            f"{name}:best": exact_sum(best_term, in_best),
            f"{name}:n_relevant": ctx.relevant.sum().cast(pl.Int64),
        }

    def value(p: Lookup) -> pl.Expr:
        run, best = p(f"{name}:run"), p(f"{name}:best")
        if ndcg:
            # I(q): the plain ideal DCG of min(|y_q|, k) relevant items
            depth = pl.min_horizontal(p(f"{name}:n_relevant"), pl.lit(cutoff))
            ideal = pl.lit(0.0)
            for j in range(1, cutoff + 1):
                ideal = ideal + pl.when(depth >= j).then(1.0 / math.log2(j + 1)).otherwise(0.0)
            run = pl.when(ideal > 0).then(run / ideal).otherwise(0.0)
            best = pl.when(ideal > 0).then(best / ideal).otherwise(0.0)
        return pl.struct(run.alias(_NUMERATOR), best.alias(_BEST))

    return Metric(
        name,
        partials=partials,
        value=value,
        rows=rows,
        level="system",
        reduce=_reduce,
        needs=("train",),
        inputs=(POPULARITY,),
        tie_bounds=_TIE_BOUNDS,
    )


def psp(
    k: int, *, a: float | None = None, b: float | None = None, preset: Preset = "default"
) -> Metric:
    """``psp@k``: propensity-scored precision (Jain et al. 2016), normalised as pyxclib does.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> train = pl.DataFrame({"query": [1, 2, 3, 4, 4], "item": ["a", "a", "a", "a", "b"]})
    >>> log = pl.DataFrame(
    ...     {"query": [9, 9], "item": ["a", "b"], "score": [2.0, 1.0], "relevance": [1, 1]}
    ... )
    >>> # rare b outweighs a: the run's top 1 (a) against the best top 1 (b)
    >>> round(rke.evaluate(log, ["psp@1"], train=train).item(), 6)
    0.901953
    """
    return _family("psp", k, a, b, preset)


def psndcg(
    k: int, *, a: float | None = None, b: float | None = None, preset: Preset = "default"
) -> Metric:
    """``psndcg@k``: propensity-scored nDCG (Jain et al. 2016), normalised as pyxclib does.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> train = pl.DataFrame({"query": [1, 2, 3, 4, 4], "item": ["a", "a", "a", "a", "b"]})
    >>> log = pl.DataFrame(
    ...     {"query": [9, 9], "item": ["b", "a"], "score": [2.0, 1.0], "relevance": [1, 1]}
    ... )
    >>> rke.evaluate(log, ["psndcg@2"], train=train).item()  # b first: the best order
    1.0
    """
    return _family("psndcg", k, a, b, preset)
