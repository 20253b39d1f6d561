"""The systems chart: the output of :func:`polars_rankeval.compare`, one panel per metric.

Each system's mean difference from the baseline with its interval, significant ones
filled, coloured better/worse by the metric's direction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from polars_rankeval._engine.meaning import Directions, LowerIsBetter, meanings
from polars_rankeval._engine.vocabulary import (
    BASELINE_VALUE,
    CI_HIGH,
    CI_LOW,
    DELTA,
    METRIC,
    N_QUERIES,
    VALUE,
    baseline_column,
    renamed,
)
from polars_rankeval.comparison._pairing import display_order, system_columns, with_pair_names
from polars_rankeval.errors import ColumnNotFoundError, InvalidOptionError
from polars_rankeval.plot._inputs import _frame
from polars_rankeval.plot._style import (
    WIDTH,
    _axis,
    _legend,
    _number,
    _offline,
    _require_altair,
    _title,
)

if TYPE_CHECKING:
    import altair as alt  # type: ignore[import-not-found,unused-ignore]

# ---------------------------------------------------------------------------------------------
# System comparison (output of rke.compare)
# ---------------------------------------------------------------------------------------------

_COMPARISON_NEEDS = (METRIC, DELTA, CI_LOW, CI_HIGH, "significant")
_COMPARISON_KEEPS = (
    N_QUERIES,
    VALUE,
    BASELINE_VALUE,
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
_SOLID, _DASHED = [1, 0], [4, 3]
# each row's two systems by name (their by values, joined for display)
_SYSTEM, _BASELINE = "__rke_system", "__rke_baseline"


@renamed(comparison="data")
def systems_data(
    data: Any, *, lower_is_better: LowerIsBetter = None, direction: Directions = None
) -> pl.DataFrame:
    """The rows of a comparison that :func:`systems` draws.

    Parameters
    ----------
    data
        The output of :func:`~polars_rankeval.compare` (or any frame with its columns
        ``metric``, the systems' ``by`` columns and their ``baseline_<by>`` columns,
        ``delta``, ``ci_low``, ``ci_high`` and ``significant``; ``ci_low``/``ci_high`` bound the
        mean difference system − baseline, on the log scale where ``test_scale`` is ``"log"``).
    lower_is_better, direction
        Only for a frame without ``higher_is_better``: columns whose lower values are better
        (a list), or ``{metric: "higher" | "lower"}``; other metrics' directions are looked up
        by name. Compare's output has ``higher_is_better`` on every row (its own ``direction=``
        included), and the chart draws that: these options are refused then, so a chart never
        contradicts the comparison it draws.

    Returns
    -------
    DataFrame
        The rows in their order: ``metric``, the ``by`` and ``baseline_<by>`` columns,
        ``label`` (the system's name, its ``by`` values joined with ``" / "``, or ``"system
        vs baseline"`` when there are several baselines), ``delta``, ``ci_low``,
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
    ...         "system": "neural",
    ...         "baseline_system": "bm25",
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
    frame = _frame(data, "data")
    missing = [name for name in _COMPARISON_NEEDS if name not in frame.columns]
    keys = system_columns(frame.columns)
    if not keys:
        missing.append("the systems' by columns and their baseline_<by> columns")
    if missing:
        msg = (
            f"the comparison lacks the column(s) {missing}; pass the output of rke.compare(...) "
            f"(columns present: {frame.columns})"
        )
        raise ColumnNotFoundError(msg)
    named = [*keys, *(baseline_column(key) for key in keys)]
    frame = with_pair_names(frame, system=_SYSTEM, baseline=_BASELINE).with_columns(
        pl.col(METRIC).cast(pl.String)
    )
    metrics = frame["metric"].unique(maintain_order=True).to_list()
    if "higher_is_better" in frame.columns:
        if lower_is_better is not None or direction is not None:
            msg = (
                "the comparison states each metric's direction (column higher_is_better); "
                "pass direction= to rke.compare(...) instead of to the chart"
            )
            raise InvalidOptionError(msg)
        higher = pl.col("higher_is_better").cast(pl.Boolean)
    else:
        found = meanings(metrics, lower_is_better=lower_is_better, direction=direction)
        higher = pl.col("metric").replace_strict(
            {m: found[m].higher_is_better for m in metrics}, return_dtype=pl.Boolean
        )
    several = frame[_BASELINE].n_unique() > 1
    label = (
        pl.concat_str(pl.col(_SYSTEM), pl.lit(" vs "), pl.col(_BASELINE))
        if several
        else pl.col(_SYSTEM)
    )
    better = (pl.col("delta") > 0) == pl.col("higher_is_better")
    verdict = (
        pl.when(pl.col("significant").fill_null(value=False) & (pl.col("delta") != 0))
        .then(pl.when(better).then(pl.lit("better")).otherwise(pl.lit("worse")))
        .otherwise(pl.lit("not significant"))
    )
    position = pl.col("delta").cast(pl.Float64)
    if {"test_scale", VALUE, BASELINE_VALUE} <= set(frame.columns):
        # A gm metric is tested on logs, and its interval bounds the mean log difference: the
        # point goes on that scale too, log(gm_system / gm_baseline).
        ratio = (pl.col(VALUE) / pl.col(BASELINE_VALUE)).cast(pl.Float64).log()
        position = pl.when(pl.col("test_scale") == "log").then(ratio).otherwise(position)
    rows = frame.select(
        METRIC,
        *named,
        _BASELINE,
        label.alias("label"),
        *(pl.col(name).cast(pl.Float64) for name in ("delta", "ci_low", "ci_high")),
        pl.col("significant").cast(pl.Boolean),
        higher.alias("higher_is_better"),
        *(name for name in _COMPARISON_KEEPS if name in frame.columns),
        position.alias("position"),
    ).with_columns(verdict.alias("verdict"))
    return rows.with_columns(
        _panels(rows, several=several).alias("panel"), _axis_labels(rows).alias("axis_label")
    ).select(
        METRIC,
        *named,
        *("label", DELTA, CI_LOW, CI_HIGH),
        *("significant", "higher_is_better", "verdict", "position", "panel", "axis_label"),
        *(name for name in _COMPARISON_KEEPS if name in rows.columns),
    )


def _system_keys(rows: pl.DataFrame) -> list[str]:
    """The ``by`` columns of the rows, then their ``baseline_<by>`` columns."""
    keys = system_columns(rows.columns)
    return [*keys, *(baseline_column(key) for key in keys)]


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
            parts.append(f"{row[_BASELINE]} = {_number(row['baseline_overall'])}")
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
    from polars_rankeval.comparison import CORRECTION_NAMES, TEST_NAMES

    parts = []
    for column, names in (("test", TEST_NAMES), ("correction", CORRECTION_NAMES)):
        if column in data.columns and data[column].n_unique() == 1:
            value = data[column][0]
            if value is not None:
                parts.append(names.get(value, str(value)))
    if "alpha" in data.columns and data["alpha"].n_unique() == 1 and data["alpha"][0] is not None:
        parts.append(f"α = {data['alpha'][0]:g}")
    return f" ({', '.join(parts)})" if parts else ""


def _unadjusted(data: pl.DataFrame) -> str:
    """Says that the interval is not corrected when the significance is."""
    if "correction" not in data.columns or data["correction"].n_unique() != 1:
        return ""
    correction = data["correction"][0]
    if correction in (None, "none"):
        return ""
    from polars_rankeval.comparison import CORRECTION_NAMES

    name = CORRECTION_NAMES.get(correction, str(correction))
    return f" (not {name}-adjusted: a dashed one may clear zero)"


def _interval_name(data: pl.DataFrame) -> str:
    """``"95% interval"`` when the comparison says its alpha, else ``"interval"``."""
    if "alpha" in data.columns and data["alpha"].n_unique() == 1 and data["alpha"][0] is not None:
        return f"{1 - data['alpha'][0]:.0%} interval"
    return "interval"


@renamed(comparison="data")
def systems(
    data: Any, *, lower_is_better: LowerIsBetter = None, direction: Directions = None
) -> alt.FacetChart:
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
    ...         "system": "neural",
    ...         "baseline_system": "bm25",
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

    drawn_rows = systems_data(data, lower_is_better=lower_is_better, direction=direction)
    # the systems' names, their by values joined for display (tooltip, order, axis title)
    shown = with_pair_names(drawn_rows, system=_SYSTEM, baseline=_BASELINE)
    panels = list(dict.fromkeys(shown["panel"].to_list()))
    baselines = list(dict.fromkeys(shown[_BASELINE].to_list()))
    one_baseline = len(baselines) == 1
    versus = baselines[0] if one_baseline else "baseline"
    rows = max(shown["panel"].value_counts()["count"].to_list(), default=1)
    # Systems listed as the report lists them (compare's rows are in byte order).
    rank = {name: i for i, name in enumerate(display_order([*baselines, *shown[_SYSTEM]]))}
    drawn = sorted(
        shown.iter_rows(named=True), key=lambda r: (rank[r[_BASELINE]], rank[r[_SYSTEM]])
    )
    order = list(dict.fromkeys(row["axis_label"] for row in drawn))
    y = alt.Y("axis_label:N", sort=order, axis=_axis(alt, None, labelLimit=320))
    color = alt.Color(
        "verdict:N",
        scale=alt.Scale(domain=list(_VERDICTS), range=list(_VERDICT_COLORS)),
        legend=_legend(alt, None, orient="top"),
    )
    x_title = f"difference from {versus} (system − {versus})"
    tooltip = [
        "metric:N",
        # the two systems' by columns, as compare names them
        *(alt.Tooltip(f"{name}:N") for name in _system_keys(drawn_rows)),
        alt.Tooltip("delta:Q", format="+.4f"),
        alt.Tooltip("ci_low:Q", format="+.4f"),
        alt.Tooltip("ci_high:Q", format="+.4f"),
        "verdict:N",
        *(f"{name}:Q" for name in ("p_value", "p_adjusted") if name in shown.columns),
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
            # The line tells the decision as the point does: dashed where not significant, so
            # an unadjusted interval that clears zero is not read as a significant one.
            strokeDash=alt.condition("datum.significant", alt.value(_SOLID), alt.value(_DASHED)),
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
        f"lines: {_interval_name(shown)} of the mean difference{_unadjusted(shown)}; "
        "each label gives the system's value over all its queries",
        f"filled point, solid line: significant{_how_tested(shown)}; hollow, dashed: not "
        "significant; better/worse follow each metric's direction",
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
        alt.layer(zero, bars, points, data=drawn_rows)
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
