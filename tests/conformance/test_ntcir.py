"""NTCIREVAL's graded family against pyNTCIREVAL (``pip install pyNTCIREVAL``).

The published values are pyNTCIREVAL's own CLI tests (``mpkato/pyNTCIREVAL``
``tests/test_main.py`` with ``tests/dat/sample.rel`` and ``sample.lab``; expected output
``tests/dat/res_test_compute.txt``, ``res_test_compute_grade.txt`` (``-g 1:4:9``) and
``res_test_compute_cutoff.txt`` (``--cutoffs 2``), printed to 4 decimals). They run without
pyNTCIREVAL. The live tests run pyNTCIREVAL's metric classes per query on the same ranked list
(score descending, ties by item descending) and are skipped without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from polars_rankeval._names.registry import parse_metric
from polars_rankeval.errors import ColumnValueError, InvalidOptionError
from tests.engine.test_streaming import assert_streams
from tests.support.tie_orders import all_orders

# sample.rel: dummy01-03 L3, dummy04-06 L2, dummy07-10 L1, dummy11 L0; sample.res ranks
# dummy11, dummy01, dummy12 (unjudged), dummy04.
_SAMPLE_REL = {f"dummy{i:02d}": 3 if i <= 3 else 2 if i <= 6 else 1 if i <= 10 else 0 for i in
               range(1, 12)}  # fmt: skip
_SAMPLE_RUN = ["dummy11", "dummy01", "dummy12", "dummy04"]


def _sample_log() -> pl.DataFrame:
    rows: list[tuple[str, str, float | None, int | None]] = [
        ("q", item, float(10 - rank), _SAMPLE_REL.get(item))
        for rank, item in enumerate(_SAMPLE_RUN)
    ]
    rows += [
        ("q", item, None, label) for item, label in _SAMPLE_REL.items() if item not in _SAMPLE_RUN
    ]
    return pl.DataFrame(rows, schema=["query", "item", "score", "relevance"], orient="row")


# NTCIREVAL's output name -> our metric string, per published file.
PUBLISHED: dict[str, dict[str, float]] = {
    # res_test_compute.txt (-g 1:2:3)
    "": {
        "ncu(stop=uniform,beta=0)": 0.1000,  # AP
        "q_measure": 0.0967,
        "o_measure": 0.5000,
        "p_measure": 0.5000,
        "p_plus": 0.5000,
        "ncu(beta=0)": 0.1316,  # NCUgu,P
        "ncu": 0.1281,  # NCUgu,BR
        "ncu(stop=rank,beta=0)": 0.1215,  # NCUrb,P
        "ncu(stop=rank)": 0.1175,  # NCUrb,BR
        "err_ntcir": 0.4062,
        "ncu@1000(stop=uniform,beta=0)": 0.1000,  # AP@1000
        "q_measure@1000": 0.0967,
        "ndcg_orig@1000": 0.3380,
        "msndcg@1000": 0.2760,
        "nerr_ntcir@1000": 0.4710,
    },
    # res_test_compute_grade.txt (-g 1:4:9)
    "gains=1:4:9": {
        "ncu(stop=uniform,beta=0)": 0.1000,
        "q_measure": 0.0929,
        "o_measure": 0.5000,
        "p_measure": 0.5000,
        "p_plus": 0.5000,
        "ncu(beta=0)": 0.1512,
        "ncu": 0.1445,
        "ncu(stop=rank,beta=0)": 0.1215,
        "ncu(stop=rank)": 0.1130,
        "err_ntcir": 0.4600,
        "q_measure@1000": 0.0929,
        "ndcg_orig@1000": 0.3636,
        "msndcg@1000": 0.2947,
        "nerr_ntcir@1000": 0.4851,
    },
    # res_test_compute_cutoff.txt (--cutoffs 2)
    "cutoff": {
        "ncu@2(stop=uniform,beta=0)": 0.2500,  # AP@0002
        "q_measure@2": 0.2500,
        "ndcg_orig@2": 0.5000,
        "msndcg@2": 0.3869,
        "nerr_ntcir@2": 0.4444,
    },
}


def _with_gains(spec: str, gains: str) -> str:
    if not gains.startswith("gains="):
        return spec
    if spec.endswith(")"):
        return f"{spec[:-1]},{gains})"
    return f"{spec}({gains})"


@pytest.mark.parametrize("setting", list(PUBLISHED))
def test_published_pyntcireval_fixture(setting: str) -> None:
    expected = {_with_gains(spec, setting): value for spec, value in PUBLISHED[setting].items()}
    out = rke.evaluate(_sample_log(), list(expected)).row(0, named=True)
    for spec, value in expected.items():
        assert out[spec] == pytest.approx(value, abs=5e-5), spec


def test_exact_digits_by_hand() -> None:
    """The sample's values worked out by hand (R = 10; ranks 2 and 4 hold L3 and L2)."""
    out = rke.evaluate(_sample_log(), ["q_measure", "err_ntcir", "ncu(stop=rank,beta=0)"])
    # Q: (BR(2) + BR(4)) / 10, BR(2) = (1 + 3)/(2 + 6), BR(4) = (2 + 5)/(4 + 11)
    assert out["q_measure"][0] == pytest.approx((4 / 8 + 7 / 15) / 10, abs=1e-15)
    # ERR: R = g/4: 3/4 at rank 2 (after an L0), then 2/4 · (1 - 3/4) / 4
    assert out["err_ntcir"][0] == pytest.approx(3 / 4 / 2 + 2 / 4 * 1 / 4 / 4, abs=1e-15)
    norm = sum(0.95**i for i in range(10))
    assert out["ncu(stop=rank,beta=0)"][0] == pytest.approx((1 / 2 + 0.95 * 2 / 4) / norm)


# ---- live pyNTCIREVAL -------------------------------------------------------------------------


def _generated_log(seed: int, n_queries: int = 30) -> pl.DataFrame:
    """Ties, labels 0..3, unjudged and negative rows, unretrieved judged rows, a list with
    nothing relevant and one with a single level."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        n = int(rng.integers(2, 30))
        items = rng.choice(500, size=n, replace=False)
        scores = rng.integers(0, max(2, n // 2), size=n).astype(float)
        labels = rng.choice([0, 1, 2, 3], size=n, p=[0.5, 0.2, 0.2, 0.1])
        if q == 0:
            labels[:] = 0
        if q == 1:
            labels = np.where(labels > 0, 1, 0)
            labels[0] = 1
        for item, score, label in zip(items, scores, labels, strict=True):
            draw = rng.random()
            relevance = None if draw < 0.15 else -1 if draw < 0.18 else int(label)
            retrieved = rng.random() < 0.85 or relevance is None
            rows.append((f"q{q}", f"d{item}", float(score) if retrieved else None, relevance))
        rows.append((f"q{q}", "dx", 1.0, 0))  # every list has a retrieved judged row
    return pl.DataFrame(rows, schema=["query", "item", "score", "relevance"], orient="row")


def _lists(log: pl.DataFrame) -> dict[str, tuple[list[tuple[str, int | None]], list[int]]]:
    """Per query: pyNTCIREVAL's labelled ranked list (trec order) and per-level counts."""
    out = {}
    for (query,), rows in log.group_by("query"):
        judged = [
            label for label in rows["relevance"].to_list() if label is not None and label >= 0
        ]
        xrelnum = [sum(1 for label in judged if label == level) for level in range(4)]
        ranked = rows.filter(pl.col("score").is_not_null()).sort(
            ["score", "item"], descending=[True, True]
        )
        labelled = [
            (item, label if label is not None and label >= 0 else None)
            for item, label in ranked.select("item", "relevance").iter_rows()
        ]
        out[str(query)] = (labelled, xrelnum)
    return out


def _reference(
    pyn: Any, spec: dict[str, Any], labelled: list[tuple[str, int | None]], xrelnum: list[int]
) -> float:
    kind, k, grades = spec["kind"], spec.get("k"), spec["grades"]
    beta, gamma = spec.get("beta", 1.0), spec.get("gamma", 0.95)
    metrics = pyn
    if kind in ("o", "p", "p_plus"):  # a cutoff truncates the list (NTCIREVAL label --truncate)
        cls = {"o": metrics.OMeasure, "p": metrics.PMeasure, "p_plus": metrics.PPlusMeasure}[kind]
        return float(cls(xrelnum, grades, beta).compute(labelled[:k] if k else labelled))
    if kind == "q":
        metric = metrics.QMeasure(xrelnum, grades, beta, k)
    elif kind == "ap":
        metric = metrics.AP(xrelnum, grades, k)
    elif kind == "gu":
        metric = metrics.NCUguBR(xrelnum, grades, spec.get("stops", grades), beta)
    elif kind == "rb":
        metric = metrics.NCUrbBR(xrelnum, grades, gamma, beta)
    elif kind == "err":
        metric = metrics.ERR(xrelnum, grades)
    elif kind == "nerr":
        metric = metrics.nERR(xrelnum, grades, k)
    elif kind == "ndcg":
        metric = metrics.nDCG(xrelnum, grades, spec.get("b", 2.0), k)
    else:
        metric = metrics.MSnDCG(xrelnum, grades, k)
    metric.cutoff = k  # NCU, ERR: the compute loop stops at the cutoff
    return float(metric.compute(labelled))


LIVE: dict[str, dict[str, Any]] = {
    "q_measure": {"kind": "q", "grades": [1, 2, 3]},
    "q_measure@3": {"kind": "q", "k": 3, "grades": [1, 2, 3]},
    "q_measure@10(beta=0.5,gains=1:4:9)": {"kind": "q", "k": 10, "grades": [1, 4, 9], "beta": 0.5},
    "ncu@5(stop=uniform,beta=0)": {"kind": "ap", "k": 5, "grades": [1, 2, 3]},
    "ncu": {"kind": "gu", "grades": [1, 2, 3]},
    "ncu@4(beta=0.3,stops=1:1:5)": {
        "kind": "gu",
        "k": 4,
        "grades": [1, 2, 3],
        "beta": 0.3,
        "stops": [1, 1, 5],
    },
    "ncu(stop=rank,beta=0,gamma=0.8)": {
        "kind": "rb",
        "grades": [1, 2, 3],
        "beta": 0.0,
        "gamma": 0.8,
    },
    "ncu(stop=rank,gains=0:2:2)": {"kind": "rb", "grades": [0, 2, 2]},
    "o_measure": {"kind": "o", "grades": [1, 2, 3]},
    "o_measure@2(beta=2)": {"kind": "o", "k": 2, "grades": [1, 2, 3], "beta": 2.0},
    "p_measure": {"kind": "p", "grades": [1, 2, 3]},
    "p_measure@4(gains=1:4:9)": {"kind": "p", "k": 4, "grades": [1, 4, 9]},
    "p_plus": {"kind": "p_plus", "grades": [1, 2, 3]},
    "p_plus@5(beta=0.5)": {"kind": "p_plus", "k": 5, "grades": [1, 2, 3], "beta": 0.5},
    "err_ntcir": {"kind": "err", "grades": [1, 2, 3]},
    "err_ntcir@3(gains=1:4:9)": {"kind": "err", "k": 3, "grades": [1, 4, 9]},
    "nerr_ntcir": {"kind": "nerr", "grades": [1, 2, 3]},
    "nerr_ntcir@5(gains=1:4:9)": {"kind": "nerr", "k": 5, "grades": [1, 4, 9]},
    "nerr_ntcir@2(gains=1:1:2)": {"kind": "nerr", "k": 2, "grades": [1, 1, 2]},
    "ndcg_orig@10": {"kind": "ndcg", "k": 10, "grades": [1, 2, 3]},
    "ndcg_orig@5(b=3,gains=1:4:9)": {"kind": "ndcg", "k": 5, "grades": [1, 4, 9], "b": 3.0},
    "ndcg_orig(b=10)": {"kind": "ndcg", "grades": [1, 2, 3], "b": 10.0},
    "msndcg@10": {"kind": "ms", "k": 10, "grades": [1, 2, 3]},
    "msndcg(gains=1:4:9)": {"kind": "ms", "grades": [1, 4, 9]},
}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_live_against_pyntcireval(seed: int) -> None:
    pyn = pytest.importorskip("pyNTCIREVAL.metrics", reason="pyNTCIREVAL is not installed")
    log = _generated_log(seed)
    lists = _lists(log)
    out = rke.evaluate(log, list(LIVE), per_query=True)
    assert out.height == len(lists)
    checked = 0
    for row in out.iter_rows(named=True):
        labelled, xrelnum = lists[row["query"]]
        for name, spec in LIVE.items():
            if sum(xrelnum[1:]) == 0:  # pyNTCIREVAL refuses a topic with no relevant row
                assert row[name] == 0.0, (name, row["query"])
                continue
            expected = _reference(pyn, spec, labelled, xrelnum)
            assert row[name] == pytest.approx(expected, abs=1e-9, rel=0), (name, row["query"])
            checked += 1
    assert checked > 600


def test_published_fixture_live() -> None:
    """pyNTCIREVAL itself on the published sample, to 1e-12."""
    pyn = pytest.importorskip("pyNTCIREVAL.metrics", reason="pyNTCIREVAL is not installed")
    labelled, xrelnum = _lists(_sample_log())["q"]
    out = rke.evaluate(_sample_log(), list(LIVE)).row(0, named=True)
    for name, spec in LIVE.items():
        assert out[name] == pytest.approx(_reference(pyn, spec, labelled, xrelnum), abs=1e-12)


# ---- inputs, paths and options ----------------------------------------------------------------

NAMES = [name for name in LIVE if "stops" not in name]


def test_lazy_and_by_system() -> None:
    one, two = _generated_log(3, 8), _generated_log(4, 8)
    eager = rke.evaluate(one, NAMES, per_query=True)
    lazy = rke.evaluate(one.lazy(), NAMES, per_query=True).collect()
    assert eager.sort("query").equals(lazy.sort("query"))
    both = pl.concat([one.with_columns(system=pl.lit("a")), two.with_columns(system=pl.lit("b"))])
    split = rke.evaluate(both, NAMES, by="system")
    for system, alone in (("a", one), ("b", two)):
        row = split.filter(pl.col("system") == system).drop("system").row(0, named=True)
        assert row == pytest.approx(rke.evaluate(alone, NAMES).row(0, named=True), abs=1e-12)


def test_label_above_the_last_level_is_refused() -> None:
    log = pl.DataFrame({"query": "q", "item": ["a", "b"], "score": [2.0, 1.0], "relevance": [4, 1]})
    with pytest.raises(ColumnValueError, match=r"label 4 has no gain.*gains=1:2:3:4"):
        rke.evaluate(log, ["q_measure"])
    assert rke.evaluate(log, ["q_measure(gains=1:2:3:4)"]).item() == pytest.approx(1.0)


@pytest.mark.parametrize("label", [65, 10**8, 2**62])
def test_a_huge_label_is_refused_with_a_short_message(label: int) -> None:
    """The refusal's gains= example once had one entry per level up to the label: label 1e8
    took 45 s and gigabytes before the ColumnValueError. gains= holds at most 64 levels, so
    past that the message says so instead of giving an example."""
    log = pl.DataFrame(
        {"query": "q", "item": ["a", "b", "c"], "score": [3.0, 2.0, 1.0],
         "relevance": [0, label, 1]}
    )  # fmt: skip
    for name in ["q_measure", "msndcg@3", "nerr_ntcir@3", "p_measure", "o_measure", "p_plus"]:
        with pytest.raises(
            ColumnValueError, match=rf"{name}: relevance label {label} has no gain"
        ) as caught:
            rke.evaluate(log, [name])
        message = str(caught.value)
        assert len(message) < 300, (name, len(message))
        assert "at most 64 levels" in message


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("q_measure(gains=3:2:1)", "must not decrease"),
        ("q_measure(gains=1:x)", "one number per level"),
        ("q_measure(gains=-1:2)", ">= 0"),
        ("ncu(stop=ranked)", "did you mean 'rank'"),
        ("ncu(gamma=1.5)", r"gamma= must be a finite number in \[0, 1\]"),
        ("ncu(stops=1:2)", "one value per level"),
        ("p_plus(beta=-1)", "beta= must be"),
        ("ndcg_orig(b=1)", "b= must be a finite number > 1"),
        ("msndcg(b=3)", "has no option b"),
    ],
)
def test_bad_options(spec: str, match: str) -> None:
    with pytest.raises(InvalidOptionError, match=match):
        parse_metric(spec)


def test_expected_ties_refused() -> None:
    with pytest.raises(InvalidOptionError, match="no closed form"):
        rke.evaluate(_sample_log(), ["q_measure"], ties="expected")


def _unbounded(name: str) -> bool:
    return name.startswith(("p_measure", "p_plus")) or (
        name.startswith("ncu") and "stop=" not in name
    )


def test_unbounded_measures_refuse_tie_bounds() -> None:
    """Brute force found tie orders that beat the label order for these: they refuse it."""
    for name in ("p_measure", "p_plus@3", "ncu", "ncu(stop=graded,beta=0)"):
        with pytest.raises(InvalidOptionError, match="not its best case"):
            rke.evaluate(_sample_log(), [name], ties="optimistic")


@pytest.mark.parametrize("seed", [0, 1])
def test_tie_bounds_equal_brute_force(seed: int) -> None:
    """ties="optimistic"/"pessimistic" are the best and worst value over every tie order."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(8):
        n = int(rng.integers(3, 8))
        for i in range(n):
            label = None if rng.random() < 0.2 else int(rng.choice([0, 0, 1, 2, 3]))
            rows.append((f"q{q}", f"d{i}", float(rng.integers(0, 3)), label))
        rows.append((f"q{q}", "unret", None, 2))
    log = pl.DataFrame(rows, schema=["query", "item", "score", "relevance"], orient="row")
    names = [name for name in NAMES if not _unbounded(name)]
    every = rke.evaluate(all_orders(log), names, per_query=True).with_columns(
        pl.col("query").str.split("|").list.first()
    )
    bounds = every.group_by("query").agg(
        *(pl.col(n).max().alias(f"{n}:max") for n in names),
        *(pl.col(n).min().alias(f"{n}:min") for n in names),
    )
    best = rke.evaluate(log, names, per_query=True, ties="optimistic").join(bounds, on="query")
    worst = rke.evaluate(log, names, per_query=True, ties="pessimistic").join(bounds, on="query")
    for name in names:
        assert best[name].to_list() == pytest.approx(best[f"{name}:max"].to_list(), abs=1e-12), name
        assert worst[name].to_list() == pytest.approx(worst[f"{name}:min"].to_list(), abs=1e-12), (
            name
        )


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
    "q_measure",
    "q_measure@5",
    "ncu",
    "ncu@5(stop=rank)",
    "o_measure",
    "p_measure@5",
    "p_plus",
    "err_ntcir@5",
    "nerr_ntcir",
    "nerr_ntcir@5",
    "ndcg_orig@5",
    "msndcg@5",
]
STREAM_LOG = _generated_log(9, 12).with_columns(
    system=pl.when(pl.col("query").str.ends_with("1")).then(pl.lit("a")).otherwise(pl.lit("b"))
)
