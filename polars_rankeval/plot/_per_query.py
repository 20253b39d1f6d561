"""Per-query differences of two systems: sorted, binned, with win/tie/loss counts.

:func:`per_query_delta` pairs the queries of a baseline and a system in a per-query
table and draws each query's difference, wins by the metric's direction first.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from polars_rankeval._engine.meaning import Directions, LowerIsBetter
from polars_rankeval._engine.vocabulary import METRIC, baseline_column, renamed
from polars_rankeval.comparison._pairing import system_names, system_value
from polars_rankeval.errors import ColumnValueError, InvalidOptionError
from polars_rankeval.plot._inputs import (
    _check_columns,
    _frame,
    _keys,
    _meaning,
)
from polars_rankeval.plot._style import (
    HEIGHT,
    WIDTH,
    _axis,
    _legend,
    _offline,
    _require_altair,
    _title,
)

if TYPE_CHECKING:
    import altair as alt  # type: ignore[import-not-found,unused-ignore]

#: ``|d|`` at or below this, relative to the values, is a tie (the rule ``compare`` uses), so
#: floating-point noise between two equal scores is never a win or a loss.
TIE_TOLERANCE = 1e-12
_OUTCOMES = ("win", "tie", "loss")
_OUTCOME_COLORS = ("#4c78a8", "#7f7f7f", "#e45756")


# ---------------------------------------------------------------------------------------------
# Per-query differences
# ---------------------------------------------------------------------------------------------


@renamed(per_query="data")
def per_query_delta_data(
    data: Any,
    metric: str,
    baseline: object,
    system: object,
    *,
    by: str | Sequence[str] = "system",
    query: str = "query",
    max_bars: int = 500,
    lower_is_better: LowerIsBetter = None,
    direction: Directions = None,
) -> pl.DataFrame:
    """Per-query differences system − baseline, sorted and binned (:func:`per_query_delta`).

    Queries are paired by ``query``; a query that only one side has a value for (no row, or a
    null/NaN value) is dropped and counted in ``n_dropped``. A difference within ``1e-12`` of
    zero (relative to the values) is a tie, as in :func:`~polars_rankeval.compare`.

    A win is a query where the system is better by the metric's direction (looked up as
    :func:`~polars_rankeval.compare` does): a higher value for ``ndcg@10``, a lower one for
    ``frp`` or ``mean_rank``, or as ``direction=`` (or ``lower_is_better``) declares it. A
    metric without a direction (a count such as ``num_ret``) is refused.

    The differences are sorted (largest win first, ties by query id). With more than
    ``max_bars`` paired queries, consecutive queries are binned, each bin holding at most
    ``ceil(n / max_bars)`` queries of **one** outcome: the win/tie/loss counts (the sums of
    ``n_queries`` per outcome) stay exact, and a bar of width ``n_queries`` and height
    ``delta`` (the bin's mean) keeps the area of the differences it stands for.

    Parameters
    ----------
    data
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
        For another tool's table: the column(s) whose lower values are better (a list).
        Our metrics' columns know their direction.
    direction
        ``{metric: "higher" | "lower"}``: the metric's direction for this chart, overriding
        our metric's own declaration (``{"arp@10": "higher"}``), as in
        :func:`~polars_rankeval.compare`.

    Returns
    -------
    DataFrame
        One row per bin, in sorted order: ``outcome`` (``"win"``, ``"tie"``, ``"loss"``),
        ``first`` and ``last`` (1-based positions of the bin's queries in the sorted order),
        ``n_queries``, ``delta`` (mean difference of the bin), ``delta_min``, ``delta_max``,
        ``query`` (the query id when the bin holds one query, else null), and the constant
        columns ``metric``, the system's ``by`` columns, the baseline's ``baseline_<by>``
        columns (the names compare gives them) and ``n_dropped``.

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
    frame = _frame(data, "data")
    _check_columns(
        frame,
        [*(("by", key) for key in keys), ("query", query), ("metric", metric)],
        "per-query table",
    )
    if not frame.schema[metric].is_numeric():
        msg = f"metric column {metric!r} must be numeric, got {frame.schema[metric]}"
        raise ColumnValueError(msg)
    lower = _meaning(metric, lower_is_better, direction).direction == "lower"
    named = frame.select(
        system_names(keys).alias("__system"),
        pl.col(query),
        pl.col(metric).cast(pl.Float64).fill_nan(None).alias("__value"),
    )
    systems_present = named["__system"].unique().drop_nulls().sort().to_list()
    base_name, system_name = system_value(baseline), system_value(system)
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
        pl.lit(metric).alias(METRIC),
        # the two systems as compare names them: by columns, then baseline_<by> columns
        *(_keyed(system, keys, frame, lambda key: key)),
        *(_keyed(baseline, keys, frame, baseline_column)),
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


def _keyed(
    value: object, keys: Sequence[str], frame: pl.DataFrame, name: Callable[[str], str]
) -> list[pl.Expr]:
    """A system (a ``by`` value, or a tuple of them) as one literal column per ``by`` column."""
    values = value if isinstance(value, tuple) else (value,)
    return [
        pl.lit(part).cast(frame.schema[key]).alias(name(key))
        for key, part in zip(keys, values, strict=True)
    ]


def _outcome_counts(data: pl.DataFrame) -> dict[str, int]:
    counts = data.group_by("outcome").agg(pl.col("n_queries").sum())
    found = dict(zip(counts["outcome"].to_list(), counts["n_queries"].to_list(), strict=True))
    return {outcome: int(found.get(outcome, 0)) for outcome in _OUTCOMES}


@renamed(per_query="data")
def per_query_delta(
    data: Any,
    metric: str,
    baseline: object,
    system: object,
    *,
    by: str | Sequence[str] = "system",
    query: str = "query",
    max_bars: int = 500,
    lower_is_better: LowerIsBetter = None,
    direction: Directions = None,
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

    rows = per_query_delta_data(
        data,
        metric,
        baseline,
        system,
        by=by,
        query=query,
        max_bars=max_bars,
        lower_is_better=lower_is_better,
        direction=direction,
    )
    chosen = _meaning(metric, lower_is_better, direction).direction
    counts = _outcome_counts(rows)
    paired = sum(counts.values())
    n_dropped = int(rows["n_dropped"][0]) if rows.height else 0
    # Each bin's mean times its size gives back the exact sum of the differences.
    total = float((rows["delta"] * rows["n_queries"]).sum()) if paired else 0.0
    mean = f"{total / paired:+.4f}" if paired else "n/a"
    base_name, system_name = system_value(baseline), system_value(system)
    subtitle = [
        f"{counts['win']:,} wins · {counts['tie']:,} ties · {counts['loss']:,} losses "
        f"of {paired:,} paired queries; mean Δ = {mean}",
        f"{n_dropped:,} queries dropped (a value on one side only); "
        f"{chosen} is better for {metric}: a win is a query where {system_name} is better",
    ]
    binned = rows.height < paired
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
        alt.Chart(rows)
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
