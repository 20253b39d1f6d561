"""The single evaluation plan: one row per evaluated ranked list, one column per metric.

``evaluate`` runs it over a frame (or one bucket of it per pass), the expression namespace
over the rows of its groups, Spark over each worker's rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from polars_rankeval._engine.columns import (
    Columns,
)
from polars_rankeval._engine.context import (
    BOUND_TIES,
    RankedFrame,
    RankingContext,
    ranked_frame,
)
from polars_rankeval._engine.settings import Settings
from polars_rankeval._engine.tables import Tables, check_needs, join_inputs
from polars_rankeval._engine.validation import (
    CheckedIn,
    bookkeeping,
    guard_labels,
    labels_guarded,
    resolve_duplicates,
    validity_mask,
)
from polars_rankeval.metrics._base import Metric, check_tie_bound

_N_LABELLED = "__rke_n_labelled"
_N_RETRIEVED = "__rke_n_retrieved"
# Hidden per-query flag kept when empty_queries="drop": the list has a relevant row.
HAS_RELEVANT = "__rke_has_relevant"


def judged_only_rows(score: str, relevance: str) -> pl.Expr:
    """trec_eval ``-J``'s rows: the unretrieved, and the retrieved with a non-negative label.

    A retrieved row without a judgment, or with a negative label (pooled but unjudged), leaves
    before ranking; the command line's ``-J`` filters with this too.
    """
    grade = pl.col(relevance)
    return pl.col(score).is_null() | (grade.is_not_null() & (grade >= 0))


def _prepared(lf: pl.LazyFrame, columns: Columns, settings: Settings) -> pl.LazyFrame:
    """The rows that are ranked: labels guarded, duplicates resolved, unretrieved rows dropped.

    Every route (frames, passes, the expression path, Spark) prepares its input and the
    ``source`` its errors describe here, so a label that is not a whole Int64 (NaN, ±inf, a
    fraction, a UInt64 past 2^63-1) becomes a counted code before the strict cast in ranking.
    """
    lf = guard_labels(lf, columns)
    lf = resolve_duplicates(lf, columns, settings.duplicates)
    if settings.unlabelled == "zero":
        # Tools with no judgment concept (sklearn, torchmetrics): every scored row has a
        # target, 0 when the log has none, so an all-unlabelled list is scored, not skipped.
        label = pl.col(columns.relevance)
        dtype = lf.collect_schema()[columns.relevance]
        unlabelled = label.is_null() & pl.col(columns.score).is_not_null()
        zero = pl.lit(0).cast(dtype)
        lf = lf.with_columns(
            pl.when(unlabelled).then(zero).otherwise(label).alias(columns.relevance)
        )
    if settings.unretrieved == "drop":
        # Tools that only see the supplied (retrieved) rows: judged-but-unretrieved rows vanish.
        lf = lf.filter(pl.col(columns.score).is_not_null())
    return lf


def per_query_plan(
    lf: pl.LazyFrame,
    columns: Columns,
    resolved: list[tuple[str, Metric]],
    settings: Settings,
    *,
    source: pl.LazyFrame | None = None,
    checked_in: CheckedIn = "frame",
    tables: Tables | None = None,
) -> pl.LazyFrame:
    """One row per evaluated ranked list of ``lf``, one column per metric.

    This is the single evaluation path: ``evaluate`` runs it over a frame (or one bucket of it
    per pass) and the expression namespace over the rows of its groups. ``source`` is the
    whole input, which error messages describe (``lf`` itself by default). ``tables`` are the
    extra tables (train, items, catalog) whose columns the metrics' ``inputs`` join to the
    rows before ranking.

    Per-system metrics (``level="system"``) get a hidden per-query value here (their
    ``reduce`` combines it); with ``empty_queries="drop"`` the frame keeps a ``HAS_RELEVANT``
    flag that :func:`drop_empty_queries` filters on, so the dropped lists can be counted.
    :func:`~polars_rankeval._engine.tie_bounds.with_tie_ranges` adds the tie ranges.
    """
    tables = tables or Tables(query=columns.query, item=columns.item)
    levels = {
        (metric.relevance_level or settings.relevance_level, metric.judged_only)
        for _, metric in resolved
    }
    if levels != {(settings.relevance_level, False)}:
        return _per_level_plans(
            lf,
            columns,
            resolved,
            settings,
            source=source,
            checked_in=checked_in,
            tables=tables,
        )
    check_needs(((label, metric.needs) for label, metric in resolved), tables)
    lf = _prepared(lf, columns, settings)
    source = lf if source is None else _prepared(source, columns, settings)
    lf = join_inputs(lf, (i for _, metric in resolved for i in metric.inputs), tables)
    modes = [metric.ties or settings.ties for _, metric in resolved]
    for (label, metric), mode in zip(resolved, modes, strict=True):
        check_tie_bound(label, metric, mode)
    ranked = ranked_frame(
        lf,
        columns,
        settings.relevance_level,
        tie_groups="expected" in modes,
        negative_labels=settings.negative_labels,
        nan_last=settings.nan_scores == "last",
        bounds=sorted({mode for mode in modes if mode in BOUND_TIES}),
    )
    trec_ctx = ranked.trec
    # One context per tie mode; partial and row names carry the mode so they never collide.
    contexts = {"trec": trec_ctx, "expected": ranked.expected or trec_ctx, **ranked.bounds}
    prefixes = {"trec": "", "expected": "E:", "optimistic": "O:", "pessimistic": "P:"}
    pending = [
        (label, metric, contexts[mode], prefixes[mode])
        for (label, metric), mode in zip(resolved, modes, strict=True)
    ]
    counts = {
        _N_LABELLED: trec_ctx.has_label.sum(),
        _N_RETRIEVED: trec_ctx.retrieved.sum(),
        **bookkeeping(columns, settings.nan_scores, labels_guarded(lf)),
    }
    if settings.empty_queries == "drop":
        counts[HAS_RELEVANT] = trec_ctx.relevant.any()
    built = metric_plan(ranked, pending, list(counts.values()))
    pending = built.pending
    grouped = built.frame.group_by(columns.partition).agg(**built.partials, **counts)
    own, evaluated = evaluated_lists(resolved, settings)
    valid = validity_mask(columns, settings.nan_scores, source, checked_in)
    checked = grouped.filter(valid & evaluated)

    def value(metric: Metric, ctx: RankingContext, prefix: str) -> pl.Expr:
        computed = metric.value_for(ctx)(lambda key: pl.col(prefix + key))
        mask = own(metric)
        # a list that only the other kind of metric evaluates: null, left out of the summary
        return computed if mask is None else pl.when(mask).then(computed)

    kept = [HAS_RELEVANT] if settings.empty_queries == "drop" else []
    frame = checked.select(
        *columns.partition,
        *(value(metric, ctx, prefix).alias(label) for label, metric, ctx, prefix in pending),
        *kept,
    )
    return frame.sort(columns.partition)


def evaluated_lists(
    resolved: Sequence[tuple[str, Metric]], settings: Settings
) -> tuple[Callable[[Metric], pl.Expr | None], pl.Expr]:
    """Which lists each metric evaluates, and the lists the plan keeps (any metric's).

    Each metric is computed over the lists its own rule selects, whatever else is in the call,
    so a metric alone and in a mixed call give the same values:

    * a metric that reads labels, trec_eval's rule: the lists with judgments, and (unless
      ``missing_queries="zero"``) with a retrieved row;
    * a label-free metric (coverage, novelty, diversity ...): every list with a retrieved row,
      as the recommender tools compute them over every recommended user.

    Returns the mask of a metric's own lists (None where it is every kept list) and the kept
    lists: those some metric evaluates (the others leave their values null there).
    """
    # trec_eval evaluates a query only if it has judgments; without -c it skips queries that
    # have judgments but no retrieved row.
    labelled = pl.col(_N_LABELLED) > 0
    if settings.missing_queries == "skip":
        labelled = labelled & (pl.col(_N_RETRIEVED) > 0)
    # Coverage, novelty, diversity ... need no judgment: every ranked list counts.
    ranked = pl.col(_N_RETRIEVED) > 0
    kinds = {metric.reads_labels for _, metric in resolved}
    if kinds != {True, False}:
        return (lambda metric: None), (labelled if True in kinds else ranked)
    return (lambda metric: labelled if metric.reads_labels else ranked), labelled | ranked


def _per_level_plans(
    lf: pl.LazyFrame,
    columns: Columns,
    resolved: list[tuple[str, Metric]],
    settings: Settings,
    *,
    source: pl.LazyFrame | None,
    checked_in: CheckedIn,
    tables: Tables,
) -> pl.LazyFrame:
    """Metrics with their own relevance level (``rel=``) or ``judged_only``: one plan each.

    The lists a label-reading metric evaluates do not depend on the level (they have
    judgments, and retrieved rows unless ``missing_queries="zero"``); ``judged_only`` plans
    may lose lists, and the label-free metrics (in the evaluation's own level's plan) add the
    ranked lists without judgments, so the plans are joined on every list of any of them
    (null where a plan does not evaluate it). With ``empty_queries="drop"`` each plan's
    values are null on its lists with nothing relevant at its level, and the hidden flag
    keeps a list that some level has something relevant in.
    """
    groups: dict[tuple[int, bool], list[tuple[str, Metric]]] = {}
    for label, metric in resolved:
        key = (metric.relevance_level or settings.relevance_level, metric.judged_only)
        plain = replace(metric, relevance_level=None, judged_only=False)
        groups.setdefault(key, []).append((label, plain))
    base = (settings.relevance_level, False)
    first = base if base in groups else next(iter(groups))
    order = [first, *(key for key in groups if key != first)]
    plans = []
    flags: list[str] = []
    for index, (level, judged_only) in enumerate(order):
        own = replace(settings, relevance_level=level)
        rows = lf
        if judged_only:  # trec_eval -J: unjudged retrieved rows leave before ranking
            rows = lf.filter(judged_only_rows(columns.score, columns.relevance))
        plan = per_query_plan(
            rows,
            columns,
            groups[(level, judged_only)],
            own,
            source=source,
            checked_in=checked_in,
            tables=tables,
        )
        if settings.empty_queries == "drop":
            # each metric leaves out the lists with nothing relevant at its own level, as
            # alone: its values are null there, and a list goes when every level leaves it
            flags.append(f"{HAS_RELEVANT}:{index}")
            own_labels = [label for label, _ in groups[(level, judged_only)]]
            plan = plan.with_columns(
                pl.when(pl.col(HAS_RELEVANT)).then(pl.col(label)).alias(label)
                for label in own_labels
            ).rename({HAS_RELEVANT: flags[-1]})
        plans.append(plan)
    joined = plans[0]
    for plan in plans[1:]:
        joined = joined.join(
            plan, on=columns.partition, how="full", coalesce=True, nulls_equal=True
        )
    labels = [label for label, _ in resolved]
    hidden = [pl.any_horizontal(flags).fill_null(False).alias(HAS_RELEVANT)] if flags else []
    return joined.select(*columns.partition, *labels, *hidden).sort(columns.partition)


def finish_all(
    frame: pl.LazyFrame,
    resolved: list[tuple[str, Metric]],
    partition: Sequence[str],
    tables: Tables,
) -> pl.LazyFrame:
    """Replace the hidden values of metrics with a ``finish`` step by their real values.

    Run over the collected per-query frame (one row per list, small): each finishing step
    reads it more than once (its pairs, its sizes), which over the raw log would repeat the
    whole ranking.
    """
    partition = list(partition)
    finishing = [(label, metric) for label, metric in resolved if metric.finish is not None]
    if not finishing:
        return frame
    order = frame.collect_schema().names()
    # Each step reads the original frame (a chain of frames, each built on the last, would
    # double the plan at every step) and its values are joined on once.
    result = frame.drop([label for label, _ in finishing])
    for label, metric in finishing:
        assert metric.finish is not None
        done = metric.finish(own_lists(frame, label, partition), partition, label, tables)
        result = result.join(done, on=partition, how="left", nulls_equal=True)
    return result.select(order).sort(partition)  # the joins do not keep the rows' order


def own_lists(frame: pl.LazyFrame, label: str, keys: Sequence[str] | None = None) -> pl.LazyFrame:
    """The rows of the lists a metric evaluates (its value is not null): ``keys`` and its value.

    A mixed call keeps a row for every list any metric evaluates, with null for a metric that
    does not evaluate it (:func:`evaluated_lists`); a finishing step or a per-system
    ``reduce`` reads only the metric's own lists, as when it is alone.
    """
    if keys is not None:
        frame = frame.select(*keys, label)
    return frame.filter(pl.col(label).is_not_null())


def reads_labels(resolved: Sequence[tuple[str, Metric]]) -> bool:
    """Whether any metric reads the relevance labels (else the column is optional)."""
    return any(metric.reads_labels for _, metric in resolved)


_Pending = list[tuple[str, Metric, RankingContext, str]]


@dataclass(frozen=True)
class MetricPlan:
    """The metrics' per-row work on a ranked frame, before grouping.

    ``sparse`` is the frame with the sparse ranks and terms the metrics read, ``frame`` adds
    their own per-row terms; ``partials`` are their aggregations and ``pending`` the metrics
    with contexts pointing at the added columns.
    """

    ranked: pl.LazyFrame
    sparse: pl.LazyFrame
    frame: pl.LazyFrame
    partials: dict[str, pl.Expr]
    pending: _Pending

    @property
    def sparse_columns(self) -> list[str]:
        """The columns the sparse ranks and terms added (for profiling)."""
        before = set(self.ranked.collect_schema().names())
        return [name for name in self.sparse.collect_schema().names() if name not in before]


def metric_plan(ranked: RankedFrame, pending: _Pending, also_read: list[pl.Expr]) -> MetricPlan:
    """Build every metric expression first, so only the sparse ranks they read are added."""
    sparse_terms, pending = _row_stage(pending, "sparse_rows")
    stages = []
    for stage in ("rows", "later_rows"):
        terms, pending = _row_stage(pending, stage)
        stages.append(terms)
    partials: dict[str, pl.Expr] = {}
    for _, metric, ctx, prefix in pending:
        partials.update({prefix + key: expr for key, expr in metric.partials(ctx).items()})
    built = [*partials.values(), *also_read, *(e for t in stages for e in t.values())]
    used = {name for expr in built for name in expr.meta.root_names()}
    sparse = ranked.with_sparse_ranks(used, sparse_terms)
    frame = sparse
    for terms in stages:
        if terms:
            frame = frame.with_columns(expr.alias(name) for name, expr in terms.items())
    return MetricPlan(ranked.frame, sparse, frame, partials, pending)


def _row_stage(pending: _Pending, stage: str) -> tuple[dict[str, Any], _Pending]:
    """One stage of the metrics' own per-row terms (windows), to materialise before grouping.

    Returns the terms by column name (expressions, or (rows, expression) pairs for
    ``sparse_rows``) and the metrics with their contexts pointing at those columns. Names carry
    the tie mode's prefix, so the same term under two modes never collides.
    """
    terms: dict[str, Any] = {}
    keys: list[list[str]] = []
    for _, metric, ctx, prefix in pending:
        rows = getattr(metric, stage)(ctx)
        terms.update({prefix + key: expr for key, expr in rows.items()})
        keys.append(list(rows))
    if not terms:
        return {}, pending
    names = {key: f"__rke_{stage}_{index}" for index, key in enumerate(terms)}
    updated = [
        (
            label,
            metric,
            ctx.with_extra({key: pl.col(names[prefix + key]) for key in row_keys}),
            prefix,
        )
        for (label, metric, ctx, prefix), row_keys in zip(pending, keys, strict=True)
    ]
    return {names[key]: expr for key, expr in terms.items()}, updated
