"""C/W/L user-model measures, as cwl-eval 1.0.12 computes them through ir_measures' ``cwl_eval``.

The C/W/L framework (Moffat et al.; Azzopardi, Thomas & Moffat 2019) describes a user who
looks at position ``i`` and then continues to ``i + 1`` with probability ``C_i``. With
``P_i = Π_{j<i} C_j`` (the chance of reaching ``i``) over the ``n = 1000`` positions cwl scores,
``S = Σ_i P_i``, weights ``W_i = P_i / S`` and stopping probabilities ``L_i = P_i − P_{i+1}``:

* ``output="eu"`` (default, the metric): expected utility per item ``Σ W_i g_i``;
* ``"etu"``: expected total utility ``Σ L_i CG_i`` = ``Σ P_i g_i − P_{n+1} CG_n``;
* ``"ec"``: expected cost per item ``Σ W_i c_i`` = 1 (unit costs);
* ``"etc"``: expected total cost ``Σ L_i CC_i`` = ``S − n P_{n+1}``;
* ``"ei"``: expected items ``1 / W_1`` = ``S``.

``eu`` and ``etu`` are "higher is better". ``ec``, ``etc`` and ``ei`` describe the modelled
user's effort and have direction ``"none"``: ``ec`` is 1 for every list under unit costs,
``etc``/``ei`` do not depend on the run for ``insq`` and ``sdcg``, and where they do (the
adaptive models) a short expected visit is good only through the metric's own model.

What ir_measures hands cwl: each judged row's gain ``(clip(max(label, 0), min_rel, max_rel) −
min_rel) / (max_rel − min_rel)``, 0 for an unjudged row (cwl's worst case), unit costs, and
the run cut or padded to 1000 positions (``max_n``); the padding has gain 0. ``max_rel`` has no
default in ir_measures, so it is required here too. The continuations (``T`` is ``t=``):

* ``inst``: ``C_i = ((i + 2T − CG_i − 1) / (i + 2T − CG_i))²`` (Moffat et al. 2015);
* ``insq``: ``C_i = ((i + 2T − 1) / (i + 2T))²``;
* ``bpm@k``: 1 while ``CG_i < T`` and ``i < k``, else 0 (static Bejewelled Player Model);
* ``sdcg@k``: ``log2(i + 1) / log2(i + 2)`` for ``i < k``, else 0 (scaled DCG);
* ``nerr8@k``: ``1 − g_i`` for ``i < k``; ``nerr9@k``: ``i / (i + 1) · (1 − g_i)`` for ``i < k``;
  ``nerr10``: ``p (1 − g_i)``; ``nerr11``: ``((i + 2T − 1) / (i + 2T))² (1 − g_i)``.

The retrieved rows give ``P_i`` by a running sum of ``log C`` (one window); the padding beyond
the list has gain 0, so its ``C`` telescopes and its share of ``S`` and ``P_{n+1}`` has a
closed form: a constant, a geometric sum, or a difference of digamma / trigamma values
(``Σ_{t=a}^{b−1} 1/t = ψ(b) − ψ(a)``, ``Σ_{t=a}^{b−1} 1/t² = ψ'(a) − ψ'(b)``), evaluated by
recurrence plus asymptotic series to the last bits of a double.

Ties: ir_measures orders tied scores by input order; here they follow trec_eval's rule like
every other metric. ``insq`` and ``sdcg`` (a reach that ignores the gains) are linear in the
gains, so ``ties="expected"`` gives each tie group's mean gain to its positions, and
``ties="optimistic"``/``"pessimistic"`` are their best and worst orders (for ``min_rel >= 0``);
the adaptive models refuse both.

Examples
--------
>>> import polars_rankeval as rke
>>> log = pl.DataFrame(
...     {
...         "query": ["q"] * 3,
...         "item": ["a", "b", "c"],
...         "score": [3.0, 2.0, 1.0],
...         "relevance": [0, 1, 1],
...     }
... )
>>> rke.evaluate(log, ["nerr8@10(max_rel=1)", "bpm@10(t=2,max_rel=1,output=ei)"]).row(0)
(0.5, 3.0)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import polars as pl

from polars_rankeval._engine.context import RankingContext
from polars_rankeval._engine.exact_sum import exact_quotient, exact_sum
from polars_rankeval._engine.options import check_choice
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.metrics._base import Lookup, Metric, Partials, at, named, no_closed_form

CwlOutput = Literal["eu", "etu", "ec", "etc", "ei"]
OUTPUTS: tuple[CwlOutput, ...] = ("eu", "etu", "ec", "etc", "ei")
# ir_measures builds cwl's RankingMaker with max_n=1000 (cwl_eval's default): the gain vector
# is cut or padded to this many positions.
DEPTH = 1000
# exp of anything below log(5e-324) is 0.0: a finite stand-in for log 0 keeps the running sums
# free of -inf - -inf (see user_model.err).
_LOG_ZERO = -746.0
_SHIFT = 10  # recurrence steps before the asymptotic series (argument >= 10 there)
# Bernoulli-number coefficients of the asymptotic series, enough for 1e-17 at argument 10.
_DIGAMMA = (-1 / 12, 1 / 120, -1 / 252, 1 / 240, -1 / 132, 691 / 32760, -1 / 12, 3617 / 8160)
_TRIGAMMA = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)
_BOUNDS = (
    "the C/W/L user's stopping adapts to the gains here (or min_rel < 0 gives a judged 0 "
    "more gain than an unjudged row), so ranking higher labels first is not shown to be its "
    "best case"
)

# (m retrieved positions, Q = P_{m+1}, G = total gain) -> (tail share of S, P_{n+1})
Tail = Callable[[pl.Expr, pl.Expr, pl.Expr], tuple[pl.Expr, pl.Expr]]
# (rank, gain, running gain) -> C at that rank
Continuation = Callable[[pl.Expr, pl.Expr, pl.Expr], pl.Expr]


def digamma(x: pl.Expr) -> pl.Expr:
    """ψ(x) for x > 0: ψ(x) = ψ(x + 10) − Σ_{j<10} 1/(x + j), then the asymptotic series.

    Examples
    --------
    >>> round(pl.select(digamma(pl.lit(1.0))).item(), 12)  # minus Euler's gamma
    -0.577215664902
    """
    y = x + _SHIFT
    inv2 = 1.0 / (y * y)
    series = pl.lit(0.0)
    for coefficient in reversed(_DIGAMMA):
        series = (series + coefficient) * inv2
    near = pl.sum_horizontal([1.0 / (x + j) for j in range(_SHIFT)])
    return y.log() - 0.5 / y + series - near


def trigamma(x: pl.Expr) -> pl.Expr:
    """ψ'(x) = Σ_{j≥0} 1/(x + j)² for x > 0, by the same recurrence and series.

    Examples
    --------
    >>> round(pl.select(trigamma(pl.lit(1.0))).item(), 12)  # π²/6
    1.644934066848
    """
    y = x + _SHIFT
    inv2 = 1.0 / (y * y)
    series = pl.lit(0.0)
    for coefficient in reversed(_TRIGAMMA):
        series = (series + coefficient) * inv2
    near = pl.sum_horizontal([1.0 / ((x + j) * (x + j)) for j in range(_SHIFT)])
    return near + 1.0 / y + 0.5 * inv2 + series / y


def _number(option: str, value: object, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        msg = f"option {option}= must be a finite number, got {value!r}"
        raise InvalidOptionError(msg)
    if positive and value <= 0:
        msg = f"option {option}= must be > 0, got {value!r}"
        raise InvalidOptionError(msg)
    return float(value)


def _relevance_range(family: str, min_rel: object, max_rel: object) -> tuple[float, float]:
    if max_rel is None:
        msg = (
            f"metric {family!r} needs max_rel= (the label that maps to gain 1, as ir_measures "
            f"requires), e.g. '{family}(max_rel=3)'"
        )
        raise InvalidOptionError(msg)
    low, high = _number("min_rel", min_rel), _number("max_rel", max_rel)
    if low >= high:
        msg = f"option min_rel= must be below max_rel= ({high:g}), got {low:g}"
        raise InvalidOptionError(msg)
    return low, high


@dataclass(frozen=True)
class _Fixed:
    """A continuation that ignores the gains: ``P`` at a rank, ``S`` and ``P_{n+1}`` known."""

    reach: Callable[[pl.Expr], pl.Expr]
    total: float
    end: float


def _fixed(
    reach: Callable[[pl.Expr], pl.Expr], weight: Callable[[int], float], last: int
) -> _Fixed:
    """``weight(i)`` is ``P_i`` for ``i <= last`` and 0 after (``reach`` the same per row)."""
    total = math.fsum(weight(i) for i in range(1, min(last, DEPTH) + 1))
    return _Fixed(reach, total, weight(DEPTH + 1) if last > DEPTH else 0.0)


def _cwl(  # noqa: PLR0917 (internal; every family passes its own model)
    family: str,
    k: int | None,
    shown: dict[str, object],
    relevance: tuple[float, float],
    output: object,
    continuation: Continuation | None,
    tail: Tail | None,
    fixed: _Fixed | None = None,
    *,
    running: bool = False,
) -> Metric:
    """One C/W/L metric: its per-row reach ``P``, its aggregates and the chosen output."""
    output = check_choice("output", output, OUTPUTS)
    low, high = relevance
    shown = {**shown, **({"min_rel": f"{low:g}"} if low != 0 else {}), "max_rel": f"{high:g}"}
    model = at(family, k) + named("", shown)
    name = model if output == "eu" else at(family, k) + named("", {**shown, "output": output})
    gain_key = named("cwl_gain", {"min_rel": low, "max_rel": high})
    running_key = named("cwl_running_gain", {"min_rel": low, "max_rel": high})
    log_key, reach_key = f"cwl_log_c:{model}", f"cwl_reach:{model}"

    def gain(ctx: RankingContext) -> pl.Expr:
        # ir_measures clips negative labels to 0, then to [min_rel, max_rel], and rescales;
        # unjudged rows and rows past position 1000 have gain 0.
        label = ctx.label.clip(lower_bound=0).cast(pl.Float64).clip(low, high)
        scaled = pl.when(ctx.has_label).then(exact_quotient(label - low, high - low)).otherwise(0.0)
        if ctx.expected:
            # The gain expected at each position of a tie group is the group's mean gain.
            scaled = ctx.tie_groups(model).spread(scaled)
        return pl.when(ctx.within(DEPTH)).then(scaled).otherwise(0.0)

    def rows(ctx: RankingContext) -> dict[str, pl.Expr]:
        if fixed is None:
            # C depends on the gains: the reach is no linear function of them.
            no_closed_form(ctx, model)
        terms = {gain_key: gain(ctx)}
        if running:
            terms[running_key] = ctx.running_sum(gain(ctx))
        return terms

    def later_rows(ctx: RankingContext) -> dict[str, pl.Expr]:
        if continuation is None:
            return {}
        rank = ctx.rank.cast(pl.Float64)
        so_far = ctx.extra[running_key] if running else pl.lit(0.0)
        c = continuation(rank, ctx.extra[gain_key], so_far)
        log_c = pl.when(ctx.within(DEPTH)).then(c.log().clip(lower_bound=_LOG_ZERO)).otherwise(0.0)
        return {log_key: log_c, reach_key: (ctx.running_sum(log_c) - log_c).exp()}

    def partials(ctx: RankingContext) -> Partials:
        if fixed is None:
            no_closed_form(ctx, model)
        inside = ctx.within(DEPTH)
        # gain and log C are 0 outside the first 1000 positions; the reach is masked here.
        # Products are taken before any filter: a sum of a product of two filtered columns
        # would take the group_by off the streaming engine.
        g = ctx.extra[gain_key]
        if fixed is not None:
            reach = pl.when(inside).then(fixed.reach(ctx.rank.cast(pl.Float64))).otherwise(0.0)
            return {f"{model}:num": exact_sum(reach * g), f"{model}:gain": exact_sum(g)}
        reach = pl.when(inside).then(ctx.extra[reach_key]).otherwise(0.0)
        return {
            f"{model}:num": exact_sum(reach * g),
            f"{model}:gain": exact_sum(g),
            f"{model}:m": inside.sum().cast(pl.Float64),
            f"{model}:reach": exact_sum(reach),
            f"{model}:log_q": exact_sum(ctx.extra[log_key]),
        }

    def value(p: Lookup) -> pl.Expr:
        num, total_gain = p(f"{model}:num"), p(f"{model}:gain")
        if fixed is not None:
            s, end = pl.lit(fixed.total), pl.lit(fixed.end)
        else:
            assert tail is not None  # every family passes one of the two
            rest, end = tail(p(f"{model}:m"), p(f"{model}:log_q").exp(), total_gain)
            s = p(f"{model}:reach") + rest
        values = {
            # a constant S (a fixed reach): one division, as cwl_eval's (Polars divides by a
            # scalar through its reciprocal, whose last bit followed the other queries)
            "eu": exact_quotient(num, fixed.total) if fixed is not None else num / s,
            "etu": num - end * total_gain,
            "ec": pl.lit(1.0),  # Σ W_i with unit costs
            "etc": s - DEPTH * end,
            "ei": s,
        }
        return values[output]

    return Metric(
        name,
        partials,
        value,
        rows=rows,
        later_rows=later_rows,
        direction="higher" if output in ("eu", "etu") else "none",
        # With a reach that falls with the rank and ignores the gains, higher labels first is
        # the best order (rearrangement inequality); the outputs other than eu/etu are
        # constants. Below min_rel=0 a judged 0 gains more than an unjudged row, which the
        # bound orders first.
        tie_bounds=None if fixed is not None and low >= 0 else _BOUNDS,
    )


# ---- the padding beyond the list (gain 0): its share of S and P_{n+1} ----------------------


def _flat_tail(k: int | None) -> Tail:
    """C = 1 before position k, 0 at k (nerr8, bpm once the list has not stopped the user)."""

    def tail(m: pl.Expr, q: pl.Expr, total_gain: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
        last = DEPTH if k is None else min(k, DEPTH)
        rest = q * (pl.lit(float(last)) - m).clip(lower_bound=0.0)
        return rest, q if k is None or k > DEPTH else pl.lit(0.0)

    return tail


def _harmonic_tail(k: int) -> Tail:
    """C_i = i / (i + 1) before k: P_i = Q (m + 1) / i, summed as a digamma difference."""

    def tail(m: pl.Expr, q: pl.Expr, total_gain: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
        last = pl.max_horizontal(pl.lit(float(min(k, DEPTH))), m)
        rest = q * (m + 1.0) * (digamma(last + 1.0) - digamma(m + 1.0))
        return rest, exact_quotient(q * (m + 1.0), DEPTH + 1.0) if k > DEPTH else pl.lit(0.0)

    return tail


def _geometric_tail(p: float) -> Tail:
    """C = p: a geometric series."""

    def tail(m: pl.Expr, q: pl.Expr, total_gain: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
        left = DEPTH - m
        if p == 1:
            return q * left, q
        decay = pl.lit(p).pow(left)
        return exact_quotient(q * (1.0 - decay), 1.0 - p), q * decay

    return tail


def _square_tail(t: float, *, adaptive: bool) -> Tail:
    """C_i = ((i + a − 1) / (i + a))², a = 2T (− G for inst): P_i = Q ((m + a) / (i − 1 + a))².

    ``Σ_{i=m+1}^{n} 1/(i − 1 + a)² = ψ'(m + a) − ψ'(n + a)``; ``m + a >= 2T > 0`` as G <= m.
    """

    def tail(m: pl.Expr, q: pl.Expr, total_gain: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
        x = m + 2.0 * t - (total_gain if adaptive else 0.0)
        end_x = x + (DEPTH - m)
        rest = q * x * x * (trigamma(x) - trigamma(end_x))
        return rest, q * (x / end_x) ** 2

    return tail


# ---- the families --------------------------------------------------------------------------


def _checked_cutoff(k: object, family: str) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        msg = f"metric {family!r} needs a positive int cutoff, e.g. '{family}@10', got {k!r}"
        raise InvalidOptionError(msg)
    return k


def _t_shown(t: float) -> dict[str, object]:
    return {} if t == 1 else {"t": f"{t:g}"}


def inst(
    *,
    t: float = 1.0,
    min_rel: float = 0,
    max_rel: float | None = None,
    output: CwlOutput = "eu",
) -> Metric:
    """INST (Moffat et al. 2015): the user wants ``t`` units of gain and adapts to what is left.

    Examples
    --------
    >>> inst(t=2, max_rel=3).name
    'inst(t=2,max_rel=3)'
    """
    relevance = _relevance_range("inst", min_rel, max_rel)
    t = _number("t", t, positive=True)

    def c(rank: pl.Expr, gain: pl.Expr, so_far: pl.Expr) -> pl.Expr:
        d = rank + 2.0 * t - so_far
        return ((d - 1.0) / d) ** 2

    return _cwl(
        "inst",
        None,
        _t_shown(t),
        relevance,
        output,
        c,
        _square_tail(t, adaptive=True),
        running=True,
    )


def insq(
    *,
    t: float = 1.0,
    min_rel: float = 0,
    max_rel: float | None = None,
    output: CwlOutput = "eu",
) -> Metric:
    """INSQ (Moffat, Scholer & Thomas 2012): INST's continuation without the adaptation.

    Examples
    --------
    >>> insq(max_rel=1, output="ei").name
    'insq(max_rel=1,output=ei)'
    """
    relevance = _relevance_range("insq", min_rel, max_rel)
    t = _number("t", t, positive=True)
    # P_i = Π_{j<i} ((j + 2T − 1)/(j + 2T))² telescopes to (2T / (i + 2T − 1))².
    fixed = _fixed(
        lambda rank: (2.0 * t / (rank + 2.0 * t - 1.0)) ** 2,
        lambda i: (2.0 * t / (i + 2.0 * t - 1.0)) ** 2,
        DEPTH + 1,
    )
    return _cwl("insq", None, _t_shown(t), relevance, output, None, None, fixed)


def bpm(
    k: int,
    *,
    t: float = 1.0,
    min_rel: float = 0,
    max_rel: float | None = None,
    output: CwlOutput = "eu",
) -> Metric:
    """Static Bejewelled Player Model (Zhang et al. 2017): stop at ``t`` gain or ``k`` items.

    Examples
    --------
    >>> bpm(20, max_rel=1).name
    'bpm@20(max_rel=1)'
    """
    k = _checked_cutoff(k, "bpm")
    relevance = _relevance_range("bpm", min_rel, max_rel)
    t = _number("t", t)

    def c(rank: pl.Expr, gain: pl.Expr, so_far: pl.Expr) -> pl.Expr:
        return pl.when((so_far < t) & (rank < k)).then(1.0).otherwise(0.0)

    return _cwl("bpm", k, _t_shown(t), relevance, output, c, _flat_tail(k), running=True)


def sdcg(
    k: int,
    *,
    min_rel: float = 0,
    max_rel: float | None = None,
    output: CwlOutput = "eu",
) -> Metric:
    """Scaled DCG: DCG's log2 discount to rank ``k``, normalised to a distribution.

    Examples
    --------
    >>> sdcg(10, max_rel=1).name
    'sdcg@10(max_rel=1)'
    """
    k = _checked_cutoff(k, "sdcg")
    relevance = _relevance_range("sdcg", min_rel, max_rel)
    # P_i = Π_{j<i} log2(j + 1)/log2(j + 2) = 1 / log2(i + 1) up to k, then 0.
    fixed = _fixed(
        lambda rank: pl.when(rank <= k).then(1.0 / (rank + 1.0).log(2)).otherwise(0.0),
        lambda i: 1.0 / math.log2(i + 1),
        k,
    )
    return _cwl("sdcg", k, {}, relevance, output, None, None, fixed)


def nerr8(
    k: int,
    *,
    min_rel: float = 0,
    max_rel: float | None = None,
    output: CwlOutput = "eu",
) -> Metric:
    """NERR eq. 8 (Azzopardi, Mackenzie & Moffat 2021): ``C_i = 1 − g_i`` before rank ``k``.

    Examples
    --------
    >>> nerr8(10, max_rel=1).name
    'nerr8@10(max_rel=1)'
    """
    k = _checked_cutoff(k, "nerr8")
    relevance = _relevance_range("nerr8", min_rel, max_rel)

    def c(rank: pl.Expr, gain: pl.Expr, so_far: pl.Expr) -> pl.Expr:
        return pl.when(rank < k).then(1.0 - gain).otherwise(0.0)

    return _cwl("nerr8", k, {}, relevance, output, c, _flat_tail(k))


def nerr9(
    k: int,
    *,
    min_rel: float = 0,
    max_rel: float | None = None,
    output: CwlOutput = "eu",
) -> Metric:
    """NERR eq. 9: ``C_i = i / (i + 1) · (1 − g_i)`` before rank ``k``.

    Examples
    --------
    >>> nerr9(10, max_rel=1).name
    'nerr9@10(max_rel=1)'
    """
    k = _checked_cutoff(k, "nerr9")
    relevance = _relevance_range("nerr9", min_rel, max_rel)

    def c(rank: pl.Expr, gain: pl.Expr, so_far: pl.Expr) -> pl.Expr:
        return pl.when(rank < k).then(rank / (rank + 1.0) * (1.0 - gain)).otherwise(0.0)

    return _cwl("nerr9", k, {}, relevance, output, c, _harmonic_tail(k))


def nerr10(
    *,
    p: float = 0.9,
    min_rel: float = 0,
    max_rel: float | None = None,
    output: CwlOutput = "eu",
) -> Metric:
    """NERR eq. 10: ``C_i = p (1 − g_i)``, to full depth.

    Examples
    --------
    >>> nerr10(p=0.8, max_rel=1).name
    'nerr10(p=0.8,max_rel=1)'
    """
    relevance = _relevance_range("nerr10", min_rel, max_rel)
    p = _number("p", p, positive=True)
    if p > 1:
        msg = f"option p= must be in (0, 1], got {p:g}"
        raise InvalidOptionError(msg)
    shown: dict[str, object] = {} if p == 0.9 else {"p": f"{p:g}"}

    def c(rank: pl.Expr, gain: pl.Expr, so_far: pl.Expr) -> pl.Expr:
        return p * (1.0 - gain)

    return _cwl("nerr10", None, shown, relevance, output, c, _geometric_tail(p))


def nerr11(
    *,
    t: float = 1.0,
    min_rel: float = 0,
    max_rel: float | None = None,
    output: CwlOutput = "eu",
) -> Metric:
    """NERR eq. 11: INSQ's continuation times ``1 − g_i``, to full depth.

    Examples
    --------
    >>> nerr11(t=2, max_rel=1).name
    'nerr11(t=2,max_rel=1)'
    """
    relevance = _relevance_range("nerr11", min_rel, max_rel)
    t = _number("t", t, positive=True)

    def c(rank: pl.Expr, gain: pl.Expr, so_far: pl.Expr) -> pl.Expr:
        return ((rank + 2.0 * t - 1.0) / (rank + 2.0 * t)) ** 2 * (1.0 - gain)

    return _cwl("nerr11", None, _t_shown(t), relevance, output, c, _square_tail(t, adaptive=False))
