"""Attribution: the metric under every mix of two setups, and each setting's Shapley share.

Switching the differing settings from setup A to setup B one at a time gives each setting an
effect, but the effect depends on the order when settings interact (the gain matters more once
the ties are averaged ...). The Shapley value averages the effect over every order, so the
effects sum exactly to the whole difference, in the mean and in every query, whatever the
order in which the settings are listed. It needs the metric under every subset of switched
settings: ``2^d`` evaluations for ``d`` differing settings, each an ordinary ``evaluate``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import polars as pl

from polars_rankeval._engine.evaluate import evaluate_frame
from polars_rankeval._names.families import build_metrics
from polars_rankeval.attribution._setup import Setup, prepared, request_for, same
from polars_rankeval.errors import InvalidOptionError, RankEvalWarning, UnusedTableWarning

#: At most this many differing settings (2^8 = 256 evaluations of the log).
MAX_SETTINGS = 8
VALUE = "value"


@dataclass(frozen=True)
class Columns:
    """The log's column names, and the extra tables (train, items ...) its metrics read."""

    query: str
    item: str
    score: str
    relevance: str
    tables: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Result:
    """The metric under one setup: its value (evaluate's summary) and its per-query values."""

    value: float
    per_query: pl.DataFrame | None  # query, value; None for a per-system metric


def is_per_query(setup: Setup) -> bool:
    """Whether the metric has a value per query (not only over a whole run)."""
    metric = build_metrics(setup.family, setup.k, setup.metric_options())[0]
    return metric.level == "query"


def evaluate_setup(
    frame: pl.DataFrame, setup: Setup, columns: Columns, *, quiet: bool = True
) -> Result:
    """The metric under ``setup``: ``evaluate``'s value, and per query where it has one.

    ``quiet``: the warnings of evaluations made only to attribute a difference are not the
    user's (a mixed setup nobody runs); those of the two sides are.
    """
    values = setup.values
    log = prepared(frame, values, query=columns.query, item=columns.item, score=columns.score)
    keywords: dict[str, Any] = {
        "convention": "trec_eval",
        "tie_warning": None,
        "query": columns.query,
        "item": columns.item,
        "score": columns.score,
        "relevance": columns.relevance,
        "relevance_level": values["relevance_level"],
        "missing_queries": values["missing_queries"],
        "empty_queries": values["empty_queries"],
        "ties": values["ties"],
        "negative_labels": values["negative_labels"],
        "unretrieved": values["unretrieved"],
        "unlabelled": values["unlabelled"],
        "depth": values["depth"],
        "judged_only": values["judged_only"],
        **columns.tables,
    }
    request = request_for(setup)
    with warnings.catch_warnings():
        if quiet:
            warnings.simplefilter("ignore", RankEvalWarning)
        # a table one side's metric reads and the other's does not is not unused
        warnings.simplefilter("ignore", UnusedTableWarning)
        summary = evaluate_frame(log, [request], **keywords)
        # the same rows again, per query: its warnings were just given
        warnings.simplefilter("ignore", RankEvalWarning)
        per_query = (
            evaluate_frame(log, [request], per_query=True, **keywords)
            if is_per_query(setup)
            else None
        )
    assert isinstance(summary, pl.DataFrame)
    value = summary.row(0)[0] if summary.height else None
    if per_query is not None:
        assert isinstance(per_query, pl.DataFrame)
        per_query = per_query.select(
            pl.col(columns.query), pl.col(per_query.columns[-1]).cast(pl.Float64).alias(VALUE)
        )
    return Result(math.nan if value is None else float(value), per_query)


def differing(a: Setup, b: Setup) -> list[str]:
    """The settings whose values differ between the two setups, in A's order."""
    names = [key for key in a.values if not same(a.values[key], b.values.get(key))]
    if len(names) > MAX_SETTINGS:
        msg = (
            f"explain: {len(names)} settings differ ({', '.join(names)}); at most "
            f"{MAX_SETTINGS} can be attributed (2^{MAX_SETTINGS} evaluations): set some of them "
            "equal on both sides"
        )
        raise InvalidOptionError(msg)
    return names


def _weights(d: int) -> list[float]:
    """Shapley weight of a subset of size s that leaves one setting out: s!(d-s-1)!/d!."""
    return [math.factorial(s) * math.factorial(d - s - 1) / math.factorial(d) for s in range(d)]


@dataclass(frozen=True)
class Attribution:
    """Each differing setting's (or group of settings') effect on the mean and per query.

    ``groups`` holds the settings of each cause: one setting, or several that only exist
    together (``coverage``'s ``intersect=`` applies only with ``of=train``: a mix switching
    one without the other is no definition, so they are switched together).
    """

    groups: list[tuple[str, ...]]
    value_a: float
    value_b: float
    effects: dict[str, float]  # Shapley, on the value
    alone: dict[str, float]  # switching only this cause from A
    moved: dict[str, int]  # queries whose value (or presence) this cause changes
    per_query: pl.DataFrame | None  # query, value_a, value_b, difference, one column per cause

    @property
    def names(self) -> list[str]:
        """Each cause's name: its settings joined by ``+``."""
        return [cause_name(group) for group in self.groups]


def cause_name(group: Sequence[str]) -> str:
    """A cause's name: ``"gain"``, or ``"of+intersect"`` for settings switched together."""
    return "+".join(group)


class _RefusedMixError(Exception):
    """A mix of the two setups that the engine refuses (no such definition)."""


def attribute(
    frame: pl.DataFrame,
    a: Setup,
    b: Setup,
    columns: Columns,
    names: Sequence[str],
    *,
    given: tuple[bool, bool] = (True, True),
) -> Attribution:
    """Evaluate every mix of the settings ``names`` switched from ``a`` to ``b``; each one's share.

    ``given``: whether each side is the user's own setup, whose evaluation warns as
    ``evaluate`` would (a setup found to reproduce a tool's numbers, or a mix, does not).
    Settings whose mixes the engine refuses are switched together, as one cause.
    """
    groups: list[tuple[str, ...]] = [(name,) for name in names]
    cache: dict[frozenset[str], Result | None] = {}

    def result(switched: frozenset[str], *, loud: bool = False) -> Result | None:
        if switched not in cache:
            setup = a.with_values({name: b.values[name] for name in switched})
            try:
                cache[switched] = evaluate_setup(frame, setup, columns, quiet=not loud)
            except InvalidOptionError:
                if not switched or switched == frozenset(names):
                    raise  # a side itself: the user's mistake, said as evaluate says it
                cache[switched] = None
        return cache[switched]

    result(frozenset(), loud=given[0])
    result(frozenset(names), loud=given[1] and bool(names))
    while True:
        try:
            return _shapley_over(groups, result, columns)
        except _RefusedMixError:
            coupled = [
                group
                for group in groups
                if result(frozenset(group)) is None
                or result(frozenset(names) - frozenset(group)) is None
            ]
            if len(coupled) < 2 or len(coupled) == len(groups) == 1:
                coupled = groups  # no smaller grouping found: every setting together
            merged = tuple(name for group in coupled for name in group)
            groups = [group for group in groups if group not in coupled] + [merged]


def _shapley_over(
    groups: list[tuple[str, ...]],
    result: Callable[[frozenset[str]], Result | None],
    columns: Columns,
) -> Attribution:
    d = len(groups)
    subsets = [frozenset(s) for size in range(d + 1) for s in combinations(range(d), size)]
    results: dict[frozenset[int], Result] = {}
    for subset in subsets:
        switched = frozenset(name for i in subset for name in groups[i])
        found = result(switched)
        if found is None:
            raise _RefusedMixError
        results[subset] = found
    full = frozenset(range(d))
    weights = _weights(d) if d else []
    names = [cause_name(group) for group in groups]

    def shapley(value_of: Callable[[frozenset[int]], Any]) -> list[Any]:
        shares = []
        for i in range(d):
            total: Any = 0.0
            for subset in subsets:
                if i not in subset:
                    total = total + weights[len(subset)] * (
                        value_of(subset | {i}) - value_of(subset)
                    )
            shares.append(total)
        return shares

    means = shapley(lambda s: results[s].value)
    alone = [results[frozenset({i})].value - results[frozenset()].value for i in range(d)]
    per_query = None
    moved = dict.fromkeys(names, 0)
    if results[frozenset()].per_query is not None:
        wide = _wide(results, subsets, columns.query)
        matrix = {s: wide.get_column(_key(s)).to_numpy() for s in subsets}
        contributions = shapley(lambda s: matrix[s])
        for i, name in enumerate(names):
            changed = np.zeros(wide.height, dtype=bool)
            for subset in subsets:
                if i not in subset:
                    before, after = matrix[subset], matrix[subset | {i}]
                    presence = np.isnan(before) != np.isnan(after)
                    changed |= presence | (np.abs(after - before) > 1e-12)
            moved[name] = int(changed.sum())
        value_a, value_b = matrix[frozenset()], matrix[full]
        per_query = pl.DataFrame(
            {
                columns.query: wide.get_column(columns.query),
                "value_a": value_a,
                "value_b": value_b,
                "difference": value_b - value_a,
                **{name: contributions[i] for i, name in enumerate(names)},
            },
            nan_to_null=True,
        )
    return Attribution(
        groups,
        results[frozenset()].value,
        results[full].value,
        dict(zip(names, means, strict=True)),
        dict(zip(names, alone, strict=True)),
        moved,
        per_query,
    )


def _key(subset: frozenset[int]) -> str:
    return "s" + "_".join(str(i) for i in sorted(subset))


def _wide(
    results: dict[frozenset[int], Result], subsets: list[frozenset[int]], query: str
) -> pl.DataFrame:
    """One row per query evaluated under any subset, one Float64 column per subset (NaN: absent)."""
    frames = []
    for subset in subsets:
        per_query = results[subset].per_query
        assert per_query is not None
        frames.append(per_query.rename({VALUE: _key(subset)}))
    wide = frames[0]
    for other in frames[1:]:
        wide = wide.join(other, on=query, how="full", coalesce=True, nulls_equal=True)
    return wide.with_columns(pl.exclude(query).fill_null(math.nan)).sort(query)
