"""Do two judges label items alike: :func:`label_agreement` (see the package docs)."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from polars_rankeval._engine.columns import check_relevance_level
from polars_rankeval._engine.vocabulary import renamed
from polars_rankeval.agreement._frames import collect
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    ColumnValueError,
    DuplicateItemError,
    InvalidOptionError,
)

#: The columns of label_agreement's output, after the query column.
AGREEMENT_COLUMNS: tuple[str, ...] = (
    "judged_both",
    "only_a",
    "only_b",
    "agreement",
    "kappa",
    "kappa_linear",
    "kappa_quadratic",
    "alpha_nominal",
    "alpha_ordinal",
    "relevant_a",
    "relevant_b",
    "relevant_both",
    "jaccard",
)


def _labels(frame: Any, name: str, query: str, item: str, relevance: str) -> pl.DataFrame:
    data = collect(frame, name)
    missing = [column for column in (query, item, relevance) if column not in data.columns]
    if missing:
        msg = f"{name} has no column {missing}; its columns: {data.columns}"
        raise ColumnNotFoundError(msg)
    dtype = data.schema[relevance]
    if not dtype.is_numeric() or dtype == pl.Boolean:
        msg = f"{name}: the label column {relevance!r} must be numeric, got {dtype}"
        raise ColumnTypeError(msg)
    data = data.select(query, item, pl.col(relevance).cast(pl.Float64).alias("_label"))
    bad = data.filter(pl.col("_label").is_null() | pl.col("_label").is_nan())
    if bad.height:
        row = bad.row(0)
        msg = f"{name}: query {row[0]!r} item {row[1]!r} has no label (null or NaN)"
        raise ColumnValueError(msg)
    repeated = data.filter(pl.struct(query, item).is_duplicated())
    if repeated.height:
        row = repeated.row(0)
        msg = f"{name} labels query {row[0]!r} item {row[1]!r} more than once"
        raise DuplicateItemError(msg)
    return data


def _kappa(counts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Cohen's (weighted) κ of each contingency table ``counts[g, a, b]``."""
    total = counts.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = (counts * weights).sum(axis=(1, 2)) / total
        rows = counts.sum(axis=2) / total[:, None]
        cols = counts.sum(axis=1) / total[:, None]
        expected = np.einsum("ga,gb,ab->g", rows, cols, weights)
        kappa = 1.0 - observed / expected
    # No expected disagreement (one label on both sides): κ is undefined.
    return np.where(expected > 0, kappa, np.nan)


def _alpha(counts: np.ndarray, values: np.ndarray, level: str) -> np.ndarray:
    """Krippendorff's α of two coders without missing labels, from ``counts[g, a, b]``.

    The coincidence matrix of two coders is ``counts + countsᵀ`` (each unit adds its pair
    both ways, weighted 1/(m − 1) = 1); ``α = 1 − (n − 1) Σ o·δ / Σ n_c n_k δ``.
    """
    coincidence = counts + counts.transpose(0, 2, 1)
    marginals = coincidence.sum(axis=2)  # n_c
    n = marginals.sum(axis=1)
    size = len(values)
    if level == "nominal":
        delta = np.broadcast_to(1.0 - np.eye(size), coincidence.shape)
    else:
        # ordinal: δ(c, k) = (Σ_{g=c..k} n_g − (n_c + n_k)/2)², over the ordered values.
        cumulative = np.cumsum(marginals, axis=1)
        low = np.minimum.outer(np.arange(size), np.arange(size))
        high = np.maximum.outer(np.arange(size), np.arange(size))
        before = np.where(low > 0, cumulative[:, np.maximum(low - 1, 0)], 0.0)
        between = cumulative[:, high] - before
        delta = (between - (marginals[:, :, None] + marginals[:, None, :]) / 2.0) ** 2
    observed = (coincidence * delta).sum(axis=(1, 2))
    expected = np.einsum("ga,gb,gab->g", marginals, marginals, delta)
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = 1.0 - (n - 1) * observed / expected
    return np.where(expected > 0, alpha, np.nan)


def _scores(counts: np.ndarray, values: np.ndarray) -> dict[str, np.ndarray]:
    distance = np.abs(values[:, None] - values[None, :])
    total = counts.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        agreement = np.trace(counts, axis1=1, axis2=2) / total
    return {
        "agreement": np.where(total > 0, agreement, np.nan),
        "kappa": _kappa(counts, (distance > 0).astype(np.float64)),
        "kappa_linear": _kappa(counts, distance),
        "kappa_quadratic": _kappa(counts, distance**2),
        "alpha_nominal": _alpha(counts, values, "nominal"),
        "alpha_ordinal": _alpha(counts, values, "ordinal"),
    }


@renamed(qrels_a="data", qrels_b="other")
def label_agreement(
    data: pl.DataFrame | pl.LazyFrame,
    other: pl.DataFrame | pl.LazyFrame,
    *,
    query: str = "query",
    item: str = "item",
    relevance: str = "relevance",
    relevance_level: int = 1,
    per_query: bool = False,
) -> pl.DataFrame:
    """How two judges' labels of the same items agree: κ, α and the relevant sets' Jaccard.

    Parameters
    ----------
    data, other
        Labels, one row per (query, item): frames or LazyFrames (``read_trec_qrels`` output);
        the two judges are called a (``data``) and b (``other``) in the result.
    query, item, relevance
        Column names (the same in both).
    relevance_level
        An item is relevant when its label is at least this int (for the relevant sets), as
        trec_eval ``-l`` and :func:`~polars_rankeval.evaluate`'s ``relevance_level=``.
    per_query
        One row per query (of either side) instead of one row over all queries.

    Returns
    -------
    DataFrame
        ``query`` (with ``per_query=True``) and:

        * ``judged_both``, ``only_a``, ``only_b``: items both sides labelled / only one did.
          κ, α and ``agreement`` are computed on the items both labelled only.
        * ``agreement``: the share of those items with equal labels.
        * ``kappa``, ``kappa_linear``, ``kappa_quadratic``: Cohen's κ, unweighted and with
          weights ``|x − y|`` and ``(x − y)²`` of the label values (so grades 0 and 3 are three
          steps apart even when no item is labelled 1 or 2).
        * ``alpha_nominal``, ``alpha_ordinal``: Krippendorff's α (two coders, no missing).
        * ``relevant_a``, ``relevant_b``, ``relevant_both``, ``jaccard``: the relevant sets
          (label ≥ ``relevance_level``) over all items each side labelled, and
          |A ∩ B| / |A ∪ B|.

        Overall, every (query, item) is one unit: the labels are pooled, not the per-query
        values averaged. A value is NaN where it is undefined: no item labelled by both,
        κ or α with no expected disagreement (one label throughout), Jaccard of two empty sets.

    Examples
    --------
    >>> import polars as pl
    >>> human = pl.DataFrame({"query": ["q1"] * 4, "item": list("abcd"), "relevance": [2, 1, 0, 0]})
    >>> judge = pl.DataFrame({"query": ["q1"] * 4, "item": list("abce"), "relevance": [2, 0, 0, 1]})
    >>> out = label_agreement(human, judge)
    >>> out.select("judged_both", "only_a", "only_b", "kappa", "jaccard").rows()
    [(3, 1, 1, 0.5, 0.3333333333333333)]
    """
    # the one rule of every relevance_level= (evaluate, metrics' rel=, the command line): an
    # int, as trec_eval -l; a float such as nan once passed and made every relevant set empty
    level = check_relevance_level(relevance_level)
    if len({query, item, relevance}) < 3:
        msg = "options query=, item= and relevance= must name three different columns"
        raise InvalidOptionError(msg)
    left = _labels(data, "data", query, item, relevance)
    right = _labels(other, "other", query, item, relevance)
    if left.schema[query] != right.schema[query] or left.schema[item] != right.schema[item]:
        right = right.with_columns(
            pl.col(query).cast(left.schema[query]), pl.col(item).cast(left.schema[item])
        )
    joined = left.join(right, on=[query, item], how="full", coalesce=True, suffix="_b")
    sets = joined.group_by(query).agg(
        pl.col("_label").is_not_null().sum().alias("_judged_a"),
        pl.col("_label_b").is_not_null().sum().alias("_judged_b"),
        (pl.col("_label").is_not_null() & pl.col("_label_b").is_not_null())
        .sum()
        .alias("judged_both"),
        (pl.col("_label") >= level).sum().alias("relevant_a"),
        (pl.col("_label_b") >= level).sum().alias("relevant_b"),
        ((pl.col("_label") >= level) & (pl.col("_label_b") >= level)).sum().alias("relevant_both"),
    )
    sets = sets.sort(query).with_columns(
        (pl.col("_judged_a") - pl.col("judged_both")).alias("only_a"),
        (pl.col("_judged_b") - pl.col("judged_both")).alias("only_b"),
    )
    both = joined.drop_nulls(["_label", "_label_b"])
    values = np.unique(np.concatenate([both["_label"].to_numpy(), both["_label_b"].to_numpy()]))
    queries = sets[query]
    index = sets.select(query).with_row_index("_group")
    group = both.join(index, on=query, how="left")["_group"].cast(pl.Int64)
    size = max(len(values), 1)
    counts = np.zeros((len(queries) + 1, size, size))
    if both.height:
        code_a = np.searchsorted(values, both["_label"].to_numpy())
        code_b = np.searchsorted(values, both["_label_b"].to_numpy())
        # one bincount over (query, label a, label b) cells: np.add.at is far slower
        cells = (group.to_numpy() * size + code_a) * size + code_b
        counts[:-1] = np.bincount(cells, minlength=len(queries) * size * size).reshape(
            len(queries), size, size
        )
    counts[-1] = counts[:-1].sum(axis=0)  # overall: every (query, item) pooled
    scores = _scores(counts, values if len(values) else np.zeros(1))
    totals = sets.select(pl.exclude(query).sum())
    rows = pl.concat([sets.drop(query), totals]).with_columns(
        [pl.Series(name, column) for name, column in scores.items()]
    )
    union = pl.col("relevant_a") + pl.col("relevant_b") - pl.col("relevant_both")
    rows = rows.with_columns(
        pl.when(union > 0)
        .then(pl.col("relevant_both") / union)
        .otherwise(float("nan"))
        .alias("jaccard")
    ).select(
        [
            pl.col(name).cast(pl.Int64)
            if name
            in {"judged_both", "only_a", "only_b", "relevant_a", "relevant_b", "relevant_both"}
            else pl.col(name)
            for name in AGREEMENT_COLUMNS
        ]
    )
    if per_query:
        return pl.concat([queries.to_frame(), rows.head(len(queries))], how="horizontal")
    return rows.tail(1)
