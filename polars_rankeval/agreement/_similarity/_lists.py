"""Each system's ranked lists, the pairs of lists to compare, and the set and rank measures."""

from __future__ import annotations

import polars as pl

from polars_rankeval._engine.context import score_key, trec_key
from polars_rankeval.agreement._similarity._measures import (
    _A,
    _B,
    _ITEM,
    _LEN,
    _POS,
    _SIZE,
    _SYS,
    _TOP,
    Measure,
    Ties,
)
from polars_rankeval.agreement._similarity._rbo import rbo_per_query
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    ColumnValueError,
    DuplicateItemError,
)


def ranked_lists(lf: pl.LazyFrame, query: str, item: str, score: str) -> pl.LazyFrame:
    """Each list's rows with trec_eval's position and the top and size of its score tie group."""
    lists = [_SYS, query]
    ties = score_key(pl.col(score)).rank("dense", descending=True).over(lists)
    return (
        lf.filter(pl.col(score).is_not_null())
        .with_columns(
            pl.col(item).cast(pl.String).alias(_ITEM),
            trec_key(pl.col(score), pl.col(item))
            .rank("ordinal", descending=True)
            .over(lists)
            .cast(pl.Int64)
            .alias(_POS),
            ties.alias("__tie"),
        )
        .with_columns(
            pl.col(_POS).min().over([*lists, "__tie"]).alias(_TOP),
            pl.len().over([*lists, "__tie"]).cast(pl.Int64).alias(_SIZE),
            pl.len().over(lists).cast(pl.Int64).alias(_LEN),
        )
        .select(_SYS, query, _ITEM, _POS, _TOP, _SIZE, _LEN)
    )


def _sides(ranked: pl.LazyFrame, pairs: pl.LazyFrame, query: str) -> pl.LazyFrame:
    """Both lists of every (pair, query) that both systems have, with role S (shorter) or L.

    As Corsi & Urbano's code: the second list is S when the lengths are equal.
    """
    keys = [_A, _B, query]
    present = ranked.select(_SYS, query).unique()
    per_query = pairs.join(present, left_on=_A, right_on=_SYS).join(
        present, left_on=[_B, query], right_on=[_SYS, query]
    )
    side_a = per_query.join(ranked, left_on=[_A, query], right_on=[_SYS, query])
    side_b = per_query.join(ranked, left_on=[_B, query], right_on=[_SYS, query])
    both = pl.concat(
        [
            side_a.with_columns(pl.lit("a").alias("__side")),
            side_b.with_columns(pl.lit("b").alias("__side")),
        ]
    )
    len_a = pl.col(_LEN).filter(pl.col("__side") == "a").first().over(keys)
    len_b = pl.col(_LEN).filter(pl.col("__side") == "b").first().over(keys)
    shorter = pl.when(len_a >= len_b).then(pl.lit("b")).otherwise(pl.lit("a"))
    return both.with_columns((pl.col("__side") == shorter).alias("__is_s"))


def check_input(lf: pl.LazyFrame, by: list[str], query: str, item: str, score: str) -> None:
    schema = lf.collect_schema()
    for option, name in [
        *(("by", b) for b in by),
        ("query", query),
        ("item", item),
        ("score", score),
    ]:
        if name not in schema:
            msg = (
                f"column {name!r} (option {option}=) is not in the input; "
                f"columns present: {list(schema.names())}"
            )
            raise ColumnNotFoundError(msg)
    if not (schema[score].is_numeric() or schema[score] == pl.Null):
        msg = f"column {score!r} (score) must be numeric (int or float), got {schema[score]}"
        raise ColumnTypeError(msg)
    for option, name in (("query", query), ("item", item)):
        if schema[name].is_nested():
            msg = f"column {name!r} ({option} id) must be a scalar id, got {schema[name]}"
            raise ColumnTypeError(msg)
    nan = pl.col(score).is_nan() if schema[score].is_float() else pl.lit(value=False)
    found = lf.select(
        nan.sum().alias("nan"),
        pl.col(item).is_null().sum().alias("item"),
        pl.col(query).is_null().sum().alias("query"),
    ).collect()
    if found["nan"].item():
        msg = f"{found['nan'].item()} NaN value(s) in {score!r} (score); a NaN cannot be ranked"
        raise ColumnValueError(msg)
    for role in ("item", "query"):
        if found[role].item():
            name = item if role == "item" else query
            msg = f"{found[role].item()} null value(s) in {name!r} ({role} id)"
            raise ColumnValueError(msg)
    lists = [*by, query]
    twice = (
        lf.filter(pl.col(score).is_not_null())
        .group_by([*lists, item])
        .len()
        .filter(pl.col("len") > 1)
        .head(1)
        .collect()
    )
    if twice.height:
        where = ", ".join(f"{name}={twice[name][0]!r}" for name in [*lists, item])
        msg = (
            f"the same ({', '.join(lists)}, {item}) occurs more than once among the scored rows, "
            f"e.g. {where}; a list ranks each item once"
        )
        raise DuplicateItemError(msg)


def per_query_rows(
    lf: pl.LazyFrame, measures: list[Measure], pairs: pl.LazyFrame, query: str, ties: Ties
) -> pl.LazyFrame:
    """One row per (pair, query) both systems have, one column per measure."""
    keys = [_A, _B, query]
    # Several branches read these rows (each side, the common items, the lengths, the RBO
    # grid and its events): collected once (streaming), the plan does not redo the ranking
    # windows for each of them; 19.7 s -> 4.9 s for RBO at 2M rows. It holds the compared
    # systems' rows, about the input's size.
    sides = _sides(lf, pairs, query).collect(engine="streaming").lazy()
    role = ["__pos", "__top", "__size"]

    def one_side(is_s: bool, suffix: str) -> pl.LazyFrame:
        chosen = sides.filter(pl.col("__is_s") == is_s)
        return chosen.select(
            *keys, _ITEM, *(pl.col(name).alias(f"{name}_{suffix}") for name in role)
        )

    short, long_ = one_side(True, "s"), one_side(False, "l")
    common = short.join(long_, on=[*keys, _ITEM])
    info = (
        sides.group_by(keys)
        .agg(
            pl.col(_LEN).filter(pl.col("__is_s")).first().alias("__s"),
            pl.col(_LEN).filter(~pl.col("__is_s")).first().alias("__l"),
        )
        .join(common.group_by(keys).agg(pl.len().cast(pl.Int64).alias("__c")), on=keys, how="left")
        .with_columns(pl.col("__c").fill_null(0))
    )
    result = info
    rbo = [m for m in measures if m.kind == "rbo"]
    if rbo:
        result = result.join(
            rbo_per_query(
                rbo, info=info, short=short, long_=long_, common=common, keys=keys, ties=ties
            ),
            on=keys,
        )
    for measure in measures:
        if measure.kind in ("jaccard", "overlap"):
            result = result.join(_set_measure(measure, common, keys), on=keys, how="left")
        elif measure.kind == "kendall_tau":
            result = result.join(_kendall(measure, common, keys, ties), on=keys, how="left")
    return result.select(*keys, *(_value(m) for m in measures))


def _value(measure: Measure) -> pl.Expr:
    if measure.kind == "rbo":
        return pl.col(measure.label)
    s, l_, c = pl.col("__s"), pl.col("__l"), pl.col("__c").cast(pl.Float64)
    if measure.kind == "kendall_tau":
        return pl.col(measure.label)
    shared = pl.col(measure.label).fill_null(0).cast(pl.Float64)
    if measure.kind == "overlap":
        return (shared / measure.k).alias(measure.label)
    if measure.k is None:
        return (c / (s + l_ - c)).alias(measure.label)
    k = pl.lit(measure.k)
    union = pl.min_horizontal(s, k) + pl.min_horizontal(l_, k) - shared
    return (shared / union).alias(measure.label)


def _set_measure(measure: Measure, common: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    """The number of items in both top-k lists (trec_eval's order), per (pair, query)."""
    k = measure.k if measure.k is not None else 2**62
    both = (pl.col("__pos_s") <= k) & (pl.col("__pos_l") <= k)
    return common.group_by(keys).agg(both.sum().alias(measure.label))


def _kendall(measure: Measure, common: pl.LazyFrame, keys: list[str], ties: Ties) -> pl.LazyFrame:
    """Kendall's tau-b over the items both top-k lists hold, from every pair of such items."""
    k = measure.k if measure.k is not None else 2**62
    rank = "__pos" if ties == "trec" else "__top"
    top = common.filter((pl.col("__pos_s") <= k) & (pl.col("__pos_l") <= k)).select(
        *keys, _ITEM, pl.col(f"{rank}_s").alias("__x"), pl.col(f"{rank}_l").alias("__y")
    )
    pairs = top.join(top, on=keys, suffix="_2").filter(pl.col(_ITEM) < pl.col(f"{_ITEM}_2"))
    concordance = (pl.col("__x") - pl.col("__x_2")).sign() * (
        pl.col("__y") - pl.col("__y_2")
    ).sign()
    counts = pairs.group_by(keys).agg(
        pl.len().cast(pl.Float64).alias("__n"),
        (pl.col("__x") == pl.col("__x_2")).sum().alias("__tx"),
        (pl.col("__y") == pl.col("__y_2")).sum().alias("__ty"),
        concordance.sum().cast(pl.Float64).alias("__cd"),
    )
    denominator = ((pl.col("__n") - pl.col("__tx")) * (pl.col("__n") - pl.col("__ty"))).sqrt()
    tau = pl.when(denominator > 0).then(pl.col("__cd") / denominator)
    return counts.select(*keys, tau.alias(measure.label))
