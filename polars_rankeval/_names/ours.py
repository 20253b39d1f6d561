"""Our metric grammar: ``"ndcg@10"``, ``"ndcg@1,5,10"``, ``"err@10(max_grade=3)"``, ``"P_5"``.

Grammar: ``name[@k[,k...]][(option=value[,option=value...])]``, case-insensitive. A list of
cutoffs is a sweep: one metric (and one output column) per cutoff, all computed from the same
ranking pass. Options are the keyword arguments of the metric's builder in
:mod:`polars_rankeval.metrics`, e.g. ``gain``, ``log_base``, ``discount``, ``ideal`` for
``ndcg``; a mapping is written ``gain={0:0,1:1,2:3}``. trec_eval's printed names with an
integer cutoff (``P_5``, ``ndcg_cut_10``) read as ``p@5``, ``ndcg@10``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from polars_rankeval._names.did_you_mean import fixed_cutoff, unreadable_hint
from polars_rankeval._names.families import ALIASES, Family
from polars_rankeval._names.ir_measures import _FAMILIES as _IRM_FAMILIES
from polars_rankeval._names.trec_eval import TREC_MEASURES
from polars_rankeval.conventions import Convention
from polars_rankeval.errors import InvalidOptionError, UnknownMetricError
from polars_rankeval.metrics._base import Metric

_SPEC = re.compile(
    # A name may start with a digit: trec_eval's 11pt_avg.
    r"^(?P<name>[a-z0-9][a-z0-9_\-]*?)(?:@(?P<cutoffs>[^()]*))?(?:\((?P<options>.*)\))?$",
)
_TREC_CUTOFF = re.compile(r"^(?P<name>[a-z][a-z0-9_\-]*?)_(?P<k>\d+)$")


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
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
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
        options[key.strip().lower()] = _parse_value(value.strip(), spec)
    return options


def _parse_cutoffs(text: str, spec: str) -> list[int]:
    cutoffs = []
    for part in text.split(","):
        if not re.fullmatch(r"\s*\d+\s*", part):
            hint, fixed = "", fixed_cutoff(part)
            if fixed is not None:  # map@1O: the cutoffs follow the last "@"
                head, _, tail = spec.rpartition("@")
                tail = re.sub(re.escape(part.strip()), fixed, tail, count=1, flags=re.I)
                hint = f"; did you mean {f'{head}@{tail}'!r}?"
            msg = (
                f"cutoff in metric {spec!r} must be positive integers, e.g. 'ndcg@10' or "
                f"'@1,5,10'{hint}"
            )
            raise InvalidOptionError(msg)
        digits = part.strip().lstrip("0")
        if len(digits) > 19:
            # Python refuses int() of a string over 4300 digits (a bare ValueError); any k
            # over 19 digits is past 2^63-1, which the metric builders' check refuses.
            # The metric's name only: echoing thousands of digits helps no one.
            msg = (
                f"cutoff k for {spec.split('@', 1)[0].strip()!r} must be at most {2**63 - 1} "
                f"(2^63-1, the Int64 maximum), got a {len(digits)}-digit number"
            )
            raise InvalidOptionError(msg)
        cutoffs.append(int(part))
    if len(set(cutoffs)) != len(cutoffs):
        msg = f"cutoffs repeat in metric {spec!r}"
        raise InvalidOptionError(msg)
    return cutoffs


def parse_ours(
    text: str,
    convention: Convention,
    families: Mapping[str, Family],
    suggest: Callable[[str, str], str],
) -> list[tuple[str, Metric]]:
    """Read one of our metric strings into ``(output name, Metric)`` pairs (several for a sweep).

    ``families`` is the families table to look names up in; ``suggest`` words the error of an
    unknown name.
    """
    spec = text.strip()
    match = _SPEC.match(spec.lower())
    if match is None:
        hint = unreadable_hint(spec, _IRM_FAMILIES)
        msg = f"cannot read metric {text!r}; expected e.g. 'ndcg@10', 'map' or 'ndcg@5,10'{hint}"
        raise InvalidOptionError(msg)
    name = match["name"]
    cutoffs: list[int | None] = [None]
    if match["cutoffs"] is not None:
        cutoffs = list(_parse_cutoffs(match["cutoffs"], text))
    elif (trec := _TREC_CUTOFF.match(name)) and ALIASES.get(trec["name"], trec["name"]) in (
        families
    ):
        # trec_eval spelling: P_5, ndcg_cut_10, map_cut_100, recall_5, success_1
        name, cutoffs = trec["name"], list(_parse_cutoffs(trec["k"], trec["name"]))
    canonical = ALIASES.get(name, name)
    family = families.get(canonical)
    if family is None:
        raise UnknownMetricError(suggest(spec[: len(match["name"])], spec))
    if family.cutoff == "none" and match["cutoffs"] is not None:
        msg = f"metric {canonical!r} takes no cutoff; use {canonical!r} instead of {text!r}"
        raise InvalidOptionError(msg)
    if family.cutoff == "required" and cutoffs == [None]:
        msg = f"metric {canonical!r} needs a cutoff, e.g. '{canonical}@10'"
        if TREC_MEASURES.get(spec):  # trec_eval's -m P: its default cutoffs, written out
            msg += f" (trec_eval's -m {spec} is '{spec}.{TREC_MEASURES[spec]}', which reads too)"
        raise InvalidOptionError(msg)
    # option values keep their case (a column or system name); names and choices do not matter
    options = _parse_options(
        spec[match.start("options") : match.end("options")] if match["options"] else None, text
    )
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
