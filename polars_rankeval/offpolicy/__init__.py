"""Off-policy evaluation: what a new ranker would have earned, from logs another one produced.

* :func:`off_policy`: bandit estimators (IPS, SNIPS, DM, DR, SNDR, Switch-DR, DR-OS, Replay)
  on a log of logged decisions, or of a context's candidate actions;
* :func:`slate_off_policy`: slate and ranking estimators (SIPS, IIPS, RIPS, their
  self-normalised variants, the pseudo-inverse, Cascade-DR) on one row per slate position;
* :func:`click_metrics` and :func:`examination_from_randomized`: click metrics of a new
  ranking weighted by inverse examination probability under a position-based model;
* :func:`interleaving`: team-draft and multileaving credit, wins, losses and a sign test.

Every estimate comes with its standard error, interval and weight diagnostics, computed once
in :mod:`polars_rankeval.offpolicy._core` from per-row parts that sum across passes and Spark
partitions.
"""

from __future__ import annotations

from polars_rankeval.offpolicy._bandit import off_policy
from polars_rankeval.offpolicy._clicks import click_metrics, examination_from_randomized
from polars_rankeval.offpolicy._interleaving import interleaving
from polars_rankeval.offpolicy._slate import slate_off_policy

__all__ = [
    "click_metrics",
    "examination_from_randomized",
    "interleaving",
    "off_policy",
    "slate_off_policy",
]
