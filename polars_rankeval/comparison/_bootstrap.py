"""Intervals for per-system metrics: resample the users (queries), recompute the whole metric.

Coverage, Gini, entropy, personalization and GAUC have no value per query, so ``compare``'s
paired per-query tests do not apply to them. What does apply is the bootstrap over queries
(Efron): draw the queries with replacement, recompute each system's metric on the drawn
queries exactly as :func:`~polars_rankeval.evaluate` computes it (a query drawn twice counts
twice), and read the interval off the resampled values: the basic (reverse-percentile)
interval, which corrects the bias resampling gives per-system metrics (a draw repeats some
users and misses others, so it covers fewer items). With a baseline the same draw serves every
system, so the difference is paired by query; its p-value is the shifted bootstrap's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from polars_rankeval._engine.columns import as_polars, make_columns
from polars_rankeval._engine.evaluate import evaluate_frame
from polars_rankeval._engine.meaning import Directions, Meaning, meanings
from polars_rankeval._engine.plan import finish_all
from polars_rankeval._engine.settings import settings_for
from polars_rankeval._engine.summary import drop_empty_queries, summary
from polars_rankeval._engine.tables import TABLE_KEYWORDS, Tables, make_tables
from polars_rankeval._engine.vocabulary import (
    BASELINE_VALUE,
    CI_HIGH,
    CI_LOW,
    DELTA,
    METRIC,
    N_QUERIES,
    VALUE,
    baseline_column,
    renamed,
)
from polars_rankeval._engine.warn import warn_at
from polars_rankeval._names.registry import MetricRequest, resolve_metrics
from polars_rankeval.comparison._pairing import resolve_baseline, system_names
from polars_rankeval.errors import BootstrapBiasWarning, InvalidOptionError
from polars_rankeval.lists import maybe_from_lists
from polars_rankeval.metrics._base import Metric

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from polars_rankeval._engine.vocabulary import EvaluateOptions

_DRAW = "__rke_draw"
_SYSTEM = "__rke_system"
# Resamples evaluated together: bounds the memory of the stacked resampled frames.
_CHUNK = 50


def _check(n_resamples: object, alpha: object, evaluate_keywords: dict[str, Any]) -> None:
    if "per_query" in evaluate_keywords:
        msg = "option per_query= is set by bootstrap (it resamples the per-query frame)"
        raise InvalidOptionError(msg)
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 10:
        msg = f"option n_resamples= must be an int >= 10, got {n_resamples!r}"
        raise InvalidOptionError(msg)
    if isinstance(alpha, bool) or not isinstance(alpha, float | int) or not 0 < alpha < 1:
        msg = f"option alpha= must be a number between 0 and 1, got {alpha!r}"
        raise InvalidOptionError(msg)


def _values(
    per_query: pl.DataFrame, resolved: list[tuple[str, Metric]], by: list[str], tables: Tables
) -> pl.DataFrame:
    return summary(per_query.lazy(), resolved, by, tables).collect()


@renamed(log="data")
def bootstrap(
    data: pl.DataFrame | pl.LazyFrame,
    metrics: Sequence[str | Metric | MetricRequest] | str | Metric,
    *,
    by: str | Sequence[str],
    baseline: object = None,
    n_resamples: int = 1_000,
    alpha: float = 0.05,
    seed: int = 0,
    direction: Directions = None,
    **options: Unpack[EvaluateOptions],
) -> pl.DataFrame:
    """Bootstrap intervals over queries (users), for any metric, per system.

    The one way to put an interval on a per-system metric (``coverage@k``, ``gini@k``,
    ``gauc`` ...): the queries are drawn with replacement ``n_resamples`` times (the same draw
    for every system), and every metric is recomputed on each draw as ``evaluate`` computes it.
    Per-query metrics work too (their interval is the bootstrap of the mean).

    Parameters
    ----------
    data
        The long-format log, as for :func:`~polars_rankeval.evaluate`.
    metrics
        Metric strings or objects.
    by
        The column(s) naming the systems.
    baseline
        A system (its ``by`` value; a tuple for several columns): then each other system also
        gets ``delta`` (system − baseline), its interval and a two-sided bootstrap p-value,
        paired by query.
    n_resamples, alpha, seed
        Number of draws (at least 10), interval level ``1 − alpha``, random seed.
    direction
        ``{metric: "higher" | "lower" | "none"}``: overrides a metric's declared direction in
        ``higher_is_better`` (``{"gini@10": "higher"}``), as in
        :func:`~polars_rankeval.compare`.
    **options
        Passed to :func:`~polars_rankeval.evaluate` (``train=``, ``catalog=``, conventions ...).

    Returns
    -------
    pl.DataFrame
        One row per (metric, system), in the columns every long result shares: ``metric``,
        the ``by`` columns under their own names, ``value`` (what ``evaluate`` gives), its
        interval ``ci_low``, ``ci_high``, ``n_queries``, ``higher_is_better``. With a baseline
        the row is about the difference, as in :func:`~polars_rankeval.compare`: ``metric``,
        the ``by`` columns, the baseline's ``baseline_<by>`` columns, ``value``,
        ``baseline_value``, ``delta`` (system − baseline), ``ci_low``, ``ci_high`` (the interval
        of ``delta``), ``n_queries``, ``p_value``, then ``value_ci_low``, ``value_ci_high``
        (the interval of ``value``) and ``higher_is_better``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.read_parquet("data/sample.parquet")
    >>> out = rke.bootstrap(log, ["ndcg@10"], by="system", n_resamples=200)
    >>> out.select("system", pl.col("value").round(4), pl.col("ci_low") < pl.col("value"))
    shape: (2, 3)
    ┌────────┬────────┬────────┐
    │ system ┆ value  ┆ ci_low │
    │ ---    ┆ ---    ┆ ---    │
    │ str    ┆ f64    ┆ bool   │
    ╞════════╪════════╪════════╡
    │ bm25   ┆ 0.5293 ┆ true  │
    │ neural ┆ 0.7065 ┆ true  │
    └────────┴────────┴────────┘
    """
    evaluate_keywords: dict[str, Any] = dict(options)
    _check(n_resamples, alpha, evaluate_keywords)
    keys = [by] if isinstance(by, str) else list(by)
    per_query, resolved, tables, query = _per_query(
        data, metrics, keys, evaluate_keywords, direction
    )
    observed = _values(per_query, resolved, keys, tables)
    observed = observed.with_columns(system_names(keys).alias(_SYSTEM))
    systems = observed[_SYSTEM].to_list()
    # each system's own key values: several by columns stay columns (never the joined name)
    key_values = {row[-1]: row[:-1] for row in observed.select(*keys, _SYSTEM).iter_rows()}
    chosen = resolve_baseline(baseline, systems)
    queries = per_query.select(query).unique(maintain_order=False).sort(query)
    n_queries = queries.height
    rng = np.random.default_rng(seed)
    draws: list[pl.DataFrame] = []
    for start in range(0, n_resamples, _CHUNK):
        size = min(_CHUNK, n_resamples - start)
        picks = rng.integers(0, n_queries, size=(size, n_queries))
        drawn = pl.DataFrame(
            {
                _DRAW: np.repeat(np.arange(start, start + size), n_queries),
                query: queries[query].gather(picks.ravel()),
            }
        )
        stacked = drawn.join(per_query, on=query, how="inner")
        draws.append(_values(stacked, resolved, [*keys, _DRAW], tables))
    resampled = pl.concat(draws).with_columns(system_names(keys).alias(_SYSTEM))
    rows = []
    low_q, high_q = alpha / 2, 1 - alpha / 2
    unreliable: set[str] = set()
    p_values = _all_p_values(
        per_query, resolved, keys, query, systems, chosen, tables, n_resamples, rng
    )
    counts = per_query.group_by(keys).len()
    counts = counts.with_columns(system_names(keys).alias(_SYSTEM))
    # Each metric's direction as meaning.py decides it (the call's direction= included).
    for label, meaning in _meanings(resolved, direction).items():
        wide = resampled.pivot(on=_SYSTEM, index=_DRAW, values=label).sort(_DRAW)
        for system in systems:
            if system == chosen:
                continue  # the baseline's own row would compare it with itself
            value = observed.filter(pl.col(_SYSTEM) == system)[label].item()
            samples = wide[system].drop_nulls().to_numpy() if system in wide.columns else None
            low, high = _checked_interval(value, samples, (low_q, high_q), label, unreliable)
            n_queries = counts.filter(pl.col(_SYSTEM) == system)["len"].item()
            row: dict[str, Any] = {
                METRIC: label,
                **dict(zip(keys, key_values[system], strict=True)),
            }
            if chosen is None:
                row |= {VALUE: value, CI_LOW: low, CI_HIGH: high, N_QUERIES: n_queries}
            else:
                row |= {
                    baseline_column(key): key_value
                    for key, key_value in zip(keys, key_values[chosen], strict=True)
                }
                base_value = observed.filter(pl.col(_SYSTEM) == chosen)[label].item()
                both = wide.select(system, chosen).drop_nulls()
                delta = (both[system] - both[chosen]).to_numpy()
                observed_delta = None if value is None or base_value is None else value - base_value
                delta_low, delta_high = _checked_interval(
                    observed_delta, delta, (low_q, high_q), label, unreliable
                )
                # compare's columns first (they stack), then what only bootstrap has
                row |= {
                    VALUE: value,
                    BASELINE_VALUE: base_value,
                    DELTA: observed_delta,
                    CI_LOW: delta_low,
                    CI_HIGH: delta_high,
                    N_QUERIES: n_queries,
                    "p_value": p_values[(label, system)],
                    "value_ci_low": low,
                    "value_ci_high": high,
                }
            row["higher_is_better"] = meaning.higher_is_better
            rows.append(row)
    if unreliable:
        _warn_unreliable(unreliable)
    return _typed(pl.DataFrame(rows), observed.schema, keys)


def _checked_interval(
    observed: float | None,
    samples: np.ndarray | None,
    levels: tuple[float, float],
    label: str,
    unreliable: set[str],
) -> tuple[float | None, float | None]:
    """The basic interval, or none (``label`` noted) when it misses its own estimate."""
    low, high = _basic_interval(observed, samples, *levels)
    if _outside(observed, low, high):
        # an interval that misses its own estimate is no interval: say so
        unreliable.add(label)
        return None, None
    return low, high


def _warn_unreliable(unreliable: set[str]) -> None:
    warn_at(
        f"no bootstrap interval for {', '.join(map(repr, sorted(unreliable)))} (left "
        "null): the resampled values miss the observed one, because resampling the users "
        "biases this metric (distinct-item counts such as coverage fall when users repeat); "
        "its p_value comes from the paired randomization test, which resamples nothing",
        BootstrapBiasWarning,
    )


def _typed(out: pl.DataFrame, types: pl.Schema, keys: list[str]) -> pl.DataFrame:
    """The key columns in the log's types (rows of Python values would widen them)."""
    if out.is_empty():
        return out
    return out.with_columns(
        [pl.col(key).cast(types[key]) for key in keys]
        + [
            pl.col(baseline_column(key)).cast(types[key])
            for key in keys
            if baseline_column(key) in out.columns
        ]
    )


def _basic_interval(
    observed: float | None, samples: np.ndarray | None, low_q: float, high_q: float
) -> tuple[float | None, float | None]:
    """The basic (reverse-percentile) bootstrap interval ``2θ − q_high, 2θ − q_low``.

    Per-system metrics are biased under resampling (a draw of the users repeats some and
    misses others, so it covers fewer items): the percentile interval of coverage can lie
    wholly below the observed value. The basic interval subtracts that bias; for a mean it
    is the percentile interval mirrored around the estimate, nearly the same.
    """
    if observed is None or samples is None or not len(samples):
        return None, None
    return (
        float(2 * observed - np.quantile(samples, high_q)),
        float(2 * observed - np.quantile(samples, low_q)),
    )


def _randomization(
    per_query: pl.DataFrame,
    *,
    resolved: list[tuple[str, Metric]],
    keys: list[str],
    query: str,
    pair: tuple[str, str],
    tables: Tables,
    n_resamples: int,
    rng: np.random.Generator,
) -> dict[str, float | None]:
    """Two-sided paired randomization p per metric: each user's two lists swapped at random.

    Under the null hypothesis the two systems' lists of a user are exchangeable; every draw
    keeps all the users (nothing is resampled, so per-system metrics are not biased), swaps
    each user's pair with probability 1/2 and recomputes the difference. The p-value is the
    share of draws at least as far from 0 as the observed difference, with the +1 correction.
    """
    system, baseline = pair
    named = per_query.with_columns(system_names(keys).alias(_SYSTEM)).filter(
        pl.col(_SYSTEM).is_in([system, baseline])
    )
    labels = [label for label, _ in resolved]
    named = named.select(query, _SYSTEM, *labels)
    observed = _values(named, resolved, [_SYSTEM], tables)
    observed_delta = _delta(observed, labels, system, baseline)
    queries = named.select(query).unique().sort(query)
    swapped_name = (
        pl.when(pl.col(_SYSTEM) == system).then(pl.lit(baseline)).otherwise(pl.lit(system))
    )
    deltas: list[pl.DataFrame] = []
    for start in range(0, n_resamples, _CHUNK):
        size = min(_CHUNK, n_resamples - start)
        flips = pl.DataFrame(
            {
                _DRAW: np.repeat(np.arange(start, start + size), queries.height),
                query: pl.concat([queries[query]] * size),
                "__rke_flip": rng.random(size * queries.height) < 0.5,
            }
        )
        stacked = flips.join(named, on=query, how="inner").with_columns(
            pl.when(pl.col("__rke_flip"))
            .then(swapped_name)
            .otherwise(pl.col(_SYSTEM))
            .alias(_SYSTEM)
        )
        values = _values(stacked, resolved, [_SYSTEM, _DRAW], tables)
        wide = {label: values.pivot(on=_SYSTEM, index=_DRAW, values=label) for label in labels}
        deltas.append(
            pl.DataFrame(
                {
                    label: (frame[system] - frame[baseline])
                    if system in frame.columns and baseline in frame.columns
                    else pl.Series([None] * frame.height, dtype=pl.Float64)
                    for label, frame in wide.items()
                }
            )
        )
    drawn = pl.concat(deltas)
    found: dict[str, float | None] = {}
    for label in labels:
        value = observed_delta[label]
        draws = drawn[label].drop_nulls().to_numpy()
        if value is None or not len(draws):
            found[label] = None
            continue
        # floating-point noise never counts as a difference (as compare's tests)
        tolerance = 1e-9 * max(1.0, abs(value))
        extreme = np.abs(draws) >= abs(value) - tolerance
        found[label] = float((np.sum(extreme) + 1) / (len(draws) + 1))
    return found


def _outside(value: float | None, low: float | None, high: float | None) -> bool:
    """Whether an interval misses its own estimate."""
    if value is None or low is None or high is None:
        return False
    return not low - 1e-12 <= value <= high + 1e-12


def _delta(
    values: pl.DataFrame, labels: list[str], system: str, baseline: str
) -> dict[str, float | None]:
    """System − baseline per metric from a frame with one row per system."""
    out: dict[str, float | None] = {}
    for label in labels:
        by_name = dict(zip(values[_SYSTEM], values[label], strict=True))
        a, b = by_name.get(system), by_name.get(baseline)
        out[label] = None if a is None or b is None else float(a - b)
    return out


def _meanings(resolved: list[tuple[str, Metric]], direction: Directions) -> dict[str, Meaning]:
    return meanings([label for label, _ in resolved], known=dict(resolved), direction=direction)


def _per_query(
    log: pl.DataFrame | pl.LazyFrame,
    metrics: Sequence[str | Metric | MetricRequest] | str | Metric,
    keys: list[str],
    evaluate_keywords: dict[str, Any],
    direction: Directions = None,
) -> tuple[pl.DataFrame, list[tuple[str, Metric]], Tables, str]:
    """The finished per-query rows (hidden per-system values kept), metrics, tables, query."""
    query = evaluate_keywords.get("query", "query")
    item = evaluate_keywords.get("item", "item")
    preset, _ = settings_for(evaluate_keywords.get("convention", "trec_eval"), evaluate_keywords)
    resolved = resolve_metrics(metrics, preset)
    _meanings(resolved, direction)  # a direction= for no metric is refused before reading
    data = as_polars(log, "log").lazy()
    table_keywords = {k: evaluate_keywords.get(k) for k in TABLE_KEYWORDS}
    per_query = evaluate_frame(
        data, metrics, per_query=True, by=keys, raw=True, **evaluate_keywords
    ).collect()
    columns = make_columns(
        query=query,
        item=item,
        score=evaluate_keywords.get("score", "score"),
        relevance=evaluate_keywords.get("relevance", "relevance"),
        by=keys,
    )
    long, _ = maybe_from_lists(data, columns)  # per-user lists: the keys of the long format
    tables = make_tables(long.collect_schema(), columns, **table_keywords)
    per_query = finish_all(per_query.lazy(), resolved, [*keys, query], tables).collect()
    per_query = drop_empty_queries(per_query)
    return per_query, resolved, tables, query


def _all_p_values(  # noqa: PLR0917 (one call site)
    per_query: pl.DataFrame,
    resolved: list[tuple[str, Metric]],
    keys: list[str],
    query: str,
    systems: list[str],
    chosen: str | None,
    tables: Tables,
    n_resamples: int,
    rng: np.random.Generator,
) -> dict[tuple[str, str], float | None]:
    """The randomization p-value of each (metric, system) against the baseline."""
    p_values: dict[tuple[str, str], float | None] = {}
    if chosen is None:
        return p_values
    for system in systems:
        if system == chosen:
            continue
        found = _randomization(
            per_query,
            resolved=resolved,
            keys=keys,
            query=query,
            pair=(system, chosen),
            tables=tables,
            n_resamples=n_resamples,
            rng=rng,
        )
        p_values.update({(label, system): p for label, p in found.items()})
    return p_values
