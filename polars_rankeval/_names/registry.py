"""The metric grammar's entry points: one parser for every dialect.

:func:`parse_metrics` reads one metric string in any dialect, each in its own module:
trec_eval's ``-m`` forms and printed names (:mod:`~polars_rankeval._names.trec_eval`:
``"P.5,10"``, ``"official"``, ``"iprec_at_recall_0.10"``), ir_measures' names
(:mod:`~polars_rankeval._names.ir_measures`: ``"nDCG@10"``, ``"AP(rel=2)"``) and ours
(:mod:`~polars_rankeval._names.ours`: ``"ndcg@10(gain=exp)"``, sweeps ``"ndcg@5,10"``). Every
dialect looks the family up in the one families table
(:mod:`~polars_rankeval._names.families`). The API and the command line call the same parser.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from polars_rankeval._names.did_you_mean import unknown_metric_message
from polars_rankeval._names.families import (
    ALIASES,
    FAMILIES,
    TABLE,
    Family,
    MetricRequest,
    build_metrics,
    family_options,
    known_metrics,
)
from polars_rankeval._names.ir_measures import _FAMILIES as _IRM_FAMILIES
from polars_rankeval._names.ir_measures import is_ir_measures_name, translate
from polars_rankeval._names.ours import parse_ours
from polars_rankeval._names.split import metric_list, split_metrics
from polars_rankeval._names.trec_eval import (
    TREC_MEASURES,
    TREC_QUERY_ONLY,
    TREC_SETS,
    TREC_SUMMARY_ONLY,
    m_form_names,
    parse_parameterised,
    trec_measure_names,
    trec_measure_of,
)
from polars_rankeval.conventions import CONVENTIONS, Convention
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.metrics._base import Metric

__all__ = [
    "ALIASES",
    "FAMILIES",
    "TABLE",
    "TREC_MEASURES",
    "TREC_QUERY_ONLY",
    "TREC_SETS",
    "TREC_SUMMARY_ONLY",
    "Family",
    "MetricRequest",
    "build_metrics",
    "family_options",
    "known_metrics",
    "metric_request",
    "parse_metric",
    "parse_metrics",
    "resolve_metrics",
    "split_metric_list",
    "trec_measure_names",
    "trec_measure_of",
]

_TREC = CONVENTIONS["trec_eval"]
# The table the parser looks names up in (a module global, so a test can take a family out).
_FAMILIES: dict[str, Family] = FAMILIES


def _suggest(name: str, spec: str) -> str:
    """The unknown-metric error: the closest few spellings (ours, ir_measures'), not all."""
    spellings = {**{family: family for family in _FAMILIES}, **ALIASES}
    cutoffs = {family: rule.cutoff for family, rule in _FAMILIES.items()}
    foreign = {  # α_nDCG is a name one reads, not one to suggest typing
        name: family
        for name, family in _IRM_FAMILIES.items()
        if family in _FAMILIES and name.isascii()
    }
    return unknown_metric_message(name, spec, spellings, cutoffs, foreign)


def parse_metrics(
    text: str, convention: Convention = _TREC, families: Mapping[str, Family] | None = None
) -> list[tuple[str, Metric]]:
    """Parse one metric string into ``(output name, Metric)`` pairs (several for a sweep).

    The output name keeps the user's spelling; a sweep gives ``name@k`` per cutoff, a
    trec_eval ``-m`` form the names trec_eval prints.

    Examples
    --------
    >>> [name for name, _ in parse_metrics("NDCG@5,10")]
    ['NDCG@5', 'NDCG@10']
    >>> [metric.name for _, metric in parse_metrics("ndcg@10(gain=exp)")]
    ['ndcg@10(gain=exp)']
    >>> [name for name, _ in parse_metrics("P.5,10")]
    ['P_5', 'P_10']
    """
    table = _FAMILIES if families is None else families
    if not isinstance(text, str):
        msg = f"a metric must be a string such as 'ndcg@10' or a Metric object, got {text!r}"
        raise InvalidOptionError(msg)
    spec = text.strip()
    if (names := m_form_names(spec)) is not None:  # trec_eval's -m P.5,10 or -m official
        return [pair for name in names for pair in parse_metrics(name, convention, table)]
    if is_ir_measures_name(spec):  # nDCG(dcg='exp-log2')@10, AP(rel=2), INST(T=2) ...
        translated = parse_metrics(translate(spec), convention, table)
        return [(spec, metric) for _, metric in translated]
    if (parameterised := parse_parameterised(spec, convention, table)) is not None:
        return [(spec, parameterised)]
    return parse_ours(text, convention, table, _suggest)


def split_metric_list(text: str) -> list[str]:
    """Split ``"ndcg@1,5,10,map,err@5(max_grade=3,transform=exp)"`` into metric strings.

    The command line's name for :func:`polars_rankeval._names.split.split_metrics`: a comma
    separates metrics unless it sits inside brackets or quotes, or the next part is a number
    continuing a sweep (or one of trec_eval's parameter lists).

    Examples
    --------
    >>> split_metric_list("ndcg@1,5,10,map,err@5(max_grade=3,transform=exp)")
    ['ndcg@1,5,10', 'map', 'err@5(max_grade=3,transform=exp)']
    """
    return split_metrics(text)  # the one splitter of the API and the command line


def parse_metric(text: str) -> Metric:
    """Parse a metric string that names exactly one metric.

    Examples
    --------
    >>> parse_metric("NDCG@10").name
    'ndcg@10'
    >>> parse_metric("P_5").name
    'p@5'
    >>> parse_metric("recip_rank").name
    'mrr'
    """
    parsed = parse_metrics(text)
    if len(parsed) != 1:
        msg = f"{text!r} names {len(parsed)} metrics; use parse_metrics for a cutoff sweep"
        raise InvalidOptionError(msg)
    return parsed[0][1]


@dataclass(frozen=True)
class _Recording(Family):
    """A family that notes each request made of it (:func:`metric_request` reads them)."""

    sink: list[MetricRequest] = field(default_factory=list)

    def make(
        self,
        k: int | None,
        options: dict[str, Any],
        label: str,
        defaults: dict[str, Any] | None = None,
    ) -> Metric:
        self.sink.append(MetricRequest(self.name, k, dict(options)))
        return super().make(k, options, label, defaults)


def metric_request(text: str) -> MetricRequest:
    """The family, cutoff and explicit options one metric string names, in any dialect.

    ``explain`` re-builds the metric under other settings from these parts.

    Examples
    --------
    >>> metric_request("nDCG@10")
    MetricRequest(family='ndcg', k=10, options={})
    >>> metric_request("map@5(denominator=min_k_R)")
    MetricRequest(family='map', k=5, options={'denominator': 'min_k_R'})
    """
    sink: list[MetricRequest] = []
    recording = {
        name: _Recording(**{f.name: getattr(family, f.name) for f in fields(Family)}, sink=sink)
        for name, family in _FAMILIES.items()
    }
    parsed = parse_metrics(text, families=recording)
    if len(parsed) != 1 or len(sink) != 1:
        msg = f"{text!r} names {len(parsed)} metrics; give one metric, e.g. 'ndcg@10'"
        raise InvalidOptionError(msg)
    return sink[0]


def resolve_metrics(specs: object, convention: Convention = _TREC) -> list[tuple[str, Metric]]:
    """Turn the user's metric list into ``(output column name, Metric)`` pairs.

    Strings keep their exact spelling as the output name (a sweep gives one name per cutoff);
    Metric objects use ``Metric.name``.
    """
    given = specs
    if isinstance(specs, (Metric, MetricRequest)):
        specs = [specs]
    specs = metric_list(specs)  # "ndcg@10,map" is two metrics, as the command line's -m
    if not isinstance(specs, list) or not specs:
        msg = f"metrics must be a non-empty list such as ['ndcg@10', 'map'], got {given!r}"
        raise InvalidOptionError(msg)
    resolved: list[tuple[str, Metric]] = []
    for spec in specs:
        if isinstance(spec, Metric):
            resolved.append((spec.name, spec))
        elif isinstance(spec, MetricRequest):
            built = build_metrics(spec.family, spec.k, spec.options, convention)
            resolved.extend((metric.name, metric) for metric in built)
        else:
            resolved.extend(parse_metrics(spec, convention))
    labels = [label for label, _ in resolved]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        msg = f"metric names repeat in the list: {repeated}; each output column needs one name"
        raise InvalidOptionError(msg)
    return resolved
