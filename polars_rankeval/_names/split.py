"""Metric lists written as one string: ``"ndcg@10,map"`` is ``["ndcg@10", "map"]``.

The command line's ``-m`` and every Python entry point that takes metrics (``evaluate``,
``compare``, ``tie_report``, ``discriminative_power``, ``bootstrap``, ``similarity``, the
namespaces, Spark) split a metric string through :func:`split_metrics`, so a list reads the same
everywhere. A comma separates two metrics unless it belongs to one:

* inside parentheses, braces, brackets or quotes: ``rbp(p=0.8,rel=1)``,
  ``nDCG(dcg='exp-log2',judged_only=True)@10``, ``ndcg@10(gain={0:0,1:1,2:3})``;
* before a bare number or ``key=value`` pair, which never starts a metric name: a cutoff sweep
  (``ndcg@5,10``) or trec_eval's parameters (``utility_2,-1,0,0``, ``ndcg_1=3,2=9``,
  ``11pt_avg_.25,.5``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TypeVar

# What continues the previous metric rather than starting one: a number (a sweep's next cutoff,
# perhaps with options, or one of trec_eval's parameters) or one of trec_eval's key=value pairs.
_CONTINUATION = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*(\(.*\))?|\w+=[-+.\deE]+")
_OPENING = {"(": ")", "{": "}", "[": "]"}
T = TypeVar("T")


def _top_level_parts(text: str) -> list[str]:
    """Split on commas outside brackets and quotes (an unbalanced one keeps the rest whole)."""
    parts: list[str] = []
    closers: list[str] = []  # the brackets and quote still open, innermost last
    current: list[str] = []
    for char in text:
        if closers and closers[-1] in "'\"":
            if char == closers[-1]:
                closers.pop()
        elif char in "'\"":
            closers.append(char)
        elif char in _OPENING:
            closers.append(_OPENING[char])
        elif closers and char == closers[-1]:
            closers.pop()
        elif char == "," and not closers:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return parts


def split_metrics(text: str) -> list[str]:
    """Split one comma-separated metric string into metric strings, as ``-m`` does.

    Parameters
    ----------
    text
        E.g. ``"ndcg@10, map"``; spaces around the commas do not matter, empty parts are
        dropped.

    Returns
    -------
    list of str
        The metric strings in the order given, each as written (a sweep stays one string).

    Examples
    --------
    >>> split_metrics("ndcg@10, map")
    ['ndcg@10', 'map']
    >>> split_metrics("ndcg@5,10,rbp(p=0.8,rel=1),nDCG(dcg='exp-log2',judged_only=True)@10")
    ['ndcg@5,10', 'rbp(p=0.8,rel=1)', "nDCG(dcg='exp-log2',judged_only=True)@10"]
    >>> split_metrics("utility_2,-1,0,0,11pt_avg")
    ['utility_2,-1,0,0', '11pt_avg']
    """
    merged: list[str] = []
    for raw in _top_level_parts(text):
        part = raw.strip()
        if not part:
            continue
        if merged and _CONTINUATION.fullmatch(part):
            merged[-1] = f"{merged[-1]},{part}"
        else:
            merged.append(part)
    return merged


def split_each(specs: str | Iterable[str | T]) -> list[str | T]:
    """A metric string, or each string of a list, split by :func:`split_metrics`, in order.

    Other items (Metric objects, similarity measures) pass through; a string with no metric in
    it (``""``) stays, for the parser to refuse by name.

    Examples
    --------
    >>> split_each(["ndcg@5,10,map", "mrr"])
    ['ndcg@5,10', 'map', 'mrr']
    >>> split_each("rbo(p=0.9),jaccard@10")
    ['rbo(p=0.9)', 'jaccard@10']
    """
    items: Iterable[str | T] = [specs] if isinstance(specs, str) else specs
    out: list[str | T] = []
    for spec in items:
        out.extend((split_metrics(spec) or [spec]) if isinstance(spec, str) else [spec])
    return out


def metric_list(specs: object) -> object:
    """The user's ``metrics=``: a string or a list or tuple as :func:`split_each` gives it.

    ``["ndcg@10,map", "mrr"]`` is three metrics. Anything else is returned as is, for the
    caller's own check to name.

    Examples
    --------
    >>> metric_list("ndcg@10,map")
    ['ndcg@10', 'map']
    >>> metric_list(None) is None
    True
    """
    return split_each(specs) if isinstance(specs, (str, list, tuple)) else specs
