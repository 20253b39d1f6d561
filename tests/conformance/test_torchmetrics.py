"""The ``convention="torchmetrics"`` preset against torchmetrics' functional retrieval metrics.

Two layers:

* stored outputs (always run): ``tests/fixtures/torchmetrics_retrieval.json`` holds what
  torchmetrics 1.9 returned on generated queries (binary and graded targets, ties, zero and
  negative scores, all-zero and all-negative predictions, empty targets, several ``top_k``),
  on its own unit-test inputs (``test_*_all_zero_predictions_returns_zero``) and on its
  docstring examples. ``tests/fixtures/make_torchmetrics_fixtures.py`` made it; see there to
  regenerate. torch is not needed.
* live (skipped without torch, which the ``test`` extra does not pull in; install the
  ``torchmetrics`` extra: ``pip install -e ".[test,torchmetrics]"``).

torchmetrics computes in float32, so values agree to about 1e-7.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import polars_rankeval as rke

FIXTURE = Path(__file__).parents[1] / "fixtures" / "torchmetrics_retrieval.json"
FLOAT32_TOL = 1e-6


def _fixture() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def _stored_log(data: dict[str, Any]) -> pl.DataFrame:
    log = pl.DataFrame(data["rows"], schema=data["columns"], orient="row").with_columns(
        pl.col("score").cast(pl.Float64), pl.col("relevance").cast(pl.Int64)
    )
    # A judged relevant item per query that the system did not return: torchmetrics never sees
    # it, so it must change nothing.
    unseen = (
        log.select("query")
        .unique()
        .with_columns(
            item=pl.lit("unseen"), score=pl.lit(None, pl.Float64), relevance=pl.lit(1, pl.Int64)
        )
    )
    return pl.concat([log, unseen])


_DATA = _fixture()
_STORED = [dict(zip(_DATA["value_columns"], row, strict=True)) for row in _DATA["values"]]
_STORED_METRICS = sorted({entry["metric"] for entry in _STORED})


@pytest.fixture(scope="module")
def stored_ours() -> dict[tuple[str, str], float]:
    log = _stored_log(_DATA)
    out = rke.evaluate(log, _STORED_METRICS, per_query=True, convention="torchmetrics")
    return {
        (row["query"], metric): row[metric]
        for row in out.iter_rows(named=True)
        for metric in _STORED_METRICS
    }


@pytest.mark.parametrize("metric", _STORED_METRICS)
def test_preset_matches_stored_torchmetrics_values(metric, stored_ours):
    entries = [e for e in _STORED if e["metric"] == metric and e["order_invariant"]]
    assert entries, metric
    wrong = [
        (e["query"], stored_ours[e["query"], metric], e["value"])
        for e in entries
        if abs(stored_ours[e["query"], metric] - e["value"]) > FLOAT32_TOL
    ]
    assert not wrong, f"{metric}: (query, ours, torchmetrics): {wrong[:5]}"


def test_stored_values_cover_the_edge_cases():
    """The comparison above is not vacuous: the hard cases are among the compared values."""
    rows = pl.DataFrame(_DATA["rows"], schema=_DATA["columns"], orient="row")
    per_query = rows.group_by("query").agg(
        all_nonpositive=(pl.col("score") <= 0).all(),
        some_nonpositive_relevant=((pl.col("score") <= 0) & (pl.col("relevance") > 0)).any(),
        has_tie=pl.col("score").is_duplicated().any(),
        no_relevant=(pl.col("relevance") == 0).all(),
    )
    kinds: Counter[str] = Counter()
    flags = {row["query"]: row for row in per_query.iter_rows(named=True)}
    for entry in _STORED:
        if not entry["order_invariant"]:
            continue
        for kind in ("all_nonpositive", "some_nonpositive_relevant", "has_tie", "no_relevant"):
            if flags[entry["query"]][kind]:
                kinds[kind, entry["metric"].split("@")[0]] += 1
    for family in ("p", "recall", "map", "mrr", "hit_rate", "ndcg"):
        for kind in ("some_nonpositive_relevant", "has_tie", "no_relevant"):
            assert kinds[kind, family] >= 5, (kind, family)
    for family in ("p", "recall", "map", "mrr"):
        assert kinds["all_nonpositive", family] >= 5, family


@pytest.mark.parametrize(
    "case", _DATA["class_cases"], ids=[f"{c['case']}-{c['class']}" for c in _DATA["class_cases"]]
)
def test_preset_matches_torchmetrics_unit_tests_and_docstrings(case):
    log = pl.DataFrame(
        {
            "query": case["indexes"],
            "item": [f"d{i}" for i in range(len(case["preds"]))],
            "score": case["preds"],
            "relevance": case["target"],
        }
    )
    ours = rke.evaluate(log, [case["metric"]], convention="torchmetrics")[case["metric"]][0]
    assert ours == pytest.approx(case["value"], abs=FLOAT32_TOL)


# Printed in torchmetrics' docstrings (4 decimals), independent of the fixture file.
_CLASS_DOC = {  # indexes [0,0,0,1,1,1,1], preds [.2,.3,.5,.1,.3,.5,.2]
    "p@2": 0.5,
    "recall@2": 0.75,
    "map": 0.7917,
    "mrr": 0.75,
    "r_precision": 0.75,
    "ndcg": 0.8467,
}


def test_class_docstring_examples():
    log = pl.DataFrame(
        {
            "query": [0, 0, 0, 1, 1, 1, 1],
            "item": [f"d{i}" for i in range(7)],
            "score": [0.2, 0.3, 0.5, 0.1, 0.3, 0.5, 0.2],
            "relevance": [0, 0, 1, 0, 1, 0, 1],
        }
    )
    ours = rke.evaluate(log, list(_CLASS_DOC), convention="torchmetrics")
    for metric, documented in _CLASS_DOC.items():
        assert ours[metric][0] == pytest.approx(documented, abs=5e-5), metric
    hit_rate = log.with_columns(relevance=pl.Series([1, 0, 0, 0, 1, 0, 1]))
    out = rke.evaluate(hit_rate, ["hit_rate@2"], convention="torchmetrics")
    assert out["hit_rate@2"][0] == 0.5


def test_functional_docstring_examples():
    three = pl.DataFrame(
        {"query": "q", "item": ["a", "b", "c"], "score": [0.2, 0.3, 0.5], "relevance": [1, 0, 1]}
    )
    ours = rke.evaluate(
        three,
        ["p@2", "recall@2", "hit_rate@2", "map", "r_precision"],
        convention="torchmetrics",
    )
    assert ours.row(0) == pytest.approx((0.5, 0.5, 1.0, 0.8333, 0.5), abs=5e-5)
    rr = three.with_columns(relevance=pl.Series([0, 1, 0]))
    assert rke.evaluate(rr, ["mrr"], convention="torchmetrics")["mrr"][0] == 0.5
    graded = pl.DataFrame(
        {
            "query": "q",
            "item": list("abcde"),
            "score": [0.1, 0.2, 0.3, 4.0, 70.0],
            "relevance": [10, 0, 0, 1, 5],
        }
    )
    ndcg = rke.evaluate(graded, ["ndcg"], convention="torchmetrics")["ndcg"][0]
    assert ndcg == pytest.approx(0.6957, abs=5e-5)


def test_all_zero_predictions_return_zero_but_hit_rate_and_r_precision_do_not():
    # torchmetrics' test_*_all_zero_predictions_returns_zero input: preds 0, target [1, 0, 1]
    log = pl.DataFrame({"query": 0, "item": ["a", "b", "c"], "score": 0.0, "relevance": [1, 0, 1]})
    zeroed = ["p@3", "recall@3", "map", "mrr"]
    out = rke.evaluate(log, [*zeroed, "hit_rate@3", "r_precision"], convention="torchmetrics")
    assert out.select(zeroed).row(0) == (0.0, 0.0, 0.0, 0.0)
    # hit rate and R-precision do not apply the preds > 0 rule (and R = 2 of 3 rows are
    # relevant: the top 2 hold at least one, whatever the order of the tied rows)
    assert out["hit_rate@3"][0] == 1.0
    assert out["r_precision"][0] > 0
    # the same metrics under trec_eval's rules
    trec = rke.evaluate(log, zeroed, relevance_level=1)
    assert trec.row(0) == pytest.approx((2 / 3, 1.0, 0.8333333, 1.0), abs=1e-6)


def test_recall_keeps_nonpositive_relevant_rows_in_its_denominator():
    log = pl.DataFrame(
        {"query": 0, "item": ["a", "b", "c"], "score": [2.0, 1.0, -1.0], "relevance": [1, 0, 1]}
    )
    out = rke.evaluate(log, ["recall@3", "map", "p@3"], convention="torchmetrics")
    # hits: a only (c is scored -1); R = 2 supplied relevant rows
    assert out["recall@3"][0] == 0.5
    # AP divides by the relevant rows that count (a): 1/1
    assert out["map"][0] == 1.0
    assert out["p@3"][0] == pytest.approx(1 / 3)


def test_explicit_option_overrides_the_preset():
    log = pl.DataFrame({"query": 0, "item": ["a", "b"], "score": 0.0, "relevance": [1, 0]})
    out = rke.evaluate(log, ["p@1", "p@1(nonpositive_scores=keep)"], convention="torchmetrics")
    # trec order of the tie: b, a
    assert out.row(0) == (0.0, 0.0)
    out = rke.evaluate(log, ["p@2", "p@2(nonpositive_scores=keep)"], convention="torchmetrics")
    assert out.row(0) == (0.0, 0.5)
    with pytest.raises(rke.InvalidOptionError, match="did you mean 'nonrelevant'"):
        rke.evaluate(log, ["p@2(nonpositive_scores=nonrelevent)"])


# ---- live torchmetrics (needs torch) ---------------------------------------------------------


@pytest.fixture(scope="module")
def tm() -> Any:
    pytest.importorskip("torch", reason="torch is not installed (the torchmetrics extra)")
    return pytest.importorskip("torchmetrics.functional.retrieval")


def _log(seed: int, *, ties: bool = False, graded: bool = False) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(12):
        n = int(rng.integers(1, 12))
        if ties:
            scores = rng.integers(-1, 3, size=n).astype(float)
        else:
            # distinct, some negative and one zero (torchmetrics drops those from hits)
            scores = rng.permutation(n) - n / 2 + rng.random()
            if q % 3 == 0:
                scores[int(rng.integers(0, n))] = 0.0
        labels = rng.integers(0, 4, size=n) if graded else (rng.random(n) < 0.35).astype(int)
        rows += [
            (f"q{q}", f"d{i}", float(np.float32(s)), int(y))
            for i, (s, y) in enumerate(zip(scores, labels, strict=True))
        ]
        # a judged relevant item the system did not return: torchmetrics never sees it
        rows.append((f"q{q}", "unseen", None, 1))
    return pl.DataFrame(rows, schema=["query", "item", "score", "relevance"], orient="row")


def _per_query_torch(log: pl.DataFrame, fn, **kwargs) -> dict[str, float]:
    import torch

    out = {}
    for (query,), group in log.filter(pl.col("score").is_not_null()).group_by("query"):
        preds = torch.tensor(group["score"].to_list(), dtype=torch.float64)
        target = torch.tensor(group["relevance"].to_list())
        out[query] = float(fn(preds, target, **kwargs))
    return out


CASES = [
    ("p@3", "retrieval_precision", {"top_k": 3}),
    ("p@10", "retrieval_precision", {"top_k": 10}),
    ("recall@3", "retrieval_recall", {"top_k": 3}),
    ("hit_rate@2", "retrieval_hit_rate", {"top_k": 2}),
    ("map", "retrieval_average_precision", {}),
    ("map@3", "retrieval_average_precision", {"top_k": 3}),
    ("mrr", "retrieval_reciprocal_rank", {}),
    ("mrr@2", "retrieval_reciprocal_rank", {"top_k": 2}),
    ("r_precision", "retrieval_r_precision", {}),
]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("metric", "fn", "kwargs"), CASES, ids=[c[0] for c in CASES])
def test_binary_metrics_match_torchmetrics(tm, seed, metric, fn, kwargs):
    log = _log(seed)
    ours = rke.evaluate(log, [metric], per_query=True, convention="torchmetrics")
    theirs = _per_query_torch(log, getattr(tm, fn), **kwargs)
    got = dict(zip(ours["query"], ours[metric], strict=True))
    assert sorted(got) == sorted(theirs)
    for query, value in theirs.items():
        assert got[query] == pytest.approx(value, abs=2e-7), (metric, query)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k", [None, 1, 3, 5])
def test_ndcg_matches_torchmetrics_with_graded_labels_and_ties(tm, seed, k):
    log = _log(seed, ties=True, graded=True)
    metric = "ndcg" if k is None else f"ndcg@{k}"
    ours = rke.evaluate(log, [metric], per_query=True, convention="torchmetrics")
    theirs = _per_query_torch(log, tm.retrieval_normalized_dcg, top_k=k)
    got = dict(zip(ours["query"], ours[metric], strict=True))
    for query, value in theirs.items():
        assert got[query] == pytest.approx(value, abs=2e-7), query


def test_fixture_file_is_current(tm):
    """With torch at hand, the stored values still come out of the installed torchmetrics."""
    import torchmetrics

    if torchmetrics.__version__ != _DATA["versions"]["torchmetrics"]:
        pytest.skip(f"fixture made with torchmetrics {_DATA['versions']['torchmetrics']}")
    import torch

    for entry in _STORED[::37]:
        rows = [r for r in _DATA["rows"] if r[0] == entry["query"]]
        preds = torch.tensor([r[2] for r in rows], dtype=torch.float32)
        target = torch.tensor([r[3] for r in rows], dtype=torch.long)
        kwargs = {} if entry["top_k"] is None else {"top_k": entry["top_k"]}
        value = float(getattr(tm, entry["function"])(preds, target, **kwargs))
        assert value == pytest.approx(entry["value"], abs=1e-7), entry
