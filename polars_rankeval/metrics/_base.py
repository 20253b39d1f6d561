"""The metric abstraction shared by every family module.

A metric is up to three small expression builders:

* ``rows(ctx)`` (optional): metric-specific per-row terms that need a window over the ranked
  list (e.g. ERR's running product). The frame-level path materialises them as columns before
  grouping; inside ``group_by().agg()`` they are inlined. Partials read them from ``ctx.extra``.
* ``partials(ctx)``: named aggregations over one ranked list (``sum``/``min`` of per-row terms
  built from the shared :class:`~polars_rankeval._engine.context.RankingContext`). They are plain
  aggregations, so they stream in a ``group_by``. Metrics that need the same partial (e.g.
  ``p@10``, ``recall@10`` and ``f1@10`` all use ``hits@10``) name it the same way and it is
  computed once.
* ``value(partial)``: the per-query value, an element-wise expression over the partials.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import polars as pl

from polars_rankeval._engine.context import BOUND_TIES, RankingContext, Ties
from polars_rankeval._engine.exact_sum import exact_sum
from polars_rankeval._engine.options import check_choice
from polars_rankeval._engine.tables import RowInput, Tables
from polars_rankeval.errors import InvalidOptionError

Partials = dict[str, pl.Expr]
Lookup = Callable[[str], pl.Expr]
RowTerms = Callable[[RankingContext], dict[str, pl.Expr]]
SparseTerms = Callable[[RankingContext], dict[str, tuple[pl.Expr, pl.Expr]]]
Summary = Literal["mean", "sum", "nanmean", "gm"]
Direction = Literal["higher", "lower", "none"]
Level = Literal["query", "system"]
# A per-system metric's reduction: (per-query frame, by keys, its column, tables) -> one row
# per by group (exactly one row when by is empty) with columns by + [column].
SystemReduce = Callable[[pl.LazyFrame, Sequence[str], str, Tables], pl.LazyFrame]
# A per-query metric's finishing step: (per-query frame with its hidden value, the list keys,
# its column, tables) -> the list keys + [column] with the real per-query value.
Finish = Callable[[pl.LazyFrame, Sequence[str], str, Tables], pl.LazyFrame]


def _no_rows(ctx: RankingContext) -> dict[str, pl.Expr]:
    return {}


def _no_sparse_rows(ctx: RankingContext) -> dict[str, tuple[pl.Expr, pl.Expr]]:
    return {}


@dataclass(frozen=True)
class Metric:
    """One metric: its name, its per-row terms, its partial aggregations and its value.

    Attributes
    ----------
    name
        Canonical name, e.g. ``"ndcg@10"``; options that differ from the defaults are shown
        in parentheses, e.g. ``"ndcg@10(gain=exp)"``.
    partials
        Builds the named aggregations the value needs from the ranking context.
    value
        Builds the per-query value from the aggregated partials.
    summary
        How per-query values combine over queries: ``"mean"``, ``"sum"`` (trec_eval sums the
        ``num_*`` counts), ``"nanmean"`` (undefined per-query values are left out) or ``"gm"``
        (trec_eval's geometric mean: ``exp(mean(log(max(value, 0.00001))))``).
    rows
        Metric-specific per-row terms (see the module docstring).
    expected_value
        The per-query value under ``ties="expected"`` when its partials differ from the
        trec ones; ``value`` is used otherwise.
    ties
        Tie handling of this metric; None follows the evaluation's ``ties=``.
    direction
        Which way is better: ``"higher"`` (most metrics), ``"lower"`` (``frp``,
        ``mean_rank``, ``unj``, ``rbp_resid``) or ``"none"`` for counts of the input that rank
        no system above another (``num_q``, ``num_ret``, ``num_rel``). ``compare``, ``report``,
        the plots and the CLI read it; nothing assumes "higher is better".
    level
        ``"query"``: a value per ranked list, combined over queries by ``summary``;
        ``"system"``: a value that only exists over a whole run (e.g. catalog coverage), which
        ``compare`` cannot pair by query.
    needs
        Tables besides the ranked log that the metric reads: ``"train"``, ``"items"``,
        ``"catalog"`` (see :mod:`polars_rankeval._engine.tables`). A missing one is an error naming
        the metric and the keyword.
    inputs
        The per-row columns the metric reads from those tables (:class:`RowInput`), joined to
        the log before ranking.
    reads_labels
        Whether the value depends on the relevance labels. When no metric of an evaluation
        reads them (coverage, novelty, diversity ...), the relevance column may be absent and
        every query with a retrieved row is evaluated, judged or not.
    finish
        For a per-query metric whose value needs a table joined to the list as a whole (the
        pairs of its items, for diversity): ``value`` gives a hidden per-query value (e.g. the
        set of top-k items) and ``finish`` turns the per-query frame into the real values,
        keyed by the list (the rows it does not return get null).
    reduce
        For ``level="system"``: combines the hidden per-query values (``value``, e.g. a list
        of top-k items or an (AUC, weight) struct) into one value per ``by`` group. The
        per-query values are never shown: ``per_query=True`` leaves the metric out.
    relevance_level
        This metric's own relevance level (ir_measures' ``AP(rel=2)``; ``map(rel=2)``),
        overriding the evaluation's ``relevance_level``; None follows it. Metrics of another
        level are evaluated in their own ranking pass, joined by query.
    depth_sensitive
        The value depends on how deep the lists go, so that a shorter list can score better:
        uncut ``frp`` and ``mean_rank`` count a relevant row that was not retrieved as
        ``n + 1`` (``n`` = rows retrieved). ``compare`` warns when systems compared on such a
        metric have different list depths (:mod:`polars_rankeval._engine.meaning`).
    judged_only
        Evaluate this metric on the judged rows only (trec_eval ``-J``, ir_measures'
        ``judged_only=True``): retrieved rows without a judgment, or with a negative label,
        are dropped before ranking, in a ranking pass of its own.
    tie_bounds
        None when ``ties="optimistic"``/``"pessimistic"`` are the metric's best and worst
        cases over the orders of tied scores; otherwise why they are not (the metric measures
        the judgments, or reads no label), which refuses them.
    later_rows
        Per-row terms that read ``rows``' terms from ``ctx.extra`` (a second window stage).
    sparse_rows
        Per-row terms defined on a few rows of each list, as ``(rows, expression)``: their
        windows run over those rows only (with the context's sparse ranks, before ``rows``),
        so the expression must mask its rows before any window and read no sparse rank.
        Other rows get null. ``rows`` and ``partials`` read them from ``ctx.extra``.
    """

    name: str
    partials: Callable[[RankingContext], Partials]
    value: Callable[[Lookup], pl.Expr]
    summary: Summary = "mean"
    rows: RowTerms = _no_rows
    expected_value: Callable[[Lookup], pl.Expr] | None = None
    later_rows: RowTerms = _no_rows
    ties: Ties | None = None
    sparse_rows: SparseTerms = _no_sparse_rows
    direction: Direction = "higher"
    level: Level = "query"
    needs: tuple[str, ...] = ()
    inputs: tuple[RowInput, ...] = ()
    reads_labels: bool = True
    reduce: SystemReduce | None = None
    finish: Finish | None = None
    tie_bounds: str | None = None
    relevance_level: int | None = None
    judged_only: bool = False
    depth_sensitive: bool = False

    @property
    def higher_is_better(self) -> bool | None:
        """True, False, or None for a metric with no direction (a count of the input)."""
        return None if self.direction == "none" else self.direction == "higher"

    def value_for(self, ctx: RankingContext) -> Callable[[Lookup], pl.Expr]:
        """The value builder that matches the context's tie handling."""
        if ctx.expected and self.expected_value is not None:
            return self.expected_value
        return self.value


def check_cutoff(k: object, metric: str, *, required: bool) -> int | None:
    """Validate a rank cutoff: a positive int up to 2^63-1, or None where allowed."""
    if k is None:
        if required:
            msg = f"metric {metric!r} needs a cutoff k, e.g. '{metric}@10' or {metric}(k=10)"
            raise InvalidOptionError(msg)
        return None
    if isinstance(k, bool) or not isinstance(k, int):
        msg = f"cutoff k for {metric!r} must be a positive int, got {k!r}"
        raise InvalidOptionError(msg)
    if k <= 0:
        msg = f"cutoff k for {metric!r} must be a positive int, got {k}"
        raise InvalidOptionError(msg)
    max_cutoff = 2**63 - 1
    if k > max_cutoff:
        # k becomes a Polars literal: past Int64 it turns UInt64 or Int128, and some metrics
        # (p@k, f1@k) then silently give null or a wrong value; no list is that long anyway.
        msg = (
            f"cutoff k for {metric!r} must be at most {max_cutoff} (2^63-1, the Int64 "
            f"maximum), got {k}"
        )
        raise InvalidOptionError(msg)
    return k


def required_cutoff(k: object, metric: str) -> int:
    """A cutoff the metric cannot do without: a positive int (see :func:`check_cutoff`)."""
    checked = check_cutoff(k, metric, required=True)
    assert checked is not None  # required=True never returns None
    return checked


def at(name: str, k: int | None) -> str:
    """``"ndcg"`` or ``"ndcg@10"``."""
    return name if k is None else f"{name}@{k}"


def named(base: str, options: Mapping[str, object]) -> str:
    """``base`` plus the non-default options, e.g. ``"ndcg@10(gain=exp,log_base=10)"``."""
    if not options:
        return base
    return base + "(" + ",".join(f"{key}={value}" for key, value in options.items()) + ")"


def with_option(name: str, key: str, value: object) -> str:
    """Add one option to a metric name: ``ndcg@10`` → ``ndcg@10(ties=expected)``."""
    if name.endswith(")"):
        return f"{name[:-1]},{key}={value})"
    return f"{name}({key}={value})"


def ratio_or_zero(numerator: pl.Expr, denominator: pl.Expr) -> pl.Expr:
    """``numerator / denominator``, and 0 where the denominator is 0 (trec_eval's convention)."""
    return (
        pl.when(denominator > 0)
        .then(numerator.cast(pl.Float64) / denominator.cast(pl.Float64))
        .otherwise(0.0)
    )


def no_closed_form(ctx: RankingContext, metric: str) -> None:
    """Refuse ``ties="expected"`` for a metric whose expectation has no closed form here."""
    if ctx.expected:
        msg = (
            f"ties='expected' has no closed form for {metric!r}; evaluate it with ties='trec' "
            "(or leave it out of this evaluate call)"
        )
        raise InvalidOptionError(msg)


# Why judged@k, unj@k and rbp_resid refuse ties="optimistic"/"pessimistic".
JUDGMENT_COVERAGE = "it measures how much of the ranking is judged, not how good it is"


def check_tie_bound(label: str, metric: Metric, mode: str) -> None:
    """Refuse an optimistic/pessimistic tie order where it is no best or worst case."""
    if mode not in BOUND_TIES:
        return
    reason = metric.tie_bounds
    if reason is None and not metric.reads_labels:
        reason = "its value reads no relevance label, so no order of the ties is better"
    if reason is not None:
        msg = (
            f"ties={mode!r} is not defined for {label!r}: {reason}; evaluate it with "
            "ties='trec' (or leave it out of this evaluate call)"
        )
        raise InvalidOptionError(msg)


def num_rel_partial(ctx: RankingContext) -> Partials:
    """``R``: relevant judged rows of the list, retrieved or not."""
    return {"num_rel": ctx.relevant.sum()}


NonPositiveScores = Literal["keep", "nonrelevant"]
NONPOSITIVE_SCORES: tuple[NonPositiveScores, ...] = ("keep", "nonrelevant")


def check_nonpositive_scores(value: object) -> NonPositiveScores:
    """Validate ``nonpositive_scores=``."""
    return check_choice("nonpositive_scores", value, NONPOSITIVE_SCORES)


def scored_positive(ctx: RankingContext) -> pl.Expr:
    """Rows whose score is positive as torchmetrics judges it: ``preds > 0`` in float32.

    torchmetrics casts predictions to float32 first, so a score below float32's smallest
    subnormal counts as 0; NaN is not positive (IEEE), although Polars orders NaN above +inf.
    """
    as_float32 = ctx.score.cast(pl.Float32)
    return ((as_float32 > 0) & as_float32.is_not_nan()).fill_null(value=False)


def counted_rows(ctx: RankingContext, nonpositive_scores: NonPositiveScores) -> pl.Expr:
    """Rows whose relevance counts in a hit: all, or only positively scored ones.

    ``"nonrelevant"`` is torchmetrics' rule (>= 1.8) for precision, recall, AP and RR: a row
    scored ``<= 0`` keeps its rank but its target is zeroed. Such rows rank below every
    positively scored row, so the ranks and running counts of the others do not change and
    dropping the rows' relevance is a filter on the per-row terms.
    """
    if nonpositive_scores == "keep":
        return pl.lit(value=True)
    return scored_positive(ctx)


def hits_key(k: int | None, nonpositive_scores: NonPositiveScores = "keep") -> str:
    """Name of the hits partial; its variant that ignores non-positive rows has its own."""
    return at("hits", k) + ("(positive)" if nonpositive_scores == "nonrelevant" else "")


def hits_partial(
    ctx: RankingContext, k: int | None, nonpositive_scores: NonPositiveScores = "keep"
) -> Partials:
    """Relevant rows retrieved at rank ``<= k`` (whole list when ``k`` is None).

    An integer count under trec ties; its expectation (a float) under ``ties="expected"``.
    With ``nonpositive_scores="nonrelevant"`` rows scored ``<= 0`` are not counted.
    """
    key = hits_key(k, nonpositive_scores)
    rows = ctx.within(k) & counted_rows(ctx, nonpositive_scores)
    if ctx.expected:
        return {key: exact_sum(ctx.rel_weight, rows)}
    return {key: (ctx.relevant & rows).sum().cast(pl.Int64)}


def per_group(frame: pl.LazyFrame, by: Sequence[str], *aggregations: pl.Expr) -> pl.LazyFrame:
    """Aggregations per ``by`` group, or over the whole frame (one row) when ``by`` is empty.

    The shape every :data:`SystemReduce` returns: one row per group present, and exactly one
    row without ``by`` even when the frame is empty.
    """
    if not by:
        return frame.select(*aggregations)
    return frame.group_by(list(by)).agg(*aggregations)
