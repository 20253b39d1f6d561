"""Metric families. Each module builds :class:`~polars_rankeval.metrics._base.Metric` objects."""

from __future__ import annotations

from polars_rankeval.metrics._base import Metric
from polars_rankeval.metrics.average_precision import average_precision, reciprocal_rank
from polars_rankeval.metrics.bpref import bpref
from polars_rankeval.metrics.counts import num_q, num_rel, num_rel_ret, num_ret
from polars_rankeval.metrics.cutoff import f1, hits, judged, precision, r_precision, recall, success
from polars_rankeval.metrics.dcg import dcg, ndcg

__all__ = [
    "Metric",
    "average_precision",
    "bpref",
    "dcg",
    "f1",
    "hits",
    "judged",
    "ndcg",
    "num_q",
    "num_rel",
    "num_rel_ret",
    "num_ret",
    "precision",
    "r_precision",
    "recall",
    "reciprocal_rank",
    "success",
]
