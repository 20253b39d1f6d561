"""Plots for "is system B better than A?": Altair charts drawn from small Polars frames.

Every chart function has a ``*_data`` twin that returns the tidy Polars frame the chart draws,
so matplotlib or plotly users can draw it themselves. The data is aggregated in Polars first
(means, bins, sorted and binned differences), so a chart holds a few hundred rows whatever the
size of the log, well under Altair's 5,000-row limit.

=================================  ===================================================
chart                              what it shows
=================================  ===================================================
:func:`metric_at_k`                a metric against its cutoff ``k``, one curve per system
:func:`per_query_delta`            sorted per-query differences system − baseline, with
                                   the win/tie/loss counts
:func:`systems`                    the output of :func:`polars_rankeval.compare`: each
                                   system's mean difference from the baseline with its
                                   interval, significant ones filled
:func:`distribution`               histogram of the per-query values of each system
:func:`precision_recall`           trec_eval's interpolated precision at recall levels
                                   0.0, 0.1, ..., 1.0 (``iprec_at_recall``)
:func:`group_exposure`             each group's share of attention with its interval
                                   against its target (:func:`polars_rankeval.group_exposure`)
=================================  ===================================================

Altair is an optional dependency (``pip install "polars-rankeval[plot]"``). It is imported
only when a chart is drawn, so ``import polars_rankeval`` and the ``*_data`` functions need
Polars only.
"""

from __future__ import annotations

# isort: off
# One name a line, in the order plot.py defined them: the API reference (mkdocstrings,
# members_order: source) lists the package's members in the order of these imports.
from polars_rankeval.plot._curves import RECALL_LEVELS
from polars_rankeval.plot._style import save
from polars_rankeval.plot._curves import metric_at_k_data
from polars_rankeval.plot._curves import metric_at_k
from polars_rankeval.plot._per_query import per_query_delta_data
from polars_rankeval.plot._per_query import per_query_delta
from polars_rankeval.plot._comparison import systems_data
from polars_rankeval.plot._comparison import systems
from polars_rankeval.plot._distribution import distribution_data
from polars_rankeval.plot._distribution import distribution
from polars_rankeval.plot._curves import precision_recall_data
from polars_rankeval.plot._curves import precision_recall
from polars_rankeval.plot._exposure import group_exposure_data
from polars_rankeval.plot._exposure import group_exposure
# isort: on

# Also reachable as rke.plot.<name> (as when plot was one module), but not in __all__.
from polars_rankeval.comparison._pairing import SYSTEM_SEPARATOR as SYSTEM_SEPARATOR
from polars_rankeval.plot._distribution import OVERLAY_MAX as OVERLAY_MAX
from polars_rankeval.plot._per_query import TIE_TOLERANCE as TIE_TOLERANCE
from polars_rankeval.plot._style import HEIGHT as HEIGHT
from polars_rankeval.plot._style import WIDTH as WIDTH

__all__ = [
    "RECALL_LEVELS",
    "distribution",
    "distribution_data",
    "group_exposure",
    "group_exposure_data",
    "metric_at_k",
    "metric_at_k_data",
    "per_query_delta",
    "per_query_delta_data",
    "precision_recall",
    "precision_recall_data",
    "save",
    "systems",
    "systems_data",
]
