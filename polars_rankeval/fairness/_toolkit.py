"""FairRankTune's group measures (EXP, EXPU, EXPRU, attention AWRF) and its seven combinations.

Each function reproduces FairRankTune 0.0.7 (KCachel/fairranktune,
``FairRankTune/Metrics/{EXP,AWRF,ComboUtil}.py``; run live in ``tests/fairness``) over a
:class:`~polars_rankeval.fairness._frame.FairInput`, lazily, one row per list (the list keys,
then ``VALUE``).

One FairRankTune call per list: its ``ranking_df`` is the list's ranking (its first ``k``
rows when ``k`` is given) and its ``item_group_dict`` holds *every* item of the list, so a
group's size counts the items ranked past ``k`` too; its groups are those of the list's items
(FairRankTune's ``np.unique`` over the dictionary), so a group of the universe absent from the
list takes no part (FairRankTune cannot see it). Per group ``g``, with ``n_g`` its items in
the list and ``v_r = 1/log2(r + 1)`` the position exposure (Singh & Joachims' position bias):

* ``exp``: ``E_g / n_g``, ``E_g`` the sum of ``v_r`` over the group's items in the top ``k``
  (Singh & Joachims' group exposure; their demographic parity compares these);
* ``expu``: ``(E_g / n_g) / (U_g / n_g)``, ``U_g`` the sum of the labels of the group's items
  in the top ``k`` (Singh & Joachims' disparate treatment: exposure per utility);
* ``expru``: ``(C_g / n_g) / (U_g / n_g)``, ``C_g`` the sum of ``label * v_r`` over the top
  ``k`` (Singh & Joachims' disparate impact: their click-through model, relevance times
  position bias, per utility); FairRankTune's ``EXPRU`` with that click-through rate given;
* ``attention_awrf``: ``A_g / n_g``, ``A_g`` the sum of ``100·(1−p)^(rank−1)·p`` (FairRankTune's
  ``AWRF``, Sapiezynski et al.'s geometric attention; not TREC Fair's AWRF).

Labels (``expu``, ``expru``): FairRankTune requires utilities in [0, 1]; a label outside in the
top ``k`` is refused (``ColumnValueError``), an unjudged item counts 0. Singh & Joachims'
``U(G|q)`` averages the utility over all of the query's candidates; FairRankTune's, and so
these, over the items shown (the top ``k``): the same without ``k``. Their two-group ratios
(disparate treatment ratio DTR, disparate impact ratio DIR: group 0's value over group 1's)
are ``min_max_ratio`` or ``max_min_ratio`` here once the groups' order is set aside.

Weights (an extension: FairRankTune has one group per item): an item in several groups counts
its weight in each, in ``n_g`` and in the sums; with weights 1 this is FairRankTune's value.

The per-group values ``v`` are combined by ``combo`` (FairRankTune's ``ComboUtil``), over the
``G`` groups of the list:

=================  ============  ==========================================================
combo              FairRankTune  value (better)
=================  ============  ==========================================================
``min_max_ratio``  MinMaxRatio   ``min v / max v``; 1 is parity (higher)
``max_min_ratio``  MaxMinRatio   ``max v / min v``; 1 is parity (lower)
``max_min_diff``   MaxMinDiff    ``max v − min v``; 0 is parity (lower)
``max_abs_diff``   MaxAbsDiff    ``max |v − mean v|``; 0 is parity (lower)
``mean_abs_dev``   MeanAbsDev    ``Σ|v − mean v| / G``; 0 is parity (lower)
``l_two``          LTwo          ``sqrt(Σ v²)``: the size of the values, no parity point (none)
``variance``       Variance      ``Σ(v − mean v)² / G`` (numpy's ``var``); 0 is parity (lower)
=================  ============  ==========================================================

Undefined values: where FairRankTune's numpy gives a non-finite group value (``expu`` or
``expru`` of a group whose items in the top ``k`` have no utility) or a non-finite combination
(``max_min_ratio`` with a group at 0), the value is null here, with an
``UndefinedMetricWarning`` naming the lists (compare and bootstrap refuse infinite values;
FairRankTune returns inf, NaN, or 0 for ``min_max_ratio`` over an infinite group value). An
item of the list without a group is refused (``ColumnValueError``): FairRankTune's dictionary
lookup fails on it. ``SAMPLE`` is not read (one ranking per list).
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from polars_rankeval._engine.exact_sum import exact_sum
from polars_rankeval._engine.tables import refuse_rows, warn_rows
from polars_rankeval.errors import InvalidOptionError, UndefinedMetricWarning
from polars_rankeval.fairness._frame import (
    GROUP,
    ITEM,
    LABEL,
    PREFIX,
    RANK,
    VALUE,
    WEIGHT,
    FairInput,
)

# working columns (this module's own, under the shared prefix)
_SIZE = PREFIX + "frt_size"
_EXPO = PREFIX + "frt_expo"
_UTIL = PREFIX + "frt_util"
_V = PREFIX + "frt_v"
_MEAN = PREFIX + "frt_mean"
_BAD = PREFIX + "frt_bad"

#: FairRankTune's combinations (ComboUtil.py), snake case -> its spelling.
COMBO_NAMES: dict[str, str] = {
    "min_max_ratio": "MinMaxRatio",
    "max_min_ratio": "MaxMinRatio",
    "max_min_diff": "MaxMinDiff",
    "max_abs_diff": "MaxAbsDiff",
    "mean_abs_dev": "MeanAbsDev",
    "l_two": "LTwo",
    "variance": "Variance",
}


# --- shared with _geyik --------------------------------------------------------------------


def check_k(k: object) -> int | None:
    """``k`` as given (None: the whole list), else InvalidOptionError."""
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        msg = f"option k= must be a positive int or None, got {k!r}"
        raise InvalidOptionError(msg)
    return k


def within(k: int | None) -> pl.Expr:
    """True for the rows within the first ``k`` ranks (every row when ``k`` is None)."""
    return pl.lit(True) if k is None else pl.col(RANK) <= k


def where(keys: list[str], rows: pl.DataFrame, limit: int = 3) -> str:
    """The first few lists of ``rows``, e.g. ``query='q1'; query='q7'``."""
    shown = [
        ", ".join(f"{key}={row[key]!r}" for key in keys)
        for row in rows.head(limit).iter_rows(named=True)
    ]
    more = f" and {rows.height - limit} more" if rows.height > limit else ""
    return "; ".join(shown) + more


def refuse_unknown(
    rows: pl.LazyFrame, keys: list[str], measure: str, k: int | None = None
) -> pl.LazyFrame:
    """``rows``, refusing (when read) a row within the first ``k`` ranks without a group.

    The cut is in the condition itself: Polars may merge a filter on the rank with the
    check's own, which then sees every row.
    """

    def message(bad: pl.DataFrame) -> str:
        first = bad.row(0, named=True)
        at = ", ".join(f"{key}={first[key]!r}" for key in keys)
        items = bad[ITEM].unique(maintain_order=True)
        more = f" ({items.len()} items in all)" if items.len() > 1 else ""
        return (
            f"{measure}: item {first[ITEM]!r} of {at} is not in the groups= table{more}; "
            "every item a list ranks needs a group here: add it to the groups table "
            "(e.g. with an 'unknown' group)"
        )

    return refuse_rows(rows, pl.col(GROUP).is_null() & within(k), [*keys, ITEM], message)


def undefined(frame: pl.LazyFrame, keys: list[str], what: str) -> pl.LazyFrame:
    """``frame`` with a non-finite ``VALUE`` made null, warning once naming those lists."""
    value = pl.col(VALUE)
    frame = frame.with_columns(pl.when(value.is_finite()).then(value).alias(VALUE))

    def message(rows: pl.DataFrame) -> str:
        shown = where(keys, rows.sort(keys, nulls_last=True))
        return f"{what} is undefined (null) for {rows.height} list(s): {shown}"

    return warn_rows(frame, value.is_null(), keys, message, UndefinedMetricWarning)


def lists(fair: FairInput) -> pl.LazyFrame:
    """One row per list present in ``fair.rows`` (the output's spine)."""
    return fair.rows.select(fair.keys).unique()


def attach(spine: pl.LazyFrame, values: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    """``spine`` with ``values``' columns, matched on ``keys`` (a null key is a key)."""
    return spine.join(values, on=keys, how="left", nulls_equal=True)


# --- the combinations ----------------------------------------------------------------------


def check_combo(combo: object) -> str:
    """``combo`` as one of :data:`COMBO_NAMES`, else InvalidOptionError."""
    if not isinstance(combo, str) or combo not in COMBO_NAMES:
        msg = (
            f"option combo= must be one of {list(COMBO_NAMES)} (FairRankTune's "
            f"{', '.join(COMBO_NAMES.values())}), got {combo!r}"
        )
        raise InvalidOptionError(msg)
    return combo


def combine(values: pl.LazyFrame, keys: list[str], combo: str) -> pl.LazyFrame:
    """Keys + ``VALUE``: the per-group values ``_V`` of each list combined by ``combo``.

    A non-finite group value makes the list's value NaN (made null by the caller), as it
    makes FairRankTune's numpy value NaN or infinite.
    """
    v = pl.col(_V)
    mean = pl.col(_MEAN)
    if combo in ("max_abs_diff", "mean_abs_dev", "variance"):
        # the mean first (order-free), then the deviations from it in a second pass
        means = values.group_by(keys).agg((exact_sum(v) / pl.len()).alias(_MEAN))
        values = values.join(means, on=keys, how="left", nulls_equal=True)
    combos: dict[str, pl.Expr] = {
        "min_max_ratio": v.min() / v.max(),
        "max_min_ratio": v.max() / v.min(),
        "max_min_diff": v.max() - v.min(),
        "max_abs_diff": (v - mean).abs().max(),
        "mean_abs_dev": exact_sum((v - mean).abs()) / pl.len(),
        "l_two": exact_sum(v * v).sqrt(),
        "variance": exact_sum((v - mean) ** 2) / pl.len(),
    }
    # min/max skip NaN in Polars; numpy's propagate it: a list with a non-finite value is NaN
    finite = v.is_finite().all()
    value = pl.when(finite).then(combos[combo]).otherwise(float("nan"))
    return values.group_by(keys).agg(value.alias(VALUE))


# --- the measures ----------------------------------------------------------------------------


def _per_group(
    fair: FairInput,
    k: int | None,
    measure: str,
    attention: pl.Expr,
    *,
    utility: bool,
    clicks: bool,
) -> pl.LazyFrame:
    """Keys, GROUP, ``_SIZE``, ``_EXPO`` (and ``_UTIL``) per group of each list's items.

    With ``clicks``, ``_EXPO`` sums ``label * attention`` (Singh & Joachims' click model).
    """
    keys = fair.keys
    rows = refuse_unknown(fair.rows, keys, measure)
    top = within(k)
    weight = pl.col(WEIGHT)
    label = pl.col(LABEL).fill_null(0.0)
    aggs = [
        exact_sum(weight).alias(_SIZE),
        exact_sum(weight * (label * attention if clicks else attention), top).alias(_EXPO),
    ]
    if utility:
        aggs.append(exact_sum(weight * label, top).alias(_UTIL))

        def message(bad: pl.DataFrame) -> str:
            first = bad.row(0, named=True)
            at = ", ".join(f"{key}={first[key]!r}" for key in keys)
            return (
                f"{measure}: item {first[ITEM]!r} of {at} has label {first[LABEL]!r}; "
                f"FairRankTune's {measure} reads the label as a utility in [0, 1] (0 not "
                "relevant, 1 relevant): rescale the labels to [0, 1]"
            )

        # only the rows FairRankTune reads (the top k) are checked, as it checks
        bad = top & (label.is_nan() | (label < 0) | (label > 1))
        rows = refuse_rows(rows, bad, [*keys, ITEM, LABEL], message)
    return rows.group_by([*keys, GROUP]).agg(aggs)


def _measure(
    fair: FairInput,
    k: object,
    combo: object,
    *,
    measure: str,
    attention: Callable[[pl.Expr], pl.Expr],
    utility: bool = False,
    clicks: bool = False,
) -> pl.LazyFrame:
    cut = check_k(k)
    chosen = check_combo(combo)
    keys = fair.keys
    rank = pl.col(RANK).cast(pl.Float64)
    groups = _per_group(fair, cut, measure, attention(rank), utility=utility, clicks=clicks)
    # n_g cancels in expu's ratio, but FairRankTune divides both by it: so does this
    mean = pl.col(_EXPO) / pl.col(_SIZE)
    if utility:
        mean = mean / (pl.col(_UTIL) / pl.col(_SIZE))
    values = combine(groups.with_columns(mean.alias(_V)), keys, chosen)
    name = f"FairRankTune {measure} ({COMBO_NAMES[chosen]})"
    return undefined(attach(lists(fair), values, keys), keys, name)


def exposure(rank: pl.Expr) -> pl.Expr:
    """Singh & Joachims' (and FairRankTune's) position exposure ``1/log2(rank + 1)``."""
    return 1.0 / (rank + 1.0).log(2)


def exp_values(fair: FairInput, *, k: int | None, combo: str) -> pl.LazyFrame:
    """FairRankTune's EXP per list: keys + ``VALUE`` (see the module doc).

    Each group's mean exposure ``1/log2(rank + 1)`` over its items in the list (those past
    ``k`` count in the group's size with exposure 0), combined over the list's groups by
    ``combo``. Null (``UndefinedMetricWarning``) where FairRankTune's value is infinite or NaN.

    Examples
    --------
    >>> rows = pl.LazyFrame(
    ...     {
    ...         "query": ["q"] * 2,
    ...         RANK: [1, 2],
    ...         ITEM: ["a", "b"],
    ...         GROUP: ["x", "y"],
    ...         WEIGHT: [1.0, 1.0],
    ...     }
    ... )
    >>> fair = FairInput(rows, ["query"], ["x", "y"], pl.LazyFrame(), pl.LazyFrame())
    >>> value = exp_values(fair, k=None, combo="max_min_diff").collect()[VALUE].item()
    >>> round(value, 12)  # 1 - 1/log2(3)
    0.369070246429
    """
    return _measure(fair, k, combo, measure="EXP", attention=exposure)


def expu_values(fair: FairInput, *, k: int | None, combo: str) -> pl.LazyFrame:
    """FairRankTune's EXPU per list: keys + ``VALUE`` (see the module doc).

    Each group's mean exposure divided by its mean utility (the label, in [0, 1]; unjudged
    counts 0) over its items in the list, combined by ``combo``. A group whose items in the
    top ``k`` have no utility makes the value undefined (FairRankTune's inf or NaN): null,
    with an ``UndefinedMetricWarning``. A label outside [0, 1] in the top ``k`` is a
    ``ColumnValueError``.
    """
    return _measure(fair, k, combo, measure="EXPU", attention=exposure, utility=True)


def expru_values(fair: FairInput, *, k: int | None, combo: str) -> pl.LazyFrame:
    """Singh & Joachims' disparate impact per list: keys + ``VALUE`` (see the module doc).

    Each group's mean click-through ``label/log2(rank + 1)`` (the paper's click model:
    relevance times position bias) divided by its mean utility (the label) over its items in
    the top ``k``, combined by ``combo``: FairRankTune's EXPRU given that click-through rate.
    Labels in [0, 1] (refused otherwise); undefined where a group has no utility, as ``expu``.
    """
    return _measure(fair, k, combo, measure="EXPRU", attention=exposure, utility=True, clicks=True)


def attention_awrf_values(fair: FairInput, *, k: int | None, p: float, combo: str) -> pl.LazyFrame:
    """FairRankTune's AWRF per list: keys + ``VALUE`` (see the module doc).

    Each group's mean attention ``100·(1−p)^(rank−1)·p`` over its items in the list,
    combined by ``combo``; ``p`` (0 < p < 1) is the first rank's share of attention.
    """
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p < 1:
        msg = f"option p= (the first rank's share of attention) must be in (0, 1), got {p!r}"
        raise InvalidOptionError(msg)
    share = float(p)

    def attention(rank: pl.Expr) -> pl.Expr:
        return 100.0 * pl.lit(1.0 - share).pow(rank - 1.0) * share

    return _measure(fair, k, combo, measure="AWRF", attention=attention)


__all__: list[str] = [
    "COMBO_NAMES",
    "attention_awrf_values",
    "exp_values",
    "expru_values",
    "expu_values",
]
