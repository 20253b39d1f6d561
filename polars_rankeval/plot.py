"""Plots for "is system B better than A?": Altair charts drawn from small Polars frames.

Every chart function has a ``*_data`` twin that returns the tidy Polars frame the chart draws,
so matplotlib or plotly users can draw it themselves. The data is aggregated in Polars first
(means, bins, sorted and binned differences), so a chart holds a few hundred rows whatever the
size of the log, well under Altair's 5,000-row limit.

=================================  ===================================================
chart                              what it shows
=================================  ===================================================
:func:`metric_at_k`                a metric against its cutoff ``k``, one curve per system
:func:`per_query_delta`            sorted per-query differences system − baseline, with
                                   the win/tie/loss counts
:func:`systems`                    the output of :func:`polars_rankeval.compare`: each
                                   system's mean difference from the baseline with its
                                   interval, significant ones filled
:func:`distribution`               histogram of the per-query values of each system
:func:`precision_recall`           trec_eval's interpolated precision at recall levels
                                   0.0, 0.1, ..., 1.0 (``iprec_at_recall``)
=================================  ===================================================

Altair is an optional dependency (``pip install "polars-rankeval[plot]"``). It is imported
only when a chart is drawn, so ``import polars_rankeval`` and the ``*_data`` functions need
Polars only.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

import numpy as np
import polars as pl

from polars_rankeval._columns import as_polars
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnValueError,
    InvalidOptionError,
    ResourceError,
)
from polars_rankeval.evaluate import evaluate
from polars_rankeval.meaning import LowerIsBetter, Meaning, meanings, summarise
from polars_rankeval.metrics._base import Metric
from polars_rankeval.metrics.interpolated import iprec_at_recall

if TYPE_CHECKING:
    import altair as alt  # type: ignore[import-not-found,unused-ignore]


__all__ = [
    "RECALL_LEVELS",
    "distribution",
    "distribution_data",
    "metric_at_k",
    "metric_at_k_data",
    "per_query_delta",
    "per_query_delta_data",
    "precision_recall",
    "precision_recall_data",
    "save",
    "systems",
    "systems_data",
]

#: trec_eval's default recall levels of ``iprec_at_recall``. ``i / 10`` is the double nearest
#: to each decimal, the same value as the C literals 0.1, 0.2 ... in ``m_iprec_at_recall.c``.
RECALL_LEVELS: tuple[float, ...] = tuple(i / 10 for i in range(11))

#: How the values of several ``by`` columns are joined into one system name (as ``compare``).
SYSTEM_SEPARATOR = " / "
#: ``|d|`` at or below this, relative to the values, is a tie (the rule ``compare`` uses), so
#: floating-point noise between two equal scores is never a win or a loss.
TIE_TOLERANCE = 1e-12
#: Default chart size in pixels (the plotting area; axes, title and legend come on top).
WIDTH, HEIGHT = 500, 300

_EXTRA = 'pip install "polars-rankeval[plot]"'
_SCHEME: Final = "tableau10"
#: Vega's tableau20: with more than 10 systems each gets one of these 20 colours, and past
#: 20 a marker shape as well, so no two systems look the same (up to 20 × 8 = 160).
_TABLEAU20: Final = (
    *("#4c78a8", "#9ecae9", "#f58518", "#ffbf79", "#54a24b", "#88d27a", "#b79a20"),
    *("#f2cf5b", "#439894", "#83bcb6", "#e45756", "#ff9d98", "#79706e", "#bab0ac"),
    *("#d67195", "#fcbfd2", "#b279a2", "#d6a5c9", "#9e765f", "#d8b5a5"),
)
_SHAPES: Final = (
    *("circle", "square", "triangle-up", "diamond", "cross"),
    *("triangle-down", "triangle-left", "triangle-right"),
)
#: More systems than this get small multiples in distribution(): overlaid translucent
#: histograms of more than a few systems blur into one.
OVERLAY_MAX = 4
_OUTCOMES = ("win", "tie", "loss")
_OUTCOME_COLORS = ("#4c78a8", "#7f7f7f", "#e45756")


# ---------------------------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------------------------


def _require_altair(function: str) -> None:
    """Raise an ImportError naming the extra when Altair is missing (the charts need it)."""
    try:
        import altair  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
    except ImportError as error:
        msg = (
            f"rke.plot.{function}() draws with Altair, which is not installed: {_EXTRA} "
            f"(rke.plot.{function}_data() returns the same data as a Polars frame without it)"
        )
        raise ImportError(msg) from error


class _ScriptSafeEncoder(json.JSONEncoder):
    r"""JSON whose strings never hold a literal ``<``, so it cannot end an HTML ``<script>``.

    Altair embeds ``json.dumps(spec)`` in a ``<script>`` element; a system named
    ``</script><img onerror=...>`` would end that element. ``\u003c`` is the same character
    to JSON, and ``<`` only occurs inside JSON strings.
    """

    def encode(self, o: Any) -> str:
        return super().encode(o).replace("<", "\\u003c")


def _inline_possible() -> bool:
    """Inline HTML embeds Vega from vl-convert (the plot extra); without it, use the CDN."""
    try:
        import vl_convert  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
    except ImportError:
        return False
    return True


def _html_options(kwargs: dict[str, Any], *, html: bool = True) -> dict[str, Any]:
    options = dict(kwargs)
    if html:  # Altair warns about inline= for PNG, SVG and the rest
        options.setdefault("inline", _inline_possible())
    options["json_kwds"] = {**(options.get("json_kwds") or {}), "cls": _ScriptSafeEncoder}
    return options


def _is_html(fp: object, format: object) -> bool:
    if format is not None:
        return format == "html"
    return isinstance(fp, (str, PathLike)) and str(fp).lower().endswith(".html")


def save(chart: Any, path: str | PathLike[str], *, overwrite: bool = False, **options: Any) -> Path:
    r"""Save any Altair chart offline and safely: HTML with Vega inlined, names escaped.

    The format follows the suffix (``.html``, ``.png``, ``.svg``, ``.pdf``, ``.json``), as
    ``chart.save`` does. HTML embeds the Vega libraries (from vl-convert, the ``plot``
    extra), so the page renders without network, and every ``<`` of the chart's JSON is
    written ``\u003c``, so no label can end the page's ``<script>``. Charts from
    ``rke.plot`` already save this way with ``chart.save(path)``; use this function for charts
    composed from them (``a | b``) or drawn with Altair directly.

    Parameters
    ----------
    chart
        An Altair chart.
    path
        The file to write.
    overwrite
        Replace an existing file (default: refuse, naming it).
    **options
        Other keywords of Altair's ``chart.save`` (``scale_factor=2`` for a sharper PNG).

    Returns
    -------
    Path
        The path written.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> per_query = pl.DataFrame({"system": ["a", "b"], "query": [1, 1], "map": [0.2, 0.5]})
    >>> chart = rke.plot.distribution(per_query, "map")  # doctest: +SKIP
    >>> rke.plot.save(chart, "distribution.html")  # doctest: +SKIP
    """
    target = Path(path)
    if target.exists() and not overwrite:
        msg = f"rke.plot.save(): {str(target)!r} exists; pass overwrite=True to replace it"
        raise ResourceError(msg)
    html = _is_html(target, options.get("format"))
    chart.save(str(target), **_html_options(options, html=html))
    return target


def _bundle(chart: Any) -> dict[str, Any]:
    """The notebook output: the Vega-Lite spec (no network) and an SVG drawn offline."""
    from altair.vegalite.v6.display import VEGALITE_MIME_TYPE  # type: ignore[import-not-found,unused-ignore]

    spec = chart.to_dict()
    bundle: dict[str, Any] = {VEGALITE_MIME_TYPE: spec, "text/plain": "<rke.plot chart>"}
    if _inline_possible():
        import vl_convert  # type: ignore[import-not-found,unused-ignore]

        bundle["image/svg+xml"] = vl_convert.vegalite_to_svg(spec)
    return bundle


_OFFLINE_CLASSES: dict[type, type] = {}
ChartT = TypeVar("ChartT")


def _offline(chart: ChartT) -> ChartT:
    """The chart, made to save and display offline and escaped (same class name and data).

    Its ``save``/``to_html`` default to ``inline=True`` and escape ``<`` in the embedded JSON;
    in a notebook with Altair's default (CDN) renderer it shows as the Vega-Lite mimetype
    plus an SVG. Another renderer enabled by the user is left to Altair.
    """
    import altair as alt  # type: ignore[import-not-found,unused-ignore]

    base: Any = type(chart)
    made = _OFFLINE_CLASSES.get(base)
    if made is None:

        def to_html(self: Any, *args: Any, **kwargs: Any) -> str:
            return str(base.to_html(self, *args, **_html_options(kwargs)))

        def save_chart(self: Any, fp: Any, format: Any = None, **kwargs: Any) -> None:
            html = _is_html(fp, format)
            base.save(self, fp, format, **_html_options(kwargs, html=html))

        def repr_bundle(self: Any, *args: Any, **kwargs: Any) -> Any:
            if alt.renderers.active != "default":
                return base._repr_mimebundle_(self, *args, **kwargs)
            return _bundle(self)

        namespace = {"to_html": to_html, "save": save_chart, "_repr_mimebundle_": repr_bundle}
        made = type(base.__name__, (base,), namespace)
        made.__module__ = base.__module__
        _OFFLINE_CLASSES[base] = made
    # Altair's SchemaBase.__setattr__ stores attributes as chart properties; bypass it.
    object.__setattr__(chart, "__class__", made)
    return chart


def _meaning(metric: str, lower_is_better: LowerIsBetter) -> Meaning:
    """The metric's direction and summary (meaning.py), refusing a metric with no direction."""
    found = meanings([metric], lower_is_better=lower_is_better)[metric]
    if found.direction == "none":
        msg = (
            f"metric {metric!r} has no direction (a count of the input): no system is better, "
            "so there are no wins or losses to draw"
        )
        raise InvalidOptionError(msg)
    return found


def _keys(by: str | Sequence[str] | None) -> list[str]:
    if by is None:
        return []
    keys = [by] if isinstance(by, str) else list(by)
    for key in keys:
        if not isinstance(key, str):
            msg = f"option by= must name columns (str), got {key!r}"
            raise InvalidOptionError(msg)
    return keys


def _frame(data: object, option: str) -> pl.DataFrame:
    frame = as_polars(data, option)
    return frame.collect() if isinstance(frame, pl.LazyFrame) else frame


def _check_columns(frame: pl.DataFrame, wanted: Sequence[tuple[str, str]], table: str) -> None:
    for option, name in wanted:
        if name not in frame.columns:
            msg = (
                f"column {name!r} (option {option}=) is not in the {table}; "
                f"columns present: {frame.columns}"
            )
            raise ColumnNotFoundError(msg)


def _system_name(keys: Sequence[str]) -> pl.Expr:
    """One string naming the system: the ``by`` value, or the values joined with " / "."""
    if len(keys) == 1:
        return pl.col(keys[0]).cast(pl.String)
    return pl.concat_str([pl.col(key).cast(pl.String) for key in keys], separator=SYSTEM_SEPARATOR)


def _system_value(value: object) -> str:
    """A system given by the user: a value, or a tuple of the values of several by columns."""
    if isinstance(value, tuple):
        return SYSTEM_SEPARATOR.join(str(part) for part in value)
    return str(value)


def _with_run(data: pl.DataFrame, keys: Sequence[str]) -> tuple[pl.DataFrame, str | None]:
    """The column that colours a chart: the by column itself, or a joined ``run`` column."""
    if not keys:
        return data, None
    if len(keys) == 1:
        return data, keys[0]
    return data.with_columns(_system_name(keys).alias("run")), "run"


def _axis(alt: Any, title: str | None, **options: Any) -> Any:
    """An axis with fonts a notch larger than Vega-Lite's defaults (readable in a PNG)."""
    return alt.Axis(title=title, labelFontSize=12, titleFontSize=13, **options)


def _legend(alt: Any, title: str | None, **options: Any) -> Any:
    return alt.Legend(title=title, labelFontSize=12, titleFontSize=13, **options)


def _color(alt: Any, field: str | None, keys: Sequence[str], data: pl.DataFrame) -> dict[str, Any]:
    """Colour (and past 20 systems, shape) per system, with a legend naming each.

    Up to 10 systems: tableau10. Up to 20: tableau20. Past 20: tableau20 and a marker shape
    per block of 20, so colours never repeat silently.
    """
    if field is None:
        return {}
    legend = _legend(alt, SYSTEM_SEPARATOR.join(keys), symbolLimit=0)
    names = data[field].cast(pl.String).unique().drop_nulls().sort().to_list()
    if len(names) <= 10:
        return {"color": alt.Color(f"{field}:N", legend=legend, scale=alt.Scale(scheme=_SCHEME))}
    colours = [_TABLEAU20[i % len(_TABLEAU20)] for i in range(len(names))]
    encodings = {
        "color": alt.Color(
            f"{field}:N", legend=legend, scale=alt.Scale(domain=names, range=colours)
        )
    }
    if len(names) > len(_TABLEAU20):
        shapes = [_SHAPES[(i // len(_TABLEAU20)) % len(_SHAPES)] for i in range(len(names))]
        encodings["shape"] = alt.Shape(
            f"{field}:N", legend=legend, scale=alt.Scale(domain=names, range=shapes)
        )
    return encodings


def _title(alt: Any, text: str, subtitle: str | list[str] | None = None) -> Any:
    return alt.Title(
        text,
        subtitle=subtitle or "",
        fontSize=15,
        subtitleFontSize=12,
        subtitleColor="#555555",
        anchor="start",
    )


# ---------------------------------------------------------------------------------------------
# metric@k
# ---------------------------------------------------------------------------------------------


def _sweep(metric: str, ks: Sequence[int]) -> str:
    """``"ndcg(gain=exp)"`` and ``[1, 5]`` → ``"ndcg@1,5(gain=exp)"`` (one evaluate pass)."""
    if not isinstance(metric, str) or "@" in metric:
        msg = (
            f"metric= must be a metric name without a cutoff, e.g. 'ndcg' or 'ndcg(gain=exp)', "
            f"and the cutoffs go in ks=; got {metric!r}"
        )
        raise InvalidOptionError(msg)
    if isinstance(ks, (str, int)) or not ks:
        msg = f"ks= must be a non-empty list of cutoffs such as [1, 5, 10], got {ks!r}"
        raise InvalidOptionError(msg)
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
            msg = f"ks= must hold positive ints, got {k!r}"
            raise InvalidOptionError(msg)
    name, paren, options = metric.partition("(")
    return f"{name}@{','.join(str(k) for k in ks)}{paren}{options}"


def metric_at_k_data(
    log: Any,
    metric: str,
    ks: Sequence[int],
    *,
    by: str | Sequence[str] | None = None,
    **options: Any,
) -> pl.DataFrame:
    """A metric at several cutoffs, per system: the data of :func:`metric_at_k`.

    The cutoffs are one sweep (``"ndcg@1,5,10"``), so every cutoff shares one ranking pass.

    Parameters
    ----------
    log
        The long table (DataFrame, LazyFrame, pandas or Arrow), as for
        :func:`~polars_rankeval.evaluate`.
    metric
        A metric without a cutoff, e.g. ``"ndcg"``, ``"p"`` or ``"ndcg(gain=exp)"``.
    ks
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
    sweep = _sweep(metric, ks)
    keys = _keys(by)
    means: pl.DataFrame | pl.LazyFrame = evaluate(log, [sweep], by=by, per_query=False, **options)
    if isinstance(means, pl.LazyFrame):
        means = means.collect()
    # The sweep's columns come in the order of ks, after the by columns.
    value_columns = [name for name in means.columns if name not in keys]
    parts = [
        means.select(
            *keys,
            pl.lit(metric).alias("metric"),
            pl.lit(k, dtype=pl.Int64).alias("k"),
            pl.col(column).cast(pl.Float64).alias("value"),
        )
        for k, column in zip(ks, value_columns, strict=True)
    ]
    return pl.concat(parts).sort([*keys, "k"])


def metric_at_k(
    log: Any,
    metric: str,
    ks: Sequence[int],
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
    data, color = _with_run(metric_at_k_data(log, metric, ks, by=by, **options), keys)
    wide = max(ks) > 10 * min(ks)
    scale = alt.Scale(type="log") if wide else alt.Scale(zero=False)
    x = alt.X("k:Q", scale=scale, axis=_axis(alt, "cutoff k", values=sorted(ks)))
    y = alt.Y("value:Q", axis=_axis(alt, f"{metric}@k (mean)"))
    tooltip = [*(alt.Tooltip(key) for key in keys), "k:Q", alt.Tooltip("value:Q", format=".4f")]
    # Altair's mark_* methods are untyped (Any), hence the annotated name.
    chart: alt.Chart = (
        alt.Chart(data)
        .mark_line(point=alt.OverlayMarkDef(size=50), strokeWidth=2)
        .encode(x=x, y=y, tooltip=tooltip, **_color(alt, color, keys, data))
        .properties(
            width=WIDTH,
            height=HEIGHT,
            title=_title(alt, f"{metric} at each cutoff", "mean over the evaluated queries"),
        )
    )
    return _offline(chart)


# ---------------------------------------------------------------------------------------------
# Per-query differences
# ---------------------------------------------------------------------------------------------


def per_query_delta_data(
    per_query: Any,
    metric: str,
    baseline: object,
    system: object,
    *,
    by: str | Sequence[str] = "system",
    query: str = "query",
    max_bars: int = 500,
    lower_is_better: LowerIsBetter = None,
) -> pl.DataFrame:
    """Per-query differences system − baseline, sorted and binned (:func:`per_query_delta`).

    Queries are paired by ``query``; a query that only one side has a value for (no row, or a
    null/NaN value) is dropped and counted in ``n_dropped``. A difference within ``1e-12`` of
    zero (relative to the values) is a tie, as in :func:`~polars_rankeval.compare`.

    A win is a query where the system is better by the metric's direction (looked up as
    :func:`~polars_rankeval.compare` does): a higher value for ``ndcg@10``, a lower one for
    ``frp`` or ``mean_rank`` or a column named in ``lower_is_better``. A metric without a
    direction (a count such as ``num_ret``) is refused.

    The differences are sorted (largest win first, ties by query id). With more than
    ``max_bars`` paired queries, consecutive queries are binned, each bin holding at most
    ``ceil(n / max_bars)`` queries of **one** outcome: the win/tie/loss counts (the sums of
    ``n_queries`` per outcome) stay exact, and a bar of width ``n_queries`` and height
    ``delta`` (the bin's mean) keeps the area of the differences it stands for.

    Parameters
    ----------
    per_query
        One row per ``(by, query)`` and one column per metric, e.g.
        ``rke.evaluate(log, ["ndcg@10"], by="system", per_query=True)``.
    metric
        The metric column.
    baseline, system
        Values of the ``by`` column(s) (a tuple when ``by`` has several columns).
    by
        Column(s) whose values name the systems.
    query
        The column that pairs the rows.
    max_bars
        At most this many bins per outcome share (about ``max_bars`` rows in all).
    lower_is_better
        For another tool's table: the column(s) whose lower values are better (a list), or
        ``{column: "higher" | "lower"}``. Our metrics' columns know their direction.

    Returns
    -------
    DataFrame
        One row per bin, in sorted order: ``outcome`` (``"win"``, ``"tie"``, ``"loss"``),
        ``first`` and ``last`` (1-based positions of the bin's queries in the sorted order),
        ``n_queries``, ``delta`` (mean difference of the bin), ``delta_min``, ``delta_max``,
        ``query`` (the query id when the bin holds one query, else null), and the constant
        columns ``metric``, ``baseline``, ``system`` and ``n_dropped``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> per_query = pl.DataFrame(
    ...     {
    ...         "system": ["a", "a", "a", "a", "b", "b", "b"],
    ...         "query": ["q1", "q2", "q3", "q4", "q1", "q2", "q3"],
    ...         "ndcg@10": [0.5, 0.5, 1.0, 0.2, 0.75, 0.5, 0.0],
    ...     }
    ... )
    >>> data = rke.plot.per_query_delta_data(per_query, "ndcg@10", "a", "b")
    >>> data.select("outcome", "first", "last", "n_queries", "delta", "query", "n_dropped")
    shape: (3, 7)
    ┌─────────┬───────┬──────┬───────────┬───────┬───────┬───────────┐
    │ outcome ┆ first ┆ last ┆ n_queries ┆ delta ┆ query ┆ n_dropped │
    │ ---     ┆ ---   ┆ ---  ┆ ---       ┆ ---   ┆ ---   ┆ ---       │
    │ str     ┆ i64   ┆ i64  ┆ i64       ┆ f64   ┆ str   ┆ i64       │
    ╞═════════╪═══════╪══════╪═══════════╪═══════╪═══════╪═══════════╡
    │ win     ┆ 1     ┆ 1    ┆ 1         ┆ 0.25  ┆ q1    ┆ 1         │
    │ tie     ┆ 2     ┆ 2    ┆ 1         ┆ 0.0   ┆ q2    ┆ 1         │
    │ loss    ┆ 3     ┆ 3    ┆ 1         ┆ -1.0  ┆ q3    ┆ 1         │
    └─────────┴───────┴──────┴───────────┴───────┴───────┴───────────┘
    """
    if isinstance(max_bars, bool) or not isinstance(max_bars, int) or max_bars < 1:
        msg = f"option max_bars= must be a positive int, got {max_bars!r}"
        raise InvalidOptionError(msg)
    keys = _keys(by)
    if not keys:
        msg = "by= must name the column(s) whose values are the systems, e.g. by='system'"
        raise InvalidOptionError(msg)
    frame = _frame(per_query, "per_query")
    _check_columns(
        frame,
        [*(("by", key) for key in keys), ("query", query), ("metric", metric)],
        "per-query table",
    )
    if not frame.schema[metric].is_numeric():
        msg = f"metric column {metric!r} must be numeric, got {frame.schema[metric]}"
        raise ColumnValueError(msg)
    lower = _meaning(metric, lower_is_better).direction == "lower"
    named = frame.select(
        _system_name(keys).alias("__system"),
        pl.col(query),
        pl.col(metric).cast(pl.Float64).fill_nan(None).alias("__value"),
    )
    systems_present = named["__system"].unique().drop_nulls().sort().to_list()
    base_name, system_name = _system_value(baseline), _system_value(system)
    for option, name in (("baseline", base_name), ("system", system_name)):
        if name not in systems_present:
            msg = (
                f"option {option}={name!r} is not a system of the table; systems: {systems_present}"
            )
            raise InvalidOptionError(msg)
    repeated = named.group_by("__system", query).len().filter(pl.col("len") > 1)
    if repeated.height:
        msg = (
            f"the per-query table has {repeated.height} (system, query) pair(s) with more than "
            f"one row: it needs one row per ({', '.join(keys)}, {query})"
        )
        raise ColumnValueError(msg)

    def side(name: str, alias: str) -> pl.DataFrame:
        rows = named.filter(pl.col("__system") == name)
        return rows.select(query, pl.col("__value").alias(alias))

    pairs = side(base_name, "__x").join(
        side(system_name, "__y"), on=query, how="full", coalesce=True
    )
    x, y = pl.col("__x"), pl.col("__y")
    both = x.is_not_null() & y.is_not_null()
    n_dropped = pairs.filter(~both & (x.is_not_null() | y.is_not_null())).height
    scale = pl.max_horizontal(pl.lit(1.0), x.abs(), y.abs())
    raw = y - x
    delta = pl.when(raw.abs() <= TIE_TOLERANCE * scale).then(0.0).otherwise(raw)
    # Signed so that positive means "the system is better", whatever the direction.
    gain = -pl.col("delta") if lower else pl.col("delta")
    outcome = pl.when(gain > 0).then(pl.lit("win")).when(gain < 0).then(pl.lit("loss"))
    ranked = (
        pairs.filter(both)
        .select(query, delta.alias("delta"))
        .with_columns(outcome.otherwise(pl.lit("tie")).alias("outcome"), gain.alias("__gain"))
        .sort(["__gain", query], descending=[True, False])
        .with_row_index("position", offset=1)
    )
    size = max(1, math.ceil(ranked.height / max_bars))
    # Bins restart at each outcome, so no bin mixes a win with a tie or a loss.
    within = pl.col("position").rank("ordinal").over("outcome") - 1
    binned = (
        ranked.with_columns((within // size).alias("__bin"))
        .group_by("outcome", "__bin")
        .agg(
            pl.col("position").min().cast(pl.Int64).alias("first"),
            pl.col("position").max().cast(pl.Int64).alias("last"),
            pl.len().cast(pl.Int64).alias("n_queries"),
            pl.col("delta").mean(),
            pl.col("delta").min().alias("delta_min"),
            pl.col("delta").max().alias("delta_max"),
            pl.when(pl.len() == 1).then(pl.col(query).first()).alias("query"),
        )
        .sort("first")
    )
    return binned.select(
        pl.lit(metric).alias("metric"),
        pl.lit(base_name).alias("baseline"),
        pl.lit(system_name).alias("system"),
        "outcome",
        "first",
        "last",
        "n_queries",
        "delta",
        "delta_min",
        "delta_max",
        "query",
        pl.lit(n_dropped, dtype=pl.Int64).alias("n_dropped"),
    )


def _outcome_counts(data: pl.DataFrame) -> dict[str, int]:
    counts = data.group_by("outcome").agg(pl.col("n_queries").sum())
    found = dict(zip(counts["outcome"].to_list(), counts["n_queries"].to_list(), strict=True))
    return {outcome: int(found.get(outcome, 0)) for outcome in _OUTCOMES}


def per_query_delta(
    per_query: Any,
    metric: str,
    baseline: object,
    system: object,
    *,
    by: str | Sequence[str] = "system",
    query: str = "query",
    max_bars: int = 500,
    lower_is_better: LowerIsBetter = None,
) -> alt.Chart:
    """Sorted per-query differences system − baseline, with win/tie/loss counts (Altair).

    One bar per query (or per bin of consecutive queries of one outcome, see
    :func:`per_query_delta_data`, which returns the frame drawn here), wins left, losses right;
    the subtitle gives the exact counts, the mean difference and the queries dropped because
    only one side has them. Wins are the queries where the system is better by the metric's
    direction: for ``frp`` (lower is better) a win is a negative difference, drawn below zero
    in the win colour, and the subtitle says "lower is better".

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> per_query = pl.DataFrame(
    ...     {
    ...         "system": ["a", "a", "b", "b"],
    ...         "query": ["q1", "q2", "q1", "q2"],
    ...         "ndcg@10": [0.5, 0.8, 0.75, 0.6],
    ...     }
    ... )
    >>> chart = rke.plot.per_query_delta(per_query, "ndcg@10", "a", "b")  # doctest: +SKIP
    """
    _require_altair("per_query_delta")
    import altair as alt  # type: ignore[import-not-found,unused-ignore]

    data = per_query_delta_data(
        per_query,
        metric,
        baseline,
        system,
        by=by,
        query=query,
        max_bars=max_bars,
        lower_is_better=lower_is_better,
    )
    direction = _meaning(metric, lower_is_better).direction
    counts = _outcome_counts(data)
    paired = sum(counts.values())
    n_dropped = int(data["n_dropped"][0]) if data.height else 0
    # Each bin's mean times its size gives back the exact sum of the differences.
    total = float((data["delta"] * data["n_queries"]).sum()) if paired else 0.0
    mean = f"{total / paired:+.4f}" if paired else "n/a"
    base_name, system_name = _system_value(baseline), _system_value(system)
    subtitle = [
        f"{counts['win']:,} wins · {counts['tie']:,} ties · {counts['loss']:,} losses "
        f"of {paired:,} paired queries; mean Δ = {mean}",
        f"{n_dropped:,} queries dropped (a value on one side only); "
        f"{direction} is better for {metric}: a win is a query where {system_name} is better",
    ]
    binned = data.height < paired
    x_title = f"queries, best for {system_name} first" + (
        " (bars are bins of queries)" if binned else ""
    )
    color = alt.Color(
        "outcome:N",
        scale=alt.Scale(domain=list(_OUTCOMES), range=list(_OUTCOME_COLORS)),
        legend=_legend(alt, None, orient="top-right"),
    )
    # Altair's mark_* methods are untyped (Any), hence the annotated name.
    chart: alt.Chart = (
        alt.Chart(data)
        .transform_calculate(start="datum.first - 1")
        .mark_rect(strokeWidth=1)
        .encode(
            x=alt.X(
                "start:Q",
                scale=alt.Scale(domain=[0, max(paired, 1)], nice=False),
                axis=_axis(alt, x_title, format=",d"),
            ),
            x2="last:Q",
            y=alt.Y("delta:Q", axis=_axis(alt, f"Δ {metric} ({system_name} − {base_name})")),
            y2=alt.datum(0),
            color=color,
            # The stroke keeps ties (zero height) visible as a line on zero.
            stroke=alt.Stroke(
                "outcome:N",
                scale=alt.Scale(domain=list(_OUTCOMES), range=list(_OUTCOME_COLORS)),
                legend=None,
            ),
            tooltip=[
                "outcome:N",
                "first:Q",
                "last:Q",
                "n_queries:Q",
                alt.Tooltip("delta:Q", format="+.4f"),
                alt.Tooltip("delta_min:Q", format="+.4f"),
                alt.Tooltip("delta_max:Q", format="+.4f"),
                "query:N",
            ],
        )
        .properties(
            width=WIDTH,
            height=HEIGHT,
            title=_title(alt, f"{metric}: {system_name} − {base_name}, per query", subtitle),
        )
    )
    return _offline(chart)


# ---------------------------------------------------------------------------------------------
# System comparison (output of rke.compare)
# ---------------------------------------------------------------------------------------------

_COMPARISON_NEEDS = ("metric", "baseline", "system", "delta", "ci_low", "ci_high", "significant")
_COMPARISON_KEEPS = (
    "n_queries",
    "baseline_mean",
    "system_mean",
    "baseline_overall",
    "system_overall",
    "baseline_queries",
    "system_queries",
    "summary",
    "test_scale",
    "p_value",
    "p_adjusted",
    "wins",
    "ties",
    "losses",
    "test",
    "correction",
    "alpha",
)
_VERDICTS = ("better", "worse", "not significant")
_VERDICT_COLORS = ("#4c78a8", "#e45756", "#7f7f7f")


def _number(value: object) -> str:
    finite = isinstance(value, (int, float)) and math.isfinite(value)
    return f"{value:.4f}" if finite else "–"


def systems_data(comparison: Any, *, lower_is_better: LowerIsBetter = None) -> pl.DataFrame:
    """The rows of a comparison that :func:`systems` draws.

    Parameters
    ----------
    comparison
        The output of :func:`~polars_rankeval.compare` (or any frame with its columns
        ``metric``, ``baseline``, ``system``, ``delta``, ``ci_low``, ``ci_high`` and
        ``significant``; ``ci_low``/``ci_high`` bound the mean difference system − baseline,
        on the log scale where ``test_scale`` is ``"log"``).
    lower_is_better
        Only for a frame without ``higher_is_better`` (compare's output has it): columns whose
        lower values are better; other metrics' directions are looked up by name.

    Returns
    -------
    DataFrame
        The rows in their order: ``metric``, ``baseline``, ``system``, ``label`` (the system,
        or ``"system vs baseline"`` when there are several baselines), ``delta``, ``ci_low``,
        ``ci_high``, ``significant``, ``higher_is_better``, ``verdict`` (``"better"`` or
        ``"worse"`` when significant, by the metric's direction, else ``"not significant"``),
        ``position`` (where the point goes: ``delta``, or for a gm metric tested on logs the
        log of the ratio of the geometric means, on the scale of its interval), ``panel`` (the
        metric's heading: its direction and, with ``baseline_overall``, the baseline's value)
        and ``axis_label`` (the label with ``system_overall``, the value ``evaluate`` gives);
        then those of compare's other columns that are present.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> comparison = pl.DataFrame(
    ...     {
    ...         "metric": ["ndcg@10", "frp"],
    ...         "baseline": "bm25",
    ...         "system": "neural",
    ...         "delta": [0.18, -0.56],
    ...         "ci_low": [0.16, -0.6],
    ...         "ci_high": [0.20, -0.5],
    ...         "significant": [True, True],
    ...     }
    ... )
    >>> rke.plot.systems_data(comparison).select("metric", "label", "delta", "verdict")
    shape: (2, 4)
    ┌─────────┬────────┬───────┬─────────┐
    │ metric  ┆ label  ┆ delta ┆ verdict │
    │ ---     ┆ ---    ┆ ---   ┆ ---     │
    │ str     ┆ str    ┆ f64   ┆ str     │
    ╞═════════╪════════╪═══════╪═════════╡
    │ ndcg@10 ┆ neural ┆ 0.18  ┆ better  │
    │ frp     ┆ neural ┆ -0.56 ┆ better  │
    └─────────┴────────┴───────┴─────────┘
    """
    frame = _frame(comparison, "comparison")
    missing = [name for name in _COMPARISON_NEEDS if name not in frame.columns]
    if missing:
        msg = (
            f"the comparison lacks the column(s) {missing}; pass the output of rke.compare(...) "
            f"(columns present: {frame.columns})"
        )
        raise ColumnNotFoundError(msg)
    frame = frame.with_columns(pl.col("metric", "baseline", "system").cast(pl.String))
    metrics = frame["metric"].unique(maintain_order=True).to_list()
    if "higher_is_better" in frame.columns:
        higher = pl.col("higher_is_better").cast(pl.Boolean)
    else:
        found = meanings(metrics, lower_is_better=lower_is_better)
        higher = pl.col("metric").replace_strict(
            {m: found[m].higher_is_better for m in metrics}, return_dtype=pl.Boolean
        )
    several = frame["baseline"].n_unique() > 1
    label = (
        pl.concat_str(pl.col("system"), pl.lit(" vs "), pl.col("baseline"))
        if several
        else pl.col("system")
    )
    better = (pl.col("delta") > 0) == pl.col("higher_is_better")
    verdict = (
        pl.when(pl.col("significant").fill_null(value=False) & (pl.col("delta") != 0))
        .then(pl.when(better).then(pl.lit("better")).otherwise(pl.lit("worse")))
        .otherwise(pl.lit("not significant"))
    )
    position = pl.col("delta").cast(pl.Float64)
    if {"test_scale", "baseline_mean", "system_mean"} <= set(frame.columns):
        # A gm metric is tested on logs, and its interval bounds the mean log difference: the
        # point goes on that scale too, log(gm_system / gm_baseline).
        ratio = (pl.col("system_mean") / pl.col("baseline_mean")).cast(pl.Float64).log()
        position = pl.when(pl.col("test_scale") == "log").then(ratio).otherwise(position)
    data = frame.select(
        "metric",
        "baseline",
        "system",
        label.alias("label"),
        *(pl.col(name).cast(pl.Float64) for name in ("delta", "ci_low", "ci_high")),
        pl.col("significant").cast(pl.Boolean),
        higher.alias("higher_is_better"),
        *(name for name in _COMPARISON_KEEPS if name in frame.columns),
        position.alias("position"),
    ).with_columns(verdict.alias("verdict"))
    return data.with_columns(
        _panels(data, several=several).alias("panel"), _axis_labels(data).alias("axis_label")
    ).select(
        *("metric", "baseline", "system", "label", "delta", "ci_low", "ci_high"),
        *("significant", "higher_is_better", "verdict", "position", "panel", "axis_label"),
        *(name for name in _COMPARISON_KEEPS if name in data.columns),
    )


def _panels(data: pl.DataFrame, *, several: bool) -> pl.Series:
    """Each metric's heading: direction, scale and (one baseline) the baseline's value."""
    panels = []
    for row in data.iter_rows(named=True):
        hib = row["higher_is_better"]
        parts = [
            "direction unknown" if hib is None else f"{'higher' if hib else 'lower'} is better"
        ]
        if row.get("test_scale") == "log":
            parts.append("log scale")
        if not several and "baseline_overall" in row:
            parts.append(f"{row['baseline']} = {_number(row['baseline_overall'])}")
        panels.append(f"{row['metric']} ({'; '.join(parts)})")
    return pl.Series(panels, dtype=pl.String)


def _axis_labels(data: pl.DataFrame) -> pl.Series:
    if "system_overall" not in data.columns:
        return data["label"]
    return pl.Series(
        [f"{r['label']} = {_number(r['system_overall'])}" for r in data.iter_rows(named=True)],
        dtype=pl.String,
    )


def _how_tested(data: pl.DataFrame) -> str:
    """``" (paired t-test, Holm, α = 0.05)"`` from the comparison's own columns, if present."""
    from polars_rankeval.compare import CORRECTION_NAMES, TEST_NAMES

    parts = []
    for column, names in (("test", TEST_NAMES), ("correction", CORRECTION_NAMES)):
        if column in data.columns and data[column].n_unique() == 1:
            value = data[column][0]
            if value is not None:
                parts.append(names.get(value, str(value)))
    if "alpha" in data.columns and data["alpha"].n_unique() == 1 and data["alpha"][0] is not None:
        parts.append(f"α = {data['alpha'][0]:g}")
    return f" ({', '.join(parts)})" if parts else ""


def _interval_name(data: pl.DataFrame) -> str:
    """``"95% interval"`` when the comparison says its alpha, else ``"interval"``."""
    if "alpha" in data.columns and data["alpha"].n_unique() == 1 and data["alpha"][0] is not None:
        return f"{1 - data['alpha'][0]:.0%} interval"
    return "interval"


def systems(comparison: Any, *, lower_is_better: LowerIsBetter = None) -> alt.FacetChart:
    """Each system's difference from the baseline, one panel per metric (Altair).

    One panel per metric, headed by its direction and the baseline's value; in it one row per
    system, labelled with its name and its value (``system_overall``: what ``evaluate``
    gives), a point at the difference system − baseline with its interval
    ``ci_low``–``ci_high``, and a rule at zero. Filled points are significant, hollow ones
    are not; blue means significantly better and red significantly worse **by the metric's
    direction** (for ``frp`` a negative difference is better). Each panel has its own scale,
    and gm metrics are drawn on the log scale their test used. :func:`systems_data` returns
    the frame drawn here.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> comparison = pl.DataFrame(
    ...     {
    ...         "metric": ["ndcg@10", "map"],
    ...         "baseline": "bm25",
    ...         "system": "neural",
    ...         "delta": [0.18, -0.01],
    ...         "ci_low": [0.16, -0.03],
    ...         "ci_high": [0.20, 0.01],
    ...         "significant": [True, False],
    ...     }
    ... )
    >>> chart = rke.plot.systems(comparison)  # doctest: +SKIP
    """
    _require_altair("systems")
    import altair as alt  # type: ignore[import-not-found,unused-ignore]

    data = systems_data(comparison, lower_is_better=lower_is_better)
    panels = list(dict.fromkeys(data["panel"].to_list()))
    baselines = list(dict.fromkeys(data["baseline"].to_list()))
    one_baseline = len(baselines) == 1
    versus = baselines[0] if one_baseline else "baseline"
    rows = max(data["panel"].value_counts()["count"].to_list(), default=1)
    y = alt.Y("axis_label:N", sort=None, axis=_axis(alt, None, labelLimit=320))
    color = alt.Color(
        "verdict:N",
        scale=alt.Scale(domain=list(_VERDICTS), range=list(_VERDICT_COLORS)),
        legend=_legend(alt, None, orient="top"),
    )
    x_title = f"difference from {versus} (system − {versus})"
    tooltip = [
        "metric:N",
        "system:N",
        "baseline:N",
        alt.Tooltip("delta:Q", format="+.4f"),
        alt.Tooltip("ci_low:Q", format="+.4f"),
        alt.Tooltip("ci_high:Q", format="+.4f"),
        "verdict:N",
        *(f"{name}:Q" for name in ("p_value", "p_adjusted") if name in data.columns),
    ]
    # Round ticks (zero among them) and a few pixels of room, so an interval never ends on
    # the frame.
    scale = alt.Scale(zero=True, nice=True, padding=12)
    zero = alt.Chart().mark_rule(color="#333333", strokeDash=[4, 3]).encode(x=alt.datum(0))
    bars = (
        alt.Chart()
        .mark_rule(strokeWidth=2)
        .encode(
            x=alt.X("ci_low:Q", scale=scale, axis=_axis(alt, x_title, tickCount=6)),
            x2="ci_high:Q",
            y=y,
            color=color,
        )
    )
    points = (
        alt.Chart()
        .mark_point(size=90, strokeWidth=2, opacity=1)
        .encode(
            x="position:Q",
            y=y,
            color=color,
            fill=alt.condition(
                "datum.significant", alt.Color("verdict:N", legend=None), alt.value("white")
            ),
            tooltip=tooltip,
        )
    )
    subtitle = [
        f"lines: {_interval_name(data)} of the mean difference; "
        "each label gives the system's value over all its queries",
        f"filled: significant{_how_tested(data)}; hollow: not significant; "
        "better/worse follow each metric's direction",
    ]
    header = alt.Header(
        title=None,
        labelAngle=0,
        labelAlign="left",
        labelAnchor="start",
        labelOrient="top",
        labelFontSize=13,
        labelFontWeight="bold",
    )
    faceted: alt.FacetChart = (
        alt.layer(zero, bars, points, data=data)
        .properties(width=WIDTH, height=max(40, 24 * rows))
        .facet(row=alt.Row("panel:N", sort=panels, header=header), spacing=16)
        .resolve_scale(x="independent", y="independent")
        .properties(
            title=_title(
                alt,
                "Difference from the baseline" if one_baseline else "Differences between systems",
                subtitle,
            )
        )
    )
    return _offline(faceted)


# ---------------------------------------------------------------------------------------------
# Distribution of per-query values
# ---------------------------------------------------------------------------------------------


def distribution_data(
    per_query: Any,
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
    per_query
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
    frame = _frame(per_query, "per_query")
    _check_columns(frame, [*(("by", key) for key in keys), ("metric", metric)], "per-query table")
    if not frame.schema[metric].is_numeric():
        msg = f"metric column {metric!r} must be numeric, got {frame.schema[metric]}"
        raise ColumnValueError(msg)
    values = frame.select(*keys, pl.col(metric).cast(pl.Float64).fill_nan(None).alias("__v"))
    infinite = values.filter(pl.col("__v").is_infinite())
    if infinite.height:
        where = (
            infinite.select(_system_name(keys)).to_series().unique().sort().head(3).to_list()
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
    system = _system_name(keys) if keys else pl.lit("all")
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


def distribution(
    per_query: Any,
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
    data, color = _with_run(distribution_data(per_query, metric, by=by, bins=bins), keys)
    summary, found = _summaries(_frame(per_query, "per_query"), metric, keys)
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
            alt.Chart(data)
            .mark_bar(opacity=0.5, binSpacing=0)
            .encode(x=x, x2="bin_end:Q", y=y, tooltip=tooltip, **_color(alt, color, keys, data))
            .properties(width=WIDTH, height=HEIGHT, title=_title(alt, title, subtitle))
        )
        return _offline(chart)
    # Small multiples: one panel per system, its summary in the panel's heading.
    headings = {s: f"{s}: {summary} {_number(m)} ({n:,} queries)" for s, m, n in found}
    assert color is not None
    data = data.with_columns(
        pl.col(color).cast(pl.String).replace_strict(headings, default=None).alias("panel")
    )
    panels = [headings[s] for s, _, _ in found]
    header = alt.Header(title=None, labelFontSize=12, labelLimit=260)
    faceted: alt.FacetChart = (
        alt.Chart(data)
        .mark_bar(binSpacing=0, color=_TABLEAU20[0])
        .encode(x=x, x2="bin_end:Q", y=y, tooltip=tooltip)
        .properties(width=200, height=110)
        .facet(facet=alt.Facet("panel:N", sort=panels, header=header), columns=4, spacing=12)
        .properties(title=_title(alt, title, f"one panel per system ({len(found)} systems)"))
    )
    return _offline(faceted)


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


def precision_recall_data(
    log: Any,
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
    log
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
        log, metrics, by=by, per_query=per_query, **options
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


def precision_recall(
    log: Any,
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
    data = precision_recall_data(log, by=by, recall_levels=recall_levels, **options)
    data, color = _with_run(data, keys)
    unit = alt.Scale(domain=[0, 1])
    tooltip = [
        *(alt.Tooltip(key) for key in keys),
        alt.Tooltip("recall:Q", format=".2f"),
        alt.Tooltip("precision:Q", format=".4f"),
    ]
    # Altair's mark_* methods are untyped (Any), hence the annotated name.
    chart: alt.Chart = (
        alt.Chart(data)
        .mark_line(point=alt.OverlayMarkDef(size=50), strokeWidth=2)
        .encode(
            x=alt.X("recall:Q", scale=unit, axis=_axis(alt, "recall")),
            y=alt.Y("precision:Q", scale=unit, axis=_axis(alt, "interpolated precision")),
            tooltip=tooltip,
            **_color(alt, color, keys, data),
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
