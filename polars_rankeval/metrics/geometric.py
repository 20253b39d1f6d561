"""Geometric-mean summaries: trec_eval ``gm_map`` and ``gm_bpref``.

Per query they are plain AP and bpref (trec_eval computes them as ``map`` / ``bpref`` and
prints nothing per query); over queries trec_eval averages ``log(max(value, 0.00001))`` and
exponentiates (``MIN_GEO_MEAN`` in ``trec_eval.h``, ``te_calc_avg_meas_s_gm`` in
``meas_avg.c``), so a query scoring 0 pulls the summary towards 0 without making it 0. With
``-c`` (``missing_queries="zero"``) a judged query without results scores 0, so it counts
``log(0.00001)``, as trec_eval patches in. The summary kind is ``Metric.summary = "gm"``.

``ties="expected"``: ``gm_map``'s per-query values are the expected AP (closed form); the
summary is the geometric mean of those. ``gm_bpref`` refuses it, as ``bpref``.
"""

from __future__ import annotations

from dataclasses import replace

from polars_rankeval.metrics._base import Metric
from polars_rankeval.metrics.average_precision import average_precision
from polars_rankeval.metrics.bpref import bpref

#: trec_eval's floor for a value before its logarithm (``MIN_GEO_MEAN``).
MIN_GEO_MEAN = 0.00001


def gm_map() -> Metric:
    """trec_eval ``gm_map``: AP per query, geometric mean (floored at 1e-5) over queries.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame({"query": ["a", "b"], "item": "x", "score": 1.0, "relevance": [1, 0]})
    >>> # AP 1 and 0: exp((log 1 + log 0.00001) / 2)
    >>> round(rke.evaluate(log, ["gm_map"]).item(), 6)
    0.003162
    """
    return replace(average_precision(), name="gm_map", summary="gm")


def gm_bpref() -> Metric:
    """trec_eval ``gm_bpref``: bpref per query, geometric mean (floored at 1e-5) over queries.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame({"query": ["a", "b"], "item": "x", "score": 1.0, "relevance": [1, 1]})
    >>> rke.evaluate(log, ["gm_bpref"]).item()
    1.0
    """
    return replace(bpref(), name="gm_bpref", summary="gm")
