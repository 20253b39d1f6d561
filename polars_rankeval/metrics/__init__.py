"""Metric families. Each module builds :class:`~polars_rankeval.metrics._base.Metric` objects.

The builders are also the typed way to pass options inside one ``evaluate`` call::

    rke.evaluate(log, ["map", rke.metrics.ndcg(10, gain="exp"), rke.metrics.err(10)])

Every family is also reachable by its metric string's spelling: ``rke.metrics.map`` is
:func:`average_precision`, ``rke.metrics.mrr`` is :func:`reciprocal_rank`, ``rke.metrics.p`` is
:func:`precision` (the aliases below; ``tests/api/test_vocabulary.py`` checks them against the
families table in ``polars_rankeval/_names/families.py``).
"""

from __future__ import annotations

from polars_rankeval.metrics._base import Metric
from polars_rankeval.metrics.average_precision import (
    average_precision,
    inferred_average_precision,
    mean_average_recall,
    reciprocal_rank,
)
from polars_rankeval.metrics.bpref import bpref
from polars_rankeval.metrics.classification import auc, fall_out, gauc
from polars_rankeval.metrics.compat import accuracy, compat, ncg
from polars_rankeval.metrics.correlation import kendall_tau, spearman
from polars_rankeval.metrics.counts import num_q, num_rel, num_rel_ret, num_ret
from polars_rankeval.metrics.coverage import coverage, entropy, gini, personalization
from polars_rankeval.metrics.cutoff import f1, hits, judged, precision, r_precision, recall, success
from polars_rankeval.metrics.cwl import bpm, insq, inst, nerr8, nerr9, nerr10, nerr11, sdcg
from polars_rankeval.metrics.dcg import dcg, ndcg
from polars_rankeval.metrics.diversity import (
    categorical_diversity,
    ild,
    ils,
    serendipity,
    unexpectedness,
)
from polars_rankeval.metrics.fairness import (
    awrf,
    ee_d,
    ee_l,
    ee_r,
    exp,
    expru,
    expu,
    max_skew,
    min_skew,
    ndcg_awrf,
    ndkl,
    skew,
)
from polars_rankeval.metrics.geometric import gm_bpref, gm_map
from polars_rankeval.metrics.intent_aware import (
    alpha_dcg,
    alpha_ndcg,
    err_ia,
    map_ia,
    nerr_ia,
    nnrbp,
    nrbp,
    p_ia,
    strec,
)
from polars_rankeval.metrics.interpolated import (
    eleven_pt_avg,
    iprec_at_recall,
    iprec_at_recall_levels,
)
from polars_rankeval.metrics.ntcir import (
    err_ntcir,
    msndcg,
    ncu,
    ndcg_orig,
    nerr_ntcir,
    o_measure,
    p_measure,
    p_plus,
    q_measure,
)
from polars_rankeval.metrics.popularity import aclt, aplt, arp, novelty, surprisal, unseen
from polars_rankeval.metrics.propensity_scored import psndcg, psp
from polars_rankeval.metrics.rank_position import first_relevant_position, mean_rank
from polars_rankeval.metrics.trec_gain import bin_g, g, ndcg_rel, rbp_resid, rndcg
from polars_rankeval.metrics.trec_sets import (
    num_nonrel_judged_ret,
    r_precision_mult,
    relative_precision,
    set_f,
    set_map,
    set_precision,
    set_recall,
    set_relative_precision,
    unjudged,
    utility,
)
from polars_rankeval.metrics.user_model import err, rbp


def hit_rate(k: int) -> Metric:
    """``hit_rate@k``: :func:`success` under the name recommender libraries use.

    >>> hit_rate(10).name
    'hit_rate@10'
    """
    return success(k, name="hit_rate")


# The families' string spellings (the families table's ``ident``), for the builders named
# otherwise: one name per family, whichever vocabulary the user comes from.
p = precision
map = average_precision  # the metric string's name (builtins.map is not used in this module)
mrr = reciprocal_rank
mar = mean_average_recall
frp = first_relevant_position
infap = inferred_average_precision
bing = bin_g
set_p = set_precision
set_relative_p = set_relative_precision
relative_p = relative_precision
rprec_mult = r_precision_mult
unj = unjudged

__all__ = [
    "Metric",
    "accuracy",
    "aclt",
    "alpha_dcg",
    "alpha_ndcg",
    "aplt",
    "arp",
    "auc",
    "average_precision",
    "awrf",
    "bin_g",
    "bing",
    "bpm",
    "bpref",
    "categorical_diversity",
    "compat",
    "coverage",
    "dcg",
    "ee_d",
    "ee_l",
    "ee_r",
    "eleven_pt_avg",
    "entropy",
    "err",
    "err_ia",
    "err_ntcir",
    "exp",
    "expru",
    "expu",
    "f1",
    "fall_out",
    "first_relevant_position",
    "frp",
    "g",
    "gauc",
    "gini",
    "gm_bpref",
    "gm_map",
    "hit_rate",
    "hits",
    "ild",
    "ils",
    "infap",
    "inferred_average_precision",
    "insq",
    "inst",
    "iprec_at_recall",
    "iprec_at_recall_levels",
    "judged",
    "kendall_tau",
    "map",
    "map_ia",
    "mar",
    "max_skew",
    "mean_average_recall",
    "mean_rank",
    "min_skew",
    "mrr",
    "msndcg",
    "ncg",
    "ncu",
    "ndcg",
    "ndcg_awrf",
    "ndcg_orig",
    "ndcg_rel",
    "ndkl",
    "nerr8",
    "nerr9",
    "nerr10",
    "nerr11",
    "nerr_ia",
    "nerr_ntcir",
    "nnrbp",
    "novelty",
    "nrbp",
    "num_nonrel_judged_ret",
    "num_q",
    "num_rel",
    "num_rel_ret",
    "num_ret",
    "o_measure",
    "p",
    "p_ia",
    "p_measure",
    "p_plus",
    "personalization",
    "precision",
    "psndcg",
    "psp",
    "q_measure",
    "r_precision",
    "r_precision_mult",
    "rbp",
    "rbp_resid",
    "recall",
    "reciprocal_rank",
    "relative_p",
    "relative_precision",
    "rndcg",
    "rprec_mult",
    "sdcg",
    "serendipity",
    "set_f",
    "set_map",
    "set_p",
    "set_precision",
    "set_recall",
    "set_relative_p",
    "set_relative_precision",
    "skew",
    "spearman",
    "strec",
    "success",
    "surprisal",
    "unexpectedness",
    "unj",
    "unjudged",
    "unseen",
    "utility",
]
