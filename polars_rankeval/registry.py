"""Metric strings: ``"ndcg@10"``, ``"map"``, ``"P_5"`` ... parsed into :class:`Metric` objects."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass

from polars_rankeval import metrics as m
from polars_rankeval.errors import InvalidOptionError, UnknownMetricError
from polars_rankeval.metrics._base import Metric


@dataclass(frozen=True)
class _Family:
    build: Callable[[int | None], Metric]
    cutoff: str  # "required", "optional" or "none"


def _no_cutoff(builder: Callable[[], Metric]) -> Callable[[int | None], Metric]:
    return lambda _k: builder()


def _required(builder: Callable[[int], Metric]) -> Callable[[int | None], Metric]:
    def build(k: int | None) -> Metric:
        if k is None:  # the parser checks this first; kept for direct calls
            msg = "this metric needs a cutoff k"
            raise InvalidOptionError(msg)
        return builder(k)

    return build


_FAMILIES: dict[str, _Family] = {
    "p": _Family(_required(m.precision), "required"),
    "recall": _Family(_required(m.recall), "required"),
    "success": _Family(_required(m.success), "required"),
    "hit_rate": _Family(_required(lambda k: m.success(k, name="hit_rate")), "required"),
    "hits": _Family(_required(m.hits), "required"),
    "f1": _Family(_required(m.f1), "required"),
    "judged": _Family(_required(m.judged), "required"),
    "map": _Family(m.average_precision, "optional"),
    "mrr": _Family(m.reciprocal_rank, "optional"),
    "ndcg": _Family(m.ndcg, "optional"),
    "dcg": _Family(m.dcg, "optional"),
    "r_precision": _Family(_no_cutoff(m.r_precision), "none"),
    "bpref": _Family(_no_cutoff(m.bpref), "none"),
    "num_ret": _Family(_no_cutoff(m.num_ret), "none"),
    "num_rel": _Family(_no_cutoff(m.num_rel), "none"),
    "num_rel_ret": _Family(_no_cutoff(m.num_rel_ret), "none"),
    "num_q": _Family(_no_cutoff(m.num_q), "none"),
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
}

_TREC_CUTOFF = re.compile(r"^(?P<name>[a-z_\-]+?)_(?P<k>\d+)$")


def known_metrics() -> list[str]:
    """All metric names and aliases accepted in metric strings."""
    return sorted({*_FAMILIES, *_ALIASES})


def _suggest(name: str) -> str:
    candidates = [
        f"{n}@k" if _FAMILIES[_ALIASES.get(n, n)].cutoff == "required" else n
        for n in known_metrics()
    ]
    close = difflib.get_close_matches(name, [c.removesuffix("@k") for c in candidates], n=3)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return f"unknown metric {name!r}{hint} Known metrics: {', '.join(candidates)}"


def parse_metric(text: str) -> Metric:
    """Parse one metric string (case-insensitive).

    Examples
    --------
    >>> parse_metric("NDCG@10").name
    'ndcg@10'
    >>> parse_metric("P_5").name
    'p@5'
    >>> parse_metric("recip_rank").name
    'mrr'
    """
    if not isinstance(text, str):
        msg = f"a metric must be a string such as 'ndcg@10' or a Metric object, got {text!r}"
        raise InvalidOptionError(msg)
    spec = text.strip().lower()
    name, _, cutoff_text = spec.partition("@")
    k: int | None = None
    if cutoff_text:
        if not re.fullmatch(r"\d+", cutoff_text):
            msg = f"cutoff in metric {text!r} must be a positive integer, e.g. '{name}@10'"
            raise InvalidOptionError(msg)
        k = int(cutoff_text)
    elif (match := _TREC_CUTOFF.match(name)) and _ALIASES.get(
        match["name"], match["name"]
    ) in _FAMILIES:
        # trec_eval spelling: P_5, ndcg_cut_10, map_cut_100, recall_5, success_1
        name, k = match["name"], int(match["k"])
    canonical = _ALIASES.get(name, name)
    family = _FAMILIES.get(canonical)
    if family is None:
        raise UnknownMetricError(_suggest(name))
    if family.cutoff == "none" and "@" in spec:
        msg = f"metric {canonical!r} takes no cutoff; use {canonical!r} instead of {text!r}"
        raise InvalidOptionError(msg)
    if family.cutoff == "required" and k is None:
        msg = f"metric {canonical!r} needs a cutoff, e.g. '{canonical}@10'"
        raise InvalidOptionError(msg)
    return family.build(k)


def resolve_metrics(specs: object) -> list[tuple[str, Metric]]:
    """Turn the user's metric list into ``(output column name, Metric)`` pairs.

    Strings keep their exact spelling as the output name; Metric objects use ``Metric.name``.
    """
    if isinstance(specs, (str, Metric)):
        specs = [specs]
    if not isinstance(specs, (list, tuple)) or not specs:
        msg = f"metrics must be a non-empty list such as ['ndcg@10', 'map'], got {specs!r}"
        raise InvalidOptionError(msg)
    resolved: list[tuple[str, Metric]] = []
    for spec in specs:
        metric = spec if isinstance(spec, Metric) else parse_metric(spec)
        label = spec if isinstance(spec, str) else metric.name
        resolved.append((label, metric))
    labels = [label for label, _ in resolved]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        msg = f"metric names repeat in the list: {repeated}; each output column needs one name"
        raise InvalidOptionError(msg)
    return resolved
