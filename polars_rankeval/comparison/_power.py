"""Can this test collection tell systems apart? Discriminative power and topic-set size.

* :func:`discriminative_power` (Sakai, SIGIR 2006): the share of system pairs a significance
  test finds different at ``alpha``, per metric: run every pair through :func:`compare`
  (randomized Tukey HSD by default, which controls the family-wise error itself), or summarise
  a :func:`compare` output you already have. A metric with more discriminative power tells more
  pairs apart on the same queries; ``min_significant_delta`` is the smallest absolute mean
  difference among the significant pairs (Sakai's "Δ needed").
* :func:`queries_needed` (Sakai, topic set size design, IRJ 2016; the paired t-test case): the
  smallest number of queries ``n`` for which a two-sided paired t-test at ``alpha`` detects a true
  mean difference ``delta`` with probability ``power``, given the standard deviation ``σ_d`` of the
  per-query differences: ``power(n) = P(|T'| > t_{1−α/2, n−1})`` with ``T'`` non-central t,
  ``n − 1`` degrees of freedom and non-centrality ``δ √n / σ_d``. ``σ_d`` comes from a per-query
  table (the pairs' differences), or from a :func:`compare` output's paired t-interval
  (``σ_d = half-width · √n / t_{1−α/2, n−1}``). The achieved power at the current number of
  queries is reported beside it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from polars_rankeval._engine.vocabulary import DELTA, METRIC, N_QUERIES, baseline_column
from polars_rankeval.comparison._compare import compare
from polars_rankeval.comparison._pairing import (
    matchups,
    resolve_baseline,
    system_columns,
    system_names,
    with_pair_names,
)
from polars_rankeval.comparison._stats import _scipy_stats
from polars_rankeval.errors import ColumnTypeError, DuplicateItemError, InvalidOptionError

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from polars_rankeval._engine.vocabulary import EvaluateOptions

# compare()'s output, by the columns discriminative_power and queries_needed read from it.
# (and its systems' by and baseline_<by> columns, read as joined names by with_pair_names)
_COMPARE_COLUMNS = frozenset({"metric", "significant", "delta", "test"})
# queries_needed searches n up to this (a difference that needs more is reported as null).
_MAX_QUERIES = 1_000_000


def _is_compare_output(frame: pl.DataFrame) -> bool:
    return set(frame.columns) >= _COMPARE_COLUMNS and bool(system_columns(frame.columns))


def _probability(option: str, value: object, *, open_low: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        msg = f"option {option}= must be a number in (0, 1), got {value!r}"
        raise InvalidOptionError(msg)
    if not 0 < value < 1:
        msg = f"option {option}= must be in (0, 1), got {value!r}"
        raise InvalidOptionError(msg)
    return float(value)


def discriminative_power(
    data: Any,
    metrics: Sequence[str] | str | None = None,
    *,
    by: str | Sequence[str] | None = None,
    test: str = "tukey",
    correction: str | None = None,
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int = 0,
    **options: Unpack[EvaluateOptions],
) -> pl.DataFrame:
    """Per metric, the share of system pairs a test finds significantly different (Sakai).

    Parameters
    ----------
    data
        A log (as for :func:`~polars_rankeval.compare`, with ``metrics`` and ``by``), or a
        :func:`~polars_rankeval.compare` output over every pair (``baseline=None``).
    metrics, by
        The metrics and the system columns, for a log.
    test, correction, alpha, n_resamples, seed
        As :func:`~polars_rankeval.compare`; randomized Tukey HSD by default (no correction
        needed: it controls the family-wise error over all pairs).
    **options
        Further keywords of :func:`~polars_rankeval.evaluate`, for a log.

    Returns
    -------
    DataFrame
        ``metric, systems, pairs, significant, discriminative_power, min_significant_delta,
        test, alpha``, one row per metric in the order given.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.read_parquet("data/sample.parquet")
    >>> rke.discriminative_power(log, ["ndcg@10", "p@10"], by="system", test="t").select(
    ...     "metric", "pairs", "significant", "discriminative_power"
    ... )
    shape: (2, 4)
    ┌─────────┬───────┬─────────────┬──────────────────────┐
    │ metric  ┆ pairs ┆ significant ┆ discriminative_power │
    │ ---     ┆ ---   ┆ ---         ┆ ---                  │
    │ str     ┆ i64   ┆ i64         ┆ f64                  │
    ╞═════════╪═══════╪═════════════╪══════════════════════╡
    │ ndcg@10 ┆ 1     ┆ 1           ┆ 1.0                  │
    │ p@10    ┆ 1     ┆ 1           ┆ 1.0                  │
    └─────────┴───────┴─────────────┴──────────────────────┘
    """
    frame = data.collect() if isinstance(data, pl.LazyFrame) else data
    if isinstance(frame, pl.DataFrame) and metrics is None and _is_compare_output(frame):
        compared = frame = with_pair_names(frame)
        if frame["baseline"].n_unique() == 1 and frame["system"].n_unique() > 1:
            msg = (
                "this compare() output holds pairs against one baseline only; discriminative "
                "power counts every pair of systems: run compare(..., baseline=None)"
            )
            raise InvalidOptionError(msg)
    else:
        if metrics is None or by is None:
            msg = (
                "discriminative_power needs a log with metrics= and by= (the system columns), "
                "or a compare() output"
            )
            raise InvalidOptionError(msg)
        forwarded: dict[str, Any] = dict(options)  # compare checks them as evaluate does
        compared = compare(
            data,
            metrics,
            by=by,
            baseline=None,
            test=test,  # type: ignore[arg-type]
            correction=correction,  # type: ignore[arg-type]
            alpha=alpha,
            n_resamples=n_resamples,
            seed=seed,
            **forwarded,
        )
        compared = with_pair_names(compared)
    order = compared["metric"].unique(maintain_order=True).to_list()
    systems = pl.concat_list("baseline", "system").explode().n_unique()
    summary = compared.group_by("metric", maintain_order=True).agg(
        systems.cast(pl.Int64).alias("systems"),
        pl.len().cast(pl.Int64).alias("pairs"),
        pl.col("significant").sum().cast(pl.Int64).alias("significant"),
        pl.col("delta").abs().filter(pl.col("significant")).min().alias("min_significant_delta"),
        pl.col("test").first(),
        pl.col("alpha").first() if "alpha" in compared.columns else pl.lit(alpha).alias("alpha"),
    )
    share = (pl.col("significant") / pl.col("pairs")).alias("discriminative_power")
    out = summary.with_columns(share).select(
        "metric",
        "systems",
        "pairs",
        "significant",
        "discriminative_power",
        "min_significant_delta",
        "test",
        "alpha",
    )
    rank = {name: index for index, name in enumerate(order)}
    return out.sort(pl.col("metric").replace_strict(rank, return_dtype=pl.Int64))


def _power(n: np.ndarray, delta: float, sigma: float, alpha: float, stats: Any) -> np.ndarray:
    """Two-sided paired t-test power at ``n`` queries (non-central t)."""
    df = n - 1.0
    critical = stats.t.ppf(1.0 - alpha / 2.0, df)
    shift = delta * np.sqrt(n) / sigma
    return np.asarray(stats.nct.sf(critical, df, shift) + stats.nct.cdf(-critical, df, shift))


def _needed(delta: float, sigma: float, power: float, alpha: float, stats: Any) -> int | None:
    """The smallest n >= 2 with power(n) >= power (None past ``_MAX_QUERIES``)."""
    if sigma == 0:
        return 2
    high = 2
    while _power(np.array([high]), delta, sigma, alpha, stats)[0] < power:
        high *= 2
        if high > _MAX_QUERIES:
            return None
    low = max(2, high // 2)
    candidates = np.arange(low, high + 1, dtype=np.float64)
    reached = _power(candidates, delta, sigma, alpha, stats) >= power
    return int(candidates[int(np.argmax(reached))])


def queries_needed(
    data: pl.DataFrame | pl.LazyFrame,
    *,
    delta: float,
    power: float = 0.8,
    alpha: float = 0.05,
    metric: str | Sequence[str] | None = None,
    by: str | Sequence[str] = "system",
    baseline: object = None,
    query: str = "query",
) -> pl.DataFrame:
    """How many queries a paired t-test needs to detect a mean difference of ``delta``.

    Parameters
    ----------
    data
        A per-query table (``evaluate(..., per_query=True, by=...)``: the ``by`` columns,
        ``query`` and metric columns) or a :func:`~polars_rankeval.compare` output made with
        ``test="t"`` (its paired t-interval gives the standard deviation of the differences).
    delta
        The smallest true mean difference to detect (the metric's scale, > 0).
    power, alpha
        The probability of detecting it (default 0.8) and the two-sided level (0.05).
    metric
        The metric column(s) of a per-query table (default: every column but ``by`` and
        ``query``); a filter on a compare output's ``metric``.
    by, baseline, query
        For a per-query table: the system columns, the baseline system (default: every pair)
        and the query column.

    Returns
    -------
    DataFrame
        In the columns every long result shares: ``metric``, the ``by`` columns (the system),
        the ``baseline_<by>`` columns (the system it is paired with, as in
        :func:`~polars_rankeval.compare`), ``n_queries``, then ``sd_difference, delta, power,
        alpha, queries_needed, power_now`` (the power at the current ``n_queries``);
        ``queries_needed`` is null past 1,000,000 queries.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.read_parquet("data/sample.parquet")
    >>> per_query = rke.evaluate(log, ["ndcg@10"], by="system", per_query=True)
    >>> rke.queries_needed(per_query, delta=0.02).select(
    ...     "metric", "n_queries", "queries_needed", pl.col("power_now").round(3)
    ... )
    shape: (1, 4)
    ┌─────────┬───────────┬────────────────┬───────────┐
    │ metric  ┆ n_queries ┆ queries_needed ┆ power_now │
    │ ---     ┆ ---       ┆ ---            ┆ ---       │
    │ str     ┆ i64       ┆ i64            ┆ f64       │
    ╞═════════╪═══════════╪════════════════╪═══════════╡
    │ ndcg@10 ┆ 3000      ┆ 1078           ┆ 0.997     │
    └─────────┴───────────┴────────────────┴───────────┘
    """
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not delta > 0:
        msg = f"option delta= must be a number > 0 (the difference to detect), got {delta!r}"
        raise InvalidOptionError(msg)
    if not math.isfinite(delta):
        msg = f"option delta= must be finite, got {delta!r}"
        raise InvalidOptionError(msg)
    power = _probability("power", power)
    alpha = _probability("alpha", alpha)
    stats = _scipy_stats()
    frame = data.collect() if isinstance(data, pl.LazyFrame) else data
    if _is_compare_output(frame):
        keys = system_columns(frame.columns)
        pairs = _from_compare(frame, keys, metric, stats)
    else:
        keys = [by] if isinstance(by, str) else list(by)
        pairs = _from_per_query(frame, metric, keys, baseline, query)
    rows = []
    for name, base, system, n, sd in pairs:
        needed = _needed(float(delta), sd, power, alpha, stats) if n >= 2 else None
        now = float(_power(np.array([float(n)]), float(delta), sd, alpha, stats)[0]) if sd else 1.0
        rows.append((name, *system, *base, n, sd, float(delta), power, alpha, needed, now))
    schema: dict[str, Any] = {
        METRIC: pl.String,
        **{key: frame.schema[key] for key in keys},
        **{baseline_column(key): frame.schema[key] for key in keys},
        N_QUERIES: pl.Int64,
        "sd_difference": pl.Float64,
        DELTA: pl.Float64,
        "power": pl.Float64,
        "alpha": pl.Float64,
        "queries_needed": pl.Int64,
        "power_now": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


# (metric, the baseline's key values, the system's key values, n_queries, sd of differences)
_Pair = tuple[str, tuple[Any, ...], tuple[Any, ...], int, float]


def _from_compare(frame: pl.DataFrame, keys: list[str], metric: object, stats: Any) -> list[_Pair]:
    """σ_d of each compared pair from its paired t-interval (``test="t"`` rows only)."""
    if metric is not None:
        wanted = [metric] if isinstance(metric, str) else list(metric)  # type: ignore[call-overload]
        frame = frame.filter(pl.col("metric").is_in(wanted))
    not_t = frame.filter(pl.col("test") != "t")
    if not_t.height:
        msg = (
            f"queries_needed reads the paired t-interval of a compare() output, but these rows "
            f"used test={not_t['test'][0]!r}: compare with test='t', or pass the per-query table"
        )
        raise InvalidOptionError(msg)
    if "test_scale" in frame.columns and (frame["test_scale"] == "log").any():
        msg = (
            "queries_needed: a geometric-mean metric is tested on the log scale; pass delta for "
            "another metric, or the per-query table of the logs"
        )
        raise InvalidOptionError(msg)
    pairs: list[_Pair] = []
    for row in frame.iter_rows(named=True):
        n = int(row["n_queries"])
        level = float(row["alpha"])
        half = (float(row["ci_high"]) - float(row["ci_low"])) / 2.0
        sd = half * math.sqrt(n) / float(stats.t.ppf(1.0 - level / 2.0, n - 1)) if n >= 2 else 0.0
        system = tuple(row[key] for key in keys)
        base = tuple(row[baseline_column(key)] for key in keys)
        pairs.append((row[METRIC], base, system, n, sd))
    return pairs


def _from_per_query(
    frame: pl.DataFrame,
    metric: object,
    keys: list[str],
    baseline: object,
    query: str,
) -> list[_Pair]:
    """σ_d of each pair of systems from their paired per-query differences."""
    missing = [name for name in [*keys, query] if name not in frame.columns]
    if missing:
        msg = (
            f"queries_needed needs a per-query table with the columns {[*keys, query]} (missing "
            f"{missing}) or a compare() output"
        )
        raise InvalidOptionError(msg)
    names = (
        [metric]
        if isinstance(metric, str)
        else list(metric)  # type: ignore[call-overload]
        if metric is not None
        else [c for c in frame.columns if c not in {*keys, query}]
    )
    unknown = [name for name in names if name not in frame.columns]
    if unknown or not names:
        msg = f"queries_needed: no metric column {unknown or names!r} in the per-query table"
        raise InvalidOptionError(msg)
    not_numeric = [name for name in names if not frame.schema[name].is_numeric()]
    if not_numeric:
        msg = f"queries_needed: metric columns must be numeric, got {not_numeric!r}"
        raise ColumnTypeError(msg)
    named = frame.with_columns(system_names(keys).alias("__rke_system"))
    repeated = named.filter(pl.len().over("__rke_system", query) > 1)
    if repeated.height:
        example = repeated.row(0, named=True)
        msg = (
            f"queries_needed: system {example['__rke_system']!r} has {query!r} "
            f"{example[query]!r} more than once; a per-query table has one row per (system, query)"
        )
        raise DuplicateItemError(msg)
    systems = named["__rke_system"].unique(maintain_order=True).sort().to_list()
    # each system's key values, so that several by columns come back as columns
    key_values = {row[-1]: row[:-1] for row in named.select(*keys, "__rke_system").iter_rows()}
    base = resolve_baseline(baseline, systems)
    pairs: list[_Pair] = []
    for name in names:
        wide = named.pivot(on="__rke_system", index=query, values=name, aggregate_function=None)
        for first, second in matchups(systems, base):
            both = wide.select(first, second).drop_nulls()
            d = (both[second] - both[first]).cast(pl.Float64).to_numpy()
            sd = float(np.std(d, ddof=1)) if len(d) >= 2 else 0.0
            pairs.append((name, key_values[first], key_values[second], len(d), sd))
    return pairs
