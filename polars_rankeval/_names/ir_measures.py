"""ir_measures' measure names, verbatim: ``nDCG(dcg='exp-log2')@10``, ``AP(rel=2)``, ``INST(T=2)``.

ir_measures writes a measure ``Name(param=value,...)@cutoff`` (parameters before the cutoff,
Python literals as values). :func:`translate` turns such a string into one of our metric strings
(``ndcg@10(gain=exp)``, ``map(rel=2)``, ``inst(t=2)``); the output column keeps the user's
spelling. Which tool's rules apply is the convention's business: ``convention="ir_measures"``
gives ir_measures' default providers (pytrec_eval, cwl_eval, pyndeval, compat, accuracy,
judged, the MS MARCO script and gdeval). A name is read this way only when it is one of
ir_measures' (case-sensitive, e.g. ``nDCG``, ``SetP``, ``alpha_nDCG``); our own spellings are
read by :mod:`polars_rankeval._names.registry` as before.

Parameters map one to one, except: ``dcg='exp-log2'`` is ``gain=exp`` (``'log2'`` the default);
``gains=`` is ``gain=``; ``T`` is ``t``; ``IPrec@0.5`` is ``iprec_at_recall(level=0.5)``;
``SetP(relative=True)`` is ``set_relative_p``; ``NumRet(rel=1)`` counts relevant retrieved
rows (``num_rel_ret``); ``RBP(rel=...)`` reads binary relevance (``gain=binary``: ir_measures
sends it to cwl_eval, whose RBP needs ``rel``; ``RBP`` without ``rel`` is refused, as
ir_measures refuses it); ``judged_only=True`` (trec_eval ``-J``) evaluates the
metric on the judged rows only. ``rel=`` is the metric's relevance level.
"""

from __future__ import annotations

import ast
import re

from polars_rankeval.errors import InvalidOptionError

# ir_measures name -> (our family, whether a cutoff is allowed)
_FAMILIES: dict[str, str] = {
    "P": "p",
    "Precision": "p",
    "R": "recall",
    "Recall": "recall",
    "Success": "success",
    "AP": "map",
    "MAP": "map",
    "RR": "mrr",
    "MRR": "mrr",
    "nDCG": "ndcg",
    "NDCG": "ndcg",
    "Rprec": "r_precision",
    "RPrec": "r_precision",
    "Bpref": "bpref",
    "BPref": "bpref",
    "infAP": "infap",
    "Judged": "judged",
    "ERR": "err",
    "NumQ": "num_q",
    "NumRel": "num_rel",
    "NumRet": "num_ret",
    "NumRelRet": "num_rel_ret",
    "SetP": "set_p",
    "SetRelP": "set_relative_p",
    "SetR": "set_recall",
    "SetF": "set_f",
    "SetAP": "set_map",
    "IPrec": "iprec_at_recall",
    "RBP": "rbp",
    "INST": "inst",
    "INSQ": "insq",
    "BPM": "bpm",
    "SDCG": "sdcg",
    "NERR8": "nerr8",
    "NERR9": "nerr9",
    "NERR10": "nerr10",
    "NERR11": "nerr11",
    "Compat": "compat",
    "Accuracy": "accuracy",
    "alpha_nDCG": "alpha_ndcg",
    "α_nDCG": "alpha_ndcg",
    "alpha_DCG": "alpha_dcg",
    "α_DCG": "alpha_dcg",
    "ERR_IA": "err_ia",
    "nERR_IA": "nerr_ia",
    "NRBP": "nrbp",
    "nNRBP": "nnrbp",
    "AP_IA": "map_ia",
    "MAP_IA": "map_ia",
    "P_IA": "p_ia",
    "StRecall": "strec",
}

_MEASURE = re.compile(
    r"^(?P<name>[^\W\d][\w]*)(?:\((?P<params>.*)\))?(?:@(?P<cutoff>[0-9.eE+-]+))?$", re.UNICODE
)


def is_ir_measures_name(text: str) -> bool:
    """Whether ``text`` is spelled as an ir_measures measure (its case-sensitive name).

    Examples
    --------
    >>> is_ir_measures_name("nDCG(dcg='exp-log2')@10"), is_ir_measures_name("ndcg@10")
    (True, False)
    """
    match = _MEASURE.match(text.strip())
    return match is not None and match["name"] in _FAMILIES


def _literal(text: str, spec: str) -> object:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        msg = f"in measure {spec!r}, {text!r} is not a value ir_measures reads"
        raise InvalidOptionError(msg) from None


def _parameters(text: str | None, spec: str) -> dict[str, object]:
    if not text:
        return {}
    try:
        call = ast.parse(f"f({text})", mode="eval").body
    except SyntaxError:
        msg = f"cannot read the parameters of measure {spec!r}: expected (name=value, ...)"
        raise InvalidOptionError(msg) from None
    if not isinstance(call, ast.Call) or call.args:
        msg = f"parameters of measure {spec!r} must be name=value pairs"
        raise InvalidOptionError(msg)
    return {
        str(keyword.arg): _literal(ast.unparse(keyword.value), spec) for keyword in call.keywords
    }


def _spelled(value: object) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(f"{key}:{gain}" for key, gain in value.items()) + "}"
    return str(value)


def translate(text: str) -> str:  # noqa: PLR0912 (one branch per parameter rule)
    """Our metric string for an ir_measures measure string.

    Examples
    --------
    >>> translate("nDCG(dcg='exp-log2')@10")
    'ndcg@10(gain=exp)'
    >>> translate("AP(rel=2)")
    'map(rel=2)'
    >>> translate("INST(T=2,max_rel=3)")
    'inst(t=2,max_rel=3)'
    >>> translate("IPrec@0.5")
    'iprec_at_recall(level=0.5)'
    """
    spec = text.strip()
    match = _MEASURE.match(spec)
    if match is None or match["name"] not in _FAMILIES:
        msg = f"{text!r} is not an ir_measures measure name"
        raise InvalidOptionError(msg)
    name = match["name"]
    family = _FAMILIES[name]
    params = _parameters(match["params"], spec)
    cutoff = match["cutoff"]
    options: dict[str, object] = {}
    judged_only = params.pop("judged_only", False)
    if judged_only:
        options["judged_only"] = True
    for key, value in params.items():
        if key == "dcg" and family in {"ndcg", "sdcg"}:
            if value == "exp-log2" and family == "ndcg":
                options["gain"] = "exp"
            elif value != "log2":
                msg = f"measure {spec!r}: dcg={value!r} is not supported here (log2, exp-log2)"
                raise InvalidOptionError(msg)
        elif key == "gains":
            options["gain"] = value
        elif key == "T":
            options["t"] = value
        elif key == "relative" and family == "set_p":
            family = "set_relative_p" if value else family
        elif key == "rel" and family == "num_ret":
            family, options["rel"] = "num_rel_ret", value
        elif key == "recall" and family == "iprec_at_recall":
            cutoff = str(value)
        else:
            options[key] = value
    if family == "rbp":
        if "rel" not in params:
            # ir_measures sends RBP to cwl_eval, whose RBP needs rel: its pipeline refuses
            # "Unsupported measures {RBP}" rather than choose a relevance level
            msg = (
                f"measure {spec!r} needs rel=, as in ir_measures (cwl_eval's RBP reads binary "
                f"relevance at a level; ir_measures refuses RBP without it): write "
                f"'RBP(rel=1)' or 'RBP(p=0.8,rel=1)', or our 'rbp(p=0.8)'"
            )
            raise InvalidOptionError(msg)
        options.setdefault("gain", "binary")
    if family == "iprec_at_recall":
        if cutoff is None:
            msg = f"measure {spec!r} needs a recall level, e.g. 'IPrec@0.5'"
            raise InvalidOptionError(msg)
        options["level"], cutoff = float(cutoff), None
    shown = ",".join(f"{key}={_spelled(value)}" for key, value in options.items())
    return family + (f"@{cutoff}" if cutoff is not None else "") + (f"({shown})" if shown else "")
