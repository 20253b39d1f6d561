"""How different are two systems' ranked lists for the same query: RBO, Jaccard, overlap, τ.

No relevance labels are needed: :func:`similarity` compares the lists of a long-format log
(query, item, score and the ``by`` column(s) naming the systems) pair of systems by pair.

RBO follows Corsi & Urbano, "The Treatment of Ties in Rank-Biased Overlap" (SIGIR 2024),
including lists of different lengths (``ext``, ``min``, ``max`` and the residual ``res``) and
their three tie variants (``w``, ``a``, ``b``). It is computed on a grid of depths per pair
and query: the overlap at each depth comes from running counts of the common items whose
contributions start, ramp (inside a tie group) or end at that depth, so the work is linear in
the lists' lengths and runs as one Polars plan (no Python loop per query).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import polars as pl

from polars_rankeval._engine.columns import as_polars
from polars_rankeval._engine.exact_sum import exact_mean
from polars_rankeval._engine.options import check_choice
from polars_rankeval._engine.vocabulary import (
    METRIC,
    N_DROPPED,
    N_QUERIES,
    VALUE,
    baseline_column,
    renamed,
)
from polars_rankeval._engine.warn import warn_at
from polars_rankeval._names.split import split_each
from polars_rankeval.agreement._similarity._lists import (
    check_input,
    per_query_rows,
    ranked_lists,
)
from polars_rankeval.agreement._similarity._measures import (
    _A,
    _B,
    _SYS,
    OUTPUTS,
    TIES,
    Measure,
    Ties,
    parse_measure,
)
from polars_rankeval.comparison._pairing import (
    matchups,
    resolve_baseline,
    system_names,
    system_value,
)
from polars_rankeval.errors import ColumnNotFoundError, EmptyEvaluationWarning, InvalidOptionError

# Input rows per bucket of queries: bounds the memory of one pass (see _rows_in_buckets).
BUCKET_ROWS = 2_000_000

__all__ = ["OUTPUTS", "TIES", "Measure", "Ties", "parse_measure", "similarity"]


@renamed(log="data")
def similarity(
    data: object,
    metrics: str | Measure | Sequence[str | Measure],
    *,
    by: str | Sequence[str],
    baseline: object = None,
    query: str = "query",
    item: str = "item",
    score: str = "score",
    relevance: str | None = None,
    per_query: bool = False,
    ties: Ties = "trec",
    within: str | Sequence[str] | None = None,
) -> pl.DataFrame:
    """How much two systems' ranked lists differ, per pair of systems; no labels needed.

    Parameters
    ----------
    data
        Long-format rows (DataFrame, LazyFrame, pandas or Arrow): one row per (system, query,
        item) with a score; rows with a null score are left out (not retrieved).
    metrics
        Metric strings: ``rbo(p=0.9)`` (rank-biased overlap; options ``p=`` in (0, 1),
        ``output=ext|min|max|res`` (default ``ext``: extrapolated; ``min``/``max``: bounds
        for the unseen part; ``res``: ``max - min``) and ``ties=`` to override the keyword),
        ``jaccard@k`` (|A_k ∩ B_k| / |A_k ∪ B_k|; without ``@k`` the whole lists),
        ``overlap@k`` (|A_k ∩ B_k| / k) and ``kendall_tau@k`` (Kendall's tau-b between the
        ranks of the items both top-k lists hold; null when fewer than two such items, or
        when all of them tie in one list). Top-k lists follow trec_eval's order (score
        descending, ties by item id descending).
    by
        The column(s) naming the systems; each stays a column of the output.
    baseline
        A system (a value, or a tuple of the ``by`` values): every other system is compared
        with it. ``None`` (default): every unordered pair.
    query, item, score
        The columns' names, as for :func:`~polars_rankeval.evaluate`.
    relevance
        Accepted so that one set of column keywords serves every function; similarity needs
        no labels, so the column is only checked to exist (when named), never read.
    per_query
        One row per (pair, query) instead of the means.
    ties
        ``"trec"`` (default): ties are broken as trec_eval does, and every measure works on
        the strict order. ``"w"``, ``"a"`` or ``"b"``: RBO treats tied scores as ties with
        Corsi & Urbano's variant (w: ties mean equality; a: the mean over the orders of the
        ties; b: corrected for the information lost to ties), and Kendall's tau-b gives tied
        scores tied ranks.
    within
        Segment column(s) (a user group, a country, a date): systems are compared inside each
        segment, and the output leads with the segment columns. A segment without the
        ``baseline`` is left out, with an :class:`~polars_rankeval.EmptyEvaluationWarning`
        naming it.

    Returns
    -------
    pl.DataFrame
        Long, in the columns every long result shares: one row per (metric, pair of systems):
        ``metric``, the ``by`` columns (a system), the ``baseline_<by>`` columns (the system it
        is compared with: the baseline, or without ``baseline=`` the earlier of the pair in
        sort order, as :func:`~polars_rankeval.compare` pairs them), ``n_queries`` (the
        queries both systems have), ``value`` (the metric's mean over them; Kendall's over
        those where it is defined) and ``n_dropped`` (queries only one of the two has, left
        out, as compare's ``n_dropped``). ``per_query``: ``metric``, the two systems'
        columns, the query column and ``value``, one row per (metric, pair, query). With
        ``within=`` the segment columns follow ``metric``.

    Examples
    --------
    >>> import polars as pl
    >>> log = pl.DataFrame(
    ...     {
    ...         "system": ["a"] * 3 + ["b"] * 3,
    ...         "query": [1] * 6,
    ...         "item": ["x", "y", "z", "y", "x", "w"],
    ...         "score": [3, 2, 1, 3, 2, 1],
    ...     }
    ... )
    >>> similarity(log, ["jaccard@2", "overlap@3"], by="system")
    shape: (2, 6)
    ┌───────────┬────────┬─────────────────┬───────────┬──────────┬───────────┐
    │ metric    ┆ system ┆ baseline_system ┆ n_queries ┆ value    ┆ n_dropped │
    │ ---       ┆ ---    ┆ ---             ┆ ---       ┆ ---      ┆ ---       │
    │ str       ┆ str    ┆ str             ┆ i64       ┆ f64      ┆ i64       │
    ╞═══════════╪════════╪═════════════════╪═══════════╪══════════╪═══════════╡
    │ jaccard@2 ┆ b      ┆ a               ┆ 1         ┆ 1.0      ┆ 0         │
    │ overlap@3 ┆ b      ┆ a               ┆ 1         ┆ 0.666667 ┆ 0         │
    └───────────┴────────┴─────────────────┴───────────┴──────────┴───────────┘
    """
    frame = as_polars(data, "data")
    lf = frame.lazy()
    if relevance is not None and relevance not in lf.collect_schema().names():
        msg = (
            f"column {relevance!r} (option relevance=) is not in the input; similarity does not "
            f"read labels, so leave relevance= out; columns present: {lf.collect_schema().names()}"
        )
        raise ColumnNotFoundError(msg)
    if within is not None:
        return _within_segments(
            lf,
            metrics,
            within=[within] if isinstance(within, str) else list(within),
            by=by,
            baseline=baseline,
            query=query,
            item=item,
            score=score,
            per_query=per_query,
            ties=ties,
        )
    by_list = [by] if isinstance(by, str) else list(by)
    if not by_list or not all(isinstance(name, str) for name in by_list):
        msg = f"option by= must name the system column(s), got {by!r}"
        raise InvalidOptionError(msg)
    ties = check_choice("ties", ties, TIES)
    texts = [metrics] if isinstance(metrics, Measure) else split_each(metrics)  # "rbo,jaccard"
    if not texts:
        msg = "metrics= is empty; give e.g. ['rbo(p=0.9)', 'jaccard@10']"
        raise InvalidOptionError(msg)
    measures = [text if isinstance(text, Measure) else parse_measure(text) for text in texts]
    labels = [m.label for m in measures]
    if len(set(labels)) != len(labels):
        msg = f"metrics= repeats a metric: {labels}"
        raise InvalidOptionError(msg)
    check_input(lf, by_list, query, item, score)
    named = lf.with_columns(system_names(by_list).alias(_SYS))
    systems = sorted(named.select(_SYS).unique().collect()[_SYS].drop_nulls().to_list())
    chosen = resolve_baseline(baseline, systems)
    # the by columns hold the system, baseline_<by> the one it is compared with, as compare
    # pairs them: the baseline, or without one the earlier of the pair in sort order
    side, other = _B, _A
    key_values = named.select(*by_list, _SYS).unique().filter(pl.col(_SYS).is_not_null()).collect()
    pair_list = matchups(systems, chosen)  # compare's pairs, so the two results join
    pairs = pl.LazyFrame(
        {_A: [a for a, _ in pair_list], _B: [b for _, b in pair_list]},
        schema={_A: pl.String, _B: pl.String},
    )
    compared = named.select(_SYS, query, item, score)
    ranked = ranked_lists(compared, query, item, score)
    rows = _rows_in_buckets(
        compared, measures, pairs, query=query, item=item, score=score, ties=ties
    )
    keys = [_A, _B]
    if per_query:
        out = rows.sort([*keys, query]).collect(engine="streaming")
        return _long(out, labels, key_values, by_list, (side, other), [query])
    counts = ranked.select(_SYS, query).unique().group_by(_SYS).agg(pl.len().alias("__n"))
    means = rows.group_by(keys).agg(
        *(exact_mean(pl.col(label)).alias(label) for label in labels),
        pl.len().cast(pl.Int64).alias(N_QUERIES),
    )
    summary = (
        pairs.join(means, on=keys, how="left")
        .join(counts, left_on=_A, right_on=_SYS, how="left")
        .join(counts, left_on=_B, right_on=_SYS, how="left", suffix="_b")
        .with_columns(pl.col(N_QUERIES).fill_null(0))
        .with_columns(
            (
                pl.col("__n").fill_null(0).cast(pl.Int64)
                + pl.col("__n_b").fill_null(0).cast(pl.Int64)
                - 2 * pl.col(N_QUERIES).cast(pl.Int64)
            ).alias(N_DROPPED)
        )
        .select(*keys, *labels, N_QUERIES, N_DROPPED)
        .sort(keys)
        .collect(engine="streaming")
    )
    return _long(summary, labels, key_values, by_list, (side, other), [N_QUERIES])


def _long(  # noqa: PLR0917 (one call site per shape)
    wide: pl.DataFrame,
    labels: list[str],
    key_values: pl.DataFrame,
    by: list[str],
    sides: tuple[str, str],
    before: list[str],
) -> pl.DataFrame:
    """One row per metric: metric, the by columns, baseline_<by>, ``before``, value, the rest.

    ``wide`` names the two systems of a pair by their joined names (``_A``, ``_B``);
    ``key_values`` maps each name back to its ``by`` values, which become columns again.
    """
    side, other = sides
    own = key_values.rename({_SYS: side})
    base = key_values.rename({_SYS: other, **{name: baseline_column(name) for name in by}})
    keyed = wide.join(own, on=side, how="left", maintain_order="left").join(
        base, on=other, how="left", maintain_order="left"
    )
    index = [*by, *(baseline_column(name) for name in by), *before]
    rest = [name for name in wide.columns if name not in {_A, _B, *labels, *before}]
    return keyed.unpivot(
        on=labels, index=[*index, *rest], variable_name=METRIC, value_name=VALUE
    ).select(METRIC, *index, VALUE, *rest)


def _rows_in_buckets(
    compared: pl.LazyFrame,
    measures: list[Measure],
    pairs: pl.LazyFrame,
    *,
    query: str,
    item: str,
    score: str,
    ties: Ties,
) -> pl.LazyFrame:
    """Per-(pair, query) rows, computed for one bucket of queries at a time.

    The RBO grid and the collected ranked sides grow with the rows compared (4.4 GB at 10M
    rows in one piece). Every measure is per query, so hashing the queries into buckets of
    about ``BUCKET_ROWS`` input rows bounds the memory and gives the same rows.
    """
    total = compared.select(pl.len()).collect().item()
    buckets = max(1, math.ceil(total / BUCKET_ROWS))
    if buckets == 1:
        return per_query_rows(
            ranked_lists(compared, query, item, score), measures, pairs, query, ties
        )
    bucket = pl.col(query).hash(seed=0) % buckets
    parts = [
        per_query_rows(
            ranked_lists(compared.filter(bucket == index), query, item, score),
            measures,
            pairs,
            query,
            ties,
        ).collect(engine="streaming")
        for index in range(buckets)
    ]
    return pl.concat(parts).lazy()


def _within_segments(
    lf: pl.LazyFrame,
    metrics: str | Measure | Sequence[str | Measure],
    *,
    within: list[str],
    baseline: object,
    **options: Any,
) -> pl.DataFrame:
    """``similarity`` per segment (the distinct ``within`` values), segment columns first."""
    missing = [name for name in within if name not in lf.collect_schema().names()]
    if missing or not within:
        msg = f"option within= names no column of the log: {missing or within!r}"
        raise ColumnNotFoundError(msg)
    segments = lf.select(within).unique().sort(within, nulls_last=True).collect()
    parts = []
    for values in segments.iter_rows(named=True):
        rows = lf.filter(
            pl.all_horizontal(pl.col(name).eq_missing(value) for name, value in values.items())
        ).drop(within)
        if baseline is not None:
            systems = rows.select(system_names(_as_list(options["by"])).unique()).collect()
            if system_value(baseline) not in set(systems.to_series().to_list()):
                warn_at(
                    f"similarity: segment {values} has no rows of baseline {baseline!r}; left out",
                    EmptyEvaluationWarning,
                )
                continue
        result = similarity(rows, metrics, baseline=baseline, **options)
        segment = [pl.lit(v).alias(k) for k, v in values.items()]
        parts.append(result.select(METRIC, *segment, pl.exclude(METRIC)))
    if not parts:
        msg = f"similarity: no segment of {within} has the baseline {baseline!r}"
        raise InvalidOptionError(msg)
    return pl.concat(parts, how="vertical_relaxed")


def _as_list(value: object) -> list[str]:
    return [value] if isinstance(value, str) else list(value)  # type: ignore[call-overload]
