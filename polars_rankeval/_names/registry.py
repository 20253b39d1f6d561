"""Metric strings: ``"ndcg@10"``, ``"P_5"``, ``"ndcg@1,5,10"``, ``"err@10(max_grade=3)"``.

Grammar: ``name[@k[,k...]][(option=value[,option=value...])]``, case-insensitive. A list of
cutoffs is a sweep: one metric (and one output column) per cutoff, all computed from the same
ranking pass. Options are the keyword arguments of the metric's builder in
:mod:`polars_rankeval.metrics`, e.g. ``gain``, ``log_base``, ``discount``, ``ideal`` for
``ndcg``; a mapping is written ``gain={0:0,1:1,2:3}``.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from polars_rankeval import metrics as m
from polars_rankeval._engine.columns import check_relevance_level
from polars_rankeval._engine.context import check_ties
from polars_rankeval._names.did_you_mean import (
    fixed_cutoff,
    unknown_metric_message,
    unreadable_hint,
)
from polars_rankeval._names.ir_measures import _FAMILIES as _IRM_FAMILIES
from polars_rankeval._names.ir_measures import is_ir_measures_name, translate
from polars_rankeval._names.split import metric_list, split_metrics
from polars_rankeval.conventions import CONVENTIONS, Convention
from polars_rankeval.errors import InvalidOptionError, UnknownMetricError
from polars_rankeval.metrics._base import Metric, with_option

_TREC = CONVENTIONS["trec_eval"]


@dataclass(frozen=True)
class _Family:
    build: Callable[..., Metric]
    cutoff: str  # "required", "optional" or "none"

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


def _hit_rate(k: int, **options: Any) -> Metric:
    return m.success(k, name="hit_rate", **options)


_FAMILIES: dict[str, _Family] = {
    "p": _Family(m.precision, "required"),
    "recall": _Family(m.recall, "required"),
    "success": _Family(m.success, "required"),
    "hit_rate": _Family(_hit_rate, "required"),
    "hits": _Family(m.hits, "required"),
    "f1": _Family(m.f1, "required"),
    "judged": _Family(m.judged, "required"),
    "map": _Family(m.average_precision, "optional"),
    "mrr": _Family(m.reciprocal_rank, "optional"),
    "mar": _Family(m.mean_average_recall, "optional"),
    "ndcg": _Family(m.ndcg, "optional"),
    "dcg": _Family(m.dcg, "optional"),
    "err": _Family(m.err, "optional"),
    "frp": _Family(m.first_relevant_position, "optional"),
    "mean_rank": _Family(m.mean_rank, "optional"),
    "r_precision": _Family(m.r_precision, "none"),
    "bpref": _Family(m.bpref, "none"),
    "infap": _Family(m.inferred_average_precision, "none"),
    "rbp": _Family(m.rbp, "none"),
    "bing": _Family(m.bin_g, "none"),
    "g": _Family(m.g, "none"),
    "ndcg_rel": _Family(m.ndcg_rel, "none"),
    "rndcg": _Family(m.rndcg, "none"),
    "rbp_resid": _Family(m.rbp_resid, "none"),
    "iprec_at_recall": _Family(m.iprec_at_recall, "none"),
    "11pt_avg": _Family(m.eleven_pt_avg, "none"),
    "gm_map": _Family(m.gm_map, "none"),
    "gm_bpref": _Family(m.gm_bpref, "none"),
    "spearman": _Family(m.spearman, "none"),
    "kendall_tau": _Family(m.kendall_tau, "none"),
    "num_ret": _Family(m.num_ret, "none"),
    "num_rel": _Family(m.num_rel, "none"),
    "num_rel_ret": _Family(m.num_rel_ret, "none"),
    "num_q": _Family(m.num_q, "none"),
    # trec_eval's set measures and their relatives (metrics/trec_sets.py)
    "set_p": _Family(m.set_precision, "none"),
    "set_recall": _Family(m.set_recall, "none"),
    "set_map": _Family(m.set_map, "none"),
    "set_f": _Family(m.set_f, "none"),
    "set_relative_p": _Family(m.set_relative_precision, "none"),
    "relative_p": _Family(m.relative_precision, "required"),
    "rprec_mult": _Family(m.r_precision_mult, "none"),
    "utility": _Family(m.utility, "none"),
    "num_nonrel_judged_ret": _Family(m.num_nonrel_judged_ret, "none"),
    "unj": _Family(m.unjudged, "required"),
    # recommender beyond-accuracy metrics (issue 17)
    "novelty": _Family(m.novelty, "required"),
    "surprisal": _Family(m.surprisal, "required"),
    "unseen": _Family(m.unseen, "required"),
    "arp": _Family(m.arp, "required"),
    "aplt": _Family(m.aplt, "required"),
    "aclt": _Family(m.aclt, "required"),
    "coverage": _Family(m.coverage, "required"),
    "entropy": _Family(m.entropy, "required"),
    "gini": _Family(m.gini, "required"),
    "personalization": _Family(m.personalization, "required"),
    "auc": _Family(m.auc, "optional"),
    "fall_out": _Family(m.fall_out, "required"),
    "gauc": _Family(m.gauc, "none"),
    "ild": _Family(m.ild, "required"),
    "ils": _Family(m.ils, "required"),
    "categorical_diversity": _Family(m.categorical_diversity, "required"),
    "serendipity": _Family(m.serendipity, "required"),
    "unexpectedness": _Family(m.unexpectedness, "required"),
    # NTCIREVAL's graded measures (metrics/ntcir.py)
    "q_measure": _Family(m.q_measure, "optional"),
    "ncu": _Family(m.ncu, "optional"),
    "o_measure": _Family(m.o_measure, "optional"),
    "p_measure": _Family(m.p_measure, "optional"),
    "p_plus": _Family(m.p_plus, "optional"),
    "err_ntcir": _Family(m.err_ntcir, "optional"),
    "nerr_ntcir": _Family(m.nerr_ntcir, "optional"),
    "ndcg_orig": _Family(m.ndcg_orig, "optional"),
    "msndcg": _Family(m.msndcg, "optional"),
    # ir_measures' Compat and Accuracy, TREC DL's NCG (metrics/compat.py)
    "compat": _Family(m.compat, "none"),
    "accuracy": _Family(m.accuracy, "optional"),
    "ncg": _Family(m.ncg, "optional"),
    # C/W/L user models as cwl-eval computes them through ir_measures (metrics/cwl.py)
    "inst": _Family(m.inst, "none"),
    "insq": _Family(m.insq, "none"),
    "bpm": _Family(m.bpm, "required"),
    "sdcg": _Family(m.sdcg, "required"),
    "nerr8": _Family(m.nerr8, "required"),
    "nerr9": _Family(m.nerr9, "required"),
    "nerr10": _Family(m.nerr10, "none"),
    "nerr11": _Family(m.nerr11, "none"),
    # intent-aware (diversity) measures, as ndeval (metrics/intent_aware.py)
    "alpha_ndcg": _Family(m.alpha_ndcg, "required"),
    "alpha_dcg": _Family(m.alpha_dcg, "required"),
    "err_ia": _Family(m.err_ia, "required"),
    "nerr_ia": _Family(m.nerr_ia, "required"),
    "nrbp": _Family(m.nrbp, "none"),
    "nnrbp": _Family(m.nnrbp, "none"),
    "map_ia": _Family(m.map_ia, "none"),
    "p_ia": _Family(m.p_ia, "required"),
    "strec": _Family(m.strec, "required"),
}

# Other spellings users bring from trec_eval, ranx and ir_measures.
_ALIASES: dict[str, str] = {
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

_SPEC = re.compile(
    # A name may start with a digit: trec_eval's 11pt_avg.
    r"^(?P<name>[a-z0-9][a-z0-9_\-]*?)(?:@(?P<cutoffs>[^()]*))?(?:\((?P<options>.*)\))?$",
)
_TREC_CUTOFF = re.compile(r"^(?P<name>[a-z][a-z0-9_\-]*?)_(?P<k>\d+)$")


# ---- trec_eval's own measure names --------------------------------------------------------------

#: trec_eval's measures in the order it computes and prints them (``te_trec_measures`` in its
#: measures.c), with the parameters it uses when none are given.
_LONG_CUTS = "5,10,15,20,30,100,200,500,1000"
TREC_MEASURES: dict[str, str | None] = {
    "runid": None,
    "num_q": None,
    "num_ret": None,
    "num_rel": None,
    "num_rel_ret": None,
    "map": None,
    "gm_map": None,
    "Rprec": None,
    "bpref": None,
    "recip_rank": None,
    "iprec_at_recall": "0.0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1.0",
    "P": _LONG_CUTS,
    "relstring": None,
    "recall": _LONG_CUTS,
    "infAP": None,
    "gm_bpref": None,
    "Rprec_mult": "0.2,0.4,0.6,0.8,1.0,1.2,1.4,1.6,1.8,2.0",
    "utility": None,
    "11pt_avg": None,
    "binG": None,
    "G": None,
    "ndcg": None,
    "ndcg_rel": None,
    "Rndcg": None,
    "ndcg_cut": _LONG_CUTS,
    "map_cut": _LONG_CUTS,
    "relative_P": _LONG_CUTS,
    "success": "1,5,10",
    "set_P": None,
    "set_relative_P": None,
    "set_recall": None,
    "set_map": None,
    "set_F": None,
    "num_nonrel_judged_ret": None,
    "rbp": None,
    "rbp_resid": None,
    "unj": "5,10,20",
}
#: trec_eval's measure sets (``-m official``, ``-m all_trec``, ``-m set``; measures.c).
TREC_SETS: dict[str, tuple[str, ...]] = {
    "official": (
        *("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec"),
        *("bpref", "recip_rank", "iprec_at_recall", "P"),
    ),
    "all_trec": tuple(TREC_MEASURES),
    "set": (
        *("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P"),
        *("set_recall", "set_relative_P", "set_map", "set_F"),
    ),
}
#: Measures trec_eval prints in the summary only (``-q`` gives them no per-query line) and the
#: one it prints per query only (a string has no mean).
TREC_SUMMARY_ONLY = frozenset({"runid", "num_q", "gm_map", "gm_bpref"})
TREC_QUERY_ONLY = frozenset({"relstring"})
# How trec_eval names the values of a measure from its parameters (meas_init.c): integer
# cutoffs "P_5", sorted; real cutoffs "iprec_at_recall_0.10" ("%3.2f"), sorted; otherwise the
# parameter text as given, "utility_2,-1,0,0", "ndcg_1=3,2=9,4=4.5".
_LONG_CUT_MEASURES = frozenset(
    {"P", "recall", "ndcg_cut", "map_cut", "relative_P", "success", "unj"}
)
_DOUBLE_CUT_MEASURES = frozenset({"iprec_at_recall", "Rprec_mult"})


def _atol(text: str) -> int:
    """C's ``atol``: the leading integer of the text (``"23.4"`` is 23), 0 if there is none."""
    found = re.match(r"\s*[+-]?\d+", text)
    return int(found[0]) if found else 0


def _atof(text: str) -> float:
    """C's ``atof``: the leading number of the text, 0.0 if there is none."""
    found = re.match(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text)
    return float(found[0]) if found else 0.0


def _trec_value_names(measure: str, parameters: str | None) -> list[str]:
    """The names trec_eval prints for one measure and its parameter text (None: defaults)."""
    params = TREC_MEASURES[measure] if parameters is None else parameters
    if params is None:
        return [measure]
    if measure in _LONG_CUT_MEASURES:
        return [f"{measure}_{value}" for value in sorted(_atol(p) for p in params.split(","))]
    if measure in _DOUBLE_CUT_MEASURES:
        return [f"{measure}_{value:3.2f}" for value in sorted(_atof(p) for p in params.split(","))]
    return [f"{measure}_{params}"]


def trec_measure_names(arguments: Sequence[str]) -> list[str] | None:
    """The names trec_eval prints for its ``-m`` arguments, in the order it prints them.

    Each argument is a measure (``"P"``), a measure with parameters after a dot
    (``"P.5,7,3"``, ``"ndcg.1=3,2=9,4=4.5"``, ``"iprec_at_recall..10,.20"``) or a set
    (``"official"``, ``"all_trec"``, ``"set"``). trec_eval prints the measures in its own order,
    whatever the order of the arguments; a later argument's parameters replace an earlier
    one's. None if an argument is none of these (then it is one of our metric strings).

    Examples
    --------
    >>> trec_measure_names(["P.5,7,3", "map"])
    ['map', 'P_3', 'P_5', 'P_7']
    >>> trec_measure_names(["Rprec_mult.5.0,0.2", "utility.2,-1,0,0"])
    ['Rprec_mult_0.20', 'Rprec_mult_5.00', 'utility_2,-1,0,0']
    >>> trec_measure_names(["ndcg@10"]) is None
    True
    """
    chosen: dict[str, str | None] = {}
    for argument in arguments:
        if argument in TREC_SETS:
            for measure in TREC_SETS[argument]:
                chosen.setdefault(measure, None)
            continue
        measure, dot, parameters = argument.partition(".")
        if measure not in TREC_MEASURES or (dot and not parameters):
            return None
        chosen[measure] = parameters if dot else chosen.get(measure)
    return [
        name
        for measure in TREC_MEASURES
        if measure in chosen
        for name in _trec_value_names(measure, chosen[measure])
    ]


def trec_measure_of(name: str) -> str | None:
    """The trec_eval measure a printed name belongs to: ``"P_5"`` → ``"P"``, else None."""
    if name in TREC_MEASURES:
        return name
    for measure in sorted(TREC_MEASURES, key=len, reverse=True):
        if name.startswith(f"{measure}_") and measure != "runid":
            return measure
    return None


# A printed name whose parameter is not an integer cutoff, lower-cased: its family (a key of
# _FAMILIES, which may not be registered yet) and how its parameter text is read.
_TREC_NUMBERS = r"[-+0-9.]+(?:,[-+0-9.]+)*"
_TREC_PAIRS = r"[a-z0-9_]+=[-+0-9.e]+(?:,[a-z0-9_]+=[-+0-9.e]+)*"
_TREC_PARAMETERISED = re.compile(
    # Longer names first: rbp_resid_p=0.5 is rbp_resid's, not rbp's.
    r"^(?P<family>iprec_at_recall|rprec_mult|utility|11pt_avg|set_f|ndcg_rel|ndcg|rndcg|bing|g"
    rf"|rbp_resid|rbp)_(?P<params>{_TREC_NUMBERS}|{_TREC_PAIRS})$"
)
_TREC_GAIN_FAMILIES = frozenset({"ndcg", "ndcg_rel", "rndcg", "g", "bing"})


def _positional_names(family: _Family) -> list[str]:
    """The builder's parameters in order, which trec_eval's parameter list fills in turn."""
    parameters = inspect.signature(family.build).parameters.values()
    return [
        p.name
        for p in parameters
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    ]


def _parse_trec_parameterised(spec: str, convention: Convention) -> Metric | None:
    """A trec_eval name with real or paired parameters, as trec_eval prints it.

    ``iprec_at_recall_0.10``, ``Rprec_mult_0.20``, ``utility_2,-1,0,0``, ``11pt_avg_.25,.5``,
    ``set_F_0.5``, ``ndcg_1=3,2=9,4=4.5``. None when the name has no such form. The parameters
    fill the family builder's parameters in order (``key=value`` pairs: gains of the
    ndcg-like families, else options by name).
    """
    match = _TREC_PARAMETERISED.match(spec.lower())
    if match is None:
        return None
    family_name, text = match["family"], match["params"]
    if family_name in _TREC_GAIN_FAMILIES and "=" not in text:
        return None  # ndcg_10 and friends are integer cutoffs, read by the general grammar
    family = _FAMILIES.get(family_name)
    if family is None:
        msg = f"trec_eval's measure {spec!r} is not implemented yet (no metric {family_name!r})"
        raise UnknownMetricError(msg)
    options: dict[str, Any] = {}
    if "=" in text:
        pairs = [pair.partition("=") for pair in text.split(",")]
        if family_name in _TREC_GAIN_FAMILIES:
            options["gain"] = {_atol(key): _atof(value) for key, _, value in pairs}
        else:
            options.update({key: _atof(value) for key, _, value in pairs})
        cutoff = None
    else:
        values: list[Any] = [_atof(part) for part in text.split(",")]
        if family.cutoff == "none":
            if family_name == "11pt_avg":
                values = [values]  # one parameter: the recall levels
            options.update(dict(zip(_positional_names(family), values, strict=False)))
            cutoff = None
        else:
            cutoff = values[0]
            if len(values) > 1:
                names = _positional_names(family)[1:]
                options.update(dict(zip(names, values[1:], strict=False)))
    defaults = convention.defaults_for(family_name, None) if family_name in _FAMILIES else {}
    metric = family.make(cutoff, options, spec, defaults)
    return replace(metric, name=spec)


def known_metrics() -> list[str]:
    """All metric names and aliases accepted in metric strings."""
    return sorted({*_FAMILIES, *_ALIASES})


def family_options(name: str) -> list[str]:
    """The keyword options of a metric family (``"ndcg"`` → ``["gain", "log_base", ...]``)."""
    return _FAMILIES[_ALIASES.get(name, name)].options()


def _suggest(name: str, spec: str) -> str:
    """The unknown-metric error: the closest few spellings (ours, ir_measures'), not all."""
    spellings = {**{family: family for family in _FAMILIES}, **_ALIASES}
    cutoffs = {family: rule.cutoff for family, rule in _FAMILIES.items()}
    foreign = {  # α_nDCG is a name one reads, not one to suggest typing
        name: family
        for name, family in _IRM_FAMILIES.items()
        if family in _FAMILIES and name.isascii()
    }
    return unknown_metric_message(name, spec, spellings, cutoffs, foreign)


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside braces and parentheses (``gain={0:0,1:1}``, ``err@5(a=1,b=2)``)."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, "{": 1, ")": -1, "}": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [part.strip() for part in parts if part.strip()]


def _parse_value(text: str, spec: str) -> object:
    if text.startswith("{") and text.endswith("}"):
        mapping: dict[int, float] = {}
        for pair in _split_top_level(text[1:-1]):
            key, sep, value = pair.partition(":")
            try:
                mapping[int(key)] = float(value)
            except ValueError:
                sep = ""
            if not sep:
                msg = f"in metric {spec!r}, {text!r} must map integer labels to numbers"
                raise InvalidOptionError(msg) from None
        return mapping
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def _parse_options(text: str | None, spec: str) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for part in _split_top_level(text or ""):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            msg = f"options in metric {spec!r} must look like (name=value,...), got {part!r}"
            raise InvalidOptionError(msg)
        options[key.strip().lower()] = _parse_value(value.strip(), spec)
    return options


def _parse_cutoffs(text: str, spec: str) -> list[int]:
    cutoffs = []
    for part in text.split(","):
        if not re.fullmatch(r"\s*\d+\s*", part):
            hint, fixed = "", fixed_cutoff(part)
            if fixed is not None:  # map@1O: the cutoffs follow the last "@"
                head, _, tail = spec.rpartition("@")
                tail = re.sub(re.escape(part.strip()), fixed, tail, count=1, flags=re.I)
                hint = f"; did you mean {f'{head}@{tail}'!r}?"
            msg = (
                f"cutoff in metric {spec!r} must be positive integers, e.g. 'ndcg@10' or "
                f"'@1,5,10'{hint}"
            )
            raise InvalidOptionError(msg)
        digits = part.strip().lstrip("0")
        if len(digits) > 19:
            # Python refuses int() of a string over 4300 digits (a bare ValueError); any k
            # over 19 digits is past 2^63-1, which the metric builders' check refuses.
            # The metric's name only: echoing thousands of digits helps no one.
            msg = (
                f"cutoff k for {spec.split('@', 1)[0].strip()!r} must be at most {2**63 - 1} "
                f"(2^63-1, the Int64 maximum), got a {len(digits)}-digit number"
            )
            raise InvalidOptionError(msg)
        cutoffs.append(int(part))
    if len(set(cutoffs)) != len(cutoffs):
        msg = f"cutoffs repeat in metric {spec!r}"
        raise InvalidOptionError(msg)
    return cutoffs


def parse_metrics(text: str, convention: Convention = _TREC) -> list[tuple[str, Metric]]:
    """Parse one metric string into ``(output name, Metric)`` pairs (several for a sweep).

    The output name keeps the user's spelling; a sweep gives ``name@k`` per cutoff.

    Examples
    --------
    >>> [name for name, _ in parse_metrics("NDCG@5,10")]
    ['NDCG@5', 'NDCG@10']
    >>> [metric.name for _, metric in parse_metrics("ndcg@10(gain=exp)")]
    ['ndcg@10(gain=exp)']
    """
    if not isinstance(text, str):
        msg = f"a metric must be a string such as 'ndcg@10' or a Metric object, got {text!r}"
        raise InvalidOptionError(msg)
    spec = text.strip()
    if is_ir_measures_name(spec):  # nDCG(dcg='exp-log2')@10, AP(rel=2), INST(T=2) ...
        return [(spec, metric) for _, metric in parse_metrics(translate(spec), convention)]
    if (parameterised := _parse_trec_parameterised(spec, convention)) is not None:
        return [(spec, parameterised)]
    match = _SPEC.match(spec.lower())
    if match is None:
        trec_names = trec_measure_names([spec]) if "." in spec else None  # P.5,10 is -m's
        hint = unreadable_hint(spec, _IRM_FAMILIES, trec_names)
        msg = f"cannot read metric {text!r}; expected e.g. 'ndcg@10', 'map' or 'ndcg@5,10'{hint}"
        raise InvalidOptionError(msg)
    name = match["name"]
    cutoffs: list[int | None] = [None]
    if match["cutoffs"] is not None:
        cutoffs = list(_parse_cutoffs(match["cutoffs"], text))
    elif (trec := _TREC_CUTOFF.match(name)) and _ALIASES.get(trec["name"], trec["name"]) in (
        _FAMILIES
    ):
        # trec_eval spelling: P_5, ndcg_cut_10, map_cut_100, recall_5, success_1
        name, cutoffs = trec["name"], list(_parse_cutoffs(trec["k"], trec["name"]))
    canonical = _ALIASES.get(name, name)
    family = _FAMILIES.get(canonical)
    if family is None:
        raise UnknownMetricError(_suggest(spec[: len(match["name"])], spec))
    if family.cutoff == "none" and match["cutoffs"] is not None:
        msg = f"metric {canonical!r} takes no cutoff; use {canonical!r} instead of {text!r}"
        raise InvalidOptionError(msg)
    if family.cutoff == "required" and cutoffs == [None]:
        msg = f"metric {canonical!r} needs a cutoff, e.g. '{canonical}@10'"
        raise InvalidOptionError(msg)
    # option values keep their case (a column or system name); names and choices do not matter
    options = _parse_options(
        spec[match.start("options") : match.end("options")] if match["options"] else None, text
    )
    # Keep the user's spelling of the name and options in the output column.
    original_name = spec[: len(match["name"])]
    option_text = spec[spec.index("(") :] if match["options"] is not None else ""
    if len(cutoffs) == 1:
        defaults = convention.defaults_for(canonical, cutoffs[0])
        return [(spec, family.make(cutoffs[0], options, text, defaults))]
    return [
        (
            f"{original_name}@{k}{option_text}",
            family.make(k, options, text, convention.defaults_for(canonical, k)),
        )
        for k in cutoffs
    ]


def split_metric_list(text: str) -> list[str]:
    """Split ``"ndcg@1,5,10,map,err@5(max_grade=3,transform=exp)"`` into metric strings.

    The command line's name for :func:`polars_rankeval._names.split.split_metrics`: a comma
    separates metrics unless it sits inside brackets or quotes, or the next part is a number
    continuing a sweep (or one of trec_eval's parameter lists).

    Examples
    --------
    >>> split_metric_list("ndcg@1,5,10,map,err@5(max_grade=3,transform=exp)")
    ['ndcg@1,5,10', 'map', 'err@5(max_grade=3,transform=exp)']
    """
    return split_metrics(text)  # the one splitter of the API and the command line


def parse_metric(text: str) -> Metric:
    """Parse a metric string that names exactly one metric.

    Examples
    --------
    >>> parse_metric("NDCG@10").name
    'ndcg@10'
    >>> parse_metric("P_5").name
    'p@5'
    >>> parse_metric("recip_rank").name
    'mrr'
    """
    parsed = parse_metrics(text)
    if len(parsed) != 1:
        msg = f"{text!r} names {len(parsed)} metrics; use parse_metrics for a cutoff sweep"
        raise InvalidOptionError(msg)
    return parsed[0][1]


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
    family = _FAMILIES[name]
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


def resolve_metrics(specs: object, convention: Convention = _TREC) -> list[tuple[str, Metric]]:
    """Turn the user's metric list into ``(output column name, Metric)`` pairs.

    Strings keep their exact spelling as the output name (a sweep gives one name per cutoff);
    Metric objects use ``Metric.name``.
    """
    given = specs
    if isinstance(specs, (Metric, MetricRequest)):
        specs = [specs]
    specs = metric_list(specs)  # "ndcg@10,map" is two metrics, as the command line's -m
    if not isinstance(specs, list) or not specs:
        msg = f"metrics must be a non-empty list such as ['ndcg@10', 'map'], got {given!r}"
        raise InvalidOptionError(msg)
    resolved: list[tuple[str, Metric]] = []
    for spec in specs:
        if isinstance(spec, Metric):
            resolved.append((spec.name, spec))
        elif isinstance(spec, MetricRequest):
            built = build_metrics(spec.family, spec.k, spec.options, convention)
            resolved.extend((metric.name, metric) for metric in built)
        else:
            resolved.extend(parse_metrics(spec, convention))
    labels = [label for label, _ in resolved]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        msg = f"metric names repeat in the list: {repeated}; each output column needs one name"
        raise InvalidOptionError(msg)
    return resolved
