"""Seeded negative samples that reproduce across runs, machines, row orders and versions.

Why not a random generator: numpy's ``Generator`` distributions and ``pl.Expr.hash`` may change
between versions, and a generator's draws depend on the order the rows arrive in. Each
candidate item instead gets a key that depends only on (seed, query[, positive], item):

* ``H(x)``: the first 8 bytes of ``blake2b(str(x).encode("utf-8"), digest_size=8)`` read as a
  little-endian unsigned 64-bit integer, where ``str(x)`` is the id as Python prints it (the
  int 12 and the string "12" hash alike);
* ``splitmix64`` (Steele, Lea & Flood 2014; Vigna's reference code), on unsigned 64-bit
  integers with wrap-around;
* the list's key ``L = splitmix64(H(query) ^ splitmix64(seed))``, and for
  ``per="positive"`` ``L = splitmix64(L ^ H(positive))``; the item's key
  ``K = splitmix64(L ^ H(item))``.

Uniform sampling keeps the ``n_negatives`` candidates with the smallest ``K`` (a uniformly
random subset, drawn without replacement). Popularity sampling is Efraimidis & Spirakis'
weighted sampling without replacement (Inf. Proc. Letters 97, 2006): with
``u = (floor(K / 2**11) + 0.5) / 2**53`` in (0, 1), it keeps the smallest ``-ln(u) / w``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Literal

import numpy as np
import polars as pl

from polars_rankeval.errors import ColumnValueError, InvalidOptionError
from polars_rankeval.sampling._frames import SHOWN, align, read, require

Strategy = Literal["uniform", "popularity"]
Per = Literal["query", "positive", "pooled"]

STRATEGIES: tuple[Strategy, ...] = ("uniform", "popularity")
PERS: tuple[Per, ...] = ("query", "positive", "pooled")
#: The column naming each list's positive item when ``per="positive"``.
POSITIVE = "positive"

#: The named protocols: (n_negatives, strategy, per). RecBole's ``eval_args: mode: uniN/popN``
#: draws N negatives per held-out positive and ranks them with all of the user's positives in
#: one list (``NegSampleEvalDataLoader``); NCF (He et al., WWW 2017) ranks each held-out item
#: alone among 99 sampled items (its ``*.test.negative`` files: 1 + 99 = the paper's "100
#: items"); Krichene & Rendle's experiments rank it among m = 100 sampled items.
PROTOCOLS: dict[str, tuple[int, Strategy, Per]] = {
    "uni100": (100, "uniform", "pooled"),
    "pop100": (100, "popularity", "pooled"),
    "ncf": (99, "uniform", "positive"),
    "one_plus_100": (100, "uniform", "positive"),
}
_RECBOLE = re.compile(r"^(uni|pop)([1-9][0-9]*)$")

_MASK = (1 << 64) - 1
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)
# candidates per block of lists: bounds the (lists x catalog) key matrix to ~32 MB
_BLOCK = 4_000_000


def splitmix64(values: np.ndarray) -> np.ndarray:
    """Vigna's splitmix64 finaliser on a uint64 array (numpy wraps uint64 arithmetic)."""
    z = values.astype(np.uint64) + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX_1
    z = (z ^ (z >> np.uint64(27))) * _MIX_2
    out: np.ndarray = z ^ (z >> np.uint64(31))
    return out


def id_hash(values: Sequence[object]) -> np.ndarray:
    """``H(x)`` of each id: blake2b of its Python string form, as uint64."""
    return np.fromiter(
        (
            int.from_bytes(
                hashlib.blake2b(str(v).encode("utf-8"), digest_size=8).digest(), "little"
            )
            for v in values
        ),
        dtype=np.uint64,
        count=len(values),
    )


def resolve_protocol(
    protocol: str | None,
    n_negatives: int | None,
    strategy: str | None,
    per: str | None,
) -> tuple[int, Strategy, Per]:
    """The sampling settings: a protocol's, or the options given (defaults 100, uniform, query)."""
    if protocol is None:
        settings: tuple[int, str, str] = (100, "uniform", "query")
    else:
        match = _RECBOLE.match(protocol) if isinstance(protocol, str) else None
        if isinstance(protocol, str) and protocol in PROTOCOLS:
            settings = PROTOCOLS[protocol]
        elif match:
            kind = "uniform" if match.group(1) == "uni" else "popularity"
            settings = (int(match.group(2)), kind, "pooled")
        else:
            msg = (
                f"option protocol= must be one of {sorted(PROTOCOLS)} or RecBole's 'uni<N>' / "
                f"'pop<N>', got {protocol!r}"
            )
            raise InvalidOptionError(msg)
        for name, given, preset in zip(
            ("n_negatives", "strategy", "per"), (n_negatives, strategy, per), settings, strict=True
        ):
            if given is not None and given != preset:
                msg = (
                    f"option {name}={given!r} contradicts protocol={protocol!r}, which sets "
                    f"{name}={preset!r}; give one or the other"
                )
                raise InvalidOptionError(msg)
    count = settings[0] if n_negatives is None else n_negatives
    kind = settings[1] if strategy is None else strategy
    grouping = settings[2] if per is None else per
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        msg = f"option n_negatives= must be an integer >= 1, got {count!r}"
        raise InvalidOptionError(msg)
    if kind not in STRATEGIES:
        msg = f"option strategy= must be one of {list(STRATEGIES)}, got {kind!r}"
        raise InvalidOptionError(msg)
    if grouping not in PERS:
        msg = f"option per= must be one of {list(PERS)}, got {grouping!r}"
        raise InvalidOptionError(msg)
    return count, kind, grouping


def _catalog_items(catalog: object, item: str, dtype: pl.DataType) -> pl.Series:
    """The catalog's distinct items, sorted (so the result never depends on its order)."""
    if isinstance(catalog, bool):
        catalog = None
    if isinstance(catalog, int):
        if catalog < 1:
            msg = f"option catalog= as a size must be >= 1, got {catalog}"
            raise InvalidOptionError(msg)
        items = pl.Series(item, np.arange(catalog), dtype=pl.Int64)
    elif isinstance(catalog, pl.Series):
        items = catalog.rename(item)
    elif isinstance(catalog, (list, tuple, range, np.ndarray)):
        items = pl.Series(item, list(catalog))
    elif catalog is None:
        msg = "option catalog= is required: the catalog's size (items 0..n-1) or its items"
        raise InvalidOptionError(msg)
    else:
        table = read(catalog, "catalog")
        require(table, [item], "catalog")
        items = table[item]
    frame = align(items.to_frame(), item, dtype, "catalog")
    out: pl.Series = frame[item].drop_nulls().unique().sort()
    return out


def _popularity(train: pl.DataFrame | None, positives: pl.DataFrame, item: str) -> pl.DataFrame:
    """Each item's interaction count over train and the positives (RecBole counts every phase)."""
    parts = [positives.select(item)]
    if train is not None:
        parts.append(train.select(item))
    return pl.concat(parts).group_by(item).len(name="_weight")


def _short_lists(lists: pl.DataFrame, shown: list[str]) -> ColumnValueError:
    short = lists.filter(pl.col("_available") < pl.col("_need")).sort(shown)
    examples = short.head(SHOWN).select([*shown, "_need", "_available"]).rows()
    msg = (
        f"{short.height} list(s) have fewer candidate items than negatives to draw, e.g. "
        f"(query[, positive], wanted, candidates) {examples}; candidates are catalog items the "
        "user has not interacted with (train and positives; with strategy='popularity', only "
        "items with at least one interaction). Lower n_negatives= or drop those users"
    )
    return ColumnValueError(msg)


def draw(
    lists: pl.DataFrame,
    list_keys: np.ndarray,
    excluded: pl.DataFrame,
    items: pl.Series,
    weights: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Row ``i`` of ``lists`` draws ``_need`` items: (list index, catalog index) pairs.

    ``excluded`` holds (``_list``, ``_at``): catalog positions a list may not draw.
    """
    item_hash = id_hash(items.to_list())
    n_items = len(items)
    allowed = np.ones(n_items, dtype=bool) if weights is None else weights > 0
    need = lists["_need"].to_numpy()
    block = max(1, _BLOCK // max(n_items, 1))
    chosen_list, chosen_at = [], []
    ex_list = excluded["_list"].to_numpy()
    ex_at = excluded["_at"].to_numpy()
    order = np.argsort(ex_list, kind="stable")
    ex_list, ex_at = ex_list[order], ex_at[order]
    for start in range(0, lists.height, block):
        stop = min(start + block, lists.height)
        keys = splitmix64(list_keys[start:stop, None] ^ item_hash[None, :])
        rank: np.ndarray
        if weights is None:
            rank = keys.copy()  # the exact 64-bit keys: no rounding can tie two of them
            never: float | np.uint64 = np.uint64(_MASK)
        else:
            u = ((keys >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53
            with np.errstate(divide="ignore"):
                rank = -np.log(u) / weights[None, :]
            never = np.inf
        # a list never draws an excluded item: the checked candidate counts make sure each
        # list has enough others, so the marked ones are never among the smallest
        rank[:, ~allowed] = never
        lo, hi = np.searchsorted(ex_list, [start, stop])
        rank[ex_list[lo:hi] - start, ex_at[lo:hi]] = never
        for row in range(stop - start):
            k = int(need[start + row])
            # the smallest keys; np.lexsort on (key, rank) so ties (never seen with 64-bit
            # keys) resolve by the item's own key, not by the catalog's order
            candidates = (
                np.argpartition(rank[row], k - 1)[:k] if k < n_items else np.arange(n_items)
            )
            picked = candidates[np.lexsort((keys[row, candidates], rank[row, candidates]))][:k]
            chosen_list.append(np.full(k, start + row, dtype=np.int64))
            chosen_at.append(picked)
    if not chosen_list:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(chosen_list), np.concatenate(chosen_at)


def sample_negatives(
    positives: object,
    *,
    catalog: object,
    n_negatives: int | None = None,
    strategy: Strategy | None = None,
    per: Per | None = None,
    protocol: str | None = None,
    train: object = None,
    seed: int = 0,
    query: str = "query",
    item: str = "item",
) -> pl.DataFrame:
    """Draw each user's negative items once, reproducibly, to store and reuse.

    Parameters
    ----------
    positives
        The held-out interactions (``query``, ``item``): a Polars, pandas or Arrow frame, a
        LazyFrame or a Parquet path. Each is a relevant item of its query.
    catalog
        The items to draw from: their number ``n`` (items ``0 .. n-1``), a sequence or Series
        of items, or a table with the ``item`` column.
    n_negatives
        Negatives per list (``per="query"``, ``"positive"``) or per positive
        (``per="pooled"``); default 100.
    strategy
        ``"uniform"`` (default): every candidate equally likely. ``"popularity"``: likelier in
        proportion to the item's interaction count in ``train`` and ``positives`` together
        (RecBole counts every phase); an item with no interaction is never drawn.
    per
        ``"query"`` (default): one list per query, its positives and ``n_negatives``
        negatives. ``"positive"``: each positive its own list with its own ``n_negatives``
        negatives (NCF's leave-one-out; Krichene & Rendle's corrections need it).
        ``"pooled"``: ``n_negatives`` per positive, all in the query's one list (RecBole).
    protocol
        A named protocol setting the three options above: ``"uni100"`` / ``"pop100"`` (or any
        ``"uni<N>"`` / ``"pop<N>"``: RecBole's ``eval_args`` modes, N per positive, pooled),
        ``"ncf"`` (1 positive + 99 negatives per list, as NCF's published test files) or
        ``"one_plus_100"`` (1 positive + 100 negatives, Krichene & Rendle's setting). An
        option that contradicts it is an error.
    train
        The training interactions (``query``, ``item``): never drawn for their query; needed
        for ``strategy="popularity"``.
    seed
        Any integer >= 0; the same seed draws the same negatives everywhere.
    query, item
        The column names (in ``positives``, ``train`` and the result).

    Returns
    -------
    pl.DataFrame
        One row per negative: ``query``, ``positive`` (``per="positive"`` only) and ``item``,
        sorted. Negatives are drawn without replacement among catalog items the query has not
        interacted with (neither in ``train`` nor in ``positives``); a list with fewer
        candidates than it needs is an error naming it. The keys are described in
        :mod:`polars_rankeval.sampling._negatives`: they depend on nothing but the seed and the
        ids, so a row order, an input type or another machine gives the same rows.

    Examples
    --------
    >>> import polars as pl
    >>> positives = pl.DataFrame({"query": [1, 1, 2], "item": [0, 1, 2]})
    >>> negatives = sample_negatives(positives, catalog=6, n_negatives=2, seed=7)
    >>> negatives.group_by("query").len().sort("query").rows()
    [(1, 2), (2, 2)]
    >>> negatives.join(positives, on=["query", "item"]).height  # never a positive
    0
    """
    n_negatives, strategy, per = resolve_protocol(protocol, n_negatives, strategy, per)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= _MASK:
        msg = f"option seed= must be an integer in [0, 2**64), got {seed!r}"
        raise InvalidOptionError(msg)
    held = read(positives, "positives")
    require(held, [query, item], "positives")
    held = held.select(query, item)
    if held.null_count().sum_horizontal().item():
        msg = f"the positives= table has null {query!r} or {item!r} values; drop or fill them"
        raise ColumnValueError(msg)
    held = held.unique()
    items = _catalog_items(catalog, item, held.schema[item])
    used = held
    seen = None
    if train is not None:
        seen = read(train, "train")
        require(seen, [query, item], "train")
        seen = align(
            align(seen.select(query, item), query, held.schema[query], "train"),
            item,
            held.schema[item],
            "train",
        )
        used = pl.concat([held, seen]).unique()
    elif strategy == "popularity":
        msg = "strategy='popularity' needs train= (the interactions whose counts weigh items)"
        raise InvalidOptionError(msg)
    weights = None
    if strategy == "popularity":
        counts = items.to_frame().join(_popularity(seen, held, item), on=item, how="left")
        weights = counts["_weight"].fill_null(0).cast(pl.Float64).to_numpy()
    at = items.to_frame().with_row_index("_at")
    # the lists: one per query (or per positive), with the number of negatives each needs
    if per == "positive":
        lists = held.rename({item: POSITIVE}).sort(query, POSITIVE)
        need = pl.lit(n_negatives)
    else:
        lists = held.group_by(query).len(name="_positives").sort(query)
        need = pl.lit(n_negatives) * (pl.col("_positives") if per == "pooled" else pl.lit(1))
    lists = lists.with_row_index("_list").with_columns(need.cast(pl.Int64).alias("_need"))
    excluded = (
        lists.select("_list", query)
        .join(used, on=query)
        .join(at, on=item)
        .select(pl.col("_list").cast(pl.Int64), pl.col("_at").cast(pl.Int64))
    )
    allowed = items.len() if weights is None else int((weights > 0).sum())
    blocked = excluded
    if weights is not None:
        # an excluded item without interactions was never a candidate: not counted twice
        blocked = excluded.filter(pl.Series(weights[excluded["_at"].to_numpy()] > 0))
    available = blocked.group_by("_list").len(name="_blocked")
    lists = lists.join(available, on="_list", how="left").with_columns(
        (allowed - pl.col("_blocked").fill_null(0)).alias("_available")
    )
    shown = [query, POSITIVE] if per == "positive" else [query]
    if lists.filter(pl.col("_available") < pl.col("_need")).height:
        raise _short_lists(lists, shown)
    key = splitmix64(
        id_hash(lists[query].to_list()) ^ splitmix64(np.array([seed], dtype=np.uint64))
    )
    if per == "positive":
        key = splitmix64(key ^ id_hash(lists[POSITIVE].to_list()))
    which, where = draw(lists, key, excluded, items, weights)
    result = lists.select(shown)[which].with_columns(items.gather(where).alias(item))
    return result.sort([*shown, item])
