"""Frame-level evaluation: the typed functions behind ``df.rank_eval`` / ``lf.rank_eval``."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Literal

import polars as pl

from polars_rankeval._engine.columns import (
    Columns,
    as_polars,
    check_schema,
    make_columns,
)
from polars_rankeval._engine.context import (
    Ties,
)
from polars_rankeval._engine.options import check_choice
from polars_rankeval._engine.partial import PassSums
from polars_rankeval._engine.passes import (
    check_buckets,
    deferred,
    in_passes,
    run_passes,
)
from polars_rankeval._engine.plan import (
    HAS_RELEVANT,
    finish_all,
    per_query_plan,
    reads_labels,
)
from polars_rankeval._engine.read_once import input_errors_named, readable
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
from polars_rankeval._engine.tables import Tables, make_tables, warn_unused_tables
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
from polars_rankeval._engine.validation import (
    Duplicates,
    NanScores,
    warn_if_empty,
)
from polars_rankeval._engine.warn import user_site
from polars_rankeval._names.registry import MetricRequest, resolve_metrics
from polars_rankeval.conventions import (
    ConventionName,
    NegativeLabels,
    Unretrieved,
)
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.lists import maybe_from_lists
from polars_rankeval.metrics._base import Metric

Engine = Literal["auto", "in-memory", "streaming"]


def evaluate(  # noqa: PLR0915  (staged in issue 28)
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
    _tie_ranges: bool = False,
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
    train, items, catalog
        Extra tables for the beyond-accuracy metrics (see :mod:`polars_rankeval._engine.tables`):
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
        Warn once (a :class:`~polars_rankeval.TieWarning`) when the order of tied scores can
        move a mean by more than this much (default 0.01), naming the metrics and systems
        (with ``per_query=True``: the mean of the per-query values). The best and worst tie
        orders (``ties="optimistic"`` and ``"pessimistic"``) are evaluated in the same pass,
        only on the lists where a group of tied scores mixes labels (no other list can move).
        A LazyFrame is checked when it is collected, and the warning points at the line that
        called ``evaluate``. None turns it off.
    _hidden
        Internal (the Spark route, the command line, ``bootstrap``): with ``per_query=True``,
        the raw per-query plan: per-system and diversity metrics' hidden values and the
        ``empty_queries="drop"`` flag, for the caller to finish (:func:`finish_all`), filter
        and reduce.
    _tie_ranges
        Internal (compare, check, the command line): keep the hidden per-query tie-range
        columns (:func:`polars_rankeval.ties.tie_ranges` reads them) and do not warn.

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
    # a cut Parquet file: named; empty lists warned about unless missing_queries="zero"
    lf, _ = maybe_from_lists(readable(data.lazy()), columns, settings.missing_queries)
    # the input as given: a missing column is reported among the columns the user has
    check_schema(lf.collect_schema(), columns, need_relevance=reads_labels(resolved))
    lf = with_optional_relevance(lf, columns, resolved)
    check_schema(lf.collect_schema(), columns)
    tables = make_tables(lf.collect_schema(), columns, train=train, items=items, catalog=catalog)
    if n_buckets is None:
        # A DataFrame is in memory already; a LazyFrame may be larger than memory.
        n_buckets = 1 if isinstance(data, pl.DataFrame) else "auto"
    passes = check_buckets(n_buckets)
    # `site`: the user's line, for the warnings given when a LazyFrame is collected (in a
    # Polars thread); `after`: an in-memory frame in one pass gets its tie ranges after the
    # metrics (ties.with_tie_ranges says why).
    tie_limit, flag_ties, after, site = _tie_check(
        tie_warning,
        resolved,
        settings,
        hidden=_hidden,
        keep_ranges=_tie_ranges,
        in_memory=isinstance(data, pl.DataFrame) and passes == 1,
    )
    # after the option checks: a refused evaluation says only why
    warn_unused_tables(((label, metric.needs) for label, metric in resolved), tables)

    def plan_for(frame: pl.LazyFrame) -> pl.LazyFrame:
        if not flag_ties or after:
            return per_query_plan(frame, columns, resolved, settings, source=lf, tables=tables)
        # Two branches read the input (the metrics, and the tie bounds on a few lists): one
        # explicit cache makes them share one read; Polars' own subplan elimination did not
        # (two Parquet scans at 1M rows).
        frame = frame.cache()
        plan = per_query_plan(frame, columns, resolved, settings, source=lf, tables=tables)
        return with_tie_ranges(plan, frame, columns, resolved, settings, source=lf, tables=tables)

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
            tie_limit=None if _tie_ranges else tie_limit,
            site=site,
            engine=engine,
        )
    plan = (
        plan_for(lf)
        if passes == 1
        else in_passes(lf, columns, plan_for, passes, progress=progress, spill_dir=spill_dir)
    )

    def finished(per_query_frame: pl.DataFrame, stacklevel: int) -> pl.DataFrame:
        """The raw per-query rows to the result: finishing steps, dropped lists, summary."""
        per_query_frame = (
            with_tie_ranges(
                per_query_frame, lf, columns, resolved, settings, source=lf, tables=tables
            )
            if after
            else per_query_frame
        )
        lazy = finish_all(per_query_frame.lazy(), resolved, columns.partition, tables)
        done = drop_empty_queries(lazy.collect(), stacklevel=stacklevel + 1)
        if not _tie_ranges:  # compare and check report the ranges themselves
            done = warn_about_ties(done, columns.by, limit=tie_limit, site=site)
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
            warn_if_empty(per_query_frame, lf, columns, [label for label, _ in resolved])
        if per_query and _hidden:
            return per_query_frame
        return finished(per_query_frame, stacklevel=3)
    if per_query and _hidden:
        return plan
    if not flag_ties and not _needs_per_query_frame(resolved, settings):
        # every metric is a plain aggregation of its list: one lazy, streaming plan
        return plan if per_query else summary(plan, resolved, columns.by, tables)
    # Per-system metrics, finishing steps and dropped lists work on the per-query rows (one
    # per list, small): the ranking plan runs once on the streaming engine, the rest on its
    # result, when the LazyFrame is collected.
    hidden_schema = pl.LazyFrame(schema=plan.collect_schema())
    expected = finish_all(hidden_schema, resolved, columns.partition, tables)
    if HAS_RELEVANT in expected.collect_schema():
        expected = expected.drop(HAS_RELEVANT)
    expected = expected.drop([] if _tie_ranges else range_columns(expected))
    if per_query:
        system = [label for label, metric in resolved if metric.level == "system"]
        schema = expected.drop(system).collect_schema()
    else:
        schema = summary(expected, resolved, columns.by, tables).collect_schema()

    @input_errors_named(lf)  # a cut Parquet file of the input: an error naming it
    def run() -> pl.DataFrame:
        return finished(plan.collect(engine="streaming"), stacklevel=2)

    return pl.defer(run, schema=schema)


def _tie_check(
    tie_warning: object,
    resolved: list[tuple[str, Metric]],
    settings: Settings,
    *,
    hidden: bool,
    keep_ranges: bool,
    in_memory: bool,
) -> tuple[float | None, bool, bool, tuple[str, int, dict[str, Any]]]:
    """The tie check's settings: ``tie_warning=``, ranges wanted, after the metrics, user's line.

    The user's line is :func:`~polars_rankeval._engine.warn.user_site`'s. The ranges are computed to
    warn (not for the internal raw plan, ``_hidden``) or for a caller that reports them
    (``_tie_ranges``), when some metric's trec-rule mean can move; after the metrics for an
    in-memory frame evaluated in one pass.
    """
    limit = check_tie_warning(tie_warning)
    wanted = keep_ranges or (limit is not None and not hidden)
    flag = wanted and bool(tie_sensitive(resolved, settings))
    return limit, flag, flag and in_memory, user_site()


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
    site: tuple[str, int, dict[str, Any]],
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

        run_passes(lf, columns, each, passes, progress=progress, spill_dir=spill_dir)
        if not counts["evaluated"]:
            warn_if_empty(empty, lf, columns)
        warn_dropped(counts["dropped"], counts["evaluated"], stacklevel=2)
        if ranged and tie_limit is not None:
            moved = tie_ranges(pl.concat(ranged), columns.by, summed=True)
            warn_if_ties_move_means(moved, columns.by, limit=tie_limit, site=site)
        return sums.result(empty, tables, schema)

    summed = deferred(run, schema)  # guards SIGTERM while the plan lives
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
