"""The closest known spellings of a metric name the parser did not recognise.

``P10`` is ``p@10`` (a missing ``@`` before the cutoff), ``ndgc@10`` is ``ndcg@10`` (difflib's
closest names, the user's cutoff and options carried over), ``setp`` is ``SetP`` (an ir_measures
name, whose case matters). The error names a few (at most :data:`MAX_SUGGESTIONS`), not all of
the seventy-odd names: :func:`polars_rankeval.known_metrics` lists them.

The registry passes in what it knows (:func:`unknown_metric_message`), so this module imports
nothing of it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping

#: The most suggestions an error names.
MAX_SUGGESTIONS = 4
# "p10", "ndcg10", "recall_100", "ndcg-10", "p_at_10": a name, maybe a separator, the cutoff.
_GLUED_CUTOFF = re.compile(r"(?P<base>.*?[a-z])(?:_at_|[_\-])?(?P<k>\d+)")
#: Names written out, as papers and other libraries spell them: suggested, never accepted
#: (a metric string stays short and unambiguous). Each is shown as its family's name.
DESCRIBED: dict[str, str] = {
    "average_precision": "map",
    "mean_average_precision": "map",
    "reciprocal_rank": "mrr",
    "mean_reciprocal_rank": "mrr",
    "normalized_dcg": "ndcg",
    "normalised_dcg": "ndcg",
    "normalized_discounted_cumulative_gain": "ndcg",
    "discounted_cumulative_gain": "dcg",
    "expected_reciprocal_rank": "err",
    "rank_biased_precision": "rbp",
    "hit_ratio": "hit_rate",
    "hr": "hit_rate",
    "precision_at_k": "p",
    "recall_at_k": "recall",
    "roc_auc": "auc",
}
# A plain cutoff (what an ir_measures spelling can take after its name).
_PLAIN_CUTOFF = re.compile(r"@\d+")
# Letters typed for the digits they look like: map@1O, p@l0.
_LOOKALIKES = str.maketrans({"o": "0", "O": "0", "l": "1", "I": "1", "i": "1"})


def _form(spelling: str, cutoff: str, rest: str, own: bool) -> str:
    """``spelling`` with the user's cutoff and options where its family takes them.

    ``cutoff`` is the family's rule ("required", "optional", "none"); ``rest`` what followed the
    name in the user's string; ``own`` whether ``spelling`` is read by our grammar (else it is an
    ir_measures name, which takes a plain ``@k`` only here).
    """
    if not own:
        return spelling + (rest if _PLAIN_CUTOFF.fullmatch(rest) else "")
    if cutoff == "none":
        return spelling + rest[rest.index("(") :] if "(" in rest else spelling
    if cutoff == "required" and not rest.startswith("@"):
        return f"{spelling}@k{rest}"
    return spelling + rest


def suggestions(
    name: str,
    rest: str,
    families: Mapping[str, str],
    cutoffs: Mapping[str, str],
    foreign: Mapping[str, str],
) -> list[str]:
    """The closest known metric strings for an unknown ``name``, best first.

    Parameters
    ----------
    name
        The unknown name as the user wrote it (``"P10"``, ``"ndgc"``).
    rest
        What followed the name: ``"@10"``, ``"(gain=exp)"`` or ``""``.
    families
        Every spelling our grammar reads (lower case: names and aliases) and its family.
    cutoffs
        Each family's cutoff rule: ``"required"``, ``"optional"`` or ``"none"``.
    foreign
        Spellings read only as written (ir_measures' case-sensitive names) and their family.

    Returns
    -------
    list of str
        At most :data:`MAX_SUGGESTIONS` metric strings, one per family.

    Examples
    --------
    >>> fams = {"p": "p", "ndcg": "ndcg", "ndcg_rel": "ndcg_rel", "dcg": "dcg", "set_p": "set_p"}
    >>> rules = {"p": "required", "ndcg": "optional", "ndcg_rel": "none", "dcg": "optional"}
    >>> rules["set_p"] = "none"
    >>> suggestions("P10", "", fams, rules, {})
    ['p@10']
    >>> suggestions("ndcg_rl", "@10", fams, rules, {})
    ['ndcg_rel', 'ndcg@10', 'dcg@10']
    >>> suggestions("setp", "", fams, rules, {"SetP": "set_p"})
    ['SetP']
    """
    lowered = name.lower()
    found: dict[str, str] = {}  # family -> its best spelling, in the order found
    glued = _GLUED_CUTOFF.fullmatch(lowered)
    if glued and not rest.startswith("@"):
        family = families.get(glued["base"], DESCRIBED.get(glued["base"]))
        base = glued["base"] if glued["base"] in families else family
        if family is not None and cutoffs[family] != "none":
            found[family] = f"{base}@{int(glued['k'])}{rest}"
    # One key per lower-case spelling; our own spelling wins over an ir_measures one.
    keys: dict[str, tuple[str, str, bool]] = {
        spelling: (family, family, True)
        for spelling, family in DESCRIBED.items()
        if family in cutoffs
    }
    keys.update(
        {spelling.lower(): (spelling, family, False) for spelling, family in foreign.items()}
    )
    keys.update({spelling: (spelling, family, True) for spelling, family in families.items()})
    for key in difflib.get_close_matches(lowered, list(keys), n=3 * MAX_SUGGESTIONS, cutoff=0.6):
        spelling, family, own = keys[key]
        found.setdefault(family, _form(spelling, cutoffs[family], rest, own))
    return list(found.values())[:MAX_SUGGESTIONS]


def unknown_metric_message(
    name: str,
    spec: str,
    families: Mapping[str, str],
    cutoffs: Mapping[str, str],
    foreign: Mapping[str, str],
) -> str:
    """The error for an unknown metric name: the closest few spellings, not every name.

    ``name`` is the unknown name as written and ``spec`` the whole metric string; the other
    parameters are :func:`suggestions`'.

    Examples
    --------
    >>> fams = {"ndcg": "ndcg", "ndcg_rel": "ndcg_rel", "dcg": "dcg"}
    >>> rules = {"ndcg": "optional", "ndcg_rel": "none", "dcg": "optional"}
    >>> print(unknown_metric_message("ndcgrel", "ndcgrel@10", fams, rules, {}))
    unknown metric 'ndcgrel' in 'ndcgrel@10'; did you mean 'ndcg_rel'? Close names: 'ndcg_rel',
    'ndcg', 'dcg' (all: polars_rankeval.known_metrics())
    >>> print(unknown_metric_message("ndcgrel", "ndcgrel", fams, rules, {}))
    unknown metric 'ndcgrel'; did you mean 'ndcg_rel', 'ndcg' or 'dcg'? (all:
    polars_rankeval.known_metrics())
    >>> print(unknown_metric_message("zzz", "zzz", fams, rules, {}))
    unknown metric 'zzz'; no known name is close (all: polars_rankeval.known_metrics())
    """
    rest = spec.strip()[len(name) :]
    where = f"unknown metric {name!r}" + (f" in {spec.strip()!r}" if rest else "")
    every = "(all: polars_rankeval.known_metrics())"
    close = suggestions(name, rest, families, cutoffs, foreign)
    if not close:
        return f"{where}; no known name is close {every}"
    if not rest:
        shown = ", ".join(repr(c) for c in close[:-1])
        listed = f"{shown} or {close[-1]!r}" if shown else repr(close[-1])
        return f"{where}; did you mean {listed}? {every}"
    # The best form ready to paste, then the close names alone (the cutoff may not fit them).
    names = [re.split(r"[@(]", c, maxsplit=1)[0] for c in close]
    return (
        f"{where}; did you mean {close[0]!r}? Close names: "
        f"{', '.join(repr(n) for n in names)} {every}"
    )


def fixed_cutoff(text: str) -> str | None:
    """A cutoff typed with look-alike letters, as digits (``1O`` is ``10``), else None.

    Examples
    --------
    >>> fixed_cutoff("1O"), fixed_cutoff("ten")
    ('10', None)
    """
    fixed = text.strip().translate(_LOOKALIKES)
    return fixed if fixed != text.strip() and fixed.isdigit() else None


def unreadable_hint(spec: str, foreign: Mapping[str, str]) -> str:
    """A hint for a metric string the grammar cannot read, or ``""``.

    An ir_measures name in the wrong case (``ndcg(dcg='exp-log2')@10``: those names are
    case-sensitive). trec_eval's ``-m`` forms (``P.5,10``) need no hint: the parser reads them.

    Examples
    --------
    >>> print(unreadable_hint("ndcg(dcg='exp-log2')@10", {"nDCG": "ndcg"}))
    ; did you mean "nDCG(dcg='exp-log2')@10"? (ir_measures names are case-sensitive)
    """
    found = re.match(r"[^\W\d]\w*", spec.strip())
    if found is None:
        return ""
    lowered = found[0].lower()
    spelling = next((name for name in foreign if name.lower() == lowered), None)
    if spelling is None:
        return ""
    fixed = spelling + spec.strip()[found.end() :]
    if fixed == spec.strip():  # the case is right ("P."): something else is wrong
        return ""
    return f"; did you mean {fixed!r}? (ir_measures names are case-sensitive)"
