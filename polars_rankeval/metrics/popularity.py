"""Popularity bias and novelty of each list, from the train table (``train=``).

Per query (averaged over queries like every other metric), over the list's top ``k`` retrieved
items. Popularity comes from the past interactions: ``users(i)`` = distinct train users of item
``i``, ``count(i)`` = its train rows; ``N`` = distinct train users, ``T`` = train rows.

* ``novelty@k``: mean self-information ``-log2 p(i)`` of the top-k items found in train;
  ``popularity="interactions"``: ``p = count(i) / T`` (Recommenders ``novelty``),
  ``"users"``: ``p = users(i) / N`` (Evidently's MIUF). Items absent from train are left out of
  the mean (``absent="drop"``, Evidently; a list of only such items has no value) or count 0
  (``absent="zero"``: Recommenders adds nothing for them but divides by every recommendation).
  Recommenders divides by all recommendations of all users at once, this library averages
  each user's list: the two agree when every list has ``k`` items.
* ``surprisal@k`` (RePlay ``Surprisal``): ``Σ_topk log2(N / users(i)) / log2(N)`` divided by
  ``k``; an item absent from train counts 1 (as if one user had seen it).
* ``unseen@k`` (RePlay ``Novelty``): the share of ``k`` (top-k items the user has not
  interacted with in train), ``|top-k minus train_u| / k``.
* ``arp@k``: average recommendation popularity, the mean popularity of the top-k items
  (``popularity="users"``: Evidently's ARP; ``"interactions"``: RecBole's
  ``AveragePopularity``); ``normalize=True`` divides by the most popular train item's value
  (Evidently's ``normalize_arp``); ``absent="zero"`` (default) counts an item absent from train
  as popularity 0, ``"drop"`` leaves it out of the mean (Evidently). Lower is better (a
  popularity bias: RecBole's ``smaller = True``).
* ``aplt@k`` / ``aclt@k`` (Abdollahpouri et al.; Elliot): the share / the number of the top-k
  items in the long tail. The tail is every item whose train interaction count is at most the
  ``tail`` threshold: ``tail >= 1`` is a count (RecBole's ``tail_ratio > 1``), ``0 < tail <
  1`` the ``tail``-quantile (lower) of the train items' counts (RecBole's default 0.1 is the
  bottom 10%); items absent from train (count 0) are in the tail. ``aplt`` divides by the
  number of top-k items retrieved.

None of them read the relevance labels: a log without judgments is evaluated list by list.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import polars as pl

from polars_rankeval._engine.context import RankingContext
from polars_rankeval._engine.exact_sum import exact_mean, exact_quotient, exact_sum
from polars_rankeval._engine.options import check_choice
from polars_rankeval._engine.tables import (
    POPULARITY,
    SEEN,
    SEEN_IN_TRAIN,
    TRAIN_COUNT,
    TRAIN_N_ROWS,
    TRAIN_N_USERS,
    TRAIN_USERS,
    RowInput,
    Tables,
)
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.metrics._base import (
    Direction,
    Lookup,
    Metric,
    Partials,
    at,
    named,
    required_cutoff,
)

Popularity = Literal["interactions", "users"]
Absent = Literal["zero", "drop"]
_POPULARITY: tuple[Popularity, ...] = ("interactions", "users")


def _shown(defaults: dict[str, object], **options: object) -> dict[str, object]:
    """The options that differ from their defaults, for the metric's name."""
    return {key: value for key, value in options.items() if value != defaults[key]}


def _popularity_of(popularity: Popularity) -> tuple[pl.Expr, pl.Expr]:
    """The item's popularity and the train total it is a share of."""
    if popularity == "users":
        return pl.col(TRAIN_USERS), pl.col(TRAIN_N_USERS)
    return pl.col(TRAIN_COUNT), pl.col(TRAIN_N_ROWS)


def _label_free(
    name: str,
    partials: Callable[[RankingContext], Partials],
    value: Callable[[Lookup], pl.Expr],
    inputs: tuple[RowInput, ...],
    direction: Direction = "higher",
) -> Metric:
    return Metric(
        name,
        partials=partials,
        value=value,
        needs=("train",),
        inputs=inputs,
        reads_labels=False,
        direction=direction,
    )


def novelty(k: int, *, popularity: Popularity = "interactions", absent: Absent = "drop") -> Metric:
    """``novelty@k``: mean self-information ``-log2 p(i)`` of the top-k items (from train).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> train = pl.DataFrame({"query": [1, 1, 2, 3], "item": ["a", "b", "a", "a"]})
    >>> log = pl.DataFrame({"query": [9, 9], "item": ["a", "b"], "score": [2.0, 1.0]})
    >>> # a: 3 of 4 train rows, b: 1 of 4 -> (-log2 0.75 - log2 0.25) / 2
    >>> round(rke.evaluate(log, [rke.metrics.novelty(2)], train=train).item(), 6)
    1.207519
    """
    popularity = check_choice("popularity", popularity, _POPULARITY)
    absent = check_choice("absent", absent, ["zero", "drop"])
    defaults: dict[str, object] = {"popularity": "interactions", "absent": "drop"}
    shown = _shown(defaults, popularity=popularity, absent=absent)
    name = named(at("novelty", required_cutoff(k, "novelty")), shown)
    share, total = _popularity_of(popularity)

    def partials(ctx: RankingContext) -> Partials:
        information = -(share.cast(pl.Float64) / total.cast(pl.Float64)).log(2)
        if absent == "zero":
            # Recommenders' novelty: an item absent from train adds 0 but still counts
            found = ctx.within(k)
            information = pl.when(share > 0).then(information).otherwise(0.0)
        else:
            found = ctx.within(k) & (share > 0)
        return {name: exact_mean(pl.when(found).then(information))}

    return _label_free(name, partials, lambda p: p(name), (POPULARITY,))


def surprisal(k: int) -> Metric:
    """``surprisal@k`` (RePlay): normalised self-information, summed over the top k, over ``k``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> train = pl.DataFrame({"query": [1, 2, 3, 4], "item": ["a", "a", "b", "c"]})
    >>> log = pl.DataFrame({"query": [9, 9], "item": ["a", "z"], "score": [2.0, 1.0]})
    >>> # a: log2(4/2)/log2(4) = 0.5; z is not in train: 1 -> (0.5 + 1) / 2
    >>> rke.evaluate(log, [rke.metrics.surprisal(2)], train=train).item()
    0.75
    """
    name = at("surprisal", required_cutoff(k, "surprisal"))
    users, n_users = pl.col(TRAIN_USERS).cast(pl.Float64), pl.col(TRAIN_N_USERS).cast(pl.Float64)

    def partials(ctx: RankingContext) -> Partials:
        weight = pl.when(users > 0).then((n_users / users).log(2) / n_users.log(2)).otherwise(1.0)
        return {name: exact_quotient(exact_sum(weight, ctx.within(k)), k)}

    return _label_free(name, partials, lambda p: p(name), (POPULARITY,))


def unseen(k: int) -> Metric:
    """``unseen@k`` (RePlay's ``Novelty@K``): share of ``k`` the user has not seen in train.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> train = pl.DataFrame({"query": [9, 9, 8], "item": ["a", "c", "b"]})
    >>> log = pl.DataFrame({"query": [9, 9, 9], "item": ["a", "b", "d"], "score": [3.0, 2, 1]})
    >>> rke.evaluate(log, [rke.metrics.unseen(4)], train=train).item()
    0.5
    """
    name = at("unseen", required_cutoff(k, "unseen"))

    def partials(ctx: RankingContext) -> Partials:
        new = ctx.within(k) & ~pl.col(SEEN)
        return {name: exact_quotient(new.sum(), k)}

    return _label_free(name, partials, lambda p: p(name), (SEEN_IN_TRAIN,))


def arp(
    k: int,
    *,
    popularity: Popularity = "users",
    normalize: bool = False,
    absent: Absent = "zero",
) -> Metric:
    """``arp@k``: average recommendation popularity of the top-k items.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> train = pl.DataFrame({"query": [1, 2, 3, 1], "item": ["a", "a", "b", "b"]})
    >>> log = pl.DataFrame({"query": [9, 9, 9], "item": ["a", "b", "z"], "score": [3.0, 2, 1]})
    >>> # users: a 2, b 2, z 0 (absent)
    >>> rke.evaluate(log, ["arp@3", "arp@3(absent=drop)"], train=train).row(0)
    (1.3333333333333333, 2.0)
    """
    popularity = check_choice("popularity", popularity, _POPULARITY)
    absent = check_choice("absent", absent, ["zero", "drop"])
    if not isinstance(normalize, bool):
        msg = f"option normalize= of 'arp' must be True or False, got {normalize!r}"
        raise InvalidOptionError(msg)
    defaults: dict[str, object] = {"popularity": "users", "normalize": False, "absent": "zero"}
    name = named(
        at("arp", required_cutoff(k, "arp")),
        _shown(defaults, popularity=popularity, normalize=normalize, absent=absent),
    )
    share, _ = _popularity_of(popularity)
    inputs: tuple[RowInput, ...] = (POPULARITY,)
    if normalize:
        inputs = (POPULARITY, _MAX_POPULARITY)
        top = pl.col(_MAX_USERS if popularity == "users" else _MAX_COUNT)
        value = share.cast(pl.Float64) / top.cast(pl.Float64)
    else:
        value = share.cast(pl.Float64)

    def partials(ctx: RankingContext) -> Partials:
        rows = ctx.within(k)
        if absent == "drop":
            rows = rows & (pl.col(TRAIN_USERS) > 0)
        return {name: exact_mean(pl.when(rows).then(value))}

    # a popularity bias: the less popular the recommendations, the better (RecBole's
    # AveragePopularity is ``smaller = True``; Evidently shows ARP as popularity bias)
    return _label_free(name, partials, lambda p: p(name), inputs, direction="lower")


_MAX_USERS = "__rke_train_max_users"
_MAX_COUNT = "__rke_train_max_count"


def _add_max_popularity(lf: pl.LazyFrame, tables: Tables) -> pl.LazyFrame:
    train = tables.require("train", "arp(normalize=True)")
    per_item = train.group_by(tables.item).agg(
        pl.col(tables.query).n_unique().alias("users"), pl.len().alias("count")
    )
    top = per_item.select(
        pl.col("users").max().cast(pl.Int64).alias(_MAX_USERS),
        pl.col("count").max().cast(pl.Int64).alias(_MAX_COUNT),
    )
    return lf.join(top, how="cross")


_MAX_POPULARITY = RowInput("train_max_popularity", "train", _add_max_popularity)

_IN_TAIL = "__rke_in_tail"


def _lower_quantile(counts: pl.LazyFrame, tail: float) -> pl.LazyFrame:
    """The ``tail``-quantile (lower) of the items' counts, as a one-row ``threshold`` frame.

    The count at sorted position ``floor(tail * (n - 1))``: the smallest distinct count that
    at least ``position + 1`` items do not exceed (a small self-join of the distinct counts;
    a plain quantile is not a streaming operation).
    """
    values = counts.group_by("count").agg(pl.len().alias("items"))
    at_most = (
        values.join(values.rename({"count": "other", "items": "other_items"}), how="cross")
        .filter(pl.col("other") <= pl.col("count"))
        .group_by("count")
        .agg(pl.col("other_items").sum().alias("at_most"))
    )
    position = values.select(
        ((pl.col("items").sum() - 1).cast(pl.Float64) * tail).floor().alias("position")
    )
    return (
        at_most.join(position, how="cross")
        .filter(pl.col("at_most") > pl.col("position"))
        .select(pl.col("count").min().cast(pl.Float64).alias("threshold"))
    )


def _tail_input(tail: float) -> RowInput:
    def add(lf: pl.LazyFrame, tables: Tables) -> pl.LazyFrame:
        train = tables.require("train", "aplt/aclt")
        counts = train.group_by(tables.item).agg(pl.len().alias("count"))
        if tail >= 1:
            threshold = pl.LazyFrame({"threshold": [float(tail)]})
        else:
            threshold = _lower_quantile(counts, tail)
        joined = lf.join(threshold, how="cross")
        return joined.with_columns(
            (pl.col(TRAIN_COUNT).cast(pl.Float64) <= pl.col("threshold")).alias(
                f"{_IN_TAIL}_{tail}"
            )
        ).drop("threshold")

    return RowInput(f"train_tail_{tail}", "train", add)


def _check_tail(tail: object, metric: str) -> float:
    if isinstance(tail, bool) or not isinstance(tail, int | float) or not tail > 0:
        msg = (
            f"option tail= of {metric!r} must be a count >= 1 or a fraction between 0 and 1, "
            f"got {tail!r}"
        )
        raise InvalidOptionError(msg)
    if not math.isfinite(tail):
        msg = f"option tail= of {metric!r} must be finite, got {tail!r}"
        raise InvalidOptionError(msg)
    return float(tail)


def _long_tail(base: str, k: int, tail: float, *, share: bool) -> Metric:
    tail = _check_tail(tail, base)
    name = named(at(base, required_cutoff(k, base)), {"tail": tail} if tail != 0.1 else {})
    flag = pl.col(f"{_IN_TAIL}_{tail}")

    def partials(ctx: RankingContext) -> Partials:
        rows = ctx.within(k)
        in_tail = (rows & flag).sum()
        if share:
            return {name: in_tail.cast(pl.Float64) / rows.sum().cast(pl.Float64)}
        return {name: in_tail.cast(pl.Float64)}

    def value(p: Lookup) -> pl.Expr:
        if share:  # an empty list has no share
            return pl.when(p(name).is_nan()).then(None).otherwise(p(name))
        return p(name)

    return _label_free(name, partials, value, (POPULARITY, _tail_input(tail)))


def aplt(k: int, *, tail: float = 0.1) -> Metric:
    """``aplt@k``: share of the top-k items in the long tail (see the module docstring).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> train = pl.DataFrame({"query": [1, 2, 3, 1], "item": ["a", "a", "a", "b"]})
    >>> log = pl.DataFrame({"query": [9, 9], "item": ["a", "b"], "score": [2.0, 1.0]})
    >>> # counts a 3, b 1: with tail=1, b is in the tail
    >>> rke.evaluate(log, ["aplt@2(tail=1)", "aclt@2(tail=1)"], train=train).row(0)
    (0.5, 1.0)
    """
    return _long_tail("aplt", k, tail, share=True)


def aclt(k: int, *, tail: float = 0.1) -> Metric:
    """``aclt@k``: number of the top-k items in the long tail (see :func:`aplt`).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> train = pl.DataFrame({"query": [1, 2], "item": ["a", "a"]})
    >>> log = pl.DataFrame({"query": [9, 9], "item": ["a", "z"], "score": [2.0, 1.0]})
    >>> rke.evaluate(log, [rke.metrics.aclt(2, tail=1)], train=train).item()
    1.0
    """
    return _long_tail("aclt", k, tail, share=False)
