"""Value checks that need the data: duplicates, null ids, NaN scores, bad labels, empty results.

Schema checks (missing columns, dtypes) happen when the plan is built. These value checks run
inside the plan, on the small per-query frame, so a LazyFrame stays lazy and the error surfaces
at ``collect()``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import polars as pl

from polars_rankeval._engine.columns import Columns
from polars_rankeval._engine.warn import Site, warn_at
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
_N_BAD_LABELS = "__rke_n_bad_labels"
# Per row: why the label cannot be read as an Int64 (0: it can); see guard_labels.
_LABEL_PROBLEM = "__rke_label_problem"
_LABEL_PROBLEMS = {1: "with a fraction", 2: "NaN", 3: "±inf", 4: "outside the Int64 range"}
_INT64_MAX = 2**63 - 1
_ROW = "__rke_row"
_EXAMPLES = 3
_MAX_RUN_CANDIDATES = 5
# Columns we add ourselves start with this; they never appear in messages.
INTERNAL = "__rke_"
# Where the check runs: a frame (evaluate) or the expression namespace (group_by().agg()).
CheckedIn = Literal["frame", "agg"]


def guard_labels(lf: pl.LazyFrame, columns: Columns) -> pl.LazyFrame:
    """Flag the labels that cannot be read as Int64, and make them null so the plan runs on.

    The ranking reads every label as Int64 with a strict cast, which would stop the plan with
    Polars' own error on NaN, ±inf, or a float or UInt64 past 2^63-1. A bad label's row gets a
    non-zero code in ``_LABEL_PROBLEM`` and a null label instead; the per-query count of the
    codes (:func:`bookkeeping`) makes :func:`validity_mask` raise, so no value computed from the
    nulled labels is ever returned. Whole-number checks ride along (a fraction casts silently).
    """
    dtype = lf.collect_schema()[columns.relevance]
    label = pl.col(columns.relevance)
    if dtype.is_float():
        problem = (
            pl.when(label.is_nan())
            .then(2)
            .when(label.is_infinite())
            .then(3)
            .when(label != label.floor())
            .then(1)
            # 2^63 is exact as a float; every float below it (and >= -2^63) fits in Int64.
            .when((label >= 2.0**63) | (label < -(2.0**63)))
            .then(4)
            .otherwise(0)
        )
    elif dtype.is_integer() and (dtype.is_unsigned_integer() or dtype == pl.Int128):
        # UInt64 (and 128-bit ints) hold values past Int64; narrower ints always fit.
        too_large = label > _INT64_MAX
        if dtype.is_signed_integer():
            too_large = too_large | (label < -_INT64_MAX - 1)
        problem = pl.when(too_large).then(4).otherwise(0)
    else:
        # Int8..Int64 (and Boolean) always fit: nothing to flag, nothing added to the rows.
        return lf
    problem = problem.fill_null(0).cast(pl.UInt8)
    return lf.with_columns(problem.alias(_LABEL_PROBLEM)).with_columns(
        pl.when(pl.col(_LABEL_PROBLEM) == 0).then(label).alias(columns.relevance)
    )


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


def labels_guarded(lf: pl.LazyFrame) -> bool:
    """Whether :func:`guard_labels` flagged this frame's labels (float or wide-int dtypes)."""
    return _LABEL_PROBLEM in lf.collect_schema().names()


def bookkeeping(columns: Columns, nan_scores: NanScores, guarded: bool) -> dict[str, pl.Expr]:
    """Per-query counts the value checks need (plain aggregations: they stream).

    Bad labels are counted from the codes :func:`guard_labels` wrote when it ``guarded`` the
    labels (a float or UInt64 label can be bad; an Int64 one cannot, and costs nothing).
    """
    counts = {
        _N_ROWS: pl.len(),
        _N_ITEMS: pl.col(columns.item).n_unique(),
        _N_NULL_ITEMS: pl.col(columns.item).null_count(),
        _N_BAD_LABELS: (pl.col(_LABEL_PROBLEM) > 0).sum() if guarded else pl.lit(0),
    }
    if nan_scores == "error":
        counts[_N_NAN_SCORES] = pl.col(columns.score).cast(pl.Float64).is_nan().sum()
    return counts


def _shown(columns: Columns) -> list[str]:
    """The list-identifying columns a user knows (not our internal group index)."""
    return [name for name in columns.partition if not name.startswith(INTERNAL)]


def _examples(frame: pl.DataFrame, columns: Columns, *, with_item: bool = False) -> str:
    """``e.g. query 'q1', 'q2'`` (or ``(system, query) ('a', 'q1')``) from a sorted frame."""
    keys = _shown(columns) + ([columns.item] if with_item else [])
    label = keys[0] if len(keys) == 1 else "(" + ", ".join(keys) + ")"
    shown = []
    for row in frame.head(_EXAMPLES).iter_rows(named=True):
        values = [row[key] for key in keys]
        text = repr(values[0]) if len(values) == 1 else "(" + ", ".join(map(repr, values)) + ")"
        if _N_ROWS in row:
            text += f" ({row[_N_ROWS]} rows)"
        shown.append(text)
    return f"e.g. {label} {', '.join(shown)}"


def _lists_with(source: pl.LazyFrame, columns: Columns, mask: pl.Expr) -> tuple[int, str]:
    """How many ranked lists have a row matching ``mask``, and the first few of them."""
    matching = source.filter(mask)
    counted = matching.select(pl.struct(columns.partition).n_unique()).collect().item()
    # Examples by the columns users know: the expression path's group index is not one.
    shown = matching.group_by(_shown(columns)).agg().sort(_shown(columns))
    return counted, _examples(shown.head(_EXAMPLES).collect(), columns)


def _candidate_runs(source: pl.LazyFrame, columns: Columns) -> tuple[list[str], list[str]]:
    """Columns beyond the contract, and those of them with which no (query, item) pair repeats.

    Forgetting ``by=`` on a table of several runs is the usual cause of duplicates; a column
    that makes every pair unique is very likely the run key.
    """
    schema = source.collect_schema()
    contract = {columns.query, columns.item, columns.score, columns.relevance, *columns.by}
    others = [
        name for name in schema.names() if name not in contract and not name.startswith(INTERNAL)
    ]
    # Scores and other floats are not run keys; a handful of candidates bounds the cost.
    keys = [name for name in others if not schema[name].is_float() and not schema[name].is_nested()]
    explaining = []
    for name in keys[:_MAX_RUN_CANDIDATES]:
        repeats = (
            source.group_by([*columns.partition, name, columns.item])
            .len(name=_N_ROWS)
            .filter(pl.col(_N_ROWS) > 1)
            .select(pl.len())
            .collect()
            .item()
        )
        if repeats == 0:
            explaining.append(name)
    return others, explaining


def _duplicate_hint(source: pl.LazyFrame, columns: Columns, where: CheckedIn) -> str:
    if where == "agg":
        return (
            " Inside group_by().agg() each group is evaluated query by query: if a group holds "
            "several runs, add the column that tells them apart to group_by(...)."
            " If rows really repeat, deduplicate the input or pass duplicates='first', 'last' "
            "or 'max_score' to keep one row per pair."
        )
    others, explaining = _candidate_runs(source, columns)
    hint = ""
    if explaining:
        best = explaining[0]
        hint = (
            f" The table looks like several runs: with by={best!r} no pair repeats, so pass "
            f"by={best!r} (command line: --by {best}) to evaluate each {best} separately."
        )
    elif others:
        hint = (
            f" The table has columns beyond query, item, score and relevance: {others}; if "
            "some of them tell runs apart, pass them as by= (command line: --by)."
        )
    return hint + (
        " If the rows really repeat, pass duplicates='first', 'last' or 'max_score' (command "
        "line: --duplicates first) to keep one row per pair, or deduplicate the input."
    )


def _diagnose(
    source: pl.LazyFrame,
    columns: Columns,
    nan_scores: NanScores,
    where: CheckedIn,
) -> None:
    """Raise the first bad-value error, with counts and examples computed over all the input.

    The in-plan check sees one batch of ranked lists at a time (how many depends on threads),
    so it only detects; this exact, ordered pass over the whole input writes the message.
    """
    query, item = pl.col(columns.query), pl.col(columns.item)
    score = pl.col(columns.score).cast(pl.Float64)
    null_queries = source.select(query.is_null().sum()).collect().item()
    if null_queries:
        msg = f"{null_queries} row(s) have a null {columns.query!r} (query id); every row needs one"
        raise ColumnValueError(msg)
    null_item = item.is_null()
    _raise_if_any(
        source,
        columns,
        null_item,
        lambda rows, where_found: (
            f"{rows} row(s) have a null {columns.item!r} (item id) in "
            f"{where_found}; every row needs an item id"
        ),
    )
    pairs = (
        source.group_by([*columns.partition, columns.item])
        .len(name=_N_ROWS)
        .filter(pl.col(_N_ROWS) > 1)
    )
    totals = pairs.select(
        pl.len().alias("pairs"),
        pl.col(_N_ROWS).sum().alias("rows"),
        pl.struct(columns.partition).n_unique().alias("lists"),
    ).collect()
    n_pairs, n_rows, n_lists = totals.row(0)
    if n_pairs:
        first = pairs.sort([*_shown(columns), columns.item]).head(_EXAMPLES).collect()
        msg = (
            f"{n_rows - n_pairs} duplicate ({columns.query!r}, {columns.item!r}) row(s): "
            f"{n_pairs} pair(s) occur more than once ({n_rows} rows in all) in {n_lists} "
            f"ranked list(s), {_examples(first, columns, with_item=True)}. Each "
            "item may appear once per ranked list (as in trec_eval)."
            + _duplicate_hint(source, columns, where)
        )
        raise DuplicateItemError(msg)
    if nan_scores == "error":
        _raise_if_any(
            source,
            columns,
            score.is_nan(),
            lambda rows, where_found: (
                f"{rows} NaN value(s) in {columns.score!r} (score) in "
                f"{where_found}; a NaN cannot be ranked. Pass nan_scores='last' to rank NaN below "
                "every other score, or fill or drop them."
            ),
        )
    problem = pl.col(_LABEL_PROBLEM)
    kinds = (
        source.group_by(problem).len().filter(problem > 0).sort(problem).collect()
        if labels_guarded(source)
        else pl.DataFrame()
    )
    if kinds.height:
        found = ", ".join(f"{n} {_LABEL_PROBLEMS[code]}" for code, n in kinds.iter_rows())
        # pandas reads a gap as NaN; here an unjudged row is a null label.
        hint = "; leave an unjudged row's label null, not NaN" if 2 in kinds[:, 0] else ""
        _raise_if_any(
            source,
            columns,
            problem > 0,
            lambda rows, where_found: (
                f"{rows} label(s) in {columns.relevance!r} (relevance) are not whole numbers "
                f"that fit in Int64 ({found}), in {where_found}; relevance labels must be "
                "whole numbers (trec_eval reads them as integers) from -2^63 to 2^63-1" + hint
            ),
        )


def _raise_if_any(
    source: pl.LazyFrame,
    columns: Columns,
    bad: pl.Expr,
    message: Callable[[int, str], str],
) -> None:
    """Raise ColumnValueError when rows match ``bad``: their count, lists and first lists."""
    rows = source.select(bad.sum()).collect().item()
    if rows:
        lists, examples = _lists_with(source, columns, bad)
        raise ColumnValueError(message(rows, f"{lists} ranked list(s), {examples}"))


def validity_mask(
    columns: Columns,
    nan_scores: NanScores,
    source: pl.LazyFrame,
    where: CheckedIn = "frame",
) -> pl.Expr:
    """An all-true mask over the per-query frame that raises on bad values.

    The plan must *use* the mask (it feeds the filter), or projection pushdown would prune it.
    It detects a problem in the batch it sees; the error itself comes from an exact pass over
    ``source`` (the whole input, before any bucketing), so its counts never depend on threads.
    """
    fields = [*columns.partition, _N_ROWS, _N_ITEMS, _N_NULL_ITEMS, _N_BAD_LABELS]
    if nan_scores == "error":
        fields.append(_N_NAN_SCORES)

    def check(packed: pl.Series) -> pl.Series:
        frame = packed.struct.unnest()
        bad = (
            frame[columns.query].is_null().any()
            or (frame[_N_NULL_ITEMS] > 0).any()
            or (frame[_N_ROWS] > frame[_N_ITEMS]).any()
            or (nan_scores == "error" and (frame[_N_NAN_SCORES] > 0).any())
            or (frame[_N_BAD_LABELS] > 0).any()
        )
        if bad:
            _diagnose(source, columns, nan_scores, where)
            # Unreachable unless the exact pass disagrees with the batch; never pass silently.
            msg = "internal: a value check failed in a batch but not over the whole input"
            raise ColumnValueError(msg)
        return pl.Series(packed.name, [True] * len(packed), dtype=pl.Boolean)

    return pl.struct(fields).map_batches(check, return_dtype=pl.Boolean, is_elementwise=True)


def warn_if_empty(
    result: pl.DataFrame,
    lf: pl.LazyFrame,
    columns: Columns,
    metrics: Sequence[str] = (),
    site: Site | None = None,
) -> None:
    """Warn, saying why, when no query was evaluated, or when some of ``metrics`` evaluated none.

    The warning is given at ``site``, the user's line when omitted.

    Each metric is evaluated over its own lists (label-free metrics over every ranked list), so
    a call can have rows while a label-reading metric evaluated nothing: its values are null,
    and that is said rather than left to be found.
    """
    if result.height:
        idle = [
            name
            for name in metrics
            if name in result.columns and result[name].null_count() == result.height
        ]
        if idle:
            warn_at(
                f"{idle} evaluated no query (no ranked list has both a judged row and a "
                f"retrieved row for them); their values are null, while the other metrics "
                f"cover {result.height} list(s)",
                EmptyEvaluationWarning,
                site,
            )
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
    warn_at(
        f"no query was evaluated ({why}); the result is empty and the means are null",
        EmptyEvaluationWarning,
        site,
    )
