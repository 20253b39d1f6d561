"""Tie flags on comparisons: how far the order of tied scores can move each Δ.

:func:`with_tie_flags` adds ``tie_range`` and ``tie_flip`` to compare's rows from the hidden
per-query tie-range columns that evaluate leaves (:func:`split_tie_ranges` takes them off);
:func:`tie_notes`, :func:`warn_about_flips` and :func:`tie_caption` word them for check, the
warning and the report.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from polars_rankeval._engine.tie_bounds import TIE_RANGE, range_columns
from polars_rankeval._engine.warn import warn_at
from polars_rankeval.comparison._pairing import system_columns, system_names, with_pair_names
from polars_rankeval.errors import TieWarning

# the joined names of a compare result's two systems, while its rows are flagged
_SYSTEM, _BASELINE = "__rke_system", "__rke_baseline"


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
    if system_columns(compared.columns):
        # compare's output names the systems by their by columns: flag it by the joined names
        named = with_pair_names(compared, system=_SYSTEM, baseline=_BASELINE)
        flagged = _flag(named, ranges, keys, segments, query, (_BASELINE, _SYSTEM))
        return flagged.drop(_SYSTEM, _BASELINE)
    return _flag(compared, ranges, keys, segments, query, ("baseline", "system"))


def _flag(  # noqa: PLR0917  (with_tie_flags' arguments, and the pair's columns)
    compared: pl.DataFrame,
    ranges: pl.DataFrame | None,
    keys: Sequence[str],
    segments: list[str],
    query: str,
    names: tuple[str, str],
) -> pl.DataFrame:
    """with_tie_flags on rows naming their systems in the ``names`` (baseline, system) columns."""
    base, own_name = names
    pair = [*segments, "metric", base, own_name]
    empty = pl.lit(None, dtype=pl.Float64)
    if ranges is None or compared.is_empty():
        return compared.with_columns(
            empty.alias("tie_range"), pl.lit(None, dtype=pl.Boolean).alias("tie_flip")
        )
    long = _long_ranges(ranges, keys, segments, query)
    rows = compared.select(*pair).unique()
    on = [*segments, "metric"]
    own = rows.join(
        long.rename({"__system": own_name, "r": "r_system"}),
        on=[*on, own_name],
        nulls_equal=True,
    )
    other = rows.join(
        long.rename({"__system": base, "r": "r_baseline"}),
        on=[*on, base],
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
    if system is not None and system_columns(rows.columns):
        rows = with_pair_names(rows, system=system)  # compare's output: by and baseline_<by>
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
    if system_columns(compared.columns):
        compared = with_pair_names(compared)  # compare's output: by and baseline_<by>
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
