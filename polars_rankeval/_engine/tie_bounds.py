"""Tie bounds inside evaluate: which lists have ties that matter, their ranges, the warning.

A run whose scores tie has no single ranking; each metric has a range over the orders of its
tied rows. Here the engine finds the lists whose tie groups mix labels (:func:`mixed_lists`),
evaluates each tie-sensitive metric on them under the best and worst order
(:func:`with_tie_ranges`), sums the ranges per system (:func:`range_sums`) and warns with a
:class:`~polars_rankeval.TieWarning` when they move a reported mean by more than
``tie_warning``. :func:`polars_rankeval.tie_report` (in :mod:`polars_rankeval.ties`) shows the
same ranges as a table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

import polars as pl

from polars_rankeval._engine.context import bound_preference
from polars_rankeval._engine.plan import per_query_plan
from polars_rankeval._engine.settings import Settings
from polars_rankeval._engine.warn import Site, user_site, warn_at
from polars_rankeval.errors import InvalidOptionError, TieWarning
from polars_rankeval.metrics._base import Metric, check_tie_bound

FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)

if TYPE_CHECKING:
    from polars_rankeval._engine.columns import Columns
    from polars_rankeval._engine.tables import Tables
    from polars_rankeval._engine.validation import CheckedIn
    from polars_rankeval.conventions import NegativeLabels

MODES = ("trec", "expected", "optimistic", "pessimistic")
_SEPARATOR = "\x1f"
# Prefix of the hidden per-query tie-range columns (one per tie-sensitive metric).
TIE_RANGE = "__rke_tie_range\x1f"
_COUNTED = "__rke_tie_count\x1f"  # range_sums: the lists a metric evaluates
_DISTINCT, _ROWS = "__rke_distinct", "__rke_rows"
_PREFERENCE, _MIXED = "__rke_preference", "__rke_mixed"


def check_tie_warning(value: object) -> float | None:
    """Validate ``tie_warning=``: None or a non-negative number."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        msg = f"option tie_warning= must be None or a number >= 0, got {value!r}"
        raise InvalidOptionError(msg)
    return float(value)


def bound_refusal(label: str, metric: Metric) -> str | None:
    """Why ``metric`` has no best/worst case over tie orders, or None when it has."""
    if metric.level != "query":
        return "a per-system metric has no per-list order to bound"
    if metric.finish is not None and metric.tie_bounds is None:
        return "its value is finished over whole lists, which the bounds do not reorder"
    try:
        check_tie_bound(label, metric, "optimistic")
    except InvalidOptionError as error:
        return str(error).split(": ", 1)[1].split("; evaluate it", 1)[0]
    return None


def tie_sensitive(
    resolved: Sequence[tuple[str, Metric]], settings: Settings
) -> list[tuple[str, Metric]]:
    """The metrics whose reported trec-rule mean a tie order can move (and can be bounded)."""
    return [
        (label, metric)
        for label, metric in resolved
        if (metric.ties or settings.ties) == "trec"
        and metric.summary == "mean"
        and bound_refusal(label, metric) is None
    ]


def in_bound(label: str, metric: Metric, mode: str) -> Metric:
    """``metric`` under tie mode ``mode``, named after the user's ``label`` (unique in a call)."""
    return replace(metric, name=f"{label}{_SEPARATOR}{mode}", ties=mode)  # type: ignore[arg-type]


def mixed_lists(
    lf: pl.LazyFrame, columns: Columns, negative_labels: NegativeLabels
) -> pl.LazyFrame:
    """The keys of the lists with a group of tied retrieved scores whose rows differ.

    Rows differ when the bounds would order them (:func:`bound_preference`: by label, unjudged
    rows between the positive labels and the judged zeros). A tie group whose rows all carry
    the same preference is ordered the same way by the best case, the worst case and trec_eval
    (by item), so it cannot move any metric: a list without a mixed group is skipped by the
    tie check, and its range is exactly 0. (An unjudged row and a judged zero both have gain 0,
    yet their order moves ``fall_out@k``: they differ.) Read on the raw columns; a label that
    is not a whole number is refused by the evaluation itself, and a duplicated (query, item)
    pair that ``duplicates=`` resolves can only flag a list too many. ``+ 0.0`` makes -0.0
    and 0.0 one score, as they tie in the order (NaN ties NaN in both).

    A list has a mixed group exactly when its distinct scores, counted once per preference
    and added up, outnumber its distinct scores: a score counted under two preferences is a
    tie group holding both. Grouping by (list, preference) makes a few groups per list; the
    former grouping by (list, score) made about one per row (measured on 17 TREC runs x 100
    topics x 1,000 rows, every list mixed: 0.13 s against 0.33 s; 1M generated rows, 87% of
    the lists mixed: 0.07 s against 0.10 s).
    """
    score = pl.col(columns.score) + 0.0
    label = pl.col(columns.relevance).cast(pl.Float64, strict=False)
    judged = label >= 0 if negative_labels == "unjudged" else label.is_not_null()
    preference = bound_preference(
        {"label": label, "judged": judged.fill_null(value=False)}, "optimistic"
    )
    partition = list(columns.partition)
    retrieved = lf.filter(pl.col(columns.score).is_not_null())
    # First the lists with any tie (one small aggregation each): a list whose scores are all
    # distinct has no tie group at all, so the (list, preference) groups are counted on the
    # tied lists only (at 1M rows without ties: 0.03 s, against 0.07 s counting every list).
    distinct = retrieved.group_by(partition).agg(
        score.n_unique().alias(_DISTINCT), pl.len().alias(_ROWS)
    )
    tied = distinct.filter(pl.col(_DISTINCT) < pl.col(_ROWS)).select(*partition, _DISTINCT)
    rows = retrieved.join(tied.select(partition), on=partition, how="semi", nulls_equal=True)
    per_preference = rows.group_by(*partition, preference.alias(_PREFERENCE)).agg(
        score.n_unique().alias(_MIXED)
    )
    counted = per_preference.group_by(partition).agg(pl.col(_MIXED).sum())
    mixed = counted.join(tied, on=partition, how="inner", nulls_equal=True)
    return mixed.filter(pl.col(_MIXED) > pl.col(_DISTINCT)).select(partition)


def range_column(label: str) -> str:
    """The hidden per-query column holding ``label``'s tie range (best minus worst value)."""
    return f"{TIE_RANGE}{label}"


def with_tie_ranges(
    plan: FrameT,
    lf: pl.LazyFrame,
    columns: Columns,
    resolved: Sequence[tuple[str, Metric]],
    settings: Settings,
    *,
    source: pl.LazyFrame | None,
    checked_in: CheckedIn = "frame",
    tables: Tables | None,
) -> FrameT:
    """``plan`` plus a hidden tie-range column per tie-sensitive metric.

    The range is ``|optimistic - pessimistic|`` per list, evaluated only on the lists whose tie
    groups mix labels (:func:`mixed_lists`); every other list gets 0, its exact range. A lazy
    ``plan`` gets the ranges in the same plan (the input is read once: the
    caller caches it). A collected ``plan`` (evaluate's in-memory
    DataFrame, one pass) gets them from a second plan over the same frame, run after the
    first, so the two peaks of memory do not add up: 745 against 947 MB on a tied 3M-row
    log (benchmarks/README.md).
    """
    partition = list(columns.partition)
    metrics = tie_sensitive(resolved, settings)
    if not metrics:
        return plan
    bounded = [
        (f"{label}{_SEPARATOR}{mode}", in_bound(label, metric, mode))
        for label, metric in metrics
        for mode in ("optimistic", "pessimistic")
    ]
    # Two branches of one plan over the same input (read once: the caller
    # caches it): the metrics, and the bounds over the lists whose tie groups mix labels.
    mixed = mixed_lists(lf, columns, settings.negative_labels)
    subset = lf.join(mixed, on=partition, how="semi", nulls_equal=True)
    values = per_query_plan(
        subset,
        columns,
        list(bounded),
        settings,
        source=source,
        checked_in=checked_in,
        tables=tables,
    )
    ranges = values.select(
        *partition,
        *(
            (pl.col(f"{label}{_SEPARATOR}optimistic") - pl.col(f"{label}{_SEPARATOR}pessimistic"))
            .abs()
            .alias(range_column(label))
            for label, _ in metrics
        ),
    )
    # 0 on an evaluated list without mixed ties (its exact range); null where the metric
    # evaluates no list (a mixed call), so each metric's mean range is over its own lists
    zero = [
        pl.when(pl.col(label).is_not_null())
        .then(pl.col(range_column(label)).fill_null(0.0))
        .alias(range_column(label))
        for label, _ in metrics
    ]
    if isinstance(plan, pl.DataFrame):
        found = plan.join(ranges.collect(), on=partition, how="left", nulls_equal=True)
        return found.with_columns(zero).sort(partition)
    joined = plan.join(ranges, on=partition, how="left", nulls_equal=True)
    return joined.with_columns(zero).sort(partition)


def range_columns(frame: pl.DataFrame | pl.LazyFrame) -> list[str]:
    """The hidden tie-range columns of a per-query frame."""
    return [name for name in frame.collect_schema().names() if name.startswith(TIE_RANGE)]


def range_sums(per_query: pl.DataFrame, by: Sequence[str]) -> pl.DataFrame:
    """Per ``by`` group: ``n`` (the evaluated lists), each tie-range column's sum and count.

    The count (``_COUNTED`` + name) is the lists that metric evaluates (a mixed call leaves
    the others null). Sums of several frames (evaluate's passes) add up: concatenate them and
    sum again.
    """
    hidden = range_columns(per_query)
    sums = [
        pl.len().alias("n"),
        *(pl.col(name).sum() for name in hidden),
        *(pl.col(name).count().alias(_COUNTED + name) for name in hidden),
    ]
    if not by:
        return per_query.select(sums)
    return per_query.group_by(list(by)).agg(sums)


def tie_ranges(per_query: pl.DataFrame, by: Sequence[str], *, summed: bool = False) -> pl.DataFrame:
    """How far the order of tied rows can move each system's mean: ``Σ range / n`` per metric.

    ``per_query`` holds the hidden tie-range columns (``evaluate_frame(keep_tie_ranges=True)``),
    or is the concatenation of :func:`range_sums` frames (``summed=True``). The result has the
    ``by`` keys, ``n`` (the evaluated lists) and one column per metric label: a mean over
    ``n`` lists moves by at most the sum of its lists' ranges over ``n``.
    """
    by = list(by)
    hidden = range_columns(per_query)
    if summed:
        counted = [_COUNTED + name for name in hidden]
        totals = [pl.col(name).sum() for name in ("n", *hidden, *counted)]
        per_query = per_query.group_by(by).agg(totals) if by else per_query.select(totals)
    else:
        per_query = range_sums(per_query, by)
    moved = per_query.select(
        *by,
        "n",
        *(
            pl.when(pl.col(_COUNTED + name) > 0)
            .then(pl.col(name) / pl.col(_COUNTED + name))
            .otherwise(0.0)
            .alias(name.removeprefix(TIE_RANGE))
            for name in hidden
        ),
    )
    return moved.sort(by, nulls_last=True) if by else moved


def warn_if_ties_move_means(
    moved: pl.DataFrame,
    by: Sequence[str],
    *,
    limit: float,
    site: Site,
) -> None:
    """Warn once (a :class:`TieWarning`) if a tie order moves a mean by more than ``limit``.

    ``moved`` is :func:`tie_ranges`' frame; ``site`` the user's line (:func:`user_site`).
    """
    by = list(by)
    labels = [name for name in moved.columns if name not in {*by, "n"}]
    found = []
    for row in moved.iter_rows(named=True):
        # Text values quoted (a trailing space shows), others as printed: date=2024-06-01.
        system = ", ".join(
            f"{key}={row[key]!r}" if isinstance(row[key], str) else f"{key}={row[key]}"
            for key in by
        )
        for label in labels:
            spread = row[label] or 0.0
            if spread > limit:
                found.append(f"{label} by up to {spread:.4f}" + (f" ({system})" if system else ""))
    if not found:
        return
    shown = "; ".join(found[:6]) + (f"; and {len(found) - 6} more" if len(found) > 6 else "")
    warn_at(
        f"tied scores: the order of tied rows can move {shown} (best minus worst tie "
        f"order, above tie_warning={limit:g}); rke.tie_report(...) (rank-eval --tie-report) "
        "shows the range, and "
        "ties='expected' gives the mean over all orders",
        TieWarning,
        site,
    )


def warn_about_ties(
    per_query: pl.DataFrame,
    by: Sequence[str],
    *,
    limit: float | None,
    site: Site | None = None,
) -> pl.DataFrame:
    """Evaluate's tie check over a per-query frame: warn if due, drop the tie-range columns.

    ``limit`` None only drops them; ``site`` is the user's line (:func:`user_site` by default).
    """
    hidden = range_columns(per_query)
    if not hidden:
        return per_query
    if limit is not None:
        moved = tie_ranges(per_query, by)
        warn_if_ties_move_means(moved, by, limit=limit, site=site or user_site())
    return per_query.drop(hidden)
