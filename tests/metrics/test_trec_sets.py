"""trec_eval's set measures and their relatives (``polars_rankeval/metrics/trec_sets.py``).

``set_P``, ``set_recall``, ``set_map``, ``set_F``, ``set_relative_P``, ``relative_P_k``,
``Rprec_mult``, ``utility``, ``num_nonrel_judged_ret`` and ``unj_k`` are checked

* against every per-query value and ``all`` line trec_eval 10 prints for them in its own test
  outputs (``tests/data/expected_v10``), values read from the files;
* per query against pytrec_eval (trec_eval's C code) on generated logs, for those it has
  (it has no ``unj``), and against plain loops written here from trec_eval's ``m_*.c``;
* under ``ties="expected"``, against the mean over every ordering of the tied rows;
* on the streaming engine, with no in-memory fallback.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import polars as pl
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

import polars_rankeval as rke
from polars_rankeval.errors import InvalidOptionError
from tests.conformance.test_conformance import (
    ALL,
    CASES,
    Case,
    Want,
    _mismatches,
    _printed,
    joined_frame,
)
from tests.conformance.test_conformance import read_expected as read_trec_output
from tests.engine.test_streaming import assert_streams, one_pass
from tests.engine.test_ties import assert_match, expected_over_orderings, package_values, tie_logs
from tests.properties.test_differential import FAST, Log, logs, package_per_query, trec_dicts
from tests.support import reference as ref

# ---------------------------------------------------------------------------------------------
# Conformance with trec_eval 10's own outputs
# ---------------------------------------------------------------------------------------------

#: trec_eval measures without a parameter -> our metric string.
SET_MEASURES = {
    "set_P": "set_p",
    "set_recall": "set_recall",
    "set_map": "set_map",
    "set_F": "set_f",
    "set_relative_P": "set_relative_p",
    "utility": "utility",
}
COUNTS = {"num_nonrel_judged_ret": "num_nonrel_judged_ret"}
CUT = re.compile(r"^(?P<family>relative_P|unj)_(?P<k>\d+)$")
CUT_NAMES = {"relative_P": "relative_p", "unj": "unj"}
MULT = re.compile(r"^Rprec_mult_(?P<mult>[0-9.]+)$")
UTILITY = re.compile(r"^utility_(?P<a>[^,]+),(?P<b>[^,]+),(?P<c>[^,]+),(?P<d>[^,]+)$")

#: The five all_trec cases of test_conformance, plus -m with measure parameters.
MY_CASES = {
    **{name: case for name, case in CASES.items() if name != "trunc.skip"},
    # trec_eval -q ... -m Rprec_mult.5.0,0.2,0.35 -mutility.2,-1,0,0 ... qrels.test results.test
    "test.meas_params": Case("qrels.test", "results.test", "out.test.meas_params"),
}


def our_name(measure: str) -> str | None:
    """Our metric string for one of trec_eval's printed measure names (None: not ours)."""
    if measure in SET_MEASURES:
        return SET_MEASURES[measure]
    if measure in COUNTS:
        return COUNTS[measure]
    if match := CUT.match(measure):
        return f"{CUT_NAMES[match['family']]}@{int(match['k'])}"
    if match := MULT.match(measure):
        return f"rprec_mult(mult={float(match['mult'])})"
    if match := UTILITY.match(measure):
        a, b, c, d = (float(match[key]) for key in "abcd")
        return f"utility(a={a},b={b},c={c},d={d})"
    return None


def expectations(expected_file: str) -> dict[str, dict[str, Want]]:
    wants = {}
    for measure, values in read_trec_output(expected_file).items():
        name = our_name(measure)
        if name is not None:
            wants[name] = _printed(values, integer=measure in COUNTS)
    return wants


EXPECTED = {name: expectations(case.expected) for name, case in MY_CASES.items()}


def test_every_measure_of_ours_in_the_files_is_checked() -> None:
    """The files hold each family; a renamed measure would silently drop out otherwise."""
    families = {name.partition("@")[0].partition("(")[0] for e in EXPECTED.values() for name in e}
    assert families == {*SET_MEASURES.values(), "num_nonrel_judged_ret", "relative_p", "unj"} | {
        "rprec_mult"
    }
    assert "rprec_mult(mult=0.35)" in EXPECTED["test.meas_params"]
    assert "utility(a=2.0,b=-1.0,c=0.0,d=0.0)" in EXPECTED["test.meas_params"]
    assert len(EXPECTED["test.aq"]) == 1 + 6 + 9 + 3 + 10  # counts, sets, relative_P, unj, mult


def _ours(case_name: str) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    case = MY_CASES[case_name]
    lf = joined_frame(case)
    metrics = list(EXPECTED[case_name])
    options = {"relevance_level": case.relevance_level, "missing_queries": case.missing_queries}
    per_query, means = pl.collect_all(
        [
            rke.evaluate(lf, metrics, per_query=True, **options),
            rke.evaluate(lf, metrics, per_query=False, **options),
        ]
    )
    rows = {
        label: dict(zip(per_query["query"], per_query[label], strict=True)) for label in metrics
    }
    return rows, means.row(0, named=True)


OURS: dict[str, tuple[dict[str, dict[str, Any]], dict[str, Any]]] = {}


def _cached(case_name: str) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    if case_name not in OURS:
        OURS[case_name] = _ours(case_name)
    return OURS[case_name]


@pytest.mark.parametrize(
    ("case_name", "label"),
    [(case, label) for case, wants in EXPECTED.items() for label in wants],
)
def test_matches_trec_eval(case_name: str, label: str) -> None:
    per_query, means = _cached(case_name)
    got = dict(per_query[label])
    got[ALL] = means[label]
    lines = _mismatches(EXPECTED[case_name][label], got)
    assert not lines, f"{label} on {case_name} disagrees with trec_eval:\n" + "\n".join(lines)


def test_conformance_counts() -> None:
    """How many printed values the conformance test compares (reported in the issue)."""
    values = sum(len(wants) for e in EXPECTED.values() for wants in e.values())
    assert values == 1350


# ---------------------------------------------------------------------------------------------
# Plain loops from trec_eval's m_*.c (independent of the package)
# ---------------------------------------------------------------------------------------------


def _counts(q: ref.Query) -> tuple[int, int, int]:
    return len(q.ranking), q.num_rel, q.hits(None)


def ref_set_p(q: ref.Query) -> float:
    ret, _, hits = _counts(q)
    return hits / ret if ret else 0.0


def ref_set_recall(q: ref.Query) -> float:
    _, rel, hits = _counts(q)
    return hits / rel if rel else 0.0


def ref_set_map(q: ref.Query) -> float:
    ret, rel, hits = _counts(q)
    return hits * hits / (ret * rel) if ret and rel else 0.0


def ref_set_f(q: ref.Query, beta: float = 1.0) -> float:
    ret, rel, hits = _counts(q)
    if not hits:
        return 0.0
    p, r = hits / ret, hits / rel
    return (beta + 1.0) * p * r / (beta * p + r)


def ref_set_relative_p(q: ref.Query) -> float:
    ret, rel, hits = _counts(q)
    return hits / min(ret, rel) if ret and rel else 0.0


def ref_utility(q: ref.Query, a: float = 1, b: float = -1, c: float = 0, d: float = 0) -> float:
    ret, rel, hits = _counts(q)
    return a * hits + b * (ret - hits) + c * (rel - hits) + d * (0 + hits - ret - rel)


def ref_num_nonrel_judged_ret(q: ref.Query) -> int:
    return sum(
        1 for item in q.ranking if q.is_judged(q.labels.get(item)) and not q.is_rel(q.labels[item])
    )


def ref_relative_p(q: ref.Query, k: int) -> float:
    return q.hits(k) / min(k, q.num_rel) if q.num_rel else 0.0


def ref_rprec_mult(q: ref.Query, mult: float) -> float:
    cutoff = int(mult * q.num_rel + 0.9)
    return q.hits(cutoff) / cutoff if cutoff else 0.0


def ref_unj(q: ref.Query, k: int) -> float:
    return sum(1 for i in range(q.top(k)) if not q.is_judged(q.label_at(i))) / k


RefFn = Callable[[ref.Query], "float | int"]
CUTOFFS = (1, 2, 3, 5, 10)
MULTS = (0.2, 0.35, 1.0, 1.4, 5.0)


def reference_metrics() -> dict[str, RefFn]:
    table: dict[str, RefFn] = {
        "set_p": ref_set_p,
        "set_recall": ref_set_recall,
        "set_map": ref_set_map,
        "set_f": ref_set_f,
        "set_f(beta=0.5)": lambda q: ref_set_f(q, 0.5),
        "set_relative_p": ref_set_relative_p,
        "utility": ref_utility,
        "utility(a=2,b=-1.5,c=-0.5,d=0.25,num_docs=50)": lambda q: (
            ref_utility(q, 2, -1.5, -0.5, 0.0)
            + 0.25 * (50 + q.hits(None) - len(q.ranking) - q.num_rel)
        ),
        "num_nonrel_judged_ret": ref_num_nonrel_judged_ret,
    }
    for k in CUTOFFS:
        table[f"relative_p@{k}"] = lambda q, k=k: ref_relative_p(q, k)
        table[f"unj@{k}"] = lambda q, k=k: ref_unj(q, k)
    for mult in MULTS:
        name = "rprec_mult" if mult == 1.0 else f"rprec_mult(mult={mult})"
        table[name] = lambda q, mult=mult: ref_rprec_mult(q, mult)
    return table


REFERENCE = reference_metrics()
NAMES = list(REFERENCE)


@settings(FAST, max_examples=100)
@given(log=logs(), relevance_level=st.sampled_from([1, 2]))
def test_matches_plain_loops(log: Log, relevance_level: int) -> None:
    got = package_per_query(log.frame(), NAMES, relevance_level=relevance_level)
    queries = ref.queries(log.rows, relevance_level=relevance_level)
    want = {str(q): {n: fn(query) for n, fn in REFERENCE.items()} for q, query in queries.items()}
    assert_match(got, want, NAMES)


# ---------------------------------------------------------------------------------------------
# pytrec_eval
# ---------------------------------------------------------------------------------------------

PYTREC = {
    "set_P": "set_p",
    "set_recall": "set_recall",
    "set_map": "set_map",
    "set_F": "set_f",
    "set_relative_P": "set_relative_p",
    "utility": "utility",
    "num_nonrel_judged_ret": "num_nonrel_judged_ret",
    **{f"relative_P_{k}": f"relative_p@{k}" for k in CUTOFFS},
    **{
        f"Rprec_mult_{mult:.2f}": "rprec_mult" if mult == 1.0 else f"rprec_mult(mult={mult})"
        for mult in MULTS
    },
}
PYTREC_REQUEST = {
    "set_P",
    "set_recall",
    "set_map",
    "set_F",
    "set_relative_P",
    "utility",
    "num_nonrel_judged_ret",
    "relative_P." + ",".join(str(k) for k in CUTOFFS),
    "Rprec_mult." + ",".join(str(m) for m in MULTS),
}


def test_pytrec_eval_has_the_measures() -> None:
    for family in ("set_P", "set_recall", "set_map", "set_F", "set_relative_P", "relative_P"):
        assert family in pytrec_eval.supported_measures
    for family in ("Rprec_mult", "utility", "num_nonrel_judged_ret"):
        assert family in pytrec_eval.supported_measures
    assert "unj" not in pytrec_eval.supported_measures  # checked by conformance and loops


def _pytrec(log: Log, relevance_level: int, request: set[str]) -> dict[str, dict[str, float]]:
    qrels, run = trec_dicts(log)
    # pytrec_eval crashes on a query whose labels are all negative (see test_differential)
    qrels = {q: labels for q, labels in qrels.items() if max(labels.values()) >= 0}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, request, relevance_level=relevance_level)
    return evaluator.evaluate(run)  # type: ignore[no-any-return]


@settings(FAST, max_examples=150)
@given(log=logs(), relevance_level=st.sampled_from([1, 2]))
def test_matches_pytrec_eval(log: Log, relevance_level: int) -> None:
    result = _pytrec(log, relevance_level, PYTREC_REQUEST)
    # set_F with its parameter: pytrec_eval reports it as "set_F" too, so a second evaluator
    beta = _pytrec(log, relevance_level, {"set_F.0.5"})
    want = {
        q: {
            **{PYTREC[name]: value for name, value in row.items()},
            "set_f(beta=0.5)": beta[q]["set_F"],
        }
        for q, row in result.items()
    }
    metrics = [*PYTREC.values(), "set_f(beta=0.5)"]
    got = package_per_query(log.frame(), metrics, relevance_level=relevance_level)
    got = {q: row for q, row in got.items() if q in want}
    assert set(got) == set(want)
    bad = [
        f"{q} {m}: got {got[q][m]!r}, pytrec_eval {want[q][m]!r}"
        for q in want
        for m in metrics
        if not math.isclose(got[q][m], want[q][m], rel_tol=0.0, abs_tol=1e-9)
    ]
    assert not bad, "\n".join(bad)


# ---------------------------------------------------------------------------------------------
# ties="expected"
# ---------------------------------------------------------------------------------------------


@settings(FAST, max_examples=100)
@given(log=tie_logs(), relevance_level=st.sampled_from([1, 2]))
def test_expected_ties_match_brute_force(log: Any, relevance_level: int) -> None:
    want = expected_over_orderings(log.rows, REFERENCE, relevance_level)
    got = package_values(log.frame(), NAMES, ties="expected", relevance_level=relevance_level)
    assert_match(got, want, NAMES)


def test_expected_ties_hand_worked() -> None:
    # Three rows tied at the top: one relevant, one judged non-relevant, one unjudged; R = 2.
    log = pl.DataFrame(
        {
            "query": "q",
            "item": ["a", "b", "c", "d"],
            "score": [1.0, 1.0, 1.0, None],
            "relevance": [1, 0, None, 1],
        }
    )
    got = rke.evaluate(log, ["relative_p@1", "unj@1", "rprec_mult(mult=0.2)"], ties="expected")
    # each of the three is first with probability 1/3; mult 0.2: cutoff ⌊0.4 + 0.9⌋ = 1
    assert got.row(0) == pytest.approx((1 / 3, 1 / 3, 1 / 3), abs=1e-15)
    trec = rke.evaluate(log, ["relative_p@1", "unj@1", "rprec_mult(mult=0.2)"])
    # trec_eval's order: item descending among the tied rows, so c (unjudged) is first
    assert trec.row(0) == (0.0, 1.0, 0.0)


# ---------------------------------------------------------------------------------------------
# Streaming (each family alone: tests/engine/test_streaming.py METRICS), names, options, namespace
# ---------------------------------------------------------------------------------------------

STREAMING = [
    "set_p",
    "set_recall",
    "set_map",
    "set_f(beta=0.5)",
    "set_relative_p",
    "relative_p@5",
    "rprec_mult(mult=0.2)",
    "utility(a=2,d=1,num_docs=10)",
    "num_nonrel_judged_ret",
    "unj@5",
]


@pytest.fixture
def log_path(tmp_path: Any) -> Any:
    from tests.engine.test_streaming import LOG

    path = tmp_path / "log.parquet"
    LOG.write_parquet(path)
    return path


def test_all_stream_together_with_expected_ties(log_path: Any) -> None:
    assert_streams(one_pass(pl.scan_parquet(log_path), STREAMING, ties="expected"))


def test_names_and_options() -> None:
    names = [
        rke.parse_metric(text).name
        for text in (
            "SET_P",
            "set_F(beta=0.5)",
            "relative_P_5",
            "unj_10",
            "rprec_mult(mult=0.2)",
            "rprec_mult(mult=1.0)",
            "utility(a=2,b=-1)",
        )
    ]
    assert names == [
        "set_p",
        "set_f(beta=0.5)",
        "relative_p@5",
        "unj@10",
        "rprec_mult(mult=0.2)",
        "rprec_mult",
        "utility(a=2)",
    ]
    for bad in ("relative_p", "unj", "set_p@5", "rprec_mult(mult=0)", "set_f(beta=x)"):
        with pytest.raises(InvalidOptionError):
            rke.parse_metric(bad)
    with pytest.raises(InvalidOptionError):
        rke.parse_metric("utility(num_docs=-1)")


def test_summaries() -> None:
    log = pl.DataFrame(
        {
            "query": ["q1", "q1", "q2", "q2"],
            "item": ["a", "b", "a", "b"],
            "score": [2.0, 1.0, 2.0, 1.0],
            "relevance": [0, 0, 1, 0],
        }
    )
    # num_nonrel_judged_ret is summed over queries, utility averaged (as trec_eval)
    assert rke.evaluate(log, ["num_nonrel_judged_ret", "utility"]).row(0) == (3, -1.0)


def test_namespace_methods() -> None:
    log = pl.DataFrame(
        {"query": "q", "item": ["a", "b", "c"], "score": [2.0, 1.0, None], "relevance": [1, -1, 1]}
    )
    cases = {
        "set_p": ("set_p", {}),
        "set_recall": ("set_recall", {}),
        "set_map": ("set_map", {}),
        "set_f": ("set_f(beta=0.5)", {"beta": 0.5}),
        "set_relative_p": ("set_relative_p", {}),
        "relative_p": ("relative_p@2", {"k": 2}),
        "rprec_mult": ("rprec_mult(mult=2)", {"mult": 2}),
        "utility": ("utility(a=3)", {"a": 3}),
        "num_nonrel_judged_ret": ("num_nonrel_judged_ret", {}),
        "unj": ("unj@2", {"k": 2}),
    }
    together = rke.evaluate(log, [name for name, _ in cases.values()])
    for method, (name, kwargs) in cases.items():
        alone = getattr(log.rank_eval, method)(**kwargs)
        assert alone.columns == [name], method
        assert alone.item() == together[name].item(), method


@pytest.mark.parametrize("convention", ["ranx", "gdeval", "torchmetrics"])
def test_presets_without_the_measures_refuse_them(convention: str) -> None:
    log = pl.DataFrame({"query": "q", "item": ["a"], "score": [1.0], "relevance": [1]})
    with pytest.raises(InvalidOptionError):
        rke.evaluate(log, ["set_p"], convention=convention)


def test_expression_namespace_matches_frame_level() -> None:
    from tests.engine.test_streaming import LOG

    frame = rke.evaluate(LOG, STREAMING, by="system")
    grouped = (
        LOG.group_by("system")
        .agg(**{name: pl.col("relevance").rank_eval.metric(name) for name in STREAMING})
        .sort("system")
    )
    assert frame.equals(grouped.select(frame.columns))
