"""Diversity of each list: intra-list diversity, categories, serendipity, unexpectedness.

Per query (averaged over queries), over the list's top ``k`` retrieved items. Each list's
top-k set is a hidden per-query value; a finishing step joins it to the tables (pairs of its
items, the user's history, the baseline's list), so these metrics cost about ``k²`` pairs per
list (``k × history`` for serendipity).

Item similarity (``similarity=``):

* ``"features"``: cosine similarity of the items' vectors from ``items=``: ``features=`` names
  an embedding column (List/Array) or numeric columns; by default the table's only List/Array
  column, else every numeric column but the item id. A zero vector has similarity 0 with
  everything (scikit-learn's ``cosine_similarity``); items without a row in ``items=`` are
  left out of the list.
* ``"cooccurrence"`` (Recommenders' default): ``C(i, j) / sqrt(C(i) C(j))`` over the train
  users, ``C`` counting distinct users; pairs never seen together have similarity 0.

Metrics:

* ``ild@k``: ``normalize="pairs"`` (default; Recommenders ``diversity``): ``1 −`` the mean
  similarity over the unordered pairs of the list (null below 2 items);
  ``normalize="length"`` (Evidently ``DiversityMetric``): the sum of the pairs' cosine
  distances ``1 − sim`` divided by the list's length.
* ``categorical_diversity@k`` (RePlay): distinct categories of the top-k items over ``k``
  (``category=`` a column of ``items=``; a List column gives several categories per item).
* ``serendipity@k`` (Recommenders ``serendipity``): for each top-k item ``i``,
  ``(1 − mean_j sim(i, j)) × rel(i)`` over the user's train items ``j`` (``rel`` 1 for a
  relevant item with a positive label, else 0; graded labels count 1, where Recommenders
  multiplies by the label), averaged over the top-k items; users without train history have
  none.
* ``unexpectedness@k(baseline=...)`` (RePlay): ``1 − |top-k ∩ baseline's top-k| / k``
  against another system of the same log (a value of the single ``by`` column) for the same
  query; a query the baseline has no list for scores 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import polars as pl

from polars_rankeval._options import check_choice
from polars_rankeval.context import RankingContext
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
from polars_rankeval.tables import Tables

Similarity = Literal["features", "cooccurrence"]
IldNormalize = Literal["pairs", "length"]
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


def _feature_columns(items: pl.LazyFrame, item: str, features: Features, metric: str) -> pl.Expr:
    """The items' vectors as one List(Float64) expression."""
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
    else:
        chosen = [features] if isinstance(features, str) else list(features)
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
        return pl.col(chosen[0]).cast(pl.List(pl.Float64))
    bad = [name for name in chosen if not schema[name].is_numeric()]
    if bad:
        msg = f"feature columns {bad} of items= must be numeric (or one List/Array column)"
        raise ColumnTypeError(msg)
    return pl.concat_list([pl.col(name).cast(pl.Float64) for name in chosen])


def _unit_vectors(tables: Tables, features: Features, metric: str) -> pl.LazyFrame:
    """(item as String, unit vector); a zero vector stays zero."""
    items = tables.require("items", metric)
    vector = _feature_columns(items, tables.item, features, metric)
    frame = items.select(pl.col(tables.item).cast(pl.String).alias(_ITEM), vector.alias(_VECTOR))
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


def _similarity(
    pairs: pl.LazyFrame, tables: Tables, similarity: Similarity, features: Features, metric: str
) -> pl.LazyFrame:
    """``pairs`` (with columns _ITEM, _OTHER) plus their similarity ``_SIM``."""
    if similarity == "features":
        vectors = _unit_vectors(tables, features, metric)
        joined = pairs.join(vectors, on=_ITEM, how="inner").join(
            vectors.rename({_ITEM: _OTHER, _VECTOR: f"{_VECTOR}_2"}), on=_OTHER, how="inner"
        )
        sim = (pl.col(_VECTOR) * pl.col(f"{_VECTOR}_2")).list.sum()
        return joined.with_columns(sim.alias(_SIM)).drop(_VECTOR, f"{_VECTOR}_2")
    train = _train_pairs(tables, metric)
    wanted = pairs.select(_ITEM, _OTHER).unique()
    # only the items the pairs name: the users' histories restricted to them, paired up
    needed = pl.concat([wanted.select(_ITEM), wanted.select(pl.col(_OTHER).alias(_ITEM))]).unique()
    history = train.join(needed, on=_ITEM, how="semi")
    users = history.group_by(_ITEM).agg(pl.len().cast(pl.Float64).alias("c"))
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
        .join(users.rename({_ITEM: _OTHER, "c": "c2"}), on=_OTHER, how="left")
        .select(
            _ITEM,
            _OTHER,
            # an item with itself: every one of its users has both (similarity 1)
            pl.when(pl.col(_ITEM) == pl.col(_OTHER))
            .then(pl.col("c"))
            .otherwise(pl.col("cij"))
            .fill_null(0.0)
            .truediv((pl.col("c") * pl.col("c2")).sqrt())
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
    sizes = per_group(exploded, keys, pl.len().cast(pl.Float64).alias("n"))
    pairs = exploded.join(
        exploded.rename({_ITEM: _OTHER}), on=list(keys), how="inner", nulls_equal=True
    ).filter(pl.col(_ITEM) < pl.col(_OTHER))
    scored = _similarity(pairs, tables, "cooccurrence", None, label)
    sums = per_group(scored, keys, pl.col(_SIM).sum().alias("s"))
    both = sizes.join(sums, on=list(keys), how="left", nulls_equal=True)
    return both.with_columns(
        (pl.col("n") * (pl.col("n") - 1) / 2).alias("p"), pl.col("s").fill_null(0.0)
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
    sizes = per_group(joined, keys, pl.len().cast(pl.Float64).alias("n"), own.sum().alias("self"))
    dims = joined.with_columns(
        pl.int_ranges(pl.col(_VECTOR).list.len()).alias("__rke_dim")
    ).explode([_VECTOR, "__rke_dim"])
    per_dim = dims.group_by([*keys, "__rke_dim"]).agg(pl.col(_VECTOR).sum().alias("d"))
    squares = per_group(per_dim, keys, (pl.col("d") * pl.col("d")).sum().alias("q"))
    both = sizes.join(squares, on=list(keys), how="left", nulls_equal=True)
    return both.select(
        *keys,
        "n",
        (pl.col("n") * (pl.col("n") - 1) / 2).alias("p"),
        ((pl.col("q").fill_null(0.0) - pl.col("self")) / 2).alias("s"),
    )


def _check_similarity(similarity: object, features: Features) -> Similarity:
    chosen: Similarity = check_choice("similarity", similarity, ["features", "cooccurrence"])
    if chosen == "cooccurrence" and features is not None:
        msg = "option features= applies only with similarity=features"
        raise InvalidOptionError(msg)
    return chosen


def _shown(**options: object) -> dict[str, object]:
    return {key: value for key, value in options.items() if value is not None}


def ild(
    k: int,
    *,
    similarity: Similarity = "features",
    features: Features = None,
    normalize: IldNormalize = "pairs",
) -> Metric:
    """``ild@k``: intra-list diversity, from the cosine similarity of the list's item pairs.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> items = pl.DataFrame({"item": ["a", "b", "c"], "x": [1.0, 0.0, 1.0], "y": [0.0, 1.0, 1.0]})
    >>> log = pl.DataFrame({"query": [1, 1], "item": ["a", "b"], "score": [2.0, 1.0]})
    >>> # a and b are orthogonal: similarity 0, diversity 1
    >>> rke.evaluate(log, ["ild@2"], items=items).item()
    1.0
    """
    similarity = _check_similarity(similarity, features)
    normalize = check_choice("normalize", normalize, ["pairs", "length"])
    shown = _shown(
        similarity=similarity if similarity != "features" else None,
        features=features if isinstance(features, str) else None,
        normalize=normalize if normalize != "pairs" else None,
    )
    name = named(at("ild", required_cutoff(k, "ild")), shown)
    key = f"top_items@{k}"

    def partials(ctx: RankingContext) -> Partials:
        return {key: _item_set(ctx, ctx.within(k))}

    def finish(
        frame: pl.LazyFrame, keys: Sequence[str], label: str, tables: Tables
    ) -> pl.LazyFrame:
        exploded = frame.select(*keys, pl.col(label).alias(_ITEM)).explode(_ITEM).drop_nulls(_ITEM)
        if similarity == "features":
            both = _feature_sums(exploded, keys, _unit_vectors(tables, features, label))
        else:
            both = _cooccurrence_sums(exploded, keys, tables, label)
        if normalize == "pairs":
            value: pl.Expr = pl.when(pl.col("n") >= 2).then(1 - pl.col("s") / pl.col("p"))
        else:
            distance = (pl.col("p") - pl.col("s")).fill_null(0.0)
            value = distance / pl.col("n")
        return both.select(*keys, value.alias(label))

    return Metric(
        name,
        partials,
        lambda p: p(key),
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
            pl.col(tables.item).cast(pl.String).alias(_ITEM), pl.col(category).alias("c")
        )
        if isinstance(schema[category], pl.List | pl.Array):
            categories = categories.explode("c")
        exploded = frame.select(*keys, pl.col(label).alias(_ITEM)).explode(_ITEM)
        joined = exploded.join(categories, on=_ITEM, how="left")
        counted = per_group(joined, keys, pl.col("c").drop_nulls().n_unique().alias("d"))
        return counted.select(*keys, (pl.col("d").cast(pl.Float64) / checked).alias(label))

    return Metric(
        name, partials, lambda p: p(key), needs=("items",), reads_labels=False, finish=finish
    )


def serendipity(
    k: int, *, similarity: Similarity = "features", features: Features = None
) -> Metric:
    """``serendipity@k`` (Recommenders): relevant top-k items unlike the user's history.

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
    """
    similarity = _check_similarity(similarity, features)
    checked = required_cutoff(k, "serendipity")
    shown = _shown(
        similarity=similarity if similarity != "features" else None,
        features=features if isinstance(features, str) else None,
    )
    name = named(at("serendipity", checked), shown)
    top_key, rel_key = f"top_items@{k}", f"relevant_top_items@{k}"

    def partials(ctx: RankingContext) -> Partials:
        return {
            top_key: _item_set(ctx, ctx.within(k)),
            # a positive relevant label: label 0 never counts, even with relevance_level=0
            # (Recommenders multiplies by the label, so its 0 adds nothing)
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
        sizes = lists.select(*keys, pl.col(_TOP).list.len().cast(pl.Float64).alias("n"))
        relevant = lists.select(*keys, pl.col(_REL).alias(_ITEM)).explode(_ITEM).drop_nulls(_ITEM)
        history = _train_pairs(tables, label).rename({_ITEM: _OTHER})
        pairs = relevant.join(history, left_on=query, right_on=_USER, how="inner")
        scored = _similarity(pairs, tables, similarity, features, label)
        per_item = scored.group_by([*keys, _ITEM]).agg((1 - pl.col(_SIM).mean()).alias("u"))
        sums = per_group(per_item, keys, pl.col("u").sum().alias("s"))
        users = history.select(pl.col(_USER).alias(query)).unique()
        with_history = sizes.join(users, on=query, how="semi")
        both = with_history.join(sums, on=list(keys), how="left", nulls_equal=True)
        value = pl.when(pl.col("n") > 0).then(pl.col("s").fill_null(0.0) / pl.col("n"))
        return both.select(*keys, value.alias(label))

    needs = ("train", "items") if similarity == "features" else ("train",)
    return Metric(name, partials, value, needs=needs, finish=finish)


def unexpectedness(k: int, *, baseline: object = None) -> Metric:
    """``unexpectedness@k(baseline=...)`` (RePlay): share of the top ``k`` not in the baseline's.

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
    name = named(at("unexpectedness", checked), {"baseline": baseline})
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
        counted = per_group(shared, keys, pl.len().cast(pl.Float64).alias("c"))
        both = frame.select(*keys).join(counted, on=list(keys), how="left", nulls_equal=True)
        value = 1 - pl.col("c").fill_null(0.0) / checked
        return both.select(*keys, value.alias(label))

    return Metric(name, partials, lambda p: p(key), reads_labels=False, finish=finish)
