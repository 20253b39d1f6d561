"""Histograms of per-query values, per system: overlaid, or small multiples past a few.

:func:`distribution` bins a per-query table's metric column on bins shared by every
system and gives each system's summary (mean, or geometric mean for gm metrics).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from polars_rankeval._engine.meaning import meanings, summarise
from polars_rankeval._engine.vocabulary import renamed
from polars_rankeval.comparison._pairing import system_names
from polars_rankeval.errors import ColumnValueError, InvalidOptionError
from polars_rankeval.plot._inputs import _check_columns, _frame, _keys, _with_run
from polars_rankeval.plot._style import (
    _TABLEAU20,
    HEIGHT,
    WIDTH,
    _axis,
    _color,
    _number,
    _offline,
    _require_altair,
    _title,
)

if TYPE_CHECKING:
    import altair as alt  # type: ignore[import-not-found,unused-ignore]

#: More systems than this get small multiples in distribution(): overlaid translucent
#: histograms of more than a few systems blur into one.
OVERLAY_MAX = 4


# ---------------------------------------------------------------------------------------------
# Distribution of per-query values
# ---------------------------------------------------------------------------------------------


@renamed(per_query="data")
def distribution_data(
    data: Any,
    metric: str,
    *,
    by: str | Sequence[str] | None = "system",
    bins: int = 20,
) -> pl.DataFrame:
    """Histogram of the per-query values of a metric, per system (:func:`distribution`).

    All systems share the bins: ``bins`` equal bins over ``[0, 1]`` when every value lies
    there (most metrics), else over ``[min, max]`` of the values. A bin holds values from its
    ``bin_start`` up to (not including) its ``bin_end``; the last bin includes its end. Null
    and NaN values (undefined, e.g. ``frp`` without a relevant item) are left out.

    Parameters
    ----------
    data
        One row per ``(by, query)`` and one column per metric, e.g.
        ``rke.evaluate(log, ["ndcg@10"], by="system", per_query=True)``.
    metric
        The metric column.
    by
        Column(s) whose values name the systems; None for one distribution.
    bins
        Number of bins.

    Returns
    -------
    DataFrame
        One row per system and bin (empty bins included): the ``by`` columns, ``metric``,
        ``bin_start``, ``bin_end``, ``n_queries`` and ``share`` (``n_queries`` over the
        system's queries with a value, so systems of different sizes compare).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> per_query = pl.DataFrame(
    ...     {
    ...         "system": ["a", "a", "a", "b"],
    ...         "query": ["q1", "q2", "q3", "q1"],
    ...         "map": [0.1, 0.2, 1.0, 0.7],
    ...     }
    ... )
    >>> rke.plot.distribution_data(per_query, "map", bins=2)
    shape: (4, 6)
    ┌────────┬────────┬───────────┬─────────┬───────────┬──────────┐
    │ system ┆ metric ┆ bin_start ┆ bin_end ┆ n_queries ┆ share    │
    │ ---    ┆ ---    ┆ ---       ┆ ---     ┆ ---       ┆ ---      │
    │ str    ┆ str    ┆ f64       ┆ f64     ┆ i64       ┆ f64      │
    ╞════════╪════════╪═══════════╪═════════╪═══════════╪══════════╡
    │ a      ┆ map    ┆ 0.0       ┆ 0.5     ┆ 2         ┆ 0.666667 │
    │ a      ┆ map    ┆ 0.5       ┆ 1.0     ┆ 1         ┆ 0.333333 │
    │ b      ┆ map    ┆ 0.0       ┆ 0.5     ┆ 0         ┆ 0.0      │
    │ b      ┆ map    ┆ 0.5       ┆ 1.0     ┆ 1         ┆ 1.0      │
    └────────┴────────┴───────────┴─────────┴───────────┴──────────┘
    """
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
        msg = f"option bins= must be a positive int, got {bins!r}"
        raise InvalidOptionError(msg)
    keys = _keys(by)
    frame = _frame(data, "data")
    _check_columns(frame, [*(("by", key) for key in keys), ("metric", metric)], "per-query table")
    if not frame.schema[metric].is_numeric():
        msg = f"metric column {metric!r} must be numeric, got {frame.schema[metric]}"
        raise ColumnValueError(msg)
    values = frame.select(*keys, pl.col(metric).cast(pl.Float64).fill_nan(None).alias("__v"))
    infinite = values.filter(pl.col("__v").is_infinite())
    if infinite.height:
        where = (
            infinite.select(system_names(keys)).to_series().unique().sort().head(3).to_list()
            if keys
            else []
        )
        named = f" (system(s) {where})" if where else ""
        msg = (
            f"metric column {metric!r} holds {infinite.height} infinite value(s){named}; a "
            "histogram needs finite values: filter them out or replace them"
        )
        raise ColumnValueError(msg)
    values = values.filter(pl.col("__v").is_not_null())
    smallest, largest = values.select(
        pl.col("__v").min().alias("lo"), pl.col("__v").max().alias("hi")
    ).row(0)
    low = 0.0 if smallest is None else float(smallest)
    high = 1.0 if largest is None else float(largest)
    if low >= 0.0 and high <= 1.0:
        low, high = 0.0, 1.0
    elif high == low:
        high = low + 1.0
    span = high - low
    # Edges in Python: for [0, 1], i / bins is the double nearest to the decimal (0.15), while
    # Polars divides by a scalar as a product with its reciprocal (3 * 0.05 = 0.150...02).
    edges = {i: low + span * i / bins for i in range(bins + 1)}

    def edge(i: pl.Expr) -> pl.Expr:
        return i.replace_strict(edges, return_dtype=pl.Float64)

    value = pl.col("__v")
    guess = ((value - low) * bins / span).floor().cast(pl.Int64).clip(0, bins - 1)
    # Rounding can put the guess one bin off next to an edge; the edges decide, so every value
    # lies in [bin_start, bin_end) as reported (the last bin includes its end).
    index = (
        pl.when(value < edge(guess))
        .then(guess - 1)
        .when((value >= edge(guess + 1)) & (guess < bins - 1))
        .then(guess + 1)
        .otherwise(guess)
    )
    counts = (
        values.with_columns(index.alias("__bin"))
        .group_by(*keys, "__bin")
        .agg(pl.len().cast(pl.Int64).alias("n_queries"))
    )
    grid = pl.DataFrame({"__bin": list(range(bins))}, schema={"__bin": pl.Int64})
    if keys:
        grid = frame.select(keys).unique().join(grid, how="cross")
    hist = grid.join(counts, on=[*keys, "__bin"], how="left", nulls_equal=True).with_columns(
        pl.col("n_queries").fill_null(0)
    )
    total = pl.col("n_queries").sum().over(keys) if keys else pl.col("n_queries").sum()
    return hist.sort([*keys, "__bin"]).select(
        *keys,
        pl.lit(metric).alias("metric"),
        edge(pl.col("__bin")).alias("bin_start"),
        pl.when(pl.col("__bin") == bins - 1)
        .then(pl.lit(high))
        .otherwise(edge(pl.col("__bin") + 1))
        .alias("bin_end"),
        "n_queries",
        pl.when(total > 0).then(pl.col("n_queries") / total).otherwise(0.0).alias("share"),
    )


def _summaries(
    frame: pl.DataFrame, metric: str, keys: Sequence[str]
) -> tuple[str, list[tuple[str, float, int]]]:
    """The summary's name and each system's (name, summary, queries with a value)."""
    meaning = meanings([metric])[metric]
    name = {"gm": "geometric mean", "sum": "sum"}.get(meaning.summary, "mean")
    system = system_names(keys) if keys else pl.lit("all")
    grouped = (
        frame.select(system.alias("__s"), pl.col(metric).cast(pl.Float64).alias("__v"))
        .group_by("__s")
        .agg(pl.col("__v"))
        .sort("__s", nulls_last=True)
    )
    found = []
    for label, values in grouped.iter_rows():
        array = np.array([math.nan if v is None else v for v in values], dtype=np.float64)
        found.append((str(label), summarise(array, meaning.summary), int((~np.isnan(array)).sum())))
    return name, found


@renamed(per_query="data")
def distribution(
    data: Any,
    metric: str,
    *,
    by: str | Sequence[str] | None = "system",
    bins: int = 20,
) -> alt.Chart | alt.FacetChart:
    """Histogram of each system's per-query values of a metric (Altair).

    Up to :data:`OVERLAY_MAX` (4) systems: overlaid translucent bars, one colour per system,
    of the share of its queries in each bin, and the subtitle gives each system's summary (the
    mean; the geometric mean for gm metrics, as ``evaluate``). More systems: small multiples,
    one panel per system (four to a row) headed by its name, summary and query count.
    Null and NaN values are left out (a system with none shows "–").
    :func:`distribution_data` returns the frame drawn here.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> per_query = pl.DataFrame(
    ...     {"system": ["a", "a", "b", "b"], "query": ["q1", "q2"] * 2, "map": [0.1, 0.9, 0.5, 1.0]}
    ... )
    >>> chart = rke.plot.distribution(per_query, "map")  # doctest: +SKIP
    """
    _require_altair("distribution")
    import altair as alt  # type: ignore[import-not-found,unused-ignore]

    keys = _keys(by)
    rows, color = _with_run(distribution_data(data, metric, by=by, bins=bins), keys)
    summary, found = _summaries(_frame(data, "data"), metric, keys)
    x = alt.X("bin_start:Q", bin="binned", axis=_axis(alt, f"{metric} per query"))
    y = alt.Y("share:Q", stack=None, axis=_axis(alt, "share of queries", format="%"))
    tooltip = [
        *(alt.Tooltip(key) for key in keys),
        alt.Tooltip("bin_start:Q", format=".3f"),
        alt.Tooltip("bin_end:Q", format=".3f"),
        "n_queries:Q",
        alt.Tooltip("share:Q", format=".1%"),
    ]
    title = f"Distribution of {metric} over queries"
    if len(found) <= OVERLAY_MAX:
        if keys:
            subtitle = f"{summary}: " + ", ".join(f"{s} {_number(m)}" for s, m, _ in found)
        else:
            subtitle = f"{summary}: {_number(found[0][1]) if found else '–'}"
        # Altair's mark_* methods are untyped (Any), hence the annotated name.
        chart: alt.Chart = (
            alt.Chart(rows)
            .mark_bar(opacity=0.5, binSpacing=0)
            .encode(x=x, x2="bin_end:Q", y=y, tooltip=tooltip, **_color(alt, color, keys, rows))
            .properties(width=WIDTH, height=HEIGHT, title=_title(alt, title, subtitle))
        )
        return _offline(chart)
    # Small multiples: one panel per system, its summary in the panel's heading.
    headings = {s: f"{s}: {summary} {_number(m)} ({n:,} queries)" for s, m, n in found}
    assert color is not None
    rows = rows.with_columns(
        pl.col(color).cast(pl.String).replace_strict(headings, default=None).alias("panel")
    )
    panels = [headings[s] for s, _, _ in found]
    header = alt.Header(title=None, labelFontSize=12, labelLimit=260)
    faceted: alt.FacetChart = (
        alt.Chart(rows)
        .mark_bar(binSpacing=0, color=_TABLEAU20[0])
        .encode(x=x, x2="bin_end:Q", y=y, tooltip=tooltip)
        .properties(width=200, height=110)
        .facet(facet=alt.Facet("panel:N", sort=panels, header=header), columns=4, spacing=12)
        .properties(title=_title(alt, title, f"one panel per system ({len(found)} systems)"))
    )
    return _offline(faceted)
