"""The ranking context: every per-row quantity the metrics share, built once.

A ranked list is one ``(*by, query)`` partition. For each row the context gives

* ``retrieved``: the row has a score (a null score is judged but not retrieved);
* ``rank``: 1-based position under trec_eval's rule (score descending, then the item's
  string form descending in byte order); null when not retrieved;
* ``relevant``: ``relevance >= relevance_level`` (and the label is not negative);
* ``judged``: the row has a non-negative label (negative = pooled but unjudged, as trec_eval);
* ``gain``: the label when positive, else 0 (linear gain, as trec_eval ``ndcg``);
* ``relevant_rank`` / ``judged_rank``: how many relevant / judged retrieved rows sit at or
  above this one (null for other rows), i.e. running counts written as ranks so they also
  work inside ``group_by().agg()``;
* ``ideal_rank``: position of the row in the ideal ordering of all judged gains;
* ``num_rel`` / ``num_judged_nonrel``: per-list totals broadcast to every row.

The same expressions serve two settings: the frame-level path materialises them as window
columns (``.over(partition)``, which stream), and the expression namespace inlines them inside
a ``group_by().agg()`` where each group already is one list.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from polars_rankeval._columns import Columns

Window = Callable[[pl.Expr], pl.Expr]


@dataclass(frozen=True)
class RankingContext:
    """Per-row expressions shared by all metrics of one evaluation."""

    retrieved: pl.Expr
    rank: pl.Expr
    relevant: pl.Expr
    judged: pl.Expr
    has_label: pl.Expr
    gain: pl.Expr
    relevant_rank: pl.Expr
    judged_rank: pl.Expr
    ideal_rank: pl.Expr
    num_rel: pl.Expr
    num_judged_nonrel: pl.Expr

    def within(self, k: int | None) -> pl.Expr:
        """Rows retrieved at rank ``<= k`` (all retrieved rows when ``k`` is None)."""
        if k is None:
            return self.retrieved
        return (self.rank <= k).fill_null(value=False)


def trec_rank(score: pl.Expr, item: pl.Expr) -> pl.Expr:
    """Ordinal rank by score descending, ties by the item's string form descending.

    Retrieved rows (non-null score) always come before unretrieved ones, so their ranks are
    exactly ``1..n``; the rank of an unretrieved row is set to null.
    """
    retrieved = score.is_not_null()
    key = pl.struct(
        retrieved.alias("retrieved"),
        score.alias("score"),
        item.cast(pl.String).alias("item"),
    )
    return pl.when(retrieved).then(key.rank("ordinal", descending=True))


def _row_flags(relevance: pl.Expr, score: pl.Expr, relevance_level: int) -> dict[str, pl.Expr]:
    label = relevance.cast(pl.Int64)
    return {
        "retrieved": score.is_not_null(),
        "relevant": ((label >= relevance_level) & (label >= 0)).fill_null(value=False),
        "judged": (label >= 0).fill_null(value=False),
        "has_label": label.is_not_null(),
        "gain": pl.when(label > 0).then(label).otherwise(0).cast(pl.Float64),
    }


def _derived(flags: dict[str, pl.Expr], rank: pl.Expr, over: Window) -> dict[str, pl.Expr]:
    retrieved, relevant, judged, gain = (
        flags["retrieved"],
        flags["relevant"],
        flags["judged"],
        flags["gain"],
    )
    return {
        "relevant_rank": over(pl.when(relevant & retrieved).then(rank).rank("ordinal")),
        "judged_rank": over(pl.when(judged & retrieved).then(rank).rank("ordinal")),
        "ideal_rank": over(
            pl.when(gain > 0).then(gain).rank("ordinal", descending=True),
        ),
        "num_rel": over(relevant.sum()),
        "num_judged_nonrel": over((judged & ~relevant).sum()),
    }


_PREFIX = "__rke_"


def ranked_frame(
    lf: pl.LazyFrame,
    columns: Columns,
    relevance_level: int,
) -> tuple[pl.LazyFrame, RankingContext]:
    """Add the context as window columns to ``lf`` (one pass of windows over the partition).

    Columns the chosen metrics do not use are pruned by Polars' projection pushdown, so the
    context costs only what the metrics need.
    """
    partition = columns.partition

    def over(expr: pl.Expr) -> pl.Expr:
        return expr.over(partition)

    flags = _row_flags(pl.col(columns.relevance), pl.col(columns.score), relevance_level)
    rank = over(trec_rank(pl.col(columns.score), pl.col(columns.item)))
    stage1 = {**flags, "rank": rank}
    lf = lf.with_columns(**{_PREFIX + name: expr for name, expr in stage1.items()})
    refs = {name: pl.col(_PREFIX + name) for name in stage1}
    stage2 = _derived(refs, refs["rank"], over)
    lf = lf.with_columns(**{_PREFIX + name: expr for name, expr in stage2.items()})
    refs.update({name: pl.col(_PREFIX + name) for name in stage2})
    return lf, RankingContext(**refs)


def group_context(
    relevance: pl.Expr,
    score: pl.Expr,
    item: pl.Expr,
    relevance_level: int,
) -> RankingContext:
    """The context as plain expressions, for use inside ``group_by(query).agg()``."""
    flags = _row_flags(relevance, score, relevance_level)
    rank = trec_rank(score, item)
    derived = _derived(flags, rank, lambda expr: expr)
    return RankingContext(**flags, rank=rank, **derived)
