"""Which groups a system over- or under-exposes: share of attention against the target.

:func:`group_exposure` draws :func:`polars_rankeval.group_exposure`'s summary: per group, the
share of attention with its interval over queries as a point and a bar, the target as a tick,
one row of panels per system.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from polars_rankeval.plot._inputs import _check_columns, _frame, _keys
from polars_rankeval.plot._style import WIDTH, _axis, _offline, _require_altair, _title

if TYPE_CHECKING:
    import altair as alt  # type: ignore[import-not-found,unused-ignore]

_VERDICT_COLOURS = {"over": "#e15759", "under": "#4e79a7", "within": "#9d9d9d"}


def group_exposure_data(data: Any, *, by: str | Sequence[str] | None = None) -> pl.DataFrame:
    """The rows :func:`group_exposure` draws: one per (system, group), null group named.

    Parameters
    ----------
    data
        The summary of :func:`polars_rankeval.group_exposure` (not ``per_query``).
    by
        The column(s) naming the systems, as given to ``group_exposure``; None for one.

    Returns
    -------
    DataFrame
        The ``by`` columns, ``group`` (items without a group shown as ``"(no group)"``),
        ``share``, ``ci_low``, ``ci_high``, ``target``, ``verdict``, ``n_queries``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame({"query": [1, 1], "item": ["a", "b"], "score": [2.0, 1.0]})
    >>> groups = pl.DataFrame({"item": ["a", "b"], "size": ["big", "small"]})
    >>> table = rke.group_exposure(log, groups=groups, group_target="uniform")
    >>> rke.plot.group_exposure_data(table).select("group", "share", "target").rows()
    [('big', 0.5, 0.5), ('small', 0.5, 0.5)]
    """
    frame = _frame(data, "data")
    keys = _keys(by)
    wanted = [("data", name) for name in ("group", "share", "target")]
    _check_columns(frame, [*wanted, *(("by", key) for key in keys)], "group_exposure's summary")
    columns = ["share", "ci_low", "ci_high", "target", "verdict", "n_queries"]
    present = [name for name in columns if name in frame.columns]
    return frame.select(
        *keys,
        pl.col("group").cast(pl.String).fill_null("(no group)").alias("group"),
        *present,
    )


def group_exposure(data: Any, *, by: str | Sequence[str] | None = None) -> alt.Chart:
    """Each group's share of attention (with its interval) against its target (Altair).

    A dot per group at its mean share of the attention, a bar for its interval over queries,
    a black tick at its target share; red when the interval lies above the target
    (over-exposed), blue when below (under-exposed), grey otherwise. One panel per system.
    :func:`group_exposure_data` returns the frame drawn here.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame({"query": [1, 1], "item": ["a", "b"], "score": [2.0, 1.0]})
    >>> groups = pl.DataFrame({"item": ["a", "b"], "size": ["big", "small"]})
    >>> table = rke.group_exposure(log, groups=groups)
    >>> chart = rke.plot.group_exposure(table)  # doctest: +SKIP
    """
    _require_altair("group_exposure")
    import altair as alt  # type: ignore[import-not-found,unused-ignore]

    keys = _keys(by)
    rows = group_exposure_data(data, by=by)
    panel = keys[0] if len(keys) == 1 else "system"
    if len(keys) > 1:
        rows = rows.with_columns(pl.concat_str(keys, separator=" / ").alias(panel))
    order = sorted(rows["group"].unique().to_list())
    y = alt.Y("group:N", sort=order, axis=_axis(alt, None))
    colour = alt.Color(
        "verdict:N",
        scale=alt.Scale(domain=list(_VERDICT_COLOURS), range=list(_VERDICT_COLOURS.values())),
        legend=alt.Legend(title="against the target"),
    )
    tooltip: list[Any] = [
        *(alt.Tooltip(key) for key in keys),
        "group:N",
        alt.Tooltip("share:Q", format=".1%"),
        alt.Tooltip("ci_low:Q", format=".1%"),
        alt.Tooltip("ci_high:Q", format=".1%"),
        alt.Tooltip("target:Q", format=".1%"),
        "verdict:N",
        "n_queries:Q",
    ]
    x_axis = _axis(alt, "share of attention", format="%")
    base = alt.Chart(rows).encode(y=y, tooltip=tooltip)
    interval = base.mark_rule(strokeWidth=3).encode(
        x=alt.X("ci_low:Q", axis=x_axis), x2="ci_high:Q", color=colour
    )
    point = base.mark_point(filled=True, size=70).encode(x="share:Q", color=colour)
    target = base.mark_tick(color="black", thickness=2).encode(x="target:Q")
    layered = alt.layer(interval, point, target).properties(width=WIDTH, height=alt.Step(22))
    title = _title(
        alt,
        "Share of attention per group",
        "dot: mean share over queries, bar: its interval, tick: the target",
    )
    chart: alt.Chart = (
        layered.facet(row=alt.Row(f"{panel}:N", title=None)).properties(title=title)
        if keys
        else layered.properties(title=title)
    )
    return _offline(chart)
