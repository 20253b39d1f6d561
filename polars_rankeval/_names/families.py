"""THE metric vocabulary: every family declared once (:data:`TABLE`).

A family's row gives its metric string's name, its builder in :mod:`polars_rankeval.metrics`,
its cutoff rule (``"required"``: ``p@10``; ``"optional"``: ``map`` or ``map@10``; ``"none"``:
``bpref``) and a one-line description. Everything else is generated from the row: the parsers
(:mod:`polars_rankeval._names.ours`, ``trec_eval``, ``ir_measures``) look names up here, the
builder alias spelled like the string (``rke.metrics.map`` is ``average_precision``), the
namespace method (``df.rank_eval.map``) and the reference docs row (:func:`docs_table`).
``tests/api/test_vocabulary.py`` checks that strings, builders, methods and docs cover the same
families.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from polars_rankeval import metrics as m
from polars_rankeval._engine.columns import check_relevance_level
from polars_rankeval._engine.context import check_ties
from polars_rankeval.conventions import CONVENTIONS, Convention
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.metrics._base import Metric, with_option

_TREC = CONVENTIONS["trec_eval"]


@dataclass(frozen=True)
class Family:
    """One metric family: its string's name, builder, cutoff rule and one-line description.

    The namespace method and the builder alias in :mod:`polars_rankeval.metrics` are spelled
    like the string (:attr:`ident`); the reference docs row is :func:`docs_table`'s.
    """

    name: str  # the metric string's spelling (lower case), e.g. "map", "11pt_avg"
    build: Callable[..., Metric]
    cutoff: Literal["required", "optional", "none"]
    doc: str = ""  # one line for the docs; the builder's first docstring line when empty
    method: str = ""  # the identifier spelling when the name is not one ("11pt_avg")
    argument: str = ""  # an option the namespace method also takes positionally ("level")

    @property
    def ident(self) -> str:
        """The method and builder-alias name: the string's spelling as an identifier."""
        return self.method or self.name

    @property
    def summary(self) -> str:
        """The one-line description (the builder's docstring summary unless given)."""
        if self.doc:
            return self.doc
        return (self.build.__doc__ or "").strip().splitlines()[0].strip()

    def positional(self) -> list[str]:
        """The builder's parameters in order (trec_eval's parameter list fills them in turn)."""
        parameters = inspect.signature(self.build).parameters.values()
        return [
            p.name
            for p in parameters
            if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        ]

    def options(self) -> list[str]:
        """Keyword options the builder accepts (besides the cutoff), plus ``ties``."""
        own = self._own_options()
        generic = [name for name in ("rel", "judged_only") if name not in own]
        return [*own, "ties", *generic]

    def _own_options(self) -> list[str]:
        parameters = inspect.signature(self.build).parameters.values()
        return [p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]

    def _build(self, k: int | None, options: dict[str, Any]) -> Metric:
        if self.cutoff == "none":
            return self.build(**options)
        return self.build(k, **options)

    def make(
        self,
        k: int | None,
        options: dict[str, Any],
        label: str,
        defaults: dict[str, Any] | None = None,
    ) -> Metric:
        """Build the metric from explicit ``options`` over a convention's ``defaults``.

        The name shows only the explicit options, so a preset does not rename columns.
        """
        unknown = sorted(set(options) - set(self.options()))
        if unknown:
            allowed = ", ".join(self.options())
            msg = f"metric {label!r} has no option {', '.join(unknown)}; its options: {allowed}"
            raise InvalidOptionError(msg)
        explicit = dict(options)
        ties = explicit.pop("ties", None)
        # rel= of a family without its own: this metric's relevance level (ir_measures' rel)
        level = None if "rel" in self._own_options() else explicit.pop("rel", None)
        judged_only = explicit.pop("judged_only", False)
        if not isinstance(judged_only, bool):
            msg = f"option judged_only= of {label!r} must be True or False, got {judged_only!r}"
            raise InvalidOptionError(msg)
        merged = {**(defaults or {}), **explicit}
        ties = merged.pop("ties", None) if ties is None else ties
        metric = self._build(k, merged)
        name = self._build(k, explicit).name if defaults else metric.name
        if "ties" in options:
            name = with_option(name, "ties", check_ties(ties))
        if level is not None:
            level = check_relevance_level(level)
            name = with_option(name, "rel", level)
        if judged_only:
            name = with_option(name, "judged_only", True)
        return replace(
            metric,
            name=name,
            ties=None if ties is None else check_ties(ties),
            relevance_level=level,
            judged_only=judged_only,
        )


#: Every family, once.
TABLE: tuple[Family, ...] = (
    Family("p", m.precision, "required"),
    Family("recall", m.recall, "required"),
    Family("success", m.success, "required"),
    Family("hit_rate", m.hit_rate, "required"),
    Family("hits", m.hits, "required"),
    Family("f1", m.f1, "required"),
    Family("judged", m.judged, "required"),
    Family("map", m.average_precision, "optional"),
    Family("mrr", m.reciprocal_rank, "optional"),
    Family("mar", m.mean_average_recall, "optional"),
    Family("ndcg", m.ndcg, "optional"),
    Family("dcg", m.dcg, "optional"),
    Family("err", m.err, "optional"),
    Family("frp", m.first_relevant_position, "optional"),
    Family("mean_rank", m.mean_rank, "optional"),
    Family("r_precision", m.r_precision, "none"),
    Family("bpref", m.bpref, "none"),
    Family("infap", m.inferred_average_precision, "none"),
    Family("rbp", m.rbp, "none"),
    Family("bing", m.bin_g, "none"),
    Family("g", m.g, "none"),
    Family("ndcg_rel", m.ndcg_rel, "none"),
    Family("rndcg", m.rndcg, "none"),
    Family("rbp_resid", m.rbp_resid, "none"),
    Family("iprec_at_recall", m.iprec_at_recall, "none", argument="level"),
    Family("11pt_avg", m.eleven_pt_avg, "none", method="eleven_pt_avg"),
    Family("gm_map", m.gm_map, "none"),
    Family("gm_bpref", m.gm_bpref, "none"),
    Family("spearman", m.spearman, "none"),
    Family("kendall_tau", m.kendall_tau, "none"),
    Family("num_ret", m.num_ret, "none"),
    Family("num_rel", m.num_rel, "none"),
    Family("num_rel_ret", m.num_rel_ret, "none"),
    Family("num_q", m.num_q, "none"),
    # trec_eval's set measures and their relatives (metrics/trec_sets.py)
    Family("set_p", m.set_precision, "none"),
    Family("set_recall", m.set_recall, "none"),
    Family("set_map", m.set_map, "none"),
    Family("set_f", m.set_f, "none"),
    Family("set_relative_p", m.set_relative_precision, "none"),
    Family("relative_p", m.relative_precision, "required"),
    Family("rprec_mult", m.r_precision_mult, "none"),
    Family("utility", m.utility, "none"),
    Family("num_nonrel_judged_ret", m.num_nonrel_judged_ret, "none"),
    Family("unj", m.unjudged, "required"),
    # recommender beyond-accuracy metrics (issue 17)
    Family("novelty", m.novelty, "required"),
    Family("surprisal", m.surprisal, "required"),
    Family("unseen", m.unseen, "required"),
    Family("arp", m.arp, "required"),
    Family("aplt", m.aplt, "required"),
    Family("aclt", m.aclt, "required"),
    # propensity-scored extreme-classification metrics, as pyxclib (metrics/propensity_scored.py)
    Family("psp", m.psp, "required"),
    Family("psndcg", m.psndcg, "required"),
    Family("coverage", m.coverage, "required"),
    Family("entropy", m.entropy, "required"),
    Family("gini", m.gini, "required"),
    Family("personalization", m.personalization, "required"),
    Family("auc", m.auc, "optional"),
    Family("fall_out", m.fall_out, "required"),
    Family("gauc", m.gauc, "none"),
    Family("ild", m.ild, "required"),
    Family("ils", m.ils, "required"),
    Family("categorical_diversity", m.categorical_diversity, "required"),
    Family("serendipity", m.serendipity, "required"),
    Family("unexpectedness", m.unexpectedness, "required"),
    # NTCIREVAL's graded measures (metrics/ntcir.py)
    Family("q_measure", m.q_measure, "optional"),
    Family("ncu", m.ncu, "optional"),
    Family("o_measure", m.o_measure, "optional"),
    Family("p_measure", m.p_measure, "optional"),
    Family("p_plus", m.p_plus, "optional"),
    Family("err_ntcir", m.err_ntcir, "optional"),
    Family("nerr_ntcir", m.nerr_ntcir, "optional"),
    Family("ndcg_orig", m.ndcg_orig, "optional"),
    Family("msndcg", m.msndcg, "optional"),
    # ir_measures' Compat and Accuracy, TREC DL's NCG (metrics/compat.py)
    Family("compat", m.compat, "none"),
    Family("accuracy", m.accuracy, "optional"),
    Family("ncg", m.ncg, "optional"),
    # C/W/L user models as cwl-eval computes them through ir_measures (metrics/cwl.py)
    Family("inst", m.inst, "none"),
    Family("insq", m.insq, "none"),
    Family("bpm", m.bpm, "required"),
    Family("sdcg", m.sdcg, "required"),
    Family("nerr8", m.nerr8, "required"),
    Family("nerr9", m.nerr9, "required"),
    Family("nerr10", m.nerr10, "none"),
    Family("nerr11", m.nerr11, "none"),
    # intent-aware (diversity) measures, as ndeval (metrics/intent_aware.py)
    Family("alpha_ndcg", m.alpha_ndcg, "required"),
    Family("alpha_dcg", m.alpha_dcg, "required"),
    Family("err_ia", m.err_ia, "required"),
    Family("nerr_ia", m.nerr_ia, "required"),
    Family("nrbp", m.nrbp, "none"),
    Family("nnrbp", m.nnrbp, "none"),
    Family("map_ia", m.map_ia, "none"),
    Family("p_ia", m.p_ia, "required"),
    Family("strec", m.strec, "required"),
    # fairness of exposure over groups of items (metrics/fairness.py, polars_rankeval/fairness)
    Family("awrf", m.awrf, "optional"),
    Family("ndcg_awrf", m.ndcg_awrf, "optional"),
    Family("ee_l", m.ee_l, "none"),
    Family("ee_d", m.ee_d, "none"),
    Family("ee_r", m.ee_r, "none"),
    Family("ndkl", m.ndkl, "optional"),
    Family("skew", m.skew, "required"),
    Family("min_skew", m.min_skew, "required"),
    Family("max_skew", m.max_skew, "required"),
    Family("exp", m.exp, "optional"),
    Family("expu", m.expu, "optional"),
    Family("expru", m.expru, "optional"),
)
FAMILIES: dict[str, Family] = {family.name: family for family in TABLE}

# Other spellings users bring from trec_eval, ranx and ir_measures.
ALIASES: dict[str, str] = {
    "precision": "p",
    "map_cut": "map",
    "ap": "map",
    "recip_rank": "mrr",
    "rr": "mrr",
    "ndcg_cut": "ndcg",
    "rprec": "r_precision",
    "r-precision": "r_precision",
    "r_prec": "r_precision",
    "hitrate": "hit_rate",
    "infap": "infap",
    "inf_ap": "infap",
    "kendall": "kendall_tau",
    "spearman_rho": "spearman",
    "ar": "mar",
    # ir_measures: R@k, NumQ, NumRel, NumRet, NumRelRet
    "r": "recall",
    "numq": "num_q",
    "numrel": "num_rel",
    "numret": "num_ret",
    "numrelret": "num_rel_ret",
    # ir_measures and ndeval spellings of the intent-aware measures
    "alpha-ndcg": "alpha_ndcg",
    "alpha-dcg": "alpha_dcg",
    "err-ia": "err_ia",
    "nerr-ia": "nerr_ia",
    "ap_ia": "map_ia",
    "map-ia": "map_ia",
    "p-ia": "p_ia",
    "strecall": "strec",
    "s_recall": "strec",
}


def known_metrics() -> list[str]:
    """All metric names and aliases accepted in metric strings.

    >>> "map" in known_metrics() and "recip_rank" in known_metrics()
    True
    """
    return sorted({*FAMILIES, *ALIASES})


def family_options(name: str) -> list[str]:
    """The keyword options of a metric family (``"ndcg"`` → ``["gain", "log_base", ...]``)."""
    return FAMILIES[ALIASES.get(name, name)].options()


@dataclass(frozen=True)
class MetricRequest:
    """A metric asked for by a namespace method, e.g. ``ndcg(k=[5, 10], gain="exp")``.

    It is resolved inside ``evaluate`` so that the ``convention=`` preset applies to it.
    """

    family: str
    k: int | Sequence[int] | None
    options: dict[str, Any]


def build_metrics(
    name: str,
    k: int | Sequence[int] | None,
    options: dict[str, Any],
    convention: Convention = _TREC,
) -> list[Metric]:
    """Metric objects for a namespace method call such as ``ndcg(k=[5, 10], gain="exp")``."""
    family = FAMILIES[name]
    convention.defaults_for(name)  # a family the preset lacks raises before k is checked
    cutoffs: list[int | None] = list(k) if isinstance(k, (list, tuple)) else [k]  # type: ignore[list-item]
    if not cutoffs:
        msg = f"k= for {name!r} must be a positive int or a non-empty list of them"
        raise InvalidOptionError(msg)
    if family.cutoff == "required" and None in cutoffs:
        msg = f"metric {name!r} needs a cutoff, e.g. {name}(k=10)"
        raise InvalidOptionError(msg)
    return [
        family.make(cutoff, options, name, convention.defaults_for(name, cutoff))
        for cutoff in cutoffs
    ]


_CUTOFF_TEXT = {"required": "`{name}@k`", "optional": "`{name}`, `{name}@k`", "none": "`{name}`"}


def docs_table() -> str:
    """The reference docs' list of every family (``docs/pages/metrics.md`` shows it verbatim).

    >>> print(docs_table().splitlines()[2])
    | `p@k` | `precision`, `p` | `df.rank_eval.p(k)` | ``p@k = hits@k / k`` (trec_eval ``P_k``). |
    """
    rows = [
        "| metric string | builder (`rke.metrics.`) | namespace method | what it is |",
        "| --- | --- | --- | --- |",
    ]
    for family in TABLE:
        builders = dict.fromkeys([family.build.__name__, family.ident])
        method = {"required": "(k)", "optional": "(k=None)", "none": "()"}[family.cutoff]
        method = f"({family.argument})" if family.argument else method
        rows.append(
            f"| {_CUTOFF_TEXT[family.cutoff].format(name=family.name)} "
            f"| {', '.join(f'`{b}`' for b in builders)} "
            f"| `df.rank_eval.{family.ident}{method}` | {family.summary} |"
        )
    return "\n".join(rows) + "\n"
