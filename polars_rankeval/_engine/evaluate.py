"""Frame-level evaluation: :func:`evaluate` and the route behind it, stage by stage.

:func:`evaluate` is the public, typed entry point; :func:`evaluate_frame` is the route every
caller shares (the internal ones add two switches): the options checked, the input taken
(:mod:`~polars_rankeval._engine.input`), the plan made, the passes run
(:mod:`~polars_rankeval._engine.passes`), the rows summarised
(:mod:`~polars_rankeval._engine.summary`), each stage visited once, in that order.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import polars as pl

from polars_rankeval._engine.columns import Columns, make_columns
from polars_rankeval._engine.context import Ties
from polars_rankeval._engine.input import Cut, Input, check_cut, take_input
from polars_rankeval._engine.options import check_choice
from polars_rankeval._engine.partial import PassSums
from polars_rankeval._engine.passes import (
    ROWS_PER_PASS,
    check_buckets,
    deferred,
    in_passes,
    run_passes,
)
from polars_rankeval._engine.plan import HAS_RELEVANT, finish_all, per_query_plan
from polars_rankeval._engine.read_once import input_errors_named
from polars_rankeval._engine.settings import EmptyQueries, MissingQueries, Settings, settings_for
from polars_rankeval._engine.spill import cleanup_on_sigterm
from polars_rankeval._engine.summary import (
    FrameT,
    drop_empty_queries,
    per_query_only,
    split_empty_queries,
    summary,
    warn_dropped,
)
from polars_rankeval._engine.tables import warn_unused_tables
from polars_rankeval._engine.tie_bounds import (
    check_tie_warning,
    range_columns,
    range_sums,
    tie_ranges,
    tie_sensitive,
    warn_about_ties,
    warn_if_ties_move_means,
    with_tie_ranges,
)
from polars_rankeval._engine.validation import Duplicates, NanScores, warn_if_empty
from polars_rankeval._engine.warn import Site, user_site
from polars_rankeval._names.registry import MetricRequest, resolve_metrics
from polars_rankeval.conventions import ConventionName, NegativeLabels, Unretrieved
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.metrics._base import Metric

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from polars_rankeval._engine.vocabulary import EvaluateOptions

Engine = Literal["auto", "in-memory", "streaming"]
_ENGINES: list[Engine] = ["auto", "in-memory", "streaming"]


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
    depth: int | None = None,
    judged_only: bool = False,
    train: object = None,
    items: object = None,
    catalog: object = None,
    groups: object = None,
    group_target: object = None,
    n_buckets: int | Literal["auto"] | None = None,
    progress: bool | None = None,
    spill_dir: str | os.PathLike[str] | None = None,
    query: str = "query",
    item: str = "item",
    score: str = "score",
    relevance: str = "relevance",
    engine: Engine = "auto",
    tie_warning: float | None = 0.01,
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
        Each metric evaluates its own queries, whatever else is asked: those with judgments
        (and a retrieved row, unless ``missing_queries="zero"``) for a metric that reads
        labels, every query with a retrieved row for a label-free one (coverage, novelty,
        diversity ...); a query only some metrics evaluate has null in the others' columns,
        and each mean is over the metric's own queries.
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
    depth
        Keep each list's first ``depth`` retrieved items (trec_eval ``-M``), in the order the
        metrics rank them (score descending, tied scores by the item's string form
        descending); a judged item past the cut stays judged but unretrieved, so it still
        counts toward ``R``. None (default): every retrieved item.
    judged_only
        Drop the retrieved items without a judgment (or with a negative label) before ranking,
        after ``depth`` (trec_eval ``-J``); the rest move up without gaps. Default False.
    train, items, catalog
        Extra tables for the beyond-accuracy metrics (see :mod:`polars_rankeval._engine.tables`):
        ``train`` the past interactions (the log's query and item columns), ``items`` one
        row per item with features, an embedding or a category, ``catalog`` the item universe
        (a table with the item column, or its size). Frames, LazyFrames or file paths; read
        lazily. A metric that needs a missing table names it in its error.
    groups, group_target
        For the fairness metrics (``awrf``, ``ndkl``, ``ee_l`` ...; see the fairness guide,
        docs/pages/guides/fairness.md): ``groups`` maps items to groups in one or several
        dimensions (the item column plus one column per dimension, or the long layout item,
        dimension, group, weight); ``group_target`` gives each group's target share
        (``"population"``, the default: the groups' shares of the items; ``"uniform"``; a
        mapping ``{group: share}`` or ``{dimension: {group: share}}``; or a table with
        ``group`` and ``share`` columns, optionally ``dimension`` and the query column for a
        target per query).
    n_buckets
        Bounded memory: evaluate the queries in this many passes, each over one hash bucket of
        the query ids (every ranked list stays whole inside one pass), so only one bucket's rows
        sit in the ranking windows at a time. ``"auto"`` (the default for a LazyFrame) counts
        the rows when the result is collected and makes one pass per
        ``ROWS_PER_PASS`` (4,000,000) rows, fewer for a per-query plan wider than 16 columns
        (``rows_per_pass``: a pass's memory grows with rows times columns); a DataFrame
        defaults to 1 pass up to ``ROWS_PER_PASS`` rows and to ``"auto"`` above (each pass
        filters its bucket out of the frame in memory; with ``engine="in-memory"``, 1 pass).
        Results equal the one-pass result (up to the last bit of floating-point sums, which
        Polars does not fix).
        With two or three passes (``RESCAN_PASSES``) each pass re-reads the input; with more,
        the input is read once and written into per-bucket Parquet files under ``spill_dir``,
        so each pass reads only its own bucket. An input that is costly to read again (a join,
        CSV) is read once first: collected when small, else copied to Parquet; a join of frames
        held in memory is joined per pass instead (the bucket filter reaches both sides). With
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
        Warn once (a :class:`~polars_rankeval.TieWarning`) when the order of tied scores can
        move a mean by more than this much (default 0.01), naming the metrics and systems
        (with ``per_query=True``: the mean of the per-query values). The best and worst tie
        orders (``ties="optimistic"`` and ``"pessimistic"``) are evaluated in the same pass,
        only on the lists where a group of tied scores mixes labels (no other list can move).
        A LazyFrame is checked when it is collected, and the warning points at the line that
        called ``evaluate``. None turns it off.

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
    return evaluate_frame(
        data,
        metrics,
        per_query=per_query,
        by=by,
        relevance_level=relevance_level,
        missing_queries=missing_queries,
        ties=ties,
        convention=convention,
        negative_labels=negative_labels,
        unretrieved=unretrieved,
        duplicates=duplicates,
        nan_scores=nan_scores,
        empty_queries=empty_queries,
        depth=depth,
        judged_only=judged_only,
        train=train,
        items=items,
        catalog=catalog,
        groups=groups,
        group_target=group_target,
        n_buckets=n_buckets,
        progress=progress,
        spill_dir=spill_dir,
        query=query,
        item=item,
        score=score,
        relevance=relevance,
        engine=engine,
        tie_warning=tie_warning,
    )


@dataclass(frozen=True)
class _Request:
    """The checked options: what to evaluate, over which columns, with which settings."""

    columns: Columns
    settings: Settings
    resolved: list[tuple[str, Metric]]
    cut: Cut
    per_query: bool
    engine: Engine
    # None: no tie check
    tie_limit: float | None


@dataclass(frozen=True)
class _Route:
    """The plan's shape: how many passes, and where the tie check runs.

    ``flag_ties``: the tie ranges are computed (to warn, or for a caller that reports them);
    ``after``: an in-memory frame gets them after the metrics, from a second plan over the
    same rows (:func:`~polars_rankeval._engine.tie_bounds.with_tie_ranges` says why): in one
    pass once the metrics are collected (:class:`_Finish`), in passes within each pass
    (:func:`_plan_for`); ``site``: the user's line, for the warnings given when a LazyFrame
    is collected (in a Polars thread).
    """

    passes: int | Literal["auto"]
    flag_ties: bool
    after: bool
    site: Site


def evaluate_frame(
    data: FrameT,
    metrics: Sequence[str | Metric | MetricRequest] | str | Metric,
    *,
    per_query: bool = False,
    by: str | Sequence[str] | None = None,
    raw: bool = False,
    keep_tie_ranges: bool = False,
    **options: Unpack[EvaluateOptions],
) -> FrameT:
    """:func:`evaluate`, with the internal callers' two switches; the route, stage by stage.

    Options checked (:func:`_request`) -> the input taken (:func:`~.input.take_input`: read,
    columns checked, lists cut) -> the plan (:func:`_route`, :func:`~.plan.per_query_plan`, the
    tie bounds) -> the passes (:mod:`~.passes`) -> the summary (:mod:`~.summary`).

    ``raw`` (Spark, the command line, ``bootstrap``): with ``per_query=True``, the raw
    per-query plan: per-system and diversity metrics' hidden values and the
    ``empty_queries="drop"`` flag, for the caller to finish (:func:`finish_all`), filter and
    reduce. ``keep_tie_ranges`` (compare, check, the command line): keep the hidden per-query
    tie-range columns (:func:`polars_rankeval._engine.tie_bounds.tie_ranges` reads them) and do
    not warn.
    """
    request = _request(metrics, per_query, by, options)
    source = take_input(
        data,
        request.columns,
        request.resolved,
        request.settings,
        request.cut,
        train=options.get("train"),
        items=options.get("items"),
        catalog=options.get("catalog"),
        groups=options.get("groups"),
        group_target=options.get("group_target"),
    )
    route = _route(
        request,
        source,
        options.get("n_buckets"),
        rows=_rows_given(data),
        raw=raw,
        keep=keep_tie_ranges,
    )
    # after the option checks: a refused evaluation says only why
    warn_unused_tables(((label, metric.needs) for label, metric in request.resolved), source.tables)
    plan_for = _plan_for(request, source, route)
    if route.passes != 1 and not per_query:
        # each pass's per-query rows become partial sums: the end holds one row per system
        return _summary_in_passes(  # type: ignore[return-value]
            request,
            source,
            plan_for,
            route,
            tie_limit=None if keep_tie_ranges else request.tie_limit,
            progress=options.get("progress"),
            spill_dir=options.get("spill_dir"),
        )
    plan = (
        plan_for(source.lf)
        if route.passes == 1
        else in_passes(
            source.lf,
            request.columns,
            plan_for,
            route.passes,
            progress=options.get("progress"),
            spill_dir=options.get("spill_dir"),
        )
    )
    finish = _Finish(request, source, route, keep_tie_ranges=keep_tie_ranges)
    if source.in_memory:
        return _collected(plan, finish, raw=raw)  # type: ignore[return-value]
    if per_query and raw:
        return plan  # type: ignore[return-value]
    return _deferred(plan, finish)  # type: ignore[return-value]


def _request(
    metrics: Sequence[str | Metric | MetricRequest] | str | Metric,
    per_query: object,
    by: str | Sequence[str] | None,
    options: EvaluateOptions,
) -> _Request:
    """The options checked, before any input is read."""
    columns = make_columns(
        query=options.get("query", "query"),
        item=options.get("item", "item"),
        score=options.get("score", "score"),
        relevance=options.get("relevance", "relevance"),
        by=by,
    )
    preset, settings = settings_for(options.get("convention", "trec_eval"), options)
    engine = check_choice("engine", options.get("engine", "auto"), _ENGINES)
    _check_per_query(per_query)
    cut = check_cut(options.get("depth"), options.get("judged_only", False))
    return _Request(
        columns,
        settings,
        resolve_metrics(metrics, preset),
        cut,
        bool(per_query),
        engine,
        check_tie_warning(options.get("tie_warning", 0.01)),
    )


def _route(
    request: _Request,
    source: Input,
    n_buckets: object,
    *,
    rows: int | None,
    raw: bool,
    keep: bool,
) -> _Route:
    """How many passes, and whether and where the tie ranges are computed.

    ``rows``: the height of an in-memory input as given (None when unknown), for its default
    number of passes (:func:`_frame_passes`).

    The ranges are computed to warn (not for the raw plan) or for a caller that reports them
    (``keep``), when some metric's trec-rule mean can move; after the metrics for an
    in-memory frame.
    """
    if n_buckets is None:
        # A LazyFrame may be larger than memory; a DataFrame is in memory already, but one
        # pass over all of it holds every row in the windows at once.
        n_buckets = _frame_passes(rows, request.engine) if source.in_memory else "auto"
    passes = check_buckets(n_buckets)
    wanted = keep or (request.tie_limit is not None and not raw)
    flag = wanted and bool(tie_sensitive(request.resolved, request.settings))
    return _Route(passes, flag, flag and source.in_memory, user_site())


def _rows_given(data: object) -> int | None:
    """The number of rows of an in-memory input as given, else None.

    A Polars or pandas DataFrame, an Arrow table; a LazyFrame is counted when collected.
    """
    if isinstance(data, pl.DataFrame):
        return data.height
    rows = getattr(data, "num_rows", None)  # a pyarrow Table
    if isinstance(rows, int):
        return rows
    shape = getattr(data, "shape", None)  # a pandas DataFrame
    if isinstance(shape, tuple) and shape and isinstance(shape[0], int):
        return shape[0]
    return None


def _frame_passes(rows: int | None, engine: Engine) -> int | Literal["auto"]:
    """The default passes over an in-memory input: 1, or ``"auto"`` above ``ROWS_PER_PASS`` rows.

    ``"auto"`` passes are the LazyFrame's: one per :func:`~.passes.rows_per_pass` rows, each
    filtering its bucket out of the frame in memory (never spilled), so the windows hold one
    bucket's rows at a time. Measured on the tied 10M-row log (``benchmarks/eager_bench.py``,
    standard suite, tie check on, the same machine): one pass peaked at 1,815-2,177 MB
    against 913-1,015 MB for the lazy path from ``scan_parquet``; in passes at 1,028-1,114 MB,
    1.01x the lazy path's time (best of 3, alternated) for the same CPU seconds. Up to
    ``ROWS_PER_PASS`` rows stay one pass (the tie check then runs after the metrics, see
    :class:`_Route`). With ``engine="in-memory"`` the caller asked for Polars' in-memory
    engine, which the passes (streaming, each) would not use: one pass.
    """
    if rows is None or engine == "in-memory" or rows <= ROWS_PER_PASS:
        return 1
    return "auto"


def _plan_for(
    request: _Request, source: Input, route: _Route
) -> Callable[[pl.LazyFrame], pl.LazyFrame]:
    """The per-query plan of one frame of whole lists (the input, or one pass's bucket)."""
    columns, resolved, settings = request.columns, request.resolved, request.settings
    tables, lf = source.tables, source.lf

    def ranges_after(plan: pl.LazyFrame, frame: pl.LazyFrame) -> pl.DataFrame:
        return with_tie_ranges(
            plan.collect(engine="streaming"),
            frame,
            columns,
            resolved,
            settings,
            source=lf,
            tables=tables,
        )

    def plan_for(frame: pl.LazyFrame) -> pl.LazyFrame:
        if route.flag_ties and not route.after:
            # Two branches read the input (the metrics, and the tie bounds on a few lists):
            # one explicit cache makes them share one read; Polars' own subplan elimination
            # did not (two Parquet scans at 1M rows).
            frame = frame.cache()
            plan = per_query_plan(frame, columns, resolved, settings, source=lf, tables=tables)
            return with_tie_ranges(
                plan, frame, columns, resolved, settings, source=lf, tables=tables
            )
        plan = per_query_plan(frame, columns, resolved, settings, source=lf, tables=tables)
        if not route.flag_ties or route.passes == 1:
            return plan  # in one pass, _Finish adds the ranges to the collected metrics
        # An in-memory frame in passes: each pass's bucket gets its ranges from a second plan
        # once its metrics are collected, so the two peaks do not add up. Measured on the
        # tied 10M-row log (standard suite, 3 passes, alternated fresh processes): peak
        # 1,014-1,018 MB against 1,306-1,308 MB for both in one cached plan, time 12.0-12.9 s
        # against 13.1-13.6 s.
        schema = with_tie_ranges(
            plan, frame, columns, resolved, settings, source=lf, tables=tables
        ).collect_schema()
        return pl.defer(lambda: ranges_after(plan, frame), schema=schema)

    return plan_for


@dataclass(frozen=True)
class _Finish:
    """The last stage: the raw per-query rows to the result."""

    request: _Request
    source: Input
    route: _Route
    keep_tie_ranges: bool

    def __call__(self, per_query_frame: pl.DataFrame) -> pl.DataFrame:
        """Finishing steps, dropped lists, the tie warning, then the summary."""
        request, source = self.request, self.source
        columns, resolved, tables = request.columns, request.resolved, source.tables
        if self.route.after and self.route.passes == 1:
            per_query_frame = with_tie_ranges(
                per_query_frame,
                source.lf,
                columns,
                resolved,
                request.settings,
                source=source.lf,
                tables=tables,
            )
        lazy = finish_all(per_query_frame.lazy(), resolved, columns.partition, tables)
        done = drop_empty_queries(lazy.collect(), site=self.route.site)
        if not self.keep_tie_ranges:  # compare and check report the ranges themselves
            done = warn_about_ties(done, columns.by, limit=request.tie_limit, site=self.route.site)
        if request.per_query:
            return per_query_only(done, resolved, site=self.route.site)
        return summary(done.lazy(), resolved, columns.by, tables).collect()

    def schema(self, plan: pl.LazyFrame) -> pl.Schema:
        """The schema of the finished result of ``plan``'s rows, without running it."""
        resolved, columns = self.request.resolved, self.request.columns
        hidden_schema = pl.LazyFrame(schema=plan.collect_schema())
        expected = finish_all(hidden_schema, resolved, columns.partition, self.source.tables)
        if HAS_RELEVANT in expected.collect_schema():
            expected = expected.drop(HAS_RELEVANT)
        expected = expected.drop([] if self.keep_tie_ranges else range_columns(expected))
        if self.request.per_query:
            system = [label for label, metric in resolved if metric.level == "system"]
            return expected.drop(system).collect_schema()
        return summary(expected, resolved, columns.by, self.source.tables).collect_schema()


def _collected(plan: pl.LazyFrame, finish: _Finish, *, raw: bool) -> pl.DataFrame:
    """An in-memory input's result, collected now."""
    request, source = finish.request, finish.source
    if finish.route.passes == 1:
        per_query_frame = plan.collect(engine=request.engine)
        # the passes path has warned already
        labels = [label for label, _ in request.resolved]
        warn_if_empty(per_query_frame, source.lf, request.columns, labels, finish.route.site)
    else:  # SIGTERM removes the spill as Ctrl-C does (the caller's collect cannot)
        with cleanup_on_sigterm():
            per_query_frame = plan.collect(engine=request.engine)
    if request.per_query and raw:
        return per_query_frame
    return finish(per_query_frame)


def _deferred(plan: pl.LazyFrame, finish: _Finish) -> pl.LazyFrame:
    """A LazyFrame's result: nothing runs until it is collected."""
    request = finish.request
    plain = not _needs_per_query_frame(request.resolved, request.settings)
    if plain and not finish.route.flag_ties:
        # every metric is a plain aggregation of its list: one lazy, streaming plan
        if request.per_query:
            return plan
        return summary(plan, request.resolved, request.columns.by, finish.source.tables)
    # Per-system metrics, finishing steps and dropped lists work on the per-query rows (one
    # per list, small): the ranking plan runs once on the streaming engine, the rest on its
    # result, when the LazyFrame is collected.

    @input_errors_named(finish.source.lf)  # a cut Parquet file of the input: an error naming it
    def run() -> pl.DataFrame:
        return finish(plan.collect(engine="streaming"))

    return pl.defer(run, schema=finish.schema(plan))


def _check_per_query(per_query: object) -> None:
    if not isinstance(per_query, bool):
        msg = f"option per_query= must be True or False, got {per_query!r}"
        raise InvalidOptionError(msg)


def _summary_in_passes(
    request: _Request,
    source: Input,
    plan_for: Callable[[pl.LazyFrame], pl.LazyFrame],
    route: _Route,
    *,
    tie_limit: float | None,
    progress: bool | None,
    spill_dir: str | os.PathLike[str] | None,
) -> pl.DataFrame | pl.LazyFrame:
    """The summary of a log evaluated in passes, each pass reduced to partial sums.

    Each pass's per-query rows are finished (:func:`finish_all`) and their empty lists
    dropped, both per query, then summed per ``by`` group (:class:`PassSums`): the
    passes keep one row per system each, not one per query (per-system metrics keep their own
    per-query values, which their ``reduce`` needs). The warnings (nothing evaluated, lists
    dropped, ties) are given once, over all passes, at the user's line.
    """
    columns, resolved, tables, lf = request.columns, request.resolved, source.tables, source.lf
    plan_schema = plan_for(lf).collect_schema()
    expected = finish_all(pl.LazyFrame(schema=plan_schema), resolved, columns.partition, tables)
    expected = expected.drop(HAS_RELEVANT, *range_columns(expected), strict=False)
    schema = summary(expected, resolved, columns.by, tables).collect_schema()
    empty = pl.DataFrame(schema=expected.collect_schema())

    def run() -> pl.DataFrame:
        sums = PassSums(resolved, list(columns.by), list(columns.partition))
        counts = {"evaluated": 0, "dropped": 0}
        ranged: list[pl.DataFrame] = []  # per pass: each system's sum of tie ranges

        def each(bucket: pl.LazyFrame) -> None:
            rows = plan_for(bucket).collect(engine="streaming")
            counts["evaluated"] += rows.height
            done = finish_all(rows.lazy(), resolved, columns.partition, tables).collect()
            done, dropped = split_empty_queries(done)
            counts["dropped"] += dropped
            hidden = range_columns(done)
            if hidden:  # the tie warning reads each pass's sums of tie ranges
                ranged.append(range_sums(done, columns.by))
                done = done.drop(hidden)
            sums.add(done)

        run_passes(
            lf,
            columns,
            each,
            route.passes,
            progress=progress,
            spill_dir=spill_dir,
            width=len(plan_schema),  # a wide plan holds fewer rows a pass
        )
        if not counts["evaluated"]:
            warn_if_empty(empty, lf, columns, site=route.site)
        warn_dropped(counts["dropped"], counts["evaluated"], site=route.site)
        if ranged and tie_limit is not None:
            moved = tie_ranges(pl.concat(ranged), columns.by, summed=True)
            warn_if_ties_move_means(moved, columns.by, limit=tie_limit, site=route.site)
        return sums.result(empty, tables, schema)

    summed = deferred(run, schema)  # guards SIGTERM while the plan lives
    if not source.in_memory:
        return summed
    with cleanup_on_sigterm():  # SIGTERM removes the spill as Ctrl-C does
        return summed.collect(engine=request.engine)


def _needs_per_query_frame(resolved: list[tuple[str, Metric]], settings: Settings) -> bool:
    """Whether the result needs the collected per-query rows (not one streaming plan)."""
    return settings.empty_queries == "drop" or any(
        metric.finish is not None or metric.level == "system" for _, metric in resolved
    )
