"""A setup: every setting that decides one metric's number, resolved from a preset or a mapping.

The settings are not listed here by hand: they are the engine's own. Evaluation settings come
from :func:`~polars_rankeval._engine.settings.resolve_settings` (the preset's, then the
explicit ones), metric options from the family's builder signature and the preset's defaults
(:meth:`~polars_rankeval.conventions.Convention.defaults_for`), so a new option of a metric is
a new setting ``explain`` can attribute a difference to, with no change here. Two input
settings are ``explain``'s own: ``flatten`` (every query's rows ranked as one list, as
torchmetrics' functional metrics do with a 2-D batch) and ``score_precision`` (scores rounded
before ranking, as a tool that prints few digits and reads them back).
"""

from __future__ import annotations

import inspect
import math
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from polars_rankeval._engine.settings import _TREC_SETTINGS, Settings, resolve_settings
from polars_rankeval._names.families import FAMILIES, MetricRequest
from polars_rankeval._names.registry import metric_request
from polars_rankeval.conventions import CONVENTIONS, get_convention
from polars_rankeval.errors import InvalidOptionError

#: The preset a mapping without ``"convention"`` starts from.
BASE = "trec_eval"
#: explain's own settings, on the input rather than the metric, and their neutral values.
INPUT_SETTINGS: dict[str, Any] = {"flatten": False, "score_precision": None}
# Evaluation settings that are checks of the input, not definitions (an error either way).
_NOT_DEFINITIONS = frozenset({"duplicates", "nan_scores"})
#: The evaluation settings a setup holds, with trec_eval's values.
EVALUATION_SETTINGS: dict[str, Any] = {
    **{key: value for key, value in _TREC_SETTINGS.items() if key not in _NOT_DEFINITIONS},
    "depth": None,
    "judged_only": False,
}
# A metric's own tie rule, relevance level and judged-only switch are the evaluation's
# settings of the same names for that metric: one setting each, not two.
_FOLDED = {"ties": "ties", "rel": "relevance_level", "judged_only": "judged_only"}


@dataclass(frozen=True)
class Setup:
    """One side of a comparison: the metric's family and cutoff, and every setting's value.

    ``label`` is how the report names the side (``"trec_eval"``, ``"gdeval"``,
    ``"trec_eval + gain=exp"``).
    """

    label: str
    family: str
    k: int | None
    values: dict[str, Any]

    def with_values(self, changes: Mapping[str, Any]) -> Setup:
        """The same setup with some settings set to other values."""
        return Setup(self.label, self.family, self.k, {**self.values, **changes})

    def metric_options(self) -> dict[str, Any]:
        """The metric's own options (not the evaluation's or the input's settings)."""
        skip = set(EVALUATION_SETTINGS) | set(INPUT_SETTINGS)
        return {key: value for key, value in self.values.items() if key not in skip}


def family_defaults(family: str) -> dict[str, Any]:
    """The family builder's keyword options and their default values."""
    build = FAMILIES[family].build
    return {
        p.name: p.default
        for p in inspect.signature(build).parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is not inspect.Parameter.empty
    }


def choices(family: str, setting: str) -> list[Any]:
    """The values a setting can take that a search may try (from its type: Literal, bool).

    Free numbers (``log_base``, ``p``) and mappings have no list: only the presets' values of
    them are tried.
    """
    if setting == "flatten":
        return [False, True]
    if setting == "score_precision":
        return [None, "float32", 4, 2]
    if setting == "relevance_level":
        # 0: every labelled row relevant (a rating-0 interaction counted as a hit)
        return [1, 2, 3, 0]
    if setting == "depth":
        return [None]
    hints = _hints(family)
    if setting in EVALUATION_SETTINGS:
        hints = typing.get_type_hints(Settings)
    hint = hints.get(setting)
    return _literal_values(hint) if hint is not None else []


def _hints(family: str) -> dict[str, Any]:
    try:
        return typing.get_type_hints(FAMILIES[family].build)
    except (NameError, TypeError):  # an annotation that does not resolve: no choices
        return {}


def _literal_values(hint: Any) -> list[Any]:
    if hint is bool:
        return [False, True]
    if typing.get_origin(hint) is typing.Literal:
        return list(typing.get_args(hint))
    values: list[Any] = []
    for argument in typing.get_args(hint):  # a union: its Literal and bool members
        values += [value for value in _literal_values(argument) if value not in values]
    return values


def resolve(side: str | Mapping[str, Any], metric: str) -> Setup:
    """Every setting of ``metric`` under ``side`` (a preset's name, or a mapping of settings).

    Precedence, as in ``evaluate``: the side's explicit settings, then the metric string's
    options, then the preset's defaults, then trec_eval's and the builder's defaults.

    Examples
    --------
    >>> setup = resolve("gdeval", "ndcg@10")
    >>> setup.values["gain"], setup.values["ties"], setup.values["relevance_level"]
    ('exp', 'trec', 1)
    >>> resolve({"convention": "trec_eval", "gain": "exp"}, "ndcg@10").label
    'trec_eval + gain=exp'
    """
    given: dict[str, Any] = {"convention": side} if isinstance(side, str) else dict(side)
    base_name = given.pop("convention", BASE)
    convention = get_convention(base_name)
    request = metric_request(metric)
    family, k = request.family, request.k
    assert k is None or isinstance(k, int)  # one metric string names one cutoff
    builder = family_defaults(family)
    known = set(EVALUATION_SETTINGS) | set(INPUT_SETTINGS) | set(builder) | set(_FOLDED)
    unknown = sorted(set(given) - known)
    if unknown:
        msg = (
            f"explain: {unknown[0]!r} is not a setting of {metric!r}; its settings: "
            f"{', '.join(sorted(known - set(_FOLDED) | {'ties', 'relevance_level'}))} "
            f"(and convention=, one of {sorted(CONVENTIONS)})"
        )
        raise InvalidOptionError(msg)
    for folded, setting in _FOLDED.items():  # rel= is relevance_level=, etc.
        if folded in given and folded != setting and folded not in builder:
            given[setting] = given.pop(folded)
    options = {**builder, **convention.defaults_for(family, k), **request.options}
    options.update({key: value for key, value in given.items() if key in builder})
    explicit = {key: given.get(key) for key in _TREC_SETTINGS}
    for folded, setting in _FOLDED.items():
        # a metric-level tie rule, level or -J (a preset's or the string's) is that setting
        if folded in options and folded not in builder and explicit.get(setting) is None:
            explicit[setting] = options.pop(folded)
        elif folded not in builder:
            options.pop(folded, None)
    settings = resolve_settings(convention, explicit)
    values: dict[str, Any] = {key: getattr(settings, key) for key in _TREC_SETTINGS}
    values = {key: value for key, value in values.items() if key not in _NOT_DEFINITIONS}
    values["depth"] = given.get("depth")
    values["judged_only"] = bool(given.get("judged_only", explicit.get("judged_only") or False))
    values.update({key: given.get(key, default) for key, default in INPUT_SETTINGS.items()})
    values.update(options)
    _check_input_settings(values)
    extra = {key: value for key, value in given.items() if key != "convention"}
    label = (
        base_name
        if not extra
        else f"{base_name} + "
        + ", ".join(f"{key}={describe(value)}" for key, value in extra.items())
    )
    return Setup(label, family, k, values)


def _check_input_settings(values: dict[str, Any]) -> None:
    if not isinstance(values["flatten"], bool):
        msg = f"explain: flatten= must be True or False, got {values['flatten']!r}"
        raise InvalidOptionError(msg)
    precision = values["score_precision"]
    if precision is None or precision == "float32":
        return
    if isinstance(precision, bool) or not isinstance(precision, int) or precision < 0:
        msg = (
            "explain: score_precision= must be None, 'float32' or a number of decimals >= 0, "
            f"got {precision!r}"
        )
        raise InvalidOptionError(msg)


def describe(value: Any) -> str:
    """A setting's value as the report prints it.

    >>> describe(None), describe(True), describe(0.8), describe({1: 3.0})
    ('None', 'True', '0.8', '{1:3}')
    """
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{key}:{item:g}" for key, item in value.items()) + "}"
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:g}"
    return str(value)


def same(left: Any, right: Any) -> bool:
    """Whether two values of a setting are the same (``2`` and ``2.0`` are; True and 1 not)."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, str) and isinstance(right, str):
        return left.lower() == right.lower()
    return bool(left == right)


def prepared(
    frame: pl.DataFrame, values: Mapping[str, Any], *, query: str, item: str, score: str
) -> pl.DataFrame:
    """The log as the setup's tool sees it: scores rounded, queries flattened into one list."""
    if values["score_precision"] == "float32":
        frame = frame.with_columns(pl.col(score).cast(pl.Float32).cast(pl.Float64))
    elif values["score_precision"] is not None:
        frame = frame.with_columns(pl.col(score).cast(pl.Float64).round(values["score_precision"]))
    if values["flatten"]:
        # The whole batch is one ranking (its id: the first query's, in the query column's
        # type). Items keep their query in their id, so one item in two queries is two rows.
        first = frame.get_column(query).head(1)
        frame = frame.with_columns(
            pl.concat_str(
                pl.col(query).cast(pl.String), pl.col(item).cast(pl.String), separator="/"
            ).alias(item),
            pl.lit(first.item() if len(first) else None, dtype=first.dtype).alias(query),
        )
    return frame


def request_for(setup: Setup) -> MetricRequest:
    """The metric under the setup's options (the evaluation settings go to ``evaluate``)."""
    return MetricRequest(setup.family, setup.k, setup.metric_options())
