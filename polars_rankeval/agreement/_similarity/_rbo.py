"""Rank-biased overlap per (pair, query) on a grid of depths (Corsi & Urbano, SIGIR 2024)."""

from __future__ import annotations

import polars as pl

from polars_rankeval.agreement._similarity._measures import _D, _ITEM, Measure, Ties


def _events(common: pl.LazyFrame, l_only: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    """Signed counts per (pair, query, depth), summed then accumulated into running counts.

    For a common item with top ``T`` and bottom ``B`` (1-based) in each list, its contribution
    is 0 before ``T``, a ramp inside ``[T, B)`` (variants a and b) and 1 from ``B``:
    ``full`` counts the items full in both lists, ``s_ramp`` those ramping in S only (full in
    L), ``l_ramp`` the reverse, ``both_ramp`` those ramping in both; ``seen_w`` counts the
    items started in both (variant w) and ``seen_trec`` the same on trec_eval's strict order.
    ``lonly_full`` / ``lonly_seen`` count the items of L absent from S that are full / started.
    """
    ts, bs = pl.col("__top_s"), pl.col("__top_s") + pl.col("__size_s") - 1
    tl, bl = pl.col("__top_l"), pl.col("__top_l") + pl.col("__size_l") - 1
    counters = ["full", "s_ramp", "l_ramp", "both_ramp", "seen_w", "seen_trec"]
    counters += ["lonly_full", "lonly_seen"]

    def rows(frame: pl.LazyFrame, at: pl.Expr, column: str, sign: int = 1) -> pl.LazyFrame:
        return frame.select(
            *keys,
            at.alias(_D),
            *(pl.lit(sign if name == column else 0, pl.Int64).alias(name) for name in counters),
        )

    def span(start: pl.Expr, stop: pl.Expr, column: str) -> list[pl.LazyFrame]:
        inside = common.filter(start < stop)
        return [rows(inside, start, column), rows(inside, stop, column, -1)]

    parts = [
        rows(common, pl.max_horizontal(bs, bl), "full"),
        *span(pl.max_horizontal(ts, bl), bs, "s_ramp"),
        *span(pl.max_horizontal(tl, bs), bl, "l_ramp"),
        *span(pl.max_horizontal(ts, tl), pl.min_horizontal(bs, bl), "both_ramp"),
        rows(common, pl.max_horizontal(ts, tl), "seen_w"),
        rows(common, pl.max_horizontal(pl.col("__pos_s"), pl.col("__pos_l")), "seen_trec"),
        rows(l_only, bl, "lonly_full"),
        rows(l_only, tl, "lonly_seen"),
    ]
    return pl.concat(parts).group_by([*keys, _D]).agg(pl.col(counters).sum())


def _rbo_terms(variant: Ties, p: pl.Expr) -> dict[str, pl.Expr]:
    """Per-depth terms of RBO (Corsi & Urbano's sections 1 and 2, and the tail sums).

    Reads the grid's columns: depth ``D``, lengths ``s <= l``, the running counts, and the
    tie group (top, size) at position ``D`` of S and of L.
    """
    d = pl.col(_D).cast(pl.Float64)
    s, l_ = pl.col("__s"), pl.col("__l")
    weight = p.pow(d)
    k = (d - s).cast(pl.Float64)
    if variant in ("trec", "w"):
        x = pl.col("seen_trec" if variant == "trec" else "seen_w").cast(pl.Float64)
        if variant == "trec":
            sum_s, sum_l = d, d
        else:
            sum_s = (pl.col("__gtop_s") + pl.col("__gsize_s") - 1).cast(pl.Float64)
            sum_l = (pl.col("__gtop_l") + pl.col("__gsize_l") - 1).cast(pl.Float64)
        first = 2 * x / (sum_s + sum_l)
        second_denominator = (d + sum_l) / 2  # as the first section: 2X / (|S| + |L|)
        unseen_max = k
        unseen_mean = pl.lit(1.0)
    else:
        r_s = ((d - pl.col("__gtop_s") + 1) / pl.col("__gsize_s")).fill_null(0.0)
        r_l = ((d - pl.col("__gtop_l") + 1) / pl.col("__gsize_l")).fill_null(0.0)
        x = (
            pl.col("full")
            + r_s * pl.col("s_ramp")
            + r_l * pl.col("l_ramp")
            + r_s * r_l * pl.col("both_ramp")
        )
        square_l = pl.col("__gtop_l") - 1 + (d - pl.col("__gtop_l") + 1) ** 2 / pl.col("__gsize_l")
        if variant == "a":
            first = x / d
            second_denominator = d
        else:
            square_s = (
                pl.col("__gtop_s") - 1 + (d - pl.col("__gtop_s") + 1) ** 2 / pl.col("__gsize_s")
            )
            first = x / square_s.sqrt() / square_l.sqrt()
            second_denominator = d.sqrt() * square_l.sqrt()
        full = pl.min_horizontal(k, pl.col("lonly_full").cast(pl.Float64))
        unseen_max = full + r_l * (k - full)
        seen = pl.col("lonly_seen").cast(pl.Float64)
        unseen_mean = (pl.col("lonly_full") + r_l * (seen - pl.col("lonly_full"))) / seen
    in_first, in_second = pl.col(_D) <= s, (pl.col(_D) > s) & (pl.col(_D) <= l_)
    tail = pl.col(_D) > l_
    f = (l_ + s - pl.col("__c")).cast(pl.Float64)

    def total(term: pl.Expr, where: pl.Expr) -> pl.Expr:
        return pl.when(where).then(term).otherwise(0.0).sum()

    return {
        "first": total(first * weight, in_first),
        "at_s": total(first, pl.col(_D) == s),
        "min2": total(x / second_denominator * weight, in_second),
        "max2": total((x + unseen_max) / second_denominator * weight, in_second),
        "ext2": total(k * unseen_mean / second_denominator * weight, in_second),
        "harmonic": total(weight / d, pl.col(_D) <= l_),
        "max3": total((2 * d - f) / d * weight, tail),
    }


def _rbo_value(prefix: str, output: str, p: pl.Expr) -> pl.Expr:
    """Corsi & Urbano's totals from the summed terms (section 3 in closed form)."""

    def col(name: str) -> pl.Expr:
        return pl.col(f"{prefix}{name}")

    s, l_, c = pl.col("__s").cast(pl.Float64), pl.col("__l").cast(pl.Float64), pl.col("__c")
    scale = (1 - p) / p
    geometric_tail = p.pow(l_ + 1) / (1 - p)
    low = scale * (col("first") + col("min2") + c * ((1 / (1 - p)).log() - col("harmonic")))
    f = l_ + s - c
    high = scale * (col("first") + col("max2") + col("max3") + p.pow(f + 1) / (1 - p))
    if output == "min":
        return low
    if output == "max":
        return high
    if output == "res":
        return high - low
    ext2 = col("min2") + col("at_s") * col("ext2")
    third = (c + (l_ - s) * col("at_s")) / l_ * geometric_tail
    return scale * (col("first") + ext2 + third)


def _persistence_expr(p: float | pl.Expr) -> pl.Expr:
    return p.cast(pl.Float64) if isinstance(p, pl.Expr) else pl.lit(p, pl.Float64)


def _plan_index(plans: list[tuple[Ties, pl.Expr]], measure: Measure, ties: Ties) -> int | None:
    """The grid sums shared by the RBO measures of one tie variant and one ``p``."""
    wanted = (measure.ties or ties, _persistence_expr(measure.p))
    for index, (variant, p) in enumerate(plans):
        if variant == wanted[0] and p.meta.eq(wanted[1]):
            return index
    return None


def rbo_per_query(
    measures: list[Measure],
    *,
    info: pl.LazyFrame,
    short: pl.LazyFrame,
    long_: pl.LazyFrame,
    common: pl.LazyFrame,
    keys: list[str],
    ties: Ties,
) -> pl.LazyFrame:
    """Every RBO measure per (pair, query), from one grid of depths 1..l+s-c."""
    l_only = long_.join(short, on=[*keys, _ITEM], how="anti")
    events = _events(common, l_only, keys)
    counters = [name for name in events.collect_schema().names() if name not in (*keys, _D)]
    depth_end = pl.col("__l") + pl.col("__s") - pl.col("__c") + 1
    grid = info.select(*keys, "__s", "__l", "__c", pl.int_ranges(1, depth_end).alias(_D)).explode(
        _D
    )
    for frame, suffix in ((short, "s"), (long_, "l")):
        groups = frame.select(
            *keys,
            pl.col(f"__pos_{suffix}").alias(_D),
            pl.col(f"__top_{suffix}").alias(f"__gtop_{suffix}"),
            pl.col(f"__size_{suffix}").alias(f"__gsize_{suffix}"),
        )
        grid = grid.join(groups, on=[*keys, _D], how="left")
    grid = grid.join(events, on=[*keys, _D], how="left").with_columns(
        pl.col(counters).fill_null(0).cum_sum().over(keys, order_by=_D)
    )
    plans: list[tuple[Ties, pl.Expr]] = []
    for measure in measures:
        if _plan_index(plans, measure, ties) is None:
            plans.append((measure.ties or ties, _persistence_expr(measure.p)))
    terms = [
        term.alias(f"__{variant}_{index}_{name}")
        for index, (variant, p) in enumerate(plans)
        for name, term in _rbo_terms(variant, p).items()
    ]
    summed = grid.group_by(keys).agg(
        pl.col("__s").first(), pl.col("__l").first(), pl.col("__c").first(), *terms
    )
    values = []
    for measure in measures:
        index = _plan_index(plans, measure, ties)
        prefix = f"__{measure.ties or ties}_{index}_"
        p = _persistence_expr(measure.p)
        values.append(_rbo_value(prefix, measure.output, p).alias(measure.label))
    return summed.select(*keys, *values)
