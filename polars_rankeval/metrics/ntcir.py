"""NTCIREVAL's graded measures (Sakai), as pyNTCIREVAL computes them.

A label ``l >= 1`` is relevance level ``Ll`` and earns ``gains[l - 1]`` (NTCIREVAL's
``-g 1:2:3``, the default: levels L1..L3 earn 1, 2, 3). Level 0, unjudged and negative labels
earn nothing and are not relevant; ``relevance_level`` does not apply (NTCIREVAL calls every
level above L0 relevant). Gains must not decrease with the level (NTCIREVAL refuses that too),
and a label above the last level is an error naming it, as NTCIREVAL has no gain for it.
``cg(r)`` is the run's cumulative gain at rank ``r``, ``C(r)`` its count of relevant rows and
``cg*(r)`` the cumulative gain of the ideal list (every judged relevant row, retrieved or not,
by level) at ``r``. The blended ratio is ``BR(r) = (C(r) + β·cg(r)) / (r + β·cg*(r))``.

* ``ncu@k(stop=..., beta=...)`` (Sakai & Robertson 2008): ``Σ_{relevant r <= k} Pr(r)·BR(r)``
  with the stop probability ``stop="uniform"`` (``1/min(R, k)``; with ``beta=0`` this is
  NTCIREVAL's ``AP``), ``"graded"`` (``stops[l] / Σ_docs stops[l]``, NTCIREVAL ``NCUgu``;
  ``stops`` default to the gains) or ``"rank"`` (``γ^(C(r)-1) / Σ_{i<R} γ^i``, ``NCUrb``);
* ``q_measure@k(beta=1)``: ``ncu(stop=uniform)``, NTCIREVAL ``Q-measure`` / ``Q@k``;
* ``o_measure(beta=1)``: ``BR`` at the first relevant row; ``p_measure(beta=1)``: ``BR`` at the
  first row of the highest level retrieved; ``p_plus(beta=1)``: the mean of ``BR`` over the
  relevant rows down to that row (Sakai 2007). With ``@k`` the run is cut at ``k`` first;
* ``err_ntcir@k`` / ``nerr_ntcir@k``: ERR with stop probability ``gain/(gmax + 1)`` (``gmax``
  the last level's gain), and its ratio to the ideal list's ERR at the same cutoff;
* ``ndcg_orig@k(b=2)``: Järvelin & Kekäläinen's original nDCG: ranks below ``b`` (and rank 1)
  undiscounted, ``log_b(r)`` after; ``msndcg@k``: "Microsoft" nDCG, discount ``1/ln(r + 1)``.

A list with no relevant judged row scores 0 (NTCIREVAL refuses such a topic). Without ``@k``
the whole run counts (NTCIREVAL's ``--cutoffs`` default is 1000).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Literal

import polars as pl

from polars_rankeval._engine.context import RankingContext
from polars_rankeval._engine.exact_sum import exact_quotient, exact_sum
from polars_rankeval._engine.options import check_choice
from polars_rankeval.errors import ColumnValueError, InvalidOptionError
from polars_rankeval.metrics._base import (
    Lookup,
    Metric,
    Partials,
    at,
    check_cutoff,
    named,
    no_closed_form,
    ratio_or_zero,
)

Stop = Literal["uniform", "graded", "rank"]
# The expressions below branch per level (O(levels²) nodes for nERR's ideal list).
_MAX_LEVELS = 64
# p_measure's key packs (level, rank) into one Int64: level · 2^32 + (2^32 − rank).
_KEY_BASE = 2**32
_DEFAULT_GAINS = (1.0, 2.0, 3.0)
# ties="optimistic"/"pessimistic" put higher labels first (last) within a tie: that is not the
# best (worst) case of these measures, as brute force over every tie order shows.
_NO_BOUND = (
    "{what}, so ranking the higher labels of a tie first can lower it and that order is "
    "not its best case"
)


def _levels(option: str, value: object) -> tuple[float, ...]:
    """Per-level values from ``"1:2:3"`` (NTCIREVAL's spelling), a number, or a sequence."""
    if isinstance(value, str):
        try:
            numbers: list[object] = [float(part) for part in value.split(":")]
        except ValueError:
            msg = f"option {option}= must be one number per level as 'g1:g2:...', got {value!r}"
            raise InvalidOptionError(msg) from None
    elif isinstance(value, Sequence):
        numbers = list(value)
    else:
        numbers = [value]
    if not 1 <= len(numbers) <= _MAX_LEVELS:
        msg = f"option {option}= must give 1 to {_MAX_LEVELS} levels, got {len(numbers)}"
        raise InvalidOptionError(msg)
    checked: list[float] = []
    for number in numbers:
        if (
            isinstance(number, bool)
            or not isinstance(number, (int, float))
            or not math.isfinite(number)
            or number < 0
        ):
            msg = f"option {option}= must hold finite numbers >= 0, got {value!r}"
            raise InvalidOptionError(msg)
        checked.append(float(number))
    if any(low > high for low, high in itertools.pairwise(checked)):
        msg = f"option {option}= must not decrease from level to level, got {value!r}"
        raise InvalidOptionError(msg)
    return tuple(checked)


def _number(option: str, value: object, low: float, high: float | None = None) -> float:
    """A finite number in ``[low, high]``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < low
        or (high is not None and value > high)
    ):
        bound = f">= {low:g}" if high is None else f"in [{low:g}, {high:g}]"
        msg = f"option {option}= must be a finite number {bound}, got {value!r}"
        raise InvalidOptionError(msg)
    return float(value)


def _spelled(values: tuple[float, ...]) -> str:
    return ":".join(f"{value:g}" for value in values)


class _Levels:
    """The gain per level, and the per-row and per-list expressions built on it."""

    def __init__(self, gains: object) -> None:
        self.gains = _levels("gains", gains)
        self.suffix = "" if self.gains == _DEFAULT_GAINS else f"gains={_spelled(self.gains)}"
        self.top = self.gains[-1]

    @staticmethod
    def level(ctx: RankingContext) -> pl.Expr:
        """The label when positive, else 0 (unjudged and negative labels are level 0)."""
        return pl.when(ctx.label > 0).then(ctx.label).otherwise(0)

    def per_level(self, ctx: RankingContext, values: Sequence[float]) -> pl.Expr:
        """``values[l - 1]`` at level ``l``, 0 at level 0."""
        level = self.level(ctx)
        out: pl.Expr = pl.lit(0.0)
        for index, value in enumerate(values):
            out = pl.when(level == index + 1).then(value).otherwise(out)
        return out

    def gain(self, ctx: RankingContext) -> pl.Expr:
        return self.per_level(ctx, self.gains)

    def counts(self, ctx: RankingContext) -> list[pl.Expr]:
        """Judged rows per level 1..L of the list (retrieved or not), on every row."""
        level = self.level(ctx)
        return [
            ctx.over((level == index + 1).sum()).cast(pl.Float64)
            for index in range(len(self.gains))
        ]

    def ideal_cg(self, rank: pl.Expr, counts: list[pl.Expr]) -> pl.Expr:
        """``cg*(rank)``: the ideal list holds level L's rows first, then L-1's, ..."""
        total: pl.Expr = pl.lit(0.0)
        above: pl.Expr = pl.lit(0.0)
        for index in reversed(range(len(self.gains))):
            taken = pl.min_horizontal(pl.max_horizontal(rank - above, pl.lit(0.0)), counts[index])
            total = total + self.gains[index] * taken
            above = above + counts[index]
        return total

    def max_label_partial(self, ctx: RankingContext) -> Partials:
        return {"ntcir_max_label": ctx.label.max()}

    def _unmapped_message(self, name: str, high: int) -> str:
        """Why label ``high`` is refused, with a ``gains=`` to write where one can be given.

        The example has one gain per level, so it exists only up to ``_MAX_LEVELS`` levels: a
        label of 1e8 once built a 1e8-level example (45 s, gigabytes) before it could refuse.
        """
        head = (
            f"{name}: relevance label {high} has no gain: gains= names levels 1 to "
            f"{len(self.gains)} ({_spelled(self.gains)})"
        )
        if high <= _MAX_LEVELS:
            example = _spelled(tuple(float(g) for g in range(1, high + 1)))
            return f"{head}; give one gain per level, e.g. gains={example}"
        return (
            f"{head}; gains= holds at most {_MAX_LEVELS} levels: map the labels to levels "
            f"1 to {_MAX_LEVELS} or fewer first (NTCIREVAL's levels L1, L2, ...)"
        )

    def refuse_unmapped(self, value: pl.Expr, p: Lookup, name: str) -> pl.Expr:
        """``value``, or a ColumnValueError where a list holds a label above the last level."""
        levels = len(self.gains)

        def check(packed: pl.Series) -> pl.Series:
            frame = packed.struct.unnest()
            high = frame["max_label"].max()
            if isinstance(high, int) and high > levels:
                raise ColumnValueError(self._unmapped_message(name, high))
            return frame["value"]

        packed = pl.struct(value.alias("value"), p("ntcir_max_label").alias("max_label"))
        return packed.map_batches(check, return_dtype=pl.Float64, is_elementwise=True)


def _blended_rows(levels: _Levels, beta: float, metric: str) -> tuple[str, str, Metric]:
    """Keys of ``BR(r)`` and ``C(r)`` and a carrier of the rows that build them."""
    br_key = "ntcir_br" + named("", {"gains": _spelled(levels.gains), "beta": f"{beta:g}"})
    count_key = "ntcir_relevant_through"

    def rows(ctx: RankingContext) -> dict[str, pl.Expr]:
        no_closed_form(ctx, metric)
        relevant = levels.level(ctx) > 0
        through = ctx.running_sum(relevant.cast(pl.Float64))
        cumulative = ctx.running_sum(pl.when(ctx.retrieved).then(levels.gain(ctx)))
        rank = ctx.rank.cast(pl.Float64)
        ideal = levels.ideal_cg(rank, levels.counts(ctx))
        ratio = (through + beta * cumulative) / (rank + beta * ideal)
        keep = ctx.retrieved & relevant
        return {br_key: pl.when(keep).then(ratio), count_key: pl.when(keep).then(through)}

    carrier = Metric("", lambda ctx: {}, lambda p: pl.lit(0.0), rows=rows)
    return br_key, count_key, carrier


def ncu(
    k: int | None = None,
    *,
    stop: Stop = "graded",
    beta: float = 1.0,
    gamma: float = 0.95,
    gains: object = _DEFAULT_GAINS,
    stops: object = None,
) -> Metric:
    """Normalised cumulative utility (Sakai & Robertson 2008), NTCIREVAL ``NCU``.

    ``stop="graded"`` with ``beta=1`` is NTCIREVAL's ``NCUgu,BR`` and ``beta=0`` its
    ``NCUgu,P``; ``stop="rank"`` gives ``NCUrb,BR`` / ``NCUrb,P`` (``gamma``, default 0.95);
    ``stop="uniform"`` gives ``Q-measure`` (``beta=1``) and ``AP`` (``beta=0``), whose stop
    probability at a cutoff is ``1/min(R, k)``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": "q",
    ...         "item": ["a", "b", "c"],
    ...         "score": [3.0, 2.0, None],
    ...         "relevance": [0, 2, 1],
    ...     }
    ... )
    >>> # R = 2 relevant rows; BR(2) = (1 + 2) / (2 + 3) at the only relevant retrieved row
    >>> rke.evaluate(log, ["ncu(stop=uniform)"]).item()
    0.3
    """
    k = check_cutoff(k, "ncu", required=False)
    stop = check_choice("stop", stop, ["uniform", "graded", "rank"])
    beta = _number("beta", beta, 0.0)
    gamma = _number("gamma", gamma, 0.0, 1.0)
    levels = _Levels(gains)
    stop_values = levels.gains if stops is None else _levels("stops", stops)
    if len(stop_values) != len(levels.gains):
        msg = (
            f"option stops= must give one value per level of gains= ({len(levels.gains)}), "
            f"got {len(stop_values)}"
        )
        raise InvalidOptionError(msg)
    shown: dict[str, object] = {"stop": stop} if stop != "graded" else {}
    if beta != 1.0:
        shown["beta"] = f"{beta:g}"
    if stop == "rank" and gamma != 0.95:
        shown["gamma"] = f"{gamma:g}"
    if levels.suffix:
        shown["gains"] = _spelled(levels.gains)
    if stop == "graded" and stops is not None and stop_values != levels.gains:
        shown["stops"] = _spelled(stop_values)
    return _ncu(at("ncu", k), k, stop, beta, gamma, levels, stop_values, named("", shown))


def q_measure(k: int | None = None, *, beta: float = 1.0, gains: object = _DEFAULT_GAINS) -> Metric:
    """Q-measure (Sakai), NTCIREVAL ``Q-measure`` and ``Q@k``: ``ncu(stop=uniform)``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": "q",
    ...         "item": ["a", "b", "c"],
    ...         "score": [3.0, 2.0, None],
    ...         "relevance": [0, 2, 1],
    ...     }
    ... )
    >>> rke.evaluate(log, ["q_measure"]).item()
    0.3
    """
    k = check_cutoff(k, "q_measure", required=False)
    beta = _number("beta", beta, 0.0)
    levels = _Levels(gains)
    shown: dict[str, object] = {"beta": f"{beta:g}"} if beta != 1.0 else {}
    if levels.suffix:
        shown["gains"] = _spelled(levels.gains)
    settings = named("", shown)
    return _ncu(at("q_measure", k), k, "uniform", beta, 0.95, levels, levels.gains, settings)


def _ncu(  # noqa: PLR0917 (internal; the builders above check every option)
    base: str,
    k: int | None,
    stop: Stop,
    beta: float,
    gamma: float,
    levels: _Levels,
    stop_values: tuple[float, ...],
    settings: str,
) -> Metric:
    name = base + settings
    br_key, count_key, carrier = _blended_rows(levels, beta, base)
    sum_key, norm_key = f"{name}:sum", f"{name}:norm"

    def partials(ctx: RankingContext) -> Partials:
        br = ctx.extra[br_key]
        within = ctx.within(k)
        relevant = levels.level(ctx) > 0
        if stop == "graded":
            weight = levels.per_level(ctx, stop_values)
            norm = exact_sum(weight, relevant)
        elif stop == "rank":
            weight = pl.lit(gamma).pow(ctx.extra[count_key] - 1.0)
            norm = relevant.sum().cast(pl.Float64)
        else:
            weight = pl.lit(1.0)
            norm = relevant.sum().cast(pl.Float64)
        return {
            sum_key: exact_sum(weight * br, within & relevant),
            norm_key: norm,
            **levels.max_label_partial(ctx),
        }

    def value(p: Lookup) -> pl.Expr:
        total, norm = p(sum_key), p(norm_key)
        if stop == "uniform" and k is not None:
            norm = pl.min_horizontal(norm, pl.lit(float(k)))
        elif stop == "rank":
            # Σ_{i<R} γ^i, R relevant rows; R itself when γ = 1 (0^0 = 1 covers γ = 0)
            norm = (
                norm if gamma == 1.0 else exact_quotient(1.0 - pl.lit(gamma).pow(norm), 1.0 - gamma)
            )
        return levels.refuse_unmapped(ratio_or_zero(total, norm), p, name)

    reason = None
    if stop == "graded":
        reason = _NO_BOUND.format(
            what="its stop probability grows with a row's level, so moving a higher level up "
            "moves more weight to an earlier blended ratio"
        )
    return Metric(name, partials, value, rows=carrier.rows, tie_bounds=reason)


Single = Literal["o_measure", "p_measure", "p_plus"]


def _single(kind: Single, k: int | None, beta: float, gains: object) -> Metric:
    """O-measure, P-measure and P+ (Sakai 2007): ``BR`` at one row, or P+'s mean of it."""
    k = check_cutoff(k, kind, required=False)
    beta = _number("beta", beta, 0.0)
    levels = _Levels(gains)
    shown: dict[str, object] = {"beta": f"{beta:g}"} if beta != 1.0 else {}
    if levels.suffix:
        shown["gains"] = _spelled(levels.gains)
    base = at(kind, k)
    name = base + named("", shown)
    br_key, count_key, carrier = _blended_rows(levels, beta, base)
    # The row P-measure reads: the highest level retrieved within k, its first row.
    top_key = f"ntcir_top_row@{k}" + levels.suffix
    cap = len(levels.gains) + 1  # a label past the last level is refused; cap its key

    def row_key(ctx: RankingContext) -> pl.Expr:
        level = levels.level(ctx).clip(upper_bound=cap)
        return level * _KEY_BASE + (_KEY_BASE - ctx.rank.cast(pl.Int64))

    def rows(ctx: RankingContext) -> dict[str, pl.Expr]:
        terms = carrier.rows(ctx)
        if kind != "o_measure":
            candidate = ctx.within(k) & (levels.level(ctx) > 0)
            terms[top_key] = ctx.over(pl.when(candidate).then(row_key(ctx)).max())
        return terms

    sum_key, norm_key = f"{name}:sum", f"{name}:norm"

    def partials(ctx: RankingContext) -> Partials:
        br, through = ctx.extra[br_key], ctx.extra[count_key]
        relevant = ctx.within(k) & (levels.level(ctx) > 0)
        if kind == "o_measure":
            # C(r) = 1 marks the first relevant row
            return {name: exact_sum(br, relevant & (through == 1.0))}
        at_top = (row_key(ctx) == ctx.extra[top_key]).fill_null(value=False)
        if kind == "p_measure":
            return {name: exact_sum(br, relevant & at_top)}
        top_rank = _KEY_BASE - ctx.extra[top_key] % _KEY_BASE
        down_to_top = (ctx.rank <= top_rank).fill_null(value=False)
        return {
            sum_key: exact_sum(br, relevant & down_to_top),
            norm_key: through.filter(relevant & at_top).sum(),
        }

    def value(p: Lookup) -> pl.Expr:
        own = p(name) if kind != "p_plus" else ratio_or_zero(p(sum_key), p(norm_key))
        return levels.refuse_unmapped(own, p, name)

    reason = None
    if kind != "o_measure":
        reason = _NO_BOUND.format(
            what="it reads the blended ratio at the first row of the highest level, which a "
            "higher label ranked first within a tie can move to a rank with a lower ratio"
        )
    return Metric(
        name,
        lambda ctx: {**partials(ctx), **levels.max_label_partial(ctx)},
        value,
        rows=rows,
        tie_bounds=reason,
    )


def o_measure(k: int | None = None, *, beta: float = 1.0, gains: object = _DEFAULT_GAINS) -> Metric:
    """O-measure: ``BR`` at the first relevant row (0 without one), NTCIREVAL ``O-measure``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": "q",
    ...         "item": ["a", "b", "c"],
    ...         "score": [3.0, 2.0, None],
    ...         "relevance": [0, 2, 1],
    ...     }
    ... )
    >>> rke.evaluate(log, ["o_measure"]).item()  # (1 + 2) / (2 + 3)
    0.6
    """
    return _single("o_measure", k, beta, gains)


def p_measure(k: int | None = None, *, beta: float = 1.0, gains: object = _DEFAULT_GAINS) -> Metric:
    """P-measure: ``BR`` at the first row of the highest level retrieved, NTCIREVAL ``P-measure``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": "q",
    ...         "item": ["a", "b", "c"],
    ...         "score": [3.0, 2.0, 1.0],
    ...         "relevance": [1, 0, 2],
    ...     }
    ... )
    >>> rke.evaluate(log, ["p_measure"]).item()  # (2 + 3) / (3 + 3)
    0.8333333333333334
    """
    return _single("p_measure", k, beta, gains)


def p_plus(k: int | None = None, *, beta: float = 1.0, gains: object = _DEFAULT_GAINS) -> Metric:
    """P+-measure: mean ``BR`` over the relevant rows down to P-measure's row, NTCIREVAL ``P-plus``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": "q",
    ...         "item": ["a", "b", "c"],
    ...         "score": [3.0, 2.0, 1.0],
    ...         "relevance": [1, 0, 2],
    ...     }
    ... )
    >>> rke.evaluate(log, ["p_plus"]).item()  # (BR(1) = 2/3 + BR(3) = 5/6) / 2
    0.75
    """
    return _single("p_plus", k, beta, gains)


def _err_rows(levels: _Levels, metric: str, *, ideal: bool) -> tuple[str, str, Metric]:
    """Per-row ERR terms of the run, and with ``ideal`` of the ideal list.

    The run's term is ``R_r / r · Π_{i<r} (1 − R_i)`` with ``R = g / (gmax + 1)``.
    """
    settings = named("", {"gains": _spelled(levels.gains)})
    key, ideal_key = "ntcir_err_term" + settings, "ntcir_ideal_err_term" + settings

    def rows(ctx: RankingContext) -> dict[str, pl.Expr]:
        no_closed_form(ctx, metric)
        stop = pl.when(ctx.retrieved).then(levels.gain(ctx) / (levels.top + 1.0))
        # R < 1 always (g <= gmax), so the logs are finite
        log_continue = (1.0 - stop).log()
        before = (ctx.running_sum(log_continue) - log_continue).exp()
        terms = {key: stop * before / ctx.rank.cast(pl.Float64)}
        if ideal:  # its count windows belong here: a window inside an aggregation won't stream
            terms[ideal_key] = _ideal_err_term(ctx, levels)
        return terms

    return key, ideal_key, Metric("", lambda ctx: {}, lambda p: pl.lit(0.0), rows=rows)


def _ideal_err_term(ctx: RankingContext, levels: _Levels) -> pl.Expr:
    """Each relevant row's ERR term at its place in the ideal list (levels descending).

    The rows above a level-l row in the ideal list are every row of a higher level and the
    rows of level l before it, so ``Π (1 − R)`` over them is a closed form in the counts.
    """
    counts = levels.counts(ctx)
    position = ctx.ideal_rank.cast(pl.Float64)
    level = levels.level(ctx)
    term: pl.Expr = pl.lit(None, dtype=pl.Float64)
    log_above: pl.Expr = pl.lit(0.0)
    rows_above: pl.Expr = pl.lit(0.0)
    for index in reversed(range(len(levels.gains))):
        stop = levels.gains[index] / (levels.top + 1.0)
        log_continue = math.log1p(-stop)
        own = stop / position * (log_above + (position - 1.0 - rows_above) * log_continue).exp()
        term = pl.when(level == index + 1).then(own).otherwise(term)
        log_above = log_above + counts[index] * log_continue
        rows_above = rows_above + counts[index]
    return term


def _err_family(kind: str, k: int | None, gains: object) -> Metric:
    k = check_cutoff(k, kind, required=False)
    levels = _Levels(gains)
    base = at(kind, k)
    name = base + named("", {"gains": _spelled(levels.gains)} if levels.suffix else {})
    key, ideal_term, carrier = _err_rows(levels, base, ideal=kind == "nerr_ntcir")
    run_key, ideal_key = f"{name}:run", f"{name}:ideal"

    def partials(ctx: RankingContext) -> Partials:
        out = {run_key: exact_sum(ctx.extra[key], ctx.within(k))}
        if kind == "nerr_ntcir":
            in_ideal = ctx.ideal_rank.is_not_null() & (levels.level(ctx) > 0)
            if k is not None:
                in_ideal = in_ideal & (ctx.ideal_rank <= k).fill_null(value=False)
            out[ideal_key] = exact_sum(ctx.extra[ideal_term], in_ideal)
        return {**out, **levels.max_label_partial(ctx)}

    def value(p: Lookup) -> pl.Expr:
        own = p(run_key) if kind == "err_ntcir" else ratio_or_zero(p(run_key), p(ideal_key))
        return levels.refuse_unmapped(own, p, name)

    return Metric(name, partials, value, rows=carrier.rows)


def err_ntcir(k: int | None = None, *, gains: object = _DEFAULT_GAINS) -> Metric:
    """NTCIREVAL's ``ERR``: stop probability ``gain / (gmax + 1)``, optionally cut at ``k``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {"query": "q", "item": ["a", "b"], "score": [2.0, 1.0], "relevance": [3, 1]}
    ... )
    >>> rke.evaluate(log, ["err_ntcir"]).item()  # 3/4 + (1/4) · (1/4) / 2
    0.78125
    """
    return _err_family("err_ntcir", k, gains)


def nerr_ntcir(k: int | None = None, *, gains: object = _DEFAULT_GAINS) -> Metric:
    """NTCIREVAL's ``nERR@k``: ``err_ntcir@k`` over the ideal list's ERR at ``k``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {"query": "q", "item": ["a", "b"], "score": [2.0, 1.0], "relevance": [1, 3]}
    ... )
    >>> round(rke.evaluate(log, ["nerr_ntcir"]).item(), 6)  # (1/4 + 3/4·3/4/2) / 0.78125
    0.68
    """
    return _err_family("nerr_ntcir", k, gains)


def _discounted(kind: str, k: int | None, gains: object, b: float) -> Metric:
    k = check_cutoff(k, kind, required=False)
    levels = _Levels(gains)
    shown: dict[str, object] = {"gains": _spelled(levels.gains)} if levels.suffix else {}
    if kind == "ndcg_orig":
        b = _number("b", b, 1.0)
        if b <= 1.0:
            msg = f"option b= must be a finite number > 1, got {b!r}"
            raise InvalidOptionError(msg)
        if b != 2.0:
            shown["b"] = f"{b:g}"
    name = at(kind, k) + named("", shown)
    run_key, ideal_key = f"{name}:run", f"{name}:ideal"

    def discount(position: pl.Expr) -> pl.Expr:
        r = position.cast(pl.Float64)
        if kind == "msndcg":
            return 1.0 / (r + 1.0).log()
        # Järvelin & Kekäläinen: no discount at rank 1 nor below b, then log_b(r)
        return (
            pl.when((r <= 1.0) | (r < b))
            .then(1.0)
            .otherwise(1.0 / exact_quotient(r.log(), math.log(b)))
        )

    def partials(ctx: RankingContext) -> Partials:
        no_closed_form(ctx, kind)
        gain = levels.gain(ctx)
        in_ideal = ctx.ideal_rank.is_not_null() & (levels.level(ctx) > 0)
        if k is not None:
            in_ideal = in_ideal & (ctx.ideal_rank <= k).fill_null(value=False)
        return {
            run_key: exact_sum(gain * discount(ctx.rank), ctx.within(k)),
            ideal_key: exact_sum(gain * discount(ctx.ideal_rank), in_ideal),
            **levels.max_label_partial(ctx),
        }

    def value(p: Lookup) -> pl.Expr:
        return levels.refuse_unmapped(ratio_or_zero(p(run_key), p(ideal_key)), p, name)

    return Metric(name, partials, value)


def ndcg_orig(k: int | None = None, *, gains: object = _DEFAULT_GAINS, b: float = 2.0) -> Metric:
    """Järvelin & Kekäläinen's original nDCG, NTCIREVAL ``nDCG@k`` (``--logb``, here ``b``).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {"query": "q", "item": ["a", "b"], "score": [2.0, 1.0], "relevance": [1, 3]}
    ... )
    >>> rke.evaluate(log, ["ndcg_orig"]).item()  # (1 + 3/log2(2)) / (3 + 1/log2(2))
    1.0
    """
    return _discounted("ndcg_orig", k, gains, b)


def msndcg(k: int | None = None, *, gains: object = _DEFAULT_GAINS) -> Metric:
    """Microsoft's nDCG (Burges et al. 2005), NTCIREVAL ``MSnDCG@k``: discount ``1/ln(r + 1)``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {"query": "q", "item": ["a", "b"], "score": [2.0, 1.0], "relevance": [1, 3]}
    ... )
    >>> round(rke.evaluate(log, ["msndcg"]).item(), 6)  # (1/ln2 + 3/ln3) / (3/ln2 + 1/ln3)
    0.796708
    """
    return _discounted("msndcg", k, gains, 2.0)
