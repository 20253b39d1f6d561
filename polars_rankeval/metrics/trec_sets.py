"""trec_eval's set measures and their cut relatives: exactly as its ``m_*.c`` define them.

Set measures read only the contingency counts of the whole retrieved set (``num_ret``,
``num_rel`` = ``R``, ``num_rel_ret``), so they do not depend on the order of the list, and
``ties="expected"`` gives the same value as ``ties="trec"``:

* ``set_p`` (``set_P``), ``set_recall``, ``set_map``, ``set_f`` (``set_F``),
  ``set_relative_p`` (``set_relative_P``), ``utility`` and ``num_nonrel_judged_ret``.

The others count rows in a top part of the ranking and are linear in per-position terms, so
their tie expectation is the same sum over the tie-group averages ``ctx.rel_weight`` /
``ctx.judged_weight``:

* ``relative_p@k`` (``relative_P_k``), ``rprec_mult`` (``Rprec_mult``) and ``unj@k``
  (``unj_k``).

Each value is 0 where trec_eval leaves it at its initial 0 (a zero denominator).
"""

from __future__ import annotations

import math

import polars as pl

from polars_rankeval._engine.context import RankingContext
from polars_rankeval._engine.exact_sum import exact_quotient, exact_sum
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.metrics._base import (
    JUDGMENT_COVERAGE,
    Lookup,
    Metric,
    Partials,
    at,
    check_cutoff,
    hits_partial,
    named,
    num_rel_partial,
    ratio_or_zero,
)


def _set_counts(ctx: RankingContext) -> Partials:
    # The same names and expressions as counts.py, so num_ret etc. are computed once.
    return {
        "num_ret": ctx.retrieved.sum(),
        "num_rel_ret": (ctx.relevant & ctx.retrieved).sum(),
        **num_rel_partial(ctx),
    }


def _float(p: Lookup, key: str) -> pl.Expr:
    return p(key).cast(pl.Float64)


def _number(value: object, option: str, metric: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        msg = f"option {option}= of {metric!r} must be a finite number, got {value!r}"
        raise InvalidOptionError(msg)
    return float(value)


def _cutoff(k: int | None, name: str) -> int:
    checked = check_cutoff(k, name, required=True)
    assert checked is not None  # required=True never returns None
    return checked


def set_precision() -> Metric:
    """``set_p = num_rel_ret / num_ret``, 0 when nothing is retrieved (trec_eval ``set_P``).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": "q",
    ...         "item": ["a", "b", "c"],
    ...         "score": [2.0, 1.0, None],
    ...         "relevance": [1, 0, 1],
    ...     }
    ... )
    >>> rke.evaluate(log, ["set_p"]).item()
    0.5
    """
    return Metric("set_p", _set_counts, lambda p: ratio_or_zero(p("num_rel_ret"), p("num_ret")))


def set_recall() -> Metric:
    """``set_recall = num_rel_ret / R``, 0 when ``R = 0`` (trec_eval ``set_recall``).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": "q",
    ...         "item": ["a", "b", "c"],
    ...         "score": [2.0, 1.0, None],
    ...         "relevance": [1, 0, 1],
    ...     }
    ... )
    >>> rke.evaluate(log, ["set_recall"]).item()
    0.5
    """
    return Metric(
        "set_recall", _set_counts, lambda p: ratio_or_zero(p("num_rel_ret"), p("num_rel"))
    )


def set_map() -> Metric:
    """``set_map = num_rel_ret² / (num_ret · R)``: set precision times set recall.

    0 when nothing is retrieved or ``R = 0`` (trec_eval ``set_map``).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": "q",
    ...         "item": ["a", "b", "c"],
    ...         "score": [2.0, 1.0, None],
    ...         "relevance": [1, 0, 1],
    ...     }
    ... )
    >>> rke.evaluate(log, ["set_map"]).item()
    0.25
    """

    def value(p: Lookup) -> pl.Expr:
        hits = _float(p, "num_rel_ret")
        # trec_eval multiplies in doubles: (rr * rr) / (ret * rel)
        return ratio_or_zero(hits * hits, _float(p, "num_ret") * _float(p, "num_rel"))

    return Metric("set_map", _set_counts, value)


def set_f(*, beta: float = 1.0) -> Metric:
    """``set_f = (β + 1)·P·R / (β·P + R)`` over the retrieved set (trec_eval ``set_F``).

    ``P`` is ``set_p`` and ``R`` is ``set_recall``; 0 when no relevant row is retrieved.
    As in trec_eval, ``beta`` enters the formula as given (it is not squared): ``set_F.0.5``
    is ``set_f(beta=0.5)``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": "q",
    ...         "item": ["a", "b", "c", "d"],
    ...         "score": [3.0, 2.0, 1.0, None],
    ...         "relevance": [1, 0, 0, 1],
    ...     }
    ... )
    >>> # P = 1/3, R = 1/2
    >>> [round(v, 4) for v in rke.evaluate(log, ["set_f", "set_f(beta=0.5)"]).row(0)]
    [0.4, 0.375]
    """
    x = _number(beta, "beta", "set_f")
    shown = {"beta": beta} if x != 1.0 else {}

    def value(p: Lookup) -> pl.Expr:
        hits = _float(p, "num_rel_ret")
        precision = hits / _float(p, "num_ret")
        recall = hits / _float(p, "num_rel")
        # The operation order of m_set_F.c, so the doubles agree to the last bit.
        f = (x + 1.0) * precision * recall / (x * precision + recall)
        return pl.when(p("num_rel_ret") > 0).then(f).otherwise(0.0)

    return Metric(named("set_f", shown), _set_counts, value)


def set_relative_precision() -> Metric:
    """``set_relative_p = num_rel_ret / min(num_ret, R)`` (trec_eval ``set_relative_P``).

    Set precision relative to the best possible for a set of this size; 0 when nothing is
    retrieved or ``R = 0``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": "q",
    ...         "item": ["a", "b", "c"],
    ...         "score": [2.0, 1.0, None],
    ...         "relevance": [1, 0, 1],
    ...     }
    ... )
    >>> rke.evaluate(log, ["set_relative_p"]).item()
    0.5
    """
    return Metric(
        "set_relative_p",
        _set_counts,
        lambda p: ratio_or_zero(p("num_rel_ret"), pl.min_horizontal(p("num_ret"), p("num_rel"))),
    )


def utility(
    *, a: float = 1.0, b: float = -1.0, c: float = 0.0, d: float = 0.0, num_docs: int = 0
) -> Metric:
    """``a·rel_ret + b·nonrel_ret + c·rel_not_ret + d·nonrel_not_ret`` (trec_eval ``utility``).

    The four coefficients weigh the cells of the contingency table, as trec_eval's
    ``-m utility.a,b,c,d`` (default ``1,-1,0,0``). The non-relevant rows not retrieved are
    ``num_docs + num_rel_ret - num_ret - R``, where ``num_docs`` is the collection size
    (trec_eval's ``-N``, default 0); it matters only when ``d`` is not 0. The mean over queries
    is reported, as trec_eval does.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": "q",
    ...         "item": ["a", "b", "c"],
    ...         "score": [2.0, 1.0, None],
    ...         "relevance": [1, 0, 1],
    ...     }
    ... )
    >>> rke.evaluate(log, ["utility", "utility(a=2,c=-0.5)"]).row(0)
    (0.0, 0.5)
    """
    coefficients = {"a": a, "b": b, "c": c, "d": d}
    defaults = {"a": 1.0, "b": -1.0, "c": 0.0, "d": 0.0}
    weights = {key: _number(value, key, "utility") for key, value in coefficients.items()}
    if isinstance(num_docs, bool) or not isinstance(num_docs, int) or num_docs < 0:
        msg = f"option num_docs= of 'utility' must be a non-negative int, got {num_docs!r}"
        raise InvalidOptionError(msg)
    shown: dict[str, object] = {
        key: coefficients[key] for key in coefficients if weights[key] != defaults[key]
    }
    if num_docs:
        shown["num_docs"] = num_docs

    def value(p: Lookup) -> pl.Expr:
        ret, rel, hits = _float(p, "num_ret"), _float(p, "num_rel"), _float(p, "num_rel_ret")
        # m_utility.c's sum, term by term in its order
        return (
            weights["a"] * hits
            + weights["b"] * (ret - hits)
            + weights["c"] * (rel - hits)
            + weights["d"] * (num_docs + hits - ret - rel)
        )

    return Metric(named("utility", shown), _set_counts, value)


def num_nonrel_judged_ret() -> Metric:
    """Retrieved rows judged non-relevant, summed over queries (trec_eval's count).

    Rows not in the qrels or with a negative label are not judged; with
    ``relevance_level=2`` a row labelled 1 is judged non-relevant.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": "q",
    ...         "item": ["a", "b", "c", "d"],
    ...         "score": [3.0, 2.0, 1.0, None],
    ...         "relevance": [0, -1, None, 0],
    ...     }
    ... )
    >>> rke.evaluate(log, ["num_nonrel_judged_ret"]).item()
    1
    """

    def partials(ctx: RankingContext) -> Partials:
        rows = ctx.retrieved & ctx.judged & ~ctx.relevant
        return {"num_nonrel_judged_ret": rows.sum()}

    return Metric(
        "num_nonrel_judged_ret",
        partials,
        lambda p: p("num_nonrel_judged_ret").cast(pl.Int64),
        summary="sum",
        direction="lower",
    )


def relative_precision(k: int) -> Metric:
    """``relative_p@k = hits@k / min(k, R)``, 0 when ``R = 0`` (trec_eval ``relative_P_k``).

    Precision up to ``k = R``, recall after. A list shorter than ``k`` counts its hits.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": "q",
    ...         "item": ["a", "b", "c"],
    ...         "score": [2.0, 1.0, None],
    ...         "relevance": [1, 0, 1],
    ...     }
    ... )
    >>> rke.evaluate(log, ["relative_p@1", "relative_p@5"]).row(0)
    (1.0, 0.5)
    """
    k = _cutoff(k, "relative_p")
    key = at("hits", k)
    return Metric(
        at("relative_p", k),
        lambda ctx: {**hits_partial(ctx, k), **num_rel_partial(ctx)},
        lambda p: ratio_or_zero(p(key), pl.min_horizontal(p("num_rel"), pl.lit(k))),
    )


def _mult_cutoff(mult: float, num_rel: pl.Expr) -> pl.Expr:
    # m_Rprec_mult.c: (long) (mult * num_rel + 0.9), in doubles; truncation is floor here
    # because mult > 0.
    return (pl.lit(mult, dtype=pl.Float64) * num_rel.cast(pl.Float64) + 0.9).floor()


def r_precision_mult(*, mult: float = 1.0) -> Metric:
    """Precision at ``c = ⌊mult·R + 0.9⌋`` (trec_eval ``Rprec_mult``, e.g. ``Rprec_mult_0.20``).

    ``hits@c / c``, a list shorter than ``c`` padded with non-relevant rows; 0 when ``c = 0``
    (``R = 0``, or ``mult·R < 0.1``). ``mult=1`` is ``r_precision``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": "q",
    ...         "item": ["a", "b", "c", "d"],
    ...         "score": [3.0, 2.0, 1.0, None],
    ...         "relevance": [1, 0, 1, 1],
    ...     }
    ... )
    >>> # R = 3: cutoffs 1 (0.2·3 + 0.9 = 1.5), 3 and 6 (padded)
    >>> rke.evaluate(log, ["rprec_mult(mult=0.2)", "rprec_mult", "rprec_mult(mult=2)"]).row(0)
    (1.0, 0.6666666666666666, 0.3333333333333333)
    """
    value_mult = _number(mult, "mult", "rprec_mult")
    if value_mult <= 0:
        msg = f"option mult= of 'rprec_mult' must be positive, got {mult!r}"
        raise InvalidOptionError(msg)
    name = named("rprec_mult", {"mult": mult} if value_mult != 1.0 else {})
    key = f"hits@{value_mult!r}R"

    def partials(ctx: RankingContext) -> Partials:
        in_top = (ctx.rank <= _mult_cutoff(value_mult, ctx.num_rel)).fill_null(value=False)
        return {key: exact_sum(ctx.rel_weight, in_top), **num_rel_partial(ctx)}

    def value(p: Lookup) -> pl.Expr:
        return ratio_or_zero(p(key), _mult_cutoff(value_mult, p("num_rel")))

    return Metric(name, partials, value)


def unjudged(k: int) -> Metric:
    """``unj@k``: retrieved rows in the top ``k`` without a judgment, divided by ``k``.

    trec_eval ``unj_k``: a row not in the qrels or with a negative label is unjudged; a list
    shorter than ``k`` is padded with judged rows. ``judged@k + unj@k = min(k, num_ret) / k``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": "q",
    ...         "item": ["a", "b", "c"],
    ...         "score": [3.0, 2.0, 1.0],
    ...         "relevance": [1, -1, None],
    ...     }
    ... )
    >>> rke.evaluate(log, ["unj@1", "unj@3", "unj@4"]).row(0)
    (0.0, 0.6666666666666666, 0.5)
    """
    k = _cutoff(k, "unj")
    key = at("unj", k)

    def partials(ctx: RankingContext) -> Partials:
        # judged_weight is the tie-group average under ties="expected", so this is linear.
        return {key: exact_sum(1.0 - ctx.judged_weight, ctx.within(k))}

    return Metric(
        at("unj", k),
        partials,
        lambda p: exact_quotient(p(key), k),
        direction="lower",
        tie_bounds=JUDGMENT_COVERAGE,
    )
