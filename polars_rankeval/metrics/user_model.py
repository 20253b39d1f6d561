"""User-model measures: expected reciprocal rank (``err@k``) and rank-biased precision (``rbp``).

ERR (Chapelle et al. 2009): ``ERR@k = Σ_{r ≤ k} (1/r) · R_r · Π_{i<r} (1 − R_i)`` where ``R_i``
is the probability that the row at rank ``i`` satisfies the user:

* ``transform="exp"`` (default): ``R = (2^g − 1) / 2^max_grade`` with ``g`` the label clipped to
  ``[0, max_grade]`` (null and negative labels give 0). ``max_grade`` defaults to 4, the value
  gdeval.pl and ir_measures use; it may be at most 1023, as ``2^1024`` overflows Float64.
* ``transform="sigmoid"``: ``R = 1 / (1 + e^(−alpha·(g − beta)))`` (``alpha=1``, ``beta=0`` by
  default), applied to every retrieved row with null/negative labels read as 0.

RBP (Moffat & Zobel 2008): ``RBP = (1 − p) Σ_i g_i · p^(i−1)`` over the whole run, with the
unseen tail contributing nothing, ``p = 0.9`` by default (trec_eval). Gains:

* ``gain="trec"`` (default, trec_eval 10 ``rbp``): the label when positive, divided by the
  query's largest judged label when that is above 1 (trec_eval normalises gains to [0, 1] per
  query);
* ``gain="binary"``: 1 for relevant rows (``label >= relevance_level``), else 0;
* ``gain="raw"``: the label of relevant rows as is (ranx; can exceed 1).
"""

from __future__ import annotations

import math
from typing import Literal

import polars as pl

from polars_rankeval._engine.context import RankingContext
from polars_rankeval._engine.exact_sum import exact_sum
from polars_rankeval._engine.options import check_choice
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.metrics._base import (
    Metric,
    Partials,
    at,
    check_cutoff,
    named,
    no_closed_form,
)

ErrTransform = Literal["exp", "sigmoid"]
# 2.0 ** 1024 overflows Float64 (Python raises OverflowError), so max_grade stays below.
_MAX_GRADE_LIMIT = 1023
# Below log(5e-324), the smallest subnormal: exp of anything at or under it is 0.0 exactly.
_LOG_ZERO = -746.0
RbpGain = Literal["trec", "binary", "raw"]


def _number(option: str, value: object, *, low: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        msg = f"option {option}= must be a finite number, got {value!r}"
        raise InvalidOptionError(msg)
    if low is not None and value <= low:
        msg = f"option {option}= must be > {low:g}, got {value!r}"
        raise InvalidOptionError(msg)
    return float(value)


def err(
    k: int | None = None,
    *,
    transform: ErrTransform = "exp",
    max_grade: int = 4,
    alpha: float = 1.0,
    beta: float = 0.0,
) -> Metric:
    """Expected reciprocal rank, optionally cut at ``k``."""
    k = check_cutoff(k, "err", required=False)
    transform = check_choice("transform", transform, ["exp", "sigmoid"])
    if isinstance(max_grade, bool) or not isinstance(max_grade, int) or max_grade < 1:
        msg = f"option max_grade= must be a positive int, got {max_grade!r}"
        raise InvalidOptionError(msg)
    if max_grade > _MAX_GRADE_LIMIT:
        msg = (
            f"option max_grade= of 'err' must be at most {_MAX_GRADE_LIMIT} (2^max_grade "
            f"overflows Float64 above it), got {max_grade}"
        )
        raise InvalidOptionError(msg)
    alpha, beta = _number("alpha", alpha), _number("beta", beta)
    shown: dict[str, object] = {}
    if transform != "exp":
        shown |= {"transform": transform, "alpha": f"{alpha:g}", "beta": f"{beta:g}"}
    elif max_grade != 4:
        shown["max_grade"] = max_grade
    settings = named("", shown)
    name = at("err", k) + settings
    stop_key = "err_stop" + settings
    before_key = "err_continue_before" + settings

    def satisfaction(ctx: RankingContext) -> pl.Expr:
        grade = ctx.label.fill_null(0).clip(lower_bound=0).cast(pl.Float64)
        if transform == "sigmoid":
            return 1.0 / (1.0 + (-alpha * (grade - beta)).exp())
        grade = grade.clip(upper_bound=float(max_grade))
        return (pl.lit(2.0).pow(grade) - 1.0) / 2.0**max_grade

    def rows(ctx: RankingContext) -> dict[str, pl.Expr]:
        no_closed_form(ctx, "err")
        stop = pl.when(ctx.retrieved).then(satisfaction(ctx))
        # R rounds to 1.0 for a large grade (exp with max_grade >= 54, sigmoid from about
        # alpha·(g - beta) = 37): log(0) = -inf, and through - log_continue below would be
        # -inf - -inf = NaN. A finite floor keeps the subtraction exact enough and still makes
        # every later row's product exp(...) = 0, the user having stopped for certain.
        log_continue = (1.0 - stop).log().clip(lower_bound=_LOG_ZERO)
        # Π_{i<r} (1 − R_i) as exp of an exclusive running sum of logs (R < 1 always).
        through = ctx.running_sum(log_continue)
        return {stop_key: stop, before_key: (through - log_continue).exp()}

    def partials(ctx: RankingContext) -> Partials:
        rank = ctx.rank.cast(pl.Float64)
        term = ctx.extra[stop_key] * ctx.extra[before_key] / rank
        return {name: exact_sum(term, ctx.within(k))}

    return Metric(name, partials, lambda p: p(name), rows=rows)


def rbp(*, p: float = 0.9, gain: RbpGain = "trec") -> Metric:
    """Rank-biased precision with persistence ``p`` (trec_eval 10 ``rbp``)."""
    persistence = _number("p", p, low=0.0)
    if persistence >= 1:
        msg = f"option p= must be in (0, 1), got {p!r}"
        raise InvalidOptionError(msg)
    gain = check_choice("gain", gain, ["trec", "binary", "raw"])
    shown: dict[str, object] = {}
    if persistence != 0.9:
        shown["p"] = f"{persistence:g}"
    if gain != "trec":
        shown["gain"] = gain
    name = named("rbp", shown)
    gain_key = "rbp_gain" + named("", {"gain": gain})

    def row_gain(ctx: RankingContext) -> pl.Expr:
        if gain == "binary":
            return ctx.relevant.cast(pl.Float64)
        if gain == "raw":
            return pl.when(ctx.relevant).then(ctx.gain).otherwise(0.0)
        scale = pl.max_horizontal(ctx.max_label.cast(pl.Float64).fill_null(1.0), pl.lit(1.0))
        return ctx.gain / scale

    def rows(ctx: RankingContext) -> dict[str, pl.Expr]:
        if ctx.expected:
            return {gain_key: ctx.tie_groups("rbp").spread(row_gain(ctx))}
        return {}

    def partials(ctx: RankingContext) -> Partials:
        weight = ctx.extra[gain_key] if ctx.expected else row_gain(ctx)
        decay = pl.lit(persistence).pow(ctx.rank.cast(pl.Float64) - 1.0)
        return {name: exact_sum(weight * decay, ctx.retrieved)}

    return Metric(name, partials, lambda values: (1.0 - persistence) * values(name), rows=rows)
