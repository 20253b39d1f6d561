"""Diversity of each list: intra-list diversity, categories, serendipity, unexpectedness.

Per query (averaged over queries), over the list's top ``k`` retrieved items. Each list's
top-k set is a hidden per-query value; a finishing step joins it to the tables.

Item similarity (``similarity=``):

* ``"features"``: cosine similarity of the items' vectors from ``items=``: ``features=`` names
  an embedding column (List/Array) or numeric columns (a list, or ``"x+y"`` in a metric
  string); by default the table's only List/Array column, else every numeric column but the
  item id. A zero vector has similarity 0 with everything, itself included (scikit-learn's
  ``cosine_similarity`` gives 0; Recommenders divides by 0); so does a missing vector (a null
  vector, every feature column null, or no row in ``items=``). A null, NaN or infinite value
  inside a vector raises ColumnValueError (it would make the similarities NaN, or silently
  count as 0.0). Computed in closed form from unit vectors ``u``: a list's pair similarities
  sum to ``(|Σ u|² − Σ |u|²) / 2`` and an item's similarities to a history sum to
  ``u · Σ u_j``, per-dimension sums instead of pairs (``k × d`` values per list).
* ``"cooccurrence"`` (Recommenders' default): ``C(i, j) / sqrt(C(i) C(j))`` over the train
  users, ``C`` counting distinct users; pairs never seen together have similarity 0, an item
  with itself 1. Exact, but not in bounded memory: it joins the listed items' train histories
  with themselves (``k²`` pairs per list, ``k × history`` for serendipity).

Metrics:

* ``ild@k``: ``normalize="pairs"`` (default; Recommenders ``diversity``): ``1 −`` the mean
  similarity over the unordered pairs of the list (null below 2 items);
  ``normalize="length"`` (Evidently ``DiversityMetric``): the sum of the unordered pairs'
  cosine distances ``1 − sim`` divided by the list's length (0 for one item). Items without
  a row in ``items=`` are left out of the list.
* ``ils@k`` (LensKit ``ILS``): the mean similarity over the unordered pairs; 1 for a single
  item, null for none.
* ``categorical_diversity@k`` (RePlay): distinct categories of the top-k items over ``k``
  (``category=`` a column of ``items=``; a List column gives several categories per item).
* ``serendipity@k``: relevant top-k items unlike the user's train items; Recommenders'
  per-item mean (``normalize="items"``) or Evidently's sum over the history
  (``normalize="history"``). Items without a row in ``items=`` count as zero vectors.
* ``unexpectedness@k(baseline=...)`` (RePlay): ``1 − |top-k ∩ baseline's top-k| / k``
  against another system of the same log (a value of the single ``by`` column) for the same
  query; a query the baseline has no list for scores ``absent=`` (1, 0 or null).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import polars as pl

from polars_rankeval._engine.context import RankingContext
from polars_rankeval._engine.exact_sum import exact_quotient, exact_sum
from polars_rankeval._engine.options import check_choice
from polars_rankeval._engine.tables import Tables, refuse_rows
from polars_rankeval.errors import ColumnNotFoundError, ColumnTypeError, InvalidOptionError
from polars_rankeval.metrics._base import (
    Lookup,
    Metric,
    Partials,
    at,
    named,
    per_group,
    required_cutoff,
)

Similarity = Literal["features", "cooccurrence"]
IldNormalize = Literal["pairs", "length"]
SerendipityNormalize = Literal["items", "history"]
SerendipityRelevant = Literal["labels", "all"]
Absent = Literal["one", "zero", "drop"]
Features = str | Sequence[str] | None

_ITEM = "__rke_item"
_OTHER = "__rke_item_2"
_USER = "__rke_user"
_VECTOR = "__rke_vector"
_SIM = "__rke_sim"
_REL = "__rke_relevant_items"
_TOP = "__rke_top_items"


def _item_set(ctx: RankingContext, mask: pl.Expr) -> pl.Expr:
    assert ctx.item is not None
    # unique().implode() stays on the streaming engine; items are unique within a list
    return ctx.item.filter(mask).unique().implode()


def _feature_columns(
    items: pl.LazyFrame, item: str, features: Features, metric: str
) -> tuple[pl.Expr, list[str]]:
    """The items' vectors as one List(Float64) expression, and the columns they come from."""
    schema = items.collect_schema()
    others = [name for name in schema.names() if name != item]
    if features is None:
        nested = [name for name in others if isinstance(schema[name], pl.List | pl.Array)]
        numeric = [name for name in others if schema[name].is_numeric()]
        if len(nested) == 1:
            chosen: list[str] = nested
        elif not nested and numeric:
            chosen = numeric
        else:
            msg = (
                f"metric {metric!r} cannot tell which columns of items= are the features "
                f"(columns: {others}); name them with the option features=, e.g. "
                f"'{metric.split('(', maxsplit=1)[0]}(features=embedding)'"
            )
            raise InvalidOptionError(msg)
    elif isinstance(features, str):
        # "x+y" names two columns (how a list of columns shows in a metric name)
        split = features not in schema and "+" in features
        chosen = features.split("+") if split else [features]
    else:
        chosen = list(features)
    for name in chosen:
        if name not in schema:
            msg = (
                f"column {name!r} (option features= of {metric!r}) is not in items=; "
                f"columns: {others}"
            )
            raise ColumnNotFoundError(msg)
    if len(chosen) == 1 and isinstance(schema[chosen[0]], pl.List | pl.Array):
        inner = getattr(schema[chosen[0]], "inner", None)
        if inner is None or not inner.is_numeric():
            msg = f"column {chosen[0]!r} of items= must hold numbers, got {schema[chosen[0]]}"
            raise ColumnTypeError(msg)
        return pl.col(chosen[0]).cast(pl.List(pl.Float64)), chosen
    bad = [name for name in chosen if not schema[name].is_numeric()]
    if bad:
        msg = f"feature columns {bad} of items= must be numeric (or one List/Array column)"
        raise ColumnTypeError(msg)
    return pl.concat_list([pl.col(name).cast(pl.Float64) for name in chosen]), chosen


def _unit_vectors(tables: Tables, features: Features, metric: str) -> pl.LazyFrame:
    """(item as String, unit vector); a zero vector stays zero."""
    items = tables.require("items", metric)
    vector, columns = _feature_columns(items, tables.item, features, metric)
    frame = items.select(pl.col(tables.item).cast(pl.String).alias(_ITEM), vector.alias(_VECTOR))
    length = pl.col(_VECTOR).list.len()
    shown = f"column {columns[0]!r}" if len(columns) == 1 else f"columns {columns}"

    def not_finite(rows: pl.DataFrame) -> str:
        return (
            f"{shown} of items= (the features of {metric!r}) has a null, NaN or "
            f"infinite value inside a vector, e.g. item {rows[_ITEM][0]!r}: a cosine "
            "similarity cannot be computed from it; fill or drop those items (a missing "
            "vector, null as a whole or no row at all, counts as a zero vector)"
        )

    # A NaN (or inf) element would make every similarity of that item NaN, and a null element
    # would silently act as 0.0: both are refused. A missing vector (null, or every feature
    # column null) is the documented zero vector.
    elements = pl.col(_VECTOR).list
    some_bad = elements.eval(pl.element().is_finite().not_().fill_null(value=True)).list.any()
    all_null = elements.eval(pl.element().is_null()).list.all()
    frame = refuse_rows(frame, (some_bad & ~all_null).fill_null(value=False), [_ITEM], not_finite)

    def ragged(rows: pl.DataFrame) -> str:
        return (
            f"the items' feature vectors of {metric!r} must all have one length: some are "
            f"shorter than the longest, e.g. item {rows[_ITEM][0]!r} "
            f"({rows['__rke_length'][0]} values)"
        )

    frame = refuse_rows(
        frame.with_columns(length.alias("__rke_length")),
        length.is_not_null() & (length != length.max()),
        [_ITEM, "__rke_length"],
        ragged,
    ).drop("__rke_length")
    norm = (pl.col(_VECTOR) * pl.col(_VECTOR)).list.sum().sqrt()
    return frame.with_columns(
        pl.when(norm > 0).then(pl.col(_VECTOR) / norm).otherwise(pl.col(_VECTOR)).alias(_VECTOR)
    )


def _train_pairs(tables: Tables, metric: str) -> pl.LazyFrame:
    """Distinct (user, item as String) pairs of the train table."""
    train = tables.require("train", metric)
    return train.select(
        pl.col(tables.query).alias(_USER), pl.col(tables.item).cast(pl.String).alias(_ITEM)
    ).unique()


def _cooccurrence(pairs: pl.LazyFrame, tables: Tables, metric: str) -> pl.LazyFrame:
    """``pairs`` (with columns _ITEM, _OTHER) plus their co-occurrence similarity ``_SIM``.

    Exact, but not in bounded memory: the train histories restricted to the pairs' items
    are joined with themselves (per user, its listed history items squared).
    """
    train = _train_pairs(tables, metric)
    wanted = pairs.select(_ITEM, _OTHER).unique()
    # only the items the pairs name: the users' histories restricted to them, paired up
    needed = pl.concat([wanted.select(_ITEM), wanted.select(pl.col(_OTHER).alias(_ITEM))]).unique()
    history = train.join(needed, on=_ITEM, how="semi")
    users = history.group_by(_ITEM).agg(pl.len().cast(pl.Float64).alias("__rke_c"))
    together = (
        history.join(history.rename({_ITEM: _OTHER}), on=_USER, how="inner")
        .filter(pl.col(_ITEM) < pl.col(_OTHER))
        .group_by(_ITEM, _OTHER)
        .agg(pl.len().cast(pl.Float64).alias("cij"))
    )
    low = pl.min_horizontal(_ITEM, _OTHER).alias("__rke_low")
    high = pl.max_horizontal(_ITEM, _OTHER).alias("__rke_high")
    scored = (
        wanted.with_columns(low, high)
        .join(
            together.rename({_ITEM: "__rke_low", _OTHER: "__rke_high"}),
            on=["__rke_low", "__rke_high"],
            how="left",
        )
        .join(users, on=_ITEM, how="left")
        .join(users.rename({_ITEM: _OTHER, "__rke_c": "__rke_c2"}), on=_OTHER, how="left")
        .select(
            _ITEM,
            _OTHER,
            # an item with itself: every one of its users has both (similarity 1)
            pl.when(pl.col(_ITEM) == pl.col(_OTHER))
            .then(pl.col("__rke_c"))
            .otherwise(pl.col("cij"))
            .fill_null(0.0)
            .truediv((pl.col("__rke_c") * pl.col("__rke_c2")).sqrt())
            .fill_null(0.0)
            .fill_nan(0.0)
            .alias(_SIM),
        )
    )
    return pairs.join(scored, on=[_ITEM, _OTHER], how="left").with_columns(
        pl.col(_SIM).fill_null(0.0)
    )


def _cooccurrence_sums(
    exploded: pl.LazyFrame, keys: Sequence[str], tables: Tables, label: str
) -> pl.LazyFrame:
    """Per list: ``n`` items, ``p`` pairs and ``s``, the sum of the pairs' similarities."""
    sizes = per_group(exploded, keys, pl.len().cast(pl.Float64).alias("__rke_n"))
    pairs = exploded.join(
        exploded.rename({_ITEM: _OTHER}), on=list(keys), how="inner", nulls_equal=True
    ).filter(pl.col(_ITEM) < pl.col(_OTHER))
    scored = _cooccurrence(pairs, tables, label)
    sums = per_group(scored, keys, exact_sum(pl.col(_SIM)).alias("__rke_s"))
    both = sizes.join(sums, on=list(keys), how="left", nulls_equal=True)
    return both.with_columns(
        (pl.col("__rke_n") * (pl.col("__rke_n") - 1) / 2).alias("__rke_p"),
        pl.col("__rke_s").fill_null(0.0),
    )


def _feature_sums(
    exploded: pl.LazyFrame, keys: Sequence[str], vectors: pl.LazyFrame
) -> pl.LazyFrame:
    """``_cooccurrence_sums``' columns for cosine similarity, without forming the pairs.

    With unit vectors, the pairs' similarities sum to ``(|Σ u|² − Σ |u|²) / 2``: per list,
    one sum per dimension (``k × d`` values) instead of ``k²/2`` pair products. Items without
    a vector are left out of the list.
    """
    joined = exploded.join(vectors, on=_ITEM, how="inner")
    own = (pl.col(_VECTOR) * pl.col(_VECTOR)).list.sum()
    sizes = per_group(
        joined, keys, pl.len().cast(pl.Float64).alias("__rke_n"), exact_sum(own).alias("__rke_self")
    )
    dims = joined.with_columns(
        pl.int_ranges(pl.col(_VECTOR).list.len()).alias("__rke_dim")
    ).explode([_VECTOR, "__rke_dim"])
    per_dim = dims.group_by([*keys, "__rke_dim"]).agg(exact_sum(pl.col(_VECTOR)).alias("__rke_d"))
    squares = per_group(
        per_dim, keys, exact_sum(pl.col("__rke_d") * pl.col("__rke_d")).alias("__rke_q")
    )
    both = sizes.join(squares, on=list(keys), how="left", nulls_equal=True)
    return both.select(
        *keys,
        "__rke_n",
        (pl.col("__rke_n") * (pl.col("__rke_n") - 1) / 2).alias("__rke_p"),
        ((pl.col("__rke_q").fill_null(0.0) - pl.col("__rke_self")) / 2).alias("__rke_s"),
    )


def _check_similarity(similarity: object, features: Features) -> Similarity:
    chosen: Similarity = check_choice("similarity", similarity, ["features", "cooccurrence"])
    if chosen == "cooccurrence" and features is not None:
        msg = "option features= applies only with similarity=features"
        raise InvalidOptionError(msg)
    return chosen


def _shown(**options: object) -> dict[str, object]:
    return {key: value for key, value in options.items() if value is not None}


def _features_shown(features: Features) -> str | None:
    """``features=`` as it appears in a metric name: a list of columns joined by ``+``."""
    if features is None or isinstance(features, str):
        return features
    return "+".join(features)


def _pair_sums(
    k: int, similarity: Similarity, features: Features
) -> tuple[str, Callable[[RankingContext], Partials], Callable[..., pl.LazyFrame]]:
    """The hidden top-k set and the finishing step's per-list ``n``, ``p`` (pairs), ``s``."""
    key = f"top_items@{k}"

    def partials(ctx: RankingContext) -> Partials:
        return {key: _item_set(ctx, ctx.within(k))}

    def sums(frame: pl.LazyFrame, keys: Sequence[str], label: str, tables: Tables) -> pl.LazyFrame:
        exploded = frame.select(*keys, pl.col(label).alias(_ITEM)).explode(_ITEM).drop_nulls(_ITEM)
        if similarity == "features":
            return _feature_sums(exploded, keys, _unit_vectors(tables, features, label))
        return _cooccurrence_sums(exploded, keys, tables, label)

    return key, partials, sums


def ild(
    k: int,
    *,
    similarity: Similarity = "features",
    features: Features = None,
    normalize: IldNormalize = "pairs",
) -> Metric:
    """``ild@k``: intra-list diversity, from the similarity of the list's item pairs.

    With ``n`` items in the top ``k`` (those with a vector, for ``similarity="features"``),
    ``p = n(n − 1)/2`` unordered pairs and ``S`` the sum of their similarities:

    * ``normalize="pairs"`` (Recommenders ``diversity``): ``1 − S / p``; null when ``n < 2``
      (Recommenders leaves such a user out; so does the mean here).
    * ``normalize="length"`` (Evidently ``DiversityMetric``): ``(p − S) / n``, the unordered
      pairs' cosine distances summed and divided by the list's length; 0 for one item.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> items = pl.DataFrame({"item": ["a", "b", "c"], "x": [1.0, 0.0, 1.0], "y": [0.0, 1.0, 1.0]})
    >>> log = pl.DataFrame({"query": [1, 1], "item": ["a", "b"], "score": [2.0, 1.0]})
    >>> # a and b are orthogonal: similarity 0, diversity 1
    >>> rke.evaluate(log, ["ild@2"], items=items).item()
    1.0
    >>> rke.evaluate(log, ["ild@2(normalize=length)"], items=items).item()
    0.5
    """
    similarity = _check_similarity(similarity, features)
    normalize = check_choice("normalize", normalize, ["pairs", "length"])
    shown = _shown(
        similarity=similarity if similarity != "features" else None,
        features=_features_shown(features),
        normalize=normalize if normalize != "pairs" else None,
    )
    name = named(at("ild", required_cutoff(k, "ild")), shown)
    key, partials, sums = _pair_sums(k, similarity, features)

    def finish(
        frame: pl.LazyFrame, keys: Sequence[str], label: str, tables: Tables
    ) -> pl.LazyFrame:
        both = sums(frame, keys, label, tables)
        if normalize == "pairs":
            value: pl.Expr = pl.when(pl.col("__rke_n") >= 2).then(
                1 - pl.col("__rke_s") / pl.col("__rke_p")
            )
        else:
            distance = (pl.col("__rke_p") - pl.col("__rke_s")).fill_null(0.0)
            value = distance / pl.col("__rke_n")
        return both.select(*keys, value.alias(label))

    return Metric(
        name,
        partials,
        lambda p: p(key),
        needs=("items",) if similarity == "features" else ("train",),
        reads_labels=False,
        finish=finish,
    )


def ils(k: int, *, similarity: Similarity = "features", features: Features = None) -> Metric:
    """``ils@k`` (LensKit ``ILS``): intra-list similarity, the mean similarity of the pairs.

    ``S / p`` over the unordered pairs of the top ``k`` items with a vector (LensKit leaves
    items unknown to its dataset out too); 1 for a single item and null for none, as LensKit.
    Lower is more diverse. For a list of 2 or more items, ``ils = 1 − ild``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> items = pl.DataFrame({"item": ["a", "b", "c"], "x": [1.0, 0.0, 1.0], "y": [0.0, 1.0, 1.0]})
    >>> log = pl.DataFrame({"query": [1, 1, 2], "item": ["a", "c", "b"], "score": [2.0, 1, 1]})
    >>> rke.evaluate(log, ["ils@2"], items=items, per_query=True)["ils@2"].round(6).to_list()
    [0.707107, 1.0]
    """
    similarity = _check_similarity(similarity, features)
    shown = _shown(
        similarity=similarity if similarity != "features" else None,
        features=_features_shown(features),
    )
    name = named(at("ils", required_cutoff(k, "ils")), shown)
    key, partials, sums = _pair_sums(k, similarity, features)

    def finish(
        frame: pl.LazyFrame, keys: Sequence[str], label: str, tables: Tables
    ) -> pl.LazyFrame:
        both = sums(frame, keys, label, tables)
        value = (
            pl.when(pl.col("__rke_n") >= 2)
            .then(pl.col("__rke_s") / pl.col("__rke_p"))
            .when(pl.col("__rke_n") == 1)
            .then(pl.lit(1.0))
        )
        return both.select(*keys, value.alias(label))

    return Metric(
        name,
        partials,
        lambda p: p(key),
        direction="lower",
        needs=("items",) if similarity == "features" else ("train",),
        reads_labels=False,
        finish=finish,
    )


def categorical_diversity(k: int, *, category: str = "category") -> Metric:
    """``categorical_diversity@k`` (RePlay): distinct categories in the top ``k``, over ``k``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> items = pl.DataFrame({"item": ["a", "b", "c"], "category": ["x", "x", "y"]})
    >>> log = pl.DataFrame({"query": [1, 1, 1], "item": ["a", "b", "c"], "score": [3.0, 2, 1]})
    >>> rke.evaluate(log, ["categorical_diversity@2", "categorical_diversity@4"], items=items).row(
    ...     0
    ... )
    (0.5, 0.5)
    """
    if not isinstance(category, str):
        msg = f"option category= of 'categorical_diversity' must be a column name, got {category!r}"
        raise InvalidOptionError(msg)
    checked = required_cutoff(k, "categorical_diversity")
    name = named(
        at("categorical_diversity", checked),
        {"category": category} if category != "category" else {},
    )
    key = f"top_items@{k}"

    def partials(ctx: RankingContext) -> Partials:
        return {key: _item_set(ctx, ctx.within(k))}

    def finish(
        frame: pl.LazyFrame, keys: Sequence[str], label: str, tables: Tables
    ) -> pl.LazyFrame:
        items = tables.require("items", label)
        schema = items.collect_schema()
        if category not in schema:
            msg = (
                f"column {category!r} (option category= of {label!r}) is not in items=; "
                f"columns: {list(schema.names())}"
            )
            raise ColumnNotFoundError(msg)
        categories = items.select(
            pl.col(tables.item).cast(pl.String).alias(_ITEM), pl.col(category).alias("__rke_c")
        )
        if isinstance(schema[category], pl.List | pl.Array):
            categories = categories.explode("__rke_c")
        exploded = frame.select(*keys, pl.col(label).alias(_ITEM)).explode(_ITEM)
        joined = exploded.join(categories, on=_ITEM, how="left")
        counted = per_group(
            joined, keys, pl.col("__rke_c").drop_nulls().n_unique().alias("__rke_d")
        )
        return counted.select(*keys, exact_quotient(pl.col("__rke_d"), checked).alias(label))

    return Metric(
        name, partials, lambda p: p(key), needs=("items",), reads_labels=False, finish=finish
    )


def _history_similarity(
    relevant: pl.LazyFrame,
    keys: Sequence[str],
    tables: Tables,
    *,
    similarity: Similarity,
    features: Features,
    metric: str,
) -> pl.LazyFrame:
    """Per (list, relevant item): ``t``, its similarities to the user's train items, summed.

    Features: with unit vectors, ``Σ_j u_i·u_j = u_i · Σ_j u_j``, so each user's history is
    one profile vector (one sum per dimension) and no (item, history item) pair is formed.
    Co-occurrence: the (item, history item) pairs are joined, ``k × history`` rows per list.
    An item without a vector counts as a zero vector (similarity 0 with every item).
    """
    query = tables.query
    history = _train_pairs(tables, metric)
    if similarity == "cooccurrence":
        pairs = relevant.join(
            history.rename({_ITEM: _OTHER}), left_on=query, right_on=_USER, how="inner"
        )
        scored = _cooccurrence(pairs, tables, metric)
        return scored.group_by([*keys, _ITEM]).agg(exact_sum(pl.col(_SIM)).alias("__rke_t"))
    vectors = _unit_vectors(tables, features, metric)
    dim = "__rke_dim"

    def by_dimension(frame: pl.LazyFrame) -> pl.LazyFrame:
        joined = frame.join(vectors, on=_ITEM, how="inner")
        return joined.with_columns(pl.int_ranges(pl.col(_VECTOR).list.len()).alias(dim)).explode(
            [_VECTOR, dim]
        )

    profile = (
        by_dimension(history)
        .group_by(_USER, dim)
        .agg(exact_sum(pl.col(_VECTOR)).alias("__rke_profile"))
    )
    products = by_dimension(relevant).join(
        profile, left_on=[query, dim], right_on=[_USER, dim], how="inner"
    )
    sums = products.group_by([*keys, _ITEM]).agg(
        exact_sum(pl.col(_VECTOR) * pl.col("__rke_profile")).alias("__rke_t")
    )
    # relevant items without a vector (or without a profile) have similarity 0
    return relevant.join(sums, on=[*keys, _ITEM], how="left", nulls_equal=True).with_columns(
        pl.col("__rke_t").fill_null(0.0)
    )


def serendipity(
    k: int,
    *,
    similarity: Similarity = "features",
    features: Features = None,
    normalize: SerendipityNormalize = "items",
    relevant: SerendipityRelevant = "labels",
) -> Metric:
    """``serendipity@k``: relevant top-k items unlike the user's train history.

    ``H`` is the user's distinct train items; ``sim`` the item similarity (``similarity=``,
    ``features=``: see the module); ``R`` the list's relevant top-k items (a positive label).

    * ``normalize="items"`` (Recommenders ``serendipity``): ``Σ_{i∈R} (1 − mean_{j∈H}
      sim(i, j)) / n``, ``n`` the number of top-k items; null for a user with no train history.
      (Recommenders multiplies each item's term by its relevance value: with 0/1 labels, as
      here; a graded label counts 1 here.)
    * ``normalize="history"`` (Evidently ``SerendipityMetric``): ``1 − Σ_{j∈H} Σ_{i∈R}
      sim(i, j) / |H|``, for users with a train history and at least one relevant top-k item
      (null otherwise); not divided by ``|R|``, so below 0 when ``R`` is like ``H``.

    ``relevant="all"`` takes every top-k item as relevant, reading no label: Recommenders'
    ``serendipity`` without ``col_relevance`` (its default), where each item's relevance is 1.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> items = pl.DataFrame({"item": ["a", "b", "h"], "x": [1.0, 0.0, 1.0], "y": [0.0, 1.0, 0.0]})
    >>> train = pl.DataFrame({"query": [1], "item": ["h"]})
    >>> log = pl.DataFrame(
    ...     {"query": [1, 1], "item": ["a", "b"], "score": [2.0, 1.0], "relevance": [1, 1]}
    ... )
    >>> # a is the history item h's twin (0), b is orthogonal to it (1): (0 + 1) / 2
    >>> rke.evaluate(log, ["serendipity@2"], items=items, train=train).item()
    0.5
    >>> # Evidently: 1 - (1 + 0) / 1
    >>> rke.evaluate(log, ["serendipity@2(normalize=history)"], items=items, train=train).item()
    0.0
    """
    similarity = _check_similarity(similarity, features)
    normalize = check_choice("normalize", normalize, ["items", "history"])
    relevant = check_choice("relevant", relevant, ["labels", "all"])
    checked = required_cutoff(k, "serendipity")
    shown = _shown(
        similarity=similarity if similarity != "features" else None,
        features=_features_shown(features),
        normalize=normalize if normalize != "items" else None,
        relevant=relevant if relevant != "labels" else None,
    )
    name = named(at("serendipity", checked), shown)
    top_key = f"top_items@{k}"
    # partials are shared by key across metrics: every top-k item is the top-k set itself
    rel_key = top_key if relevant == "all" else f"relevant_top_items@{k}"

    def partials(ctx: RankingContext) -> Partials:
        if relevant == "all":  # every recommended item: no label read
            return {top_key: _item_set(ctx, ctx.within(k))}
        return {
            top_key: _item_set(ctx, ctx.within(k)),
            # a positive relevant label: label 0 never counts, even with relevance_level=0
            # (Recommenders multiplies by the label, so its 0 adds nothing; Evidently: > 0)
            rel_key: _item_set(ctx, ctx.within(k) & ctx.relevant & (ctx.label > 0)),
        }

    def value(p: Lookup) -> pl.Expr:
        return pl.struct(p(top_key).alias(_TOP), p(rel_key).alias(_REL))

    def finish(
        frame: pl.LazyFrame, keys: Sequence[str], label: str, tables: Tables
    ) -> pl.LazyFrame:
        query = tables.query
        lists = frame.select(
            *keys,
            pl.col(label).struct.field(_TOP).alias(_TOP),
            pl.col(label).struct.field(_REL).alias(_REL),
        )
        sizes = lists.select(
            *keys,
            pl.col(_TOP).list.len().cast(pl.Float64).alias("__rke_n"),
            pl.col(_REL).list.len().alias("__rke_r"),
        )
        relevant = lists.select(*keys, pl.col(_REL).alias(_ITEM)).explode(_ITEM).drop_nulls(_ITEM)
        totals = _history_similarity(
            relevant, keys, tables, similarity=similarity, features=features, metric=label
        )
        lengths = (
            _train_pairs(tables, label)
            .group_by(_USER)
            .agg(pl.len().cast(pl.Float64).alias("__rke_h"))
            .rename({_USER: query})
        )
        with_history = sizes.join(lengths, on=query, how="inner")
        if normalize == "items":
            terms = totals.join(lengths, on=query, how="inner").select(
                *keys, (1 - pl.col("__rke_t") / pl.col("__rke_h")).alias("__rke_u")
            )
            sums = per_group(terms, keys, exact_sum(pl.col("__rke_u")).alias("__rke_s"))
            both = with_history.join(sums, on=list(keys), how="left", nulls_equal=True)
            result = pl.when(pl.col("__rke_n") > 0).then(
                pl.col("__rke_s").fill_null(0.0) / pl.col("__rke_n")
            )
        else:
            sums = per_group(totals, keys, exact_sum(pl.col("__rke_t")).alias("__rke_s"))
            both = with_history.join(sums, on=list(keys), how="left", nulls_equal=True)
            result = pl.when(pl.col("__rke_r") > 0).then(
                1 - pl.col("__rke_s").fill_null(0.0) / pl.col("__rke_h")
            )
        return both.select(*keys, result.alias(label))

    needs = ("train", "items") if similarity == "features" else ("train",)
    return Metric(
        name, partials, value, needs=needs, finish=finish, reads_labels=relevant == "labels"
    )


def unexpectedness(k: int, *, baseline: object = None, absent: Absent = "one") -> Metric:
    """``unexpectedness@k(baseline=...)`` (RePlay): share of the top ``k`` not in the baseline's.

    ``1 − |top-k ∩ baseline's top-k| / k`` (``k``, not the list's length: a list shorter than
    ``k`` is never 0, not even the baseline's own). A query the baseline has no list for
    (no retrieved row) scores ``absent=``: ``"one"`` (default: nothing of it is expected),
    ``"zero"`` (RePlay) or ``"drop"`` (null, left out of the mean).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "system": ["new", "new", "old", "old"],
    ...         "query": [1, 1, 1, 1],
    ...         "item": ["a", "b", "a", "c"],
    ...         "score": [2.0, 1.0, 2.0, 1.0],
    ...     }
    ... )
    >>> rke.evaluate(log, ["unexpectedness@2(baseline=old)"], by="system").rows()
    [('new', 0.5), ('old', 0.0)]
    """
    checked = required_cutoff(k, "unexpectedness")
    if baseline is None:
        msg = (
            "metric 'unexpectedness' needs baseline=, the system to compare with (a value of the "
            "by column), e.g. 'unexpectedness@10(baseline=popular)'"
        )
        raise InvalidOptionError(msg)
    absent = check_choice("absent", absent, ["one", "zero", "drop"])
    shown: dict[str, object] = {"baseline": baseline}
    if absent != "one":
        shown["absent"] = absent
    name = named(at("unexpectedness", checked), shown)
    key = f"top_items@{k}"

    def partials(ctx: RankingContext) -> Partials:
        return {key: _item_set(ctx, ctx.within(k))}

    def finish(
        frame: pl.LazyFrame, keys: Sequence[str], label: str, tables: Tables
    ) -> pl.LazyFrame:
        by = [name for name in keys if name != tables.query]
        if len(by) != 1 or by[0].startswith("__rke"):
            msg = (
                f"metric {label!r} compares each system with the baseline's list for the same "
                "query: evaluate it with one by= column naming the systems"
            )
            raise InvalidOptionError(msg)
        system = by[0]
        # the frame is the collected per-query rows: a misspelt baseline must not score every
        # list as fully unexpected
        names = frame.select(pl.col(system).cast(pl.String).unique()).collect().to_series()
        if len(names) and str(baseline) not in names.to_list():  # (no rows: nothing to say)
            msg = (
                f"option baseline={baseline!r} of {label!r} is not a value of the by column "
                f"{system!r}; its values: {sorted(str(name) for name in names.to_list())}"
            )
            raise InvalidOptionError(msg)
        exploded = frame.select(*keys, pl.col(label).alias(_ITEM)).explode(_ITEM).drop_nulls(_ITEM)
        base = exploded.filter(pl.col(system).cast(pl.String) == str(baseline)).select(
            tables.query, _ITEM
        )
        shared = exploded.join(base, on=[tables.query, _ITEM], how="semi")
        counted = per_group(shared, keys, pl.len().cast(pl.Float64).alias("__rke_c"))
        both = frame.select(*keys).join(counted, on=list(keys), how="left", nulls_equal=True)
        value = 1 - pl.col("__rke_c").fill_null(0.0) / checked
        if absent != "one":
            listed = base.select(tables.query).unique().with_columns(pl.lit(True).alias("b"))
            both = both.join(listed, on=tables.query, how="left", nulls_equal=True)
            otherwise = pl.lit(0.0) if absent == "zero" else pl.lit(None, pl.Float64)
            value = pl.when(pl.col("b")).then(value).otherwise(otherwise)
        return both.select(*keys, value.alias(label))

    return Metric(name, partials, lambda p: p(key), reads_labels=False, finish=finish)
