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
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

import polars_rankeval as rke
from tests.conformance.test_conformance import ALL, CASES, PRINT_TOL, joined_frame, read_expected
from tests.engine.test_streaming import LOG, assert_streams, one_pass
from tests.engine.test_ties import TieLog, expected_over_orderings, tie_logs
from tests.properties.test_differential import FAST, Log, logs, trec_dicts
from tests.support import reference as ref

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


# Interpolated precision and geometric means: trec_eval name -> our metric (string or object).
LEVEL_MEASURE = "iprec_at_recall_"
SUMMARY_ONLY = {"gm_map": "gm_map", "gm_bpref": "gm_bpref"}
PARAM_CASES = {**CASES, "meas_params": replace(CASES["test.aq"], expected="out.test.meas_params")}


def _interpolated(measure: str) -> str | rke.Metric | None:
    if measure.startswith(LEVEL_MEASURE):
        return f"iprec_at_recall(level={float(measure.removeprefix(LEVEL_MEASURE))})"
    if measure == "11pt_avg":
        return "11pt_avg"
    if measure == "11pt_avg_.25,.5,.75":  # -m 11pt_avg..25,.5,.75
        return rke.metrics.eleven_pt_avg(levels=[0.25, 0.5, 0.75])
    return SUMMARY_ONLY.get(measure)


def _interpolated_params() -> list[Any]:
    params = []
    for case_name in [*CONFORMANCE_CASES, "meas_params"]:
        table = read_expected(PARAM_CASES[case_name].expected)
        measures = [m for m in table if _interpolated(m) is not None]
        params.extend(pytest.param(case_name, m, id=f"{case_name}-{m}") for m in measures)
    return params


PARAMS = _interpolated_params()


def test_interpolated_conformance_covers_the_files() -> None:
    # 11 levels + 11pt_avg + gm_map + gm_bpref in the 5 all_trec files; 5 levels + 11pt in one
    assert len(PARAMS) == 5 * 14 + 6


@pytest.mark.parametrize(("case_name", "measure"), PARAMS)
def test_interpolated_conformance(case_name: str, measure: str) -> None:
    case = PARAM_CASES[case_name]
    printed = read_expected(case.expected)[measure]
    metric = _interpolated(measure)
    assert metric is not None
    lf = joined_frame(case)
    options = {"relevance_level": case.relevance_level, "missing_queries": case.missing_queries}
    per_query, means = pl.collect_all(
        [
            rke.evaluate(lf, [metric], per_query=True, **options),
            rke.evaluate(lf, [metric], **options),
        ]
    )
    column = per_query.columns[-1]
    got = {str(q): v for q, v in per_query.select("query", column).iter_rows()}
    got[ALL] = means[column].item()
    if measure in SUMMARY_ONLY:
        # trec_eval prints gm_* only over queries; per query they are AP / bpref.
        assert set(printed) == {ALL}
        base = "map" if measure == "gm_map" else "bpref"
        _assert_printed(read_expected(case.expected)[base], {**got, ALL: mean_of(got)}, base)
        got = {ALL: got[ALL]}
    _assert_printed(printed, got, f"{case_name} {measure}")


def mean_of(values: dict[str, float]) -> float:
    per_query = [v for q, v in values.items() if q != ALL]
    return sum(per_query) / len(per_query)


def test_gm_floors_zero_values() -> None:
    log = pl.DataFrame(
        {"query": ["a", "b", "c"], "item": "x", "score": 1.0, "relevance": [1, 0, 1]}
    )
    # AP 1, 0, 1: exp((0 + log(0.00001) + 0) / 3), not 0 and not the mean 2/3
    got = rke.evaluate(log, ["gm_map", "map"])
    assert got["gm_map"].item() == pytest.approx(0.00001 ** (1 / 3), rel=1e-12)
    assert got["map"].item() == pytest.approx(2 / 3)


def test_iprec_needs_a_level() -> None:
    with pytest.raises(rke.InvalidOptionError, match="needs a recall level"):
        rke.evaluate(LOG, ["iprec_at_recall"])
    with pytest.raises(rke.InvalidOptionError, match=r"\[0, 1\]"):
        rke.evaluate(LOG, ["iprec_at_recall(level=1.5)"])


@pytest.mark.parametrize("metric", ["iprec_at_recall(level=0.5)", "11pt_avg", "gm_bpref"])
def test_interpolated_refuse_expected_ties(metric: str) -> None:
    with pytest.raises(rke.InvalidOptionError, match="no closed form"):
        rke.evaluate(LOG, [metric], ties="expected")


def test_plot_precision_recall_uses_the_family() -> None:
    levels = [0.0, 0.3, 1.0]
    data = rke.plot.precision_recall_data(LOG.filter(pl.col("system") == "A"), recall_levels=levels)
    metrics = [f"iprec_at_recall(level={level})" for level in levels]
    means = rke.evaluate(LOG.filter(pl.col("system") == "A"), metrics)
    assert data["precision"].to_list() == list(means.row(0))


# ---------------------------------------------------------------------------------------------
# Differential against pytrec_eval
# ---------------------------------------------------------------------------------------------

PYTREC = {
    "binG": "binG",
    "G": "G",
    "ndcg_rel": "ndcg_rel",
    "Rndcg": "Rndcg",
    "gm_map": "gm_map",
}
# pytrec_eval is trec_eval 9: iprec_at_recall and 11pt_avg round level·R as (long)(x + 0.9)
# where trec_eval 10 uses lround, so they are checked against a loop of the v10 C code below.
PYTREC_MEASURES = {"binG", "G", "ndcg_rel", "Rndcg", "gm_map"}
TOL = 1e-9


def _pytrec(log: Log, relevance_level: int) -> dict[str, dict[str, float]]:
    qrels, run = trec_dicts(log)
    # pytrec_eval crashes on a query whose labels are all negative (see test_differential)
    qrels = {q: labels for q, labels in qrels.items() if max(labels.values()) >= 0}
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, PYTREC_MEASURES, relevance_level=relevance_level
    )
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
            if measure == "gm_map" and g is not None:
                g = math.log(max(g, 0.00001))  # pytrec_eval keeps trec_eval's per-query log
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


def iprec_loop(query: ref.Query, levels: list[float]) -> list[float]:
    """``m_iprec_at_recall.c`` (trec_eval 10), line for line."""
    num_ret = len(query.ranking)
    num_rel_ret = query.hits(None)
    # lround: halves away from zero
    cutoffs = [math.floor(level * query.num_rel + 0.5) for level in levels]
    values = [0.0] * len(levels)
    current = len(levels) - 1
    while current >= 0 and cutoffs[current] > num_rel_ret:
        current -= 1
    int_precis = num_rel_ret / num_ret if num_ret else 0.0
    rel_so_far = num_rel_ret
    i = num_ret
    while i > 0 and rel_so_far > 0:
        int_precis = max(int_precis, rel_so_far / i)
        if query.is_rel(query.label_at(i - 1)):
            while current >= 0 and rel_so_far == cutoffs[current]:
                values[current] = int_precis
                current -= 1
            rel_so_far -= 1
        i -= 1
    while current >= 0:
        values[current] = int_precis
        current -= 1
    return values


LOOP_LEVELS = [0.0, 0.1, 0.25, 0.3, 0.5, 0.75, 1.0]


@settings(FAST, max_examples=150)
@given(log=logs(), relevance_level=st.sampled_from([1, 2]))
def test_interpolated_match_the_c_loop(log: Log, relevance_level: int) -> None:
    metrics = [f"iprec_at_recall(level={level})" for level in LOOP_LEVELS]
    eleven = rke.metrics.eleven_pt_avg(levels=LOOP_LEVELS)
    out = rke.evaluate(
        log.frame(), [*metrics, eleven], per_query=True, relevance_level=relevance_level
    )
    got = {str(row[0]): row[1:] for row in out.iter_rows()}
    evaluated = ref.queries(log.rows, relevance_level=relevance_level)
    assert sorted(got) == sorted(str(q) for q in evaluated)
    for q, query in evaluated.items():
        want = iprec_loop(query, LOOP_LEVELS)
        want.append(sum(want) / len(want))
        assert all(
            math.isclose(g, w, abs_tol=TOL) for g, w in zip(got[str(q)], want, strict=True)
        ), (q, got[str(q)], want)


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

STREAMED = [
    "binG",
    "G",
    "ndcg_rel",
    "Rndcg",
    "rbp_resid",
    "rbp_resid(p=0.5)",
    "iprec_at_recall(level=0.5)",
    "11pt_avg",
    "gm_map",
    "gm_bpref",
]


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
