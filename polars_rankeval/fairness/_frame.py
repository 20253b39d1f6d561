"""The frame every fairness measure reads: ranked rows joined to their groups.

A measure is a function ``(FairInput, options) -> LazyFrame`` with the list keys and one
value column per measure. It never ranks, never reads the user's tables and never checks
their columns: :func:`polars_rankeval.fairness._prepare.fair_input` does that once, for
``evaluate`` (one ranking per query) and for :func:`polars_rankeval.expected_exposure`
(several sampled rankings per query) alike.

``FairInput.rows`` has one row per (ranked row, group the item belongs to), with

* the list keys (``keys``: the ``by`` columns, then the query column);
* ``SAMPLE`` (Int64): the sampled ranking the row belongs to; 0 when each query has one ranking;
* ``RANK`` (Int64): the row's rank in its ranking (1 = top), the engine's tie rule
  (score descending, ties by the item's string form descending, as trec_eval);
* ``N`` (Int64): the number of ranked rows of that ranking (before any cutoff);
* ``ITEM`` (String): the item id as a string;
* ``LABEL`` (Float64): the relevance label, null when unjudged;
* ``RELEVANT`` (Boolean): ``label >= relevance_level`` (False when unjudged);
* ``NUM_REL`` (Int64): the query's relevant judged items, retrieved or not (the ideal list's
  length for nDCG);
* ``JUDGED`` (Boolean): the query has a judged item (a label ``>= 0``), retrieved or not:
  ``evaluate`` evaluates a label-reading metric on such queries only;
* ``GROUP`` (String): one group of the item; with several dimensions, the intersectional cell
  (the dimensions' groups joined by ``GROUP_SEPARATOR``, in dimension order); null when the item
  is not in the groups table (each measure applies its anchor's rule: TREC Task 1 drops such
  items, the others refuse them);
* ``WEIGHT`` (Float64): the item's membership weight in that group; an item's weights sum to
  1 (an intersectional cell's weight is the product of its dimensions' weights); null with
  ``GROUP``.

``FairInput.target`` has, for every list and every group of the universe, ``SHARE``: the
target share of the group (shares sum to 1 over the groups of a list). ``population`` gives
each group's share of the groups table's items (``SHARE``) and its size in items
(``SIZE``: the sum of the items' weights, FairRankTune's per-group item count).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

PREFIX = "__rke_fair_"
SAMPLE = PREFIX + "sample"
RANK = PREFIX + "rank"
N = PREFIX + "n"
ITEM = PREFIX + "item"
LABEL = PREFIX + "label"
RELEVANT = PREFIX + "relevant"
NUM_REL = PREFIX + "num_rel"
JUDGED = PREFIX + "judged"
GROUP = PREFIX + "group"
WEIGHT = PREFIX + "weight"
SHARE = PREFIX + "share"
SIZE = PREFIX + "size"
VALUE = PREFIX + "value"

#: Joins an intersectional cell's per-dimension groups, e.g. ``"female × Europe"``.
GROUP_SEPARATOR = " × "


@dataclass(frozen=True)
class FairInput:
    """Ranked rows with their groups, the target shares and the population (see module doc).

    ``groups`` is the universe: every group (or intersectional cell) of the groups table and
    the target, sorted; a group absent from a list has exposure 0 there.
    """

    rows: pl.LazyFrame
    keys: list[str]
    groups: list[str]
    target: pl.LazyFrame
    population: pl.LazyFrame
