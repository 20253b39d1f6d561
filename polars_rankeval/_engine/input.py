"""Taking the input: the first stage of :func:`~polars_rankeval._engine.evaluate.evaluate_frame`.

Whatever the caller hands over (a Polars, pandas or Arrow table, a LazyFrame over files, a
frame of per-user lists) leaves this stage as one long-format LazyFrame whose columns are
checked, with a relevance column, each list cut to ``depth`` and to its judged rows where asked
(trec_eval's ``-M`` and ``-J``), and the extra tables the metrics read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from polars_rankeval._engine.columns import Columns, as_polars, check_schema
from polars_rankeval._engine.context import trec_key
from polars_rankeval._engine.plan import judged_only_rows, reads_labels
from polars_rankeval._engine.read_once import readable
from polars_rankeval._engine.settings import Settings
from polars_rankeval._engine.tables import Tables, make_tables
from polars_rankeval._engine.validation import resolve_duplicates
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.lists import maybe_from_lists
from polars_rankeval.metrics._base import Metric

_CUT = "__rke_cut"


@dataclass(frozen=True)
class Input:
    """The log as the later stages read it.

    ``in_memory``: the caller gave a DataFrame (pandas and Arrow tables become one), which is
    collected at once; a LazyFrame gives a LazyFrame back.
    """

    lf: pl.LazyFrame
    in_memory: bool
    tables: Tables


@dataclass(frozen=True)
class Cut:
    """What each list keeps before evaluation: trec_eval's ``-M depth`` and ``-J``."""

    depth: int | None = None
    judged_only: bool = False


def check_cut(depth: object, judged_only: object) -> Cut:
    """Validate ``depth=`` (None or an int >= 1) and ``judged_only=`` (a bool).

    >>> check_cut(10, False)
    Cut(depth=10, judged_only=False)
    >>> check_cut(0, False)
    Traceback (most recent call last):
    ...
    polars_rankeval.errors.InvalidOptionError: option depth= must be None or an int >= 1, got 0
    """
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 1):
        msg = f"option depth= must be None or an int >= 1, got {depth!r}"
        raise InvalidOptionError(msg)
    if not isinstance(judged_only, bool):
        msg = f"option judged_only= must be True or False, got {judged_only!r}"
        raise InvalidOptionError(msg)
    return Cut(depth, judged_only)


def take_input(
    data: object,
    columns: Columns,
    resolved: Sequence[tuple[str, Metric]],
    settings: Settings,
    cut: Cut,
    *,
    train: object = None,
    items: object = None,
    catalog: object = None,
    groups: object = None,
    group_target: object = None,
) -> Input:
    """The input as one checked long-format LazyFrame, its lists cut, and the extra tables."""
    frame = as_polars(data)
    # a frame of per-user lists (the item column is a list column) becomes the long format;
    # a cut Parquet file: named; empty lists warned about unless missing_queries="zero"
    lf, _ = maybe_from_lists(readable(frame.lazy()), columns, settings.missing_queries)
    # the input as given: a missing column is reported among the columns the user has
    check_schema(lf.collect_schema(), columns, need_relevance=reads_labels(resolved))
    lf = with_optional_relevance(lf, columns, resolved)
    check_schema(lf.collect_schema(), columns)
    if cut.depth is not None:
        # the cut counts each (query, item) once: duplicates resolved first, as the plan would
        # (it resolves them again, a no-op on unique pairs)
        lf = resolve_duplicates(lf, columns, settings.duplicates)
    lf = cut_lists(lf, columns, cut, nan_last=settings.nan_scores == "last")
    tables = make_tables(
        lf.collect_schema(),
        columns,
        train=train,
        items=items,
        catalog=catalog,
        groups=groups,
        group_target=group_target,
    )
    return Input(lf, isinstance(frame, pl.DataFrame), tables)


def with_optional_relevance(
    lf: pl.LazyFrame, columns: Columns, resolved: Sequence[tuple[str, Metric]]
) -> pl.LazyFrame:
    """The log with a null relevance column when no metric reads labels and it has none."""
    if reads_labels(resolved) or columns.relevance in lf.collect_schema():
        return lf
    return lf.with_columns(pl.lit(None, dtype=pl.Int64).alias(columns.relevance))


def cut_lists(lf: pl.LazyFrame, columns: Columns, cut: Cut, *, nan_last: bool) -> pl.LazyFrame:
    """trec_eval's ``-M depth`` and ``-J``: what each list holds before evaluation.

    ``depth``: the first ``depth`` retrieved items in the engine's own order
    (:func:`~polars_rankeval._engine.context.trec_key`: score descending, ties by the item's
    string form descending, as every metric ranks them, whatever the item column's type); a
    judged item past the cut stays as judged but not retrieved (its score becomes null), so it
    still counts toward R, as in trec_eval; a repeated (query, item) past the cut stays too, so
    ``duplicates="error"`` still finds it. ``judged_only`` (after the cut, as trec_eval):
    retrieved items without a judgment or with a negative label (pooled but unjudged) are
    dropped and the rest keep their order, ranked again without gaps.

    >>> log = pl.LazyFrame(
    ...     {
    ...         "query": ["q"] * 3,
    ...         "item": [9, 10, 11],
    ...         "score": [1.0, 1.0, 0.5],
    ...         "relevance": [1, 1, None],
    ...     }
    ... )
    >>> cut_lists(log, Columns(), Cut(depth=1), nan_last=False).collect().rows()
    [('q', 9, 1.0, 1), ('q', 10, None, 1)]
    """
    if cut.depth is not None:
        retrieved = pl.col(columns.score).is_not_null()
        # The engine's own order key, so the cut keeps exactly the rows the metrics rank first.
        key = trec_key(pl.col(columns.score), pl.col(columns.item), nan_last=nan_last)
        position = key.rank("ordinal", descending=True).over(columns.partition)
        repeated = pl.len().over([*columns.partition, columns.item]) > 1
        lf = (
            lf.with_columns((retrieved & (position > cut.depth)).alias(_CUT))
            .filter(~pl.col(_CUT) | pl.col(columns.relevance).is_not_null() | repeated)
            .with_columns(
                pl.when(pl.col(_CUT))
                .then(None)
                .otherwise(pl.col(columns.score))
                .alias(columns.score)
            )
            .drop(_CUT)
        )
    if cut.judged_only:
        lf = lf.filter(judged_only_rows(columns.score, columns.relevance))
    return lf
