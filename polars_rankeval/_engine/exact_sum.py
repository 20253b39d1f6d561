"""Float sums that do not depend on the order of the rows.

A Float64 sum rounds after every addition, so its last bit depends on the order in which
the rows arrive. Polars' streaming engine adds a group's rows in whatever order its threads
hand them over (pola-rs/polars#25202, labelled "invalid" upstream), so the same log evaluated
twice, shuffled, or in passes gave per-query values one ulp apart. Here each term is scaled
by 2^80 and truncated to an Int128: integer sums are exact in any order, and the total is
rounded to a Float64 once. For terms of at least 2^-28 in magnitude that is the exact sum
rounded once (what ``math.fsum`` gives), which differs from any sequential Float64 sum, such
as trec_eval's in rank order, by at most the rounding that sum made itself.

The fixed point covers sums up to 2^47 in magnitude with a resolution of 2^-80 (8.3e-25).
Where a group falls outside it (a term past 2^47, NaN or infinity, or a sum so small that
2^-80 is more than 1e-9 of it), the plain Float64 sum is used, as before. Both sums are
aggregations of the same rows, so the check costs one more aggregation and no window.
"""

from __future__ import annotations

import polars as pl

_SCALE = 2.0**80
# A fixed sum within this fraction of the float sum is the float sum's exact counterpart;
# farther apart, a term fell outside the fixed point (it became null) and the float sum wins.
_AGREEMENT = 1e-9


def fixed_sum(values: pl.Expr) -> pl.Expr:
    """The Int128 sum of ``values`` scaled by 2^80 (an out-of-range term counts as null).

    Examples
    --------
    >>> frame = pl.DataFrame({"v": [0.1, 0.2, 0.3]})
    >>> frame.select(fixed_sum(pl.col("v"))).dtypes
    [Int128]
    """
    return (values.cast(pl.Float64) * _SCALE).cast(pl.Int128, strict=False).sum()


def settle(fixed: pl.Expr, floating: pl.Expr) -> pl.Expr:
    """The sum from its fixed-point and Float64 forms: the fixed one where it can be trusted.

    Examples
    --------
    >>> frame = pl.DataFrame({"v": [1e300, 1.0]})  # past the fixed point: the float sum
    >>> frame.select(settle(fixed_sum(pl.col("v")), pl.col("v").sum())).item()
    1e+300
    """
    exact = fixed.cast(pl.Float64) / _SCALE
    trusted = floating.is_finite() & ((exact - floating).abs() <= _AGREEMENT * floating.abs())
    return pl.when(trusted).then(exact).otherwise(floating)


def exact_sum(term: pl.Expr, where: pl.Expr | None = None) -> pl.Expr:
    """``term.filter(where).sum()`` as a Float64 whatever the order of the rows.

    Examples
    --------
    >>> frame = pl.DataFrame({"v": [0.1, 0.2, 0.3], "keep": [True, True, False]})
    >>> frame.select(exact_sum(pl.col("v"), pl.col("keep"))).item()
    0.30000000000000004
    >>> # the Float64 sum of these three depends on their order; this one does not
    >>> values = pl.DataFrame({"v": [1e-3, 1.0, -1.0 + 1e-16]})
    >>> shuffled = [values.sample(fraction=1.0, shuffle=True, seed=s) for s in range(6)]
    >>> len({frame["v"].sum() for frame in shuffled})
    3
    >>> {frame.select(exact_sum(pl.col("v"))).item() for frame in shuffled}
    {0.001000000000000111}
    >>> import math
    >>> math.fsum(values["v"])  # the exact sum, rounded once
    0.001000000000000111
    """
    values = term if where is None else pl.when(where).then(term)
    values = values.cast(pl.Float64)
    return settle(fixed_sum(values), values.sum())


def exact_mean(values: pl.Expr) -> pl.Expr:
    """``values.mean()`` (nulls left out) from an order-free sum.

    Examples
    --------
    >>> pl.DataFrame({"v": [0.5, None, 0.25]}).select(exact_mean(pl.col("v"))).item()
    0.375
    """
    count = values.count()
    return pl.when(count > 0).then(exact_sum(values) / count)


def exact_quotient(numerator: pl.Expr, divisor: float) -> pl.Expr:
    """``numerator / divisor`` rounded once, as C's ``x / k``, for a constant ``divisor``.

    Polars divides a column of two or more rows by a scalar as ``x * (1 / divisor)``, which
    rounds twice: ``3 / 10`` gave 0.30000000000000004 in a frame of many queries and 0.3 for a
    query alone, and the streaming engine chose per morsel. A divisor column of the same length
    takes the element-wise division: ``is_null()`` adds 0.0 (exact) to the constant.

    Examples
    --------
    >>> frame = pl.DataFrame({"hits": [3.0, 3.0, None]})
    >>> frame.select(pl.col("hits") / 10.0)["hits"].to_list()
    [0.30000000000000004, 0.30000000000000004, None]
    >>> frame.select(exact_quotient(pl.col("hits"), 10))["hits"].to_list()
    [0.3, 0.3, None]
    """
    values = numerator.cast(pl.Float64)
    return values / (values.is_null().cast(pl.Float64) + float(divisor))
