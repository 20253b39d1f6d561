"""Convention presets: pick a tool by name and get its definitions.

``convention="trec_eval"`` is the default. Each preset sets the defaults that differ from
trec_eval: metric options (ideal DCG source, gain, AP@k denominator, tie handling) and
evaluation settings (what counts as relevant, negative labels, unretrieved rows, queries with
no retrieved row). Anything passed explicitly (a keyword to ``evaluate``, or an option in a
metric string or Metric object) wins over the preset. A metric the tool does not define raises.

Where a tool's behaviour is arbitrary it is not copied, and the README says so: ranx's and
torchmetrics' order of tied scores (unstable sorts), Recommenders' input-order tie-break, and
Spark's caller-supplied order; the presets use trec_eval's tie rule (or the tool's own
tie-averaging where it has one).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from polars_rankeval._options import check_choice
from polars_rankeval.errors import InvalidOptionError

ConventionName = Literal["trec_eval", "sklearn", "ranx", "torchmetrics", "spark", "recommenders"]
NegativeLabels = Literal["unjudged", "nonrelevant"]
Unretrieved = Literal["count", "drop"]


# Bookkeeping counts exist under every convention.
_COUNTS = frozenset({"num_ret", "num_rel", "num_rel_ret", "num_q"})


@dataclass(frozen=True)
class Convention:
    """One tool's definitions, as defaults for metric options and evaluation settings."""

    name: str
    families: frozenset[str] | None = None
    metric_defaults: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)

    def defaults_for(self, family: str) -> dict[str, Any]:
        """Option defaults this preset gives a metric family (raises if the tool lacks it)."""
        if self.families is not None and family not in self.families | _COUNTS:
            known = ", ".join(sorted(self.families))
            msg = (
                f"convention {self.name!r} has no {family!r} metric (it defines {known}); "
                "evaluate it under another convention"
            )
            raise InvalidOptionError(msg)
        return dict(self.metric_defaults.get(family, {}))

    def without_ties(self) -> Convention:
        """The preset minus its per-metric tie defaults (an explicit ``ties=`` overrides them)."""
        defaults = {
            family: {key: value for key, value in options.items() if key != "ties"}
            for family, options in self.metric_defaults.items()
        }
        return replace(self, metric_defaults=defaults)


CONVENTIONS: dict[str, Convention] = {
    "trec_eval": Convention("trec_eval"),
    # sklearn.metrics.ndcg_score / dcg_score: each row of y_true/y_score is one query and only
    # the supplied items exist; ties are averaged by default (ignore_ties=False).
    "sklearn": Convention(
        "sklearn",
        families=frozenset({"ndcg", "dcg"}),
        metric_defaults={"ndcg": {"ties": "expected"}, "dcg": {"ties": "expected"}},
        settings={"unretrieved": "drop"},
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
    # torchmetrics retrieval: a group holds only the supplied (retrieved) rows; AP@k divides by
    # the relevant rows found in the top k; NDCG averages over ties.
    "torchmetrics": Convention(
        "torchmetrics",
        families=frozenset({"p", "recall", "hit_rate", "success", "map", "mrr", "ndcg"})
        | frozenset({"r_precision"}),
        metric_defaults={"ndcg": {"ties": "expected"}, "map": {"denominator": "hits"}},
        settings={"unretrieved": "drop"},
    ),
    # Spark mllib RankingMetrics: every ground-truth item is relevant, whatever its label;
    # graded NDCG uses 2^rel - 1; meanAveragePrecisionAt(k) divides by min(R, k).
    "spark": Convention(
        "spark",
        families=frozenset({"p", "recall", "map", "ndcg"}),
        metric_defaults={"ndcg": {"gain": "exp"}, "map": {"denominator": "min_k_R"}},
        settings={"relevance_level": 0},
    ),
    # Microsoft Recommenders python_evaluation: every rating_true row is relevant; ndcg_at_k
    # defaults to binary gain; map_at_k divides by min(R, k).
    "recommenders": Convention(
        "recommenders",
        families=frozenset({"p", "recall", "map", "ndcg", "r_precision"}),
        metric_defaults={"ndcg": {"gain": "binary"}, "map": {"denominator": "min_k_R"}},
        settings={"relevance_level": 0},
    ),
}


def get_convention(name: object) -> Convention:
    """Look a preset up by name."""
    return CONVENTIONS[check_choice("convention", name, list(CONVENTIONS))]
