"""``convention="ir_measures"`` against ir_measures: its own unit tests, and live on generated data.

ir_measures sends each measure to a provider (``ir_measures.DefaultPipeline``): most go to
pytrec_eval (trec_eval's rules), ``RR@k`` to the MS MARCO script, ``Judged@k`` to its own
provider (both sort by ``(-score, docid)``, ties by doc id ascending), ``ERR@k`` and
``nDCG(dcg='exp-log2')@k`` to gdeval.pl. A query with judgments but no results gets each
measure's default, 0.

The first tests use the inputs and expected values of ir_measures' own unit tests
(``terrierteam/ir_measures`` ``tests/test_judged.py``, ``test_providers.py``,
``test_pytrec_eval.py``, ``test_gdeval.py``) and run without ir_measures. The live tests run
ir_measures itself (``pip install ir-measures``) and are skipped without it.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from typing import Any

import numpy as np
import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval.errors import QueryCoverageWarning


def _trec(text: str, fields: list[str]) -> pl.DataFrame:
    rows = [line.split() for line in text.strip().splitlines()]
    return pl.DataFrame(rows, schema=fields, orient="row")


def _log(qrels: str, run: str) -> pl.DataFrame:
    judged = _trec(qrels, ["query", "iter", "item", "relevance"]).select(
        "query", "item", pl.col("relevance").cast(pl.Int64)
    )
    ranked = _trec(run, ["query", "q0", "item", "rank", "score", "tag"]).select(
        "query", "item", pl.col("score").cast(pl.Float64)
    )
    return rke.join_run_qrels(ranked, judged).collect()


def _per_query(log: pl.DataFrame, metrics: list[str], **options: Any) -> dict[str, dict]:
    out = rke.evaluate(log, metrics, per_query=True, convention="ir_measures", **options)
    return {row.pop("query"): row for row in out.iter_rows(named=True)}


# ---- ir_measures' own unit tests -------------------------------------------------------------

# tests/test_judged.py and test_providers.py::test_empty
QRELS_JUDGED = """
0 0 D0 0
0 0 D1 1
0 0 D2 1
0 0 D3 2
0 0 D4 0
1 0 D0 1
1 0 D3 2
1 0 D5 2
"""
RUN = """
0 0 D0 1 0.8 run
0 0 D2 2 0.7 run
0 0 D1 3 0.3 run
0 0 D3 4 0.4 run
0 0 D4 5 0.1 run
1 0 D1 1 0.8 run
1 0 D3 2 0.7 run
1 0 D4 3 0.3 run
1 0 D2 4 0.4 run
"""


def test_judged_matches_ir_measures_test_judged():
    # Query 1 retrieves D1, D3, D4, D2 (by score: D1, D3, D2, D4); only D3 is judged.
    values = _per_query(
        _log(QRELS_JUDGED, RUN), ["Judged@1000", "Judged@10", "Judged@3", "Judged@1"]
    )
    expected = {
        "Judged@1000": (1.0, 1 / 4),
        "Judged@10": (1.0, 1 / 4),
        "Judged@3": (1.0, 1 / 3),
        "Judged@1": (1.0, 0.0),
    }
    for metric, (q0, q1) in expected.items():
        assert (values["0"][metric], values["1"][metric]) == pytest.approx((q0, q1)), metric
    # trec_eval's definition divides by k: 1/1000, not 1/4
    plain = rke.evaluate(_log(QRELS_JUDGED, RUN), ["judged@1000"], per_query=True)
    assert plain["judged@1000"].to_list() == pytest.approx([5 / 1000, 1 / 1000])


def test_providers_partial_and_empty_runs():
    # test_providers.py::test_empty: "qrels but partial run" and "qrels but no run"
    partial = "\n".join(line for line in RUN.strip().splitlines() if line.startswith("0 "))
    # Query 1 is judged but not in the run: join_run_qrels says so.
    with pytest.warns(QueryCoverageWarning, match="1 of 2 judged queries have no run rows"):
        log = _log(QRELS_JUDGED, partial)
    metrics = ["P@5", "ERR@5", "Judged@5", "RR@5"]
    values = _per_query(log, metrics)
    assert values["0"] == pytest.approx(
        {"P@5": 0.6, "ERR@5": 0.10175, "Judged@5": 1.0, "RR@5": 0.5}, abs=5e-6
    )
    assert values["1"] == {"P@5": 0.0, "ERR@5": 0.0, "Judged@5": 0.0, "RR@5": 0.0}
    means = rke.evaluate(log, metrics[1:], convention="ir_measures")
    assert means.row(0) == pytest.approx((0.050875, 0.5, 0.25), abs=5e-6)
    # no run at all: the judged queries score 0
    with pytest.warns(QueryCoverageWarning, match="1 of 2 judged queries have no run rows"):
        joined = _log(QRELS_JUDGED, "0 0 D9 1 0.1 run")
    empty = joined.filter(pl.col("relevance").is_not_null())
    assert _per_query(empty, metrics) == {q: dict.fromkeys(metrics, 0.0) for q in ("0", "1")}
    # ...which trec_eval's default skips
    assert rke.evaluate(empty, ["P@5"], per_query=True).height == 0


QRELS_P = """
0 0 D0 -1
0 0 D1 1
0 0 D3 2
0 0 D4 1
1 0 D0 1
1 0 D3 0
1 0 D4 -1
"""
RUN_P = """
0 0 D0 1 0.8 run
0 0 D2 2 0.7 run
0 0 D1 3 0.3 run
0 0 D3 4 0.4 run
0 0 D4 5 0.1 run
1 0 D1 1 0.8 run
1 0 D0 2 0.7 run
1 0 D3 3 0.3 run
1 0 D2 4 0.4 run
"""

QRELS_INFAP = """
0 0 D0 1
0 0 D1 -1
0 0 D2 0
0 0 D3 2
0 0 D4 0
1 0 D0 1
1 0 D3 2
1 0 D4 -1
1 0 D5 0
"""
RUN_INFAP = """
0 0 D0 1 0.8 run
0 0 D2 2 0.7 run
0 0 D1 3 0.3 run
0 0 D3 4 0.4 run
0 0 D4 5 0.1 run
1 0 D1 1 0.8 run
1 0 D4 2 0.7 run
1 0 D3 3 0.3 run
1 0 D2 4 0.4 run
"""


def test_ndcg_and_gains_match_ir_measures_test_pytrec_eval():
    # test_pytrec_eval.py::test_nDCG (assertMetrics: 4 places)
    values = _per_query(_log(QRELS_INFAP, RUN_INFAP), ["nDCG", "nDCG@3", "nDCG(gain={0:1,1:4})"])
    assert values["0"] == pytest.approx(
        {"nDCG": 0.76018, "nDCG@3": 0.76018, "nDCG(gain={0:1,1:4})": 0.97177}, abs=5e-5
    )
    assert values["1"] == pytest.approx(
        {"nDCG": 0.32739, "nDCG@3": 0.0, "nDCG(gain={0:1,1:4})": 0.14949}, abs=5e-5
    )


def test_gain_mapping_unmapped_label_hand_worked():
    # Query 0 of test_nDCG with gains {0: 1, 1: 4}: D3 (label 2) is not in the mapping and
    # keeps gain 2; D1 (label -1, pooled but unjudged) has none. Run by score: D0 (4), D2 (1),
    # D3 (2), D1 (0), D4 (1). Ideal: 4, 2, 1, 1.
    dcg = 4 + 1 / math.log2(3) + 2 / 2 + 1 / math.log2(6)
    ideal = 4 + 2 / math.log2(3) + 1 / 2 + 1 / math.log2(5)
    log = _log(QRELS_INFAP, RUN_INFAP).filter(pl.col("query") == "0")
    out = rke.evaluate(log, ["ndcg(gain={0:1,1:4})", "ndcg(gain={0:1,1:4},unmapped=zero)"])
    assert out[0, 0] == pytest.approx(dcg / ideal, abs=1e-12)
    assert dcg / ideal == pytest.approx(0.97177, abs=5e-5)  # ir_measures' expected value
    # unmapped="zero": D3 earns nothing, in the run and in the ideal list
    dcg0 = 4 + 1 / math.log2(3) + 1 / math.log2(6)
    ideal0 = 4 + 1 / math.log2(3) + 1 / 2
    assert out[0, 1] == pytest.approx(dcg0 / ideal0, abs=1e-12)


QRELS_SUCCESS = """
0 0 D0 0
0 0 D1 1
0 0 D2 2
0 0 D3 2
0 0 D4 0
1 0 D0 1
1 0 D3 2
1 0 D5 0
"""
RUN_SUCCESS = RUN_INFAP  # ir_measures' success and infAP tests use the same run


def test_pytrec_eval_provider_cases():
    # test_pytrec_eval.py::test_P (negative labels are pooled but unjudged)
    p4 = _per_query(_log(QRELS_P, RUN_P), ["P@4"])
    assert (p4["0"]["P@4"], p4["1"]["P@4"]) == (0.5, 0.25)
    # test_pytrec_eval.py::test_infAP
    values = _per_query(_log(QRELS_INFAP, RUN_INFAP), ["AP", "infAP"])
    assert values["0"] == pytest.approx({"AP": 0.8333, "infAP": 0.8333}, abs=5e-5)
    assert values["1"] == pytest.approx({"AP": 0.125, "infAP": 0.1875}, abs=1e-12)
    level2 = _per_query(_log(QRELS_INFAP, RUN_INFAP), ["AP", "infAP"], relevance_level=2)
    assert level2["0"] == pytest.approx({"AP": 0.33333, "infAP": 0.33333}, abs=5e-5)
    assert level2["1"] == pytest.approx({"AP": 0.25, "infAP": 0.375}, abs=5e-5)
    # test_pytrec_eval.py::test_Success
    success = _per_query(_log(QRELS_SUCCESS, RUN_SUCCESS), ["Success@2"])
    assert (success["0"]["Success@2"], success["1"]["Success@2"]) == (1.0, 0.0)


def test_gdeval_cases():
    # test_gdeval.py::test_ERR and test_nDCG (gdeval: exponential gain, 5 decimals)
    log = _log(QRELS_JUDGED, RUN)
    values = _per_query(log, ["ERR@20", "ERR@2", "ndcg@20(gain=exp)", "ndcg@2(gain=exp)"])
    assert values["0"] == pytest.approx(
        {
            "ERR@20": 0.10175,
            "ERR@2": 0.03125,
            "ndcg@20(gain=exp)": 0.6201,
            "ndcg@2(gain=exp)": 0.17377,
        },
        abs=5e-6,
    )
    assert values["1"] == pytest.approx(
        {
            "ERR@20": 0.09375,
            "ERR@2": 0.09375,
            "ndcg@20(gain=exp)": 0.35099,
            "ndcg@2(gain=exp)": 0.38685,
        },
        abs=5e-6,
    )


def test_rr_at_k_breaks_ties_by_doc_id_ascending():
    # metric-conventions.md E1: q1 a, b, c all scored 1.0, a relevant: RR 1/3 (trec_eval and
    # ir_measures' RR via pytrec_eval: c, b, a) but RR@10 1.0 (MS MARCO: a, b, c)
    log = pl.DataFrame(
        {
            "query": "q1",
            "item": ["a", "b", "c", "z"],
            "score": [1.0, 1.0, 1.0, None],
            "relevance": [1, 0, 0, 1],
        }
    )
    out = rke.evaluate(log, ["RR", "RR@10", "RR@1"], convention="ir_measures")
    assert out.row(0) == pytest.approx((1 / 3, 1.0, 1.0))
    # plain mrr@10 keeps trec_eval's rule
    assert rke.evaluate(log, ["mrr@10"])["mrr@10"][0] == pytest.approx(1 / 3)
    # an explicit option wins over the preset
    explicit = rke.evaluate(log, ["RR@10(tie_order=item_desc)"], convention="ir_measures")
    assert explicit.item() == pytest.approx(1 / 3)


def test_preset_refuses_what_ir_measures_lacks():
    log = pl.DataFrame({"query": "q", "item": ["a"], "score": [1.0], "relevance": [1]})
    for metric in ("dcg", "f1@5", "hits@5", "mar", "rbp_resid", "spearman"):
        with pytest.raises(rke.InvalidOptionError, match="'ir_measures' has no"):
            rke.evaluate(log, [metric], convention="ir_measures")
    with pytest.raises(rke.InvalidOptionError, match="only with a cutoff"):
        rke.evaluate(log, ["err"], convention="ir_measures")


def test_options_are_validated():
    log = pl.DataFrame({"query": "q", "item": ["a"], "score": [1.0], "relevance": [1]})
    with pytest.raises(rke.InvalidOptionError, match="did you mean 'item_asc'"):
        rke.evaluate(log, ["mrr@5(tie_order=item_ascending)"])
    with pytest.raises(rke.InvalidOptionError, match="did you mean 'min_k_n'"):
        rke.evaluate(log, ["judged@5(denominator=min_n_k)"])
    with pytest.raises(rke.InvalidOptionError, match="count_negative"):
        rke.evaluate(log, ["judged@5(count_negative=1)"])
    with pytest.raises(rke.InvalidOptionError, match="did you mean 'zero'"):
        rke.evaluate(log, ["ndcg(gain={1:2},unmapped=zeros)"])


# ---- live: ir_measures itself on generated data ----------------------------------------------

# Our metric string -> ir_measures measure. Counts are left out: for a query with judgments but
# no results ir_measures reports NumQ = NumRel = 0 (the default of every measure), trec_eval -c
# (and the preset) 1 and R.
MEASURES = {
    "p@1": "P@1",
    "p@5": "P@5",
    "recall@3": "R@3",
    "recall@10": "R@10",
    "success@1": "Success@1",
    "success@3": "Success@3",
    "map": "AP",
    "map@3": "AP@3",
    "mrr": "RR",
    "mrr@1": "RR@1",
    "mrr@3": "RR@3",
    "mrr@10": "RR@10",
    "ndcg": "nDCG",
    "ndcg@3": "nDCG@3",
    "ndcg@5": "nDCG@5",
    "ndcg(gain={0:1,1:4,3:2})": "nDCG(gains={0:1,1:4,3:2})",
    "ndcg@5(gain={2:5})": "nDCG(gains={2:5})@5",
    "ndcg@5(gain=exp)": "nDCG(dcg='exp-log2')@5",
    "r_precision": "Rprec",
    "bpref": "Bpref",
    "infap": "infAP",
    "judged@1": "Judged@1",
    "judged@3": "Judged@3",
    "judged@10": "Judged@10",
    "err@3": "ERR@3",
    "err@10": "ERR@10",
}


@pytest.fixture(scope="module")
def irm() -> Any:
    return pytest.importorskip("ir_measures", reason="ir_measures is not installed")


def _generated(seed: int) -> tuple[pl.DataFrame, dict, dict]:
    """Numeric query ids (gdeval needs them), labels -1..4 (gdeval refuses > 4), float32 scores
    (pytrec_eval reads float32), ties, unjudged and unretrieved rows, a query with judgments
    but no results and one with results but no judgments."""
    rng = np.random.default_rng(seed)
    rows: list[tuple[str, str, float | None, int | None]] = []
    for q in range(14):
        query = str(100 + q)
        n_docs = int(rng.integers(1, 14))
        for _ in range(n_docs):
            item = f"D{int(rng.integers(0, 40)):02d}"
            if any(r[0] == query and r[1] == item for r in rows):
                continue
            retrieved = q != 3 and rng.random() < 0.85
            judged = q != 4 and rng.random() < 0.75
            score = float(np.float32(rng.integers(0, 5) / 4)) if retrieved else None
            label = int(rng.integers(-1, 5)) if judged else None
            if q == 3:  # judgments, no results
                label = int(rng.integers(0, 3))
            if score is None and label is None:
                continue
            rows.append((query, item, score, label))
    log = pl.DataFrame(rows, schema=["query", "item", "score", "relevance"], orient="row")
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for query, item, score, label in rows:
        if label is not None:
            qrels.setdefault(query, {})[item] = label
        if score is not None:
            run.setdefault(query, {})[item] = score
    return log, qrels, run


# ir_measures runs in fresh interpreters: pytrec_eval (trec_eval's C code) keeps state between
# evaluators in one process. Within one ir_measures call, an nDCG(gains=...) evaluator changed
# the plain nDCG of a later one, depending on the (hash-randomised) order of the measure set;
# other tests' evaluations did the same under xdist. So each gains measure gets its own process.
_IR_MEASURES_CHILD = """
import json, sys
import ir_measures
measures, qrels, run = json.load(sys.stdin)
parsed = {ours: ir_measures.parse_measure(theirs) for ours, theirs in measures.items()}
by_measure = {measure: ours for ours, measure in parsed.items()}
values = [
    (metric.query_id, by_measure[metric.measure], metric.value)
    for metric in ir_measures.iter_calc(list(parsed.values()), qrels, run)
]
json.dump(values, sys.stdout)
"""


def _ir_measures_values(qrels: dict, run: dict) -> dict[tuple[str, str], float]:
    plain = {ours: theirs for ours, theirs in MEASURES.items() if "gains" not in theirs}
    groups = [plain] + [{ours: theirs} for ours, theirs in MEASURES.items() if ours not in plain]
    values: dict[tuple[str, str], float] = {}
    for group in groups:
        done = subprocess.run(
            [sys.executable, "-c", _IR_MEASURES_CHILD],
            input=json.dumps([group, qrels, run]),
            capture_output=True,
            text=True,
            check=True,
        )
        values.update({(q, metric): value for q, metric, value in json.loads(done.stdout)})
    return values


@pytest.mark.parametrize("seed", range(8))
def test_preset_matches_ir_measures_on_generated_data(irm, seed):
    log, qrels, run = _generated(seed)
    theirs = _ir_measures_values(qrels, run)
    assert len(theirs) > 100
    ours = _per_query(log, list(MEASURES))
    assert sorted(ours) == sorted(qrels)  # the judged queries, with or without results
    for (query, metric), value in theirs.items():
        # gdeval prints 5 decimals (%.5f rounds half away: 0.109375 -> 0.10938)
        tol = 6e-6 if metric.startswith("err") or "exp" in metric else 1e-9
        assert ours[query][metric] == pytest.approx(value, abs=tol), (seed, query, metric)


def test_generated_data_exercise_the_differences(irm):
    """The live comparison would catch a preset that kept trec_eval's rules."""
    differs = {"mrr@3": 0, "judged@3": 0, "missing": 0}
    for seed in range(8):
        log, _qrels, _run = _generated(seed)
        preset = _per_query(log, ["mrr@3", "judged@3"])
        trec = rke.evaluate(log, ["mrr@3", "judged@3"], per_query=True, missing_queries="zero")
        for row in trec.iter_rows(named=True):
            for metric in ("mrr@3", "judged@3"):
                differs[metric] += preset[row["query"]][metric] != row[metric]
        skipped = rke.evaluate(log, ["map"], per_query=True)
        differs["missing"] += len(preset) - skipped.height
    assert all(count > 0 for count in differs.values()), differs


def test_options_under_expected_ties():
    # a (unjudged) and b (label -1) tie at the top; c (label 0) below.
    log = pl.DataFrame(
        {
            "query": "q",
            "item": ["a", "b", "c"],
            "score": [2.0, 2.0, 1.0],
            "relevance": [None, -1, 0],
        }
    )
    metrics = ["judged@1(count_negative=true)", "judged@1(count_negative=true,tie_order=item_asc)"]
    # trec_eval's order puts b first (labelled), the item-ascending order a (unlabelled)
    assert rke.evaluate(log, metrics).row(0) == (1.0, 0.0)
    # over both orders of the tie: half a labelled row, whatever the tie order option says
    assert rke.evaluate(log, metrics, ties="expected").row(0) == (0.5, 0.5)
    assert rke.evaluate(log, ["judged@1"], ties="expected").item() == 0.0
    relevant = log.with_columns(relevance=pl.Series([1, 0, 0]))
    rr = ["mrr@2", "mrr@2(tie_order=item_asc)"]
    assert rke.evaluate(relevant, rr).row(0) == (0.5, 1.0)
    assert rke.evaluate(relevant, rr, ties="expected").row(0) == (0.75, 0.75)


def test_gdeval_preset_reproduces_gdeval():
    """convention="gdeval": plain ndcg@k and err@k are gdeval.pl's (test_gdeval.py values)."""
    log = _log(QRELS_JUDGED, RUN)
    out = rke.evaluate(log, ["err@20", "err@2", "ndcg@20", "ndcg@2"], per_query=True,
                       convention="gdeval")  # fmt: skip
    values = {row.pop("query"): row for row in out.iter_rows(named=True)}
    assert values["0"] == pytest.approx(
        {"err@20": 0.10175, "err@2": 0.03125, "ndcg@20": 0.6201, "ndcg@2": 0.17377}, abs=5e-6
    )
    assert values["1"] == pytest.approx(
        {"err@20": 0.09375, "err@2": 0.09375, "ndcg@20": 0.35099, "ndcg@2": 0.38685}, abs=5e-6
    )
    with pytest.raises(rke.InvalidOptionError, match="only with a cutoff"):
        rke.evaluate(log, ["ndcg"], convention="gdeval")
    with pytest.raises(rke.InvalidOptionError, match="'gdeval' has no"):
        rke.evaluate(log, ["map"], convention="gdeval")
