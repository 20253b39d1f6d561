"""Set-based measures over the top ``k``: precision, recall, success, hits, F1, judged, R-precision.

All count rows in the top ``k``; as in trec_eval, a list shorter than ``k`` is padded with
non-relevant rows (``p@k`` always divides by ``k``).

Options that reproduce other tools (the convention presets set them):

* ``nonpositive_scores`` (``p``, ``recall``): ``"keep"`` (default) or ``"nonrelevant"``, the
  rule of torchmetrics >= 1.8: a row scored ``<= 0`` keeps its rank but never counts as a hit;
  ``recall`` still counts it in ``R``.
* ``denominator``, ``tie_order``, ``count_negative`` (``judged``): ir_measures' ``Judged@k``.
"""

from __future__ import annotations

from typing import Literal

import polars as pl

from polars_rankeval._engine.context import (
    ITEM_ASC_RANK,
    RankingContext,
    TieOrder,
    check_tie_order,
    item_ascending_later_rows,
    item_ascending_rows,
)
from polars_rankeval._engine.exact_sum import exact_quotient, exact_sum
from polars_rankeval._engine.options import check_choice
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.metrics._base import (
    JUDGMENT_COVERAGE,
    Lookup,
    Metric,
    NonPositiveScores,
    Partials,
    at,
    check_cutoff,
    check_nonpositive_scores,
    hits_key,
    hits_partial,
    named,
    num_rel_partial,
    ratio_or_zero,
)

JudgedDenominator = Literal["k", "min_k_n"]


def _cutoff(k: int | None, name: str) -> int:
    checked = check_cutoff(k, name, required=True)
    assert checked is not None  # required=True never returns None
    return checked


def _nonpositive_suffix(nonpositive_scores: NonPositiveScores) -> str:
    shown = {"nonpositive_scores": nonpositive_scores} if nonpositive_scores != "keep" else {}
    return named("", shown)


def precision(k: int, *, nonpositive_scores: NonPositiveScores = "keep") -> Metric:
    """``p@k = hits@k / k`` (trec_eval ``P_k``).

    ``nonpositive_scores="nonrelevant"``: a row scored ``<= 0`` is never a hit
    (torchmetrics >= 1.8 ``retrieval_precision``); it still takes its place in the ranking.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {"query": "q", "item": ["a", "b", "c"], "score": 0.0, "relevance": [1, 0, 1]}
    ... )
    >>> # Every score is 0: torchmetrics zeroes the targets, so no row is a hit.
    >>> p_tm = rke.metrics.precision(2, nonpositive_scores="nonrelevant")
    >>> rke.evaluate(log, ["p@2", p_tm]).row(0)
    (0.5, 0.0)
    """
    k = _cutoff(k, "p")
    nonpositive_scores = check_nonpositive_scores(nonpositive_scores)
    key = hits_key(k, nonpositive_scores)
    return Metric(
        at("p", k) + _nonpositive_suffix(nonpositive_scores),
        lambda ctx: hits_partial(ctx, k, nonpositive_scores),
        lambda p: exact_quotient(p(key), k),
    )


def hits(k: int) -> Metric:
    """``hits@k``: relevant rows in the top ``k``."""
    k = _cutoff(k, "hits")
    key = at("hits", k)
    return Metric(at("hits", k), lambda ctx: hits_partial(ctx, k), lambda p: p(key))


def recall(k: int, *, nonpositive_scores: NonPositiveScores = "keep") -> Metric:
    """``recall@k = hits@k / R``, 0 when ``R = 0`` (trec_eval ``recall_k``).

    ``nonpositive_scores="nonrelevant"``: a row scored ``<= 0`` is never a hit but still
    counts in ``R`` (torchmetrics >= 1.8 ``retrieval_recall``).
    """
    k = _cutoff(k, "recall")
    nonpositive_scores = check_nonpositive_scores(nonpositive_scores)
    key = hits_key(k, nonpositive_scores)
    return Metric(
        at("recall", k) + _nonpositive_suffix(nonpositive_scores),
        lambda ctx: {**hits_partial(ctx, k, nonpositive_scores), **num_rel_partial(ctx)},
        lambda p: ratio_or_zero(p(key), p("num_rel")),
    )


def success(k: int, *, name: str = "success") -> Metric:
    """``success@k``: 1 if any relevant row is in the top ``k`` (trec_eval ``success_k``).

    Under ``ties="expected"``: ``1 - P(no relevant row in the top k)``. Only the tie group that
    holds rank ``k`` is uncertain; it has no relevant row in its first ``o`` positions with
    probability ``C(t - r, o) / C(t, o)`` (zero if a relevant row sits above the group).
    """
    k = _cutoff(k, name)
    key = at("hits", k)

    def partials(ctx: RankingContext) -> Partials:
        if not ctx.expected:
            return hits_partial(ctx, k)
        tie = ctx.tie_groups(name)
        at_k = (ctx.rank == k).fill_null(value=False) & (tie.relevant_above == 0)
        return {
            at("p_none", k): exact_sum(tie.none_through, at_k),
            "num_ret": ctx.retrieved.sum(),
            "num_rel_ret": (ctx.relevant & ctx.retrieved).sum(),
        }

    def value(p: Lookup) -> pl.Expr:
        # Under trec ties only "hits@k" exists; under expected ties only the others do.
        return (p(key) > 0).cast(pl.Float64)

    def expected_value(p: Lookup) -> pl.Expr:
        return (
            pl.when(p("num_ret") >= k)
            .then(1.0 - p(at("p_none", k)))
            .otherwise((p("num_rel_ret") > 0).cast(pl.Float64))
        )

    return Metric(at(name, k), partials, value, expected_value=expected_value)


def f1(k: int) -> Metric:
    """``f1@k = 2·p@k·recall@k / (p@k + recall@k) = 2·hits@k / (k + R)``; 0 when no hit."""
    k = _cutoff(k, "f1")
    key = at("hits", k)
    return Metric(
        at("f1", k),
        lambda ctx: {**hits_partial(ctx, k), **num_rel_partial(ctx)},
        lambda p: (2.0 * p(key)) / (k + p("num_rel")),
    )


def judged(
    k: int,
    *,
    denominator: JudgedDenominator = "k",
    tie_order: TieOrder = "item_desc",
    count_negative: bool = False,
) -> Metric:
    """``judged@k``: rows in the top ``k`` that carry a non-negative label, divided by ``k``.

    Equals ``min(k, n)/k - unj_k`` of trec_eval, where ``n`` is the list length. Options (all
    three set by ``convention="ir_measures"``, whose ``Judged@k`` differs on each):

    * ``denominator``: ``"k"`` (default) or ``"min_k_n"``, ``min(k, n)`` (0 when ``n = 0``);
    * ``tie_order``: ``"item_desc"`` (default, trec_eval) or ``"item_asc"``, tied scores by
      item ascending; it decides which tied rows fall inside the top ``k`` (ignored under
      ``ties="expected"``, which averages over every order);
    * ``count_negative``: when True a negative label counts as judged (every label does);
      by default it counts only under ``negative_labels="nonrelevant"``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {"query": "q", "item": ["a", "b"], "score": [2.0, 1.0], "relevance": [-1, 1]}
    ... )
    >>> # Two rows retrieved; a (label -1) is pooled but unjudged unless count_negative=True.
    >>> rke.evaluate(
    ...     log,
    ...     ["judged@4", "judged@4(denominator=min_k_n)", "judged@4(count_negative=true)"],
    ... ).row(0)
    (0.25, 0.5, 0.5)
    """
    k = _cutoff(k, "judged")
    denominator = check_choice("denominator", denominator, ["k", "min_k_n"])
    tie_order = check_tie_order(tie_order)
    if not isinstance(count_negative, bool):
        msg = f"option count_negative= must be True or False, got {count_negative!r}"
        raise InvalidOptionError(msg)
    shown: dict[str, object] = {}
    if denominator != "k":
        shown["denominator"] = denominator
    if tie_order != "item_desc":
        shown["tie_order"] = tie_order
    if count_negative:
        shown["count_negative"] = True
    suffix = named("", shown)
    key = at("judged", k) + named("", {o: v for o, v in shown.items() if o != "denominator"})

    labelled_mean = "labelled_mean"

    def item_asc(ctx: RankingContext) -> bool:
        return tie_order == "item_asc" and not ctx.expected

    def rows(ctx: RankingContext) -> dict[str, pl.Expr]:
        if item_asc(ctx):
            return item_ascending_rows(ctx)
        if count_negative and ctx.expected:
            # The tie-group average of "has a label", as judged_weight is of "judged".
            spread = ctx.tie_groups("judged").spread
            return {labelled_mean: spread(ctx.has_label.cast(pl.Float64))}
        return {}

    def partials(ctx: RankingContext) -> Partials:
        if item_asc(ctx):
            in_top = (ctx.extra[ITEM_ASC_RANK] <= k).fill_null(value=False)
        else:
            in_top = ctx.within(k)
        if not count_negative:
            weight = ctx.judged_weight
        elif ctx.expected:
            weight = ctx.extra[labelled_mean]
        else:
            weight = ctx.has_label.cast(pl.Float64)
        extra = {"num_ret": ctx.retrieved.sum()} if denominator == "min_k_n" else {}
        return {key: exact_sum(weight, in_top), **extra}

    def value(p: Lookup) -> pl.Expr:
        if denominator == "min_k_n":
            return ratio_or_zero(p(key), pl.min_horizontal(p("num_ret"), pl.lit(k)))
        return exact_quotient(p(key), k)

    return Metric(
        at("judged", k) + suffix,
        partials,
        value,
        rows=rows,
        later_rows=lambda ctx: item_ascending_later_rows(ctx) if item_asc(ctx) else {},
        tie_bounds=JUDGMENT_COVERAGE,
    )


def r_precision() -> Metric:
    """``hits@R / R`` with ``R`` relevant rows; 0 when ``R = 0`` (trec_eval ``Rprec``)."""

    def partials(ctx: RankingContext) -> Partials:
        in_top_r = (ctx.rank <= ctx.num_rel).fill_null(value=False)
        return {"hits@R": exact_sum(ctx.rel_weight, in_top_r), **num_rel_partial(ctx)}

    return Metric("r_precision", partials, lambda p: ratio_or_zero(p("hits@R"), p("num_rel")))
