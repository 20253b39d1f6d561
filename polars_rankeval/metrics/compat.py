"""Compatibility (``compat``), ir_measures' ``Accuracy`` (``accuracy@k``) and ``ncg@k``.

**Compat** (Clarke, Vtyurina & Smucker, TOIS 2021; ir_measures provider ``compat``): the
rank-biased overlap of the run with an ideal ranking, to depth ``D = max(|run|, |ideal|)``::

    RBO = Σ_{d ≤ D} p^(d-1) · |A_d ∩ B_d| / d  ÷  Σ_{d ≤ D} p^(d-1)

``A_d``/``B_d`` are the first ``d`` items of the run (every retrieved row, judged or not,
score descending, ties by item **ascending** as ir_measures sorts) and of the ideal list (the
rows labelled ``> 0``, retrieved or not, by label descending, then by run score with 0.0 for an
unretrieved row). ir_measures keeps the qrels' file order among rows that tie on both (an
unretrieved row and one scored 0.0 tie); here they go by item ascending, which is that order
for a qrels file sorted by document id, as TREC's are.
``normalize=True`` (default) divides by ``RBO(ideal, ideal)``; a list with no relevant row
scores 0. ``relevance_level`` does not apply (ir_measures: label ``> 0``).

An item in both lists at run rank ``r`` and ideal rank ``i`` is in ``A_d ∩ B_d`` for every
``d >= max(r, i)``, so the numerator is ``Σ_items [F(D) − F(max(r, i) − 1)]`` with
``F(n) = Σ_{d ≤ n} p^(d-1)/d``, and ``RBO(ideal, ideal) · Σ p^(d-1)`` is
``Z(|I|) + |I|·(F(D) − F(|I|))``, ``Z(n) = (1 − p^n)/(1 − p)``. ``F`` has no closed form
(a Lerch transcendent); it is read from one cumulative sum per batch.

**Accuracy** (ir_measures ``Accuracy@k(rel=1)``): over the rows retrieved within ``k``, the
share of (relevant, non-relevant) pairs ranked relevant first:
``1 − Σ_{relevant i} nonrel_above(i) / (N_nonrel · R_ret)``. A row is relevant when its label
is ``>= rel`` (an unjudged row counts as label 0, as in ir_measures). ir_measures leaves out a
list with no relevant row retrieved; one with no non-relevant row retrieved raises
``ZeroDivisionError`` there. Both have no pair to count: the value is null and the mean leaves
them out. A list with nothing retrieved (``missing_queries="zero"``) scores 0, ir_measures'
default for a query without results.

**NCG** (TREC Deep Learning's normalised cumulative gain): ``Σ_{r ≤ k} gain_r`` over the same
sum for the ideal list of every judged row, cut at ``k``; linear gain by default.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import polars as pl

from polars_rankeval._engine.context import (
    ITEM_ASC_RANK,
    RankingContext,
    item_ascending_later_rows,
    item_ascending_rows,
)
from polars_rankeval._engine.exact_sum import exact_quotient, exact_sum
from polars_rankeval._engine.options import check_choice
from polars_rankeval.errors import InvalidOptionError
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
from polars_rankeval.metrics.dcg import gain_expr

NcgGain = Literal["linear", "exp"]


def _decayed_harmonic(n: pl.Expr, p: float) -> pl.Expr:
    """``F(n) = Σ_{d=1}^{n} p^(d-1)/d`` (0 for ``n <= 0``), elementwise."""

    def table(values: pl.Series) -> pl.Series:
        counts = values.cast(pl.Int64).fill_null(0).to_numpy()
        present = values.is_not_null().to_numpy()
        top = int(counts[present].max()) if present.any() else 0
        depth = np.arange(1, max(top, 0) + 1, dtype=np.float64)
        # p^(d-1) by repeated products (as ir_measures' weight *= p), then the running sum
        weight = np.cumprod(np.concatenate(([1.0], np.full(max(top - 1, 0), p))))[: depth.size]
        cumulative = np.concatenate(([0.0], np.cumsum(weight / depth)))
        index = np.clip(np.where(present, counts, 0), 0, None)
        # NaN marks the null inputs, then becomes null again
        out = np.where(present, cumulative[index], np.nan)
        return pl.Series(values.name, out, dtype=pl.Float64).fill_nan(None)

    return n.map_batches(table, return_dtype=pl.Float64, is_elementwise=True)


def _persistence(p: object) -> float:
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p < 1:
        msg = f"option p= must be a number in (0, 1), got {p!r}"
        raise InvalidOptionError(msg)
    return float(p)


def compat(*, p: float = 0.95, normalize: bool = True) -> Metric:
    """Compatibility: RBO of the run with the ideal ranking (ir_measures ``Compat``).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {"query": "q", "item": ["a", "b"], "score": [2.0, 1.0], "relevance": [0, 1]}
    ... )
    >>> # run (a, b), ideal (b): overlap 0 at depth 1, 1 at depth 2; best: 1 and 1
    >>> rke.evaluate(log, ["compat(p=0.5)"]).item()  # (0.5 · 1/2) / (1 + 0.5 · 1/2)
    0.2
    """
    persistence = _persistence(p)
    if not isinstance(normalize, bool):
        msg = f"option normalize= must be True or False, got {normalize!r}"
        raise InvalidOptionError(msg)
    shown: dict[str, object] = {}
    if persistence != 0.95:
        shown["p"] = f"{persistence:g}"
    if not normalize:
        shown["normalize"] = False
    name = named("compat", shown)
    ideal_key = "compat_ideal_rank"
    tail_key, both_key = f"{name}:tail", f"{name}:both"
    term_key = "compat_tail" + named("", {"p": f"{persistence:g}"})
    run_key, rel_key = "compat_num_ret", "compat_num_ideal"

    def ideal_member(ctx: RankingContext) -> pl.Expr:
        return (ctx.label > 0).fill_null(value=False)

    def sparse_rows(ctx: RankingContext) -> dict[str, tuple[pl.Expr, pl.Expr]]:
        no_closed_form(ctx, "compat")
        member = ideal_member(ctx)
        # label descending, then score (0.0 when unretrieved) descending, then item
        # ascending (a sorted qrels file's order): ranked ascending with the descending
        # fields negated (+ 0.0 makes -0.0 and 0.0 one value, as Python's sort sees them)
        key = pl.struct(
            (-ctx.label).alias("label"),
            (-ctx.score.cast(pl.Float64).fill_null(0.0) + 0.0).alias("score"),
            ctx.item.alias("item") if ctx.item is not None else pl.lit(""),
        )
        return {ideal_key: (member, ctx.over(pl.when(member).then(key).rank("ordinal")))}

    def later_rows(ctx: RankingContext) -> dict[str, pl.Expr]:
        terms = item_ascending_later_rows(ctx)
        run_rank = terms[ITEM_ASC_RANK].cast(pl.Int64)
        ideal_rank = ctx.extra[ideal_key].cast(pl.Int64)
        both = ctx.retrieved & ideal_member(ctx)
        joined = pl.when(both).then(pl.max_horizontal(run_rank, ideal_rank))
        # F(max(r, i) - 1) per row: the table lookup is elementwise here, so it streams
        return {**terms, term_key: _decayed_harmonic(joined - 1, persistence)}

    def partials(ctx: RankingContext) -> Partials:
        both = ctx.retrieved & ideal_member(ctx)
        return {
            tail_key: exact_sum(ctx.extra[term_key], both),
            both_key: both.sum().cast(pl.Float64),
            run_key: ctx.retrieved.sum().cast(pl.Int64),
            rel_key: ideal_member(ctx).sum().cast(pl.Int64),
        }

    def value(lookup: Lookup) -> pl.Expr:
        ideal = lookup(rel_key)
        depth = pl.max_horizontal(lookup(run_key), ideal)
        whole = _decayed_harmonic(depth, persistence)
        overlap = lookup(both_key) * whole - lookup(tail_key)
        if normalize:
            head = exact_quotient(1.0 - pl.lit(persistence).pow(ideal), 1.0 - persistence)
            best = head + ideal.cast(pl.Float64) * (whole - _decayed_harmonic(ideal, persistence))
            return ratio_or_zero(overlap, best)
        norm = exact_quotient(1.0 - pl.lit(persistence).pow(depth), 1.0 - persistence)
        return ratio_or_zero(overlap, norm)

    return Metric(
        name,
        partials,
        value,
        rows=item_ascending_rows,
        later_rows=later_rows,
        sparse_rows=sparse_rows,
        tie_bounds=(
            "its ideal ranking breaks ties between equal labels by the run's scores, so the "
            "order of tied rows moves the ideal ranking too"
        ),
    )


def accuracy(k: int | None = None, *, rel: int = 1) -> Metric:
    """ir_measures ``Accuracy@k(rel=)``: share of (relevant, non-relevant) pairs in order.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": "q",
    ...         "item": ["a", "b", "c"],
    ...         "score": [3.0, 2.0, 1.0],
    ...         "relevance": [0, 1, None],
    ...     }
    ... )
    >>> rke.evaluate(log, ["accuracy"]).item()  # b is above c, below a: 1 of 2 pairs
    0.5
    """
    k = check_cutoff(k, "accuracy", required=False)
    if isinstance(rel, bool) or not isinstance(rel, int):
        msg = f"option rel= must be an int (the lowest relevant label), got {rel!r}"
        raise InvalidOptionError(msg)
    name = at("accuracy", k) + named("", {"rel": rel} if rel != 1 else {})
    ranks_key, hits_key, seen_key = f"{name}:ranks", f"{name}:hits", at("accuracy_seen", k)

    def partials(ctx: RankingContext) -> Partials:
        no_closed_form(ctx, "accuracy")
        relevant = (ctx.label.fill_null(0) >= rel) & ctx.within(k)
        return {
            ranks_key: ctx.rank.cast(pl.Float64).filter(relevant).sum(),
            hits_key: relevant.sum().cast(pl.Float64),
            seen_key: ctx.within(k).sum().cast(pl.Float64),
        }

    def value(lookup: Lookup) -> pl.Expr:
        hits = lookup(hits_key)
        nonrelevant = lookup(seen_key) - hits
        # Σ nonrel_above(i) = Σ rank_i − (1 + 2 + ... + R): the relevant rows above each
        above = lookup(ranks_key) - hits * (hits + 1.0) / 2.0
        pairs = nonrelevant * hits
        # a list with nothing retrieved (missing_queries="zero") scores 0, ir_measures'
        # default for a query without results
        return pl.when(pairs > 0).then(1.0 - above / pairs).when(lookup(seen_key) == 0).then(0.0)

    return Metric(name, partials, value)


def ncg(k: int | None = None, *, gain: NcgGain = "linear") -> Metric:
    """Normalised cumulative gain: ``CG@k`` over the ideal ``CG@k`` (TREC DL ``NCG@k``).

    ``gain="exp"`` uses ``2^label − 1``. Both order labels alike, so the ideal list is the
    judged rows by label. Under ``ties="expected"`` each tied row earns its group's mean gain.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": "q",
    ...         "item": ["a", "b", "c"],
    ...         "score": [3.0, 2.0, None],
    ...         "relevance": [1, 0, 3],
    ...     }
    ... )
    >>> rke.evaluate(log, ["ncg@2"]).item()  # (1 + 0) / (3 + 1)
    0.25
    """
    k = check_cutoff(k, "ncg", required=False)
    chosen: NcgGain = check_choice("gain", gain, ["linear", "exp"])
    name = at("ncg", k) + named("", {"gain": chosen} if chosen != "linear" else {})
    mean_key, run_key, ideal_key = f"ncg_gain_mean({chosen})", f"{name}:run", f"{name}:ideal"

    def row_gain(ctx: RankingContext) -> pl.Expr:
        return gain_expr(ctx.label, chosen, ctx.relevant)

    def rows(ctx: RankingContext) -> dict[str, pl.Expr]:
        if ctx.expected:
            return {mean_key: ctx.tie_groups("ncg").spread(row_gain(ctx))}
        return {}

    def partials(ctx: RankingContext) -> Partials:
        own = ctx.extra[mean_key] if ctx.expected else row_gain(ctx)
        in_ideal = ctx.ideal_rank.is_not_null()
        if k is not None:
            in_ideal = in_ideal & (ctx.ideal_rank <= k).fill_null(value=False)
        return {
            run_key: exact_sum(own, ctx.within(k)),
            ideal_key: exact_sum(row_gain(ctx), in_ideal),
        }

    def value(lookup: Lookup) -> pl.Expr:
        ratio = ratio_or_zero(lookup(run_key), lookup(ideal_key))
        # the two sums add the same gains in different orders: clip an ulp above 1
        return pl.when((ratio > 1.0) & (ratio < 1.0 + 1e-12)).then(1.0).otherwise(ratio)

    return Metric(name, partials, value, rows=rows)
