"""Curves over a sweep: a metric against its cutoff k, interpolated precision vs recall.

:func:`metric_at_k` and :func:`precision_recall` evaluate the log themselves (one
``evaluate`` pass each) and draw one line per system.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from polars_rankeval._engine.evaluate import evaluate
from polars_rankeval._engine.vocabulary import renamed
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.metrics._base import Metric
from polars_rankeval.metrics.interpolated import iprec_at_recall
from polars_rankeval.plot._inputs import _keys, _with_run
from polars_rankeval.plot._style import (
    HEIGHT,
    WIDTH,
    _axis,
    _color,
    _offline,
    _require_altair,
    _title,
)

if TYPE_CHECKING:
    import altair as alt  # type: ignore[import-not-found,unused-ignore]

#: trec_eval's default recall levels of ``iprec_at_recall``. ``i / 10`` is the double nearest
#: to each decimal, the same value as the C literals 0.1, 0.2 ... in ``m_iprec_at_recall.c``.
RECALL_LEVELS: tuple[float, ...] = tuple(i / 10 for i in range(11))


# ---------------------------------------------------------------------------------------------
# metric@k
# ---------------------------------------------------------------------------------------------


def _sweep(metric: str, cutoffs: Sequence[int]) -> str:
    """``"ndcg(gain=exp)"`` and ``[1, 5]`` → ``"ndcg@1,5(gain=exp)"`` (one evaluate pass)."""
    if not isinstance(metric, str) or "@" in metric:
        msg = (
            f"metric= must be a metric name without a cutoff, e.g. 'ndcg' or 'ndcg(gain=exp)', "
            f"and the cutoffs go in k=; got {metric!r}"
        )
        raise InvalidOptionError(msg)
    if isinstance(cutoffs, (str, int)) or not cutoffs:
        msg = f"k= must be a non-empty list of cutoffs such as [1, 5, 10], got {cutoffs!r}"
        raise InvalidOptionError(msg)
    for k in cutoffs:
        if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
            msg = f"k= must hold positive ints, got {k!r}"
            raise InvalidOptionError(msg)
    name, paren, options = metric.partition("(")
    return f"{name}@{','.join(str(k) for k in cutoffs)}{paren}{options}"


@renamed(log="data", ks="k")
def metric_at_k_data(
    data: Any,
    metric: str,
    k: Sequence[int],
    *,
    by: str | Sequence[str] | None = None,
    **options: Any,
) -> pl.DataFrame:
    """A metric at several cutoffs, per system: the data of :func:`metric_at_k`.

    The cutoffs are one sweep (``"ndcg@1,5,10"``), so every cutoff shares one ranking pass.

    Parameters
    ----------
    data
        The long table (DataFrame, LazyFrame, pandas or Arrow), as for
        :func:`~polars_rankeval.evaluate`.
    metric
        A metric without a cutoff, e.g. ``"ndcg"``, ``"p"`` or ``"ndcg(gain=exp)"``.
    k
        The cutoffs, e.g. ``[1, 3, 5, 10]``.
    by
        Columns whose values are the systems (or segments), one curve each.
    **options
        Other keywords of :func:`~polars_rankeval.evaluate` (``relevance_level``, ``ties``,
        ``convention``, column names ...).

    Returns
    -------
    DataFrame
        One row per system and cutoff: the ``by`` columns, ``metric`` (as given), ``k`` and
        ``value`` (the mean over the evaluated queries, as ``evaluate`` gives it).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "system": ["a", "a", "b", "b"],
    ...         "query": "q1",
    ...         "item": ["x", "y", "x", "y"],
    ...         "score": [2.0, 1.0, 1.0, 2.0],
    ...         "relevance": [0, 1, 0, 1],
    ...     }
    ... )
    >>> rke.plot.metric_at_k_data(log, "p", [1, 2], by="system")
    shape: (4, 4)
    ┌────────┬────────┬─────┬───────┐
    │ system ┆ metric ┆ k   ┆ value │
    │ ---    ┆ ---    ┆ --- ┆ ---   │
    │ str    ┆ str    ┆ i64 ┆ f64   │
    ╞════════╪════════╪═════╪═══════╡
    │ a      ┆ p      ┆ 1   ┆ 0.0   │
    │ a      ┆ p      ┆ 2   ┆ 0.5   │
    │ b      ┆ p      ┆ 1   ┆ 1.0   │
    │ b      ┆ p      ┆ 2   ┆ 0.5   │
    └────────┴────────┴─────┴───────┘
    """
    cutoffs = k
    sweep = _sweep(metric, cutoffs)
    keys = _keys(by)
    means: pl.DataFrame | pl.LazyFrame = evaluate(data, [sweep], by=by, per_query=False, **options)
    if isinstance(means, pl.LazyFrame):
        means = means.collect()
    # The sweep's columns come in the order of the cutoffs, after the by columns.
    value_columns = [name for name in means.columns if name not in keys]
    parts = [
        means.select(
            *keys,
            pl.lit(metric).alias("metric"),
            pl.lit(k, dtype=pl.Int64).alias("k"),
            pl.col(column).cast(pl.Float64).alias("value"),
        )
        for k, column in zip(cutoffs, value_columns, strict=True)
    ]
    return pl.concat(parts).sort([*keys, "k"])


@renamed(log="data", ks="k")
def metric_at_k(
    data: Any,
    metric: str,
    k: Sequence[int],
    *,
    by: str | Sequence[str] | None = None,
    **options: Any,
) -> alt.Chart:
    """A metric against its cutoff ``k``, one curve per system (an Altair chart).

    Parameters are those of :func:`metric_at_k_data`, which returns the frame drawn here.
    The k axis is logarithmic when the cutoffs span more than a factor of 10.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "system": ["a", "a", "b", "b"],
    ...         "query": "q1",
    ...         "item": ["x", "y", "x", "y"],
    ...         "score": [2.0, 1.0, 1.0, 2.0],
    ...         "relevance": [0, 1, 0, 1],
    ...     }
    ... )
    >>> chart = rke.plot.metric_at_k(log, "ndcg", [1, 2], by="system")  # doctest: +SKIP
    >>> chart.save("ndcg_at_k.png")  # doctest: +SKIP
    """
    _require_altair("metric_at_k")
    import altair as alt  # type: ignore[import-not-found,unused-ignore]

    keys = _keys(by)
    cutoffs = k
    rows, color = _with_run(metric_at_k_data(data, metric, cutoffs, by=by, **options), keys)
    wide = max(cutoffs) > 10 * min(cutoffs)
    scale = alt.Scale(type="log") if wide else alt.Scale(zero=False)
    x = alt.X("k:Q", scale=scale, axis=_axis(alt, "cutoff k", values=sorted(cutoffs)))
    y = alt.Y("value:Q", axis=_axis(alt, f"{metric}@k (mean)"))
    tooltip = [*(alt.Tooltip(key) for key in keys), "k:Q", alt.Tooltip("value:Q", format=".4f")]
    # Altair's mark_* methods are untyped (Any), hence the annotated name.
    chart: alt.Chart = (
        alt.Chart(rows)
        .mark_line(point=alt.OverlayMarkDef(size=50), strokeWidth=2)
        .encode(x=x, y=y, tooltip=tooltip, **_color(alt, color, keys, rows))
        .properties(
            width=WIDTH,
            height=HEIGHT,
            title=_title(alt, f"{metric} at each cutoff", "mean over the evaluated queries"),
        )
    )
    return _offline(chart)


# ---------------------------------------------------------------------------------------------
# Interpolated precision at recall levels (trec_eval iprec_at_recall)
# ---------------------------------------------------------------------------------------------


def _iprec_metric(level: float, name: str) -> Metric:
    """trec_eval's ``iprec_at_recall`` at one recall level (see ``metrics/interpolated.py``)."""
    return iprec_at_recall(level=level, name=name)


def _recall_levels(levels: object) -> list[float]:
    if isinstance(levels, (str, bytes)) or not isinstance(levels, Sequence) or not levels:
        msg = f"recall_levels= must be a non-empty list of numbers in [0, 1], got {levels!r}"
        raise InvalidOptionError(msg)
    checked = []
    for level in levels:
        if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 <= level <= 1:
            msg = f"recall_levels= must hold numbers in [0, 1], got {level!r}"
            raise InvalidOptionError(msg)
        checked.append(float(level))
    if len(set(checked)) != len(checked):
        msg = f"recall_levels= repeats a level: {list(levels)}"
        raise InvalidOptionError(msg)
    return sorted(checked)


@renamed(log="data")
def precision_recall_data(
    data: Any,
    *,
    by: str | Sequence[str] | None = None,
    per_query: bool = False,
    recall_levels: Sequence[float] = RECALL_LEVELS,
    **options: Any,
) -> pl.DataFrame:
    """trec_eval's interpolated precision at recall levels (``iprec_at_recall``).

    For each evaluated query, the interpolated precision at recall level ``r`` is the largest
    precision ``hits@i / i`` over the ranks ``i`` whose recall reaches ``r``, 0 when no rank
    does. As in trec_eval 10, "reaches ``r``" means at least ``lround(r * R)`` relevant items
    retrieved at or above rank ``i`` (``R`` counts the relevant judged items, retrieved or
    not), so a level of 0 takes the largest precision at any rank. The summary is the mean over
    the evaluated queries. Everything else is ``evaluate``'s: the ranking rule (score
    descending, then the item's string form descending), the query selection (queries with a
    judgment and, without ``missing_queries="zero"``, a retrieved row), ``relevance_level``
    (default 1), the checks and the bounded passes over a LazyFrame.

    Parameters
    ----------
    data
        The long table, as for :func:`~polars_rankeval.evaluate`.
    by
        Columns whose values are the systems (or segments).
    per_query
        One row per query and level instead of the means.
    recall_levels
        The levels, each in ``[0, 1]`` (trec_eval ``-m iprec_at_recall.0,.25,...``); default
        ``0.0, 0.1, ..., 1.0``.
    **options
        Other keywords of :func:`~polars_rankeval.evaluate`: ``relevance_level``,
        ``missing_queries``, ``duplicates``, column names ... (``ties="expected"`` is refused:
        there is no closed form).

    Returns
    -------
    DataFrame
        The ``by`` columns (and the query column with ``per_query=True``), ``recall`` (the
        level) and ``precision``, sorted.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": "q1",
    ...         "item": ["a", "b", "c", "d", "e", "f"],
    ...         "score": [6.0, 5.0, 4.0, 3.0, 2.0, None],
    ...         "relevance": [1, 0, 0, 1, 1, 1],
    ...     }
    ... )
    >>> # precision at the relevant ranks: a 1/1, d 2/4, e 3/5. f is relevant but not
    >>> # retrieved, so R = 4: recall 0.5 takes max(2/4, 3/5), recall 1 is never reached.
    >>> rke.plot.precision_recall_data(log, recall_levels=[0.0, 0.25, 0.5, 0.75, 1.0])
    shape: (5, 2)
    ┌────────┬───────────┐
    │ recall ┆ precision │
    │ ---    ┆ ---       │
    │ f64    ┆ f64       │
    ╞════════╪═══════════╡
    │ 0.0    ┆ 1.0       │
    │ 0.25   ┆ 1.0       │
    │ 0.5    ┆ 0.6       │
    │ 0.75   ┆ 0.6       │
    │ 1.0    ┆ 0.0       │
    └────────┴───────────┘
    """
    if not isinstance(per_query, bool):
        msg = f"option per_query= must be True or False, got {per_query!r}"
        raise InvalidOptionError(msg)
    levels = _recall_levels(recall_levels)
    names = {f"iprec_at_recall_{level!r}": level for level in levels}
    metrics = [_iprec_metric(level, name) for name, level in names.items()]
    result: pl.DataFrame | pl.LazyFrame = evaluate(
        data, metrics, by=by, per_query=per_query, **options
    )
    if isinstance(result, pl.LazyFrame):
        result = result.collect()
    index = [name for name in result.columns if name not in names]
    long = result.unpivot(
        on=list(names), index=index, variable_name="__name", value_name="precision"
    )
    return long.select(
        *index,
        pl.col("__name").replace_strict(names, return_dtype=pl.Float64).alias("recall"),
        pl.col("precision").cast(pl.Float64),
    ).sort([*index, "recall"])


@renamed(log="data")
def precision_recall(
    data: Any,
    *,
    by: str | Sequence[str] | None = None,
    recall_levels: Sequence[float] = RECALL_LEVELS,
    **options: Any,
) -> alt.Chart:
    """The interpolated precision–recall curve, one per system (Altair).

    trec_eval's ``iprec_at_recall`` averaged over the evaluated queries;
    :func:`precision_recall_data` (same parameters) returns the frame drawn here and
    documents the definition.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "system": ["a", "a", "b", "b"],
    ...         "query": "q1",
    ...         "item": ["x", "y", "x", "y"],
    ...         "score": [2.0, 1.0, 1.0, 2.0],
    ...         "relevance": [0, 1, 0, 1],
    ...     }
    ... )
    >>> chart = rke.plot.precision_recall(log, by="system")  # doctest: +SKIP
    """
    _require_altair("precision_recall")
    import altair as alt  # type: ignore[import-not-found,unused-ignore]

    keys = _keys(by)
    rows = precision_recall_data(data, by=by, recall_levels=recall_levels, **options)
    rows, color = _with_run(rows, keys)
    unit = alt.Scale(domain=[0, 1])
    tooltip = [
        *(alt.Tooltip(key) for key in keys),
        alt.Tooltip("recall:Q", format=".2f"),
        alt.Tooltip("precision:Q", format=".4f"),
    ]
    # Altair's mark_* methods are untyped (Any), hence the annotated name.
    chart: alt.Chart = (
        alt.Chart(rows)
        .mark_line(point=alt.OverlayMarkDef(size=50), strokeWidth=2)
        .encode(
            x=alt.X("recall:Q", scale=unit, axis=_axis(alt, "recall")),
            y=alt.Y("precision:Q", scale=unit, axis=_axis(alt, "interpolated precision")),
            tooltip=tooltip,
            **_color(alt, color, keys, rows),
        )
        .properties(
            width=WIDTH,
            height=HEIGHT,
            title=_title(
                alt,
                "Interpolated precision at recall levels",
                "trec_eval iprec_at_recall, mean over the evaluated queries",
            ),
        )
    )
    return _offline(chart)
