"""Per-system exposure metrics: coverage, distributional entropy, Gini, personalization.

These exist only over a whole run (``level="system"``): one value per ``by`` group, never a
mean of per-query values, so ``per_query=True`` leaves them out and ``compare`` refuses them
(:func:`~polars_rankeval.bootstrap` gives their intervals). Each list contributes the set of its
top-k retrieved items (a hidden per-query value: about ``k`` ids per query are held until the
end); ``c_i`` is the number of lists that recommend item ``i``, ``n`` the number of lists.

* ``coverage@k``: ``of="catalog"`` (default; RecBole ``ItemCoverage``): distinct recommended
  items / catalog size (``catalog=``, a table or a number); ``of="train"``: over the distinct
  train items, counting only recommended items that occur in train (Evidently, RePlay), or all
  of them with ``intersect=False`` (Recommenders ``catalog_coverage``).
* ``entropy@k``: ``-Σ p_i log p_i`` with ``p_i = c_i / Σc`` (Recommenders
  ``distributional_coverage``, ``base=2``); ``normalize="distinct"`` divides by the number of
  distinct recommended items (RecBole ``ShannonEntropy``, ``base=e``).
* ``gini@k``: with the counts sorted ascending, ``Σ_j (2j − m − 1) c_(j) / (d · Σc)``;
  ``over="recommended"`` (default; Evidently): the ``m`` recommended items, ``d = m − 1``;
  ``over="catalog"`` (RecBole ``GiniIndex``): every catalog item, never-recommended ones as 0,
  ``m = d = `` catalog size. Lower is more equal exposure (direction "lower").
* ``personalization@k`` (Evidently): ``1 − Σ_{u≠v} |L_u ∩ L_v| / (k · n(n − 1))``, from
  ``Σ_i c_i(c_i − 1)``; null for a single list.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal

import polars as pl

from polars_rankeval._engine.context import RankingContext
from polars_rankeval._engine.exact_sum import exact_sum
from polars_rankeval._engine.options import check_choice
from polars_rankeval._engine.tables import CATALOG_N, Tables, refuse_rows, warn_rows
from polars_rankeval.errors import InvalidOptionError, UndefinedMetricWarning
from polars_rankeval.metrics._base import (
    Direction,
    Metric,
    Partials,
    SystemReduce,
    at,
    named,
    per_group,
    required_cutoff,
)

CoverageOf = Literal["catalog", "train"]
GiniOver = Literal["recommended", "catalog"]
EntropyNormalize = Literal["none", "distinct"]

_ITEM = "__rke_exposed_item"
_COUNT = "__rke_exposure"


def _top_items(k: int) -> Callable[[RankingContext], Partials]:
    def partials(ctx: RankingContext) -> Partials:
        # unique().implode() keeps the aggregation on the streaming engine (a plain list
        # aggregation falls back to memory); items are unique within a list anyway.
        assert ctx.item is not None  # the frame-level context always carries the item id
        return {f"top_items@{k}": ctx.item.filter(ctx.within(k)).unique().implode()}

    return partials


def _exposures(frame: pl.LazyFrame, by: Sequence[str], label: str) -> pl.LazyFrame:
    """``c_i``: (by..., item, lists recommending it)."""
    items = frame.select(*by, pl.col(label).alias(_ITEM)).explode(_ITEM).drop_nulls(_ITEM)
    return items.group_by([*by, _ITEM]).agg(pl.len().cast(pl.Float64).alias(_COUNT))


def _system(
    name: str, reduce: SystemReduce, needs: tuple[str, ...], k: int, direction: Direction = "higher"
) -> Metric:
    return Metric(
        name,
        partials=_top_items(k),
        value=lambda p: p(f"top_items@{k}"),
        level="system",
        needs=needs,
        reads_labels=False,
        reduce=reduce,
        direction=direction,
    )


def _in_catalog(items: pl.LazyFrame, tables: Tables, label: str) -> pl.LazyFrame:
    """The recommended items (``_ITEM`` column), refusing (when read) any outside the catalog.

    A catalog given as a size can only be checked by count: more distinct recommended items
    than catalog items. Either way a wrong catalog would give coverage above 1 or a negative
    number of never-recommended items, not a number to trust.
    """
    if tables.catalog_size is not None:
        size = tables.catalog_size

        def too_many(rows: pl.DataFrame) -> str:
            return (
                f"metric {label!r}: the lists recommend {rows['__rke_distinct'][0]} distinct items "
                f"but catalog={size}; give the catalog's size (or its item table)"
            )

        distinct = pl.col(_ITEM).n_unique()
        checked = refuse_rows(
            items.with_columns(distinct.alias("__rke_distinct")),
            distinct > size,
            ["__rke_distinct"],
            too_many,
        )
        return checked.drop("__rke_distinct")
    catalog = (
        tables.require("catalog", label)
        .select(
            pl.col(tables.item).cast(pl.String).alias(_ITEM), pl.lit(value=True).alias("__rke_in")
        )
        .unique()
    )

    def outside(rows: pl.DataFrame) -> str:
        examples = rows[_ITEM].unique().sort()  # sorted: the same message on every run
        return (
            f"metric {label!r}: recommended items are not in the catalog= table, e.g. "
            f"{', '.join(map(repr, examples.head(3).to_list()))}; the catalog must hold every "
            "recommended item"
        )

    joined = items.join(catalog, on=_ITEM, how="left")
    return refuse_rows(joined, pl.col("__rke_in").is_null(), [_ITEM], outside).drop("__rke_in")


def _joined(left: pl.LazyFrame, right: pl.LazyFrame, by: Sequence[str]) -> pl.LazyFrame:
    if by:
        return left.join(right, on=list(by), how="left", nulls_equal=True)
    return left.join(right, how="cross")


def coverage(k: int, *, of: CoverageOf = "catalog", intersect: bool = True) -> Metric:
    """``coverage@k``: share of the catalog (or of the train items) that some list recommends.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {"query": [1, 1, 2, 2], "item": ["a", "b", "a", "c"], "score": [2.0, 1, 2, 1]}
    ... )
    >>> rke.evaluate(log, ["coverage@1", "coverage@2"], catalog=10).row(0)
    (0.1, 0.3)
    """
    of = check_choice("of", of, ["catalog", "train"])
    if not isinstance(intersect, bool):
        msg = f"option intersect= of 'coverage' must be True or False, got {intersect!r}"
        raise InvalidOptionError(msg)
    if of == "catalog" and not intersect:
        msg = "option intersect=False of 'coverage' only applies with of=train"
        raise InvalidOptionError(msg)
    shown: dict[str, object] = {}
    if of != "catalog":
        shown["of"] = of
    if not intersect:
        shown["intersect"] = intersect
    name = named(at("coverage", required_cutoff(k, "coverage")), shown)

    def reduce(frame: pl.LazyFrame, by: Sequence[str], label: str, tables: Tables) -> pl.LazyFrame:
        items = frame.select(*by, pl.col(label).alias(_ITEM)).explode(_ITEM).drop_nulls(_ITEM)
        if of == "catalog":
            items = _in_catalog(items, tables, label)
            distinct = per_group(items, by, pl.col(_ITEM).n_unique().alias("__rke_d"))
            total = tables.catalog_items(label)
        else:
            train = tables.require("train", label)
            known = train.select(pl.col(tables.item).cast(pl.String).alias(_ITEM)).unique()
            if intersect:
                items = items.join(known, on=_ITEM, how="semi")
            distinct = per_group(items, by, pl.col(_ITEM).n_unique().alias("__rke_d"))
            total = known.select(pl.len().alias(CATALOG_N))
        joined = distinct.join(total, how="cross")  # a total: one row
        value = pl.col("__rke_d").cast(pl.Float64) / pl.col(CATALOG_N).cast(pl.Float64)
        return joined.select(*by, value.alias(label))

    needs = ("catalog",) if of == "catalog" else ("train",)
    return _system(name, reduce, needs, k)


def entropy(k: int, *, base: float = 2.0, normalize: EntropyNormalize = "none") -> Metric:
    """``entropy@k``: distributional coverage, the entropy of the recommended items' shares.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {"query": [1, 1, 2, 2], "item": ["a", "b", "a", "c"], "score": [2.0, 1, 2, 1]}
    ... )
    >>> # shares a 1/2, b 1/4, c 1/4
    >>> rke.evaluate(log, ["entropy@2"]).item()
    1.5
    """
    normalize = check_choice("normalize", normalize, ["none", "distinct"])
    if isinstance(base, bool) or not isinstance(base, int | float) or not base > 1:
        msg = f"option base= of 'entropy' must be a number above 1, got {base!r}"
        raise InvalidOptionError(msg)
    if not math.isfinite(base):
        msg = f"option base= of 'entropy' must be finite, got {base!r}"
        raise InvalidOptionError(msg)
    shown: dict[str, object] = {}
    if base != 2:
        shown["base"] = "e" if base == math.e else base
    if normalize != "none":
        shown["normalize"] = normalize
    name = named(at("entropy", required_cutoff(k, "entropy")), shown)

    def reduce(frame: pl.LazyFrame, by: Sequence[str], label: str, tables: Tables) -> pl.LazyFrame:
        counts = _exposures(frame, by, label)
        # -Σ p log p with p = c / T is log T - Σ c log c / T: plain sums, which stream
        sums = per_group(
            counts,
            by,
            exact_sum(pl.col(_COUNT) * pl.col(_COUNT).log(base)).alias("__rke_s"),
            pl.col(_COUNT).sum().alias("__rke_t"),
            pl.len().cast(pl.Float64).alias("__rke_m"),
        )
        value = pl.col("__rke_t").log(base) - pl.col("__rke_s") / pl.col("__rke_t")
        if normalize == "distinct":
            value = value / pl.col("__rke_m")
        return sums.select(*by, value.alias(label))

    return _system(name, reduce, (), k)


def gini(k: int, *, over: GiniOver = "recommended") -> Metric:
    """``gini@k``: inequality of the items' exposure (0: equal; lower is better).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {"query": [1, 1, 2, 2], "item": ["a", "b", "a", "c"], "score": [2.0, 1, 2, 1]}
    ... )
    >>> # counts 1, 1, 2 sorted: ((2-4)*1 + 0*1 + 2*2) / (2 * 4)
    >>> rke.evaluate(log, ["gini@2"]).item()
    0.25
    """
    over = check_choice("over", over, ["recommended", "catalog"])
    name = named(
        at("gini", required_cutoff(k, "gini")), {"over": over} if over != "recommended" else {}
    )

    def reduce(frame: pl.LazyFrame, by: Sequence[str], label: str, tables: Tables) -> pl.LazyFrame:
        counts = _exposures(frame, by, label)
        if over == "catalog":
            counts = _in_catalog(counts, tables, label)
        # Σ_j (2j - m - 1) c_(j) over the ascending counts is half the sum of |c_i - c_l| over
        # all ordered pairs: computed over the distinct counts and their multiplicities (a
        # small self-join), so nothing needs sorting and the plan streams.
        values = counts.group_by([*by, _COUNT]).agg(pl.len().cast(pl.Float64).alias("__rke_t"))
        totals = per_group(
            counts,
            by,
            pl.col(_COUNT).sum().alias("__rke_total"),
            pl.len().cast(pl.Float64).alias("__rke_m"),
        )
        if over == "catalog":
            # never-recommended catalog items: count 0, catalog size - m of them
            totals = totals.join(tables.catalog_items(label), how="cross").with_columns(
                pl.col(CATALOG_N).cast(pl.Float64)
            )
            zeros = totals.select(
                *by,
                pl.lit(0.0).alias(_COUNT),
                (pl.col(CATALOG_N) - pl.col("__rke_m")).alias("__rke_t"),
            )
            values = pl.concat(
                [values, zeros.filter(pl.col("__rke_t") > 0)], how="vertical_relaxed"
            )
        pairs = (
            values.join(values, on=list(by), how="inner", suffix="_2", nulls_equal=True)
            if by
            else values.join(values, how="cross", suffix="_2")
        )
        spread = (
            (pl.col(_COUNT) - pl.col(f"{_COUNT}_2")).abs() * pl.col("__rke_t") * pl.col("__rke_t_2")
        )
        half = per_group(pairs, by, (spread.sum() / 2).alias("__rke_d"))
        if over == "catalog":
            denominator = pl.col(CATALOG_N) * pl.col("__rke_total")
        else:
            denominator = (pl.col("__rke_m") - 1) * pl.col("__rke_total")
        joined = _joined(totals, half, by)
        # one recommended item has no inequality to measure (Evidently divides by m - 1 = 0)
        value = pl.when(denominator > 0).then(pl.col("__rke_d") / denominator)
        return joined.select(*by, value.alias(label))

    needs = ("catalog",) if over == "catalog" else ()
    return _system(name, reduce, needs, k, direction="lower")


def personalization(k: int) -> Metric:
    """``personalization@k`` (Evidently): how different the users' top-k lists are (1: disjoint).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {"query": [1, 1, 2, 2], "item": ["a", "b", "a", "c"], "score": [2.0, 1, 2, 1]}
    ... )
    >>> # the two lists share 1 of k = 2 items
    >>> rke.evaluate(log, ["personalization@2"]).item()
    0.5
    """
    name = at("personalization", required_cutoff(k, "personalization"))

    def reduce(frame: pl.LazyFrame, by: Sequence[str], label: str, tables: Tables) -> pl.LazyFrame:
        counts = _exposures(frame, by, label)
        shared = per_group(
            counts, by, (pl.col(_COUNT) * (pl.col(_COUNT) - 1)).sum().alias("__rke_s")
        )
        lists = per_group(frame, by, pl.len().cast(pl.Float64).alias("__rke_n"))
        pairs = pl.col("__rke_n") * (pl.col("__rke_n") - 1)
        value = pl.when(pairs > 0).then(1 - pl.col("__rke_s") / (k * pairs))
        values = _joined(lists, shared, by).select(*by, "__rke_n", value.alias(label))

        def single(rows: pl.DataFrame) -> str:
            where = ""
            if by:
                first = rows.row(0, named=True)
                where = " for " + ", ".join(f"{key}={first[key]!r}" for key in by)
                where += f" ({rows.height} group(s) in all)" if rows.height > 1 else ""
            return (
                f"{label} is undefined (null){where}: it compares pairs of users' lists and "
                "there is a single non-empty list"
            )

        # one list has no pair to compare: null, said (audit RS20)
        return warn_rows(
            values, pl.col("__rke_n") == 1, [*by], single, UndefinedMetricWarning
        ).select(*by, label)

    return _system(name, reduce, (), k)
