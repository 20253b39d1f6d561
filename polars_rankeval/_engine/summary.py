"""From the collected per-query rows to the result: dropped lists, summaries, per-query output."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import polars as pl

from polars_rankeval._engine.meaning import summary_expr
from polars_rankeval._engine.plan import HAS_RELEVANT, own_lists
from polars_rankeval._engine.tables import Tables
from polars_rankeval._engine.warn import Site, warn_at
from polars_rankeval.errors import EmptyQueriesWarning, PerSystemMetricWarning
from polars_rankeval.metrics._base import Metric

FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)


def drop_empty_queries(per_query: pl.DataFrame, *, site: Site | None = None) -> pl.DataFrame:
    """Drop the lists with nothing relevant (``empty_queries="drop"``), saying how many.

    The warning is given at ``site`` (the user's line when omitted, see
    :func:`~polars_rankeval._engine.warn.warn_at`).
    """
    kept, dropped = split_empty_queries(per_query)
    warn_dropped(dropped, per_query.height, site=site)
    return kept


def split_empty_queries(per_query: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """The lists with something relevant (``empty_queries="drop"``), and how many were left out.

    Without the ``HAS_RELEVANT`` flag (``empty_queries="zero"``) every list is kept.
    """
    if HAS_RELEVANT not in per_query.columns:
        return per_query, 0
    dropped = per_query.height - int(per_query[HAS_RELEVANT].sum())
    return per_query.filter(pl.col(HAS_RELEVANT)).drop(HAS_RELEVANT), dropped


def warn_dropped(dropped: int, evaluated: int, *, site: Site | None = None) -> None:
    """Say once, at ``site``, how many lists ``empty_queries="drop"`` left out (if any)."""
    if dropped:
        warn_at(
            f"empty_queries='drop': left out {dropped} of {evaluated} evaluated "
            "queries that have nothing relevant (empty_queries='zero', the trec_eval rule, "
            "scores them 0)",
            EmptyQueriesWarning,
            site,
        )


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
        # its own lists: a mixed call's rows include lists it does not evaluate (null)
        reduced = metric.reduce(own_lists(per_query, label), list(by), label, tables)
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
    per_query: FrameT, resolved: list[tuple[str, Metric]], *, site: Site | None = None
) -> FrameT:
    """The per-query frame without per-system metrics' hidden values, warning (at ``site``)."""
    hidden = [label for label, metric in resolved if metric.level == "system"]
    if not hidden:
        return per_query
    warn_at(
        f"{', '.join(map(repr, hidden))} "
        + ("is a per-system metric" if len(hidden) == 1 else "are per-system metrics")
        + ": no value per query, so per_query=True leaves "
        + ("it" if len(hidden) == 1 else "them")
        + " out; evaluate(..., per_query=False) gives one value per system (by group)",
        PerSystemMetricWarning,
        site,
    )
    return per_query.drop(hidden)
