"""ir_measures measure names, verbatim, under ``convention="ir_measures"``, checked live.

Each name below is passed unchanged both to ``ir_measures.parse_measure`` and to
``rke.evaluate``; the output column keeps the name, and every per-query value equals what
ir_measures' default pipeline computes (pytrec_eval, cwl_eval, compat, accuracy, judged, the
MS MARCO script, gdeval, pyndeval), on generated logs and on trec_eval's test data. gdeval
needs perl and prints 5 decimals (tolerance 6e-6).
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import polars_rankeval as rke
from tests.conformance.test_ir_measures import _generated

DATA = Path(__file__).parents[1] / "data"

NAMES = [
    "P@1", "P@5", "P(rel=2)@5", "R@3", "R(rel=2)@10", "Success@3", "AP", "AP@5", "AP(rel=2)",
    "RR", "RR@3", "RR(rel=2)", "nDCG", "nDCG@5", "nDCG(dcg='exp-log2')@5",
    "nDCG(gains={0:0,1:1,2:5,3:2,4:9})@5", "Rprec", "Rprec(rel=2)", "Bpref", "infAP",
    "Judged@3", "NumRet", "NumRelRet", "NumRet(rel=2)", "SetP", "SetP(relative=True)", "SetR",
    "SetF", "SetF(beta=0.5)", "SetAP", "IPrec@0.0", "IPrec@0.5", "IPrec@0.1", "IPrec@0.2",
    "IPrec@0.3", "IPrec@0.4", "IPrec@0.7", "IPrec@0.8", "IPrec@1.0", "RBP(rel=1)",
    "RBP(p=0.5,rel=2)", "INST(max_rel=4)", "INST(T=2.0,max_rel=4)", "INSQ(T=2.0,max_rel=4)",
    "BPM(T=2.0,max_rel=4)@10", "SDCG(max_rel=4)@10", "NERR8(max_rel=4)@5",
    "NERR9(max_rel=4)@5", "NERR10(p=0.8,max_rel=4)", "NERR11(T=2.0,max_rel=4)", "Compat",
    "Compat(p=0.8)", "Accuracy@5", "Accuracy(rel=2)", "P(judged_only=True)@5",
    "AP(judged_only=True)", "nDCG(judged_only=True)@5", "ERR@5",
]  # fmt: skip

# ir_measures reports 0 for these counts where trec_eval -c (our preset) counts the query
_COUNTS = {"NumRet", "NumRelRet", "NumRet(rel=2)"}


# Accuracy raises ZeroDivisionError for a query whose retrieved rows are all relevant (an
# ir_measures bug): it runs query by query, and such a query has no value (ours: null).
_CHILD = """
import json, sys
import ir_measures
names, qrels, run = json.load(sys.stdin)
parsed = {name: ir_measures.parse_measure(name) for name in names}
back = {measure: name for name, measure in parsed.items()}
whole = [m for n, m in parsed.items() if not n.startswith("Accuracy")]
values = [(m.query_id, back[m.measure], m.value)
          for m in (ir_measures.iter_calc(whole, qrels, run) if whole else [])]
for name, measure in parsed.items():
    if name.startswith("Accuracy"):
        for query in qrels:
            try:
                if query not in run:  # a whole run gives a query without results 0
                    values.append((query, name, 0.0))
                    continue
                found = list(ir_measures.iter_calc([measure], {query: qrels[query]},
                                                   {query: run[query]}))
            except ZeroDivisionError:
                continue
            values.extend((m.query_id, name, m.value) for m in found)
json.dump(values, sys.stdout)
"""


def _theirs(names: list[str], qrels: dict, run: dict) -> dict[tuple[str, str], float]:
    """ir_measures in a fresh interpreter per call (pytrec_eval keeps state between calls)."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input=json.dumps([names, qrels, run]),
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return {(q, name): value for q, name, value in json.loads(done.stdout)}


def _trec_order(run: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Each query's documents in trec_eval's order (score, then docno, descending).

    cwl_eval keeps tied documents in the order it is given them; every other provider sorts.
    A run file lists its documents in rank order, which is this order for a trec_eval run.
    """
    return {
        query: dict(sorted(docs.items(), key=lambda pair: (pair[1], pair[0]), reverse=True))
        for query, docs in run.items()
    }


def _compare(log: pl.DataFrame, qrels: dict, run: dict, names: list[str]) -> int:
    run = _trec_order(run)
    # Compat breaks ties in its ideal list by the qrels' order: a file sorted by docno
    qrels = {query: dict(sorted(docs.items())) for query, docs in qrels.items()}
    if shutil.which("perl") is None:  # gdeval.pl: tested where perl is
        names = [n for n in names if not n.startswith("ERR@") and "exp-log2" not in n]
    theirs: dict[tuple[str, str], float] = {}

    # pytrec_eval's state leaks between evaluators of one process (a judged_only evaluator
    # made another's NumRet count judged documents only, in hash-randomised order): every
    # measure with gains, judged_only or its own rel runs in a process of its own
    def alone(name: str) -> bool:
        return any(part in name for part in ("gains", "judged_only", "rel=", "relative"))

    plain = [name for name in names if not alone(name)]
    for group in [plain, *([name] for name in names if alone(name))]:
        theirs.update(_theirs(group, qrels, run))
    ours = rke.evaluate(log, names, per_query=True, convention="ir_measures")
    assert [c for c in ours.columns if c != "query"] == names  # named as ir_measures prints
    rows = {row.pop("query"): row for row in ours.iter_rows(named=True)}
    checked = 0
    for (query, name), value in theirs.items():
        if name in _COUNTS and not run.get(query):
            continue
        got = rows[query][name]
        # gdeval (ERR@k, nDCG(dcg='exp-log2')@k) prints 5 decimals
        tolerance = 6e-6 if name.startswith("ERR@") or "exp-log2" in name else 1e-9
        if value is None or (isinstance(value, float) and math.isnan(value)):
            assert got is None or math.isnan(got), (query, name, got)
        else:
            assert got == pytest.approx(value, abs=tolerance), (query, name, got, value)
        checked += 1
    # the queries ir_measures leaves out of Accuracy have no value here either
    for query, row in rows.items():
        for name in names:
            if (query, name) not in theirs and name.startswith("Accuracy"):
                assert row[name] is None, (query, name)
    return checked


@pytest.fixture(scope="module")
def irm() -> Any:
    return pytest.importorskip("ir_measures", reason="ir_measures is not installed")


@pytest.mark.parametrize("seed", range(4))
def test_every_name_equals_ir_measures_on_generated_logs(irm: Any, seed: int) -> None:
    log, qrels, run = _generated(seed)
    assert _compare(log, qrels, run, NAMES) > 500


def _trec_file(path: Path, fields: int) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines() if len(line.split()) == fields]


def test_every_name_equals_ir_measures_on_trec_eval_test_data(irm: Any) -> None:
    qrels_rows = _trec_file(DATA / "qrels.test", 4)
    run_rows = _trec_file(DATA / "results.test", 6)
    qrels: dict[str, dict[str, int]] = {}
    for query, _, doc, label in qrels_rows:
        qrels.setdefault(query, {})[doc] = int(label)
    run: dict[str, dict[str, float]] = {}
    for query, _, doc, _, score, _ in run_rows:
        # pytrec_eval reads scores as float32: give both sides the same numbers
        run.setdefault(query, {})[doc] = float(np.float32(score))
    log = rke.join_run_qrels(
        pl.DataFrame(
            [(q, d, s) for q, docs in run.items() for d, s in docs.items()],
            schema=["query", "item", "score"],
            orient="row",
        ),
        pl.DataFrame(
            [(q, d, r) for q, docs in qrels.items() for d, r in docs.items()],
            schema=["query", "item", "relevance"],
            orient="row",
        ),
    ).collect()
    names = [name for name in NAMES if "max_rel=4" not in name] + [
        "INST(max_rel=1)",
        "SDCG(max_rel=1)@10",
        "NERR10(max_rel=1)",
    ]
    assert _compare(log, qrels, run, names) > 100


def test_names_keep_their_spelling_and_translate() -> None:
    log = pl.DataFrame(
        {"query": ["q"] * 3, "item": ["a", "b", "c"], "score": [3.0, 2.0, 1.0],
         "relevance": [0, 2, 1]}
    )  # fmt: skip
    out = rke.evaluate(log, ["nDCG(dcg='exp-log2')@2", "AP(rel=2)", "IPrec@0.5"])
    assert out.columns == ["nDCG(dcg='exp-log2')@2", "AP(rel=2)", "IPrec@0.5"]
    same = rke.evaluate(log, ["ndcg@2(gain=exp)", "map(rel=2)", "iprec_at_recall(level=0.5)"])
    assert out.row(0) == same.row(0)


def test_unreadable_parameters_are_named() -> None:
    log = pl.DataFrame({"query": ["q"], "item": ["a"], "score": [1.0], "relevance": [1]})
    with pytest.raises(rke.InvalidOptionError, match="nDCG"):
        rke.evaluate(log, ["nDCG(dcg=)@10"])
    with pytest.raises(rke.InvalidOptionError, match="dcg='log10'"):
        rke.evaluate(log, ["nDCG(dcg='log10')@10"])
    with pytest.raises(rke.InvalidOptionError, match="max_rel"):
        rke.evaluate(log, ["INST"])


def test_iprec_follows_pytrec_eval_not_trec_eval_10(irm: Any) -> None:
    """pytrec_eval bundles trec_eval 9: IPrec@l needs (long) (l * R + 0.9) relevant rows.

    R = 7 relevant rows at ranks 1, 2, 10, 12, 14, 15, 17: IPrec@0.3 needs 2 of them in
    trec_eval 10 (lround(2.1)), precision 2/2, and 3 in pytrec_eval ((long) 3.0), 7/17.
    """
    labels = [1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 1, 1, 0, 1]
    items = [f"d{i:02d}" for i in range(len(labels))]
    scores = [100.0 - i for i in range(len(labels))]
    log = pl.DataFrame({"query": "q", "item": items, "score": scores, "relevance": labels})
    theirs = _theirs(
        ["IPrec@0.3"],
        {"q": dict(zip(items, labels, strict=True))},
        {"q": dict(zip(items, scores, strict=True))},
    )
    assert theirs[("q", "IPrec@0.3")] == pytest.approx(7 / 17)
    preset = rke.evaluate(log, ["IPrec@0.3"], convention="ir_measures").item()
    assert preset == pytest.approx(7 / 17, abs=1e-15)
    # trec_eval 10's rounding stays the default, and the option is spelled out
    assert rke.evaluate(log, ["IPrec@0.3"]).item() == 1.0
    spelled = rke.evaluate(log, ["iprec_at_recall(level=0.3,rounding=v9)"])
    assert spelled.columns == ["iprec_at_recall(level=0.3,rounding=v9)"]
    assert spelled.item() == preset


def test_generated_logs_exercise_the_iprec_rounding() -> None:
    """The live comparison above would catch a preset that kept trec_eval 10's rounding."""
    names = ["IPrec@0.1", "IPrec@0.2", "IPrec@0.3", "IPrec@0.4", "IPrec@0.7", "IPrec@0.8"]
    differ = 0
    for seed in range(4):
        log, _qrels, _run = _generated(seed)
        preset = rke.evaluate(log, names, per_query=True, convention="ir_measures")
        default = rke.evaluate(log, names, per_query=True, missing_queries="zero")
        differ += sum(int((preset[name] != default[name]).sum()) for name in names)
    assert differ > 5


def test_rbp_without_rel_is_refused_as_ir_measures_refuses_it(irm: Any) -> None:
    log = pl.DataFrame({"query": ["q"], "item": ["a"], "score": [1.0], "relevance": [1]})
    for name in ["RBP", "RBP(p=0.8)"]:
        with pytest.raises(ValueError, match="Unsupported measures"):
            list(irm.iter_calc([irm.parse_measure(name)], {"q": {"a": 1}}, {"q": {"a": 1.0}}))
        for convention in ["ir_measures", "trec_eval"]:
            with pytest.raises(rke.InvalidOptionError, match=r"needs rel=.*RBP\(rel=1\)"):
                rke.evaluate(log, [name], convention=convention)
    # with rel= it is cwl_eval's RBP; our own spelling under the preset stays as documented
    out = rke.evaluate(log, ["RBP(rel=1)", "rbp"], convention="ir_measures")
    assert out.row(0) == pytest.approx((0.2, 0.2))
