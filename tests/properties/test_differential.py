"""Differential tests: polars_rankeval against pytrec_eval and a brute-force reference.

Hypothesis generates small long-format logs (ties, unjudged rows, judged-but-unretrieved rows,
negative labels, empty queries, string and integer ids) and checks that

* every per-query value equals pytrec_eval (trec_eval's own C code) for the measures it has;
* every per-query value, and the means, equal ``tests/support/reference.py`` (plain loops);
* DataFrame input, LazyFrame collected in memory or streaming, shuffled rows, a run/qrels
  join and ``by=`` over a concatenation of systems all give the same result.

Scores are multiples of 0.25, exactly representable as 32-bit floats, so ties are the same
ties for pytrec_eval (which reads scores as float32) and for the package (float64).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import polars as pl
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from polars_rankeval.errors import QueryCoverageWarning
from tests.support import reference as ref

CUTOFFS = (1, 3, 5, 10)
ALL_METRICS = ref.all_metrics(CUTOFFS)
TOL = 1e-9

# ---------------------------------------------------------------------------------------------
# Strategy
# ---------------------------------------------------------------------------------------------

LABELS = (-1, 0, 1, 2, 3)
# A few frequent values (many ties) and a wider range; all multiples of 0.25, exact in float32.
SCORES = st.one_of(
    st.sampled_from([0.0, 0.5, 1.0]),
    st.integers(-40, 40).map(lambda i: i / 4),
)
STRING_ITEMS = st.text(alphabet="abzAZ09_é", min_size=1, max_size=3)
# 0..25 mixes one- and two-digit ids, so string order ("9" > "10") differs from numeric order.
INT_ITEMS = st.integers(0, 25)


@dataclass(frozen=True)
class Variant:
    """Column types of one generated log."""

    int_items: bool
    int_queries: bool
    score_dtype: type[pl.DataType]
    relevance_dtype: type[pl.DataType]

    @property
    def schema(self) -> dict[str, Any]:
        return {
            "query": pl.Int64 if self.int_queries else pl.String,
            "item": pl.Int64 if self.int_items else pl.String,
            "score": self.score_dtype,
            "relevance": self.relevance_dtype,
        }


@dataclass(frozen=True)
class Log:
    """Rows ``(query, item, score, relevance)`` plus their column types."""

    rows: list[ref.Row]
    variant: Variant

    def frame(self) -> pl.DataFrame:
        return pl.DataFrame(self.rows, schema=self.variant.schema, orient="row")


variants = st.builds(
    Variant,
    int_items=st.booleans(),
    int_queries=st.booleans(),
    score_dtype=st.sampled_from([pl.Float64, pl.Float32]),
    relevance_dtype=st.sampled_from([pl.Int64, pl.Int32, pl.Int8]),
)


@st.composite
def log_rows(draw: st.DrawFn, variant: Variant, max_queries: int = 6) -> list[ref.Row]:
    items = INT_ITEMS if variant.int_items else STRING_ITEMS
    n_queries = draw(st.integers(1, max_queries))
    rows: list[ref.Row] = []
    for qi in range(n_queries):
        # ids not in creation order, so the package's sort by query is exercised
        query: Any = (7 * qi) % 10 if variant.int_queries else f"q{(7 * qi) % 10}"
        query_items = draw(st.lists(items, max_size=12, unique=True))
        # empty queries: every row unjudged, or every row judged but not retrieved
        mode = draw(st.sampled_from(["mixed", "mixed", "mixed", "unjudged", "unretrieved"]))
        for item in query_items:
            retrieved = mode != "unretrieved" and draw(st.integers(0, 4)) > 0
            score = draw(SCORES) if retrieved else None
            label = None if mode == "unjudged" else draw(st.sampled_from((None, *LABELS)))
            rows.append((query, item, score, label))
    return rows


@st.composite
def logs(draw: st.DrawFn) -> Log:
    variant = draw(variants)
    return Log(draw(log_rows(variant)), variant)


@st.composite
def system_pairs(draw: st.DrawFn) -> tuple[Log, Log]:
    variant = draw(variants)
    return Log(draw(log_rows(variant)), variant), Log(draw(log_rows(variant)), variant)


FAST = settings(
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


def package_per_query(frame: pl.DataFrame, metrics: list[str], **options: Any) -> dict[str, dict]:
    out = rke.evaluate(frame, metrics, per_query=True, **options)
    assert out.columns == ["query", *metrics]
    return {str(row.pop("query")): row for row in out.iter_rows(named=True)}


def assert_values_close(
    got: dict[str, dict], want: dict[str, dict], metrics: list[str], context: str
) -> None:
    assert sorted(got) == sorted(want), f"{context}: evaluated query sets differ"
    bad = []
    for query, want_row in want.items():
        for metric in metrics:
            g, w = got[query][metric], want_row[metric]
            if g is None or not math.isclose(g, w, rel_tol=0.0, abs_tol=TOL):
                bad.append(f"{query} {metric}: got {g!r}, expected {w!r}")
    assert not bad, f"{context}:\n" + "\n".join(bad)


def trec_dicts(log: Log) -> tuple[dict, dict]:
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for query, item, score, label in log.rows:
        if label is not None:
            qrels.setdefault(str(query), {})[str(item)] = int(label)
        if score is not None:
            run.setdefault(str(query), {})[str(item)] = float(score)
    return qrels, run


def _cut(measure: str) -> str:
    return measure + "." + ",".join(str(k) for k in CUTOFFS)


PYTREC_MEASURES = {
    *(_cut(m) for m in ("P", "recall", "success", "map_cut", "ndcg_cut")),
    *("map", "ndcg", "recip_rank", "Rprec", "bpref", "num_ret", "num_rel", "num_rel_ret", "num_q"),
}
PYTREC_FIXED = {
    "map": "map",
    "ndcg": "ndcg",
    "recip_rank": "mrr",
    "Rprec": "r_precision",
    "bpref": "bpref",
    "num_ret": "num_ret",
    "num_rel": "num_rel",
    "num_rel_ret": "num_rel_ret",
    "num_q": "num_q",
}
PYTREC_CUT = {
    "P": "p",
    "recall": "recall",
    "success": "success",
    "map_cut": "map",
    "ndcg_cut": "ndcg",
}


def ours(pytrec_name: str) -> str:
    if pytrec_name in PYTREC_FIXED:
        return PYTREC_FIXED[pytrec_name]
    family, _, k = pytrec_name.rpartition("_")
    return f"{PYTREC_CUT[family]}@{k}"


def pytrec_per_query(log: Log, relevance_level: int) -> dict[str, dict]:
    qrels, run = trec_dicts(log)
    # pytrec_eval crashes (segfault) on a query whose labels are all negative; such queries
    # are compared with the reference only.
    qrels = {q: labels for q, labels in qrels.items() if max(labels.values()) >= 0}
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, PYTREC_MEASURES, relevance_level=relevance_level
    )
    result = evaluator.evaluate(run)
    return {q: {ours(name): value for name, value in row.items()} for q, row in result.items()}


def reference_per_query(log: Log, metrics: list[str], **options: Any) -> dict[str, dict]:
    values = ref.per_query(log.rows, metrics, **options)
    return {str(q): row for q, row in values.items()}


def evaluate_all(frame: pl.DataFrame | pl.LazyFrame, **options: Any) -> Any:
    return rke.evaluate(frame, ALL_METRICS, **options)


def assert_same(left: pl.DataFrame, right: pl.DataFrame) -> None:
    assert_frame_equal(left, right, rel_tol=1e-12, abs_tol=1e-15)


# ---------------------------------------------------------------------------------------------
# Oracles
# ---------------------------------------------------------------------------------------------


def test_pytrec_eval_has_the_measures() -> None:
    for family in ("P", "recall", "success", "map_cut", "ndcg_cut", *PYTREC_FIXED):
        assert family in pytrec_eval.supported_measures


@settings(FAST, max_examples=150)
@given(log=logs(), relevance_level=st.sampled_from([1, 2]))
def test_matches_pytrec_eval(log: Log, relevance_level: int) -> None:
    want = pytrec_per_query(log, relevance_level)
    metrics = sorted({m for row in want.values() for m in row})
    got = package_per_query(log.frame(), ALL_METRICS, relevance_level=relevance_level)
    # pytrec_eval evaluates the queries present in both the qrels and the run: the default
    # query set (missing_queries="skip"), less the all-negative queries it cannot take
    qrels, run = trec_dicts(log)
    all_negative = {q for q, labels in qrels.items() if max(labels.values()) < 0 and q in run}
    assert set(got) == set(want) | all_negative
    got = {q: row for q, row in got.items() if q not in all_negative}
    assert_values_close(got, want, metrics, f"pytrec_eval, level {relevance_level}")


@settings(FAST, max_examples=150)
@given(
    log=logs(),
    relevance_level=st.sampled_from([1, 2, 3]),
    missing_queries=st.sampled_from(["skip", "zero"]),
)
def test_matches_reference(log: Log, relevance_level: int, missing_queries: str) -> None:
    options = {"relevance_level": relevance_level, "missing_queries": missing_queries}
    want = reference_per_query(log, ALL_METRICS, **options)
    got = package_per_query(log.frame(), ALL_METRICS, **options)
    assert_values_close(got, want, ALL_METRICS, f"reference, {options}")

    # the means (sums for num_*), one row even when no query is evaluated
    summary = rke.evaluate(log.frame(), ALL_METRICS, **options)
    assert summary.height == 1
    got_summary = summary.row(0, named=True)
    want_summary = ref.summary(ref.per_query(log.rows, ALL_METRICS, **options), ALL_METRICS)
    for metric in ALL_METRICS:
        g, w = got_summary[metric], want_summary[metric]
        if w is None:
            assert g is None, metric
        else:
            assert g is not None, metric
            assert math.isclose(g, w, rel_tol=0.0, abs_tol=TOL), (metric, g, w)


# ---------------------------------------------------------------------------------------------
# Equivalent inputs give equal results
# ---------------------------------------------------------------------------------------------


@settings(FAST, max_examples=60)
@given(log=logs(), per_query=st.booleans(), data=st.data())
def test_engines_and_row_order_agree(log: Log, per_query: bool, data: st.DataObject) -> None:
    frame = log.frame()
    options = {"per_query": per_query, "relevance_level": data.draw(st.sampled_from([1, 2]))}
    eager = evaluate_all(frame, **options)

    lazy = evaluate_all(frame.lazy(), **options)
    assert isinstance(lazy, pl.LazyFrame)
    assert_same(lazy.collect(engine="in-memory"), eager)
    assert_same(lazy.collect(engine="streaming"), eager)
    assert_same(evaluate_all(frame, engine="streaming", **options), eager)
    assert_same(evaluate_all(frame, engine="in-memory", **options), eager)

    order = data.draw(st.permutations(range(frame.height)))
    shuffled = frame[list(order)] if frame.height else frame
    assert_same(evaluate_all(shuffled, **options), eager)
    assert_same(evaluate_all(shuffled.lazy(), **options).collect(engine="streaming"), eager)


@settings(FAST, max_examples=40)
@given(pair=system_pairs(), missing_queries=st.sampled_from(["skip", "zero"]))
def test_by_system_equals_each_system_alone(pair: tuple[Log, Log], missing_queries: str) -> None:
    systems = {"A": pair[0].frame(), "B": pair[1].frame()}
    both = pl.concat(
        [frame.with_columns(system=pl.lit(name)) for name, frame in systems.items()]
    ).select("system", "query", "item", "score", "relevance")
    options = {"missing_queries": missing_queries}

    per_query = evaluate_all(both, by=["system"], per_query=True, **options)
    assert per_query.columns == ["system", "query", *ALL_METRICS]
    summary = evaluate_all(both.lazy(), by="system", **options).collect(engine="streaming")
    for name, frame in systems.items():
        alone = evaluate_all(frame, per_query=True, **options)
        assert_same(per_query.filter(pl.col("system") == name).drop("system"), alone)
        if alone.height:
            alone_summary = evaluate_all(frame, **options)
            assert_same(summary.filter(pl.col("system") == name).drop("system"), alone_summary)
        else:
            # a system without any evaluated query has no row in the by= summary
            assert summary.filter(pl.col("system") == name).height == 0


@settings(FAST, max_examples=40)
@given(log=logs())
def test_join_run_qrels_equals_long_table(log: Log) -> None:
    frame = log.frame()
    run = frame.filter(pl.col("score").is_not_null()).select("query", "item", "score")
    qrels = frame.filter(pl.col("relevance").is_not_null()).select("query", "item", "relevance")
    # join_run_qrels warns when the query sets differ in part (not when they share none).
    run_q, judged_q = set(run["query"].to_list()), set(qrels["query"].to_list())
    partial = run_q != judged_q and bool(run_q & judged_q)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        joined = rke.join_run_qrels(run.lazy(), qrels)
    coverage = [w for w in caught if issubclass(w.category, QueryCoverageWarning)]
    assert len(coverage) == (1 if partial else 0)
    assert len(caught) == len(coverage)
    for missing_queries in ("skip", "zero"):
        options = {"per_query": True, "missing_queries": missing_queries}
        assert_same(
            evaluate_all(joined, **options).collect(),
            evaluate_all(frame, **options),
        )


# ---------------------------------------------------------------------------------------------
# Hand-worked examples
# ---------------------------------------------------------------------------------------------


def _log(rows: list[tuple[Any, Any, float | None, int | None]]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema={"query": pl.String, "item": pl.String, "score": pl.Float64, "relevance": pl.Int64},
        orient="row",
    )


# Ties. qrels q1: a=1 b=0 c=0 z=1 (z never retrieved); run a, b, c all score 1.0.
# trec_eval breaks the tie by docno descending: c (0), b (0), a (1).  R = 2 (a, z).
#   mrr   = 1/3                      p@1 = 0, p@3 = 1/3, recall@3 = 1/2, hits@3 = 1
#   map   = (1/3) / 2 = 1/6          map@1 = 0
#   dcg   = 1/log2(4) = 0.5          idcg = 1 + 1/log2(3) = 1.6309298
#   ndcg  = 0.5 / 1.6309298 = 0.3065736 (ndcg@3 the same: both ideal items fit in 3)
#   bpref: a has 2 judged non-relevant above, N = 2, R = 2: 1 - 2/2 = 0
#   r_precision: top 2 = c, b: 0     f1@3 = 2*1/(3+2) = 0.4     judged@3 = 3/3
TIES = _log(
    [
        ("q1", "a", 1.0, 1),
        ("q1", "b", 1.0, 0),
        ("q1", "c", 1.0, 0),
        ("q1", "z", None, 1),
    ]
)
TIES_EXPECTED = {
    "mrr": 1 / 3,
    "mrr@1": 0.0,
    "p@1": 0.0,
    "p@3": 1 / 3,
    "recall@3": 0.5,
    "hits@3": 1,
    "map": 1 / 6,
    "map@1": 0.0,
    "dcg": 0.5,
    "ndcg": 0.5 / (1 + 1 / math.log2(3)),
    "ndcg@3": 0.5 / (1 + 1 / math.log2(3)),
    "bpref": 0.0,
    "r_precision": 0.0,
    "f1@3": 0.4,
    "judged@3": 1.0,
    "num_ret": 3,
    "num_rel": 2,
    "num_rel_ret": 1,
}

# E5. qrels q: a=2 b=1 c=-1 d=0; run scores c > b > a > d, so the ranking is c b a d.
# Level 1: relevant b, a (R = 2); c (-1) is pooled-but-unjudged: not relevant, skipped by bpref.
#   map = (1/2 + 2/3) / 2 = 0.5833333    p@2 = 1/2    mrr = 1/2
#   dcg = 1/log2(3) + 2/log2(4) = 1.6309298;  idcg = 2 + 1/log2(3) = 2.6309298
#   ndcg = 0.6199081 (labels, not the level, give the gain)
#   bpref: b and a each have 0 judged non-relevant above: (1 + 1)/2 = 1.0
#   r_precision: top 2 = c, b: 1/2     judged@2 = 1/2 (c is unjudged)   judged@4 = 3/4
# Level 2: relevant a only (R = 1), at rank 3.
#   map = 1/3    p@2 = 0    mrr = 1/3    ndcg = 0.6199081 (unchanged)
#   bpref: N = 2 (b, d); b is judged non-relevant above a: 1 - min(1,1)/min(2,1) = 0
#   r_precision: top 1 = c: 0
E5 = _log(
    [
        ("q", "a", 2.0, 2),
        ("q", "b", 3.0, 1),
        ("q", "c", 4.0, -1),
        ("q", "d", 1.0, 0),
    ]
)
E5_NDCG = (1 / math.log2(3) + 1.0) / (2.0 + 1 / math.log2(3))
E5_EXPECTED = {
    1: {
        "map": 7 / 12,
        "p@2": 0.5,
        "mrr": 0.5,
        "ndcg": E5_NDCG,
        "bpref": 1.0,
        "r_precision": 0.5,
        "judged@2": 0.5,
        "judged@4": 0.75,
        "num_rel": 2,
    },
    2: {
        "map": 1 / 3,
        "p@2": 0.0,
        "mrr": 1 / 3,
        "ndcg": E5_NDCG,
        "bpref": 0.0,
        "r_precision": 0.0,
        "judged@2": 0.5,
        "num_rel": 1,
    },
}


def _check_hand(frame: pl.DataFrame, expected: dict[str, float], **options: Any) -> None:
    metrics = list(expected)
    got = rke.evaluate(frame, metrics, per_query=True, **options)
    assert got.height == 1
    row = got.row(0, named=True)
    for metric, want in expected.items():
        assert math.isclose(row[metric], want, rel_tol=0.0, abs_tol=1e-12), (metric, row[metric])
    # the oracles agree with the hand computation too
    rows = list(frame.iter_rows())
    ref_row = next(iter(ref.per_query(rows, metrics, **options).values()))
    for metric, want in expected.items():
        assert math.isclose(ref_row[metric], want, rel_tol=0.0, abs_tol=1e-12), metric


def test_hand_ties() -> None:
    _check_hand(TIES, TIES_EXPECTED)
    assert round(TIES_EXPECTED["ndcg"], 4) == 0.3066
    trec = pytrec_per_query(Log(list(TIES.iter_rows()), _STR_VARIANT), 1)["q1"]
    assert trec["mrr"] == pytest.approx(1 / 3, abs=1e-12)
    assert trec["map"] == pytest.approx(1 / 6, abs=1e-12)
    assert trec["ndcg"] == pytest.approx(TIES_EXPECTED["ndcg"], abs=1e-12)


@pytest.mark.parametrize("level", [1, 2])
def test_hand_e5(level: int) -> None:
    _check_hand(E5, E5_EXPECTED[level], relevance_level=level)
    assert round(E5_NDCG, 4) == 0.6199
    trec = pytrec_per_query(Log(list(E5.iter_rows()), _STR_VARIANT), level)["q"]
    for metric in ("map", "mrr", "ndcg", "bpref", "r_precision", "num_rel"):
        assert trec[metric] == pytest.approx(E5_EXPECTED[level][metric], abs=1e-12), metric


_STR_VARIANT = Variant(False, False, pl.Float64, pl.Int64)


def test_hand_integer_items_tie_by_string_form() -> None:
    # items 9 and 10 tie; as strings "9" > "10", so 9 ranks first: p@1 = label of 9
    frame = pl.DataFrame(
        {"query": ["q", "q"], "item": [10, 9], "score": [1.0, 1.0], "relevance": [1, 0]}
    )
    got = rke.evaluate(frame, ["p@1", "mrr", "map"], per_query=True)
    # ranking 9 (0), 10 (1): p@1 = 0, mrr = 1/2, map = (1/2)/1
    assert got.select("p@1", "mrr", "map").row(0) == (0.0, 0.5, 0.5)


def test_hand_missing_queries_zero() -> None:
    # q1: a relevant, retrieved first.  q2: judged (b=1, c=0) but nothing retrieved.
    # q3: retrieved but never judged: not evaluated under either option.
    frame = _log(
        [
            ("q1", "a", 1.0, 1),
            ("q2", "b", None, 1),
            ("q2", "c", None, 0),
            ("q3", "d", 1.0, None),
        ]
    )
    metrics = ["p@1", "map", "ndcg", "num_q", "num_rel", "num_ret"]
    skip = rke.evaluate(frame, metrics)
    # skip: only q1 -> p@1 = map = ndcg = 1; num_rel = 1
    assert skip.row(0) == (1.0, 1.0, 1.0, 1, 1, 1)
    zero = rke.evaluate(frame, metrics, missing_queries="zero")
    # zero: q1 and q2 (all zero, R = 1) -> means 0.5, num_q 2, num_rel 2, num_ret 1
    assert zero.row(0) == (0.5, 0.5, 0.5, 2, 2, 1)


# trec_eval rejects a run that lists an item twice for one query; so must the package, also
# when the metrics do not read the columns the check uses (projection pushdown must keep it).
def test_duplicate_items_rejected() -> None:
    frame = _log([("q", "a", 1.0, 1), ("q", "a", 2.0, 0)])
    with pytest.raises(rke.DuplicateItemError):
        rke.evaluate(frame, ["map"])
    with pytest.raises(rke.DuplicateItemError):
        rke.evaluate(frame.lazy(), ["num_q"], per_query=True).collect(engine="streaming")
