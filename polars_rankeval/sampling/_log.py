"""The sampled log (each list's positives and stored negatives, scored) and the full log."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from polars_rankeval._engine.columns import by_list
from polars_rankeval.errors import ColumnValueError
from polars_rankeval.sampling._frames import SHOWN, align, no_duplicates, read, require
from polars_rankeval.sampling._negatives import POSITIVE

#: The relevance column of the logs built here (1: a positive, 0: a negative).
RELEVANCE = "relevance"
#: Separates the query and the positive in a ``per="positive"`` list's query id.
SEPARATOR = "|"


def scored_inputs(
    data: object,
    positives: object,
    *,
    by: list[str],
    query: str,
    item: str,
    score: str,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The scores and positives, checked, with the positives' ids in the scores' dtypes."""
    scored = read(data, "data")
    require(scored, [*by, query, item, score], "data")
    scored = scored.select(*by, query, item, score)
    no_duplicates(scored, [*by, query, item], "data")
    held = read(positives, "positives")
    require(held, [query, item], "positives")
    held = held.select(query, item)
    no_duplicates(held, [query, item], "positives")
    held = align(
        align(held, query, scored.schema[query], "positives"),
        item,
        scored.schema[item],
        "positives",
    )
    return scored, held


def list_id(query: str) -> pl.Expr:
    """A ``per="positive"`` list's query id: ``"<query>|<positive>"`` (one list per pair)."""
    return pl.concat_str(
        pl.col(query).cast(pl.String), pl.lit(SEPARATOR), pl.col(POSITIVE).cast(pl.String)
    ).alias(query)


def _attach_scores(
    rows: pl.DataFrame, scored: pl.DataFrame, *, by: list[str], query: str, item: str, score: str
) -> pl.DataFrame:
    """Every system's score for each row; a row some system did not score is an error."""
    systems = scored.select(by).unique().sort(by) if by else pl.DataFrame()
    crossed = systems.join(rows, how="cross") if by else rows
    joined = crossed.join(scored, on=[*by, query, item], how="left")
    lacking = joined.filter(pl.col(score).is_null())
    if lacking.height:
        keys = [*by, query, item]
        shown = lacking.sort(keys).head(SHOWN).select(keys).rows()
        msg = (
            f"{lacking.height} sampled (system, query, item) row(s) have no score, e.g. "
            f"({', '.join(keys)}) {shown}; the data= table must score every positive and "
            "every stored negative for every system (a missing score is never read as a low one)"
        )
        raise ColumnValueError(msg)
    return joined


def sampled_log(
    data: object,
    positives: object,
    negatives: object,
    *,
    by: str | Sequence[str] | None = None,
    query: str = "query",
    item: str = "item",
    score: str = "score",
) -> pl.DataFrame:
    """The log that :func:`~polars_rankeval.evaluate` scores for a sampled evaluation.

    Parameters
    ----------
    data
        The systems' scores (``by`` columns, ``query``, ``item``, ``score``): a frame, a
        LazyFrame or a Parquet path. It must score every positive and every negative.
    positives
        The relevant items (``query``, ``item``).
    negatives
        :func:`sample_negatives`' output (``query``, ``item``; with a ``positive`` column, each
        (query, positive) is its own list).
    by
        The column(s) naming the systems in ``data``; each system gets every list.
    query, item, score
        The column names.

    Returns
    -------
    pl.DataFrame
        ``by`` columns, ``query``, ``item``, ``score`` and ``relevance`` (1 for a positive, 0
        for a negative), sorted. With a ``positive`` column in ``negatives`` the ``query``
        column holds ``"<query>|<positive>"`` (a string: each pair is one list with a single
        positive, the others left out) and a ``positive`` column is kept. Sampled metrics are
        evaluate's metrics on this log (ties in score are ordered as evaluate orders them,
        trec_eval's rule by default: by item id, descending).

    Examples
    --------
    >>> import polars as pl
    >>> scores = pl.DataFrame({"query": [1, 1, 1], "item": [5, 6, 7], "score": [0.9, 0.5, 0.7]})
    >>> positives = pl.DataFrame({"query": [1], "item": [6]})
    >>> negatives = pl.DataFrame({"query": [1, 1], "item": [5, 7]})
    >>> sampled_log(scores, positives, negatives).rows()
    [(1, 5, 0.9, 0), (1, 6, 0.5, 1), (1, 7, 0.7, 0)]
    """
    columns = by_list(by)
    scored, held = scored_inputs(data, positives, by=columns, query=query, item=item, score=score)
    drawn = read(negatives, "negatives")
    per_positive = POSITIVE in drawn.columns
    keys = [query, POSITIVE, item] if per_positive else [query, item]
    require(drawn, keys, "negatives")
    drawn = drawn.select(keys)
    no_duplicates(drawn, keys, "negatives")
    drawn = align(
        align(drawn, query, scored.schema[query], "negatives"),
        item,
        scored.schema[item],
        "negatives",
    )
    if per_positive:
        drawn = align(drawn, POSITIVE, scored.schema[item], "negatives")
    clash = drawn.join(held, on=[query, item])
    if clash.height:
        shown = clash.sort(query, item).head(SHOWN).select(query, item).rows()
        msg = (
            f"{clash.height} negative(s) are positives of their query, e.g. (query, item) "
            f"{shown}; a negative must be an item the user has not interacted with"
        )
        raise ColumnValueError(msg)
    keyed = [query, POSITIVE] if per_positive else [query]
    lonely = (held.rename({item: POSITIVE}) if per_positive else held).join(
        drawn, on=keyed, how="anti"
    )
    if lonely.height:
        shown = lonely.sort(keyed).head(SHOWN).select(keyed).rows()
        msg = (
            f"{lonely.height} list(s) have positives but no negative in negatives=, e.g. "
            f"({', '.join(keyed)}) {shown}; a positive alone would score as a hit. Draw "
            "negatives for the same positives, or drop those rows from positives="
        )
        raise ColumnValueError(msg)
    if per_positive:
        lists = held.rename({item: POSITIVE})
        unknown = drawn.join(lists, on=[query, POSITIVE], how="anti")
        if unknown.height:
            shown = unknown.head(SHOWN).select(query, POSITIVE).rows()
            msg = f"negatives name (query, positive) pairs that are not positives, e.g. {shown}"
            raise ColumnValueError(msg)
        rows = pl.concat(
            [
                lists.with_columns(pl.col(POSITIVE).alias(item), pl.lit(1).alias(RELEVANCE)),
                drawn.with_columns(pl.lit(0).alias(RELEVANCE)),
            ]
        )
    else:
        rows = pl.concat(
            [
                held.with_columns(pl.lit(1).alias(RELEVANCE)),
                drawn.with_columns(pl.lit(0).alias(RELEVANCE)),
            ]
        )
    rows = rows.with_columns(pl.col(RELEVANCE).cast(pl.Int8))
    out = _attach_scores(rows, scored, by=columns, query=query, item=item, score=score)
    if per_positive:
        out = out.with_columns(list_id(query))
        order = [*columns, query, POSITIVE, item, score, RELEVANCE]
    else:
        order = [*columns, query, item, score, RELEVANCE]
    return out.select(order).sort([*columns, query, item])


def full_log(
    scored: pl.DataFrame,
    held: pl.DataFrame,
    seen: pl.DataFrame | None,
    *,
    per_positive: bool,
    query: str,
    item: str,
) -> pl.LazyFrame:
    """Each positive ranked among every scored item its user has not interacted with.

    ``per_positive``: one list per (query, positive), the query's other positives left out.
    Lazy: with one list per positive the log holds positives x candidates rows per system, so
    ``evaluate`` reads it in bounded passes (each over a bucket of lists) instead of holding
    it whole.
    """
    candidates = scored.lazy()
    if seen is not None:
        candidates = candidates.join(seen.lazy(), on=[query, item], how="anti")
    labelled = candidates.join(
        held.lazy().with_columns(pl.lit(1, dtype=pl.Int8).alias(RELEVANCE)),
        on=[query, item],
        how="left",
    ).with_columns(pl.col(RELEVANCE).fill_null(0))
    if not per_positive:
        return labelled
    others = labelled.filter(pl.col(RELEVANCE) == 0).join(
        held.lazy().rename({item: POSITIVE}), on=query
    )
    own = labelled.filter(pl.col(RELEVANCE) == 1).with_columns(pl.col(item).alias(POSITIVE))
    columns = own.collect_schema().names()
    return pl.concat([own, others.select(columns)]).with_columns(list_id(query))
