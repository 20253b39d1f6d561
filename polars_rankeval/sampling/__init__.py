"""Sampled evaluation done right: stored negatives, sampled and corrected metrics, side by side.

* :func:`sample_negatives`: seeded negative samples, reproducible across runs, machines, row
  orders and library versions (uniform or popularity-based; per query, per positive or pooled;
  RecBole's and NCF's protocols by name), to write once and reuse.
* :func:`sampled_log`: the log :func:`~polars_rankeval.evaluate` scores: each list's positives
  and negatives with the systems' scores; sampled metrics are evaluate's metrics on it.
* :func:`sampled_correction`: Krichene & Rendle's corrected metric (KDD 2020) for lists with
  one positive: the value to credit for each sampled rank.
* :func:`sampled_vs_full`: each system's full and sampled (and corrected) value, both
  leaderboards' ranks and their rank correlation.
"""

from __future__ import annotations

from polars_rankeval.sampling._compare import SampledVsFull, sampled_vs_full
from polars_rankeval.sampling._correction import sampled_correction
from polars_rankeval.sampling._log import sampled_log
from polars_rankeval.sampling._negatives import PROTOCOLS, sample_negatives

__all__ = [
    "PROTOCOLS",
    "SampledVsFull",
    "sample_negatives",
    "sampled_correction",
    "sampled_log",
    "sampled_vs_full",
]
