"""How much can ties move a number: ``tie_report`` and evaluate's tie warning.

A run whose scores tie (rounded scores, a BM25 run with few distinct values, a classifier's
0/1 output) has no single ranking: trec_eval breaks ties by item id, which is arbitrary.
Each metric then has a range over the orders of its tied rows (Yang et al., "Reliable
Evaluation Protocol for Low-Precision Retrieval", ACL 2026, and their tie-aware-retrieval-metrics
package): its best case (``ties="optimistic"``: higher labels first inside each tie group), its
worst case (``ties="pessimistic"``) and, where a closed form exists, its expectation over all
orders (``ties="expected"``).

:func:`tie_report` puts those side by side with the trec value, per system (and per query), with
the share of the top-k positions that sit in a tie group. ``evaluate`` warns (a
:class:`~polars_rankeval.TieWarning`) when the best and worst orders move a reported mean by more
than ``tie_warning``; it evaluates the bounds only on the lists that have ties.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

import polars as pl

from polars_rankeval._plan import per_query_plan
from polars_rankeval._settings import Settings, settings_for
from polars_rankeval._warn import Site, user_site, warn_at
from polars_rankeval.context import RankingContext, bound_preference
from polars_rankeval.errors import InvalidOptionError, TieWarning
from polars_rankeval.metrics._base import Metric, Partials, check_tie_bound

FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)

if TYPE_CHECKING:
    from polars_rankeval._columns import Columns
    from polars_rankeval.conventions import NegativeLabels
    from polars_rankeval.tables import Tables
    from polars_rankeval.validation import CheckedIn

MODES = ("trec", "expected", "optimistic", "pessimistic")
_SEPARATOR = "\x1f"
# Prefix of the hidden per-query tie-range columns (one per tie-sensitive metric).
TIE_RANGE = "__rke_tie_range\x1f"
_COUNTED = "__rke_tie_count\x1f"  # range_sums: the lists a metric evaluates
_TIED_SCORE, _MIXED = "__rke_tied_score", "__rke_mixed"
# The engine's canonical name of a metric with a cutoff: ``family@k``, then its options
# (``ndcg@10(gain=exp)``); trec_eval spellings (``P_10``, ``ndcg_cut_10``) resolve to it.
_CUTOFF = re.compile(r"^[^@(]*@(\d+)(?:\(|$)")


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


def _in_bound(label: str, metric: Metric, mode: str) -> Metric:
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
    yet their order moves ``fall_out@k``: they differ.) Read on the raw columns, one
    aggregation per (list, score), which cost half of what a window over the lists did; a
    label that is not a whole number is refused by the evaluation itself, and a duplicated
    (query, item) pair that ``duplicates=`` resolves can only flag a list too many. ``+ 0.0``
    makes -0.0 and 0.0 one score, as they tie in the order.
    """
    score = pl.col(columns.score)
    label = pl.col(columns.relevance).cast(pl.Float64, strict=False)
    judged = label >= 0 if negative_labels == "unjudged" else label.is_not_null()
    preference = bound_preference(
        {"label": label, "judged": judged.fill_null(value=False)}, "optimistic"
    )
    partition = list(columns.partition)
    retrieved = lf.filter(score.is_not_null())
    # First the lists with any tie (one small aggregation each): the (list, score) groups of
    # the others would fill a hash table of about one group per row (+124 MB against +72 MB
    # at 1M rows with 37% of the lists tied, for the same time).
    tied = retrieved.group_by(partition).agg(((score + 0.0).n_unique() < pl.len()).alias(_MIXED))
    rows = retrieved.join(
        tied.filter(pl.col(_MIXED)).select(partition), on=partition, how="semi", nulls_equal=True
    )
    groups = rows.group_by(*partition, (score + 0.0).alias(_TIED_SCORE))
    mixed = groups.agg((preference.min() < preference.max()).alias(_MIXED))
    return mixed.filter(pl.col(_MIXED)).select(partition).unique()


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
    ``plan`` gets the ranges in the same plan (the input is read once: per_query_plan caches
    it). A collected ``plan`` (evaluate's in-memory DataFrame, one pass) gets them from a
    second plan over the same frame, run after the first, so the two peaks of memory do not
    add up: 745 against 947 MB on a tied 3M-row log (benchmarks/README.md).
    """
    partition = list(columns.partition)
    metrics = tie_sensitive(resolved, settings)
    if not metrics:
        return plan
    bounded = [
        (f"{label}{_SEPARATOR}{mode}", _in_bound(label, metric, mode))
        for label, metric in metrics
        for mode in ("optimistic", "pessimistic")
    ]
    # Two branches of one plan over the same input (read once: per_query_plan caches it): the
    # metrics, and the bounds over the lists whose tie groups mix labels.
    mixed = mixed_lists(lf, columns, settings.negative_labels)
    subset = lf.join(mixed, on=partition, how="semi", nulls_equal=True)
    values = per_query_plan(
        subset, columns, bounded, settings, source=source, checked_in=checked_in, tables=tables
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

    ``per_query`` holds the hidden tie-range columns (evaluate's ``_tie_ranges=True``), or is
    the concatenation of :func:`range_sums` frames (``summed=True``). The result has the
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


def split_tie_ranges(
    per_query: pl.DataFrame, keys: Sequence[str]
) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """A per-query frame without its hidden tie-range columns, and those columns (or None).

    The second frame has the ``keys`` (the systems' columns and the query) beside the ranges,
    one column per metric label (the prefix removed).
    """
    hidden = range_columns(per_query)
    if not hidden:
        return per_query, None
    ranges = per_query.select(
        *keys, *(pl.col(name).alias(name.removeprefix(TIE_RANGE)) for name in hidden)
    )
    return per_query.drop(hidden), ranges


def _long_ranges(
    ranges: pl.DataFrame, keys: Sequence[str], segments: Sequence[str], query: str
) -> pl.DataFrame:
    """``segments, __system, query, metric, r``: one row per (system, query, metric)."""
    from polars_rankeval.compare._pairing import system_names  # compare imports this module

    labels = [name for name in ranges.columns if name not in {*keys, *segments, query}]
    named = ranges.select(*segments, system_names(keys).alias("__system"), query, *labels)
    numeric = named.with_columns(pl.col(labels).cast(pl.Float64))
    return numeric.unpivot(
        labels, index=[*segments, "__system", query], variable_name="metric", value_name="r"
    )


def with_tie_flags(
    compared: pl.DataFrame,
    ranges: pl.DataFrame | None,
    *,
    keys: Sequence[str],
    segments: Sequence[str] = (),
    query: str = "query",
) -> pl.DataFrame:
    """``compared`` (compare's rows) plus ``tie_range`` and ``tie_flip``.

    ``tie_range``: how far the order of tied scores can move the row's Δ, at most: the sum over
    the compared queries of both systems' per-query tie ranges (best minus worst value), over
    ``n_queries``; 0 without mixed ties, null for a metric the bounds do not cover (or no
    log). ``tie_flip``: within that range Δ could change sign (``|Δ| <= tie_range``) or the
    interval could reach or leave 0 (its nearer end within ``tie_range`` of 0), so the
    verdict could change with the tie order (not where every paired query has equal values:
    the same ranking on both sides, whose ties break alike); evaluate the run with
    ``ties="expected"``, or break the ties in the scores, before trusting it. (A shift of
    every query's difference by ``tie_range`` moves a paired interval by as much; reordering
    also changes its spread, so the flag is a warning sign, not a proof.)
    """
    segments = list(segments)
    pair = [*segments, "metric", "baseline", "system"]
    empty = pl.lit(None, dtype=pl.Float64)
    if ranges is None or compared.is_empty():
        return compared.with_columns(
            empty.alias("tie_range"), pl.lit(None, dtype=pl.Boolean).alias("tie_flip")
        )
    long = _long_ranges(ranges, keys, segments, query)
    rows = compared.select(*pair).unique()
    on = [*segments, "metric"]
    own = rows.join(
        long.rename({"__system": "system", "r": "r_system"}),
        on=[*on, "system"],
        nulls_equal=True,
    )
    other = rows.join(
        long.rename({"__system": "baseline", "r": "r_baseline"}),
        on=[*on, "baseline"],
        nulls_equal=True,
    )
    both = own.join(other, on=[*pair, query], how="full", coalesce=True, nulls_equal=True)
    moved = both.group_by(pair).agg(
        (pl.col("r_system").fill_null(0.0) + pl.col("r_baseline").fill_null(0.0))
        .sum()
        .alias("__moved")
    )
    flagged = compared.join(moved, on=pair, how="left", nulls_equal=True, maintain_order="left")
    n = pl.col("n_queries").cast(pl.Float64)
    tie_range = pl.when(n > 0).then(pl.col("__moved") / n)
    nearer = pl.min_horizontal(pl.col("ci_low").abs(), pl.col("ci_high").abs())
    # Every paired query equal (no win, no loss): the same ranking on both sides (a run gated
    # against itself), whose ties break alike; nothing to flip.
    differ = (pl.col("wins") + pl.col("losses")) > 0
    flip = (
        (pl.col("tie_range") > 0)
        & differ
        & (
            (pl.col("delta").abs() <= pl.col("tie_range"))
            | (nearer <= pl.col("tie_range")).fill_null(value=False)
        )
    )
    return (
        flagged.with_columns(tie_range.alias("tie_range"))
        .with_columns(flip.alias("tie_flip"))
        .drop("__moved")
    )


def tie_notes(rows: pl.DataFrame, *, system: str | None = "system") -> list[str]:
    """One sentence per row whose verdict could change with the order of tied scores.

    ``rows`` holds ``metric``, ``delta``, ``tie_range`` and ``tie_flip`` (compare's result or
    check's table); ``system`` names the column of the compared system (None: one system).
    """
    if "tie_flip" not in rows.columns:
        return []
    notes = []
    for row in rows.filter(pl.col("tie_flip").fill_null(value=False)).iter_rows(named=True):
        who = ""
        if system is not None and row.get(system) is not None:
            # several comparisons can share a system: name the pair
            against = row.get("baseline")
            who = f" ({row[system]} vs {against})" if against is not None else f" ({row[system]})"
        notes.append(
            f"tie order: {row['metric']}{who}: Δ {row['delta']:+.4f} can move by up to "
            f"{row['tie_range']:.4f} with the order of tied scores, which could change its "
            "sign or significance (rke.tie_report shows the ranges; ties='expected' the mean)"
        )
    return notes


def warn_about_flips(compared: pl.DataFrame) -> None:
    """A :class:`TieWarning` at the user's line when a comparison could flip with tie order."""
    notes = tie_notes(compared)
    if notes:
        more = f" (and {len(notes) - 3} more)" if len(notes) > 3 else ""
        warn_at("; ".join(notes[:3]) + more, TieWarning)


def tie_caption(compared: pl.DataFrame) -> str:
    """The report's sentence on the comparisons a tie order could flip ("" when none).

    Reads compare's ``tie_flip`` (:func:`with_tie_flags`); a frame without it says nothing.
    """
    if "tie_flip" not in compared.columns:
        return ""
    flipped = compared.filter(pl.col("tie_flip").fill_null(value=False))
    found = [
        f"{row['metric']} ({row['system']} vs {row['baseline']})"
        for row in flipped.iter_rows(named=True)
    ]
    if not found:
        return ""
    shown = ", ".join(found[:6]) + (f" and {len(found) - 6} more" if len(found) > 6 else "")
    return (
        f" The order of tied scores could change the sign or significance of {shown}: "
        "compare's tie_range says by how much."
    )


def tied_share(k: int | None) -> Metric:
    """Share of the top-``k`` positions (all retrieved rows if None) that sit in a tie group."""
    name = "tied_share" if k is None else f"tied_share@{k}"
    key_tied, key_all = f"{name}:tied", f"{name}:n"

    def rows(ctx: RankingContext) -> dict[str, pl.Expr]:
        # -0.0 + 0.0 is +0.0: the two zeros tie, as they do in the order
        shared = ctx.over(pl.when(ctx.retrieved).then(ctx.score + 0.0).is_duplicated())
        return {name: shared & ctx.retrieved}

    def partials(ctx: RankingContext) -> Partials:
        inside = ctx.within(k)
        return {
            key_tied: ctx.extra[name].filter(inside).sum(),
            key_all: inside.sum(),
        }

    def value(p: Any) -> pl.Expr:
        return pl.when(p(key_all) > 0).then(p(key_tied) / p(key_all))

    return Metric(name, partials, value, rows=rows, direction="none", summary="nanmean")


def metric_cutoff(metric: Metric) -> int | None:
    """The rank cutoff of a resolved metric (None: the whole list), read from its canonical name.

    The registry resolves every spelling (``P_10``, ``p@10``, ``P@10``, ``ndcg_cut_10``) to one
    canonical name, so the cutoff never depends on how the user wrote the metric.
    """
    found = _CUTOFF.match(metric.name)
    return int(found.group(1)) if found else None


def _has_expectation(label: str, metric: Metric, evaluate_keywords: dict[str, Any]) -> bool:
    """Whether ``ties="expected"`` has a closed form for ``metric`` (tried on one row)."""
    from polars_rankeval.evaluate import evaluate  # evaluate imports this module

    names = {
        column: evaluate_keywords.get(column, column)
        for column in ("query", "item", "score", "relevance")
    }
    probe = pl.DataFrame(
        {
            names["query"]: ["q"],
            names["item"]: ["a"],
            names["score"]: [1.0],
            names["relevance"]: [1],
        }
    )
    try:
        evaluate(probe, [replace(metric, ties="expected")], tie_warning=None, **evaluate_keywords)
    except InvalidOptionError:  # no closed form, or a table it needs is missing
        return False
    return True


def tie_report(
    data: Any,
    metrics: Sequence[str | Metric] | str | Metric,
    *,
    by: str | Sequence[str] | None = None,
    per_query: bool = False,
    **keywords: Any,
) -> pl.DataFrame:
    """How much the order of tied scores can move each metric, per system (or per query).

    One evaluation computes every metric four ways: trec_eval's tie rule (``trec``), its
    expectation over all orders of the ties (``expected``, null where no closed form exists),
    its best case (``optimistic``) and worst case (``pessimistic``); ``range`` is the distance
    between the last two and ``tied_share`` the share of the metric's top-k positions (all
    retrieved positions without a cutoff) that sit in a group of tied scores. ``note`` says
    why a value is missing: no closed form for the expectation, or no bounds (the metric
    measures the judgments, reads no label, or is per system).

    Parameters
    ----------
    data
        The log, as for :func:`~polars_rankeval.evaluate` (DataFrame, LazyFrame, path-read
        frame ...).
    metrics
        Metric strings or objects.
    by
        Columns naming the systems.
    per_query
        One row per (system, query, metric) instead of the means.
    **keywords
        Any other keyword of :func:`~polars_rankeval.evaluate` (``relevance_level``,
        ``convention``, column names ...), except ``ties``.

    Returns
    -------
    DataFrame
        ``*by, [query,] metric, trec, expected, optimistic, pessimistic, range, tied_share,
        note``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": ["q"] * 5,
    ...         "item": ["a", "b", "c", "d", "e"],
    ...         "score": [0.99, 0.97, 0.97, 0.97, 0.95],
    ...         "relevance": [0, 1, 0, 1, 0],
    ...     }
    ... )
    >>> rke.tie_report(log, ["recall@3"]).select("metric", "trec", "optimistic", "pessimistic")
    shape: (1, 4)
    ┌──────────┬──────┬────────────┬─────────────┐
    │ metric   ┆ trec ┆ optimistic ┆ pessimistic │
    │ ---      ┆ ---  ┆ ---        ┆ ---         │
    │ str      ┆ f64  ┆ f64        ┆ f64         │
    ╞══════════╪══════╪════════════╪═════════════╡
    │ recall@3 ┆ 0.5  ┆ 1.0        ┆ 0.5         │
    └──────────┴──────┴────────────┴─────────────┘
    """
    from polars_rankeval.evaluate import evaluate  # evaluate imports this module
    from polars_rankeval.registry import resolve_metrics

    if "ties" in keywords:
        msg = "tie_report evaluates every tie mode itself; leave out ties="
        raise InvalidOptionError(msg)
    preset, _ = settings_for(keywords.get("convention", "trec_eval"), keywords)
    resolved = resolve_metrics(metrics, preset)
    labels = [label for label, _ in resolved]
    query = keywords.get("query", "query")
    plain = {key: value for key, value in keywords.items() if key not in {"train", "items"}}
    objects: list[Metric] = []
    plan: list[tuple[str, dict[str, str | None], str | None, str]] = []
    shares: dict[int | None, Metric] = {}
    for label, metric in resolved:
        refusal = bound_refusal(label, metric)
        notes = [] if refusal is None else [f"no bounds: {refusal}"]
        modes: dict[str, str | None] = dict.fromkeys(MODES)
        if metric.level == "query":
            wanted = ["trec"]
            if _has_expectation(label, metric, plain):
                wanted.append("expected")
            else:
                notes.insert(0, "no closed form for the expectation")
            if refusal is None:
                wanted += ["optimistic", "pessimistic"]
            for mode in wanted:
                built = _in_bound(label, metric, mode)
                objects.append(built)
                modes[mode] = built.name
        k = metric_cutoff(metric)
        share = shares.setdefault(k, tied_share(k))
        plan.append((label, modes, "; ".join(notes) or None, share.name))
    objects.extend(shares.values())
    evaluated = evaluate(data, objects, by=by, per_query=per_query, tie_warning=None, **keywords)
    result: pl.DataFrame = evaluated.collect() if isinstance(evaluated, pl.LazyFrame) else evaluated
    keys = [name for name in result.columns if name not in {m.name for m in objects}]
    if per_query and query not in keys:
        keys.append(query)
    frames = []
    for label, modes, note, share_column in plan:
        values = {
            mode: (pl.col(column) if column else pl.lit(None, dtype=pl.Float64)).alias(mode)
            for mode, column in modes.items()
        }
        frames.append(
            result.select(
                *keys,
                pl.lit(label).alias("metric"),
                *values.values(),
                (values["optimistic"] - values["pessimistic"]).abs().alias("range"),
                pl.col(share_column).alias("tied_share"),
                pl.lit(note or "", dtype=pl.String).alias("note"),
            )
        )
    report = pl.concat(frames)
    order = {label: index for index, label in enumerate(labels)}
    return report.sort(
        [*keys, pl.col("metric").replace_strict(order, return_dtype=pl.Int64)],
        maintain_order=True,
    )
