"""The C/W/L family (``inst``, ``insq``, ``bpm@k``, ``sdcg@k``, ``nerr8@k`` ... ``nerr11``).

Reference: cwl-eval 1.0.12 through ir_measures 0.4.3's ``cwl_eval`` provider. The first test
uses the fixture and expected values of ir_measures' own unit test
(``terrierteam/ir_measures`` ``tests/test_cwl_eval.py`` with ``tests/cwl.qrels`` and
``tests/cwl.run``, copied below) and runs without either tool; the ETU/EC/ETC/EI values of
``INST(T=1)`` on topic T1 come from a cwl-eval 1.0.12 run on the same fixture
(``/work/shared/round3/catalog-research.md`` §1.3). The live tests run ir_measures itself and
compare every measure and every output per query to 1e-9.

ir_measures sorts a run by score with Python's stable sort, so tied scores keep their input
order; the live tests hand it each run already in trec_eval's order (score descending, then
item descending), the order used here, so ties are compared exactly too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from polars_rankeval.errors import InvalidOptionError
from tests.engine.test_streaming import assert_streams

QRELS = """
T1   00  D1   1
T1   00  D2   0
T1   00  D3   1
T1   00  D4   1
T1   00  D7   1
T1   00  D8   0
T1   00  D9   1
T1   00  D10  0
T2   00  D1   1
T2   00  D2   1
T2   00  D5   1
T2   00  D6   0
T2   00  D7   1
T2   00  D8   1
T2   00  D9   1
T2   00  D10  0
T3   00  D4   0
T3   00  D5   0
T3   00  D6   1
T3   00  D7   1
T3   00  D8   1
T3   00  D9   0
T3   00  D10  1
"""
# tests/cwl.run: the same ten documents D1..D10 for each topic, scores 4.3, 4.2, 4.1, 3.9 ...
RUN_SCORES = [4.3, 4.2, 4.1, 3.9, 3.8, 3.7, 3.6, 3.5, 3.4, 3.3]

# ir_measures tests/test_cwl_eval.py: (ir_measures measure, our metric, T1, T2, T3)
EXPECTED = [
    ("BPM(T=1,max_rel=1)@20", "bpm@20(max_rel=1)", 1.0, 1.0, 0.1667),
    ("BPM(T=2,max_rel=1)@10", "bpm@10(t=2,max_rel=1)", 0.6667, 1.0, 0.2857),
    ("INSQ(T=1,max_rel=1)", "insq(max_rel=1)", 0.5872, 0.6629, 0.0880),
    ("INSQ(T=2,max_rel=1)", "insq(t=2,max_rel=1)", 0.4513, 0.5068, 0.1292),
    ("INST(T=1,max_rel=1)", "inst(max_rel=1)", 0.7934, 0.9226, 0.0888),
    ("INST(T=2,max_rel=1)", "inst(t=2,max_rel=1)", 0.5994, 0.6924, 0.1397),
    ("SDCG(max_rel=1)@10", "sdcg@10(max_rel=1)", 0.5645, 0.6531, 0.2848),
    ("NERR8(max_rel=1)@10", "nerr8@10(max_rel=1)", 1.0, 1.0, 0.1667),
    ("NERR9(max_rel=1)@10", "nerr9@10(max_rel=1)", 1.0, 1.0, 0.0680),
    ("NERR10(p=0.8,max_rel=1)", "nerr10(p=0.8,max_rel=1)", 1.0, 1.0, 0.0888),
    ("NERR11(T=2,max_rel=1)", "nerr11(t=2,max_rel=1)", 1.0, 1.0, 0.0691),
]
OUTPUTS = ("eu", "etu", "ec", "etc", "ei")


def _fixture() -> pl.DataFrame:
    judged = pl.DataFrame(
        [line.split() for line in QRELS.strip().splitlines()],
        schema=["query", "iter", "item", "relevance"],
        orient="row",
    ).select("query", "item", pl.col("relevance").cast(pl.Int64))
    run = pl.DataFrame(
        [
            (topic, f"D{i + 1}", score)
            for topic in ("T1", "T2", "T3")
            for i, score in enumerate(RUN_SCORES)
        ],
        schema=["query", "item", "score"],
        orient="row",
    )
    return run.join(judged, on=["query", "item"], how="full", coalesce=True)


def _with_output(metric: str, output: str) -> str:
    return metric if output == "eu" else f"{metric[:-1]},output={output})"


def _per_query(log: pl.DataFrame | pl.LazyFrame, metrics: list[str], **options: Any) -> dict:
    out = rke.evaluate(log, metrics, per_query=True, **options)
    if isinstance(out, pl.LazyFrame):
        out = out.collect()
    return {row.pop("query"): row for row in out.iter_rows(named=True)}


def test_ir_measures_test_cwl_eval_values() -> None:
    values = _per_query(_fixture(), [metric for _, metric, *_ in EXPECTED])
    for _, metric, *expected in EXPECTED:
        for topic, value in zip(("T1", "T2", "T3"), expected, strict=True):
            assert values[topic][metric] == pytest.approx(value, abs=5e-5), (metric, topic)
    # cwl-eval 1.0.12, INST(T=1, max_rel=1), topic T1: EU ETU EC ETC EI
    outputs = [_with_output("inst(max_rel=1)", output) for output in OUTPUTS]
    t1 = _per_query(_fixture(), outputs)["T1"]
    expected_t1 = [0.7934, 1.1719, 1.0, 1.4770, 1.4771]
    assert [t1[name] for name in outputs] == pytest.approx(expected_t1, abs=5e-5)


# ---- live against ir_measures' cwl_eval provider -------------------------------------------


def _irm_inputs(log: pl.DataFrame) -> tuple[list[Any], list[Any]]:
    """Qrels and a run in trec_eval's order (ir_measures' stable sort then keeps it)."""
    import ir_measures

    qrels = [
        ir_measures.Qrel(q, item, int(label))
        for q, item, label in log.filter(pl.col("relevance").is_not_null())
        .select("query", "item", "relevance")
        .iter_rows()
    ]
    ranked = log.filter(pl.col("score").is_not_null()).sort(
        ["query", "score", "item"], descending=[False, True, True]
    )
    run = [
        ir_measures.ScoredDoc(q, item, float(score))
        for q, item, score in ranked.select("query", "item", "score").iter_rows()
    ]
    return qrels, run


def _check_live(log: pl.DataFrame, pairs: list[tuple[str, str]]) -> int:
    """Compare every pair's five outputs per query to 1e-9; returns the values compared."""
    irm = pytest.importorskip("ir_measures")
    pytest.importorskip("cwl")
    qrels, run = _irm_inputs(log)
    names = [_with_output(metric, output) for _, metric in pairs for output in OUTPUTS]
    ours = _per_query(log, names)
    compared = 0
    for measure_text, metric in pairs:
        measure = irm.parse_measure(measure_text)
        results = [
            r for r in irm.cwl_eval.iter_calc([measure], qrels, run) if hasattr(r, "expected_items")
        ]
        assert {r.query_id for r in results} == set(ours), measure_text
        for result in results:
            reference = {
                "eu": result.value,
                "etu": result.expected_total_utility,
                "ec": result.expected_cost,
                "etc": result.expected_total_cost,
                "ei": result.expected_items,
            }
            row = ours[result.query_id]
            for output in OUTPUTS:
                got = row[_with_output(metric, output)]
                assert got == pytest.approx(reference[output], abs=1e-9, rel=0), (
                    measure_text,
                    output,
                    result.query_id,
                )
                compared += 1
    return compared


def test_fixture_live() -> None:
    pairs = [(measure, metric) for measure, metric, *_ in EXPECTED]
    assert _check_live(_fixture(), pairs) == len(pairs) * 3 * len(OUTPUTS)


def _generated(seed: int, *, ties: bool = False) -> pl.DataFrame:
    """Graded labels 0..3, unjudged retrieved rows, judged unretrieved rows, a query with
    nothing relevant, one list longer than cwl's 1000 positions and one of a single row."""
    rng = np.random.default_rng(seed)
    rows = []
    sizes = [1, 4, 12, 40, 150, 1100, 30, 8]
    for q, size in enumerate(sizes):
        n = size + 5  # five more judged rows that are never retrieved
        items = rng.choice(100_000, size=n, replace=False)
        if ties:
            scores = rng.integers(0, max(2, size // 3), size=n).astype(float)
        else:
            scores = rng.permutation(n).astype(float) + rng.random()
        labels = rng.choice([0, 1, 2, 3], size=n, p=[0.55, 0.2, 0.15, 0.1])
        if q == 3:
            labels[:] = 0  # judged, nothing relevant
        judged = rng.random(n) < 0.7
        judged[0] = True
        for j in range(n):
            retrieved = j < size
            if not (retrieved or judged[j]):
                continue
            rows.append(
                (
                    f"q{q}",
                    f"d{items[j]}",
                    float(scores[j]) if retrieved else None,
                    int(labels[j]) if judged[j] else None,
                )
            )
    return pl.DataFrame(rows, schema=["query", "item", "score", "relevance"], orient="row")


GENERATED = [
    ("INST(T=1,max_rel=3)", "inst(max_rel=3)"),
    ("INST(T=2.5,max_rel=3)", "inst(t=2.5,max_rel=3)"),
    ("INST(T=0.3,min_rel=1,max_rel=3)", "inst(t=0.3,min_rel=1,max_rel=3)"),
    ("INSQ(T=1,max_rel=3)", "insq(max_rel=3)"),
    ("INSQ(T=3,max_rel=2)", "insq(t=3,max_rel=2)"),
    ("BPM(T=1,max_rel=3)@20", "bpm@20(max_rel=3)"),
    ("BPM(T=2,max_rel=3)@5", "bpm@5(t=2,max_rel=3)"),
    ("BPM(T=50,max_rel=3)@1500", "bpm@1500(t=50,max_rel=3)"),
    ("SDCG(max_rel=3)@10", "sdcg@10(max_rel=3)"),
    ("SDCG(max_rel=3)@1200", "sdcg@1200(max_rel=3)"),
    ("NERR8(max_rel=3)@10", "nerr8@10(max_rel=3)"),
    ("NERR8(max_rel=3)@2000", "nerr8@2000(max_rel=3)"),
    ("NERR9(max_rel=3)@10", "nerr9@10(max_rel=3)"),
    ("NERR9(min_rel=1,max_rel=2)@1100", "nerr9@1100(min_rel=1,max_rel=2)"),
    ("NERR10(p=0.9,max_rel=3)", "nerr10(max_rel=3)"),
    ("NERR10(p=0.99,max_rel=3)", "nerr10(p=0.99,max_rel=3)"),
    ("NERR10(p=1.0,max_rel=3)", "nerr10(p=1,max_rel=3)"),
    ("NERR11(T=1,max_rel=3)", "nerr11(max_rel=3)"),
    ("NERR11(T=4,max_rel=3)", "nerr11(t=4,max_rel=3)"),
]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generated_live(seed: int) -> None:
    log = _generated(seed)
    assert _check_live(log, GENERATED) == len(GENERATED) * 8 * len(OUTPUTS)


def test_tied_scores_live_and_deterministic() -> None:
    log = _generated(7, ties=True)
    assert (
        log.filter(pl.col("score").is_not_null())
        .select(pl.struct("query", "score").is_duplicated().any())
        .item()
    )
    # ir_measures keeps input order within a tie: handed trec_eval's order it ranks as we do.
    _check_live(log, GENERATED[:6] + GENERATED[10:12])
    names = [metric for _, metric in GENERATED]
    shuffled = log.sample(fraction=1.0, shuffle=True, seed=3)
    again, first = _per_query(shuffled, names), _per_query(log, names)
    assert again.keys() == first.keys()
    for query, row in first.items():
        # the same ranks; only the order of floating-point sums over the rows may differ
        assert again[query] == pytest.approx(row, abs=1e-12, rel=0), query


def test_lazy_by_system_and_means() -> None:
    names = [metric for _, metric in GENERATED] + ["inst(max_rel=3,output=ei)"]
    first, second = _generated(0), _generated(1)
    eager = rke.evaluate(first, names, per_query=True)
    lazy = rke.evaluate(first.lazy(), names, per_query=True)
    collected = lazy.collect() if isinstance(lazy, pl.LazyFrame) else lazy
    # the streaming engine may add a list's rows in another order: the last bits may differ
    assert_frame_equal(collected, eager, rel_tol=1e-12, abs_tol=1e-12)
    both = pl.concat(
        [first.with_columns(system=pl.lit("a")), second.with_columns(system=pl.lit("b"))]
    )
    together = rke.evaluate(both, names, by="system").sort("system")
    for system, log in (("a", first), ("b", second)):
        alone = rke.evaluate(log, names)
        row = together.filter(pl.col("system") == system).drop("system")
        for name in names:
            assert row[name][0] == pytest.approx(alone[name][0], abs=1e-12), name
    # the expression path runs the same plan per group
    grouped = first.group_by("query").agg(rke.metric_expr(names[0]), rke.metric_expr(names[-1]))
    assert_frame_equal(
        grouped.sort("query"), eager.select("query", names[0], names[-1]), abs_tol=1e-12
    )
    means = rke.evaluate(first, names)
    for name in names:
        assert means[name][0] == pytest.approx(float(np.mean(eager[name].to_numpy())), abs=1e-12)


@pytest.mark.parametrize("per_query", [False, True])
def test_streams_and_scan_equals_eager(tmp_path: Path, per_query: bool) -> None:
    """One pass over a Parquet scan has no in-memory fallback node (the windows, then a
    group_by), and gives the eager result."""
    names = [metric for _, metric in GENERATED] + ["inst(max_rel=3,output=etc)"]
    log = pl.concat(
        [
            _generated(0).with_columns(system=pl.lit("a")),
            _generated(2).with_columns(system=pl.lit("b")),
        ]
    )
    path = tmp_path / "log.parquet"
    log.write_parquet(path)
    plan = rke.evaluate(pl.scan_parquet(path), names, by="system", per_query=per_query, n_buckets=1)
    assert isinstance(plan, pl.LazyFrame)
    assert_streams(plan)
    eager = rke.evaluate(log, names, by="system", per_query=per_query)
    keys = ["system", "query"] if per_query else ["system"]
    assert_frame_equal(
        plan.collect(engine="streaming").sort(keys), eager.sort(keys), rel_tol=1e-12, abs_tol=1e-12
    )


def test_names_directions_and_builders() -> None:
    metric = rke.metrics.inst(t=2, max_rel=3)
    assert metric.name == "inst(t=2,max_rel=3)"
    assert metric.direction == "higher"
    assert rke.metrics.bpm(10, max_rel=1, output="etu").direction == "higher"
    for output in ("ec", "etc", "ei"):
        assert rke.metrics.nerr10(max_rel=1, output=output).direction == "none"
    assert rke.metrics.nerr9(5, min_rel=1, max_rel=3, output="ei").name == (
        "nerr9@5(min_rel=1,max_rel=3,output=ei)"
    )
    log = _fixture()
    typed = rke.evaluate(log, [rke.metrics.sdcg(10, max_rel=1)], per_query=True)
    parsed = rke.evaluate(log, ["SDCG@10(max_rel=1)"], per_query=True)
    assert typed.to_numpy().tolist() == parsed.to_numpy().tolist()


@pytest.mark.parametrize(
    ("metric", "words"),
    [
        ("inst", "needs max_rel="),
        ("insq(t=1)", "needs max_rel="),
        ("inst(max_rel=1,min_rel=1)", "min_rel="),
        ("inst(max_rel=1,t=0)", "t="),
        ("nerr11(max_rel=1,t=-1)", "t="),
        ("nerr10(max_rel=1,p=1.5)", "p="),
        ("nerr10(max_rel=1,p=0)", "p="),
        ("inst(max_rel=1,output=eux)", "output="),
        ("inst(max_rel=x)", "max_rel="),
        ("bpm(max_rel=1)", "cutoff"),
        ("sdcg(max_rel=1)", "cutoff"),
        ("inst@10(max_rel=1)", "no cutoff"),
        ("nerr8@5(max_rel=1,k=3)", "no option"),
    ],
)
def test_options_are_checked(metric: str, words: str) -> None:
    with pytest.raises(InvalidOptionError, match=words):
        rke.evaluate(_fixture(), [metric])


def test_tie_modes_other_than_trec_are_refused() -> None:
    with pytest.raises(InvalidOptionError, match="no closed form"):
        rke.evaluate(_fixture(), ["inst(max_rel=1)"], ties="expected")
    with pytest.raises(InvalidOptionError, match="not defined"):
        rke.evaluate(_fixture(), ["nerr8@10(max_rel=1,ties=optimistic)"])


def test_query_without_retrieved_rows_scores_the_empty_ranking() -> None:
    """missing_queries="zero": an empty list, i.e. 1000 positions of gain 0 (cwl's padding)."""
    cwl_ranking = pytest.importorskip("cwl.ruler.ranking")
    cwl_ruler = pytest.importorskip("cwl.ruler.cwl_ruler")
    log = pl.concat(
        [
            _fixture(),
            pl.DataFrame({"query": ["T4"], "item": ["D1"], "score": [None], "relevance": [1]}),
        ],
        how="vertical_relaxed",
    )
    cases = [
        ("inst(t=2,max_rel=1)", cwl_ruler.INSTCWLMetric(2.0)),
        ("nerr9@1500(max_rel=1)", cwl_ruler.NERReq9CWLMetric(1500)),
        ("nerr11(max_rel=1)", cwl_ruler.NERReq11CWLMetric(1.0)),
        ("bpm@30(max_rel=1)", cwl_ruler.BPMCWLMetric(1.0, 30)),
    ]
    names = [_with_output(metric, output) for metric, _ in cases for output in OUTPUTS]
    row = _per_query(log, names, missing_queries="zero")["T4"]
    for metric, reference in cases:
        empty = cwl_ranking.Ranking("T4", [], [], max_n=1000)
        reference.measure(empty)
        expected = reference.get_scores()
        got = [row[_with_output(metric, output)] for output in OUTPUTS]
        assert got == pytest.approx(expected, abs=1e-9, rel=0), metric


def _tie_orders(log: pl.DataFrame) -> list[list[Any]]:
    """Every run order that sorts by score (each tie group in every order), for ir_measures."""
    import itertools

    import ir_measures

    ranked = log.filter(pl.col("score").is_not_null()).sort("score", descending=True)
    groups = [
        list(group.select("query", "item", "score").iter_rows())
        for _, group in ranked.group_by("score", maintain_order=True)
    ]
    orders = []
    for parts in itertools.product(*(itertools.permutations(g) for g in groups)):
        orders.append([ir_measures.ScoredDoc(*row) for part in parts for row in part])
    return orders


@pytest.mark.parametrize("long", [False, True])
def test_expected_and_bounds_of_fixed_models_against_every_tie_order(long: bool) -> None:
    """insq and sdcg: ties="expected" is the mean of cwl over every order of the tied rows, and
    optimistic/pessimistic the largest/smallest eu. The long list ties across position 1000."""
    irm = pytest.importorskip("ir_measures")
    pytest.importorskip("cwl")
    head = [3.0, 2.0, 2.0, 2.0, 1.0, 1.0]
    labels = [1, 0, 3, None, 2, 0]
    if long:  # 998 distinct scores, then four tied rows at positions 999-1002
        head = [float(2000 - i) for i in range(998)] + [5.0] * 4
        labels = [int(i % 4 == 0) for i in range(998)] + [3, None, 0, 2]
    log = pl.DataFrame(
        {
            "query": ["q"] * (len(head) + 1),
            "item": [f"d{i}" for i in range(len(head) + 1)],
            "score": [*head, None],
            "relevance": [*labels, 2],
        },
        schema_overrides={"score": pl.Float64, "relevance": pl.Int64},
    )
    qrels, _ = _irm_inputs(log)
    orders = _tie_orders(log)
    pairs = [
        ("INSQ(T=1,max_rel=3)", "insq(max_rel=3)"),
        ("INSQ(T=2,min_rel=1,max_rel=3)", "insq(t=2,min_rel=1,max_rel=3)"),
        ("SDCG(max_rel=3)@3", "sdcg@3(max_rel=3)"),
        ("SDCG(max_rel=2)@1200", "sdcg@1200(max_rel=2)"),
    ]
    for measure_text, metric in pairs:
        measure = irm.parse_measure(measure_text)
        per_order = np.array(
            [
                [
                    r.value,
                    r.expected_total_utility,
                    r.expected_cost,
                    r.expected_total_cost,
                    r.expected_items,
                ]
                for run in orders
                for r in irm.cwl_eval.iter_calc([measure], qrels, run)
            ]
        )
        names = [_with_output(metric, output) for output in OUTPUTS]
        expected = rke.evaluate(log, names, ties="expected").row(0)
        assert list(expected) == pytest.approx(per_order.mean(axis=0).tolist(), abs=1e-9, rel=0)
        best = rke.evaluate(log, [metric], ties="optimistic").item()
        worst = rke.evaluate(log, [metric], ties="pessimistic").item()
        assert best == pytest.approx(per_order[:, 0].max(), abs=1e-9, rel=0), measure_text
        assert worst == pytest.approx(per_order[:, 0].min(), abs=1e-9, rel=0), measure_text
