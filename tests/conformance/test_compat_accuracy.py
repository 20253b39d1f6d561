"""``compat``, ``accuracy@k`` and ``ncg@k`` against ir_measures and brute force.

Published values: ir_measures' own unit tests (``terrierteam/ir_measures``
``tests/test_accuracy.py``, inline fixture, and ``tests/test_compat.py`` with
``tests/compat.qrels``/``compat.run``, whose values come from Clarke's reference
implementation). The Compat fixture files are not shipped here: that test reads them from
``$IR_MEASURES_TESTS`` (a checkout's ``tests/`` folder) and is skipped without it. The live tests
run ir_measures' ``compat`` and ``accuracy`` providers per query on generated logs.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from polars_rankeval._names.registry import parse_metric
from polars_rankeval.errors import InvalidOptionError
from tests.engine.test_streaming import assert_streams
from tests.support.tie_orders import all_orders


def _trec(text: str, fields: list[str]) -> pl.DataFrame:
    rows = [line.split() for line in text.strip().splitlines() if line.strip()]
    return pl.DataFrame(rows, schema=fields, orient="row")


# ir_measures tests/test_accuracy.py
ACCURACY_QRELS = """
0 0 C0_1 0
0 0 B0_1 1
0 0 A0_1 2

1 0 A1_1 2
1 0 A1_2 2
1 0 B1_1 1
1 0 C1_2 0

2 0 B1_1 1
"""
ACCURACY_RUN = """
0 0 C0_1 1 0.4 run
0 0 A0_1 2 0.3 run
0 0 C0_2 3 0.2 run
0 0 C0_3 4 0.1 run

1 0 C1_1 1 0.8 run
1 0 A1_1 2 0.7 run
1 0 C1_2 3 0.6 run
1 0 B1_1 4 0.5 run
1 0 C1_3 5 0.4 run

2 0 B1_1 2 0.2 run
2 0 C1_1 3 0.1 run
"""


def _accuracy_log() -> pl.DataFrame:
    qrels = _trec(ACCURACY_QRELS, ["query", "iter", "item", "relevance"])
    run = _trec(ACCURACY_RUN, ["query", "q0", "item", "rank", "score", "tag"])
    return rke.join_run_qrels(
        run.select("query", "item", pl.col("score").cast(pl.Float64)),
        qrels.select("query", "item", pl.col("relevance").cast(pl.Int64)),
    ).collect()


def test_accuracy_published() -> None:
    out = rke.evaluate(_accuracy_log(), ["accuracy", "accuracy(rel=2)"], per_query=True)
    values = {row["query"]: row for row in out.iter_rows(named=True)}
    assert values["0"]["accuracy"] == pytest.approx(2 / 3, abs=1e-12)
    assert values["1"]["accuracy"] == pytest.approx(0.5 * (2 / 3 + 1 / 3), abs=1e-12)
    assert values["2"]["accuracy"] == pytest.approx(1.0, abs=1e-12)
    assert values["0"]["accuracy(rel=2)"] == pytest.approx(2 / 3, abs=1e-12)
    assert values["1"]["accuracy(rel=2)"] == pytest.approx(0.75, abs=1e-12)
    # ir_measures reports no value for query 2 under rel=2 (no relevant row retrieved)
    assert values["2"]["accuracy(rel=2)"] is None
    mean = rke.evaluate(_accuracy_log(), ["accuracy", "accuracy(rel=2)"]).row(0, named=True)
    assert mean["accuracy"] == pytest.approx((2 / 3 + 0.5 + 1.0) / 3, abs=1e-12)
    assert mean["accuracy(rel=2)"] == pytest.approx((2 / 3 + 0.75) / 2, abs=1e-12)


def test_accuracy_without_a_nonrelevant_row_is_null() -> None:
    """ir_measures divides by zero there; no (relevant, non-relevant) pair: null, left out."""
    log = pl.DataFrame(
        {
            "query": ["a", "a", "b", "b"],
            "item": ["x", "y", "x", "y"],
            "score": [2.0, 1.0] * 2,
            "relevance": [1, 1, 1, 0],
        }
    )
    out = rke.evaluate(log, ["accuracy"], per_query=True)
    assert out["accuracy"].to_list() == [None, 1.0]
    assert rke.evaluate(log, ["accuracy"]).item() == 1.0


# ir_measures tests/test_compat.py ("based on a manual execution of
# https://github.com/claclark/Compatibility")
COMPAT_PUBLISHED = {
    "compat": {"31_1": 0.51779512165509, "31_2": 0.018400100569017922},
    "compat(p=0.9)": {"31_1": 0.3761334522946854, "31_2": 0.004344079941789211},
    "compat(p=0.8)": {"31_1": 0.16723008845234535, "31_2": 0.00022806427320561776},
}


def test_compat_published_fixture() -> None:
    folder = os.environ.get("IR_MEASURES_TESTS")
    if not folder or not (Path(folder) / "compat.qrels").exists():
        pytest.skip("set IR_MEASURES_TESTS to ir_measures' tests/ folder (compat.qrels, .run)")
    run = rke.read_trec_run(Path(folder) / "compat.run")
    qrels = rke.read_trec_qrels(Path(folder) / "compat.qrels")
    log = rke.join_run_qrels(run, qrels).collect()
    out = rke.evaluate(log, list(COMPAT_PUBLISHED), per_query=True)
    for row in out.iter_rows(named=True):
        for name, expected in COMPAT_PUBLISHED.items():
            assert row[name] == pytest.approx(expected[row["query"]], abs=1e-9), name
    assert rke.evaluate(log, ["compat"]).item() == pytest.approx(0.268097611, abs=1e-9)


def _rbo(run: list[str], ideal: list[str], p: float) -> float:
    """RBO to depth max(|run|, |ideal|), written out from the definition."""
    depth = max(len(run), len(ideal))
    top = sum(p ** (d - 1) * len(set(run[:d]) & set(ideal[:d])) / d for d in range(1, depth + 1))
    return top / sum(p ** (d - 1) for d in range(1, depth + 1))


def test_compat_by_hand() -> None:
    """Ideal (c, a): c outranks a by label; b unjudged; d unretrieved and relevant."""
    log = pl.DataFrame(
        {
            "query": "q",
            "item": ["a", "b", "c", "d"],
            "score": [3.0, 2.0, 1.0, None],
            "relevance": [1, None, 2, 1],
        }
    )
    run, ideal = ["a", "b", "c"], ["c", "a", "d"]
    out = rke.evaluate(log, ["compat(p=0.7)", "compat(p=0.7,normalize=false)"]).row(0)
    assert out[1] == pytest.approx(_rbo(run, ideal, 0.7), abs=1e-15)
    assert out[0] == pytest.approx(_rbo(run, ideal, 0.7) / _rbo(ideal, ideal, 0.7), abs=1e-15)


# ---- live ir_measures --------------------------------------------------------------------------


def _generated_log(seed: int, n_queries: int = 40) -> pl.DataFrame:
    """Ties (also at 0.0 and below), labels -1..3, unjudged and unretrieved rows, a list with
    nothing relevant and one with nothing non-relevant."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        n = int(rng.integers(1, 25))
        items = rng.choice(300, size=n, replace=False)
        scores = rng.integers(-2, max(2, n // 2), size=n).astype(float)
        labels = rng.choice([-1, 0, 1, 2, 3], size=n, p=[0.05, 0.45, 0.2, 0.2, 0.1])
        if q == 0:
            labels[:] = 0
        if q == 1:
            labels[:] = 2
        for item, score, label in zip(items, scores, labels, strict=True):
            judged = q == 1 or rng.random() > 0.15
            retrieved = q == 1 or not judged or rng.random() < 0.85
            rows.append(
                (
                    f"q{q}",
                    f"d{item}",
                    float(score) if retrieved else None,
                    int(label) if judged else None,
                )
            )
        rows.append((f"q{q}", "dz", 0.0 if q != 1 else 5.0, 1 if q != 0 else 0))
    return pl.DataFrame(rows, schema=["query", "item", "score", "relevance"], orient="row")


def _per_query_dicts(log: pl.DataFrame) -> dict[str, tuple[dict[str, int], dict[str, float]]]:
    """Per query: qrels in docno order (a sorted qrels file: Compat breaks its ideal list's
    ties by the qrels' order) and the run in trec_eval's order (score, item descending)."""
    out = {}
    for (query,), rows in log.group_by("query"):
        retrieved = rows.filter(pl.col("score").is_not_null())
        trec_order = retrieved.sort(["score", "item"], descending=[True, True])
        judged = rows.filter(pl.col("relevance").is_not_null()).sort("item")
        qrels = dict(zip(judged["item"], judged["relevance"], strict=True))
        run = dict(zip(trec_order["item"], trec_order["score"], strict=True))
        out[str(query)] = (qrels, run)
    return out


COMPAT_LIVE = ["compat", "compat(p=0.8)", "compat(p=0.5,normalize=false)"]
ACCURACY_LIVE = ["accuracy", "accuracy(rel=2)", "accuracy@3", "accuracy@10(rel=2)"]


def _measure(ir_measures: Any, name: str) -> Any:
    """The ir_measures measure of each name in COMPAT_LIVE and ACCURACY_LIVE."""
    measures = ir_measures.measures
    return {
        "compat": measures.Compat(p=0.95),
        "compat(p=0.8)": measures.Compat(p=0.8),
        "compat(p=0.5,normalize=false)": measures.Compat(p=0.5, normalize=False),
        "accuracy": measures.Accuracy(rel=1),
        "accuracy(rel=2)": measures.Accuracy(rel=2),
        "accuracy@3": measures.Accuracy(rel=1) @ 3,
        "accuracy@10(rel=2)": measures.Accuracy(rel=2) @ 10,
    }[name]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_live_against_ir_measures(seed: int) -> None:
    ir_measures = pytest.importorskip("ir_measures", reason="ir_measures is not installed")
    log = _generated_log(seed)
    names = COMPAT_LIVE + ACCURACY_LIVE
    out = rke.evaluate(log, names, per_query=True)
    dicts = _per_query_dicts(log)
    checked = nulls = 0
    for row in out.iter_rows(named=True):
        qrels, run = dicts[row["query"]]
        for name in names:
            measure = _measure(ir_measures, name)
            provider = ir_measures.compat if name.startswith("compat") else ir_measures.accuracy
            try:
                found = list(provider.iter_calc([measure], {"q": qrels}, {"q": run}))
            except ZeroDivisionError:  # Accuracy with no non-relevant row retrieved
                found = []
            if not found:
                assert row[name] is None, (name, row["query"])
                nulls += 1
                continue
            assert row[name] == pytest.approx(found[0].value, abs=1e-9, rel=0), (name, row)
            checked += 1
    assert checked > 200
    assert nulls > 0


# ---- NCG: brute force -------------------------------------------------------------------------


def _ncg(labels_in_order: list[int | None], judged: list[int], k: int | None, exp: bool) -> float:
    def gain(label: int | None) -> float:
        if label is None or label <= 0:
            return 0.0
        return 2.0**label - 1.0 if exp else float(label)

    cut = len(labels_in_order) if k is None else k
    ideal = sorted((gain(label) for label in judged), reverse=True)
    top = sum(ideal[:cut])
    return sum(gain(label) for label in labels_in_order[:cut]) / top if top > 0 else 0.0


NCG = ["ncg", "ncg@3", "ncg@10(gain=exp)"]


@pytest.mark.parametrize("seed", [0, 1])
def test_ncg_brute_force(seed: int) -> None:
    log = _generated_log(seed)
    out = rke.evaluate(log, NCG, per_query=True)
    for row in out.iter_rows(named=True):
        rows = log.filter(pl.col("query") == row["query"])
        ranked = rows.filter(pl.col("score").is_not_null()).sort(
            ["score", "item"], descending=[True, True]
        )
        judged = [label for label in rows["relevance"].to_list() if label is not None]
        order = ranked["relevance"].to_list()
        assert row["ncg"] == pytest.approx(_ncg(order, judged, None, exp=False), abs=1e-12)
        assert row["ncg@3"] == pytest.approx(_ncg(order, judged, 3, exp=False), abs=1e-12)
        expected = _ncg(order, judged, 10, exp=True)
        assert row["ncg@10(gain=exp)"] == pytest.approx(expected, abs=1e-12)


def _small_tied_log(seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(8):
        for i in range(int(rng.integers(3, 8))):
            label = None if rng.random() < 0.2 else int(rng.choice([0, 0, 1, 2, 3]))
            rows.append((f"q{q}", f"d{i}", float(rng.integers(0, 3)), label))
        rows.append((f"q{q}", "unret", None, 2))
    return pl.DataFrame(rows, schema=["query", "item", "score", "relevance"], orient="row")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ties_against_every_order(seed: int) -> None:
    """ncg: expected = mean over tie orders; ncg and accuracy: bounds = max / min over them."""
    log = _small_tied_log(seed)
    every = rke.evaluate(all_orders(log), [*NCG, "accuracy", "accuracy(rel=2)"], per_query=True)
    every = every.with_columns(pl.col("query").str.split("|").list.first())
    mean = every.group_by("query").agg(pl.col(NCG).mean()).sort("query")
    expected = rke.evaluate(log, NCG, per_query=True, ties="expected").sort("query")
    for name in NCG:
        assert expected[name].to_list() == pytest.approx(mean[name].to_list(), abs=1e-12), name
    bounded = [*NCG, "accuracy", "accuracy(rel=2)"]
    for mode, agg in (("optimistic", "max"), ("pessimistic", "min")):
        ref = every.group_by("query").agg(getattr(pl.col(bounded), agg)()).sort("query")
        got = rke.evaluate(log, bounded, per_query=True, ties=mode).sort("query")
        for name in bounded:
            assert got[name].to_list() == pytest.approx(ref[name].to_list(), abs=1e-12), (
                name,
                mode,
            )


def test_compat_refuses_tie_modes_it_has_no_form_for() -> None:
    log = _small_tied_log(0)
    with pytest.raises(InvalidOptionError, match="no closed form"):
        rke.evaluate(log, ["compat"], ties="expected")
    with pytest.raises(InvalidOptionError, match="moves the ideal ranking"):
        rke.evaluate(log, ["compat"], ties="optimistic")
    with pytest.raises(InvalidOptionError, match="no closed form"):
        rke.evaluate(log, ["accuracy"], ties="expected")


# ---- paths and options ------------------------------------------------------------------------

ALL = [*COMPAT_LIVE, *ACCURACY_LIVE, *NCG]


def test_lazy_and_by_system() -> None:
    one, two = _generated_log(5, 10), _generated_log(6, 12)
    eager = rke.evaluate(one, ALL, per_query=True).sort("query")
    lazy = rke.evaluate(one.lazy(), ALL, per_query=True).collect().sort("query")
    assert eager.equals(lazy)
    both = pl.concat([one.with_columns(system=pl.lit("a")), two.with_columns(system=pl.lit("b"))])
    split = rke.evaluate(both, ALL, by="system")
    for system, alone in (("a", one), ("b", two)):
        row = split.filter(pl.col("system") == system).drop("system").row(0, named=True)
        assert row == pytest.approx(rke.evaluate(alone, ALL).row(0, named=True), abs=1e-12)


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("compat(p=1)", r"p= must be a number in \(0, 1\)"),
        ("compat(p=0)", r"p= must be a number in \(0, 1\)"),
        ("compat(normalize=yes)", "normalize= must be True or False"),
        ("compat@10", "compat"),
        ("accuracy(rel=1.5)", "rel= must be an int"),
        ("ncg(gain=binary)", "gain= must be one of"),
    ],
)
def test_bad_options(spec: str, match: str) -> None:
    with pytest.raises(InvalidOptionError, match=match):
        parse_metric(spec)


def test_long_list_compat_is_finite() -> None:
    """A 5000-row list: the decayed harmonic table is built per batch, not per row."""
    n = 5000
    log = pl.DataFrame(
        {
            "query": "q",
            "item": [f"d{i}" for i in range(n)],
            "score": np.arange(n, 0, -1.0),
            "relevance": [1 if i % 7 == 0 else 0 for i in range(n)],
        }
    )
    run = [f"d{i}" for i in range(n)]
    ideal = [f"d{i}" for i in range(n) if i % 7 == 0]
    value = rke.evaluate(log, ["compat(p=0.99,normalize=false)"]).item()
    assert math.isfinite(value)
    assert value == pytest.approx(_rbo(run, ideal, 0.99), abs=1e-9)


# ---- streaming engine and the expression namespace --------------------------------------------


@pytest.mark.parametrize("per_query", [False, True])
def test_streams_and_equals_eager(tmp_path: Path, per_query: bool) -> None:
    """No in-memory fallback in the streaming plan over a parquet scan; same values as eager."""
    path = tmp_path / "log.parquet"
    STREAM_LOG.write_parquet(path)
    for name in STREAMED:
        plan = rke.evaluate(pl.scan_parquet(path), [name], n_buckets=1, per_query=per_query)
        assert isinstance(plan, pl.LazyFrame)
        assert_streams(plan)
    plan = rke.evaluate(
        pl.scan_parquet(path), STREAMED, n_buckets=1, per_query=per_query, by="system"
    )
    eager = rke.evaluate(STREAM_LOG, STREAMED, per_query=per_query, by="system")
    assert_frame_equal(
        plan.collect(engine="streaming").sort(pl.all()),
        eager.sort(pl.all()),
        rel_tol=1e-12,
        abs_tol=1e-15,
    )


def test_expression_namespace_equals_evaluate_by() -> None:
    log = STREAM_LOG
    frame = rke.evaluate(log, STREAMED, by="system").sort("system")
    grouped = (
        log.group_by("system")
        .agg(pl.col("relevance").rank_eval.metric(name) for name in STREAMED)
        .sort("system")
    )
    for name in STREAMED:
        assert grouped[name].to_list() == pytest.approx(frame[name].to_list(), abs=1e-12), name


STREAMED = [
    "compat",
    "compat(p=0.8,normalize=false)",
    "accuracy",
    "accuracy@5(rel=2)",
    "ncg",
    "ncg@5(gain=exp)",
]
STREAM_LOG = _generated_log(9, 12).with_columns(
    system=pl.when(pl.col("query").str.ends_with("1")).then(pl.lit("a")).otherwise(pl.lit("b"))
)
