"""Geyik et al.'s NDKL and skew@k (KDD 2019, LinkedIn talent search) over a FairInput.

Each function returns the list keys and ``VALUE``, one row per list of
:class:`~polars_rankeval.fairness._frame.FairInput`, lazily. A list's top ``k`` is its first
``m = min(k, n)`` rows (the whole list when ``k`` is None); an item's membership weight counts
in each of its groups, so a group's share of the top ``i`` is the sum of its weights there
over ``i``.

* ``ndkl``: ``(1/Z) Σ_{i=1..m} Z_i KL(P_i ‖ D)``, ``Z_i = 1/log2(i + 1)``, ``Z = Σ Z_i``
  (Geyik et al. Eq. 4), ``P_i`` the group distribution of the top ``i``, ``KL(P ‖ D) =
  Σ_g P_g ln(P_g / D_g)``. ``reference="target"``: ``D`` is the list's target shares
  (Geyik's desired distribution) over every group of ``FairInput.groups``;
  ``reference="list"``: ``D`` is the group distribution of the *whole* list (rows past ``k``
  included) over the groups of its items, FairRankTune's ``NDKL`` (which takes the ranking's
  own distribution as ``D``). ``epsilon`` is added to both distributions before the KL, as
  FairRankTune does with ``1e-7``: ``reference="list", epsilon=1e-7`` and no ``k`` is
  FairRankTune 0.0.7's value. 0 is parity, lower is fairer.
* ``skew``: ``ln((p + ε) / (q + ε))``, ``p`` the group's share of the top ``k`` and ``q`` its
  target share (``ε = epsilon``, 0 by default: Geyik's formula); 0 is parity.
* ``min_skew`` / ``max_skew``: the lowest / highest skew over the groups of the universe
  (Geyik's MinSkew@k, MaxSkew@k); a group with neither items in the top ``k`` nor target share
  (``p = q = 0``, skew 0/0) is left out.

Zero entries: ``0 ln 0 = 0``. Where the formula is infinite (a group in the top ranks whose
target share is 0: KL and skew ``+∞``; a target group absent from the top ``k``: skew
``−∞``) the value is null with an ``UndefinedMetricWarning`` naming the lists (compare and
bootstrap refuse infinite values); ``epsilon > 0`` gives a finite value instead. Credo AI
Lens smooths the same way (``EPSILON = 1e-12`` added to both shares in its skew and KL) and
leaves groups absent from the top ``k`` out of its min/max skew; here they count (their skew
is ``ln(ε / (q + ε))``, or undefined without ``epsilon``), as Geyik's MinSkew is over every
attribute value.

An item in the rows read (the top ``k``, or the whole list for ``reference="list"``) without
a group is refused (``ColumnValueError``). ``SAMPLE`` is not read (one ranking per list).
Cost: NDKL builds one row per (rank within ``m``, group of the reference), ``m·G`` per list.
"""

from __future__ import annotations

import polars as pl

from polars_rankeval._engine.exact_sum import exact_sum
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.fairness._frame import (
    GROUP,
    PREFIX,
    RANK,
    SHARE,
    VALUE,
    WEIGHT,
    FairInput,
    N,
)
from polars_rankeval.fairness._toolkit import (
    attach,
    check_k,
    lists,
    refuse_unknown,
    undefined,
    within,
)

# working columns (this module's own, under the shared prefix)
_W = PREFIX + "geyik_w"
_C = PREFIX + "geyik_c"
_P = PREFIX + "geyik_p"
_Q = PREFIX + "geyik_q"
_M = PREFIX + "geyik_m"
_KL = PREFIX + "geyik_kl"
_Z = PREFIX + "geyik_z"
_SKEW = PREFIX + "geyik_skew"

_HINT = "; epsilon= > 0 gives a finite value"


def _epsilon(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        msg = f"option epsilon= must be a number >= 0 (added to both shares), got {value!r}"
        raise InvalidOptionError(msg)
    return float(value)


def _required_k(k: object, measure: str) -> int:
    cut = check_k(k)
    if cut is None:
        msg = f"{measure} needs a cutoff k= (a positive int), got None"
        raise InvalidOptionError(msg)
    return cut


def _kl_term(p: pl.Expr, q: pl.Expr) -> pl.Expr:
    """``p ln(p / q)``: 0 where ``p`` is 0, +inf where only ``q`` is 0."""
    return pl.when(p == 0).then(0.0).when(q == 0).then(float("inf")).otherwise(p * (p / q).log())


def _reference(fair: FairInput, reference: str, rows: pl.LazyFrame) -> pl.LazyFrame:
    """Keys, GROUP, ``_Q``: the distribution the top ``i`` are compared with, per list.

    ``rows`` are the list's rows (all of them, checked) for ``reference="list"``.
    """
    keys = fair.keys
    if reference == "target":
        return lists(fair).join(
            fair.target.select(*keys, GROUP, pl.col(SHARE).alias(_Q)),
            on=keys,
            how="inner",
            nulls_equal=True,
        )
    # FairRankTune: count/len over the ranking's items; with weights, the weight sums over n
    return rows.group_by([*keys, GROUP]).agg(
        (exact_sum(pl.col(WEIGHT)) / pl.col(N).first()).alias(_Q)
    )


def ndkl_values(
    fair: FairInput, *, k: int | None, reference: str = "target", epsilon: float = 0.0
) -> pl.LazyFrame:
    """Geyik et al.'s NDKL per list: keys + ``VALUE`` (see the module doc; lower is fairer).

    ``reference="target"`` compares each top ``i`` (``i = 1..min(k, n)``) with the list's
    target shares; ``"list"`` with the whole list's group distribution (FairRankTune's NDKL
    with ``epsilon=1e-7``). Null with an ``UndefinedMetricWarning`` where the value is
    infinite (a group of the top ranks has reference share 0 and ``epsilon`` is 0).

    Examples
    --------
    >>> rows = pl.LazyFrame(
    ...     {
    ...         "query": ["q"] * 2,
    ...         RANK: [1, 2],
    ...         N: [2, 2],
    ...         GROUP: ["x", "y"],
    ...         WEIGHT: [1.0, 1.0],
    ...         PREFIX + "item": ["a", "b"],
    ...     }
    ... )
    >>> fair = FairInput(rows, ["query"], ["x", "y"], pl.LazyFrame(), pl.LazyFrame())
    >>> value = ndkl_values(fair, k=None, reference="list").collect()[VALUE].item()
    >>> round(value, 12)  # KL at i=1 is ln 2, at i=2 is 0: ln 2 / (1 + 1/log2(3))
    0.425001247934
    """
    cut = check_k(k)
    if reference not in ("target", "list"):
        msg = f"option reference= must be 'target' or 'list', got {reference!r}"
        raise InvalidOptionError(msg)
    eps = _epsilon(epsilon)
    keys = fair.keys
    if reference == "list":
        rows = refuse_unknown(fair.rows, keys, "NDKL")
    else:
        rows = refuse_unknown(fair.rows.filter(within(cut)), keys, "NDKL", cut)
    top = rows.filter(within(cut))
    ranks = top.select(*keys, RANK).unique()
    # one row per (rank i, group of the reference): the group's weight at i, then its
    # cumulative weight over ranks 1..i (in rank order, so the same bits every time)
    weights = top.group_by([*keys, RANK, GROUP]).agg(pl.col(WEIGHT).sum().alias(_W))
    grid = (
        ranks.join(_reference(fair, reference, rows), on=keys, how="inner", nulls_equal=True)
        .join(weights, on=[*keys, RANK, GROUP], how="left", nulls_equal=True)
        .with_columns(pl.col(_W).fill_null(0.0))
        .with_columns(pl.col(_W).cum_sum().over([*keys, GROUP], order_by=RANK).alias(_C))
    )
    p = pl.col(_C) / pl.col(RANK).cast(pl.Float64) + eps
    q = pl.col(_Q) + eps
    kl = grid.group_by([*keys, RANK]).agg(exact_sum(_kl_term(p, q)).alias(_KL))
    z = 1.0 / (pl.col(RANK).cast(pl.Float64) + 1.0).log(2)
    values = (
        kl.with_columns(z.alias(_Z))
        .group_by(keys)
        .agg((exact_sum(pl.col(_Z) * pl.col(_KL)) / exact_sum(pl.col(_Z))).alias(VALUE))
    )
    what = f"NDKL (reference={reference}: a group of the top ranks has reference share 0{_HINT})"
    return undefined(attach(lists(fair), values, keys), keys, what)


def _shares(fair: FairInput, k: int, measure: str) -> pl.LazyFrame:
    """Keys, GROUP, ``_P`` (share of the top k), ``_Q`` (target) for every universe group."""
    keys = fair.keys
    top = refuse_unknown(fair.rows.filter(within(k)), keys, measure, k)
    p = top.group_by([*keys, GROUP]).agg(
        (exact_sum(pl.col(WEIGHT)) / pl.min_horizontal(pl.col(N).first(), k)).alias(_P)
    )
    return (
        _reference(fair, "target", top)
        .join(p, on=[*keys, GROUP], how="left", nulls_equal=True)
        .with_columns(pl.col(_P).fill_null(0.0))
    )


def _skew(eps: float) -> pl.Expr:
    """``ln((p + ε) / (q + ε))`` in the extended reals (NaN for 0/0)."""
    p = pl.col(_P) + eps
    q = pl.col(_Q) + eps
    return (
        pl.when((p == 0) & (q == 0))
        .then(float("nan"))
        .when(q == 0)
        .then(float("inf"))
        .when(p == 0)
        .then(float("-inf"))
        .otherwise((p / q).log())
    )


def skew_values(fair: FairInput, *, k: int, group: str, epsilon: float = 0.0) -> pl.LazyFrame:
    """Geyik et al.'s skew@k of ``group`` per list: ``ln((p + ε)/(q + ε))`` (0 is parity).

    ``p`` is the group's share of the top ``min(k, n)`` rows (weights counted), ``q`` its
    target share. Null with an ``UndefinedMetricWarning`` where it is not finite (the group
    absent from the top ``k`` or without target share, with ``epsilon`` 0).
    """
    cut = _required_k(k, "skew")
    eps = _epsilon(epsilon)
    if group not in fair.groups:
        known = ", ".join(repr(g) for g in fair.groups[:10])
        msg = f"option group= of skew names {group!r}, which is not a group of groups=: {known}"
        raise InvalidOptionError(msg)
    keys = fair.keys
    # picked inside the aggregation: a filter on GROUP would be pushed below the check of
    # the items without a group, which would then never see them
    values = (
        _shares(fair, cut, "skew")
        .group_by(keys)
        .agg(_skew(eps).filter(pl.col(GROUP) == group).first().alias(VALUE))
    )
    what = f"skew@{cut} of {group!r} (absent from the top {cut} or from the target{_HINT})"
    return undefined(attach(lists(fair), values, keys), keys, what)


def _extreme(fair: FairInput, k: int, epsilon: float, lowest: bool) -> pl.LazyFrame:
    measure = "min_skew" if lowest else "max_skew"
    cut = _required_k(k, measure)
    eps = _epsilon(epsilon)
    keys = fair.keys
    skews = _shares(fair, cut, measure).with_columns(_skew(eps).alias(_SKEW))
    # a group with neither top-k items nor target share has no skew (0/0): left out
    counted = skews.filter(~pl.col(_SKEW).is_nan())
    pick = pl.col(_SKEW).min() if lowest else pl.col(_SKEW).max()
    values = counted.group_by(keys).agg(pick.alias(VALUE))
    what = (
        f"{measure}@{cut} (a group "
        + ("of the target absent from the top k" if lowest else "in the top k without target share")
        + f"{_HINT})"
    )
    return undefined(attach(lists(fair), values, keys), keys, what)


def min_skew_values(fair: FairInput, *, k: int, epsilon: float = 0.0) -> pl.LazyFrame:
    """Geyik et al.'s MinSkew@k per list: the lowest skew@k over the groups (higher is fairer).

    Null with an ``UndefinedMetricWarning`` where a target group is absent from the top ``k``
    (skew ``−∞``) and ``epsilon`` is 0.
    """
    return _extreme(fair, k, epsilon, lowest=True)


def max_skew_values(fair: FairInput, *, k: int, epsilon: float = 0.0) -> pl.LazyFrame:
    """Geyik et al.'s MaxSkew@k per list: the highest skew@k over the groups (lower is fairer).

    Null with an ``UndefinedMetricWarning`` where a group in the top ``k`` has target share 0
    (skew ``+∞``) and ``epsilon`` is 0.
    """
    return _extreme(fair, k, epsilon, lowest=False)


__all__: list[str] = ["max_skew_values", "min_skew_values", "ndkl_values", "skew_values"]
