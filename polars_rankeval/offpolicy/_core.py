"""The one summary every off-policy estimator goes through: parts -> value, se, interval.

Every estimator of every family (bandit, slate) is written as per-row *parts* that this
module sums; the families only build the parts and validate their logs. One shape covers
them all::

    value_e = sum_rows(m_e) / N + sum_t(A_et / B_et) * (N_t / N)

* ``N`` is the number of units (a logged decision, a slate) per key (target policy and
  segment), ``N_t`` the number of units with a row in term ``t`` (a slate position, for the
  per-position self-normalised estimators; one term otherwise, ``N_t = N``);
* ``m_e`` is the linear ("mean") part of estimator ``e`` (IPS: ``w * r``);
* ``A_et = sum(a_e)`` and ``B_et = sum(b_e)`` over the rows of term ``t`` form its ratio part
  (SNIPS: ``a = w * r``, ``b = w``).

Sums merge across row partitions, so the same parts give the same value on one frame, in
passes, lazily from Parquet and on Spark. The standard error is the delta method's: each
unit's influence ``psi_i = M_i + sum_t (N_t / B_t) * (a_ti - R_t * b_ti) + sum_t R_t * N_t/N``
(``R_t = A_t / B_t``) has mean exactly ``value``, and ``se = sd(psi) / sqrt(N)``; for a
linear estimator that is the plain standard error of the mean. The per-unit ``psi`` is the
per-query table of an estimator (``per_query=True``), which pairs two target policies on the
same logged units for :func:`~polars_rankeval.compare_per_query`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np
import polars as pl

from polars_rankeval._engine.evaluate import Engine
from polars_rankeval._engine.exact_sum import exact_sum
from polars_rankeval._engine.warn import Site, user_site, warn_at
from polars_rankeval.errors import InvalidOptionError, WeightWarning

#: The importance weight pi_e / pi_b (unclipped), non-null on one row per unit: the
#: diagnostics (effective sample size, largest and mean weight) read it.
WEIGHT = "__rke_weight"
_N = "__rke_n"
_NT = "__rke_n_term"
_PSI = "__rke_psi"
_ROW = "__rke_row"

#: The columns of the long result, in order (the by columns follow ``policy``).
RESULT_COLUMNS = (
    "n_queries",
    "value",
    "se",
    "ci_low",
    "ci_high",
    "ess",
    "max_weight",
    "mean_weight",
)

Interval = Literal["normal", "bootstrap"]

# A weight diagnostic warns when fewer than this share of the rows carry the estimate ...
MIN_ESS_SHARE = 0.01
# ... or fewer than this many rows do, whatever the log's size.
MIN_ESS = 10.0
# The mean weight is 1 in expectation when the propensities are right and the logging policy
# covers the target; a z-score beyond this is not sampling noise (about 6e-5 two-sided).
MEAN_WEIGHT_Z = 4.0


@dataclass(frozen=True)
class Parts:
    """Per-row parts of one or more estimators, for :func:`estimate`.

    Parameters
    ----------
    frame
        The parts: the ``keys`` columns, the ``unit`` and ``term`` columns when given, and per
        estimator ``e`` the float columns ``f"{e}__m"``, ``f"{e}__a"`` and ``f"{e}__b"``
        (each optional; an absent one is 0), plus :data:`WEIGHT` for the diagnostics.
    keys
        The columns one estimate is made per: ``"policy"`` first, then the segments.
    estimators
        The estimators' names, in the order of the output.
    unit
        The unit id column (a slate, an impression; what ``per_query`` gives a row per);
        None: every row is its own unit.
    term
        The term column (the position of the per-position self-normalised estimators); None:
        one term.
    site
        The user's line, where warnings point (:func:`~polars_rankeval._engine.warn.user_site`;
        None: found when :func:`estimate` runs).
    """

    frame: pl.LazyFrame
    keys: list[str]
    estimators: list[str]
    unit: str | None = None
    term: str | None = None
    site: Site | None = None


Columns = tuple[str | None, str | None, str | None, str | None]


def _columns(parts: Parts) -> dict[str, Columns]:
    """Per estimator, its (m, a, b, l) column names, None where the frame lacks one."""
    names = set(parts.frame.collect_schema().names())
    out: dict[str, Columns] = {}
    for name in parts.estimators:
        m, a, b, length = (f"{name}__{part}" for part in "mabl")
        out[name] = (
            m if m in names else None,
            a if a in names else None,
            b if b in names else None,
            length if length in names else None,
        )
        if (out[name][1] is None) != (out[name][2] is None):  # pragma: no cover - family bug
            msg = f"estimator {name!r} has only one of its ratio columns"
            raise AssertionError(msg)
        if out[name][3] is not None and out[name][1] is None:  # pragma: no cover - family bug
            msg = f"estimator {name!r} scales a ratio part it does not have"
            raise AssertionError(msg)
    return out


def _zero() -> pl.Expr:
    return pl.lit(0.0, dtype=pl.Float64)


def _sum(column: str | None) -> pl.Expr:
    # Order-free (exact_sum): the same bits whatever the rows' order, engine or partitions.
    return exact_sum(pl.col(column)) if column is not None else _zero()


_KIND = "__rke_kind"
_SW, _SW2, _WMAX, _NW = "__rke_sw", "__rke_sw2", "__rke_wmax", "__rke_nw"


def partial_sums(parts: Parts) -> pl.LazyFrame:
    """Every sum the values need, in one frame that merges across row partitions.

    Rows of ``__rke_kind == "key"`` hold, per key, the units ``N``, each estimator's
    ``sum m`` and the weights' count, sum, sum of squares and maximum; rows of ``"term"`` hold,
    per key and term, ``N_t`` and each estimator's ``A`` and ``B``. Partitions that hold whole
    units merge by :func:`merge_sums` (sums, and the maximum of the maxima): Spark's route.
    """
    lf = parts.frame
    columns = _columns(parts)
    has_weight = WEIGHT in lf.collect_schema().names()
    w = pl.col(WEIGHT).cast(pl.Float64) if has_weight else pl.lit(None, pl.Float64)
    n_units = pl.col(parts.unit).n_unique() if parts.unit is not None else pl.len()
    key_sums = [
        n_units.cast(pl.Int64).alias(_N),
        *(_sum(m).alias(f"{name}__M") for name, (m, _, _, _) in columns.items()),
        *(
            _sum(length).alias(f"{name}__L")
            for name, (_, _, _, length) in columns.items()
            if length is not None
        ),
        w.count().cast(pl.Int64).alias(_NW),
        exact_sum(w).alias(_SW),
        exact_sum(w * w).alias(_SW2),
        w.max().alias(_WMAX),
    ]
    # N_t counts the units with a row in the term (a unit may have several rows in it: a
    # slate's positions, under one term): partitions hold whole units, so counts merge.
    term_sums = [
        n_units.cast(pl.Int64).alias(_NT),
        *(
            agg
            for name, (_, a, b, _) in columns.items()
            if a is not None
            for agg in (_sum(a).alias(f"{name}__A"), _sum(b).alias(f"{name}__B"))
        ),
    ]
    if parts.term is None:
        # One term: both kinds of sums in one aggregation, so the log streams through once
        # (two aggregations of one plan share it through a cache that holds every row).
        both = lf.group_by(parts.keys).agg(*key_sums, *term_sums)
        per_key = both.select(*parts.keys, *(e.meta.output_name() for e in key_sums))
        per_term = both.select(*parts.keys, *(e.meta.output_name() for e in term_sums))
    else:
        per_key = lf.group_by(parts.keys).agg(*key_sums)
        per_term = lf.group_by([*parts.keys, parts.term]).agg(*term_sums)
    return pl.concat(
        [
            per_key.with_columns(pl.lit("key").alias(_KIND)),
            per_term.with_columns(pl.lit("term").alias(_KIND)),
        ],
        how="diagonal_relaxed",
    )


def merge_sums(sums: pl.DataFrame, parts: Parts) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(per key, per term) sums from :func:`partial_sums` frames stacked in any order."""
    term_keys = [*parts.keys, parts.term] if parts.term is not None else parts.keys
    columns = _columns(parts)
    per_key = (
        sums.filter(pl.col(_KIND) == "key")
        .group_by(parts.keys)
        .agg(
            pl.col(_N).sum(),
            *(exact_sum(pl.col(f"{name}__M")).alias(f"{name}__M") for name in columns),
            *(
                exact_sum(pl.col(f"{name}__L")).alias(f"{name}__L")
                for name, cols in columns.items()
                if cols[3] is not None
            ),
            pl.col(_NW).sum(),
            exact_sum(pl.col(_SW)).alias(_SW),
            exact_sum(pl.col(_SW2)).alias(_SW2),
            pl.col(_WMAX).max(),
        )
    )
    ratio = [name for name, (_, a, _, _) in columns.items() if a is not None]
    per_term = (
        sums.filter(pl.col(_KIND) == "term")
        .group_by(term_keys)
        .agg(
            pl.col(_NT).sum(),
            *(
                exact_sum(pl.col(f"{name}__{c}")).alias(f"{name}__{c}")
                for name in ratio
                for c in "AB"
            ),
        )
    )
    return per_key, per_term


def finish_values(
    per_key: pl.DataFrame, per_term: pl.DataFrame, parts: Parts
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(per key: N, each estimator's value, the weight sums; per term: the constants of psi)."""
    columns = _columns(parts)
    term_keys = [*parts.keys, parts.term] if parts.term is not None else parts.keys
    per_term = per_term.join(
        per_key.select(*parts.keys, _N), on=parts.keys, how="left", nulls_equal=True
    )
    ratio = [name for name, (_, a, _, _) in columns.items() if a is not None]
    constants = per_term.select(
        *term_keys,
        *(
            expr
            for name in ratio
            for expr in (
                # R_t: a term whose weights sum to 0 has no ratio (0/0): null, not NaN.
                pl.when(pl.col(f"{name}__B") != 0)
                .then(pl.col(f"{name}__A") / pl.col(f"{name}__B"))
                .alias(f"{name}__R"),
                # N_t / B_t, the scale of a row's influence on R_t.
                pl.when(pl.col(f"{name}__B") != 0)
                .then(pl.col(_NT) / pl.col(f"{name}__B"))
                .alias(f"{name}__S"),
                # R_t * N_t / N, the term's share of the value.
                (
                    pl.when(pl.col(f"{name}__B") != 0).then(
                        pl.col(f"{name}__A") / pl.col(f"{name}__B")
                    )
                    * pl.col(_NT)
                    / pl.col(_N)
                ).alias(f"{name}__C"),
            )
        ),
    )
    ratio_part = constants.group_by(parts.keys).agg(
        # A null term (0/0) leaves the whole value null: sum() would read it as 0.
        *(
            pl.when(pl.col(f"{name}__C").null_count() == 0)
            .then(exact_sum(pl.col(f"{name}__C")))
            .alias(f"{name}__C")
            for name in ratio
        )
    )
    values = (
        per_key.join(ratio_part, on=parts.keys, how="left", nulls_equal=True) if ratio else per_key
    )
    # Lambda: the scale of a ratio part, the mean of its l over the units (1 without l).
    values = values.with_columns(
        (pl.col(f"{name}__L") / pl.col(_N) if length is not None else pl.lit(1.0)).alias(
            f"{name}__Lambda"
        )
        for name, (_, _, _, length) in columns.items()
        if name in ratio
    )
    values = values.select(
        *parts.keys,
        _N,
        *(
            (
                pl.col(f"{name}__M") / pl.col(_N)
                + (pl.col(f"{name}__C") * pl.col(f"{name}__Lambda") if name in ratio else _zero())
            ).alias(name)
            for name in columns
        ),
        *(pl.col(f"{name}__C") for name in ratio),
        *(pl.col(f"{name}__Lambda") for name in ratio),
        _NW,
        _SW,
        _SW2,
        _WMAX,
    )
    return values, constants


#: A table of constants up to this many rows is written into the plan as literals rather
#: than joined: measured on 10M rows, a streaming join of a one-row table cost 0.45 s and
#: 500 MB (it buffers the big side), a when/then chain 0 s and nothing.
MAX_LITERAL_ROWS = 256


def attach(lf: pl.LazyFrame, table: pl.DataFrame, on: list[str]) -> pl.LazyFrame:
    """``lf`` with ``table``'s other columns, matched on ``on`` (null equal to null).

    A small table becomes one ``when/then`` chain per column, so the big frame streams through
    with no join; a larger one is joined.
    """
    others = [c for c in table.columns if c not in on]
    if table.height > MAX_LITERAL_ROWS:
        return lf.join(table.lazy(), on=on, how="left", nulls_equal=True)
    schema = table.schema
    conditions = [
        pl.all_horizontal(pl.col(k).eq_missing(pl.lit(row[k], dtype=schema[k])) for k in on)
        if on
        else pl.lit(True)
        for row in table.iter_rows(named=True)
    ]
    rows = table.rows(named=True)
    exprs = []
    for column in others:
        expr: pl.Expr = pl.lit(None, dtype=schema[column])
        for condition, row in zip(reversed(conditions), reversed(rows), strict=True):
            expr = (
                pl.when(condition).then(pl.lit(row[column], dtype=schema[column])).otherwise(expr)
            )
        exprs.append(expr.alias(column))
    return lf.with_columns(exprs)


def influence(
    parts: Parts,
    values: pl.DataFrame,
    constants: pl.DataFrame,
) -> pl.LazyFrame:
    """One row per unit: the keys, the unit and psi per estimator (mean psi == value)."""
    columns = _columns(parts)
    term_keys = [*parts.keys, parts.term] if parts.term is not None else parts.keys
    ratio = [name for name, (_, a, _, _) in columns.items() if a is not None]
    scaled = [name for name, (_, _, _, length) in columns.items() if length is not None]
    lf = parts.frame
    if ratio:
        lf = attach(
            lf,
            constants.select(*term_keys, *(pl.col(f"{n}__{c}") for n in ratio for c in "RS")),
            term_keys,
        )
        lf = attach(
            lf,
            values.select(
                *parts.keys,
                *(pl.col(f"{n}__Lambda") for n in ratio),
                *(pl.col(f"{n}__C") for n in scaled),
            ),
            parts.keys,
        )

    row_parts = []
    for name, (m, a, b, length) in columns.items():
        expr = pl.col(m).cast(pl.Float64) if m is not None else _zero()
        if a is not None and b is not None:
            expr = expr + pl.col(f"{name}__S") * pl.col(f"{name}__Lambda") * (
                pl.col(a).cast(pl.Float64) - pl.col(f"{name}__R") * pl.col(b).cast(pl.Float64)
            )
        if length is not None:
            # A scaled ratio part P * Lambda moves with the unit's length: P * (l_i - Lambda),
            # and with its constant P * Lambda that is P * l_i.
            expr = expr + pl.col(f"{name}__C") * pl.col(length).cast(pl.Float64)
        row_parts.append(expr.alias(name))
    if parts.unit is not None:
        # A unit's psi is null when one of its terms is null (0/0): sum() would read it as 0.
        per_unit = (
            lf.select(*parts.keys, parts.unit, *row_parts)
            .group_by([*parts.keys, parts.unit])
            .agg(
                pl.when(pl.col(name).null_count() == 0).then(exact_sum(pl.col(name))).alias(name)
                for name in columns
            )
        )
    else:
        per_unit = lf.select(*parts.keys, *row_parts)
    unscaled = [name for name in ratio if name not in scaled]
    if unscaled:  # the ratio part's constant, once per unit (a scaled one rode the rows)
        shares = values.select(*parts.keys, *(pl.col(f"{n}__C") for n in unscaled))
        per_unit = (
            attach(per_unit, shares, parts.keys)
            .with_columns((pl.col(name) + pl.col(f"{name}__C")).alias(name) for name in unscaled)
            .drop(f"{n}__C" for n in unscaled)
        )
    return per_unit


def spread_sums(parts: Parts, values: pl.DataFrame, constants: pl.DataFrame) -> pl.LazyFrame:
    """Per key: sum over units of (psi - value)^2 per estimator, merging across partitions."""
    columns = _columns(parts)
    psi = attach(
        influence(parts, values, constants),
        values.select(*parts.keys, *(pl.col(n).alias(f"{n}__V") for n in columns)),
        parts.keys,
    )
    return psi.group_by(parts.keys).agg(
        exact_sum((pl.col(name) - pl.col(f"{name}__V")) ** 2).alias(f"{name}__SS")
        for name in columns
    )


def _z(alpha: float) -> float:
    return NormalDist().inv_cdf(1 - alpha / 2)


def check_alpha(alpha: object) -> float:
    """``alpha`` as a float in (0, 1), or an :class:`InvalidOptionError`."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        msg = f"option alpha= must be a number between 0 and 1 (0.05: 95% intervals), got {alpha!r}"
        raise InvalidOptionError(msg)
    return float(alpha)


def _warn_weights(summary: pl.DataFrame, keys: Sequence[str], site: Site) -> None:
    """WeightWarning for each key whose weights make its estimates unreliable."""
    for row in summary.iter_rows(named=True):
        n, ess = row["__n_weights"], row["ess"]
        if not n or ess is None:
            continue
        where = ", ".join(f"{key}={row[key]!r}" for key in keys)
        if ess < max(MIN_ESS, MIN_ESS_SHARE * n):
            msg = (
                f"off-policy estimate for {where}: the importance weights' effective sample size "
                f"is {ess:.1f} of {n} logged units (largest weight {row['max_weight']:.4g}): a few "
                "rows carry the estimate and its interval is not to be trusted"
            )
            warn_at(msg, WeightWarning, site)
        sd, mean = row["__sd"], row["mean_weight"]
        if sd is not None and sd > 0 and n > 1:
            z = abs(mean - 1) / (sd / math.sqrt(n))
            if z > MEAN_WEIGHT_Z:
                msg = (
                    f"off-policy estimate for {where}: the importance weights average {mean:.4g} "
                    f"(expected 1 ± {sd / math.sqrt(n):.2g}): the logging propensities are wrong, "
                    "or the logging policy never takes actions the target policy takes"
                )
                warn_at(msg, WeightWarning, site)


def _bootstrap(
    parts: Parts,
    columns: dict[str, Columns],
    *,
    n_resamples: int,
    alpha: float,
    seed: int,
    engine: Engine,
) -> pl.DataFrame:
    """Percentile intervals from resampling the units, every estimator recomputed per draw."""
    unit = parts.unit if parts.unit is not None else _ROW
    lf = parts.frame if parts.unit is not None else parts.frame.with_row_index(_ROW)
    term = parts.term
    parts_cols = [c for cols in columns.values() for c in cols if c is not None]
    frame = lf.select(*parts.keys, unit, *([term] if term else []), *parts_cols).collect(
        engine=engine
    )
    rng = np.random.default_rng(seed)
    rows: list[dict[str, object]] = []
    for key, group in frame.group_by(parts.keys, maintain_order=True):
        codes = group.select(pl.col(unit).rank("dense").cast(pl.Int64) - 1).to_series().to_numpy()
        n = int(codes.max()) + 1 if len(codes) else 0
        terms = (
            group.select(pl.col(term).rank("dense").cast(pl.Int64) - 1).to_series().to_numpy()
            if term
            else np.zeros(len(codes), dtype=np.int64)
        )
        n_terms = int(terms.max()) + 1 if len(terms) else 0
        draws = rng.multinomial(n, np.full(n, 1.0 / n), size=n_resamples) if n else None
        record: dict[str, object] = dict(zip(parts.keys, key, strict=True))
        for name, (m, a, b, length) in columns.items():
            if draws is None:
                record[f"{name}__low"] = record[f"{name}__high"] = None
                continue
            # Each draw counts unit i c_i times: every sum is a count-weighted sum over units.
            counts = draws[:, codes]  # (draws, rows)
            value = np.zeros(n_resamples)
            if m is not None:
                value += counts @ group[m].cast(pl.Float64).to_numpy() / n
            if a is not None and b is not None:
                av, bv = group[a].cast(pl.Float64).to_numpy(), group[b].cast(pl.Float64).to_numpy()
                ratio_part = np.zeros(n_resamples)
                for t in range(n_terms):
                    in_t = terms == t
                    big_a, big_b = counts[:, in_t] @ av[in_t], counts[:, in_t] @ bv[in_t]
                    # N_t: the drawn units with a row in the term (not their rows).
                    n_t = draws[:, np.unique(codes[in_t])].sum(axis=1)
                    with np.errstate(divide="ignore", invalid="ignore"):
                        ratio_part += np.where(big_b != 0, big_a / big_b, np.nan) * n_t / n
                if length is not None:
                    ratio_part *= counts @ group[length].cast(pl.Float64).to_numpy() / n
                value += ratio_part
            finite = value[np.isfinite(value)]
            low, high = (
                np.quantile(finite, [alpha / 2, 1 - alpha / 2]) if len(finite) else (None, None)
            )
            record[f"{name}__low"] = None if low is None else float(low)
            record[f"{name}__high"] = None if high is None else float(high)
        rows.append(record)
    return pl.DataFrame(rows, schema_overrides=frame.select(parts.keys).schema)


def estimate(
    parts: Parts,
    *,
    alpha: float = 0.05,
    per_query: bool = False,
    baseline: object = None,
    interval: Interval = "normal",
    n_resamples: int = 1000,
    seed: int = 0,
    direction: Literal["higher", "lower"] = "higher",
    engine: Engine = "auto",
) -> pl.DataFrame:
    """Each estimator's value, standard error and interval per key, from its parts.

    Parameters
    ----------
    parts
        The estimators' per-row parts (:class:`Parts`).
    alpha
        Interval level ``1 - alpha``.
    per_query
        One row per unit instead: the keys, the unit and each estimator's influence ``psi``
        (whose mean is the estimate), the per-query table that pairs target policies.
    baseline
        A target policy's name: compare every other policy with it, paired by unit, through
        :func:`~polars_rankeval.compare_per_query` (a paired t-test on ``psi``).
    interval
        ``"normal"``: ``value ± z * se``; ``"bootstrap"``: percentile interval of ``n_resamples``
        draws of the units (each estimator recomputed per draw; the units are held in memory).
    n_resamples, seed
        The bootstrap's draws and seed.
    direction
        Whether a higher reward is better (``"higher"``) or the reward is a cost (``"lower"``);
        the comparison reads it.
    engine
        Polars' engine for the aggregations.

    Returns
    -------
    pl.DataFrame
        ``metric`` (the estimator), the keys, then ``n_queries`` (units), ``value``, ``se``,
        ``ci_low``, ``ci_high``, ``ess``, ``max_weight``, ``mean_weight``.

    Examples
    --------
    >>> import polars as pl
    >>> rows = pl.LazyFrame({"policy": ["new"] * 4, "ips__m": [2.0, 0.0, 1.0, 1.0]})
    >>> estimate(Parts(rows, keys=["policy"], estimators=["ips"])).select(
    ...     "metric", "policy", "n_queries", "value", pl.col("se").round(4)
    ... )
    shape: (1, 5)
    ┌────────┬────────┬───────────┬───────┬────────┐
    │ metric ┆ policy ┆ n_queries ┆ value ┆ se     │
    │ ---    ┆ ---    ┆ ---       ┆ ---   ┆ ---    │
    │ str    ┆ str    ┆ i64       ┆ f64   ┆ f64    │
    ╞════════╪════════╪═══════════╪═══════╪════════╡
    │ ips    ┆ new    ┆ 4         ┆ 1.0   ┆ 0.4082 │
    └────────┴────────┴───────────┴───────┴────────┘
    """
    alpha = check_alpha(alpha)
    if interval not in ("normal", "bootstrap"):
        msg = f"option interval= must be 'normal' or 'bootstrap', got {interval!r}"
        raise InvalidOptionError(msg)
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 10:
        msg = f"option n_resamples= must be an int of at least 10, got {n_resamples!r}"
        raise InvalidOptionError(msg)
    columns = _columns(parts)
    collect_engine: Engine = engine if engine != "auto" else "streaming"
    per_key, per_term = merge_sums(partial_sums(parts).collect(engine=collect_engine), parts)
    values, constants = finish_values(per_key, per_term, parts)
    if per_query or baseline is not None:
        if parts.unit is None:
            msg = (
                "per_query=True and baseline= need an id per logged unit to pair policies on: "
                "give query= (the column naming each logged decision)"
            )
            raise InvalidOptionError(msg)
        table = influence(parts, values, constants).collect(engine=collect_engine)
        if baseline is None:
            return table.sort([*parts.keys, parts.unit], nulls_last=True)
        from polars_rankeval.comparison._compare import compare_per_query

        return compare_per_query(
            table,
            by=parts.keys[0],
            within=parts.keys[1:] or None,
            query=parts.unit,
            metrics=list(columns),
            baseline=baseline,
            alpha=alpha,
            seed=seed,
            direction=dict.fromkeys(columns, direction),
        )
    spread = spread_sums(parts, values, constants).collect(engine=collect_engine)
    long = summarise(values, spread, parts, alpha=alpha)
    if interval == "bootstrap":
        boot = _bootstrap(
            parts, columns, n_resamples=n_resamples, alpha=alpha, seed=seed, engine=collect_engine
        )
        bounds = pl.concat(
            [
                boot.select(
                    pl.lit(name).alias("metric"),
                    *parts.keys,
                    pl.col(f"{name}__low").cast(pl.Float64).alias("__low"),
                    pl.col(f"{name}__high").cast(pl.Float64).alias("__high"),
                )
                for name in columns
            ]
        )
        long = (
            long.join(bounds, on=["metric", *parts.keys], how="left", nulls_equal=True)
            .with_columns(ci_low=pl.col("__low"), ci_high=pl.col("__high"))
            .drop("__low", "__high")
        )
    return long


def summarise(
    values: pl.DataFrame, spread: pl.DataFrame, parts: Parts, *, alpha: float
) -> pl.DataFrame:
    """The long result from the values and the merged spread sums; gives the weight warnings.

    ``spread`` may hold several rows per key (one per partition): they are summed here.
    """
    columns = _columns(parts)
    spread = spread.group_by(parts.keys).agg(
        exact_sum(pl.col(f"{name}__SS")).alias(f"{name}__SS") for name in columns
    )
    n_w, sum_w, sum_w2 = pl.col(_NW), pl.col(_SW), pl.col(_SW2)
    summary = values.join(spread, on=parts.keys, how="left", nulls_equal=True).with_columns(
        # Kish's effective sample size: (sum w)^2 / sum w^2.
        pl.when(sum_w2 > 0).then(sum_w**2 / sum_w2).alias("ess"),
        pl.col(_WMAX).alias("max_weight"),
        pl.when(n_w > 0).then(sum_w / n_w).alias("mean_weight"),
        pl.when(n_w > 1)
        .then(((sum_w2 - sum_w**2 / n_w) / (n_w - 1)).clip(lower_bound=0).sqrt())
        .alias("__sd"),
        pl.col(_NW).alias("__n_weights"),
    )
    _warn_weights(summary, parts.keys, parts.site if parts.site is not None else user_site())
    z = _z(alpha)
    long = pl.concat(
        [
            summary.select(
                pl.lit(name).alias("metric"),
                *parts.keys,
                pl.col(_N).alias("n_queries"),
                pl.col(name).alias("value"),
                # The delta method's standard error: sd(psi) / sqrt(N).
                pl.when(pl.col(_N) > 1)
                .then((pl.col(f"{name}__SS") / (pl.col(_N) - 1)).sqrt() / pl.col(_N).sqrt())
                .alias("se"),
                "ess",
                "max_weight",
                "mean_weight",
            )
            for name in columns
        ],
        how="vertical",
    ).with_columns(
        ci_low=pl.col("value") - z * pl.col("se"),
        ci_high=pl.col("value") + z * pl.col("se"),
    )
    order = {name: i for i, name in enumerate(columns)}
    return (
        long.with_columns(
            pl.col("metric").replace_strict(order, return_dtype=pl.Int64).alias("__o")
        )
        .sort(["__o", *parts.keys], nulls_last=True)
        .select("metric", *parts.keys, *RESULT_COLUMNS)
    )


def buckets(lf: pl.LazyFrame, unit: list[str], n_buckets: int) -> list[pl.LazyFrame]:
    """``lf`` split into ``n_buckets`` by a hash of the ``unit`` columns: whole units in each."""
    bucket = pl.struct(unit).hash(seed=0) % n_buckets
    return [lf.filter(bucket == b) for b in range(n_buckets)]


def estimate_in_buckets(
    pieces: Sequence[Parts], *, alpha: float, engine: Engine, site: Site
) -> pl.DataFrame:
    """:func:`estimate`'s values and standard errors from parts built per bucket of units.

    Each piece holds whole units (:func:`buckets`: a slate's positions) and about
    ``1 / len(pieces)`` of the rows; each piece's parts are summed, the sums merged as Spark's
    partitions are, and a second round over the pieces gives the spread around the values.
    Memory is that of one bucket; the log is read twice per bucket. Each bucket's sums are
    rounded once before they merge, so the result equals one pass's to about 1e-15, not to
    the bit.
    """
    alpha = check_alpha(alpha)
    first = pieces[0]
    model = Parts(first.frame, first.keys, first.estimators, first.unit, first.term, site)
    sums = [partial_sums(parts).collect(engine=engine) for parts in pieces]
    values, constants = finish_values(
        *merge_sums(pl.concat(sums, how="vertical_relaxed"), model), model
    )
    spread = pl.concat(
        [spread_sums(parts, values, constants).collect(engine=engine) for parts in pieces],
        how="vertical_relaxed",
    )
    return summarise(values, spread, model, alpha=alpha)
