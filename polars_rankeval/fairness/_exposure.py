"""Group exposure, the primitive under every fairness measure, as a table of answers.

:func:`group_exposure` tells, per group, how much attention a system's rankings give it, what
share of all attention that is, the target share, and whether the group is over- or
under-exposed beyond the noise of the queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist
from typing import TypeVar

import polars as pl

from polars_rankeval._engine.columns import by_list
from polars_rankeval._engine.exact_sum import exact_sum
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.fairness._attention import with_attention
from polars_rankeval.fairness._frame import (
    GROUP,
    JUDGED,
    RANK,
    RELEVANT,
    SAMPLE,
    SHARE,
    WEIGHT,
)
from polars_rankeval.fairness._prepare import fair_input

FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)

_ATTENTION = "__rke_fair_attention"
_EXPOSURE = "__rke_fair_exposure"


def group_exposure(
    data: FrameT,
    *,
    groups: object,
    group_target: object = None,
    attention: object = "trec",
    p: float | None = None,
    k: int | None = None,
    sample: str | None = None,
    by: str | Sequence[str] | None = None,
    dimension: str | None = None,
    per_query: bool = False,
    relevant_only: bool = False,
    relevance_level: int = 1,
    alpha: float = 0.05,
    query: str = "query",
    item: str = "item",
    score: str = "score",
    relevance: str = "relevance",
) -> FrameT:
    """Each group's exposure in the rankings: its attention, its share, its target, a verdict.

    Every ranked row gives its item's groups the attention of its rank (``attention``), times
    the item's weight in each group; a list's exposure of a group is the sum over its first
    ``k`` rows (all rows when ``k`` is None), and with several sampled rankings per query
    (``sample``) the mean over the query's samples (expected exposure). Items that are not in
    ``groups`` are shown as the group null, so no attention goes missing silently.

    Parameters
    ----------
    data
        The log: one row per (query, item) (per (query, sample, item) with ``sample``), with
        ``score`` (a null score is not ranked) and, for ``relevant_only``, ``relevance``.
    groups, group_target
        As :func:`~polars_rankeval.evaluate`'s: each item's groups (one or several
        dimensions; several are intersected unless ``dimension`` names some) and the target
        shares (default ``"population"``: each group's share of the items).
    attention, p
        ``"trec"`` (``1/log2(max(rank, 2))``, default), ``"log2"`` (``1/log2(rank + 1)``),
        ``"geometric"`` (``p·(1−p)^(rank−1)``), a mapping ``{rank: attention}`` or a Polars
        expression over ``pl.col("rank")``.
    k
        Only the first ``k`` ranks receive attention.
    sample
        Column of the sampled ranking's id, for a stochastic ranker's several rankings per
        query (exposure is averaged over them).
    by
        Columns that split the log into systems (one table per system).
    dimension
        The dimension(s) to read (``"region"``, ``"region+gender"``); default all, intersected.
    per_query
        One row per (query, group) instead of the summary over queries.
    relevant_only
        Count only relevant rows' attention (TREC Fair 2022's Task 2 rule).
    relevance_level
        Labels ``>= relevance_level`` are relevant.
    alpha
        The intervals' level: ``1 − alpha`` normal intervals over queries.
    query, item, score, relevance
        Column names.

    Returns
    -------
    DataFrame or LazyFrame (as ``data``)
        Summary: the ``by`` columns, ``group``, ``n_queries``, ``exposure`` (mean exposure per
        query), ``share`` (mean per-query share of the attention), ``ci_low``/``ci_high``
        (the share's interval), ``target`` (mean target share), ``ratio`` (share / target),
        ``difference`` (share − target) and ``verdict``: ``"over"`` / ``"under"`` when the
        interval lies above / below the target, ``"within"`` otherwise (null, as the
        interval, over a single query). ``per_query``: the
        ``by`` columns, the query, ``group``, ``exposure``, ``share``, ``target``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame({"query": [1, 1, 1], "item": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    >>> groups = pl.DataFrame({"item": ["a", "b", "c"], "provider": ["big", "big", "small"]})
    >>> table = rke.group_exposure(log, groups=groups, group_target="uniform")
    >>> # ranks 1 and 2 both get 1/log2(2) = 1 (TREC's discount), rank 3 gets 1/log2(3)
    >>> table.select("group", "exposure", "share", "target").with_columns(
    ...     pl.col("exposure", "share").round(4)
    ... ).rows()
    [('big', 2.0, 0.7602, 0.5), ('small', 0.6309, 0.2398, 0.5)]
    """
    if not isinstance(per_query, bool) or not isinstance(relevant_only, bool):
        msg = "options per_query= and relevant_only= must be True or False"
        raise InvalidOptionError(msg)
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        msg = f"option k= must be None or an int >= 1, got {k!r}"
        raise InvalidOptionError(msg)
    if isinstance(alpha, bool) or not isinstance(alpha, float) or not 0 < alpha < 1:
        msg = f"option alpha= must be a float between 0 and 1, got {alpha!r}"
        raise InvalidOptionError(msg)
    keys: list[str] = [*by_list(by), query]
    if "rank" in keys and isinstance(attention, pl.Expr):
        msg = "a by= or query= column named 'rank' hides the rank an attention= expression reads"
        raise InvalidOptionError(msg)
    eager = not isinstance(data, pl.LazyFrame)  # pandas/Arrow in: a DataFrame out
    fair = fair_input(
        data,
        groups,
        group_target=group_target,
        sample=sample,
        by=by_list(by),
        dimension=dimension,
        relevance_level=relevance_level,
        query=query,
        item=item,
        score=score,
        relevance=relevance,
        metric="group_exposure",
    )
    rows = fair.rows
    if k is not None:
        rows = rows.filter(pl.col(RANK) <= k)
    if relevant_only:
        rows = rows.filter(pl.col(RELEVANT))
    rows = with_attention(rows, attention, p, _ATTENTION)
    term = pl.col(_ATTENTION) * pl.col(WEIGHT).fill_null(1.0)
    samples = fair.rows.group_by(keys).agg(pl.col(SAMPLE).n_unique().alias("__samples"))
    per_list = rows.group_by([*keys, GROUP]).agg(exact_sum(term).alias(_EXPOSURE))
    # every group of the universe (and of the target) for every list, 0 where not shown
    lists = fair.rows.select(keys).unique()
    # the group null (items not in groups=) too, in every list, dropped below if never shown
    unknown = lists.with_columns(pl.lit(None, pl.String).alias(GROUP), pl.lit(0.0).alias(SHARE))
    targets = pl.concat([fair.target, unknown], how="vertical")
    grid = targets.join(
        per_list, on=[*keys, GROUP], how="full", coalesce=True, nulls_equal=True
    ).join(lists, on=keys, how="semi")
    table = (
        grid.join(samples, on=keys, how="left")
        .with_columns(
            (pl.col(_EXPOSURE).fill_null(0.0) / pl.col("__samples")).alias("exposure"),
            pl.col(SHARE).fill_null(0.0).alias("target"),
        )
        .with_columns(
            (pl.col("exposure") / exact_sum(pl.col("exposure")).over(keys)).alias("share")
        )
        .select(*keys, pl.col(GROUP).alias("group"), "exposure", "share", "target")
        .filter(pl.col("group").is_not_null() | (pl.col("exposure").max().over("group") > 0))
    )
    if per_query:
        out = table.sort([*keys, "group"], nulls_last=True)
        return out.collect() if eager else out  # type: ignore[return-value]
    z = NormalDist().inv_cdf(1 - alpha / 2)
    systems: list[str] = by_list(by)
    n_queries = pl.len().alias("n_queries")
    summary = table.group_by([*systems, "group"]).agg(
        n_queries,
        (exact_sum(pl.col("exposure")) / pl.len()).alias("exposure"),
        (exact_sum(pl.col("share").fill_nan(None)) / pl.col("share").is_not_nan().sum()).alias(
            "share"
        ),
        pl.col("share").fill_nan(None).std().alias("__sd"),
        (exact_sum(pl.col("target")) / pl.len()).alias("target"),
    )
    # one query gives no interval (and no verdict): its share is not a mean of anything
    half = z * pl.col("__sd") / pl.col("n_queries").cast(pl.Float64).sqrt()
    out = (
        summary.with_columns(
            (pl.col("share") - half).alias("ci_low"), (pl.col("share") + half).alias("ci_high")
        )
        .with_columns(
            pl.when(pl.col("target") > 0).then(pl.col("share") / pl.col("target")).alias("ratio"),
            (pl.col("share") - pl.col("target")).alias("difference"),
            pl.when(pl.col("ci_low").is_null())
            .then(pl.lit(None, pl.String))
            .when(pl.col("ci_low") > pl.col("target"))
            .then(pl.lit("over"))
            .when(pl.col("ci_high") < pl.col("target"))
            .then(pl.lit("under"))
            .otherwise(pl.lit("within"))
            .alias("verdict"),
        )
        .select(
            *systems,
            "group",
            "n_queries",
            "exposure",
            "share",
            "ci_low",
            "ci_high",
            "target",
            "ratio",
            "difference",
            "verdict",
        )
        .sort([*systems, "group"], nulls_last=True)
    )
    return out.collect() if eager else out  # type: ignore[return-value]


def expected_exposure(
    data: FrameT,
    *,
    groups: object,
    group_target: object = None,
    sample: str | None = "sample",
    target_len: int = 20,
    relevant_only: bool = True,
    by: str | Sequence[str] | None = None,
    dimension: str | None = None,
    per_query: bool = False,
    relevance_level: int = 1,
    query: str = "query",
    item: str = "item",
    score: str = "score",
    relevance: str = "relevance",
) -> FrameT:
    """TREC Fair 2022 Task 2's expected exposure of a stochastic ranker's sampled rankings.

    The columns are the metrics ``ee_l`` (loss, lower is better), ``ee_d`` (disparity, lower)
    and ``ee_r`` (relevance, higher), as :func:`~polars_rankeval.evaluate` names and declares
    them, so :func:`~polars_rankeval.compare_per_query` reads their directions. Each query's
    group exposure is averaged over its sampled rankings (``sample``: one ranking per value,
    each ordered by ``score``); with ``sample=None`` each query has one ranking and the values
    equal ``evaluate``'s. The queries are ``evaluate``'s: with ``relevant_only`` (a metric that
    reads labels) those with a judged item, retrieved or not.

    Parameters
    ----------
    data
        The log: one row per (query, sample, item).
    groups, group_target
        As :func:`~polars_rankeval.evaluate`'s (TREC Fair gives a target per query: a table
        with the query column).
    sample
        The column of the sampled ranking's id.
    target_len
        The ranking length whose total exposure scales the target (the track's 20).
    relevant_only
        Count only relevant items' exposure (the track's 2022 rule; 2021 counted every item).
    by, dimension, per_query, relevance_level, query, item, score, relevance
        As :func:`group_exposure`'s.

    Returns
    -------
    DataFrame or LazyFrame (as ``data``)
        The ``by`` columns (and the query with ``per_query``), ``ee_l``, ``ee_d``, ``ee_r``:
        means over queries, or per query.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": [1] * 4,
    ...         "sample": [0, 0, 1, 1],
    ...         "item": ["a", "b", "b", "a"],
    ...         "score": [2.0, 1.0, 2.0, 1.0],
    ...         "relevance": [1, 1, 1, 1],
    ...     }
    ... )
    >>> groups = pl.DataFrame({"item": ["a", "b"], "provider": ["big", "small"]})
    >>> # both items get rank 1 in one sample and rank 2 in the other: exposure 1 each
    >>> rke.expected_exposure(log, groups=groups, group_target="uniform", target_len=2).rows()
    [(0.0, 2.0, 2.0)]
    """
    from polars_rankeval.fairness._trec import expected_exposure_values

    if not isinstance(per_query, bool):
        msg = f"option per_query= must be True or False, got {per_query!r}"
        raise InvalidOptionError(msg)
    systems: list[str] = by_list(by)
    eager = not isinstance(data, pl.LazyFrame)  # pandas/Arrow in: a DataFrame out
    fair = fair_input(
        data,
        groups,
        group_target=group_target,
        sample=sample,
        by=systems,
        dimension=dimension,
        relevance_level=relevance_level,
        query=query,
        item=item,
        score=score,
        relevance=relevance,
        metric="expected_exposure",
    )
    values = expected_exposure_values(fair, target_len=target_len, relevant_only=relevant_only)
    if relevant_only:  # as evaluate: a metric that reads labels skips unjudged queries
        judged = fair.rows.filter(pl.col(JUDGED)).select(fair.keys).unique()
        values = values.join(judged, on=fair.keys, how="semi")
    names = ["ee_l", "ee_d", "ee_r"]
    if per_query:
        out = values.select(*fair.keys, *names).sort(fair.keys)
    else:
        means = [(exact_sum(pl.col(name)) / pl.col(name).count()).alias(name) for name in names]
        out = values.group_by(systems).agg(means).sort(systems) if systems else values.select(means)
    return out.collect() if eager else out  # type: ignore[return-value]
