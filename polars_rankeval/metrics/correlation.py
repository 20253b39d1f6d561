"""Rank correlation per query between score and relevance: ``spearman`` and ``kendall_tau``.

Placeholder: implemented in a follow-up change.
"""

from __future__ import annotations

from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.metrics._base import Metric


def spearman() -> Metric:
    """Spearman's rho between score and label over each query's retrieved rows."""
    msg = "spearman is not implemented yet"
    raise InvalidOptionError(msg)


def kendall_tau() -> Metric:
    """Kendall's tau-b between score and label over each query's retrieved rows."""
    msg = "kendall_tau is not implemented yet"
    raise InvalidOptionError(msg)
