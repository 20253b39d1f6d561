"""Fairness of exposure: which groups of items a ranking shows, and how far from a target.

The measures are metrics of :func:`~polars_rankeval.evaluate` (``awrf``, ``ndcg_awrf``,
``ee_l``/``ee_d``/``ee_r``, ``ndkl``, ``skew@k``, ``min_skew@k``, ``max_skew@k``, ``exp``,
``expu``: :mod:`polars_rankeval.metrics.fairness`), read with ``groups=`` and
``group_target=``. This package holds the shared input stage (:mod:`._groups`,
:mod:`._prepare`, the contract in :mod:`._frame`) and the measures' implementations, one module
per anchor: TREC Fair Ranking 2022 (:mod:`._trec`), FairRankTune (:mod:`._toolkit`), Geyik et
al. (:mod:`._geyik`).
"""

from __future__ import annotations

from polars_rankeval.fairness._exposure import expected_exposure, group_exposure

__all__ = ["expected_exposure", "group_exposure"]
