"""Intent-aware (diversity) measures, as ndeval computes them (TREC Web track 2009-2014).

Each judged item carries its subtopic judgments (the log's ``subtopics`` column, from
:func:`~polars_rankeval.join_run_qrels` on diversity qrels ``topic subtopic docno judgment``).
A judgment counts when it is ``>= rel`` (default 1; ndeval reads every positive judgment as 1).
``S`` is the set of the query's subtopics with at least one such judgment; ``c_s(r)`` the number
of rows above rank ``r`` relevant to subtopic ``s``; the novelty-biased gain of rank ``r`` is
``g_r = Σ_s J(r, s) (1 − α)^c_s(r)``. With ndeval's defaults ``α = β = 0.5``:

* ``alpha_dcg@k`` = ``Σ_{r≤k} g_r / log2(r+1)`` divided by the "ideal ideal" ``Σ_{i≤k}
  |S| (1 − α)^(i−1) / log2(i+1)`` (every row relevant to every subtopic);
  ``alpha_ndcg@k`` divides by the same sum over the greedy ideal ranking instead;
* ``err_ia@k`` = ``Σ_{r≤k} g_r / r`` over the ideal-ideal ``Σ_{i≤k} |S| (1 − α)^(i−1) / i``;
  ``nerr_ia@k`` over the greedy ideal;
* ``nrbp`` = ``(1 − (1 − α) β) / |S| · Σ_r β^(r−1) g_r`` over the whole ranking; ``nnrbp``
  divides by the greedy ideal's (NaN when ``S`` is empty, as ndeval prints it);
* ``map_ia`` = the mean over ``S`` of each subtopic's average precision (its judged
  relevant items as the recall base); ``p_ia@k`` = ``Σ_{r≤k} Σ_s J(r, s) / (k |S|)``;
  ``strec@k`` = the share of ``S`` covered by the top ``k``.

ndeval's quirks are kept so that values equal it: the greedy ideal takes, at each position, the
judged item with the largest current gain, ties to the larger item id; at ``k = 1`` ndeval
leaves ``alpha_dcg`` and ``err_ia`` unnormalised (the raw gain of rank 1); a query whose
``S`` is empty scores 0 (``nnrbp``: NaN). ndeval computes the cutoff measures to depth 20 only;
here any ``k`` works. ``tie_order="item_asc"`` ranks ties by item ascending, as pyndeval (and so
ir_measures) does; ndeval's ``-traditional`` order is trec_eval's (the default).

The ranking pass keeps, per list, the rank and subtopic judgments of its items with a positive
judgment (a hidden value that streams); the finishing step explodes them to (item, subtopic)
rows, builds the greedy ideal for all queries at once (one vectorised step per ideal position)
and computes every value from the per-rank gains.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import polars as pl

from polars_rankeval._engine.context import (
    ITEM_ASC_RANK,
    RankingContext,
    check_tie_order,
    item_ascending_later_rows,
    item_ascending_rows,
)
from polars_rankeval._engine.exact_sum import exact_sum
from polars_rankeval._engine.options import check_choice
from polars_rankeval._engine.tables import SUBTOPIC_INPUT, SUBTOPIC_JUDGMENTS, Tables
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.metrics._base import Metric, Partials, at, named, no_closed_form

Kind = Literal[
    "alpha_dcg", "alpha_ndcg", "err_ia", "nerr_ia", "nrbp", "nnrbp", "map_ia", "p_ia", "strec"
]
_CUTOFF_KINDS = frozenset({"alpha_dcg", "alpha_ndcg", "err_ia", "nerr_ia", "p_ia", "strec"})
_IDEAL_KINDS = frozenset({"alpha_ndcg", "nerr_ia", "nnrbp"})
_RANK, _ITEM, _SUBTOPIC = "__rke_r", "__rke_i", "__rke_s"
_GAIN, _POSITION = "__rke_g", "__rke_p"


def _probability(option: str, value: object, *, closed: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        msg = f"option {option}= must be a number in [0, 1], got {value!r}"
        raise InvalidOptionError(msg)
    if not 0 <= value <= 1 or (not closed and value == 1):
        msg = f"option {option}= must be in [0, 1{']' if closed else ')'}, got {value!r}"
        raise InvalidOptionError(msg)
    return float(value)


def _level(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        msg = (
            f"option rel= must be a positive int (the smallest judgment that counts), got {value!r}"
        )
        raise InvalidOptionError(msg)
    return value


def _judged_items(ctx: RankingContext, item_asc: bool) -> pl.Expr:
    """Hidden per-list value: {rank, item, subtopic judgments} of the items that have any.

    Unretrieved items are kept (null rank): the greedy ideal ranks every judged item. The
    level ``rel`` is applied when the value is exploded. ``filter(...).unique().implode()``
    over a struct of plain columns stays on the streaming engine (items are unique within a
    list); a list operation before the filter would run on every row of the log.
    """
    assert ctx.item is not None
    has = pl.col(SUBTOPIC_JUDGMENTS).list.len().fill_null(0) > 0
    rank = ctx.extra[ITEM_ASC_RANK] if item_asc else ctx.rank
    row = pl.struct(
        rank.cast(pl.Int64).alias(_RANK),
        ctx.item.alias(_ITEM),
        pl.col(SUBTOPIC_JUDGMENTS).alias(_SUBTOPIC),
    )
    return row.filter(has).unique().implode()


def _exploded(frame: pl.DataFrame, partition: list[str], column: str, rel: int) -> pl.DataFrame:
    """One row per (list, item, subtopic) of the hidden values, for judgments ``>= rel``."""
    judgments = (
        frame.select(*partition, pl.col(column).alias("__rke_rows"))
        .explode("__rke_rows")
        .drop_nulls("__rke_rows")
        .unnest("__rke_rows")
        .explode(_SUBTOPIC)
        .drop_nulls(_SUBTOPIC)
    )
    counted = pl.col(_SUBTOPIC).struct.field("relevance") >= rel
    return judgments.filter(counted).with_columns(
        pl.col(_SUBTOPIC).struct.field("subtopic").alias(_SUBTOPIC)
    )


def _run_gains(rows: pl.DataFrame, partition: list[str], alpha: float) -> pl.DataFrame:
    """Per (list, rank): the novelty-biased gain and the number of subtopic judgments."""
    ranked = rows.filter(pl.col(_RANK).is_not_null())
    earlier = pl.col(_RANK).rank("ordinal").over([*partition, _SUBTOPIC]) - 1
    novelty = pl.lit(1.0 - alpha).pow(earlier.cast(pl.Float64))
    return (
        ranked.with_columns(novelty.alias(_GAIN), earlier.alias("__rke_c"))
        .group_by([*partition, _RANK])
        .agg(exact_sum(pl.col(_GAIN)), pl.len().alias("__rke_n"))
    )


# Cells (lists x items x subtopics) of one block of the greedy ideal's dense arrays.
_BLOCK_CELLS = 4_000_000


def _greedy_ideal(
    rows: pl.DataFrame, partition: list[str], alpha: float, depth: int | None
) -> pl.DataFrame:
    """Ndeval's greedy ideal: per (list, position), the gain of the item picked there.

    At each position, every list picks its unpicked judged item with the largest current gain
    ``Σ_s (1 − α)^picked_s`` (ties to the larger item id, byte order); the picked item's
    subtopics then count once more. Lists of similar size step together in dense numpy blocks
    (lists × items × subtopics, items ordered by id descending so that the first maximum is the
    larger id); a subtopic's weight is multiplied by ``1 − α`` at each pick, and an item's gain
    summed over its subtopics in order, as ndeval does.
    """
    schema: dict[str, pl.DataType] = {
        **{name: rows.schema[name] for name in partition},
        _POSITION: pl.Int64(),
        _GAIN: pl.Float64(),
    }
    if rows.is_empty():
        return pl.DataFrame(schema=schema)
    indexed = rows.select(
        pl.struct(partition).rank("dense").cast(pl.Int64).alias("__rke_q") - 1,
        pl.col(_ITEM).rank("dense", descending=True).over(partition).cast(pl.Int64) - 1,
        pl.col(_SUBTOPIC).rank("dense").over(partition).cast(pl.Int64).alias("__rke_s") - 1,
    )
    sizes = (
        indexed.group_by("__rke_q")
        .agg(pl.col(_ITEM).max() + 1, pl.col("__rke_s").max().alias("__rke_n_s") + 1)
        .sort(_ITEM, "__rke_q")
    )
    lists = rows.select(partition).unique(maintain_order=False)
    lists = lists.with_columns(
        pl.struct(partition).rank("dense").cast(pl.Int64).alias("__rke_q") - 1
    )
    query_ids = sizes["__rke_q"].to_numpy()
    n_items = sizes[_ITEM].to_numpy()
    n_subtopics = sizes["__rke_n_s"].to_numpy()
    # each judgment's list in the size order, sorted: a block's judgments are one slice
    order = np.empty(len(query_ids), dtype=np.int64)
    order[query_ids] = np.arange(len(query_ids))
    cells_list = order[indexed["__rke_q"].to_numpy()]
    sorting = np.argsort(cells_list, kind="stable")
    cells_list = cells_list[sorting]
    cells_item = indexed[_ITEM].to_numpy()[sorting]
    cells_subtopic = indexed["__rke_s"].to_numpy()[sorting]
    out_q: list[np.ndarray] = []
    out_pos: list[np.ndarray] = []
    out_gain: list[np.ndarray] = []
    start = 0
    while start < len(query_ids):
        width, height = int(n_items[start]), int(n_subtopics[start:].max())
        stop = start + 1
        while stop < len(query_ids):  # sizes ascend: grow the block while it stays small
            width = int(n_items[stop])
            if (stop - start + 1) * width * height > _BLOCK_CELLS:
                break
            stop += 1
        block = query_ids[start:stop]
        width = int(n_items[start:stop].max())
        judged = np.zeros((len(block), width, height), dtype=bool)
        first, last = np.searchsorted(cells_list, [start, stop])
        judged[
            cells_list[first:last] - start, cells_item[first:last], cells_subtopic[first:last]
        ] = True
        lengths = n_items[start:stop]
        q, pos, gain = _greedy_block(judged, lengths, alpha, depth)
        out_q.append(block[q])
        out_pos.append(pos)
        out_gain.append(gain)
        start = stop
    picked = pl.DataFrame(
        {
            "__rke_q": np.concatenate(out_q),
            _POSITION: np.concatenate(out_pos),
            _GAIN: np.concatenate(out_gain),
        }
    )
    joined = picked.join(lists, on="__rke_q", how="left").select(*partition, _POSITION, _GAIN)
    return joined.cast(pl.Schema(schema))


def _greedy_block(
    judged: np.ndarray, lengths: np.ndarray, alpha: float, depth: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The greedy ideal of a block: (list index, position, gain) of every pick."""
    lists, width, height = judged.shape
    weight = np.ones((lists, height))
    taken = np.zeros((lists, width), dtype=bool)
    taken |= np.arange(width)[None, :] >= lengths[:, None]  # padding is never picked
    steps = width if depth is None else min(width, depth)
    every = np.arange(lists)
    out_q, out_pos, out_gain = [], [], []
    for step in range(steps):
        gain = np.zeros((lists, width))
        for subtopic in range(height):  # summed in subtopic order, as ndeval
            gain += np.where(judged[:, :, subtopic], weight[:, None, subtopic], 0.0)
        gain[taken] = -1.0
        best = gain.argmax(axis=1)  # the first maximum: the larger item id
        live = step < lengths
        out_q.append(every[live])
        out_pos.append(np.full(int(live.sum()), step + 1, dtype=np.int64))
        out_gain.append(gain[every, best][live])
        taken[every, best] = True
        hit = judged[every, best, :] & live[:, None]
        weight = np.where(hit, weight * (1.0 - alpha), weight)
    return np.concatenate(out_q), np.concatenate(out_pos), np.concatenate(out_gain)


def _dcg_discount(rank: pl.Expr) -> pl.Expr:
    # ndeval: log(2) / log(rank + 1), computed this way (not 1 / log2) for the same bits
    return math.log(2.0) / (rank.cast(pl.Float64) + 1.0).log()


def _ideal_ideal(kind: str, k: int, subtopics: pl.Expr, alpha: float) -> pl.Expr:
    """Ndeval's ideal-ideal divisor: every row relevant to every subtopic (k ≥ 2)."""
    total = 0.0
    weight = 1.0
    for i in range(1, k + 1):
        discount = math.log(2.0) / math.log(i + 1.0) if kind == "alpha_dcg" else 1.0 / i
        total += weight * discount
        weight *= 1.0 - alpha
    return subtopics.cast(pl.Float64) * total


def _values(  # noqa: PLR0917 (internal; one call site)
    kind: Kind,
    k: int | None,
    alpha: float,
    beta: float,
    run: pl.DataFrame,
    ideal: pl.DataFrame | None,
    per_list: pl.DataFrame,
    partition: list[str],
) -> pl.DataFrame:
    """The metric per list from its per-rank gains (``run``) and the ideal's (``ideal``)."""
    within = pl.col(_RANK) <= k if k is not None else pl.lit(value=True)
    if kind in {"alpha_dcg", "alpha_ndcg"}:
        term = pl.col(_GAIN) * _dcg_discount(pl.col(_RANK))
    elif kind in {"err_ia", "nerr_ia"}:
        term = pl.col(_GAIN) / pl.col(_RANK).cast(pl.Float64)
    elif kind in {"nrbp", "nnrbp"}:
        term = pl.col(_GAIN) * pl.lit(beta).pow(pl.col(_RANK).cast(pl.Float64) - 1.0)
    elif kind == "p_ia":
        term = pl.col("__rke_n").cast(pl.Float64)
    else:
        term = pl.col(_GAIN)
    sums = run.group_by(partition).agg(
        exact_sum(term, within).alias("__rke_sum"),
        exact_sum(pl.col(_GAIN), within).alias("__rke_any"),
    )
    table = per_list.join(sums, on=partition, how="left", nulls_equal=True).with_columns(
        pl.col("__rke_sum").fill_null(0.0), pl.col("__rke_any").fill_null(0.0)
    )
    size = pl.col("__rke_S").cast(pl.Float64)
    value: pl.Expr
    if kind in _IDEAL_KINDS:
        assert ideal is not None
        ideal_rank = pl.col(_POSITION).alias(_RANK)
        ideal_terms = ideal.with_columns(ideal_rank)
        ideal_sums = ideal_terms.group_by(partition).agg(
            exact_sum(term, within).alias("__rke_ideal")
        )
        table = table.join(ideal_sums, on=partition, how="left", nulls_equal=True).with_columns(
            pl.col("__rke_ideal").fill_null(0.0)
        )
        if kind == "nnrbp":  # 0 / 0 is NaN when the query has no subtopic, as in ndeval
            value = pl.col("__rke_sum") / pl.col("__rke_ideal")
        else:  # ndeval normalises only where the run's gain is non-zero
            value = (
                pl.when(pl.col("__rke_any") > 0)
                .then(pl.col("__rke_sum") / pl.col("__rke_ideal"))
                .otherwise(0.0)
            )
    elif kind in {"alpha_dcg", "err_ia"}:
        assert k is not None
        # ndeval leaves the first position unnormalised
        divisor = pl.lit(1.0) if k == 1 else _ideal_ideal(kind, k, pl.col("__rke_S"), alpha)
        value = pl.when(size > 0).then(pl.col("__rke_sum") / divisor).otherwise(0.0)
    elif kind == "nrbp":
        scale = 1.0 - (1.0 - alpha) * beta
        value = pl.when(size > 0).then(scale * pl.col("__rke_sum") / size).otherwise(0.0)
    elif kind == "p_ia":
        assert k is not None
        value = pl.when(size > 0).then(pl.col("__rke_sum") / (k * size)).otherwise(0.0)
    else:
        msg = f"internal: {kind} has no value here"
        raise InvalidOptionError(msg)
    return table.select(*partition, value.alias("__rke_value"))


def _covered(
    rows: pl.DataFrame, per_list: pl.DataFrame, partition: list[str], k: int
) -> pl.DataFrame:
    """strec@k: the share of the query's subtopics covered by the top k."""
    covered = (
        rows.filter(pl.col(_RANK) <= k)
        .group_by(partition)
        .agg(pl.col(_SUBTOPIC).n_unique().alias("__rke_cov"))
    )
    size = pl.col("__rke_S").cast(pl.Float64)
    return per_list.join(covered, on=partition, how="left", nulls_equal=True).select(
        *partition,
        pl.when(size > 0)
        .then(pl.col("__rke_cov").fill_null(0) / size)
        .otherwise(0.0)
        .alias("__rke_value"),
    )


def _map_ia(rows: pl.DataFrame, per_list: pl.DataFrame, partition: list[str]) -> pl.DataFrame:
    """Mean over the query's subtopics of each subtopic's average precision."""
    recall_base = rows.group_by([*partition, _SUBTOPIC]).len("__rke_R")
    ranked = rows.filter(pl.col(_RANK).is_not_null())
    hits = pl.col(_RANK).rank("ordinal").over([*partition, _SUBTOPIC]).cast(pl.Float64)
    precision = ranked.with_columns((hits / pl.col(_RANK).cast(pl.Float64)).alias("__rke_prec"))
    per_subtopic = (
        recall_base.join(
            precision.group_by([*partition, _SUBTOPIC]).agg(exact_sum(pl.col("__rke_prec"))),
            on=[*partition, _SUBTOPIC],
            how="left",
            nulls_equal=True,
        )
        .with_columns((pl.col("__rke_prec").fill_null(0.0) / pl.col("__rke_R")).alias("__rke_ap"))
        .group_by(partition)
        .agg(exact_sum(pl.col("__rke_ap")))
    )
    size = pl.col("__rke_S").cast(pl.Float64)
    return per_list.join(per_subtopic, on=partition, how="left", nulls_equal=True).select(
        *partition,
        pl.when(size > 0).then(pl.col("__rke_ap") / size).otherwise(0.0).alias("__rke_value"),
    )


# ndeval's deepest cutoff: a greedy ideal is built at least this deep, so @5, @10 and @20
# share one.
_IDEAL_DEPTH = 20


@dataclass
class _Shared:
    """What the intent-aware metrics of one evaluation share: built once per hidden value.

    Every such metric of one ranking pass has the same hidden value (the judged items of each
    list), finished one metric at a time; the exploded rows, the run's gains per ``α`` and the
    greedy ideal per ``α`` are computed for the first and reused by the rest.
    """

    rows: pl.DataFrame
    per_list: pl.DataFrame
    keys: list[str]
    gains: dict[float, pl.DataFrame] = field(default_factory=dict)
    ideals: dict[float, tuple[int | None, pl.DataFrame]] = field(default_factory=dict)

    def run_gains(self, alpha: float) -> pl.DataFrame:
        if alpha not in self.gains:
            self.gains[alpha] = _run_gains(self.rows, self.keys, alpha)
        return self.gains[alpha]

    def ideal(self, alpha: float, depth: int | None) -> pl.DataFrame:
        """The greedy ideal to ``depth`` (None: all): a prefix of a deeper one, if built."""
        built = self.ideals.get(alpha)
        covers = built is not None and (
            built[0] is None or (depth is not None and depth <= built[0])
        )
        if built is None or not covers:
            wanted = None if depth is None else max(depth, _IDEAL_DEPTH)
            built = (wanted, _greedy_ideal(self.rows, self.keys, alpha, wanted))
            self.ideals[alpha] = built
        ideal = built[1]
        return ideal if depth is None else ideal.filter(pl.col(_POSITION) <= depth)


# The last few hidden values' shared work, by a fingerprint of their content (a finishing step
# sees only its own column, so the metrics of one evaluation find each other here).
_SHARED: OrderedDict[tuple[object, ...], _Shared] = OrderedDict()
_SHARED_KEPT = 4


def _shared_for(hidden: pl.DataFrame, keys: list[str], column: str, rel: int) -> _Shared:
    data = hidden.select(*keys, pl.col(column).alias("__rke_hidden"))
    schema = tuple((name, str(dtype)) for name, dtype in data.schema.items())
    fingerprint = (tuple(keys), rel, data.height, int(data.hash_rows(seed=18).sum()), schema)
    found = _SHARED.get(fingerprint)
    if found is not None:
        _SHARED.move_to_end(fingerprint)
        return found
    rows = _exploded(hidden, keys, column, rel)
    per_list = (
        hidden.select(keys)
        .join(
            rows.group_by(keys).agg(pl.col(_SUBTOPIC).n_unique().alias("__rke_S")),
            on=keys,
            how="left",
            nulls_equal=True,
        )
        .with_columns(pl.col("__rke_S").fill_null(0))
    )
    shared = _Shared(rows, per_list, keys)
    _SHARED[fingerprint] = shared
    while len(_SHARED) > _SHARED_KEPT:
        _SHARED.popitem(last=False)
    return shared


def _finish(kind: Kind, k: int | None, alpha: float, beta: float, rel: int) -> object:
    def finish(
        frame: pl.LazyFrame, partition: Sequence[str], column: str, tables: Tables
    ) -> pl.LazyFrame:
        keys = list(partition)

        def compute() -> pl.DataFrame:
            hidden = frame.collect()
            shared = _shared_for(hidden, keys, column, rel)
            rows, per_list = shared.rows, shared.per_list
            if kind == "strec":
                assert k is not None
                done = _covered(rows, per_list, keys, k)
            elif kind == "map_ia":
                done = _map_ia(rows, per_list, keys)
            else:
                run = shared.run_gains(alpha)
                ideal = None
                if kind in _IDEAL_KINDS:
                    ideal = shared.ideal(alpha, None if kind == "nnrbp" else k)
                done = _values(kind, k, alpha, beta, run, ideal, per_list, keys)
            return done.rename({"__rke_value": column})

        schema: dict[str, pl.DataType] = {
            **frame.select(keys).collect_schema(),
            column: pl.Float64(),
        }
        return pl.defer(compute, schema=schema)

    return finish


def intent_aware(
    kind: Kind,
    k: int | None = None,
    *,
    alpha: float = 0.5,
    beta: float = 0.5,
    rel: int = 1,
    tie_order: str = "item_desc",
) -> Metric:
    """One intent-aware measure (see the module docstring); ``kind`` names it."""
    kind = check_choice(
        "kind",
        kind,
        [
            "alpha_dcg",
            "alpha_ndcg",
            "err_ia",
            "nerr_ia",
            "nrbp",
            "nnrbp",
            "map_ia",
            "p_ia",
            "strec",
        ],
    )
    if kind in _CUTOFF_KINDS:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            msg = f"metric {kind!r} needs a positive cutoff, e.g. '{kind}@20', got {k!r}"
            raise InvalidOptionError(msg)
    elif k is not None:
        msg = f"metric {kind!r} takes no cutoff (it reads the whole ranking), got @{k}"
        raise InvalidOptionError(msg)
    alpha = _probability("alpha", alpha)
    beta = _probability("beta", beta)
    rel = _level(rel)
    order = check_tie_order(tie_order)
    shown: dict[str, object] = {}
    if alpha != 0.5 and kind not in {"map_ia", "p_ia", "strec"}:
        shown["alpha"] = f"{alpha:g}"
    if beta != 0.5 and kind in {"nrbp", "nnrbp"}:
        shown["beta"] = f"{beta:g}"
    if rel != 1:
        shown["rel"] = rel
    if order != "item_desc":
        shown["tie_order"] = order
    name = named(at(kind, k), shown)
    # the hidden value depends on the order only: metrics share it
    key = named("ia_items", {"tie_order": order})
    item_asc = order == "item_asc"

    def partials(ctx: RankingContext) -> Partials:
        no_closed_form(ctx, kind)
        return {key: _judged_items(ctx, item_asc)}

    return Metric(
        name,
        partials,
        lambda p: p(key),
        inputs=(SUBTOPIC_INPUT,),
        rows=lambda ctx: item_ascending_rows(ctx) if item_asc else {},
        later_rows=lambda ctx: item_ascending_later_rows(ctx) if item_asc else {},
        finish=_finish(kind, k, alpha, beta, rel),  # type: ignore[arg-type]
        tie_bounds=(
            "the best order of tied items depends on the subtopics they cover, not on their "
            "labels, so ordering higher labels first is no bound"
        ),
    )


def alpha_ndcg(k: int, *, alpha: float = 0.5, rel: int = 1, tie_order: str = "item_desc") -> Metric:
    """α-nDCG@k (Clarke et al. 2008), normalised by ndeval's greedy ideal ranking."""
    return intent_aware("alpha_ndcg", k, alpha=alpha, rel=rel, tie_order=tie_order)


def alpha_dcg(k: int, *, alpha: float = 0.5, rel: int = 1, tie_order: str = "item_desc") -> Metric:
    """α-DCG@k with ndeval's ideal-ideal normalisation."""
    return intent_aware("alpha_dcg", k, alpha=alpha, rel=rel, tie_order=tie_order)


def err_ia(k: int, *, alpha: float = 0.5, rel: int = 1, tie_order: str = "item_desc") -> Metric:
    """ERR-IA@k with ndeval's ideal-ideal normalisation."""
    return intent_aware("err_ia", k, alpha=alpha, rel=rel, tie_order=tie_order)


def nerr_ia(k: int, *, alpha: float = 0.5, rel: int = 1, tie_order: str = "item_desc") -> Metric:
    """nERR-IA@k: ERR-IA normalised by the greedy ideal ranking."""
    return intent_aware("nerr_ia", k, alpha=alpha, rel=rel, tie_order=tie_order)


def nrbp(
    *, alpha: float = 0.5, beta: float = 0.5, rel: int = 1, tie_order: str = "item_desc"
) -> Metric:
    """Novelty- and rank-biased precision (Clarke et al. 2009) over the whole ranking."""
    return intent_aware("nrbp", alpha=alpha, beta=beta, rel=rel, tie_order=tie_order)


def nnrbp(
    *, alpha: float = 0.5, beta: float = 0.5, rel: int = 1, tie_order: str = "item_desc"
) -> Metric:
    """NRBP normalised by the greedy ideal ranking."""
    return intent_aware("nnrbp", alpha=alpha, beta=beta, rel=rel, tie_order=tie_order)


def map_ia(*, rel: int = 1, tie_order: str = "item_desc") -> Metric:
    """Intent-aware MAP: the mean over subtopics of each subtopic's average precision."""
    return intent_aware("map_ia", rel=rel, tie_order=tie_order)


def p_ia(k: int, *, rel: int = 1, tie_order: str = "item_desc") -> Metric:
    """Intent-aware precision@k."""
    return intent_aware("p_ia", k, rel=rel, tie_order=tie_order)


def strec(k: int, *, rel: int = 1, tie_order: str = "item_desc") -> Metric:
    """Subtopic recall@k: the share of the query's subtopics covered by the top k."""
    return intent_aware("strec", k, rel=rel, tie_order=tie_order)
