"""The ranking context: every per-row quantity the metrics share, built once.

A ranked list is one ``(*by, query)`` partition. For each row the context gives

* ``retrieved``: the row has a score (a null score is judged but not retrieved);
* ``score``: the row's score as given (null when not retrieved);
* ``rank``: 1-based position under trec_eval's rule (score descending, then the item's
  string form descending in byte order); null when not retrieved;
* ``label``: the relevance label as Int64 (null when unjudged);
* ``relevant``: ``label >= relevance_level`` (and the label is not negative);
* ``judged``: the row has a non-negative label (negative = pooled but unjudged, as trec_eval);
* ``gain``: the label when positive, else 0 (linear gain, as trec_eval ``ndcg``);
* ``relevant_rank`` / ``judged_rank`` / ``labelled_rank``: how many relevant / judged /
  labelled retrieved rows sit at or above this one (null for other rows): running counts
  written as ranks, so they share the order's window pass;
* ``ideal_rank``: position of the row in the ideal ordering of all judged gains;
* ``num_rel`` / ``num_judged_nonrel`` / ``max_label``: per-list totals broadcast to every row;
* ``score_key`` / ``item``: the order's key without its item part, and the item as a string,
  for metrics that break ties the other way (``tie_order="item_asc"``, see
  :func:`item_ascending_rows`).

With ``ties="optimistic"`` (``"pessimistic"``) the rows of each tie group are ordered by their
label, highest (lowest) first, before the item rule: the best (worst) case over all orders of the
ties for every metric that rewards ranking higher labels higher. Unjudged rows sit between the
positive labels and the judged zeros, which is also the best (worst) place for bpref and infAP,
whose non-relevant rows count only when judged. Each is one more order window beside trec's.

With ``ties="expected"`` the context also describes each group of tied scores (McSherry &
Najork 2008): its size ``t``, relevant count ``r``, the number of rows above it ``c``, the
row's offset inside it, the relevant rows above it, and the probability that the group's first
positions up to this one hold no relevant row. ``rel_weight`` and ``judged_weight`` are then
the group averages, which turns every metric that is linear in per-position terms into its
expectation over all orderings of the ties.

The frame-level path materialises them as window columns (``.over(partition)``, which
stream); the expression namespace runs the same plan over the rows of its groups.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

import polars as pl

from polars_rankeval._engine.columns import Columns
from polars_rankeval._engine.exact_sum import exact_sum
from polars_rankeval._engine.options import check_choice
from polars_rankeval.conventions import NegativeLabels
from polars_rankeval.errors import InvalidOptionError

Window = Callable[[pl.Expr], pl.Expr]
Ties = Literal["trec", "expected", "optimistic", "pessimistic"]
TIES: tuple[Ties, ...] = ("trec", "expected", "optimistic", "pessimistic")
# Tie modes that are an order of the rows (a best or worst case), not an expectation.
BOUND_TIES: tuple[Ties, ...] = ("optimistic", "pessimistic")
TieOrder = Literal["item_desc", "item_asc"]
TIE_ORDERS: tuple[TieOrder, ...] = ("item_desc", "item_asc")


@dataclass(frozen=True)
class TieGroups:
    """Per-row description of the row's group of tied scores (``ties="expected"``)."""

    size: pl.Expr
    relevant: pl.Expr
    judged: pl.Expr
    start: pl.Expr
    offset: pl.Expr
    relevant_above: pl.Expr
    none_through: pl.Expr
    none_before: pl.Expr
    spread: Window


@dataclass(frozen=True)
class RankingContext:
    """Per-row expressions shared by all metrics of one evaluation."""

    retrieved: pl.Expr
    score: pl.Expr
    rank: pl.Expr
    label: pl.Expr
    relevant: pl.Expr
    judged: pl.Expr
    has_label: pl.Expr
    gain: pl.Expr
    relevant_rank: pl.Expr
    judged_rank: pl.Expr
    labelled_rank: pl.Expr
    ideal_rank: pl.Expr
    num_rel: pl.Expr
    num_judged_nonrel: pl.Expr
    max_label: pl.Expr
    rel_weight: pl.Expr
    judged_weight: pl.Expr
    over: Window
    running_sum: Window
    ties: Ties = "trec"
    tie: TieGroups | None = None
    extra: dict[str, pl.Expr] = field(default_factory=dict)
    score_key: pl.Expr | None = None
    item: pl.Expr | None = None
    label_bits: int = 63

    @property
    def expected(self) -> bool:
        """Whether metrics are expectations over all orderings of tied scores."""
        return self.ties == "expected"

    def within(self, k: int | None) -> pl.Expr:
        """Rows retrieved at rank ``<= k`` (all retrieved rows when ``k`` is None)."""
        if k is None:
            return self.retrieved
        return (self.rank <= k).fill_null(value=False)

    def tie_groups(self, metric: str) -> TieGroups:
        """The tie-group description; only present when ``ties="expected"``."""
        if self.tie is None:
            msg = f"internal: {metric} asked for tie groups outside ties='expected'"
            raise InvalidOptionError(msg)
        return self.tie

    def with_extra(self, extra: dict[str, pl.Expr]) -> RankingContext:
        """The same context with metric-specific per-row terms attached."""
        return replace(self, extra={**self.extra, **extra})


def _context(
    rows: dict[str, pl.Expr],
    *,
    rel_weight: pl.Expr,
    judged_weight: pl.Expr,
    over: Window,
    running_sum: Window,
    ties: Ties = "trec",
    tie: TieGroups | None = None,
    score_key: pl.Expr | None = None,
    item: pl.Expr | None = None,
    label_bits: int = 63,
) -> RankingContext:
    return RankingContext(
        retrieved=rows["retrieved"],
        score=rows["score"],
        rank=rows["rank"],
        label=rows["label"],
        relevant=rows["relevant"],
        judged=rows["judged"],
        has_label=rows["has_label"],
        gain=rows["gain"],
        relevant_rank=rows["relevant_rank"],
        judged_rank=rows["judged_rank"],
        labelled_rank=rows["labelled_rank"],
        ideal_rank=rows["ideal_rank"],
        num_rel=rows["num_rel"],
        num_judged_nonrel=rows["num_judged_nonrel"],
        max_label=rows["max_label"],
        rel_weight=rel_weight,
        judged_weight=judged_weight,
        over=over,
        running_sum=running_sum,
        ties=ties,
        tie=tie,
        score_key=score_key,
        item=item,
        label_bits=label_bits,
    )


def label_bits(dtype: pl.DataType) -> int:
    """How many bits a non-negative label of this dtype can have (Int8: 7, UInt16: 16 ...).

    Labels are read as Int64, so 63 at most; floats (whole numbers, checked) may use all 63.
    """
    if dtype == pl.Boolean:
        return 1
    if dtype.is_integer():
        widths: dict[pl.DataType, int] = {
            pl.Int8(): 8,
            pl.UInt8(): 8,
            pl.Int16(): 16,
            pl.UInt16(): 16,
            pl.Int32(): 32,
            pl.UInt32(): 32,
        }
        bits = widths.get(dtype, 64) - (1 if dtype.is_signed_integer() else 0)
        return min(bits, 63)
    return 63


def _score_fields(score: pl.Expr, *, nan_last: bool) -> list[pl.Expr]:
    fields = [score.is_not_null().alias("retrieved")]
    if nan_last:
        fields.append(score.cast(pl.Float64).is_not_nan().alias("not_nan"))
    return [*fields, score.alias("score")]


def bound_preference(flags: Mapping[str, pl.Expr], ties: Ties) -> pl.Expr:
    """Where a row goes inside its tie group under a bound: larger first.

    Optimistic: positive labels by size, then unjudged rows, then judged rows with no gain;
    pessimistic reverses it.
    """
    label, judged = flags["label"], flags["judged"]
    preference = (
        pl.when(~judged).then(0.5).when(label > 0).then(label.cast(pl.Float64)).otherwise(0.0)
    )
    return preference if ties == "optimistic" else -preference


def score_key(score: pl.Expr, *, nan_last: bool = False) -> pl.Expr:
    """:func:`trec_key` without its item part: equal for rows whose scores tie."""
    return pl.struct(_score_fields(score, nan_last=nan_last))


def trec_key(score: pl.Expr, item: pl.Expr, *, nan_last: bool = False) -> pl.Expr:
    """The sort key of trec_eval's order, to be ranked descending.

    Retrieved rows first, then score descending, ties by the item's string form descending;
    the unretrieved rows follow in the same item order. ``nan_last`` puts NaN scores below every
    other score (Polars would otherwise sort NaN above +inf).
    """
    fields = _score_fields(score, nan_last=nan_last)
    return pl.struct([*fields, item.cast(pl.String).alias("item")])


def bound_key(score: pl.Expr, item: pl.Expr, preference: pl.Expr, *, nan_last: bool) -> pl.Expr:
    """:func:`trec_key` with a bound's preference between the score and the item."""
    fields = _score_fields(score, nan_last=nan_last)
    return pl.struct([*fields, preference.alias("preference"), item.cast(pl.String).alias("item")])


def check_ties(ties: object) -> Ties:
    """Validate ``ties=``."""
    return check_choice("ties", ties, TIES)


def check_tie_order(tie_order: object) -> TieOrder:
    """Validate a metric's ``tie_order=``."""
    return check_choice("tie_order", tie_order, TIE_ORDERS)


_SCORE_DENSE = "score_dense_rank"
ITEM_ASC_RANK = "rank_item_asc"


def item_ascending_rows(ctx: RankingContext) -> dict[str, pl.Expr]:
    """First window stage of the item-ascending order: a dense rank of the score (1 = best).

    The MS MARCO evaluation script (ir_measures ``RR@k``) and ir_measures' ``Judged`` sort by
    ``(-score, docid)``: score descending, ties by item **ascending**, the reverse of
    trec_eval's tie rule. A metric with ``tie_order="item_asc"`` lists this as its ``rows``
    and :func:`item_ascending_later_rows` as its ``later_rows``, then reads the rank from
    ``ctx.extra[ITEM_ASC_RANK]``. Ranking the score part of trec_eval's key keeps its score
    comparison (the two zeros tie; NaN sits where ``nan_scores=`` puts it).
    """
    if ctx.ties in BOUND_TIES:
        return {}  # the bound's own order decides the ties (see item_ascending_later_rows)
    if ctx.score_key is None:
        msg = "internal: this context has no score key for tie_order='item_asc'"
        raise InvalidOptionError(msg)
    return {_SCORE_DENSE: ctx.over(ctx.score_key.rank("dense", descending=True))}


def item_ascending_later_rows(ctx: RankingContext) -> dict[str, pl.Expr]:
    """Second stage: rank by score descending, ties by item ascending (null if unretrieved).

    Under ``ties="optimistic"``/``"pessimistic"`` the tie order is the bound's, whichever way
    the metric would break ties by item, so the rank is the context's own.
    """
    if ctx.ties in BOUND_TIES:
        return {ITEM_ASC_RANK: ctx.rank}
    if ctx.item is None:
        msg = "internal: this context has no item column for tie_order='item_asc'"
        raise InvalidOptionError(msg)
    order = pl.struct(ctx.extra[_SCORE_DENSE], ctx.item).rank("ordinal")
    return {ITEM_ASC_RANK: pl.when(ctx.retrieved).then(ctx.over(order))}


def _row_flags(
    relevance: pl.Expr,
    score: pl.Expr,
    relevance_level: int,
    negative_labels: NegativeLabels = "unjudged",
) -> dict[str, pl.Expr]:
    label = relevance.cast(pl.Int64)
    # trec_eval: a negative label is "pooled but unjudged"; ranx reads it as non-relevant.
    judged = label >= 0 if negative_labels == "unjudged" else label.is_not_null()
    return {
        "label": label,
        "retrieved": score.is_not_null(),
        "score": score,
        "relevant": ((label >= relevance_level) & (label >= 0)).fill_null(value=False),
        "judged": judged.fill_null(value=False),
        "has_label": label.is_not_null(),
        "gain": pl.when(label > 0).then(label).otherwise(0).cast(pl.Float64),
    }


def _list_totals(flags: dict[str, pl.Expr], over: Window) -> dict[str, pl.Expr]:
    relevant, judged = flags["relevant"], flags["judged"]
    return {
        "num_rel": over(relevant.sum()),
        "num_judged_nonrel": over((judged & ~relevant).sum()),
        "max_label": over(pl.when(judged).then(flags["label"]).max()),
    }


# Running counts and the ideal order only concern a few rows of each list (the relevant, judged
# or labelled ones, the ones with a positive gain), so their windows run over those rows only.
def _sparse_ranks(refs: dict[str, pl.Expr]) -> dict[str, tuple[pl.Expr, pl.Expr]]:
    """Per sparse rank: the rows it is defined on, and the rank among them (before ``over``)."""
    retrieved, order, gain = refs["retrieved"], refs["order"], refs["gain"]

    def running_count(mask: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
        # The masked rows ranked by their position in the order: their running count.
        return mask, pl.when(mask).then(order).rank("ordinal")

    return {
        "relevant_rank": running_count(refs["relevant"] & retrieved),
        "judged_rank": running_count(refs["judged"] & retrieved),
        "labelled_rank": running_count(refs["has_label"] & retrieved),
        # Equal gains may come in any order: every use reads only the gain at a position.
        "ideal_rank": (gain > 0, pl.when(gain > 0).then(gain).rank("ordinal", descending=True)),
    }


_PREFIX = "__rke_"


def _materialise(
    lf: pl.LazyFrame, exprs: dict[str, pl.Expr]
) -> tuple[pl.LazyFrame, dict[str, pl.Expr]]:
    lf = lf.with_columns(**{_PREFIX + name: expr for name, expr in exprs.items()})
    return lf, {name: pl.col(_PREFIX + name) for name in exprs}


def _tie_frame(
    lf: pl.LazyFrame, refs: dict[str, pl.Expr], partition: list[str], score: str
) -> tuple[pl.LazyFrame, TieGroups]:
    """Window columns describing each group of tied scores (frame-level path only).

    Most scores are unique within their list: such a row is a group of one, whose description
    is the row itself. Windows over (list, score) would make millions of such groups, so only
    rows that share their score (and the unretrieved rows, one group per list as trec_eval
    orders them last) are grouped: every other row falls into one group per list whose window
    values are replaced by its own.
    """
    # -0.0 + 0.0 is +0.0, so the two zeros (equal under sorting) share a tie group.
    tie_score = pl.col(score) + 0.0
    span = _PREFIX + "tie_span"
    lf = lf.with_columns(
        pl.struct(
            tie_score.rank("min", descending=True).alias("first"),
            tie_score.rank("max", descending=True).alias("last"),
        )
        .over(partition)
        .alias(span)
    )
    in_group, tie_key = _PREFIX + "tie_grouped", _PREFIX + "tie_score"
    grouped = pl.col(span).struct.field("last") > pl.col(span).struct.field("first")
    lf = lf.with_columns(grouped.fill_null(value=True).alias(in_group))
    lf = lf.with_columns(pl.when(in_group).then(tie_score).alias(tie_key))
    tie_partition = [*partition, in_group, tie_key]
    in_tie = pl.col(in_group)

    def spread(expr: pl.Expr) -> pl.Expr:
        return (
            pl.when(in_tie).then((exact_sum(expr) / pl.len()).over(tie_partition)).otherwise(expr)
        )

    rank, relevant, judged = refs["rank"], refs["relevant"], refs["judged"]
    index = pl.get_index_type()
    totals = pl.struct(
        pl.len().alias("size"),
        relevant.sum().alias("relevant"),
        judged.sum().alias("judged"),
        rank.min().alias("first"),
    ).over(tie_partition)

    def of_group(field: str, alone: pl.Expr) -> pl.Expr:
        return pl.when(in_tie).then(totals.struct.field(field)).otherwise(alone).cast(index)

    lf, stage1 = _materialise(
        lf,
        {
            "tie_size": of_group("size", pl.lit(1)),
            "tie_relevant": of_group("relevant", relevant),
            "tie_judged": of_group("judged", judged),
            "tie_start": of_group("first", rank) - 1,
            "hits_through": relevant.cast(pl.UInt32)
            .cum_sum()
            .over(partition, order_by=refs["order"]),
        },
    )
    size, rel = stage1["tie_size"].cast(pl.Float64), stage1["tie_relevant"].cast(pl.Float64)
    offset = (rank - stage1["tie_start"] - 1).cast(pl.Float64)
    # Probability that a uniformly shuffled group holds no relevant row at offset ``offset``
    # given none before: (t - r - j) / (t - j). Products become sums of logs (log 0 = -inf).
    log_factor = ((size - rel - offset).clip(lower_bound=0.0) / (size - offset)).log()
    above = stage1["hits_through"].cast(pl.Int64) - relevant.cast(pl.Int64)
    running = pl.struct(
        log_factor.cum_sum().alias("through"),
        log_factor.shift(1, fill_value=0.0).cum_sum().alias("before"),
    ).over(tie_partition, order_by=rank)
    lf, stage2 = _materialise(
        lf,
        {
            "tie_offset": offset,
            "relevant_above": pl.when(in_tie)
            .then(above.min().over(tie_partition))
            .otherwise(above),
            "none_through": pl.when(in_tie)
            .then(running.struct.field("through"))
            .otherwise(log_factor)
            .exp(),
            "none_before": pl.when(in_tie)
            .then(running.struct.field("before").exp())
            .otherwise(1.0),
        },
    )
    groups = TieGroups(
        size=stage1["tie_size"],
        relevant=stage1["tie_relevant"],
        judged=stage1["tie_judged"],
        start=stage1["tie_start"],
        offset=stage2["tie_offset"],
        relevant_above=stage2["relevant_above"],
        none_through=stage2["none_through"],
        none_before=stage2["none_before"],
        spread=spread,
    )
    return lf, groups


def ranked_frame(
    lf: pl.LazyFrame,
    columns: Columns,
    relevance_level: int,
    *,
    tie_groups: bool = False,
    negative_labels: NegativeLabels = "unjudged",
    nan_last: bool = False,
    bounds: Collection[Ties] = (),
) -> RankedFrame:
    """Add the context as window columns to ``lf``.

    Returns the frame, the context under trec ties and, when ``tie_groups`` is set, the same
    context under ``ties="expected"`` (sharing every column but the tie-group ones). Columns
    the chosen metrics do not use are pruned by Polars' projection pushdown, so the context
    costs only what the metrics need; the sparse ranks are added by
    :meth:`RankedFrame.with_sparse_ranks` once the metrics' expressions are known. Each tie
    bound in ``bounds`` (``"optimistic"``, ``"pessimistic"``) adds its own order window and
    running counts, and a context that reads them.
    """
    partition = columns.partition

    def over(expr: pl.Expr) -> pl.Expr:
        return expr.over(partition)

    flags = _row_flags(
        pl.col(columns.relevance), pl.col(columns.score), relevance_level, negative_labels
    )
    key = trec_key(pl.col(columns.score), pl.col(columns.item), nan_last=nan_last)
    # One full-size window: the order. List totals are cheap scalar windows.
    lf, refs = _materialise(
        lf,
        {
            **flags,
            "order": over(key.rank("ordinal", descending=True)),
            **_list_totals(flags, over),
        },
    )
    sparse = _sparse_ranks(refs)
    refs.update({name: pl.col(_PREFIX + name) for name in sparse})
    refs["rank"] = pl.when(refs["retrieved"]).then(refs["order"])
    order_col = refs.pop("order")

    def running_sum(expr: pl.Expr) -> pl.Expr:
        return expr.cum_sum().over(partition, order_by=order_col)

    ctx = _context(
        refs,
        rel_weight=refs["relevant"].cast(pl.Float64),
        judged_weight=refs["judged"].cast(pl.Float64),
        over=over,
        running_sum=running_sum,
        score_key=score_key(pl.col(columns.score), nan_last=nan_last),
        item=pl.col(columns.item).cast(pl.String),
        label_bits=label_bits(lf.collect_schema()[columns.relevance]),
    )
    bounded: dict[str, RankingContext] = {}
    for mode in bounds:
        lf, bounded[mode] = _bound_context(
            lf,
            ctx,
            refs,
            sparse,
            mode,
            bound_key(
                pl.col(columns.score),
                pl.col(columns.item),
                bound_preference(refs, mode),
                nan_last=nan_last,
            ),
            partition,
        )
    if not tie_groups:
        return RankedFrame(lf, ctx, None, sparse, over, bounded)
    lf, tie = _tie_frame(lf, {**refs, "order": order_col}, partition, columns.score)
    size = tie.size.cast(pl.Float64)
    expected = replace(
        ctx,
        rel_weight=tie.relevant.cast(pl.Float64) / size,
        judged_weight=tie.judged.cast(pl.Float64) / size,
        ties="expected",
        tie=tie,
    )
    return RankedFrame(lf, ctx, expected, sparse, over, bounded)


def _bound_context(  # noqa: PLR0917 (internal; one call site)
    lf: pl.LazyFrame,
    ctx: RankingContext,
    refs: dict[str, pl.Expr],
    sparse: dict[str, tuple[pl.Expr, pl.Expr]],
    mode: Ties,
    key: pl.Expr,
    partition: list[str],
) -> tuple[pl.LazyFrame, RankingContext]:
    """The context under one tie bound: its order, and running counts in that order.

    The ideal order and the list totals do not depend on the run's order and are shared; the
    running counts are added to ``sparse`` under the mode's own names.
    """
    prefix = f"{mode}_"
    lf, own = _materialise(
        lf, {prefix + "order": key.rank("ordinal", descending=True).over(partition)}
    )
    order = own[prefix + "order"]
    counts = _sparse_ranks({**refs, "order": order})
    for name in ("relevant_rank", "judged_rank", "labelled_rank"):
        sparse[prefix + name] = counts[name]

    def running_sum(expr: pl.Expr) -> pl.Expr:
        return expr.cum_sum().over(partition, order_by=order)

    bound = replace(
        ctx,
        rank=pl.when(ctx.retrieved).then(order),
        running_sum=running_sum,
        ties=mode,
        relevant_rank=pl.col(_PREFIX + prefix + "relevant_rank"),
        judged_rank=pl.col(_PREFIX + prefix + "judged_rank"),
        labelled_rank=pl.col(_PREFIX + prefix + "labelled_rank"),
    )
    return lf, bound


@dataclass(frozen=True)
class RankedFrame:
    """The frame with the context's columns, its contexts, and its deferred sparse ranks."""

    frame: pl.LazyFrame
    trec: RankingContext
    expected: RankingContext | None
    sparse: dict[str, tuple[pl.Expr, pl.Expr]]
    over: Window
    bounds: dict[str, RankingContext] = field(default_factory=dict)

    def with_sparse_ranks(
        self,
        used: Collection[str],
        terms: Mapping[str, tuple[pl.Expr, pl.Expr]] | None = None,
    ) -> pl.LazyFrame:
        """The frame plus the sparse ranks read by expressions over ``used``, and ``terms``.

        Each is a window over the rows it is defined on; rows outside every such domain skip
        the windows and get nulls, as the ranks themselves give them. ``terms`` are metrics'
        own sparse terms, column name → (rows, expression): the expression must mask its
        rows before any window (the windows see the union of every term's rows); its value is
        kept on its own rows only. Measured at 10M rows (benchmarks/README.md), ranking ~5% of
        the rows instead of all of them saves most of a full window per rank.
        """
        wanted = {
            _PREFIX + name: (mask, self.over(rank).cast(pl.get_index_type()))
            for name, (mask, rank) in self.sparse.items()
            if _PREFIX + name in used
        }
        wanted.update(terms or {})
        if not wanted:
            return self.frame
        frame = self.frame
        domain = pl.any_horizontal([mask for mask, _ in wanted.values()])
        ranked = frame.filter(domain).with_columns(
            pl.when(mask).then(expr).alias(name) for name, (mask, expr) in wanted.items()
        )
        schema = ranked.collect_schema()
        rest = frame.filter(~domain).with_columns(
            pl.lit(None, dtype=schema[name]).alias(name) for name in wanted
        )
        return pl.concat([ranked, rest])
