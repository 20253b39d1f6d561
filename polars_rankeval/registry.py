"""Metric strings: ``"ndcg@10"``, ``"P_5"``, ``"ndcg@1,5,10"``, ``"err@10(max_grade=3)"``.

Grammar: ``name[@k[,k...]][(option=value[,option=value...])]``, case-insensitive. A list of
cutoffs is a sweep: one metric (and one output column) per cutoff, all computed from the same
ranking pass. Options are the keyword arguments of the metric's builder in
:mod:`polars_rankeval.metrics`, e.g. ``gain``, ``log_base``, ``discount``, ``ideal`` for
``ndcg``; a mapping is written ``gain={0:0,1:1,2:3}``.
"""

from __future__ import annotations

import difflib
import inspect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from polars_rankeval import metrics as m
from polars_rankeval.context import check_ties
from polars_rankeval.conventions import CONVENTIONS, Convention
from polars_rankeval.errors import InvalidOptionError, UnknownMetricError
from polars_rankeval.metrics._base import Metric, with_option

_TREC = CONVENTIONS["trec_eval"]


@dataclass(frozen=True)
class _Family:
    build: Callable[..., Metric]
    cutoff: str  # "required", "optional" or "none"

    def options(self) -> list[str]:
        """Keyword options the builder accepts (besides the cutoff), plus ``ties``."""
        parameters = inspect.signature(self.build).parameters.values()
        own = [p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]
        return [*own, "ties"]

    def _build(self, k: int | None, options: dict[str, Any]) -> Metric:
        if self.cutoff == "none":
            return self.build(**options)
        return self.build(k, **options)

    def make(
        self,
        k: int | None,
        options: dict[str, Any],
        label: str,
        defaults: dict[str, Any] | None = None,
    ) -> Metric:
        """Build the metric from explicit ``options`` over a convention's ``defaults``.

        The name shows only the explicit options, so a preset does not rename columns.
        """
        unknown = sorted(set(options) - set(self.options()))
        if unknown:
            allowed = ", ".join(self.options())
            msg = f"metric {label!r} has no option {', '.join(unknown)}; its options: {allowed}"
            raise InvalidOptionError(msg)
        explicit = dict(options)
        ties = explicit.pop("ties", None)
        merged = {**(defaults or {}), **explicit}
        ties = merged.pop("ties", None) if ties is None else ties
        metric = self._build(k, merged)
        name = self._build(k, explicit).name if defaults else metric.name
        if "ties" in options:
            name = with_option(name, "ties", check_ties(ties))
        return replace(metric, name=name, ties=None if ties is None else check_ties(ties))


def _hit_rate(k: int, **options: Any) -> Metric:
    return m.success(k, name="hit_rate", **options)


_FAMILIES: dict[str, _Family] = {
    "p": _Family(m.precision, "required"),
    "recall": _Family(m.recall, "required"),
    "success": _Family(m.success, "required"),
    "hit_rate": _Family(_hit_rate, "required"),
    "hits": _Family(m.hits, "required"),
    "f1": _Family(m.f1, "required"),
    "judged": _Family(m.judged, "required"),
    "map": _Family(m.average_precision, "optional"),
    "mrr": _Family(m.reciprocal_rank, "optional"),
    "mar": _Family(m.mean_average_recall, "optional"),
    "ndcg": _Family(m.ndcg, "optional"),
    "dcg": _Family(m.dcg, "optional"),
    "err": _Family(m.err, "optional"),
    "frp": _Family(m.first_relevant_position, "optional"),
    "mean_rank": _Family(m.mean_rank, "optional"),
    "r_precision": _Family(m.r_precision, "none"),
    "bpref": _Family(m.bpref, "none"),
    "infap": _Family(m.inferred_average_precision, "none"),
    "rbp": _Family(m.rbp, "none"),
    "spearman": _Family(m.spearman, "none"),
    "kendall_tau": _Family(m.kendall_tau, "none"),
    "num_ret": _Family(m.num_ret, "none"),
    "num_rel": _Family(m.num_rel, "none"),
    "num_rel_ret": _Family(m.num_rel_ret, "none"),
    "num_q": _Family(m.num_q, "none"),
}

# Other spellings users bring from trec_eval, ranx and ir_measures.
_ALIASES: dict[str, str] = {
    "precision": "p",
    "map_cut": "map",
    "ap": "map",
    "recip_rank": "mrr",
    "rr": "mrr",
    "ndcg_cut": "ndcg",
    "rprec": "r_precision",
    "r-precision": "r_precision",
    "r_prec": "r_precision",
    "hitrate": "hit_rate",
    "infap": "infap",
    "inf_ap": "infap",
    "kendall": "kendall_tau",
    "spearman_rho": "spearman",
    "ar": "mar",
    # ir_measures: R@k, NumQ, NumRel, NumRet, NumRelRet
    "r": "recall",
    "numq": "num_q",
    "numrel": "num_rel",
    "numret": "num_ret",
    "numrelret": "num_rel_ret",
}

_SPEC = re.compile(
    r"^(?P<name>[a-z][a-z0-9_\-]*?)(?:@(?P<cutoffs>[^()]*))?(?:\((?P<options>.*)\))?$",
)
_TREC_CUTOFF = re.compile(r"^(?P<name>[a-z][a-z0-9_\-]*?)_(?P<k>\d+)$")


def known_metrics() -> list[str]:
    """All metric names and aliases accepted in metric strings."""
    return sorted({*_FAMILIES, *_ALIASES})


def family_options(name: str) -> list[str]:
    """The keyword options of a metric family (``"ndcg"`` → ``["gain", "log_base", ...]``)."""
    return _FAMILIES[_ALIASES.get(name, name)].options()


def _suggest(name: str) -> str:
    candidates = [
        f"{n}@k" if _FAMILIES[_ALIASES.get(n, n)].cutoff == "required" else n
        for n in known_metrics()
    ]
    close = difflib.get_close_matches(name, [c.removesuffix("@k") for c in candidates], n=3)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return f"unknown metric {name!r}{hint} Known metrics: {', '.join(candidates)}"


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside braces and parentheses (``gain={0:0,1:1}``, ``err@5(a=1,b=2)``)."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, "{": 1, ")": -1, "}": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [part.strip() for part in parts if part.strip()]


def _parse_value(text: str, spec: str) -> object:
    if text.startswith("{") and text.endswith("}"):
        mapping: dict[int, float] = {}
        for pair in _split_top_level(text[1:-1]):
            key, sep, value = pair.partition(":")
            try:
                mapping[int(key)] = float(value)
            except ValueError:
                sep = ""
            if not sep:
                msg = f"in metric {spec!r}, {text!r} must map integer labels to numbers"
                raise InvalidOptionError(msg) from None
        return mapping
    if text in ("true", "false"):  # metric strings are lower-cased before parsing
        return text == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def _parse_options(text: str | None, spec: str) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for part in _split_top_level(text or ""):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            msg = f"options in metric {spec!r} must look like (name=value,...), got {part!r}"
            raise InvalidOptionError(msg)
        options[key.strip()] = _parse_value(value.strip(), spec)
    return options


def _parse_cutoffs(text: str, spec: str) -> list[int]:
    cutoffs = []
    for part in text.split(","):
        if not re.fullmatch(r"\s*\d+\s*", part):
            msg = (
                f"cutoff in metric {spec!r} must be positive integers, e.g. 'ndcg@10' or '@1,5,10'"
            )
            raise InvalidOptionError(msg)
        cutoffs.append(int(part))
    if len(set(cutoffs)) != len(cutoffs):
        msg = f"cutoffs repeat in metric {spec!r}"
        raise InvalidOptionError(msg)
    return cutoffs


def parse_metrics(text: str, convention: Convention = _TREC) -> list[tuple[str, Metric]]:
    """Parse one metric string into ``(output name, Metric)`` pairs (several for a sweep).

    The output name keeps the user's spelling; a sweep gives ``name@k`` per cutoff.

    Examples
    --------
    >>> [name for name, _ in parse_metrics("NDCG@5,10")]
    ['NDCG@5', 'NDCG@10']
    >>> [metric.name for _, metric in parse_metrics("ndcg@10(gain=exp)")]
    ['ndcg@10(gain=exp)']
    """
    if not isinstance(text, str):
        msg = f"a metric must be a string such as 'ndcg@10' or a Metric object, got {text!r}"
        raise InvalidOptionError(msg)
    spec = text.strip()
    match = _SPEC.match(spec.lower())
    if match is None:
        msg = f"cannot read metric {text!r}; expected e.g. 'ndcg@10', 'map' or 'ndcg@5,10'"
        raise InvalidOptionError(msg)
    name = match["name"]
    cutoffs: list[int | None] = [None]
    if match["cutoffs"] is not None:
        cutoffs = list(_parse_cutoffs(match["cutoffs"], text))
    elif (trec := _TREC_CUTOFF.match(name)) and _ALIASES.get(trec["name"], trec["name"]) in (
        _FAMILIES
    ):
        # trec_eval spelling: P_5, ndcg_cut_10, map_cut_100, recall_5, success_1
        name, cutoffs = trec["name"], [int(trec["k"])]
    canonical = _ALIASES.get(name, name)
    family = _FAMILIES.get(canonical)
    if family is None:
        raise UnknownMetricError(_suggest(name))
    if family.cutoff == "none" and match["cutoffs"] is not None:
        msg = f"metric {canonical!r} takes no cutoff; use {canonical!r} instead of {text!r}"
        raise InvalidOptionError(msg)
    if family.cutoff == "required" and cutoffs == [None]:
        msg = f"metric {canonical!r} needs a cutoff, e.g. '{canonical}@10'"
        raise InvalidOptionError(msg)
    options = _parse_options(match["options"], text)
    # Keep the user's spelling of the name and options in the output column.
    original_name = spec[: len(match["name"])]
    option_text = spec[spec.index("(") :] if match["options"] is not None else ""
    if len(cutoffs) == 1:
        defaults = convention.defaults_for(canonical, cutoffs[0])
        return [(spec, family.make(cutoffs[0], options, text, defaults))]
    return [
        (
            f"{original_name}@{k}{option_text}",
            family.make(k, options, text, convention.defaults_for(canonical, k)),
        )
        for k in cutoffs
    ]


def split_metric_list(text: str) -> list[str]:
    """Split ``"ndcg@1,5,10,map,err@5(max_grade=3,transform=exp)"`` into metric strings.

    A comma separates metrics unless it sits inside parentheses or braces, or the next part is a
    cutoff (digits) continuing a sweep.

    Examples
    --------
    >>> split_metric_list("ndcg@1,5,10,map,err@5(max_grade=3,transform=exp)")
    ['ndcg@1,5,10', 'map', 'err@5(max_grade=3,transform=exp)']
    """
    merged: list[str] = []
    for part in _split_top_level(text):
        if part[0].isdigit() and merged and "@" in merged[-1]:
            merged[-1] = f"{merged[-1]},{part}"
        else:
            merged.append(part)
    return merged


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
class MetricRequest:
    """A metric asked for by a namespace method, e.g. ``ndcg(k=[5, 10], gain="exp")``.

    It is resolved inside ``evaluate`` so that the ``convention=`` preset applies to it.
    """

    family: str
    k: int | Sequence[int] | None
    options: dict[str, Any]


def build_metrics(
    name: str,
    k: int | Sequence[int] | None,
    options: dict[str, Any],
    convention: Convention = _TREC,
) -> list[Metric]:
    """Metric objects for a namespace method call such as ``ndcg(k=[5, 10], gain="exp")``."""
    family = _FAMILIES[name]
    convention.defaults_for(name)  # a family the preset lacks raises before k is checked
    cutoffs: list[int | None] = list(k) if isinstance(k, (list, tuple)) else [k]  # type: ignore[list-item]
    if not cutoffs:
        msg = f"k= for {name!r} must be a positive int or a non-empty list of them"
        raise InvalidOptionError(msg)
    if family.cutoff == "required" and None in cutoffs:
        msg = f"metric {name!r} needs a cutoff, e.g. {name}(k=10)"
        raise InvalidOptionError(msg)
    return [
        family.make(cutoff, options, name, convention.defaults_for(name, cutoff))
        for cutoff in cutoffs
    ]


def resolve_metrics(specs: object, convention: Convention = _TREC) -> list[tuple[str, Metric]]:
    """Turn the user's metric list into ``(output column name, Metric)`` pairs.

    Strings keep their exact spelling as the output name (a sweep gives one name per cutoff);
    Metric objects use ``Metric.name``.
    """
    if isinstance(specs, (str, Metric, MetricRequest)):
        specs = [specs]
    if not isinstance(specs, (list, tuple)) or not specs:
        msg = f"metrics must be a non-empty list such as ['ndcg@10', 'map'], got {specs!r}"
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
