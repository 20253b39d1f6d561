"""TREC Fair Ranking 2022: Task 1 (AWRF, nDCG, their product) and Task 2 (expected exposure).

Each function reproduces the track's own code (``wptrec/metrics/awrf.py`` and ``eel.py`` of
fair-trec/trec2022-fair-public, MIT; a verbatim copy runs live in
``tests/fairness/reference``) over a :class:`~polars_rankeval.fairness._frame.FairInput`,
lazily, one row per list (the list keys, then the values).

Task 1, one ranking per list (``SAMPLE`` is not read):

* ``awrf = 1 - JS(p, q)^2``: ``JS`` is scipy's Jensen-Shannon *distance* (natural log; both
  vectors divided by their sums), ``p`` the attention-weighted mean group distribution of the
  list's items that have a group, ``q`` the list's target shares, over every group of
  ``FairInput.groups``. Attention at rank ``r`` is ``1/log2(max(r, 2))``, taken from the rank
  in the *whole* ranking: items without a group are dropped after the discount is computed
  (the track's known-alignment rule), so they neither count nor move the others up;
* ``ndcg``: binary utility (``RELEVANT``), the same discount over ranks ``1..cutoff``, the
  ideal list ``min(cutoff, NUM_REL)`` relevant items long;
* ``ndcg_awrf = ndcg * awrf`` (the track's "Score").

A ranking longer than ``cutoff`` (500) is refused, as the track raises. ``k`` (an extension;
None = the whole ranking, as the track) cuts each ranking to its first ``k`` rows first, and
the values are the track's for that shorter ranking with ``cutoff`` lowered to ``k``, so
nDCG@k's ideal list is ``min(k, cutoff, NUM_REL)`` long and a perfect top k scores 1.

Task 2, several sampled rankings per list (``SAMPLE``), :func:`expected_exposure_values`:
each row's attention ``1/log2(max(r, 2))`` (the discount of its own ranking's length, by rank),
with ``relevant_only`` (the 2022 rule; 2021 counted every row) only relevant rows count;
a group's exposure ``s`` is summed within a ranking and averaged over the list's distinct
samples; the target ``t = share * sum(1/log2(max(i, 2)) for i in 1..target_len)``;
``ee_l = ||s - t||^2``, ``ee_d = s·s``, ``ee_r = s·t`` over every group of the universe.

Where this differs from the track's bits: the track computes its discounts in float32 (numpy
``'f4'``), and numpy's float32 ``log2`` is not even the same on every CPU (its SIMD paths
round differently: on this machine 7,918 of the ranks 1..2,000,000 differ from the correctly
rounded value); its Task 1 nDCG is summed in float32 too, and so is Task 2's target scale.
Here every discount and sum is Float64 (sums order-free, :func:`exact_sum`). Measured against
the live code on generated data (1 to 3 dimensions, 6 seeds): AWRF within 2.3e-9, nDCG
within 1.2e-7, nDCG x AWRF within 1.1e-7, EE-L/D/R within 2.2e-7 relative (6e-6 absolute
on values up to ~50); with the track's ``discount`` given in Float64 (monkeypatched), every
value within 4e-16 (Task 1) and 5e-16 relative (Task 2): the formula is the same.

The track's code fails where these functions answer (each documented above): a topic without
relevant pages (its qrels lookup raises; its nDCG is 0/0) and a ranking without a known page
(0/0: NaN with one dimension, ZeroDivisionError in ``sum_outer`` with several) give null
here; with three or more dimensions whose first holds half the log-levels (e.g. 10, 2, 2
levels) its ``agg_alignments`` asserts (it splits off an empty list); Task 2 on a topic with
exactly one relevant page raises (``qrels.loc`` gives a Series).
"""

from __future__ import annotations

import polars as pl

from polars_rankeval._engine.exact_sum import exact_sum
from polars_rankeval._engine.tables import refuse_rows, warn_rows
from polars_rankeval.errors import InvalidOptionError, UndefinedMetricWarning
from polars_rankeval.fairness._frame import (
    GROUP,
    ITEM,
    NUM_REL,
    PREFIX,
    RANK,
    RELEVANT,
    SAMPLE,
    SHARE,
    VALUE,
    WEIGHT,
    FairInput,
    N,
)

# working columns (this module's own, under the shared prefix)
_DISC = PREFIX + "trec_disc"
_EXPO = PREFIX + "trec_expo"
_LEN = PREFIX + "trec_len"
_IDEAL = PREFIX + "trec_ideal"
_DCG = PREFIX + "trec_dcg"
_P = PREFIX + "trec_p"
_Q = PREFIX + "trec_q"
_TOTAL = PREFIX + "trec_total"
_SHARES = PREFIX + "trec_shares"
_JS = PREFIX + "trec_js"
_KNOWN = PREFIX + "trec_known"
_HAS_REL = PREFIX + "trec_has_rel"
_SAMPLES = PREFIX + "trec_samples"
_T = PREFIX + "trec_t"
_M = PREFIX + "trec_m"

#: Task 1's maximum ranking length (the track's ``AWRFMetric(target_len=500)``).
CUTOFF = 500
#: Task 2's ranking length that scales the target exposure (``EELMetric(target_len=20)``).
TARGET_LEN = 20
# exact_sum's fixed point: 2^80 (see _engine/exact_sum.py); the ideal DCG's prefix sums use it
# so a perfect ranking's DCG and its ideal are the same bits (nDCG exactly 1).
_SCALE = 2.0**80


def discount(rank: pl.Expr) -> pl.Expr:
    """The track's attention at ``rank``: ``1/log2(max(rank, 2))`` (Float64; the track's f4).

    Examples
    --------
    >>> pl.select(discount(pl.lit(4))).item()
    0.5
    """
    # the same expression as ndcg's discount="jarvelin", so the two DCGs are the same bits
    return 1.0 / pl.max_horizontal(rank.cast(pl.Float64), pl.lit(2.0)).log(2)


def _positive(value: object, option: str) -> int:
    """A positive int option, else InvalidOptionError."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        msg = f"option {option}= must be a positive int, got {value!r}"
        raise InvalidOptionError(msg)
    return value


def _join(left: pl.LazyFrame, right: pl.LazyFrame, on: list[str]) -> pl.LazyFrame:
    """``left`` with ``right``'s columns, matched on ``on`` (a null key is a key like any other)."""
    return left.join(right, on=on, how="left", nulls_equal=True)


def _where(keys: list[str], rows: pl.DataFrame, limit: int = 3) -> str:
    """The first few lists of ``rows``, e.g. ``query='q1', query='q7'``."""
    shown = [
        ", ".join(f"{key}={row[key]!r}" for key in keys)
        for row in rows.head(limit).iter_rows(named=True)
    ]
    more = f" and {rows.height - limit} more" if rows.height > limit else ""
    return "; ".join(shown) + more


def _undefined(frame: pl.LazyFrame, keys: list[str], flagged: pl.Expr, what: str) -> pl.LazyFrame:
    """``frame``, warning (UndefinedMetricWarning, once) naming the lists where ``flagged``."""

    def message(rows: pl.DataFrame) -> str:
        shown = _where(keys, rows.sort(keys, nulls_last=True))
        return f"{what} is undefined (null) for {rows.height} list(s): {shown}"

    return warn_rows(frame, flagged, keys, message, UndefinedMetricWarning)


def _cut(fair: FairInput, k: int | None, cutoff: int) -> tuple[pl.LazyFrame, int]:
    """The rows within the first ``k`` ranks, refusing rankings longer than the cutoff."""
    if k is not None:
        k = _positive(k, "k")
    limit = _positive(cutoff, "cutoff")
    rows = fair.rows if k is None else fair.rows.filter(pl.col(RANK) <= k)
    # the track's qr_ndcg raises ValueError('too many documents in query run'); here the
    # query and its length are named. RANK is 1..n, so a rank past the limit is that case.
    keys = fair.keys

    def message(bad: pl.DataFrame) -> str:
        length = pl.col(N) if k is None else pl.min_horizontal(pl.col(N), k)
        longest = bad.group_by(keys, maintain_order=True).agg(length.max())
        first = longest.row(0, named=True)
        where = ", ".join(f"{key}={first[key]!r}" for key in keys)
        more = f" ({longest.height} rankings in all)" if longest.height > 1 else ""
        return (
            f"TREC Fair Task 1 takes rankings of at most cutoff={limit} items (the track "
            f"refuses longer runs); the ranking of {where} has {first[N]} items{more}: cut "
            f"the run to {limit} rows (k={limit}) or raise cutoff="
        )

    if k is not None and k <= limit:
        return rows, k
    # the cut is in the condition itself: Polars may merge the two filters into one, whose
    # check then sees the rows past k too
    bad = pl.col(RANK) > limit if k is None else (pl.col(RANK) > limit) & (pl.col(RANK) <= k)
    rows = refuse_rows(rows, bad, [*keys, N], message)
    return rows, limit


def _lists(fair: FairInput) -> pl.LazyFrame:
    """One row per list present in ``fair.rows`` (the output's spine)."""
    return fair.rows.select(fair.keys).unique()


def _ndcg(rows: pl.LazyFrame, keys: list[str], depth: int) -> pl.LazyFrame:
    """Keys + ``VALUE``: the binary-utility nDCG over ``depth`` ranks (null: no relevant)."""
    # one row per ranked row: an item in several groups has several rows in FairInput.rows
    ranked = rows.group_by([*keys, RANK]).agg(pl.col(RELEVANT).first(), pl.col(NUM_REL).first())
    dcg = ranked.group_by(keys).agg(
        exact_sum(discount(pl.col(RANK)), pl.col(RELEVANT)).alias(_DCG),
        pl.col(NUM_REL).first(),
    )
    # ideal DCG for m relevant items, m = 0..depth: exact prefix sums of the discounts (the
    # same Int128 fixed point as exact_sum, so a perfect ranking is exactly 1)
    ideal = pl.LazyFrame({_LEN: pl.int_range(0, depth + 1, eager=True)}).with_columns(
        (
            (pl.when(pl.col(_LEN) > 0).then(discount(pl.col(_LEN))).otherwise(0.0) * _SCALE)
            .cast(pl.Int128)
            .cum_sum()
            .cast(pl.Float64)
            / _SCALE
        ).alias(_IDEAL)
    )
    value = pl.when(pl.col(_IDEAL) > 0).then(pl.col(_DCG) / pl.col(_IDEAL))
    return (
        dcg.with_columns(pl.min_horizontal(pl.col(NUM_REL), depth).alias(_LEN))
        .join(ideal, on=_LEN, how="left")
        .select(*keys, value.alias(VALUE))
    )


def ndcg_values(fair: FairInput, *, k: int | None = None, cutoff: int = CUTOFF) -> pl.LazyFrame:
    """TREC Fair 2022 Task 1 nDCG per list: keys + ``VALUE``.

    Binary utility (``RELEVANT``), discount ``1/log2(max(r, 2))``, ideal list
    ``min(cutoff, NUM_REL)`` long (``min(k, cutoff, NUM_REL)`` with ``k``). It equals
    ``ndcg@500(gain=binary, discount=jarvelin)`` of :func:`~polars_rankeval.evaluate`;
    the default ``ndcg@500`` differs (its discount is ``1/log2(r + 1)``).

    A list with no relevant item (``NUM_REL`` 0) is undefined, 0/0 (the track's NaN, on
    which its own assertion fails): null, with an ``UndefinedMetricWarning`` naming it.
    A ranking longer than ``cutoff`` (after ``k``) is a ``ColumnValueError``.

    Examples
    --------
    >>> rows = pl.LazyFrame(
    ...     {"query": ["q", "q"], RANK: [1, 2], N: [2, 2], RELEVANT: [False, True], NUM_REL: [1, 1]}
    ... )
    >>> fair = FairInput(rows, ["query"], [], pl.LazyFrame(), pl.LazyFrame())
    >>> ndcg_values(fair).collect()[VALUE].item()  # the relevant item at rank 2: 1/log2(2)
    1.0
    """
    rows, depth = _cut(fair, k, cutoff)
    values = _join(_lists(fair), _ndcg(rows, fair.keys, depth), fair.keys)
    return _undefined(
        values, fair.keys, pl.col(VALUE).is_null(), "TREC Fair nDCG (no relevant item)"
    )


def _awrf(rows: pl.LazyFrame, fair: FairInput) -> pl.LazyFrame:
    """Keys + ``VALUE``: 1 - JS^2 between the list's exposure and its target (null: none)."""
    keys = fair.keys
    # the discount comes from the rank in the whole ranking; only then are the items without
    # a group dropped (the track's is_known mask applied to discount(n))
    known = rows.filter(pl.col(GROUP).is_not_null())
    exposure = known.group_by([*keys, GROUP]).agg(
        exact_sum(discount(pl.col(RANK)) * pl.col(WEIGHT)).alias(_EXPO)
    )
    # every group of the universe, for every list: the target frame holds them all
    cells = _lists(fair).join(
        fair.target.select(*keys, GROUP, SHARE), on=keys, how="inner", nulls_equal=True
    )
    cells = cells.join(exposure, on=[*keys, GROUP], how="left", nulls_equal=True).with_columns(
        pl.col(_EXPO).fill_null(0.0)
    )
    totals = cells.group_by(keys).agg(
        exact_sum(pl.col(_EXPO)).alias(_TOTAL), exact_sum(pl.col(SHARE)).alias(_SHARES)
    )
    # scipy.spatial.distance.jensenshannon: p and q divided by their sums, m = (p + q) / 2,
    # rel_entr(x, m) = x ln(x / m) (0 where x = 0), js = sum(left) + sum(right),
    # distance sqrt(js / 2); the track returns 1 - distance^2
    p = pl.col(_P)
    q = pl.col(_Q)
    m = pl.col(_M)
    terms = (
        _join(cells, totals, keys)
        .with_columns(
            (pl.col(_EXPO) / pl.col(_TOTAL)).alias(_P), (pl.col(SHARE) / pl.col(_SHARES)).alias(_Q)
        )
        .with_columns(((p + q) / 2.0).alias(_M))
    )
    left = pl.when(p > 0).then(p * (p / m).log()).otherwise(0.0)
    right = pl.when(q > 0).then(q * (q / m).log()).otherwise(0.0)
    js = terms.group_by(keys).agg(
        (exact_sum(left) + exact_sum(right)).alias(_JS), pl.col(_TOTAL).first()
    )
    # no item with a group: the track's 0/0 mean alignment is NaN; null here (said)
    distance = (pl.col(_JS) / 2.0).clip(lower_bound=0.0).sqrt()
    value = pl.when(pl.col(_TOTAL) > 0).then(1.0 - distance * distance)
    return js.select(*keys, value.alias(VALUE))


def awrf_values(fair: FairInput, *, k: int | None = None, cutoff: int = CUTOFF) -> pl.LazyFrame:
    """TREC Fair 2022 Task 1 AWRF per list: keys + ``VALUE`` (1 = the target's distribution).

    ``1 - JS^2`` (scipy's Jensen-Shannon distance, natural log, both vectors normalised)
    between the attention-weighted mean group distribution of the list's items with a group
    and the list's target shares, over every group of ``fair.groups``. Items without a group
    are dropped after the discount is taken from their rank in the whole ranking.

    A list none of whose items has a group is undefined (the track's NaN): null, with an
    ``UndefinedMetricWarning`` naming it. A ranking longer than ``cutoff`` (after ``k``) is a
    ``ColumnValueError``, as the track refuses it.
    """
    rows, _ = _cut(fair, k, cutoff)
    values = _join(_lists(fair), _awrf(rows, fair), fair.keys)
    return _undefined(
        values, fair.keys, pl.col(VALUE).is_null(), "TREC Fair AWRF (no item with a group)"
    )


def ndcg_awrf_values(
    fair: FairInput, *, k: int | None = None, cutoff: int = CUTOFF
) -> pl.LazyFrame:
    """The track's Task 1 "Score", nDCG × AWRF per list: keys + ``VALUE``.

    Null (with an ``UndefinedMetricWarning``) where either factor is undefined.
    """
    rows, depth = _cut(fair, k, cutoff)
    keys = fair.keys
    ndcg = _ndcg(rows, keys, depth).rename({VALUE: _DCG})
    awrf = _awrf(rows, fair).rename({VALUE: _P})
    values = _join(_join(_lists(fair), ndcg, keys), awrf, keys).select(
        *keys, (pl.col(_DCG) * pl.col(_P)).alias(VALUE)
    )
    return _undefined(
        values,
        keys,
        pl.col(VALUE).is_null(),
        "TREC Fair nDCG × AWRF (no relevant item, or no item with a group)",
    )


def expected_exposure_values(
    fair: FairInput, *, target_len: int = TARGET_LEN, relevant_only: bool = True
) -> pl.LazyFrame:
    """TREC Fair 2022 Task 2 per list over its sampled rankings: keys + ``ee_l, ee_d, ee_r``.

    A row's attention is ``1/log2(max(rank, 2))`` in its own ranking; with ``relevant_only``
    (the 2022 rule) only relevant rows count, else every row (2021). A group's exposure
    ``s`` is summed within each ranking and averaged over the list's distinct samples; the
    target ``t = SHARE * sum(1/log2(max(i, 2)) for i in 1..target_len)``. Over every group
    of ``fair.groups``: ``ee_l = ||s - t||^2`` (lower is better), ``ee_d = s·s`` (lower is
    better), ``ee_r = s·t`` (higher is better).

    A list with no relevant row in any sample has zero exposure (the track's rule, also with
    ``relevant_only=False``). A counted row whose item has no group is a
    ``ColumnValueError`` naming it (the track's ``.loc`` lookup fails on it); with
    ``relevant_only`` a non-relevant item without a group is not counted, so not refused.
    """
    length = _positive(target_len, "target_len")
    if not isinstance(relevant_only, bool):
        msg = f"option relevant_only= must be True or False, got {relevant_only!r}"
        raise InvalidOptionError(msg)
    keys = fair.keys
    per_list = fair.rows.group_by(keys).agg(
        pl.col(RELEVANT).any().alias(_HAS_REL), pl.col(SAMPLE).n_unique().alias(_SAMPLES)
    )
    counted = _join(fair.rows, per_list, keys).filter(pl.col(_HAS_REL))
    if relevant_only:
        counted = counted.filter(pl.col(RELEVANT))

    def message(bad: pl.DataFrame) -> str:
        first = bad.row(0, named=True)
        where = ", ".join(f"{key}={first[key]!r}" for key in keys)
        items = bad[ITEM].unique(maintain_order=True)
        more = f" ({items.len()} items in all)" if items.len() > 1 else ""
        counts = "relevant rows count" if relevant_only else "every row counts"
        return (
            f"TREC Fair expected exposure: item {first[ITEM]!r} of {where} has no group in "
            f"groups={more}, and its exposure counts ({counts}); the track's lookup fails on "
            "such items: add them to the groups table (e.g. with an 'unknown' group)"
        )

    # the counting conditions are repeated in the check: Polars may merge the filters above
    # with the check's own, which then sees every row
    bad = pl.col(GROUP).is_null() & pl.col(_HAS_REL)
    if relevant_only:
        bad = bad & pl.col(RELEVANT)
    counted = refuse_rows(counted, bad, [*keys, ITEM], message)
    exposure = counted.group_by([*keys, GROUP]).agg(
        exact_sum(discount(pl.col(RANK)) * pl.col(WEIGHT)).alias(_EXPO),
        pl.col(_SAMPLES).first(),
    )
    scale = exact_sum_of_discounts(length)
    cells = _lists(fair).join(
        fair.target.select(*keys, GROUP, SHARE), on=keys, how="inner", nulls_equal=True
    )
    s = (pl.col(_EXPO) / pl.col(_SAMPLES)).fill_null(0.0)
    t = pl.col(SHARE) * scale
    cells = cells.join(exposure, on=[*keys, GROUP], how="left", nulls_equal=True).with_columns(
        s.alias(_P), t.alias(_T)
    )
    values = cells.group_by(keys).agg(
        exact_sum((pl.col(_P) - pl.col(_T)) ** 2).alias("ee_l"),
        exact_sum(pl.col(_P) * pl.col(_P)).alias("ee_d"),
        exact_sum(pl.col(_P) * pl.col(_T)).alias("ee_r"),
    )
    return _join(_lists(fair), values, keys)


def exact_sum_of_discounts(length: int) -> float:
    """``sum(1/log2(max(i, 2)) for i in 1..length)``, the discounts as Polars computes them.

    Examples
    --------
    >>> exact_sum_of_discounts(2)
    2.0
    """
    frame = pl.select(discount(pl.int_range(1, length + 1)).alias(_DISC))
    return float(frame.select(exact_sum(pl.col(_DISC))).item())


__all__: list[str] = [
    "CUTOFF",
    "TARGET_LEN",
    "awrf_values",
    "discount",
    "expected_exposure_values",
    "ndcg_awrf_values",
    "ndcg_values",
]
