"""The newer metrics against the brute-force oracle, ranx, scikit-learn and hand-worked values.

Covers ``mar``, ``err``, ``rbp``, ``infap``, ``frp``, ``mean_rank`` and the DCG variants
(``gain``, ``log_base``, ``discount``, ``ideal``), plus cutoff sweeps, metric options in
strings and namespace methods, and metric objects mixed with strings.

Every expected value comes from ``tests/support/reference.py`` (plain loops written from the metric
definitions and trec_eval's C code), from another library, or from a hand computation in the
comments; never from the package itself.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import polars_rankeval as rke
from tests.properties.test_differential import FAST, Log, logs
from tests.support import reference as ref
from tests.support.logs import tie_free_log, trec_dicts

TOL = 1e-9
EXP_GAIN_MAP = {0: 0.0, 1: 1.0, 2: 3.0, 3: 7.0}
# label 1 and 3 are not in the mapping (they keep their own value, as in trec_eval); label 0
# earns a gain
SPARSE_GAIN_MAP = {0: 0.5, 2: 4.0}

RefFn = Callable[[ref.Query], "float | None"]


def _new_metrics() -> dict[str, RefFn]:
    """Metric string -> reference function of a ``ref.Query``."""
    table: dict[str, RefFn] = {
        "mar": lambda q: ref.mean_average_recall(q, None),
        "err": lambda q: ref.err(q, None),
        "rbp": ref.rbp,
        "rbp(gain=binary)": lambda q: ref.rbp(q, gain="binary"),
        "rbp(gain=raw)": lambda q: ref.rbp(q, gain="raw"),
        "rbp(p=0.5)": lambda q: ref.rbp(q, p=0.5),
        "rbp(p=0.5,gain=binary)": lambda q: ref.rbp(q, p=0.5, gain="binary"),
        "infap": ref.infap,
        "frp": lambda q: ref.first_relevant_position(q, None),
        "mean_rank": lambda q: ref.mean_rank(q, None),
        "ndcg(gain=exp)": lambda q: ref.ndcg_variant(q, None, gain="exp"),
        "dcg(gain=exp)": lambda q: ref.dcg_variant(q, None, gain="exp"),
        "ndcg(discount=jarvelin)": lambda q: ref.ndcg_variant(q, None, discount="jarvelin"),
        "dcg(discount=jarvelin)": lambda q: ref.dcg_variant(q, None, discount="jarvelin"),
        "ndcg(ideal=retrieved)": lambda q: ref.ndcg_variant(q, None, ideal="retrieved"),
        "ndcg@5(gain={0:0,1:1,2:3,3:7})": lambda q: ref.ndcg_variant(q, 5, gain=EXP_GAIN_MAP),
        "dcg@5(gain={0:0,1:1,2:3,3:7})": lambda q: ref.dcg_variant(q, 5, gain=EXP_GAIN_MAP),
        "ndcg@3(gain={0:0.5,2:4})": lambda q: ref.ndcg_variant(q, 3, gain=SPARSE_GAIN_MAP),
        "ndcg@3(gain={0:0.5,2:4},ideal=retrieved)": lambda q: ref.ndcg_variant(
            q, 3, gain=SPARSE_GAIN_MAP, ideal="retrieved"
        ),
        # a mapped negative label gets its gain, in the run and the ideal list (ir_measures
        # relabels before evaluating); label 2 is not mapped and keeps its value
        "ndcg(gain={-1:5,1:2,3:1})": lambda q: ref.ndcg_variant(
            q, None, gain={-1: 5.0, 1: 2.0, 3: 1.0}
        ),
        "ndcg@3(gain={0:0.5,2:4},unmapped=zero)": lambda q: ref.ndcg_variant(
            q, 3, gain=SPARSE_GAIN_MAP, unmapped="zero"
        ),
        "ndcg@5(gain=exp,log_base=10,discount=jarvelin,ideal=retrieved)": lambda q: (
            ref.ndcg_variant(q, 5, gain="exp", log_base=10, discount="jarvelin", ideal="retrieved")
        ),
        "ndcg@4(log_base=2.5)": lambda q: ref.ndcg_variant(q, 4, log_base=2.5),
    }
    for k in (1, 3, 5, 10):
        table |= {
            f"mar@{k}": lambda q, k=k: ref.mean_average_recall(q, k),
            f"err@{k}": lambda q, k=k: ref.err(q, k),
            f"err@{k}(max_grade=3)": lambda q, k=k: ref.err(q, k, max_grade=3),
            f"err@{k}(max_grade=2)": lambda q, k=k: ref.err(q, k, max_grade=2),
            f"err@{k}(transform=sigmoid)": lambda q, k=k: ref.err(q, k, transform="sigmoid"),
            f"err@{k}(transform=sigmoid,alpha=2,beta=1.5)": lambda q, k=k: ref.err(
                q, k, transform="sigmoid", alpha=2.0, beta=1.5
            ),
            f"frp@{k}": lambda q, k=k: ref.first_relevant_position(q, k),
            f"mean_rank@{k}": lambda q, k=k: ref.mean_rank(q, k),
            f"ndcg@{k}(gain=exp)": lambda q, k=k: ref.ndcg_variant(q, k, gain="exp"),
            f"dcg@{k}(gain=exp)": lambda q, k=k: ref.dcg_variant(q, k, gain="exp"),
            f"ndcg@{k}(log_base=10)": lambda q, k=k: ref.ndcg_variant(q, k, log_base=10),
            f"dcg@{k}(log_base=10)": lambda q, k=k: ref.dcg_variant(q, k, log_base=10),
            f"ndcg@{k}(discount=jarvelin)": lambda q, k=k: ref.ndcg_variant(
                q, k, discount="jarvelin"
            ),
            f"dcg@{k}(discount=jarvelin)": lambda q, k=k: ref.dcg_variant(
                q, k, discount="jarvelin"
            ),
            f"ndcg@{k}(ideal=retrieved)": lambda q, k=k: ref.ndcg_variant(q, k, ideal="retrieved"),
        }
    return table


NEW_METRICS = _new_metrics()
METRIC_NAMES = list(NEW_METRICS)


def reference_values(
    rows: list[ref.Row], metrics: dict[str, RefFn], **options: Any
) -> dict[str, dict[str, float | None]]:
    return {
        str(query): {name: fn(q) for name, fn in metrics.items()}
        for query, q in ref.queries(rows, **options).items()
    }


def package_values(frame: pl.DataFrame, metrics: list[str], **options: Any) -> dict[str, dict]:
    out = rke.evaluate(frame, metrics, per_query=True, **options)
    assert out.columns == ["query", *metrics]
    return {str(row.pop("query")): row for row in out.iter_rows(named=True)}


def _close(got: object, want: float | None, tol: float) -> bool:
    if want is None:
        return got is None
    return isinstance(got, float) and math.isclose(got, want, rel_tol=0.0, abs_tol=tol)


def assert_match(got: dict[str, dict], want: dict[str, dict], metrics: list[str]) -> None:
    assert sorted(got) == sorted(want), "evaluated query sets differ"
    bad = [
        f"{query} {metric}: got {got[query][metric]!r}, expected {row[metric]!r}"
        for query, row in want.items()
        for metric in metrics
        if not _close(got[query][metric], row[metric], TOL)
    ]
    assert not bad, "\n".join(bad)


# ---------------------------------------------------------------------------------------------
# Generated logs against the reference
# ---------------------------------------------------------------------------------------------


@settings(FAST, max_examples=50)
@given(
    log=logs(),
    relevance_level=st.sampled_from([1, 2]),
    missing_queries=st.sampled_from(["skip", "skip", "zero"]),
)
def test_new_metrics_match_reference(log: Log, relevance_level: int, missing_queries: str) -> None:
    options = {"relevance_level": relevance_level, "missing_queries": missing_queries}
    want = reference_values(log.rows, NEW_METRICS, **options)
    got = package_values(log.frame(), METRIC_NAMES, **options)
    assert_match(got, want, METRIC_NAMES)

    # means over the evaluated queries; frp and mean_rank leave out queries without a
    # relevant row (null), and a mean over nothing is null
    means = rke.evaluate(log.frame(), METRIC_NAMES, **options).row(0, named=True)
    for metric in METRIC_NAMES:
        column = [row[metric] for row in want.values() if row[metric] is not None]
        expected = sum(column) / len(column) if column else None
        assert _close(means[metric], expected, TOL), (metric, means[metric], expected)


# ---------------------------------------------------------------------------------------------
# Hand-worked values
# ---------------------------------------------------------------------------------------------


def _frame(rows: list[tuple[Any, Any, float | None, int | None]]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema={"query": pl.String, "item": pl.String, "score": pl.Float64, "relevance": pl.Int64},
        orient="row",
    )


def _one_query(frame: pl.DataFrame, metrics: list[str], **options: Any) -> dict[str, Any]:
    out = rke.evaluate(frame, metrics, per_query=True, **options)
    assert out.height == 1
    return out.row(0, named=True)


def test_err_hand_worked_gdeval() -> None:
    # labels by rank 1, 2, 0; max_grade 4: R1 = 1/16, R2 = 3/16, R3 = 0
    # ERR@3 = 1/16 + (15/16)(3/16)/2 = 0.0625 + 0.087890625 = 0.150390625 (gdeval: 0.15039)
    frame = _frame([("q", "a", 3.0, 1), ("q", "b", 2.0, 2), ("q", "c", 1.0, 0)])
    row = _one_query(frame, ["err@3", "err", "err@1"])
    assert row["err@3"] == pytest.approx(0.150390625, abs=1e-15)
    assert f"{row['err@3']:.5f}" == "0.15039"
    assert row["err"] == pytest.approx(0.150390625, abs=1e-15)
    assert row["err@1"] == pytest.approx(1 / 16, abs=1e-15)
    rows = list(frame.iter_rows())
    assert ref.err(ref.Query([r[1:] for r in rows], 1), 3) == pytest.approx(0.150390625)


def test_err_clips_labels_and_reads_null_and_negative_as_zero() -> None:
    # labels by rank 5 (clipped to max_grade 3: R = 7/8), -1 (0), null (0), 3 (7/8)
    # ERR = 7/8 + (1/8)(7/8)/4 = 0.875 + 0.02734375
    frame = _frame(
        [("q", "a", 4.0, 5), ("q", "b", 3.0, -1), ("q", "c", 2.0, None), ("q", "d", 1.0, 3)]
    )
    row = _one_query(frame, ["err(max_grade=3)"])
    assert row["err(max_grade=3)"] == pytest.approx(0.875 + 0.02734375, abs=1e-15)


def test_rbp_trec_eval_normalises_by_max_judged_label() -> None:
    # trec_eval rbp: query A qrels x=1, query B qrels y=1 z=3 (z not retrieved); each query
    # retrieves its one item at rank 1.  A: (1 - 0.9) * 1 = 0.1.  B: gains are scaled by the
    # largest label 3, so y has gain 1/3: 0.1 / 3 = 0.0333...
    frame = _frame([("A", "x", 1.0, 1), ("B", "y", 1.0, 1), ("B", "z", None, 3)])
    out = rke.evaluate(frame, ["rbp", "rbp(gain=raw)", "rbp(gain=binary)"], per_query=True)
    assert out["query"].to_list() == ["A", "B"]
    assert out["rbp"].to_list() == pytest.approx([0.1, 0.1 / 3], abs=1e-15)
    assert out["rbp(gain=raw)"].to_list() == pytest.approx([0.1, 0.1], abs=1e-15)
    assert out["rbp(gain=binary)"].to_list() == pytest.approx([0.1, 0.1], abs=1e-15)


def test_rbp_persistence() -> None:
    # binary gains at ranks 1 and 3, p = 0.5: (1 - 0.5) * (1 + 0.25) = 0.625
    frame = _frame([("q", "a", 3.0, 1), ("q", "b", 2.0, 0), ("q", "c", 1.0, 1)])
    row = _one_query(frame, ["rbp(p=0.5)", "rbp"])
    assert row["rbp(p=0.5)"] == pytest.approx(0.625, abs=1e-15)
    # p = 0.9: 0.1 * (1 + 0.81) = 0.181
    assert row["rbp"] == pytest.approx(0.181, abs=1e-15)


def test_infap_hand_worked() -> None:
    # ranking: a (rel), b (judged non-rel), c (no label: outside the pool), d (label -1: in
    # the pool, unjudged), e (rel); z is relevant but not retrieved, so R = 3.
    # a at j = 0: 1.  e at j = 4 with 1 rel, 1 non-rel, 1 pooled-unjudged above:
    #   1/5 + (4/5) * (3/4) * ((1 + eps) / (2 + 2 eps)) = 0.2 + 0.6 * 0.5 = 0.5
    # infAP = (1 + 0.5) / 3 = 0.5
    frame = _frame(
        [
            ("q", "a", 5.0, 1),
            ("q", "b", 4.0, 0),
            ("q", "c", 3.0, None),
            ("q", "d", 2.0, -1),
            ("q", "e", 1.0, 2),
            ("q", "z", None, 1),
        ]
    )
    row = _one_query(frame, ["infap"])
    assert row["infap"] == pytest.approx(0.5, abs=1e-12)
    # level 2: only e is relevant (R = 1), and a, b are judged non-relevant above it:
    #   1/5 + (4/5) * (3/4) * (eps / (2 + 2 eps)) = 0.2 + 0.6 * eps / (2 + 2 eps)
    eps = 0.00001
    row = _one_query(frame, ["infap"], relevance_level=2)
    assert row["infap"] == pytest.approx(0.2 + 0.6 * eps / (2 + 2 * eps), abs=1e-12)


def test_frp_and_mean_rank_hand_worked() -> None:
    # q1 ranking a (0), b (1), c (unjudged); z relevant, not retrieved: R = 2, n = 3.
    #   frp = 2; frp@1 = k + 1 = 2; frp@5 = 2
    #   mean_rank = (2 + (n + 1)) / 2 = 3; mean_rank@1 = (2 + 2) / 2 = 2;
    #   mean_rank@2 = (2 + 3) / 2 = 2.5
    # q2 ranking x (0) only, no relevant row: null for all; the means leave it out.
    # q3 ranking m (0), n (0); y relevant, not retrieved: frp = n + 1 = 3, frp@5 = 6,
    #   mean_rank = 3, mean_rank@1 = 2
    frame = _frame(
        [
            ("q1", "a", 3.0, 0),
            ("q1", "b", 2.0, 1),
            ("q1", "c", 1.0, None),
            ("q1", "z", None, 2),
            ("q2", "x", 1.0, 0),
            ("q3", "m", 2.0, 0),
            ("q3", "n", 1.0, 0),
            ("q3", "y", None, 1),
        ]
    )
    metrics = ["frp", "frp@1", "frp@5", "mean_rank", "mean_rank@1", "mean_rank@2", "num_q"]
    out = rke.evaluate(frame, metrics, per_query=True)
    assert out.to_dicts() == [
        {
            "query": "q1",
            "frp": 2.0,
            "frp@1": 2.0,
            "frp@5": 2.0,
            "mean_rank": 3.0,
            "mean_rank@1": 2.0,
            "mean_rank@2": 2.5,
            "num_q": 1,
        },
        {
            "query": "q2",
            "frp": None,
            "frp@1": None,
            "frp@5": None,
            "mean_rank": None,
            "mean_rank@1": None,
            "mean_rank@2": None,
            "num_q": 1,
        },
        {
            "query": "q3",
            "frp": 3.0,
            "frp@1": 2.0,
            "frp@5": 6.0,
            "mean_rank": 3.0,
            "mean_rank@1": 2.0,
            "mean_rank@2": 3.0,
            "num_q": 1,
        },
    ]
    means = rke.evaluate(frame, metrics).row(0, named=True)
    assert means == {
        "frp": 2.5,
        "frp@1": 2.0,
        "frp@5": 4.0,
        "mean_rank": 3.0,
        "mean_rank@1": 2.0,
        "mean_rank@2": 2.75,
        "num_q": 3,
    }


def test_mar_hand_worked() -> None:
    # ranking a (rel), b (non-rel), c (rel); z relevant, not retrieved: R = 3
    # mar = (recall@1 + recall@3) / R = (1/3 + 2/3) / 3 = 1/3; mar@1 = (1/3) / 3 = 1/9
    frame = _frame(
        [("q", "a", 3.0, 1), ("q", "b", 2.0, 0), ("q", "c", 1.0, 2), ("q", "z", None, 1)]
    )
    row = _one_query(frame, ["mar", "mar@1", "mar@2", "ar"])
    assert row["mar"] == pytest.approx(1 / 3, abs=1e-15)
    assert row["mar@1"] == pytest.approx(1 / 9, abs=1e-15)
    assert row["mar@2"] == pytest.approx(1 / 9, abs=1e-15)
    assert row["ar"] == row["mar"]


def test_dcg_variants_hand_worked() -> None:
    # ranking a (2), b (0), c (3); d (1) judged, not retrieved.
    # exp gain: dcg@3 = 3/log2(2) + 7/log2(4) = 3 + 3.5 = 6.5
    # jarvelin discount, linear: rank 1 undiscounted, then 1/log2(i): 2 + 0 + 3/log2(3)
    # log_base 10, linear: 2/log10(2) + 3/log10(4)
    # ideal judged (3, 2, 1): 3 + 2/log2(3) + 1/2; ideal retrieved (3, 2): 3 + 2/log2(3)
    frame = _frame(
        [("q", "a", 3.0, 2), ("q", "b", 2.0, 0), ("q", "c", 1.0, 3), ("q", "d", None, 1)]
    )
    row = _one_query(
        frame,
        [
            "dcg@3(gain=exp)",
            "dcg(discount=jarvelin)",
            "dcg@3(log_base=10)",
            "ndcg@3",
            "ndcg@3(ideal=retrieved)",
        ],
    )
    assert row["dcg@3(gain=exp)"] == pytest.approx(6.5, abs=1e-12)
    assert row["dcg(discount=jarvelin)"] == pytest.approx(2 + 3 / math.log2(3), abs=1e-12)
    assert row["dcg@3(log_base=10)"] == pytest.approx(
        2 / math.log10(2) + 3 / math.log10(4), abs=1e-12
    )
    dcg = 2 + 3 / 2
    assert row["ndcg@3"] == pytest.approx(dcg / (3 + 2 / math.log2(3) + 0.5), abs=1e-12)
    assert row["ndcg@3(ideal=retrieved)"] == pytest.approx(dcg / (3 + 2 / math.log2(3)), abs=1e-12)


# ---------------------------------------------------------------------------------------------
# Other implementations: ranx (ndcg_burges) and scikit-learn (ideal from the retrieved rows)
# ---------------------------------------------------------------------------------------------


# ranx name -> (our metric string, relevance level, reference function)
RANX_METRICS: dict[str, tuple[str, int, RefFn]] = {
    "ndcg_burges@5": ("ndcg@5(gain=exp)", 1, lambda q: ref.ndcg_variant(q, 5, gain="exp")),
    "ndcg_burges@10": ("ndcg@10(gain=exp)", 1, lambda q: ref.ndcg_variant(q, 10, gain="exp")),
    "rbp.9": ("rbp(gain=raw)", 1, lambda q: ref.rbp(q, gain="raw")),
    "rbp.5": ("rbp(p=0.5,gain=raw)", 1, lambda q: ref.rbp(q, p=0.5, gain="raw")),
    "rbp.8-l2": ("rbp(p=0.8,gain=raw)", 2, lambda q: ref.rbp(q, p=0.8, gain="raw")),
}


@pytest.fixture(scope="module")
def ranx_comparison() -> tuple[pl.DataFrame, dict[str, np.ndarray], list[str]]:
    ranx = pytest.importorskip("ranx")
    log = tie_free_log(seed=5, n_queries=50)
    qrels, run = trec_dicts(log)
    ranx_order = list(ranx.Run(run).keys())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = ranx.evaluate(
            ranx.Qrels(qrels), ranx.Run(run), list(RANX_METRICS), return_mean=False
        )
    return log, theirs, ranx_order


@pytest.mark.parametrize("ranx_name", list(RANX_METRICS))
def test_matches_ranx(ranx_comparison, ranx_name: str) -> None:
    # ndcg_burges: exp gain, ideal from every judged row; rbp.p: raw labels of relevant rows
    log, theirs, ranx_order = ranx_comparison
    ours_name, level, reference_fn = RANX_METRICS[ranx_name]
    ours = rke.evaluate(log, [ours_name], per_query=True, relevance_level=level)
    assert sorted(ours["query"].to_list()) == sorted(ranx_order)
    by_query = dict(zip(ours["query"], ours[ours_name], strict=True))
    got = np.array([by_query[q] for q in ranx_order])
    np.testing.assert_allclose(got, theirs[ranx_name], rtol=0, atol=1e-9, err_msg=ranx_name)
    want = reference_values(list(log.iter_rows()), {ours_name: reference_fn}, relevance_level=level)
    np.testing.assert_allclose(got, [want[q][ours_name] for q in ranx_order], atol=1e-12)


@pytest.mark.parametrize("seed", range(12))
def test_ideal_retrieved_matches_sklearn(seed: int) -> None:
    from sklearn.metrics import dcg_score, ndcg_score

    frame = tie_free_log(seed=100 + seed, n_queries=1)
    retrieved = frame.filter(pl.col("score").is_not_null())
    # scikit-learn sees only the retrieved rows; an unjudged row has gain 0
    y_true = np.array([retrieved["relevance"].fill_null(0).to_list()], dtype=float)
    y_score = np.array([retrieved["score"].to_list()])
    for k in (1, 3, 5, 10, None):
        cut = "" if k is None else f"@{k}"
        names = [f"ndcg{cut}(ideal=retrieved)", f"dcg{cut}", f"dcg{cut}(log_base=10)"]
        row = _one_query(frame, names)
        want_ndcg = ndcg_score(y_true, y_score, k=k, ignore_ties=True)
        want_dcg = dcg_score(y_true, y_score, k=k, ignore_ties=True)
        want_dcg10 = dcg_score(y_true, y_score, k=k, log_base=10, ignore_ties=True)
        assert row[names[0]] == pytest.approx(want_ndcg, abs=1e-12), (k, names[0])
        assert row[names[1]] == pytest.approx(want_dcg, abs=1e-12), (k, names[1])
        assert row[names[2]] == pytest.approx(want_dcg10, abs=1e-12), (k, names[2])


# ---------------------------------------------------------------------------------------------
# Cutoff sweeps, options and naming
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample() -> pl.DataFrame:
    return tie_free_log(seed=3, n_queries=20)


def test_cutoff_sweep_equals_separate_evaluation(sample: pl.DataFrame) -> None:
    swept = rke.evaluate(sample, ["ndcg@1,5,10"], per_query=True)
    assert swept.columns == ["query", "ndcg@1", "ndcg@5", "ndcg@10"]
    separate = rke.evaluate(sample, ["ndcg@1", "ndcg@5", "ndcg@10"], per_query=True)
    assert swept.equals(separate)
    means = rke.evaluate(sample, ["map", "ndcg@1,5,10", "p@1,3"])
    assert means.columns == ["map", "ndcg@1", "ndcg@5", "ndcg@10", "p@1", "p@3"]
    assert means.equals(rke.evaluate(sample, means.columns))


def test_cutoff_sweep_with_options(sample: pl.DataFrame) -> None:
    swept = rke.evaluate(sample, ["ndcg@1,5(gain=exp)", "err@3,10(max_grade=3)"])
    names = ["ndcg@1(gain=exp)", "ndcg@5(gain=exp)", "err@3(max_grade=3)", "err@10(max_grade=3)"]
    assert swept.columns == names
    assert swept.equals(rke.evaluate(sample, names))


def test_namespace_sweep_and_option_naming(sample: pl.DataFrame) -> None:
    sweep = sample.rank_eval.ndcg(k=[1, 5])
    assert sweep.columns == ["ndcg@1", "ndcg@5"]
    assert sweep.equals(rke.evaluate(sample, ["ndcg@1", "ndcg@5"]))
    exp = sample.rank_eval.ndcg(k=5, gain="exp", per_query=True)
    assert exp.columns == ["query", "ndcg@5(gain=exp)"]
    assert exp.equals(rke.evaluate(sample, ["ndcg@5(gain=exp)"], per_query=True))
    assert sample.rank_eval.err(k=10, max_grade=3).columns == ["err@10(max_grade=3)"]
    assert sample.rank_eval.rbp(p=0.5).columns == ["rbp(p=0.5)"]
    assert sample.rank_eval.mar(k=[3, 5]).columns == ["mar@3", "mar@5"]


def test_metric_objects_mix_with_strings(sample: pl.DataFrame) -> None:
    metrics = ["map", rke.metrics.ndcg(10, gain="exp"), "err@10", rke.metrics.rbp(p=0.8)]
    out = rke.evaluate(sample, metrics, per_query=True)
    assert out.columns == ["query", "map", "ndcg@10(gain=exp)", "err@10", "rbp(p=0.8)"]
    strings = rke.evaluate(
        sample, ["map", "ndcg@10(gain=exp)", "err@10", "rbp(p=0.8)"], per_query=True
    )
    assert out.equals(strings)
    want = reference_values(
        list(sample.iter_rows()),
        {
            "ndcg@10(gain=exp)": lambda q: ref.ndcg_variant(q, 10, gain="exp"),
            "rbp(p=0.8)": lambda q: ref.rbp(q, p=0.8),
        },
    )
    got = {str(row.pop("query")): row for row in out.iter_rows(named=True)}
    assert_match(got, want, ["ndcg@10(gain=exp)", "rbp(p=0.8)"])


def test_unknown_option_names_the_allowed_ones(sample: pl.DataFrame) -> None:
    with pytest.raises(rke.InvalidOptionError, match="foo") as info:
        rke.evaluate(sample, ["ndcg@5(foo=1)"])
    for option in ("gain", "log_base", "discount", "ideal"):
        assert option in str(info.value)
    with pytest.raises(rke.InvalidOptionError, match="max_grade"):
        rke.evaluate(sample, ["err@5(gain=exp)"])
    with pytest.raises(rke.InvalidOptionError, match="no option"):
        rke.evaluate(sample, ["map(gain=exp)"])


@pytest.mark.parametrize(
    "spec",
    [
        "ndcg@5(gain=cubic)",
        "ndcg@5(log_base=1)",
        "ndcg@5(discount=none)",
        "ndcg@5(ideal=best)",
        "ndcg@5(gain={a:1})",
        "err@5(transform=linear)",
        "err@5(max_grade=0)",
        "rbp(p=1)",
        "rbp(p=0)",
        "rbp(gain=exp)",
        "ndcg@5(gain)",
    ],
)
def test_bad_option_values(sample: pl.DataFrame, spec: str) -> None:
    with pytest.raises(rke.InvalidOptionError):
        rke.evaluate(sample, [spec])
