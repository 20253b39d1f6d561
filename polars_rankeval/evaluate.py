"""Frame-level evaluation: the typed functions behind ``df.rank_eval`` / ``lf.rank_eval``."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar

import polars as pl

from polars_rankeval._columns import (
    Columns,
    as_polars,
    check_relevance_level,
    check_schema,
    make_columns,
)
from polars_rankeval._options import check_choice
from polars_rankeval._partial import PassSums
from polars_rankeval._passes import (
    check_buckets,
    in_passes,
    run_passes,
)
from polars_rankeval._spill import cleanup_on_sigterm
from polars_rankeval.context import (
    BOUND_TIES,
    RankedFrame,
    RankingContext,
    Ties,
    check_ties,
    ranked_frame,
)
from polars_rankeval.conventions import (
    Convention,
    ConventionName,
    NegativeLabels,
    Unretrieved,
    get_convention,
)
from polars_rankeval.errors import EmptyQueriesWarning, InvalidOptionError, PerSystemMetricWarning
from polars_rankeval.lists import maybe_from_lists
from polars_rankeval.meaning import summary_expr
from polars_rankeval.metrics._base import Metric, check_tie_bound
from polars_rankeval.registry import MetricRequest, resolve_metrics
from polars_rankeval.tables import Tables, check_needs, join_inputs, make_tables
from polars_rankeval.ties import check_tie_warning, tie_sensitive, warn_if_ties_move_means
from polars_rankeval.validation import (
    CheckedIn,
    Duplicates,
    NanScores,
    bookkeeping,
    guard_labels,
    labels_guarded,
    resolve_duplicates,
    validity_mask,
    warn_if_empty,
)

MissingQueries = Literal["skip", "zero"]
EmptyQueries = Literal["zero", "drop"]
Engine = Literal["auto", "in-memory", "streaming"]
FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)

_N_LABELLED = "__rke_n_labelled"
_N_RETRIEVED = "__rke_n_retrieved"
# Hidden per-query flag kept when empty_queries="drop": the list has a relevant row.
HAS_RELEVANT = "__rke_has_relevant"
# Hidden per-query flag kept for the tie warning: the list has tied retrieved scores.
TIED = "__rke_tied"


@dataclass(frozen=True)
class Settings:
    """Evaluation settings after explicit keywords are laid over the convention preset."""

    relevance_level: int
    missing_queries: MissingQueries
    ties: Ties
    negative_labels: NegativeLabels
    unretrieved: Unretrieved
    duplicates: Duplicates
    nan_scores: NanScores
    empty_queries: EmptyQueries = "zero"


_TREC_SETTINGS: dict[str, Any] = {
    "relevance_level": 1,
    "missing_queries": "skip",
    "ties": "trec",
    "negative_labels": "unjudged",
    "unretrieved": "count",
    "duplicates": "error",
    "nan_scores": "error",
    "empty_queries": "zero",
}


def settings_for(convention: object, keywords: Mapping[str, Any]) -> tuple[Convention, Settings]:
    """The preset named by ``convention`` and the settings after the explicit keywords.

    Both entry points (frames and the expression namespace) pass their keyword arguments
    (``locals()``) here and the settings are picked by name, so both read the same ones; a
    name absent from ``keywords`` follows the preset. An explicit ``ties=`` also overrides the
    preset's per-metric tie defaults.
    """
    explicit = {name: keywords.get(name) for name in _TREC_SETTINGS}
    preset = get_convention(convention)
    if explicit["ties"] is not None:
        preset = preset.without_ties()
    return preset, resolve_settings(preset, explicit)


def resolve_settings(convention: Convention, explicit: dict[str, Any]) -> Settings:
    """Explicit keywords win over the preset, which wins over trec_eval's defaults."""
    chosen = {
        key: explicit[key]
        if explicit.get(key) is not None
        else convention.settings.get(key, default)
        for key, default in _TREC_SETTINGS.items()
    }
    # the canonical spelling of each choice: values are matched case-insensitively
    choices = {
        "missing_queries": ["skip", "zero"],
        "negative_labels": ["unjudged", "nonrelevant"],
        "unretrieved": ["count", "drop"],
        "duplicates": ["error", "first", "last", "max_score"],
        "nan_scores": ["error", "last"],
        "empty_queries": ["zero", "drop"],
    }
    for key, allowed in choices.items():
        chosen[key] = check_choice(key, chosen[key], allowed)
    return Settings(
        relevance_level=check_relevance_level(chosen["relevance_level"]),
        missing_queries=chosen["missing_queries"],
        ties=check_ties(chosen["ties"]),
        negative_labels=chosen["negative_labels"],
        unretrieved=chosen["unretrieved"],
        duplicates=chosen["duplicates"],
        nan_scores=chosen["nan_scores"],
        empty_queries=chosen["empty_queries"],
    )


def _prepared(lf: pl.LazyFrame, columns: Columns, settings: Settings) -> pl.LazyFrame:
    """The rows that are ranked: labels guarded, duplicates resolved, unretrieved rows dropped.

    Every route (frames, passes, the expression path, Spark) prepares its input and the
    ``source`` its errors describe here, so a label that is not a whole Int64 (NaN, ±inf, a
    fraction, a UInt64 past 2^63-1) becomes a counted code before the strict cast in ranking.
    """
    lf = guard_labels(lf, columns)
    lf = resolve_duplicates(lf, columns, settings.duplicates)
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
    flag_ties: bool = False,
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
    ``flag_ties`` keeps a ``TIED`` flag: the list has retrieved rows with equal scores (an
    aggregation, no window), which :func:`polars_rankeval.ties.warn_if_ties_move_means` reads.
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
            flag_ties=flag_ties,
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
    if flag_ties:
        # Some retrieved scores repeat: fewer distinct non-null scores than non-null ones
        # (n_unique counts a null once), or two zeros (-0.0 and 0.0 tie in the order but
        # hash apart). On the raw column: a filtered or shifted copy cost 40% more at 10M rows.
        score = pl.col(columns.score)
        missing = score.null_count()
        distinct = score.n_unique() - missing.clip(upper_bound=1)
        counts[TIED] = (distinct < pl.len() - missing) | ((score == 0).sum() > 1)
    built = metric_plan(ranked, pending, list(counts.values()))
    pending = built.pending
    grouped = built.frame.group_by(columns.partition).agg(**built.partials, **counts)
    # trec_eval evaluates a query only if it has judgments; without -c it skips queries that
    # have judgments but no retrieved row.
    evaluated = pl.col(_N_LABELLED) > 0
    if settings.missing_queries == "skip":
        evaluated = evaluated & (pl.col(_N_RETRIEVED) > 0)
    if not reads_labels(resolved):
        # Coverage, novelty, diversity ... need no judgment: every ranked list counts.
        evaluated = pl.col(_N_RETRIEVED) > 0
    valid = validity_mask(columns, settings.nan_scores, source, checked_in)
    checked = grouped.filter(valid & evaluated)

    def value(metric: Metric, ctx: RankingContext, prefix: str) -> pl.Expr:
        return metric.value_for(ctx)(lambda key: pl.col(prefix + key))

    kept = [HAS_RELEVANT] if settings.empty_queries == "drop" else []
    kept += [TIED] if flag_ties else []
    frame = checked.select(
        *columns.partition,
        *(value(metric, ctx, prefix).alias(label) for label, metric, ctx, prefix in pending),
        *kept,
    )
    return frame.sort(columns.partition)


def _per_level_plans(
    lf: pl.LazyFrame,
    columns: Columns,
    resolved: list[tuple[str, Metric]],
    settings: Settings,
    *,
    source: pl.LazyFrame | None,
    checked_in: CheckedIn,
    tables: Tables,
    flag_ties: bool,
) -> pl.LazyFrame:
    """Metrics with their own relevance level (``rel=``) or ``judged_only``: one plan each.

    The evaluated lists do not depend on the level (they have judgments, and retrieved rows
    unless ``missing_queries="zero"``), so every plan has the same rows. The hidden flags
    (``empty_queries="drop"``, ties) come from the evaluation's own level, or the first.
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
    for index, (level, judged_only) in enumerate(order):
        own = replace(settings, relevance_level=level)
        if index:  # hidden flags once
            own = replace(own, empty_queries="zero")
        rows = lf
        if judged_only:  # trec_eval -J: unjudged retrieved rows leave before ranking
            grade = pl.col(columns.relevance)
            judged = grade.is_not_null() & (grade >= 0)
            rows = lf.filter(pl.col(columns.score).is_null() | judged)
        plans.append(
            per_query_plan(
                rows,
                columns,
                groups[(level, judged_only)],
                own,
                source=source,
                checked_in=checked_in,
                tables=tables,
                flag_ties=flag_ties and not index,
            )
        )
    joined = plans[0]
    for plan in plans[1:]:
        joined = joined.join(plan, on=columns.partition, how="left", nulls_equal=True)
    labels = [label for label, _ in resolved]
    hidden = [name for name in plans[0].collect_schema().names() if name in (HAS_RELEVANT, TIED)]
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
        done = metric.finish(frame.select(*partition, label), partition, label, tables)
        result = result.join(done, on=partition, how="left", nulls_equal=True)
    return result.select(order).sort(partition)  # the joins do not keep the rows' order


def reads_labels(resolved: Sequence[tuple[str, Metric]]) -> bool:
    """Whether any metric reads the relevance labels (else the column is optional)."""
    return any(metric.reads_labels for _, metric in resolved)


def drop_empty_queries(per_query: pl.DataFrame, *, stacklevel: int = 3) -> pl.DataFrame:
    """Drop the lists with nothing relevant (``empty_queries="drop"``), saying how many."""
    kept, dropped = split_empty_queries(per_query)
    warn_dropped(dropped, per_query.height, stacklevel=stacklevel)
    return kept


def split_empty_queries(per_query: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """The lists with something relevant (``empty_queries="drop"``), and how many were left out.

    Without the ``HAS_RELEVANT`` flag (``empty_queries="zero"``) every list is kept.
    """
    if HAS_RELEVANT not in per_query.columns:
        return per_query, 0
    dropped = per_query.height - int(per_query[HAS_RELEVANT].sum())
    return per_query.filter(pl.col(HAS_RELEVANT)).drop(HAS_RELEVANT), dropped


def warn_dropped(dropped: int, evaluated: int, *, stacklevel: int) -> None:
    """Say once how many evaluated lists ``empty_queries="drop"`` left out (if any).

    ``stacklevel`` counts from the caller, as if it called ``warnings.warn`` itself.
    """
    if dropped:
        warnings.warn(
            f"empty_queries='drop': left out {dropped} of {evaluated} evaluated "
            "queries that have nothing relevant (empty_queries='zero', the trec_eval rule, "
            "scores them 0)",
            EmptyQueriesWarning,
            stacklevel=stacklevel + 1,
        )


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


def summary_of(label: str, metric: Metric) -> pl.Expr:
    """The aggregation of one metric's per-query values by its summary rule."""
    return summary_expr(pl.col(label), metric.summary)


def summary(
    per_query: pl.LazyFrame,
    resolved: list[tuple[str, Metric]],
    by: Sequence[str],
    tables: Tables | None = None,
) -> pl.LazyFrame:
    """One row per ``by`` group: each metric's summary of its per-query values.

    Per-query metrics are combined by their summary rule (means; ``num_*`` counts summed);
    per-system metrics by their own ``reduce`` over their hidden per-query values.
    """
    tables = tables or Tables()
    aggregations = [
        summary_of(label, metric).alias(label)
        for label, metric in resolved
        if metric.level == "query"
    ]
    if not by:
        result = per_query.select(aggregations) if aggregations else None
    else:
        result = (
            per_query.group_by(list(by))
            .agg(aggregations or [pl.len().alias("__rke_n")])
            .sort(list(by))
        )
        if not aggregations:
            result = result.drop("__rke_n")
    for label, metric in resolved:
        if metric.level != "system":
            continue
        assert metric.reduce is not None, f"per-system metric {label!r} has no reduce"
        reduced = metric.reduce(per_query, list(by), label, tables)
        if result is None:
            result = reduced
        elif not by:
            result = result.join(reduced, how="cross")
        else:
            result = result.join(reduced, on=list(by), how="left", nulls_equal=True)
    assert result is not None
    result = result.select(*by, *(label for label, _ in resolved))
    return result.sort(list(by)) if by else result


def per_query_only(
    per_query: FrameT, resolved: list[tuple[str, Metric]], *, stacklevel: int = 3
) -> FrameT:
    """The per-query frame without per-system metrics' hidden values, warning about them."""
    hidden = [label for label, metric in resolved if metric.level == "system"]
    if not hidden:
        return per_query
    warnings.warn(
        f"{', '.join(map(repr, hidden))} "
        + ("is a per-system metric" if len(hidden) == 1 else "are per-system metrics")
        + ": no value per query, so per_query=True leaves "
        + ("it" if len(hidden) == 1 else "them")
        + " out; evaluate(..., per_query=False) gives one value per system (by group)",
        PerSystemMetricWarning,
        stacklevel=stacklevel,
    )
    return per_query.drop(hidden)


def evaluate(
    data: FrameT,
    metrics: Sequence[str | Metric | MetricRequest] | str | Metric,
    *,
    per_query: bool = False,
    by: str | Sequence[str] | None = None,
    relevance_level: int | None = None,
    missing_queries: MissingQueries | None = None,
    ties: Ties | None = None,
    convention: ConventionName = "trec_eval",
    negative_labels: NegativeLabels | None = None,
    unretrieved: Unretrieved | None = None,
    duplicates: Duplicates | None = None,
    nan_scores: NanScores | None = None,
    empty_queries: EmptyQueries | None = None,
    train: object = None,
    items: object = None,
    catalog: object = None,
    n_buckets: int | Literal["auto"] | None = None,
    progress: bool | None = None,
    spill_dir: str | os.PathLike[str] | None = None,
    query: str = "query",
    item: str = "item",
    score: str = "score",
    relevance: str = "relevance",
    engine: Engine = "auto",
    tie_warning: float | None = 0.01,
    _hidden: bool = False,
) -> FrameT:
    """Evaluate ranking metrics over a long-format table, one row per (query, item).

    Parameters
    ----------
    data
        DataFrame or LazyFrame (e.g. ``pl.scan_parquet(...)``). A LazyFrame gives a LazyFrame
        back and nothing is read until you collect it. A pandas DataFrame or a pyarrow Table
        is converted once (without a copy where Arrow allows) and gives a Polars DataFrame.
    metrics
        Metric strings (case-insensitive; ``"ndcg@10"``, ``"map"``, ``"P_5"`` ...) or
        :class:`~polars_rankeval.metrics.Metric` objects. Each becomes one output column,
        named exactly as given.
    per_query
        Return one row per evaluated query (with the ``by`` keys) instead of the means.
    by
        Columns whose values split the table into separate runs, e.g. ``"model"``.
    relevance_level
        Labels ``>= relevance_level`` are relevant (trec_eval ``-l``, default 1); ndcg/dcg
        ignore it.
    missing_queries
        ``"skip"`` (default, trec_eval) drops queries that have judgments but no retrieved row;
        ``"zero"`` scores them on an empty ranking (trec_eval ``-c``).
    ties
        ``"trec"`` (default) breaks tied scores by item id, as trec_eval; ``"expected"`` gives
        each metric's expected value over all orderings of the tied rows (McSherry & Najork
        2008), and raises for metrics without a closed form.
    convention
        ``"trec_eval"`` (default), ``"sklearn"``, ``"ranx"``, ``"torchmetrics"``, ``"spark"``,
        ``"recommenders"`` or ``"ir_measures"``: that tool's definitions as defaults (see the
        conventions guide, docs/pages/guides/conventions.md). Explicit keywords and metric
        options win over the preset.
    negative_labels
        ``"unjudged"`` (default, trec_eval: pooled but unjudged) or ``"nonrelevant"`` (ranx).
    unretrieved
        ``"count"`` (default): judged rows with a null score count toward ``R`` and the ideal
        DCG; ``"drop"``: they are ignored, as in tools that only see the supplied rows.
    duplicates
        A ``(query, item)`` pair occurring twice is an error (``"error"``, the default, as
        trec_eval); ``"first"``/``"last"`` keep its first/last row in input order and
        ``"max_score"`` the row with the highest score.
    nan_scores
        A NaN score is an error (``"error"``, default) or ranks below every other score
        (``"last"``).
    empty_queries
        Queries (users) with judgments but nothing relevant: ``"zero"`` (default, trec_eval)
        scores them 0; ``"drop"`` leaves them out, as most recommender evaluations do, and
        warns with the number dropped (an :class:`~polars_rankeval.EmptyQueriesWarning`).
    train, items, catalog
        Extra tables for the beyond-accuracy metrics (see :mod:`polars_rankeval.tables`):
        ``train`` the past interactions (the log's query and item columns), ``items`` one
        row per item with features, an embedding or a category, ``catalog`` the item universe
        (a table with the item column, or its size). Frames, LazyFrames or file paths; read
        lazily. A metric that needs a missing table names it in its error.
    n_buckets
        Bounded memory: evaluate the queries in this many passes, each over one hash bucket of
        the query ids (every ranked list stays whole inside one pass), so only one bucket's rows
        sit in the ranking windows at a time. ``"auto"`` (the default for a LazyFrame) counts
        the rows when the result is collected and makes one pass per
        ``ROWS_PER_PASS`` (4,000,000) rows; a DataFrame defaults to 1 pass. Results equal the
        one-pass result (up to the last bit of floating-point sums, which Polars does not fix).
        With two or three passes (``RESCAN_PASSES``) each pass re-reads the input; with more,
        the input is read once and written into per-bucket Parquet files under ``spill_dir``,
        so each pass reads only its own bucket. An input that is costly to read again (a join,
        CSV) is read once first: collected when small, else copied to Parquet. With
        ``per_query=False`` each pass is reduced to per-system sums, so memory does not grow
        with the number of queries.
    progress
        Progress bar on stderr when evaluation runs in several passes: None (default) shows it
        only when stderr is a terminal, False never, True always. Where stderr is not a
        terminal, a forced bar is tqdm's when tqdm is installed: a widget in a Jupyter notebook
        with ipywidgets, else a text bar, without tqdm's "IProgress not found" warning.
    spill_dir
        Where the passes write their hash buckets (Parquet, about the input's size, removed
        when the evaluation ends, fails or is interrupted); the system's temporary directory
        by default. Only used when there are more than ``RESCAN_PASSES`` (3) passes.
    query, item, score, relevance
        Column names.
    engine
        Polars engine used to collect when ``data`` is a DataFrame.
    tie_warning
        For a DataFrame, warn once (a :class:`~polars_rankeval.TieWarning`) when the order of
        tied scores can move a reported mean by more than this much (default 0.01), naming the
        metrics and systems: the best and worst tie orders (``ties="optimistic"`` and
        ``"pessimistic"``) are evaluated on the lists that have ties. None turns it off. A
        LazyFrame is not checked (it would read the input twice): use
        :func:`~polars_rankeval.tie_report`.
    _hidden
        Internal (the Spark route, the command line, ``bootstrap``): with ``per_query=True``,
        the raw per-query plan: per-system and diversity metrics' hidden values and the
        ``empty_queries="drop"`` flag, for the caller to finish (:func:`finish_all`), filter
        and reduce.

    Returns
    -------
    DataFrame or LazyFrame
        Means over evaluated queries (``num_*`` counts are summed), one row per ``by`` group;
        per-system metrics (coverage, Gini, GAUC ...) beside them. With ``per_query=True``,
        one row per evaluated query, without the per-system metrics (a
        :class:`~polars_rankeval.PerSystemMetricWarning` says so).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": ["q1", "q1", "q1", "q2", "q2"],
    ...         "item": ["a", "b", "c", "a", "d"],
    ...         "score": [0.9, 0.8, None, 0.5, 0.7],
    ...         "relevance": [1, 0, 2, 1, None],
    ...     }
    ... )
    >>> # q1 ranks a (relevant), b; c is judged relevant but not retrieved, so R = 2.
    >>> # q2 ranks d (unjudged), then a (relevant).
    >>> rke.evaluate(log, ["p@1", "mrr", "map"])
    shape: (1, 3)
    ┌─────┬──────┬─────┐
    │ p@1 ┆ mrr  ┆ map │
    │ --- ┆ ---  ┆ --- │
    │ f64 ┆ f64  ┆ f64 │
    ╞═════╪══════╪═════╡
    │ 0.5 ┆ 0.75 ┆ 0.5 │
    └─────┴──────┴─────┘
    """
    columns = make_columns(query=query, item=item, score=score, relevance=relevance, by=by)
    preset, settings = settings_for(convention, locals())
    engine = check_choice("engine", engine, ["auto", "in-memory", "streaming"])
    _check_per_query(per_query)
    resolved = resolve_metrics(metrics, preset)
    data = as_polars(data)  # type: ignore[assignment]
    # a frame of per-user lists (the item column is a list column) becomes the long format
    lf, _ = maybe_from_lists(data.lazy(), columns)
    # the input as given: a missing column is reported among the columns the user has
    check_schema(lf.collect_schema(), columns, need_relevance=reads_labels(resolved))
    lf = with_optional_relevance(lf, columns, resolved)
    check_schema(lf.collect_schema(), columns)
    tables = make_tables(lf.collect_schema(), columns, train=train, items=items, catalog=catalog)
    if n_buckets is None:
        # A DataFrame is in memory already; a LazyFrame may be larger than memory.
        n_buckets = 1 if isinstance(data, pl.DataFrame) else "auto"
    passes = check_buckets(n_buckets)
    tie_limit = check_tie_warning(tie_warning)
    flag_ties = (
        tie_limit is not None
        and isinstance(data, pl.DataFrame)
        and not per_query
        and not _hidden
        and bool(tie_sensitive(resolved, settings))
    )

    def plan_for(frame: pl.LazyFrame) -> pl.LazyFrame:
        return per_query_plan(
            frame, columns, resolved, settings, source=lf, tables=tables, flag_ties=flag_ties
        )

    if passes != 1 and not per_query:
        # each pass's per-query rows become partial sums: the end holds one row per system
        return _summary_in_passes(
            data,
            lf,
            columns,
            plan_for,
            passes,
            resolved,
            settings,
            tables,
            progress=progress,
            spill_dir=spill_dir,
            tie_limit=tie_limit,
            engine=engine,
        )
    plan = (
        plan_for(lf)
        if passes == 1
        else in_passes(lf, columns, plan_for, passes, progress=progress, spill_dir=spill_dir)
    )

    def finished(per_query_frame: pl.DataFrame, stacklevel: int) -> pl.DataFrame:
        """The raw per-query rows to the result: finishing steps, dropped lists, summary."""
        lazy = finish_all(per_query_frame.lazy(), resolved, columns.partition, tables)
        done = drop_empty_queries(lazy.collect(), stacklevel=stacklevel + 1)
        if TIED in done.columns:
            done = warn_if_ties_move_means(
                lf,
                done,
                resolved,
                settings,
                columns,
                tables,
                limit=tie_limit or 0.0,
                stacklevel=stacklevel + 1,
            )
        if per_query:
            return per_query_only(done, resolved, stacklevel=stacklevel + 1)
        return summary(done.lazy(), resolved, columns.by, tables).collect()

    if isinstance(data, pl.DataFrame):
        if passes == 1:
            per_query_frame = plan.collect(engine=engine)
        else:  # SIGTERM removes the spill as Ctrl-C does (the caller's collect cannot)
            with cleanup_on_sigterm():
                per_query_frame = plan.collect(engine=engine)
        if passes == 1:  # the passes path has warned already
            warn_if_empty(per_query_frame, lf, columns)
        if per_query and _hidden:
            return per_query_frame
        return finished(per_query_frame, stacklevel=3)
    if per_query and _hidden:
        return plan
    if not _needs_per_query_frame(resolved, settings):
        # every metric is a plain aggregation of its list: one lazy, streaming plan
        return plan if per_query else summary(plan, resolved, columns.by, tables)
    # Per-system metrics, finishing steps and dropped lists work on the per-query rows (one
    # per list, small): the ranking plan runs once on the streaming engine, the rest on its
    # result, when the LazyFrame is collected.
    hidden_schema = pl.LazyFrame(schema=plan.collect_schema())
    expected = finish_all(hidden_schema, resolved, columns.partition, tables)
    if HAS_RELEVANT in expected.collect_schema():
        expected = expected.drop(HAS_RELEVANT)
    if per_query:
        system = [label for label, metric in resolved if metric.level == "system"]
        schema = expected.drop(system).collect_schema()
    else:
        schema = summary(expected, resolved, columns.by, tables).collect_schema()

    def run() -> pl.DataFrame:
        return finished(plan.collect(engine="streaming"), stacklevel=2)

    return pl.defer(run, schema=schema)


def _check_per_query(per_query: object) -> None:
    if not isinstance(per_query, bool):
        msg = f"option per_query= must be True or False, got {per_query!r}"
        raise InvalidOptionError(msg)


def _summary_in_passes(  # noqa: PLR0917 (internal; one call site in evaluate)
    data: FrameT,
    lf: pl.LazyFrame,
    columns: Columns,
    plan_for: Callable[[pl.LazyFrame], pl.LazyFrame],
    passes: int | Literal["auto"],
    resolved: list[tuple[str, Metric]],
    settings: Settings,
    tables: Tables,
    *,
    progress: bool | None,
    spill_dir: str | os.PathLike[str] | None,
    tie_limit: float | None,
    engine: Engine,
) -> FrameT:
    """The summary of a log evaluated in passes, each pass reduced to partial sums.

    Each pass's per-query rows are finished (:func:`finish_all`) and their empty lists
    dropped, both per query, then summed per ``by`` group (:class:`PassSums`): the
    passes keep one row per system each, not one per query (per-system metrics keep their own
    per-query values, which their ``reduce`` needs). The warnings (nothing evaluated, lists
    dropped, ties) are given once, over all passes.
    """
    expected = finish_all(
        pl.LazyFrame(schema=plan_for(lf).collect_schema()), resolved, columns.partition, tables
    )
    expected = expected.drop(HAS_RELEVANT, TIED, strict=False)
    schema = summary(expected, resolved, columns.by, tables).collect_schema()
    empty = pl.DataFrame(schema=expected.collect_schema())

    def run() -> pl.DataFrame:
        sums = PassSums(resolved, list(columns.by), list(columns.partition))
        counts = {"evaluated": 0, "dropped": 0}
        tied: list[pl.DataFrame] = []

        def each(bucket: pl.LazyFrame) -> None:
            rows = plan_for(bucket).collect(engine="streaming")
            counts["evaluated"] += rows.height
            done = finish_all(rows.lazy(), resolved, columns.partition, tables).collect()
            done, dropped = split_empty_queries(done)
            counts["dropped"] += dropped
            if TIED in done.columns:  # the tie warning reads which lists have ties
                tied.append(done.select(*columns.partition, TIED))
                done = done.drop(TIED)
            sums.add(done)

        run_passes(lf, columns, each, passes, progress=progress, spill_dir=spill_dir)
        if not counts["evaluated"]:
            warn_if_empty(empty, lf, columns)
        warn_dropped(counts["dropped"], counts["evaluated"], stacklevel=2)
        if tied:
            warn_if_ties_move_means(
                lf,
                pl.concat(tied),
                resolved,
                settings,
                columns,
                tables,
                limit=tie_limit or 0.0,
                stacklevel=2,
            )
        return sums.result(empty, tables, schema)

    summed = pl.defer(run, schema=schema)
    if isinstance(data, pl.LazyFrame):
        return summed
    with cleanup_on_sigterm():  # SIGTERM removes the spill as Ctrl-C does
        return summed.collect(engine=engine)


def _needs_per_query_frame(resolved: list[tuple[str, Metric]], settings: Settings) -> bool:
    """Whether the result needs the collected per-query rows (not one streaming plan)."""
    return settings.empty_queries == "drop" or any(
        metric.finish is not None or metric.level == "system" for _, metric in resolved
    )


def with_optional_relevance(
    lf: pl.LazyFrame, columns: Columns, resolved: list[tuple[str, Metric]]
) -> pl.LazyFrame:
    """The log with a null relevance column when no metric reads labels and it has none."""
    if reads_labels(resolved) or columns.relevance in lf.collect_schema():
        return lf
    return lf.with_columns(pl.lit(None, dtype=pl.Int64).alias(columns.relevance))
