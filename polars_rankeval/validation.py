"""Bad-value checks that need the data: duplicates, null ids, NaN scores, empty results.

Schema checks (missing columns, dtypes) happen when the plan is built. These value checks run
inside the plan, on the small per-query frame, so a LazyFrame stays lazy and the error surfaces
at ``collect()``.
"""

from __future__ import annotations

import warnings
from typing import Literal

import polars as pl

from polars_rankeval._columns import Columns
from polars_rankeval.errors import (
    ColumnValueError,
    DuplicateItemError,
    EmptyEvaluationWarning,
)

Duplicates = Literal["error", "first", "last", "max_score"]
NanScores = Literal["error", "last"]

_N_ROWS = "__rke_n_rows"
_N_ITEMS = "__rke_n_items"
_N_NULL_ITEMS = "__rke_n_null_items"
_N_NAN_SCORES = "__rke_n_nan_scores"
_N_FRACTIONAL = "__rke_n_fractional_labels"
_ROW = "__rke_row"
_EXAMPLES = 3


def resolve_duplicates(lf: pl.LazyFrame, columns: Columns, duplicates: Duplicates) -> pl.LazyFrame:
    """Keep one row per ``(*by, query, item)`` when asked to (``"error"`` keeps them all).

    ``"first"``/``"last"``: the first/last occurrence in input order; ``"max_score"``: the row
    with the highest score (a null score loses; equal scores keep the first occurrence).
    """
    if duplicates == "error":
        return lf
    key = [*columns.partition, columns.item]
    row = pl.col(_ROW)
    lf = lf.with_row_index(_ROW)
    if duplicates == "first":
        keep = row == row.min().over(key)
    elif duplicates == "last":
        keep = row == row.max().over(key)
    else:
        score = pl.col(columns.score)
        order = pl.struct(
            score.is_not_null().alias("r"), score.alias("s"), (-row.cast(pl.Int64)).alias("i")
        )
        keep = order.rank("ordinal", descending=True).over(key) == 1
    return lf.filter(keep).drop(_ROW)


def bookkeeping(columns: Columns, nan_scores: NanScores, float_labels: bool) -> dict[str, pl.Expr]:
    """Per-query counts the value checks need (plain aggregations: they stream)."""
    counts = {
        _N_ROWS: pl.len(),
        _N_ITEMS: pl.col(columns.item).n_unique(),
        _N_NULL_ITEMS: pl.col(columns.item).null_count(),
    }
    if nan_scores == "error":
        counts[_N_NAN_SCORES] = pl.col(columns.score).cast(pl.Float64).is_nan().sum()
    if float_labels:
        label = pl.col(columns.relevance)
        counts[_N_FRACTIONAL] = (label.is_nan() | (label != label.floor())).fill_null(False).sum()
    return counts


def _examples(frame: pl.DataFrame, columns: Columns, mask: pl.Series) -> str:
    rows = frame.filter(mask).select(columns.partition).head(_EXAMPLES).rows()
    shown = ", ".join(repr(row[0] if len(row) == 1 else row) for row in rows)
    return (
        f"e.g. {'(' + ', '.join(columns.partition) + ')' if columns.by else columns.query} {shown}"
    )


def validity_mask(columns: Columns, nan_scores: NanScores, float_labels: bool) -> pl.Expr:
    """An all-true mask over the per-query frame that raises on bad values.

    The plan must *use* the mask (it feeds the filter), or projection pushdown would prune it.
    """
    fields = [*columns.partition, _N_ROWS, _N_ITEMS, _N_NULL_ITEMS]
    if nan_scores == "error":
        fields.append(_N_NAN_SCORES)
    if float_labels:
        fields.append(_N_FRACTIONAL)

    def check(packed: pl.Series) -> pl.Series:
        frame = packed.struct.unnest()
        null_query = frame[columns.query].is_null()
        if null_query.any():
            n_rows = int(frame.filter(null_query)[_N_ROWS].sum())
            msg = f"{n_rows} row(s) have a null {columns.query!r} (query id); every row needs one"
            raise ColumnValueError(msg)
        null_items = frame[_N_NULL_ITEMS] > 0
        if null_items.any():
            msg = (
                f"{int(frame[_N_NULL_ITEMS].sum())} row(s) have a null {columns.item!r} (item id) "
                f"in {int(null_items.sum())} quer(ies), {_examples(frame, columns, null_items)}; "
                "every row needs an item id"
            )
            raise ColumnValueError(msg)
        extra = frame[_N_ROWS] - frame[_N_ITEMS]
        duplicated = extra > 0
        if duplicated.any():
            msg = (
                f"{int(extra.sum())} duplicate ({columns.query!r}, {columns.item!r}) row(s) in "
                f"{int(duplicated.sum())} ranked list(s), {_examples(frame, columns, duplicated)}: "
                "each item may appear once per query (as in trec_eval). Pass duplicates='first', "
                "'last' or 'max_score' to keep one row of each, or deduplicate the input."
            )
            raise DuplicateItemError(msg)
        if nan_scores == "error":
            nans = frame[_N_NAN_SCORES] > 0
            if nans.any():
                msg = (
                    f"{int(frame[_N_NAN_SCORES].sum())} NaN value(s) in {columns.score!r} "
                    f"(score) in {int(nans.sum())} quer(ies), {_examples(frame, columns, nans)}; "
                    "a NaN cannot be ranked. Pass nan_scores='last' to rank NaN below every "
                    "other score, or fill or drop them."
                )
                raise ColumnValueError(msg)
        if float_labels:
            fractional = frame[_N_FRACTIONAL] > 0
            if fractional.any():
                msg = (
                    f"{int(frame[_N_FRACTIONAL].sum())} label(s) in {columns.relevance!r} "
                    f"(relevance) have a fraction or are NaN, in {int(fractional.sum())} "
                    f"quer(ies), {_examples(frame, columns, fractional)}; relevance labels must "
                    "be whole numbers (trec_eval reads them as integers)"
                )
                raise ColumnValueError(msg)
        return pl.Series(packed.name, [True] * len(packed), dtype=pl.Boolean)

    return pl.struct(fields).map_batches(check, return_dtype=pl.Boolean, is_elementwise=True)


def warn_if_empty(result: pl.DataFrame, lf: pl.LazyFrame, columns: Columns) -> None:
    """Warn, saying why, when no query was evaluated (only called on an empty result)."""
    if result.height:
        return
    counts = lf.select(
        pl.len().alias("rows"),
        pl.col(columns.relevance).is_not_null().sum().alias("judged"),
        pl.col(columns.score).is_not_null().sum().alias("retrieved"),
    ).collect()
    rows, judged, retrieved = counts.row(0)
    if rows == 0:
        why = "the input has no rows"
    elif judged == 0:
        why = f"no row has a judgment: the {columns.relevance!r} column is entirely null"
    elif retrieved == 0:
        why = f"no row was retrieved: the {columns.score!r} column is entirely null"
    else:
        why = "no query has both a judged row and a retrieved row"
    warnings.warn(
        f"no query was evaluated ({why}); the result is empty and the means are null",
        EmptyEvaluationWarning,
        stacklevel=4,
    )


def group_validity(relevance: pl.Expr, score: pl.Expr, item: pl.Expr) -> pl.Expr:
    """The value checks inside ``group_by().agg()``: a scalar True per group, or an error.

    One Python call per group; the expression path is the in-memory convenience API.
    """
    label = relevance.cast(pl.Float64)
    counts = pl.struct(
        pl.len().alias("rows"),
        item.n_unique().alias("items"),
        item.null_count().alias("null_items"),
        score.cast(pl.Float64).is_nan().sum().alias("nan_scores"),
        (label.is_nan() | (label != label.floor())).fill_null(False).sum().alias("fractional"),
    )

    def check(packed: pl.Series) -> pl.Series:
        for row in packed.to_list():
            if row["null_items"]:
                msg = f"{row['null_items']} row(s) in a group have a null item id"
                raise ColumnValueError(msg)
            if row["rows"] > row["items"]:
                msg = (
                    f"{row['rows'] - row['items']} duplicate item(s) in a group: each item may "
                    "appear once per query; deduplicate first"
                )
                raise DuplicateItemError(msg)
            if row["nan_scores"]:
                msg = f"{row['nan_scores']} NaN score(s) in a group; a NaN cannot be ranked"
                raise ColumnValueError(msg)
            if row["fractional"]:
                msg = (
                    f"{row['fractional']} relevance label(s) in a group have a fraction or are NaN"
                )
                raise ColumnValueError(msg)
        return pl.Series(packed.name, [True] * len(packed), dtype=pl.Boolean)

    return counts.map_batches(check, return_dtype=pl.Boolean, returns_scalar=True)
