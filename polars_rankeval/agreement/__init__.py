"""Meta-evaluation: do two leaderboards rank systems alike, do two judges label items alike.

* :func:`rank_correlation`: the correlation between two system rankings (two metrics, two sets
  of qrels, a human and an LLM judge), from :func:`~polars_rankeval.evaluate` or
  :func:`~polars_rankeval.compare` outputs: Kendall's τ-b, Yilmaz, Aslam & Robertson's τ_AP
  (SIGIR 2008; Urbano & Marrero's τ_AP,a for ties in the evaluated ranking, ICTIR 2017), the
  symmetric tie-aware τ_AP,b (Urbano & Marrero; TREC AutoJudge's ``tauap_b``), Spearman and
  Pearson, with the system pairs the two rankings order differently.
* :func:`label_agreement`: two judges' labels of the same items (two qrels), per query and
  overall: Cohen's κ (unweighted, linear and quadratic weights), Krippendorff's α (nominal and
  ordinal), the Jaccard index of the relevant sets, and the items only one side judged.
"""

from __future__ import annotations

from polars_rankeval.agreement.correlation import (
    METHODS,
    RankCorrelation,
    rank_correlation,
    tau_ap,
    tau_ap_b,
)
from polars_rankeval.agreement.labels import label_agreement

__all__ = [
    "METHODS",
    "RankCorrelation",
    "label_agreement",
    "rank_correlation",
    "tau_ap",
    "tau_ap_b",
]
