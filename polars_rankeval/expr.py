"""Aggregation expressions for ``group_by(query).agg(...)``: each group is one ranked list."""

from __future__ import annotations

import polars as pl

from polars_rankeval._columns import check_relevance_level
from polars_rankeval.context import group_context
from polars_rankeval.conventions import NegativeLabels
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.metrics._base import Metric
from polars_rankeval.registry import parse_metric
from polars_rankeval.validation import group_validity

IntoExpr = str | pl.Expr


def _as_expr(value: IntoExpr, option: str) -> pl.Expr:
    if isinstance(value, str):
        return pl.col(value)
    if isinstance(value, pl.Expr):
        return value
    msg = f"option {option}= must be a column name or a polars expression, got {value!r}"
    raise InvalidOptionError(msg)


def metric_expr(
    metric: str | Metric,
    *,
    relevance: IntoExpr = "relevance",
    score: IntoExpr = "score",
    item: IntoExpr = "item",
    relevance_level: int = 1,
    negative_labels: NegativeLabels = "unjudged",
) -> pl.Expr:
    """One metric as an aggregation over a group that holds one query's rows.

    Rows with a null score are judged but not retrieved; null labels are unjudged. A group
    with no label at all, or with nothing retrieved, gives null (trec_eval skips such a
    query). The ranking rule is the same as :func:`~polars_rankeval.evaluate`.

    Inside ``group_by().agg()`` Polars' streaming engine runs this in memory (the ranking needs
    the whole group); use :func:`~polars_rankeval.evaluate` for streaming frame-level work.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": [1, 1, 1, 2, 2],
    ...         "item": ["a", "b", "c", "a", "d"],
    ...         "score": [0.9, 0.8, 0.1, 0.5, 0.7],
    ...         "relevance": [0, 1, 0, 1, 0],
    ...     }
    ... )
    >>> log.group_by("query").agg(rke.metric_expr("mrr")).sort("query")
    shape: (2, 2)
    ┌───────┬─────┐
    │ query ┆ mrr │
    │ ---   ┆ --- │
    │ i64   ┆ f64 │
    ╞═══════╪═════╡
    │ 1     ┆ 0.5 │
    │ 2     ┆ 0.5 │
    └───────┴─────┘
    """
    resolved = metric if isinstance(metric, Metric) else parse_metric(metric)
    if resolved.ties == "expected":
        msg = (
            f"ties='expected' ({resolved.name}) needs the tie groups of the whole list, which "
            "only the frame-level path builds: use evaluate(..., ties='expected')"
        )
        raise InvalidOptionError(msg)
    ctx = group_context(
        _as_expr(relevance, "relevance"),
        _as_expr(score, "score"),
        _as_expr(item, "item"),
        check_relevance_level(relevance_level),
        negative_labels,
    )
    ctx = ctx.with_extra(resolved.rows(ctx))
    ctx = ctx.with_extra(resolved.later_rows(ctx))
    partials = resolved.partials(ctx)
    value = resolved.value(lambda key: partials[key])
    evaluated = (ctx.has_label.sum() > 0) & (ctx.retrieved.sum() > 0)
    valid = group_validity(
        _as_expr(relevance, "relevance"), _as_expr(score, "score"), _as_expr(item, "item")
    )
    return pl.when(evaluated & valid).then(value).alias(resolved.name)
