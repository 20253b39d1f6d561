"""trec_eval 10's ``binG``, ``G``, ``ndcg_rel``, ``Rndcg``, ``rbp_resid`` and interpolated measures.

* Conformance: every per-query value and every ``all`` line of these measures in trec_eval's
  own expected outputs (``tests/data/expected_v10``), to the 4 printed decimals.
* Differential: per query against pytrec_eval (trec_eval's C code) on generated logs.
* ``rbp_resid``: against a plain loop of ``m_rbp_resid.c``, and under ``ties="expected"``
  against brute force over every tie ordering; the other gain measures refuse that option.
* Streaming: each family plans onto the streaming engine without an in-memory fallback.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import pytrec_eval
import reference as ref
from hypothesis import given, settings
from hypothesis import strategies as st
from test_conformance import ALL, CASES, PRINT_TOL, joined_frame, read_expected
from test_differential import FAST, Log, logs, trec_dicts
from test_streaming import LOG, assert_streams, one_pass
from test_ties import TieLog, expected_over_orderings, tie_logs

import polars_rankeval as rke

#: trec_eval measure -> our metric string.
GAIN_MEASURES = {
    "binG": "binG",
    "G": "G",
    "ndcg_rel": "ndcg_rel",
    "Rndcg": "Rndcg",
    "rbp_resid": "rbp_resid",
}
CONFORMANCE_CASES = [name for name in CASES if name != "trunc.skip"]


def _conformance_params() -> list[Any]:
    params = []
    for case_name in CONFORMANCE_CASES:
        table = read_expected(CASES[case_name].expected)
        for measure in GAIN_MEASURES:
            assert measure in table, (case_name, measure)  # every file prints them
            params.append(pytest.param(case_name, measure, id=f"{case_name}-{measure}"))
    return params


def _ours(case_name: str, metrics: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    case = CASES[case_name]
    lf = joined_frame(case)
    options = {"relevance_level": case.relevance_level, "missing_queries": case.missing_queries}
    per_query = rke.evaluate(lf, metrics, per_query=True, **options)
    means = rke.evaluate(lf, metrics, **options)
    per_query_df, means_df = pl.collect_all([per_query, means])
    return per_query_df, means_df


def _assert_printed(printed: dict[str, str], got: dict[str, float], context: str) -> None:
    """Every printed value (per query and ``all``) equals ours to the printed decimals."""
    bad = []
    for query, text in printed.items():
        value = got.get(query)
        ok = value is not None and (f"{value:.4f}" == text or abs(value - float(text)) <= PRINT_TOL)
        if not ok:
            bad.append(f"{query}: trec_eval {text}, ours {value!r}")
    assert not bad, f"{context}:\n" + "\n".join(bad)
    assert set(got) == set(printed), f"{context}: query sets differ"


@pytest.mark.parametrize(("case_name", "measure"), _conformance_params())
def test_conformance(case_name: str, measure: str) -> None:
    printed = read_expected(CASES[case_name].expected)[measure]
    metric = GAIN_MEASURES[measure]
    per_query, means = _ours(case_name, [metric])
    got = {str(q): v for q, v in per_query.select("query", metric).iter_rows()}
    got[ALL] = means[metric].item()
    _assert_printed(printed, got, f"{case_name} {measure}")


# ---------------------------------------------------------------------------------------------
# Differential against pytrec_eval
# ---------------------------------------------------------------------------------------------

PYTREC = {"binG": "binG", "G": "G", "ndcg_rel": "ndcg_rel", "Rndcg": "Rndcg"}
TOL = 1e-9


def _pytrec(log: Log, relevance_level: int) -> dict[str, dict[str, float]]:
    qrels, run = trec_dicts(log)
    # pytrec_eval crashes on a query whose labels are all negative (see test_differential)
    qrels = {q: labels for q, labels in qrels.items() if max(labels.values()) >= 0}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(PYTREC), relevance_level=relevance_level)
    return evaluator.evaluate(run)  # type: ignore[no-any-return]


@settings(FAST, max_examples=150)
@given(log=logs(), relevance_level=st.sampled_from([1, 2]))
def test_matches_pytrec_eval(log: Log, relevance_level: int) -> None:
    want = _pytrec(log, relevance_level)
    metrics = list(PYTREC.values())
    out = rke.evaluate(log.frame(), metrics, per_query=True, relevance_level=relevance_level)
    got = {str(row.pop("query")): row for row in out.iter_rows(named=True)}
    bad = []
    for query, row in want.items():
        for measure, metric in PYTREC.items():
            g, w = got[query][metric], row[measure]
            if g is None or not math.isclose(g, w, rel_tol=0.0, abs_tol=TOL):
                bad.append(f"{query} {metric}: got {g!r}, pytrec_eval {w!r}")
    assert not bad, "\n".join(bad)


# ---------------------------------------------------------------------------------------------
# rbp_resid: a plain loop of m_rbp_resid.c, and its closed form under tied scores
# ---------------------------------------------------------------------------------------------


def rbp_resid_loop(query: ref.Query, p: float = 0.9) -> float:
    """``m_rbp_resid.c``: unjudged = retrieved with no label or a negative one."""
    unjudged, total, cur_p = 0, 0.0, 1.0
    for position in range(len(query.ranking)):
        if not query.is_judged(query.label_at(position)):
            unjudged += 1
            total += cur_p
        cur_p *= p
    return cur_p + (1 - p) * total if unjudged else 0.0


@settings(FAST, max_examples=100)
@given(log=logs(), p=st.sampled_from([0.5, 0.9, 0.95]))
def test_rbp_resid_matches_loop(log: Log, p: float) -> None:
    metric = "rbp_resid" if p == 0.9 else f"rbp_resid(p={p})"
    out = rke.evaluate(log.frame(), [metric], per_query=True)
    got = {str(q): v for q, v in out.iter_rows()}
    want = {str(q): rbp_resid_loop(query, p) for q, query in ref.queries(log.rows).items()}
    assert sorted(got) == sorted(want)
    for query, value in want.items():
        assert math.isclose(got[query], value, abs_tol=TOL), (query, got[query], value)


@settings(FAST, max_examples=60)
@given(log=tie_logs(), relevance_level=st.sampled_from([1, 2]))
def test_rbp_resid_expected_ties_match_brute_force(log: TieLog, relevance_level: int) -> None:
    want = expected_over_orderings(log.rows, {"rbp_resid": rbp_resid_loop}, relevance_level)
    out = rke.evaluate(
        log.frame(), ["rbp_resid"], per_query=True, ties="expected", relevance_level=relevance_level
    )
    got = {str(q): v for q, v in out.iter_rows()}
    assert sorted(got) == sorted(want)
    for query, row in want.items():
        assert math.isclose(got[query], row["rbp_resid"], abs_tol=TOL), (query, got[query], row)


@pytest.mark.parametrize("metric", ["binG", "G", "ndcg_rel", "Rndcg"])
def test_without_closed_form_refuse_expected_ties(metric: str) -> None:
    with pytest.raises(rke.InvalidOptionError, match="no closed form"):
        rke.evaluate(LOG, [metric], ties="expected")


def test_hand_rndcg_end_point_needs_two_rows_past_the_ideal_list() -> None:
    # One relevant row (P = 1): with 2 retrieved rows trec_eval's loop adds no end point,
    # with 3 it adds DCG(end) / IDCG(P).
    log = pl.DataFrame(
        {
            "query": ["a"] * 2 + ["b"] * 3,
            "item": ["x", "y", "x", "y", "z"],
            "score": [2.0, 1.0, 3.0, 2.0, 1.0],
            "relevance": [0, 1, 0, 0, 1],
        }
    )
    out = rke.evaluate(log, ["Rndcg"], per_query=True)
    values = dict(out.iter_rows())
    # a: the only point is ndcg@1 = 0 (an end point would add (1/log2(3)) / 1).
    assert values["a"] == 0.0
    # b: ndcg@1 = 0 and the end point DCG(3) / IDCG(1) = (1/log2(4)) / 1.
    assert values["b"] == pytest.approx((0.0 + 0.5) / 2)


# ---------------------------------------------------------------------------------------------
# Streaming
# ---------------------------------------------------------------------------------------------

STREAMED = ["binG", "G", "ndcg_rel", "Rndcg", "rbp_resid", "rbp_resid(p=0.5)"]


@pytest.mark.parametrize("per_query", [False, True])
def test_streams(tmp_path: Path, per_query: bool) -> None:
    path = tmp_path / "log.parquet"
    LOG.write_parquet(path)
    for metric in STREAMED:
        plan = one_pass(pl.scan_parquet(path), [metric], per_query=per_query, by="system")
        assert_streams(plan)
    expected_plan = one_pass(pl.scan_parquet(path), ["rbp_resid"], ties="expected", by="system")
    assert_streams(expected_plan)
    streamed = one_pass(pl.scan_parquet(path), STREAMED, per_query=True, by="system")
    eager = rke.evaluate(LOG, STREAMED, per_query=True, by="system")
    assert streamed.collect(engine="streaming").equals(eager)
