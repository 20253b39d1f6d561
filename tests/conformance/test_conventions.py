"""Convention presets against the real libraries (sklearn, ranx) and, for tools that do not
install here (Spark needs a JVM, Recommenders pulls a large stack), against worked examples of
their documented source formulas; trec_eval's NDCG gain parameters against its printed output.
torchmetrics and ir_measures have their own files (``test_torchmetrics.py``,
``test_ir_measures.py``).
"""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from sklearn.metrics import dcg_score, ndcg_score

import polars_rankeval as rke


def _one_query(labels, scores, **extra):
    return pl.DataFrame(
        {
            "query": ["q"] * len(labels),
            "item": [f"d{i}" for i in range(len(labels))],
            "score": scores,
            "relevance": labels,
            **extra,
        },
        schema_overrides={"relevance": pl.Int64, "score": pl.Float64},
    )


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("k", [None, 1, 3, 5])
def test_sklearn_preset_matches_ndcg_score_and_dcg_score(seed, k):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 9))
    labels = rng.integers(0, 4, size=n)
    scores = rng.integers(0, 3, size=n).astype(float)  # many ties: sklearn averages them
    log = _one_query(labels.tolist(), scores.tolist())
    # A judged item the "system" did not retrieve: sklearn never sees it.
    log = pl.concat([log, _one_query([3], [None]).with_columns(item=pl.lit("unseen"))])
    suffix = "" if k is None else f"@{k}"
    ours = rke.evaluate(log, [f"ndcg{suffix}", f"dcg{suffix}"], convention="sklearn")
    expected_ndcg = ndcg_score([labels], [scores], k=k)
    expected_dcg = dcg_score([labels], [scores], k=k)
    assert ours[f"ndcg{suffix}"][0] == pytest.approx(expected_ndcg, abs=1e-12)
    assert ours[f"dcg{suffix}"][0] == pytest.approx(expected_dcg, abs=1e-12)


def test_sklearn_preset_ignore_ties_equals_trec_tie_break_when_no_ties():
    labels, scores = [0, 2, 1, 3], [0.1, 0.4, 0.3, 0.2]
    ours = rke.evaluate(_one_query(labels, scores), ["ndcg@3"], convention="sklearn")
    assert ours["ndcg@3"][0] == pytest.approx(ndcg_score([labels], [scores], k=3), abs=1e-12)


def test_sklearn_preset_refuses_metrics_sklearn_lacks():
    with pytest.raises(rke.InvalidOptionError, match=r"'sklearn' has no 'map'"):
        rke.evaluate(_one_query([1], [1.0]), ["map"], convention="sklearn")


def test_explicit_keyword_wins_over_preset():
    labels, scores = [1, 0, 1], [1.0, 1.0, 1.0]
    log = _one_query(labels, scores)
    averaged = rke.evaluate(log, ["ndcg"], convention="sklearn")["ndcg"][0]
    broken = rke.evaluate(log, ["ndcg"], convention="sklearn", ties="trec")["ndcg"][0]
    # trec order d2, d1, d0: gains 1, 0, 1
    assert broken == pytest.approx((1 + 1 / 2) / (1 + 1 / math.log2(3)), abs=1e-12)
    assert averaged == pytest.approx(ndcg_score([labels], [scores]), abs=1e-12)
    assert averaged != pytest.approx(broken)


# ---- ranx -----------------------------------------------------------------------------------


@pytest.fixture
def ranx() -> Any:
    """ranx, or a skip of this test only: the other presets' tests still run without it."""
    try:
        import ranx as module
    except Exception as error:  # a broken numba/llvmlite install raises more than ImportError
        pytest.skip(f"ranx is not importable: {error!r}")
    return module


def _ranx(ranx, qrels, run, metrics):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), metrics, return_mean=False)
    # ranx returns a bare array for a single metric
    return result if isinstance(result, dict) else {metrics[0]: result}


def test_ranx_preset_e5_graded_and_negative_labels(ranx):
    # metric-conventions E5: qrels q a=2 b=1 c=-1 d=0; run c > b > a > d
    log = pl.DataFrame(
        {
            "query": ["q"] * 4,
            "item": ["a", "b", "c", "d"],
            "score": [2.0, 3.0, 4.0, 1.0],
            "relevance": [2, 1, -1, 0],
        }
    )
    qrels = {"q": {"a": 2, "b": 1, "c": -1, "d": 0}}
    run = {"q": {"a": 2.0, "b": 3.0, "c": 4.0, "d": 1.0}}
    for level in (1, 2):
        theirs = _ranx(ranx, qrels, run, [f"ndcg-l{level}", f"bpref-l{level}", f"map-l{level}"])
        ours = rke.evaluate(log, ["ndcg", "bpref", "map"], convention="ranx", relevance_level=level)
        assert ours["ndcg"][0] == pytest.approx(theirs[f"ndcg-l{level}"][0], abs=1e-12)
        assert ours["bpref"][0] == pytest.approx(theirs[f"bpref-l{level}"][0], abs=1e-12)
        assert ours["map"][0] == pytest.approx(theirs[f"map-l{level}"][0], abs=1e-12)
    # The documented differences from trec_eval at level 2: ndcg 0.5 (ranx) vs 0.6199 (trec)
    trec = rke.evaluate(log, ["ndcg"], relevance_level=2)["ndcg"][0]
    ranx_like = rke.evaluate(log, ["ndcg"], convention="ranx", relevance_level=2)["ndcg"][0]
    assert round(trec, 4) == 0.6199
    assert ranx_like == pytest.approx(0.5, abs=1e-12)
    # ...and bpref 0.5 (ranx) vs 1.0 (trec) at level 1
    assert rke.evaluate(log, ["bpref"])["bpref"][0] == 1.0
    assert rke.evaluate(log, ["bpref"], convention="ranx")["bpref"][0] == 0.5


def test_ranx_preset_rbp_uses_raw_labels(ranx):
    # metric-conventions E7: graded q2 of E1 (x=2, y=1, w=0; ranking y, x, w): ranx 0.28
    log = pl.DataFrame(
        {
            "query": ["q"] * 3,
            "item": ["x", "y", "w"],
            "score": [2.0, 3.0, 1.0],
            "relevance": [2, 1, 0],
        }
    )
    theirs = _ranx(
        ranx, {"q": {"x": 2, "y": 1, "w": 0}}, {"q": {"x": 2.0, "y": 3.0, "w": 1.0}}, ["rbp.9"]
    )
    ours = rke.evaluate(log, ["rbp"], convention="ranx")["rbp"][0]
    assert ours == pytest.approx(theirs["rbp.9"][0], abs=1e-12)
    assert ours == pytest.approx(0.28, abs=1e-12)
    # trec_eval normalises by the query's max label: 0.14
    assert rke.evaluate(log, ["rbp"])["rbp"][0] == pytest.approx(0.14, abs=1e-12)


def test_ranx_preset_counts_queries_without_results_as_zero():
    log = pl.DataFrame(
        {
            "query": ["a", "a", "b"],
            "item": ["x", "y", "z"],
            "score": [1.0, 0.5, None],
            "relevance": [1, 0, 1],
        }
    )
    out = rke.evaluate(log, ["map", "num_q"], convention="ranx")
    assert out.row(0) == (0.5, 2)


# ---- documented formulas: torchmetrics, Spark, Recommenders ----------------------------------


@pytest.fixture
def e6():
    # metric-conventions E6: R = 3; run a(rel), x, b(rel); the third relevant item c unretrieved
    return pl.DataFrame(
        {
            "query": ["q"] * 4,
            "item": ["a", "x", "b", "c"],
            "score": [3.0, 2.0, 1.0, None],
            "relevance": [1, 0, 1, 1],
        }
    )


def test_map_cut_denominators_e6(e6):
    trec = rke.evaluate(e6, ["map@1", "map@2", "map@3"])
    assert [round(v, 4) for v in trec.row(0)] == [0.3333, 0.3333, 0.5556]
    # Spark meanAveragePrecisionAt / Recommenders map_at_k divide by min(R, k): AP@1 = 1
    for convention in ("spark", "recommenders"):
        assert rke.evaluate(e6, ["map@1"], convention=convention)["map@1"][0] == 1.0
    # torchmetrics divides by the relevant items found in the top k: (1 + 2/3) / 2
    torch_like = rke.evaluate(e6, ["map@3"], convention="torchmetrics")["map@3"][0]
    assert torch_like == pytest.approx(5 / 6, abs=1e-12)


def test_torchmetrics_preset_sees_only_supplied_rows(e6):
    out = rke.evaluate(e6, ["recall@3", "ndcg@3", "r_precision"], convention="torchmetrics")
    # Only a, x, b exist for torchmetrics: both relevant items are in the top 3.
    assert out["recall@3"][0] == 1.0
    assert out["ndcg@3"][0] == pytest.approx((1 + 1 / 2) / (1 + 1 / math.log2(3)), abs=1e-12)
    # R = 2 supplied relevant items; top 2 = a, x: one hit
    assert out["r_precision"][0] == 0.5


def test_spark_and_recommenders_relevant_means_a_positive_label():
    # Spark's ground-truth arrays / Recommenders' rating_true hold only the held-out items
    # (positive ratings); a row labelled 0 (from_lists' recommended item outside the ground
    # truth) is not in that set, like an unlabelled one. Only b is relevant: p@2 = 1/2, R = 1.
    log = pl.DataFrame(
        {
            "query": ["q"] * 3,
            "item": ["a", "b", "c"],
            "score": [3.0, 2.0, 1.0],
            "relevance": [0, 2, None],
        }
    )
    for convention in ("spark", "recommenders"):
        out = rke.evaluate(log, ["p@2", "recall@2"], convention=convention)
        assert out.row(0) == (0.5, 1.0)
    assert rke.evaluate(log, ["p@2"])["p@2"][0] == 0.5


def test_spark_ndcg_uses_exponential_gain():
    # labels by rank: 1, 3; ideal 3, 1. Gains 2^l - 1: 1, 7. Spark's ln discount cancels.
    log = _one_query([1, 3], [2.0, 1.0])
    expected = (1 + 7 / math.log2(3)) / (7 + 1 / math.log2(3))
    assert rke.evaluate(log, ["ndcg@2"], convention="spark")["ndcg@2"][0] == pytest.approx(
        expected, abs=1e-12
    )


def test_recommenders_ndcg_is_binary():
    log = _one_query([0, 3, 1], [3.0, 2.0, 1.0])
    # Recommenders ndcg_at_k(score_type="binary"): gain 1 for each rating_true row (labels 3
    # and 1 alike), none for the label-0 row outside rating_true; ideal: both at ranks 1, 2
    expected = (1 / math.log2(3) + 1 / 2) / (1 + 1 / math.log2(3))
    out = rke.evaluate(log, ["ndcg@3"], convention="recommenders")
    assert out["ndcg@3"][0] == pytest.approx(expected, abs=1e-12)
    # an unlabelled row (a log joined from a rating table) is the same as label 0
    out = rke.evaluate(
        log.with_columns(pl.col("relevance").replace(0, None)),
        ["ndcg@3"],
        convention="recommenders",
    )
    assert out["ndcg@3"][0] == pytest.approx(expected, abs=1e-12)


def test_unknown_convention_is_rejected():
    with pytest.raises(rke.InvalidOptionError, match="convention="):
        rke.evaluate(_one_query([1], [1.0]), ["map"], convention="pyterrier")


def test_namespace_methods_take_convention_and_keep_column_names(e6):
    out = e6.rank_eval.map(k=1, convention="spark")
    assert out.columns == ["map@1"]
    assert out["map@1"][0] == 1.0
    expr = e6.group_by("query").agg(pl.col("relevance").rank_eval.map(k=1, convention="spark"))
    assert expr["map@1"][0] == 1.0


# ---- trec_eval's ndcg gain parameters (-m ndcg.1=3,2=9,4=4.5) -------------------------------

DATA = Path(__file__).parents[1] / "data"
FIXTURES = Path(__file__).parents[1] / "fixtures"
PRINT_TOL = 5e-5 + 1e-12  # half a unit of trec_eval's 4th printed decimal


def _printed(path: Path) -> dict[str, dict[str, float]]:
    """``measure -> query -> value`` from ``trec_eval -q`` output (``#`` lines are comments)."""
    table: dict[str, dict[str, float]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            measure, query, value = (field.strip() for field in line.split("\t"))
            table.setdefault(measure, {})[query] = float(value)
    return table


def _metric_for(measure: str) -> str | None:
    """trec_eval's printed measure name -> our metric string (None: not compared)."""
    if gains := re.fullmatch(r"ndcg_(-?\d+=.+)", measure):
        pairs = dict(pair.split("=") for pair in gains[1].split(","))
        if all(re.fullmatch(r"-?\d+", label) for label in pairs):
            return "ndcg(gain={" + ",".join(f"{lab}:{g}" for lab, g in pairs.items()) + "})"
    families = {"P": "p", "recall": "recall", "success": "success", "ndcg_cut": "ndcg"}
    if cut := re.fullmatch(r"(P|recall|success|ndcg_cut)_(\d+)", measure):
        return f"{families[cut[1]]}@{cut[2]}"
    return None


def _compare_with_printed(qrels: str, expected: Path, measures: int) -> list[str]:
    log = rke.join_run_qrels(
        rke.read_trec_run(DATA / "results.test"), rke.read_trec_qrels(DATA / qrels)
    )
    table = {_metric_for(m): v for m, v in _printed(expected).items() if _metric_for(m)}
    per_query = rke.evaluate(log, list(table), per_query=True).collect()
    means = rke.evaluate(log, list(table)).collect()
    wrong, compared = [], 0
    for metric, values in table.items():
        got = dict(zip(per_query["query"], per_query[metric], strict=True))
        got["all"] = means[metric][0]
        for query, want in values.items():
            compared += 1
            if abs(got[str(query)] - want) > PRINT_TOL:
                wrong.append(f"{metric} {query}: ours {got[str(query)]:.6f}, trec_eval {want}")
    # three topics and the mean per measure
    assert (len(table), compared) == (measures, 4 * measures)
    return wrong


def test_ndcg_gains_match_trec_eval_meas_params():
    # tests/data/expected_v10/out.test.meas_params: trec_eval's own test output with
    # -mndcg.1=3,2=9,4=4.5 (plus P, recall, success and ndcg_cut cutoffs) on binary qrels
    expected = DATA / "expected_v10" / "out.test.meas_params"
    assert _compare_with_printed("qrels.test", expected, measures=12) == []


def test_ndcg_gains_match_trec_eval_on_graded_labels():
    # tests/fixtures/trec_eval_ndcg_gains.txt (make_trec_eval_fixtures.py): trec_eval 10.0 with
    # three gain settings on qrels.rel_level (labels -1..4), where unmapped labels occur
    fixture = FIXTURES / "trec_eval_ndcg_gains.txt"
    measures = set(_printed(fixture))
    assert measures == {"ndcg_1=3,2=9,4=4.5", "ndcg_0=1,1=4", "ndcg_2=-1"}
    assert _compare_with_printed("qrels.rel_level", fixture, measures=3) == []


def test_unmapped_label_keeps_its_value_hand_worked():
    # Run: c (label -1), x (unjudged), a (3), d (0), b (1); e (2) judged, not retrieved.
    log = pl.DataFrame(
        {
            "query": "q",
            "item": ["c", "x", "a", "d", "b", "e"],
            "score": [5.0, 4.0, 3.0, 2.0, 1.0, None],
            "relevance": [-1, None, 3, 0, 1, 2],
        }
    )
    out = rke.evaluate(log, ["ndcg(gain={1:3})", "ndcg(gain={1:3},unmapped=zero)"])
    # gain={1:3}: a keeps 3, b earns 3, e keeps 2. DCG = 3/log2(4) + 3/log2(6);
    # ideal 3, 3, 2 at ranks 1..3.  (trec_eval -m ndcg.1=3 prints 0.4515 on these files.)
    dcg = 3 / 2 + 3 / math.log2(6)
    ideal = 3 + 3 / math.log2(3) + 2 / 2
    assert out[0, 0] == pytest.approx(dcg / ideal, abs=1e-12)
    assert round(out[0, 0], 4) == 0.4515
    # unmapped="zero": only b earns a gain (3 at rank 5); ideal 3 at rank 1
    assert out[0, 1] == pytest.approx((3 / math.log2(6)) / 3, abs=1e-12)
    # a mapped negative gain counts in the run, never in the ideal list (trec_eval: 0.1704)
    negative = rke.evaluate(log, ["ndcg(gain={1:-2})"])[0, 0]
    assert negative == pytest.approx((3 / 2 - 2 / math.log2(6)) / (3 + 2 / math.log2(3)))
    assert round(negative, 4) == 0.1704
