"""trec_eval's dialect: its measures, its ``-m`` forms and the names it prints.

trec_eval names a measure (``P``), a measure with parameters after a dot (``P.5,10``,
``ndcg.1=3,2=9``) or a set (``official``, ``all_trec``, ``set``) on its ``-m``, and prints
``P_5``, ``iprec_at_recall_0.10``, ``utility_2,-1,0,0``. :func:`trec_measure_names` gives the
printed names of ``-m`` arguments, :func:`m_form_names` the names one metric string in a ``-m``
form stands for (the API and the command line both read it), and :func:`parse_parameterised`
reads a printed name with real or paired parameters into a metric of the families table.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from polars_rankeval._names.families import Family
from polars_rankeval._names.split import split_metrics
from polars_rankeval.conventions import Convention
from polars_rankeval.errors import UnknownMetricError
from polars_rankeval.metrics._base import Metric

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


@functools.cache  # asked for every printed label; the answer never changes
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

#: Printed lines that are not metrics: the run's name and each query's relevance string.
TEXT_LINES = frozenset({"runid", "relstring"})


def command_line_metrics(
    values: Sequence[str],
    printed_names: Callable[[Sequence[str]], list[str] | None] | None = None,
) -> list[str]:
    """The metric strings of the command line's ``-m`` values, in the order they print.

    When every value is one of trec_eval's ``-m`` forms (``P``, ``P.5,10``, ``official``),
    trec_eval's printed names in trec_eval's order, as it prints them whatever the order of its
    ``-m`` options (a bare measure takes trec_eval's default parameters, as in trec_eval).
    Otherwise each value is a metric list (split as everywhere, :func:`split_metrics`) and the
    parts come in the order given (``-m map,num_q`` prints map first), each trec_eval form
    widened to its printed names; the parser
    (:func:`polars_rankeval._names.registry.parse_metrics`) reads every one of them, and reads
    the forms with parameters or a set the same way when the API gets them.
    ``printed_names`` replaces :func:`trec_measure_names` (the command line passes its own
    reference, which the trec_eval conformance test narrows to the measures implemented).

    Examples
    --------
    >>> command_line_metrics(["P.10,5", "map"])
    ['map', 'P_5', 'P_10']
    >>> command_line_metrics(["P.5,10,ndcg@10"])
    ['P_5', 'P_10', 'ndcg@10']
    >>> command_line_metrics(["map,num_q"])
    ['map', 'num_q']
    """
    names = printed_names or trec_measure_names
    split = [split_metrics(value) for value in values]
    # trec_eval's order only when each -m is one trec_eval form: a list of ours keeps its order
    if all(len(parts) == 1 for parts in split):
        printed = names([parts[0] for parts in split])
        if printed is not None:
            return printed
    parts = [part for value_parts in split for part in value_parts]
    return [name for part in parts for name in (names([part]) or [part])]


def m_form_names(spec: str) -> list[str] | None:
    """The metrics one of trec_eval's ``-m`` forms stands for, by their printed names.

    A measure with parameters after a dot (``"P.5,10"``) or a set (``"official"``); None for
    anything else (a bare name such as ``"P"`` or ``"recall"`` is read by our grammar, which
    asks for a cutoff where trec_eval would use its defaults). ``runid`` and ``relstring`` are
    printed text, not metrics, and are left out.

    Examples
    --------
    >>> m_form_names("P.5,10")
    ['P_5', 'P_10']
    >>> m_form_names("official")[:6]
    ['num_q', 'num_ret', 'num_rel', 'num_rel_ret', 'map', 'gm_map']
    >>> m_form_names("ndcg@10") is None
    True
    """
    if spec not in TREC_SETS and "." not in spec:
        return None
    names = trec_measure_names([spec])
    if names is None:
        return None
    return [name for name in names if name not in TEXT_LINES]


def parse_parameterised(
    spec: str, convention: Convention, families: Mapping[str, Family]
) -> Metric | None:
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
    family = families.get(family_name)
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
            options.update(dict(zip(family.positional(), values, strict=False)))
            cutoff = None
        else:
            cutoff = values[0]
            if len(values) > 1:
                names = family.positional()[1:]
                options.update(dict(zip(names, values[1:], strict=False)))
    defaults = convention.defaults_for(family_name, None) if family_name in families else {}
    metric = family.make(cutoff, options, spec, defaults)
    return replace(metric, name=spec)
