"""List-shaped input: one row per user with the recommended items as a list.

Recommenders write their output per user: ``user, recommended: list`` (best first), with the
held-out items as another list (``relevant``) or labels parallel to the recommendations.
:func:`from_lists` turns such a frame into the long format (one row per (user, item)), lazily;
``evaluate`` does it by itself when its ``item`` column is a list column.
"""

from __future__ import annotations

from typing import TypeVar

import polars as pl

from polars_rankeval._engine.columns import Columns
from polars_rankeval._engine.columns import holds_lists as _nested
from polars_rankeval._engine.vocabulary import renamed
from polars_rankeval._engine.warn import user_site, warn_at
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    ColumnValueError,
    QueryCoverageWarning,
)

FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)

_POSITION = "__rke_position"
_LENGTHS = "__rke_lengths"


def _is_list(schema: pl.Schema, name: str) -> bool:
    return name in schema and _nested(schema[name])


def _need_list(schema: pl.Schema, name: str, option: str) -> None:
    if name not in schema:
        msg = (
            f"column {name!r} (option {option}=) is not in the input; columns present: "
            f"{list(schema.names())}"
        )
        raise ColumnNotFoundError(msg)
    if not _nested(schema[name]):
        msg = (
            f"column {name!r} (option {option}=) must be a list column (one list per user), "
            f"got {schema[name]}"
        )
        raise ColumnTypeError(msg)


def _same_lengths(query: str, recommended: str, parallel: str, option: str) -> pl.Expr:
    """An all-true mask that raises when a parallel list's length differs (checked lazily)."""

    def check(packed: pl.Series) -> pl.Series:
        frame = packed.struct.unnest()
        bad = frame.filter(pl.col("a").fill_null(0) != pl.col("b").fill_null(0))
        if bad.height:
            first = bad.row(0, named=True)
            msg = (
                f"column {parallel!r} (option {option}=) must have one entry per recommended "
                f"item: {bad.height} user(s) differ, e.g. {query} {first['q']!r} has "
                f"{first['a']} recommended items and {first['b']} {option}"
            )
            raise ColumnValueError(msg)
        return pl.Series(packed.name, [True] * len(packed), dtype=pl.Boolean)

    packed = pl.struct(
        pl.col(query).alias("q"),
        pl.col(recommended).list.len().alias("a"),
        pl.col(parallel).list.len().alias("b"),
    )
    return packed.map_batches(check, return_dtype=pl.Boolean, is_elementwise=True)


def _warn_empty_lists(query: str, recommended: str, judged: str | None) -> pl.Expr:
    """An all-true mask that warns, when the lists are read, about users with no recommendation.

    Such a user has no retrieved row, so ``evaluate`` skips it (trec_eval's rule, which
    Recommenders' ``merge_ranking_true_pred`` shares) or, with no relevant item either, it has
    no row at all: said, not silent. Every user's row is read at once (one warning, one count).
    """
    # the user's line, read now: the lists are read later, in a Polars thread
    site = user_site()
    shown = [pl.col(query).alias("q"), pl.col(recommended).list.len().fill_null(0).alias("n")]
    if judged is not None:
        shown.append(pl.col(judged).list.len().fill_null(0).alias("r"))

    def check(packed: pl.Series) -> pl.Series:
        frame = packed.struct.unnest()
        empty = frame.filter(pl.col("n") == 0)
        if empty.height:
            ids = empty["q"].head(3).to_list()
            example = ", ".join(repr(value) for value in ids)
            more = ", ..." if empty.height > len(ids) else ""
            if judged is None:
                fate = "they have no row, so no metric sees them"
            else:
                judged_only = int((empty["r"] > 0).sum())
                fate = (
                    f"{judged_only} of them with a relevant item: evaluate skips a user "
                    "with no recommended item (as trec_eval and Recommenders do; "
                    "missing_queries='zero' scores it 0)"
                )
                if judged_only < empty.height:
                    fate += "; the others have no row at all"
            warn_at(
                f"{empty.height} of {frame.height} user(s) in {query!r} have an empty (or "
                f"null) {recommended!r} list, e.g. {query} {example}{more}: {fate}. Filter them "
                "out, or pass warn_empty=False to from_lists, if that is intended",
                QueryCoverageWarning,
                site,
            )
        return pl.Series(packed.name, [True] * len(packed), dtype=pl.Boolean)

    # not elementwise: the whole column in one call, so the warning counts every user
    return pl.struct(*shown).map_batches(check, return_dtype=pl.Boolean)


@renamed(frame="data")
def from_lists(
    data: FrameT,
    *,
    query: str = "user",
    recommended: str = "recommended",
    relevant: str | None = None,
    labels: str | None = None,
    scores: str | None = None,
    item: str = "item",
    score: str = "score",
    relevance: str = "relevance",
    warn_empty: bool = True,
) -> FrameT:
    """Per-user lists to the long format: one row per (user, item), lazily.

    Parameters
    ----------
    data
        DataFrame or LazyFrame with one row per user (per system: other scalar columns such
        as a ``system`` column are carried to every row, so ``by=`` works).
    query
        The user column; it keeps its name (pass ``query=`` with the same name to evaluate).
    recommended
        List (or Array) of the recommended items, best first. Its order is the ranking: each
        item gets the score ``n - position`` (``n`` items), unless ``scores=`` is given.
    relevant
        List of the user's relevant items: recommended ones get relevance 1, the others 0;
        relevant items that were not recommended become judged, unretrieved rows (null score),
        so recall counts them. A null list means nothing relevant.
    labels
        Instead of ``relevant``: integer labels parallel to ``recommended`` (same length).
    scores
        Scores parallel to ``recommended`` (same length), instead of the list order.
    item, score, relevance
        Names of the output columns.
    warn_empty
        Warn (a :class:`~polars_rankeval.QueryCoverageWarning`, when the lists are read) if some
        users' ``recommended`` list is empty or null: such a user has no recommended row, so
        ``evaluate`` skips it (as trec_eval and Recommenders do; ``missing_queries="zero"``
        scores it 0), and one with no relevant item either has no row at all. Pass False when
        that is expected.

    Returns
    -------
    DataFrame or LazyFrame
        The same type as ``data``: ``query``, the carried columns, ``item``, ``score``
        (Float64), ``relevance`` (Int64; null for every row without ``relevant``/``labels``).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> recs = pl.DataFrame(
    ...     {"user": [1, 2], "recommended": [["a", "b"], ["c"]], "relevant": [["b", "z"], []]}
    ... )
    >>> rke.from_lists(recs, relevant="relevant").sort("user", "item")
    shape: (4, 4)
    ┌──────┬──────┬───────┬───────────┐
    │ user ┆ item ┆ score ┆ relevance │
    │ ---  ┆ ---  ┆ ---   ┆ ---       │
    │ i64  ┆ str  ┆ f64   ┆ i64       │
    ╞══════╪══════╪═══════╪═══════════╡
    │ 1    ┆ a    ┆ 2.0   ┆ 0         │
    │ 1    ┆ b    ┆ 1.0   ┆ 1         │
    │ 1    ┆ z    ┆ null  ┆ 1         │
    │ 2    ┆ c    ┆ 1.0   ┆ 0         │
    └──────┴──────┴───────┴───────────┘
    """
    lf = data.lazy()
    schema = lf.collect_schema()
    roles: tuple[list[str], list[str]] = _checked_roles(
        schema, query, recommended=recommended, relevant=relevant, labels=labels, scores=scores
    )
    used: list[str] = roles[0]
    carried: list[str] = roles[1]
    for name in (item, score, relevance):
        if name in carried:
            msg = f"the input already has a column {name!r}; name the output another way ({name}=)"
            raise ColumnValueError(msg)
    # Array columns explode like lists once cast (their width is fixed, lists' is not)
    as_lists = [
        pl.col(name).cast(pl.List(getattr(schema[name], "inner", None) or pl.Null))
        for name in used[1:]
    ]
    lists = lf.select(*carried, query, *as_lists)
    for parallel, option in ((labels, "labels"), (scores, "scores")):
        if parallel is not None:
            lists = lists.filter(_same_lengths(query, recommended, parallel, option))
    length = pl.col(recommended).list.len()
    exploded = [recommended, _POSITION, *(p for p in (labels, scores) if p is not None)]
    # checked on this branch only (the relevant items' branch reads the lists again)
    rows = lists
    if warn_empty:
        rows = rows.filter(_warn_empty_lists(query, recommended, relevant or labels))
    rows = rows.with_columns(pl.int_ranges(0, length).alias(_POSITION), length.alias(_LENGTHS))
    rows = rows.explode(exploded, empty_as_null=False).filter(pl.col(_POSITION).is_not_null())
    ranked_score = (
        pl.col(scores).cast(pl.Float64)
        if scores is not None
        else (pl.col(_LENGTHS) - pl.col(_POSITION)).cast(pl.Float64)
    )
    if relevant is not None:
        label = pl.col(recommended).is_in(pl.col(relevant).fill_null([])).cast(pl.Int64)
    elif labels is not None:
        label = pl.col(labels).cast(pl.Int64)
    else:
        label = pl.lit(None, dtype=pl.Int64)
    retrieved = rows.select(
        *carried,
        query,
        pl.col(recommended).alias(item),
        ranked_score.alias(score),
        label.alias(relevance),
    )
    if relevant is not None:
        # relevant items not recommended: judged, not retrieved (recall counts them)
        keys = [*carried, query, item]
        wanted = lists.select(*carried, query, pl.col(relevant).alias(item)).explode(item)
        missed = (
            wanted.drop_nulls(item)
            .unique()
            .join(retrieved.select(keys), on=keys, how="anti", nulls_equal=True)
            .with_columns(
                pl.lit(None, dtype=pl.Float64).alias(score),
                pl.lit(1, dtype=pl.Int64).alias(relevance),
            )
        )
        retrieved = pl.concat([retrieved, missed.select(retrieved.collect_schema().names())])
    if isinstance(data, pl.DataFrame):
        return retrieved.collect()
    return retrieved


def _checked_roles(
    schema: pl.Schema,
    query: str,
    *,
    recommended: str,
    relevant: str | None,
    labels: str | None,
    scores: str | None,
) -> tuple[list[str], list[str]]:
    """The list columns used (recommended first) and the scalar columns carried along."""
    if query not in schema:
        msg = (
            f"column {query!r} (option query=) is not in the input; columns present: "
            f"{list(schema.names())}"
        )
        raise ColumnNotFoundError(msg)
    _need_list(schema, recommended, "recommended")
    if relevant is not None and labels is not None:
        msg = "give relevant= (a list of relevant items) or labels= (parallel labels), not both"
        raise ColumnValueError(msg)
    used = [query, recommended]
    for name, option in ((relevant, "relevant"), (labels, "labels"), (scores, "scores")):
        if name is None:
            continue
        _need_list(schema, name, option)
        used.append(name)
        inner: pl.DataType = getattr(schema[name], "inner", None) or pl.Null()
        if option == "labels" and not (inner.is_integer() or inner == pl.Boolean):
            msg = f"column {name!r} (option labels=) must hold integer labels, got {schema[name]}"
            raise ColumnTypeError(msg)
        items_inner = getattr(schema[recommended], "inner", None)
        if option == "relevant" and inner not in (items_inner, pl.Null()):
            msg = (
                f"column {name!r} (option relevant=) must hold item ids like {recommended!r} "
                f"({schema[recommended]}), got {schema[name]}; cast one of them"
            )
            raise ColumnTypeError(msg)
        if option == "scores" and not inner.is_numeric():
            msg = f"column {name!r} (option scores=) must hold numbers, got {schema[name]}"
            raise ColumnTypeError(msg)
    carried: list[str] = [
        name for name in schema.names() if name not in used and not _nested(schema[name])
    ]
    return used, carried


def maybe_from_lists(
    lf: pl.LazyFrame, columns: Columns, missing_queries: str = "skip"
) -> tuple[pl.LazyFrame, bool]:
    """The long format when ``columns.item`` is a list column of ``lf``, else ``lf`` unchanged.

    The relevance column, if it is a list, holds the relevant items; the score column, if it
    is a list, the scores. Labels parallel to the items need :func:`from_lists` (``labels=``).
    Empty lists are warned about unless ``missing_queries="zero"`` (the caller asked to score
    those users 0).
    """
    schema = lf.collect_schema()
    if columns.item not in schema or not _nested(schema[columns.item]):
        return lf, False
    relevant = (
        columns.relevance
        if columns.relevance in schema and _nested(schema[columns.relevance])
        else None
    )
    scores = columns.score if columns.score in schema and _nested(schema[columns.score]) else None
    flat = [
        name
        for name in (columns.score, columns.relevance)
        if name in schema and name not in {relevant, scores}
    ]
    if flat:
        # one row per (query, item) whose item id is a list: not list-shaped input
        msg = (
            f"column {columns.item!r} (option item=) holds lists ({schema[columns.item]}) while "
            f"{flat} hold one value per row: item ids must be scalars (strings or integers). "
            f"For one row per user with lists, make {flat} list columns too or use "
            "rke.from_lists(...)"
        )
        raise ColumnTypeError(msg)
    converted = from_lists(
        lf,
        query=columns.query,
        recommended=columns.item,
        relevant=relevant,
        scores=scores,
        item=columns.item,
        score=columns.score,
        relevance=columns.relevance,
        warn_empty=missing_queries != "zero",
    )
    return converted, True
