"""Similarity metric strings (``rbo(p=0.9)``, ``jaccard@10``...) and the shared column names."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

import polars as pl

from polars_rankeval._engine.options import check_choice
from polars_rankeval.errors import InvalidOptionError, UnknownMetricError

Ties = Literal["trec", "w", "a", "b"]
TIES: tuple[Ties, ...] = ("trec", "w", "a", "b")
OUTPUTS = ("ext", "min", "max", "res")
_KINDS = ("rbo", "jaccard", "overlap", "kendall_tau")
_PATTERN = re.compile(r"^(?P<name>[a-z_]+)(?:@(?P<k>\d+))?(?:\((?P<options>[^()]*)\))?$")

# Internal column names (prefixed so they cannot clash with the user's columns).
_A, _B, _SYS = "__sim_a", "__sim_b", "__sim_system"
_ITEM, _POS, _TOP, _SIZE, _LEN = "__item", "__pos", "__top", "__size", "__len"
_D = "__depth"


@dataclass(frozen=True)
class Measure:
    """One parsed metric string: its kind, cutoff and options, and its output column name."""

    label: str
    kind: str
    k: int | None = None
    p: float | pl.Expr = 0.9
    output: str = "ext"
    ties: Ties | None = None


def parse_measure(text: object) -> Measure:
    """Parse ``rbo(p=0.9,output=min,ties=a)``, ``jaccard@10``, ``overlap@10``, ``kendall_tau@10``.

    Examples
    --------
    >>> parse_measure("rbo(p=0.8,output=min)")
    Measure(label='rbo(p=0.8,output=min)', kind='rbo', k=None, p=0.8, output='min', ties=None)
    >>> parse_measure("jaccard@10").k
    10
    """
    if not isinstance(text, str):
        msg = f"a similarity metric must be a string such as 'rbo(p=0.9)', got {text!r}"
        raise UnknownMetricError(msg)
    label = "".join(text.split())
    found = _PATTERN.match(label.lower())
    if found is None or found["name"] not in _KINDS:
        msg = (
            f"unknown similarity metric {text!r}; expected rbo(p=..,output=ext|min|max|res,"
            "ties=trec|w|a|b), jaccard[@k], overlap@k or kendall_tau@k"
        )
        raise UnknownMetricError(msg)
    kind, cutoff = found["name"], found["k"]
    k = int(cutoff) if cutoff is not None else None
    if kind == "rbo" and k is not None:
        msg = f"{text!r}: rbo takes no @k (its depth is the lists' own; set p= instead)"
        raise InvalidOptionError(msg)
    if kind in ("overlap", "kendall_tau") and k is None:
        msg = f"{text!r}: {kind} needs a cutoff, e.g. {kind}@10"
        raise InvalidOptionError(msg)
    if k is not None and k < 1:
        msg = f"{text!r}: the cutoff @k must be a positive integer, got {k}"
        raise InvalidOptionError(msg)
    options: dict[str, str] = {}
    for part in (found["options"] or "").split(","):
        if not part:
            continue
        name, sep, value = part.partition("=")
        if not sep or not name or not value:
            msg = f"{text!r}: options are written name=value, got {part!r}"
            raise InvalidOptionError(msg)
        options[name] = value
    if kind != "rbo":
        if options:
            msg = f"{text!r}: {kind} takes no options, got {sorted(options)}"
            raise InvalidOptionError(msg)
        return Measure(label=label, kind=kind, k=k)
    return _rbo_measure(text, label, options)


def _rbo_measure(text: str, label: str, options: dict[str, str]) -> Measure:
    unknown = sorted(set(options) - {"p", "output", "ties"})
    if unknown:
        msg = f"{text!r}: rbo's options are p=, output= and ties=, got {unknown}"
        raise InvalidOptionError(msg)
    try:
        p = float(options.get("p", "0.9"))
    except ValueError:
        p = math.nan
    if not 0 < p < 1:
        msg = f"{text!r}: option p= must be a number in (0, 1), got {options.get('p')!r}"
        raise InvalidOptionError(msg)
    output = check_choice("output", options.get("output", "ext"), OUTPUTS)
    ties = check_choice("ties", options["ties"], TIES) if "ties" in options else None
    return Measure(label=label, kind="rbo", p=p, output=output, ties=ties)
