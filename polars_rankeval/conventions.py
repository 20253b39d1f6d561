"""Convention presets: pick a tool by name and get its definitions.

``convention="trec_eval"`` is the default. Each preset sets the defaults that differ from
trec_eval: metric options (ideal DCG source, gain, AP@k denominator, tie handling, rows scored
``<= 0``) and evaluation settings (what counts as relevant, negative labels, unretrieved rows,
queries with no retrieved row). Anything passed explicitly (a keyword to ``evaluate``, or an
option in a metric string or Metric object) wins over the preset. A metric the tool does not
define raises.

Where a tool's behaviour is arbitrary it is not copied, and the docs say so
(docs/pages/guides/conventions.md): ranx's and torchmetrics' order of tied scores (unstable
sorts), Recommenders' input-order tie-break, and Spark's caller-supplied order; the presets use
trec_eval's tie rule (or the tool's own tie-averaging where it has one).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from polars_rankeval._engine.options import check_choice
from polars_rankeval.errors import InvalidOptionError

ConventionName = Literal[
    "trec_eval",
    "sklearn",
    "ranx",
    "torchmetrics",
    "spark",
    "recommenders",
    "ir_measures",
    "evidently",
    "recbole",
    "replay",
    "torchrec",
    "gdeval",
    "fairranktune",
]
NegativeLabels = Literal["unjudged", "nonrelevant"]
Unretrieved = Literal["count", "drop"]


# The intent-aware (diversity) families, pyndeval's under ir_measures.
_INTENT_AWARE: tuple[str, ...] = ("alpha_ndcg", "alpha_dcg", "err_ia", "nerr_ia", "nrbp")
_INTENT_AWARE += ("nnrbp", "map_ia", "p_ia", "strec")

# Bookkeeping counts exist under every convention.
_COUNTS = frozenset({"num_ret", "num_rel", "num_rel_ret", "num_q"})

# Spark's and Recommenders' relevant set is their ground truth (Spark's label arrays,
# Recommenders' rating_true: the held-out interactions, whose ratings are positive). In a long
# log that set is the rows with a positive label: ``from_lists`` labels a recommended item that
# is not in the ground truth 0 (judged non-relevant, as trec_eval's bpref, judged and infAP
# need), and a log joined from a rating table leaves it null; both are outside the set. Labels
# are whole numbers, so "label > 0" is ``relevance_level=1``, the same rule as every other
# preset. ``relevance_level=0`` ("every labelled row") would make every recommended item of a
# ``from_lists`` log relevant: p@k = 1.0 for a random recommender.
_GROUND_TRUTH: Mapping[str, Any] = {"relevance_level": 1}


@dataclass(frozen=True)
class Convention:
    """One tool's definitions, as defaults for metric options and evaluation settings.

    ``metric_defaults`` is keyed by family (``"mrr"``), or by ``"family@k"`` for defaults that
    apply only with a cutoff (ir_measures' ``RR@k`` is another implementation than its
    ``RR``). ``cutoff_only`` names families the tool defines only with a cutoff.
    """

    name: str
    families: frozenset[str] | None = None
    metric_defaults: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)
    cutoff_only: frozenset[str] = frozenset()

    def defaults_for(self, family: str, k: int | None = None) -> dict[str, Any]:
        """Option defaults this preset gives a metric family (raises if the tool lacks it)."""
        if self.families is not None and family not in self.families | _COUNTS:
            known = ", ".join(sorted(self.families))
            msg = (
                f"convention {self.name!r} has no {family!r} metric (it defines {known}); "
                "evaluate it under another convention"
            )
            raise InvalidOptionError(msg)
        if k is None and family in self.cutoff_only:
            msg = (
                f"convention {self.name!r} defines {family!r} only with a cutoff, "
                f"e.g. '{family}@10'"
            )
            raise InvalidOptionError(msg)
        defaults = dict(self.metric_defaults.get(family, {}))
        if k is not None:
            defaults.update(self.metric_defaults.get(f"{family}@k", {}))
        return defaults

    def without_ties(self) -> Convention:
        """The preset minus its per-metric tie defaults (an explicit ``ties=`` overrides them)."""
        defaults = {
            family: {key: value for key, value in options.items() if key != "ties"}
            for family, options in self.metric_defaults.items()
        }
        return replace(self, metric_defaults=defaults)


# sklearn's y_true and torchmetrics' target give every supplied (scored) row a target and
# nothing else exists: no judgment concept. A scored row without a label (a log joined by hand
# from a rating table leaves the recommended items outside it null) is a 0 target, so a list
# whose rows are all unlabelled is scored (0), as the tools score it, not skipped as
# trec_eval skips a query without judgments.
_EVERY_ROW_A_TARGET: Mapping[str, Any] = {"unretrieved": "drop", "unlabelled": "zero"}

CONVENTIONS: dict[str, Convention] = {
    "trec_eval": Convention("trec_eval"),
    # sklearn.metrics.ndcg_score / dcg_score: each row of y_true/y_score is one query and only
    # the supplied items exist; ties are averaged by default (ignore_ties=False).
    "sklearn": Convention(
        "sklearn",
        families=frozenset({"ndcg", "dcg"}),
        metric_defaults={"ndcg": {"ties": "expected"}, "dcg": {"ties": "expected"}},
        settings=_EVERY_ROW_A_TARGET,
    ),
    # ranx: labels below rel_lvl give no gain in (n)DCG; RBP uses raw labels; negative labels
    # are judged non-relevant (bpref); Qrels-only queries score 0 with make_comparable.
    "ranx": Convention(
        "ranx",
        families=frozenset(
            {"hits", "hit_rate", "success", "p", "recall", "f1", "r_precision", "mrr", "map"}
            | {"ndcg", "dcg", "bpref", "rbp"}
        ),
        metric_defaults={
            "ndcg": {"gain_level": True},
            "dcg": {"gain_level": True},
            "rbp": {"gain": "raw"},
        },
        settings={"negative_labels": "nonrelevant", "missing_queries": "zero"},
    ),
    # torchmetrics retrieval (1.8+): a group holds only the supplied (retrieved) rows; AP@k
    # divides by the relevant rows found in the top k; NDCG averages over ties. Precision,
    # recall, AP and RR zero the target of rows with preds <= 0 (`torch.where(preds > 0,
    # target, 0)`, PR #3160); hit rate, R-precision and NDCG do not.
    "torchmetrics": Convention(
        "torchmetrics",
        families=frozenset({"p", "recall", "hit_rate", "success", "map", "mrr", "ndcg"})
        | frozenset({"r_precision", "auc", "fall_out"}),
        metric_defaults={
            # RetrievalAUROC scores a one-class query 0; RetrievalFallOut's default
            # empty_target_action="pos" scores a query without negatives 1
            "auc": {"empty": "zero"},
            "fall_out": {"empty": "one"},
            "ndcg": {"ties": "expected"},
            "map": {"denominator": "hits", "nonpositive_scores": "nonrelevant"},
            "p": {"nonpositive_scores": "nonrelevant"},
            "recall": {"nonpositive_scores": "nonrelevant"},
            "mrr": {"nonpositive_scores": "nonrelevant"},
        },
        settings=_EVERY_ROW_A_TARGET,
    ),
    # Spark mllib RankingMetrics: the ground-truth array is the relevant set; graded NDCG uses
    # 2^rel - 1; meanAveragePrecisionAt(k) divides by min(R, k). Relevant = in the ground truth
    # = a positive label (_GROUND_TRUTH above).
    "spark": Convention(
        "spark",
        families=frozenset({"p", "recall", "map", "ndcg"}),
        metric_defaults={"ndcg": {"gain": "exp"}, "map": {"denominator": "min_k_R"}},
        settings=_GROUND_TRUTH,
    ),
    # Microsoft Recommenders python_evaluation: every rating_true row is relevant (a positive
    # label, _GROUND_TRUTH above); ndcg_at_k defaults to binary gain; map_at_k divides by
    # min(R, k).
    "recommenders": Convention(
        "recommenders",
        families=frozenset({"p", "recall", "map", "ndcg", "r_precision"})
        | frozenset({"novelty", "coverage", "entropy", "ild", "serendipity"}),
        metric_defaults={
            "ndcg": {"gain": "binary"},
            "map": {"denominator": "min_k_R"},
            # historical_item_novelty: -log2(interactions of i / train rows)
            "novelty": {"popularity": "interactions", "absent": "zero"},
            # catalog_coverage: distinct recommended items / distinct train items
            "coverage": {"of": "train", "intersect": False},
            # distributional_coverage: entropy in bits
            "entropy": {"base": 2.0, "normalize": "none"},
            # diversity and serendipity default to item co-occurrence similarity
            "ild": {"similarity": "cooccurrence", "normalize": "pairs"},
            "serendipity": {"similarity": "cooccurrence"},
        },
        settings=_GROUND_TRUTH,
    ),
    # Evidently's recsys metrics (legacy/metrics/recsys): popularity counts distinct train
    # users; items absent from train are dropped from ARP and novelty (MIUF); Gini over the
    # recommended items; ILD sums cosine distances over pairs and divides by the list length.
    "evidently": Convention(
        "evidently",
        families=frozenset(
            {"arp", "novelty", "coverage", "gini", "personalization", "ild", "serendipity"}
        ),
        metric_defaults={
            "arp": {"popularity": "users", "absent": "drop"},
            "novelty": {"popularity": "users", "absent": "drop"},
            "coverage": {"of": "train", "intersect": True},
            "gini": {"over": "recommended"},
            "ild": {"similarity": "features", "normalize": "length"},
            # SerendipityMetric: 1 - the summed similarity of the relevant top-k items to the
            # user's history, over the history's size
            "serendipity": {"similarity": "features", "normalize": "history"},
        },
    ),
    # RecBole (evaluator/metrics.py): ItemCoverage and GiniIndex over the whole catalog,
    # ShannonEntropy in nats divided by the distinct recommended items, AveragePopularity from
    # interaction counts, TailPercentage, GAUC weighted by positives.
    "recbole": Convention(
        "recbole",
        families=frozenset({"coverage", "gini", "entropy", "arp", "aplt", "gauc"}),
        metric_defaults={
            "coverage": {"of": "catalog"},
            "gini": {"over": "catalog"},
            "entropy": {"base": math.e, "normalize": "distinct"},
            "arp": {"popularity": "interactions", "absent": "zero"},
            "aplt": {"tail": 0.1},
            "gauc": {"weights": "positives", "tie_credit": 0.5, "identical": "keep"},
        },
    ),
    # RePlay (replay/metrics): Surprisal, Novelty (= the unseen share), Coverage over the
    # train items, CategoricalDiversity, Unexpectedness against a baseline's list.
    "replay": Convention(
        "replay",
        families=frozenset(
            {"surprisal", "unseen", "coverage", "categorical_diversity", "unexpectedness"}
        ),
        metric_defaults={
            "coverage": {"of": "train", "intersect": True},
            # Unexpectedness scores a query without a baseline list 0
            "unexpectedness": {"absent": "zero"},
        },
    ),
    # TorchRec's GAUC (session AUC): the unweighted mean over sessions; no half credit for
    # tied scores (argsort); sessions with one class or identical predictions are skipped.
    "torchrec": Convention(
        "torchrec",
        families=frozenset({"gauc"}),
        metric_defaults={
            "gauc": {"weights": "equal", "tie_credit": 0.0, "identical": "skip"},
        },
    ),
    # ir_measures (default provider pipeline): most measures go to pytrec_eval (trec_eval's
    # rules). RR@k goes to the MS MARCO script and Judged@k to its own provider, both sorting by
    # (-score, docid), i.e. ties by item ascending; Judged@k counts every qrels entry
    # (negative labels too) and divides by min(k, n). ERR@k (gdeval) needs a cutoff. A query
    # with judgments but no results gets each measure's default, 0 (Evaluator.iter_calc).
    "ir_measures": Convention(
        "ir_measures",
        families=frozenset({"p", "recall", "success", "hit_rate", "map", "mrr", "ndcg"})
        | frozenset({"r_precision", "bpref", "infap", "judged", "err"})
        # pytrec_eval's set measures, interpolated precision and counts
        | frozenset({"set_p", "set_relative_p", "set_recall", "set_f", "set_map"})
        | frozenset({"iprec_at_recall"})
        # cwl_eval, compat and accuracy providers
        | frozenset({"rbp", "inst", "insq", "bpm", "sdcg", "nerr8", "nerr9", "nerr10", "nerr11"})
        | frozenset({"compat", "accuracy"})
        | frozenset(_INTENT_AWARE),  # pyndeval
        metric_defaults={
            "mrr@k": {"tie_order": "item_asc"},
            "judged": {"denominator": "min_k_n", "tie_order": "item_asc", "count_negative": True},
            # RBP goes to cwl_eval: persistence 0.8, binary relevance
            "rbp": {"p": 0.8, "gain": "binary"},
            # IPrec goes to pytrec_eval, which bundles trec_eval 9: (long) (level * R + 0.9)
            "iprec_at_recall": {"rounding": "v9"},
            # pyndeval ranks by (-score, docid): ties by item ascending
            **{family: {"tie_order": "item_asc"} for family in _INTENT_AWARE},
        },
        settings={"missing_queries": "zero"},
        cutoff_only=frozenset({"err"}),
    ),
}


CONVENTIONS["gdeval"] = Convention(
    # gdeval.pl (TREC Web track 2010-2014; ir_measures' ERR@k and nDCG(dcg='exp-log2')@k):
    # exponential gain over log2(rank + 1), ERR's stop probability (2^g - 1) / 2^4 with the
    # maximum grade fixed at 4, both at a cutoff; ties by document id descending (trec_eval's).
    # Only topics with a positive judgment are scored and averaged (its %seen; topicDone
    # skips the others): a topic judged without a relevant document is left out, not 0.
    "gdeval",
    families=frozenset({"ndcg", "err"}),
    metric_defaults={"ndcg": {"gain": "exp"}, "err": {"max_grade": 4}},
    settings={"empty_queries": "drop"},
    cutoff_only=frozenset({"ndcg", "err"}),
)

CONVENTIONS["fairranktune"] = Convention(
    # FairRankTune 0.0.7 (KCachel/fairranktune): its AWRF is attention-based (geometric
    # attention 100·(1-p)^(rank-1)·p, combined by a combo; p and combo have no default), its
    # NDKL measures a ranking against its own group distribution with 1e-7 added to both
    # distributions; EXP and EXPU are ours under the same names (combo= required).
    "fairranktune",
    families=frozenset({"awrf", "ndkl", "exp", "expu", "expru"}),
    metric_defaults={
        "awrf": {"attention": "geometric"},
        "ndkl": {"distribution": "list", "epsilon": 1e-7},
    },
)


def get_convention(name: object) -> Convention:
    """Look a preset up by name."""
    return CONVENTIONS[check_choice("convention", name, list(CONVENTIONS))]
