"""``ties="expected"`` (McSherry & Najork 2008) against brute force over all tie orderings.

For each generated query, ``reference.tie_orderings`` lists every ranking consistent with the
scores (tied rows permuted in every way); each ranking is scored by ``tests/support/reference.py``
in trec mode (distinct scores), and the mean over the rankings is the expected value the package
must give in closed form. scikit-learn's tie-averaged ``ndcg_score`` / ``dcg_score`` are a
second, independent check. Expected values are never computed with the package.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from tests.properties.test_differential import FAST
from tests.support import reference as ref

TOL = 1e-12
CUTOFFS = (1, 2, 3, 5, 10)

RefFn = Callable[[ref.Query], "float | int | None"]


def _metrics() -> dict[str, RefFn]:
    """Metric string -> reference function of one (tie-free) ``ref.Query``."""
    table: dict[str, RefFn] = {
        "r_precision": lambda q: q.r_precision(),
        "map": lambda q: q.average_precision(None),
        "mrr": lambda q: q.reciprocal_rank(None),
        "mar": lambda q: ref.mean_average_recall(q, None),
        "dcg": lambda q: q.dcg(None),
        "ndcg": lambda q: q.ndcg(None),
        "ndcg(gain=exp)": lambda q: ref.ndcg_variant(q, None, gain="exp"),
        "ndcg(ideal=retrieved)": lambda q: ref.ndcg_variant(q, None, ideal="retrieved"),
        "dcg(discount=jarvelin,log_base=10)": lambda q: ref.dcg_variant(
            q, None, discount="jarvelin", log_base=10
        ),
        "ndcg@3(gain={0:0.5,1:1,2:3,3:7})": lambda q: ref.ndcg_variant(
            q, 3, gain={0: 0.5, 1: 1.0, 2: 3.0, 3: 7.0}
        ),
        "rbp": ref.rbp,
        "rbp(p=0.5,gain=binary)": lambda q: ref.rbp(q, p=0.5, gain="binary"),
        "rbp(gain=raw)": lambda q: ref.rbp(q, gain="raw"),
        "frp": lambda q: ref.first_relevant_position(q, None),
        "mean_rank": lambda q: ref.mean_rank(q, None),
        "num_ret": lambda q: len(q.ranking),
        "num_rel": lambda q: q.num_rel,
        "num_rel_ret": lambda q: q.hits(None),
        "num_q": lambda q: 1,
    }
    for k in CUTOFFS:
        table |= {
            f"p@{k}": lambda q, k=k: q.precision(k),
            f"recall@{k}": lambda q, k=k: q.recall(k),
            f"success@{k}": lambda q, k=k: q.success(k),
            f"hit_rate@{k}": lambda q, k=k: q.success(k),
            f"hits@{k}": lambda q, k=k: q.hits(k),
            f"f1@{k}": lambda q, k=k: q.f1(k),
            f"judged@{k}": lambda q, k=k: q.judged(k),
            f"map@{k}": lambda q, k=k: q.average_precision(k),
            f"mrr@{k}": lambda q, k=k: q.reciprocal_rank(k),
            f"mar@{k}": lambda q, k=k: ref.mean_average_recall(q, k),
            f"dcg@{k}": lambda q, k=k: q.dcg(k),
            f"ndcg@{k}": lambda q, k=k: q.ndcg(k),
            f"dcg@{k}(gain=exp)": lambda q, k=k: ref.dcg_variant(q, k, gain="exp"),
            f"ndcg@{k}(gain=exp)": lambda q, k=k: ref.ndcg_variant(q, k, gain="exp"),
            f"frp@{k}": lambda q, k=k: ref.first_relevant_position(q, k),
            f"mean_rank@{k}": lambda q, k=k: ref.mean_rank(q, k),
        }
    return table


METRICS = _metrics()
NAMES = list(METRICS)
NO_CLOSED_FORM = ["bpref", "infap", "err", "err@5", "err@3(transform=sigmoid)"]

# ---------------------------------------------------------------------------------------------
# Strategy: small lists, scores from {1, 2, 3} so that ties are frequent
# ---------------------------------------------------------------------------------------------

LABELS = (None, -1, 0, 1, 2, 3)


@dataclass(frozen=True)
class TieLog:
    rows: list[ref.Row]
    int_items: bool

    def frame(self) -> pl.DataFrame:
        schema = {
            "query": pl.String,
            "item": pl.Int64 if self.int_items else pl.String,
            "score": pl.Float64,
            "relevance": pl.Int64,
        }
        return pl.DataFrame(self.rows, schema=schema, orient="row")


@st.composite
def tie_logs(draw: st.DrawFn, max_retrieved: int = 7) -> TieLog:
    int_items = draw(st.booleans())
    items = st.integers(0, 30) if int_items else st.text(alphabet="abz09", min_size=1, max_size=2)
    rows: list[ref.Row] = []
    for qi in range(draw(st.integers(1, 3))):
        query = f"q{qi}"
        retrieved = draw(st.lists(items, min_size=1, max_size=max_retrieved, unique=True))
        for item in retrieved:
            score = float(draw(st.sampled_from([1, 2, 3])))
            rows.append((query, item, score, draw(st.sampled_from(LABELS))))
        # judged rows the system did not retrieve
        n_unretrieved = draw(st.integers(0, 2))
        extra = draw(st.lists(items, min_size=n_unretrieved, max_size=n_unretrieved, unique=True))
        rows.extend(
            (query, item, None, draw(st.sampled_from((-1, 0, 1, 2, 3))))
            for item in extra
            if item not in retrieved
        )
    return TieLog(rows, int_items)


# ---------------------------------------------------------------------------------------------
# Brute force: the mean over all orderings of the tied rows
# ---------------------------------------------------------------------------------------------


def expected_over_orderings(
    rows: list[ref.Row], metrics: dict[str, RefFn], relevance_level: int
) -> dict[str, dict[str, float | None]]:
    """``{query: {metric: mean over every tie ordering}}`` for the evaluated queries."""
    result: dict[str, dict[str, float | None]] = {}
    for query in ref.queries(rows, relevance_level=relevance_level):
        query_rows = [(item, score, label) for q, item, score, label in rows if q == query]
        orderings = ref.tie_orderings(query_rows)
        sums: dict[str, float] = dict.fromkeys(metrics, 0.0)
        undefined: set[str] = set()
        for ordering in orderings:
            q = ref.Query(ordering, relevance_level)
            for name, fn in metrics.items():
                value = fn(q)
                if value is None:
                    undefined.add(name)
                else:
                    sums[name] += value
        row: dict[str, float | None] = {}
        for name in metrics:
            # a metric undefined for one ordering (R = 0) is undefined for all of them
            row[name] = None if name in undefined else sums[name] / len(orderings)
        result[str(query)] = row
    return result


def package_values(frame: pl.DataFrame, metrics: list[str], **options: Any) -> dict[str, dict]:
    out = rke.evaluate(frame, metrics, per_query=True, **options)
    assert out.columns == ["query", *metrics]
    return {str(row.pop("query")): row for row in out.iter_rows(named=True)}


def assert_match(got: dict[str, dict], want: dict[str, dict], metrics: list[str]) -> None:
    assert sorted(got) == sorted(want), "evaluated query sets differ"
    bad = []
    for query, row in want.items():
        for metric in metrics:
            g, w = got[query][metric], row[metric]
            ok = g is None if w is None else g is not None and math.isclose(g, w, abs_tol=TOL)
            if not ok:
                bad.append(f"{query} {metric}: got {g!r}, expected {w!r}")
    assert not bad, "\n".join(bad)


# ---------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------


def test_tie_orderings_enumerates_every_distinct_ranking() -> None:
    # a, b tie on 2.0 (labels 1, 0); c, d, e tie on 1.0 with labels 0, 0, 1: 2 * 3 rankings
    rows = [("a", 2.0, 1), ("b", 2.0, 0), ("c", 1.0, 0), ("d", 1.0, 0), ("e", 1.0, 1)]
    orderings = ref.tie_orderings([*rows, ("z", None, 1)])
    assert len(orderings) == 6
    for ordering in orderings:
        assert ordering[-1] == ("z", None, 1)
        scores = [score for _, score, _ in ordering[:-1]]
        assert scores == [5.0, 4.0, 3.0, 2.0, 1.0]
        assert {item for item, _, _ in ordering[:2]} == {"a", "b"}
    label_sequences = {tuple(label for _, _, label in o[:-1]) for o in orderings}
    assert len(label_sequences) == 6


def test_hand_worked_expected_ties() -> None:
    # a, b, c tie; one of them (a) is relevant; z relevant, not retrieved: R = 2.
    # The relevant row sits at rank 1, 2 or 3 with probability 1/3 each.
    #   p@1 = 1/3, mrr = (1 + 1/2 + 1/3) / 3 = 11/18, map = mrr / 2 = 11/36
    #   dcg = (1 + 1/log2(3) + 1/2) / 3; frp = (1 + 2 + 3) / 3 = 2 = (t + 1)/(r + 1)
    #   mean_rank = (2 + (n + 1 = 4)) / 2 = 3
    frame = pl.DataFrame(
        {
            "query": ["q"] * 4,
            "item": ["a", "b", "c", "z"],
            "score": [1.0, 1.0, 1.0, None],
            "relevance": [1, 0, 0, 1],
        }
    )
    metrics = ["p@1", "mrr", "map", "dcg", "frp", "mean_rank", "success@2"]
    row = rke.evaluate(frame, metrics, per_query=True, ties="expected").row(0, named=True)
    assert row["p@1"] == pytest.approx(1 / 3, abs=TOL)
    assert row["mrr"] == pytest.approx(11 / 18, abs=TOL)
    assert row["map"] == pytest.approx(11 / 36, abs=TOL)
    assert row["dcg"] == pytest.approx((1 + 1 / math.log2(3) + 0.5) / 3, abs=TOL)
    assert row["frp"] == pytest.approx(2.0, abs=TOL)
    assert row["mean_rank"] == pytest.approx(3.0, abs=TOL)
    assert row["success@2"] == pytest.approx(2 / 3, abs=TOL)


@settings(FAST, max_examples=100)
@given(log=tie_logs(), relevance_level=st.sampled_from([1, 2]))
def test_expected_ties_match_brute_force(log: TieLog, relevance_level: int) -> None:
    want = expected_over_orderings(log.rows, METRICS, relevance_level)
    got = package_values(log.frame(), NAMES, ties="expected", relevance_level=relevance_level)
    assert_match(got, want, NAMES)


@settings(FAST, max_examples=30)
@given(log=tie_logs(max_retrieved=12), relevance_level=st.sampled_from([1, 2]))
def test_expected_equals_trec_without_ties(log: TieLog, relevance_level: int) -> None:
    # give every retrieved row of a query its own score
    rows, seen = [], 0
    for query, item, score, label in log.rows:
        if score is not None:
            seen += 1
        rows.append((query, item, None if score is None else float(seen), label))
    frame = TieLog(rows, log.int_items).frame()
    for per_query in (True, False):
        options = {"per_query": per_query, "relevance_level": relevance_level}
        trec = rke.evaluate(frame, NAMES, ties="trec", **options)
        expected = rke.evaluate(frame, NAMES, ties="expected", **options)
        assert_frame_equal(expected, trec, check_dtypes=False, rel_tol=0, abs_tol=TOL)


def _with_expected_ties(name: str) -> str:
    """``ndcg@5`` -> ``ndcg@5(ties=expected)``; ``rbp(gain=raw)`` -> ``rbp(gain=raw,ties=...)``."""
    if name.endswith(")"):
        return name[:-1] + ",ties=expected)"
    return name + "(ties=expected)"


@settings(FAST, max_examples=30)
@given(log=tie_logs(), relevance_level=st.sampled_from([1, 2]))
def test_per_metric_ties_option_mixes_with_trec_metrics(log: TieLog, relevance_level: int) -> None:
    # one evaluate call holding each metric twice, under both tie rules, gives the same columns
    # as two separate calls with the evaluation-wide ties=
    frame = log.frame()
    options = {"per_query": True, "relevance_level": relevance_level}
    expected_names = [_with_expected_ties(name) for name in NAMES]
    mixed = rke.evaluate(frame, [*NAMES, *expected_names], **options)
    trec = rke.evaluate(frame, NAMES, ties="trec", **options)
    expected = rke.evaluate(frame, NAMES, ties="expected", **options)
    assert_frame_equal(mixed.select("query", *NAMES), trec, rel_tol=0, abs_tol=TOL)
    renamed = mixed.select("query", *expected_names).rename(
        dict(zip(expected_names, NAMES, strict=True))
    )
    assert_frame_equal(renamed, expected, rel_tol=0, abs_tol=TOL)


@pytest.mark.parametrize("seed", range(15))
def test_tie_averaged_ndcg_matches_sklearn(seed: int) -> None:
    from sklearn.metrics import dcg_score, ndcg_score

    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 12))
    labels = rng.integers(0, 4, size=n)
    scores = rng.integers(0, 4, size=n).astype(float)  # many ties
    frame = pl.DataFrame(
        {
            "query": ["q"] * n,
            "item": [f"d{i}" for i in range(n)],
            "score": scores,
            "relevance": labels,
        }
    )
    y_true, y_score = labels[None, :].astype(float), scores[None, :]
    for k in (1, 2, 3, 5, None):
        cut = "" if k is None else f"@{k}"
        names = [f"ndcg{cut}(ideal=retrieved)", f"dcg{cut}", f"dcg{cut}(log_base=10)"]
        row = rke.evaluate(frame, names, per_query=True, ties="expected").row(0, named=True)
        want = [
            ndcg_score(y_true, y_score, k=k),
            dcg_score(y_true, y_score, k=k),
            dcg_score(y_true, y_score, k=k, log_base=10),
        ]
        for name, value in zip(names, want, strict=True):
            assert row[name] == pytest.approx(value, abs=TOL), (k, name)
        # with every row judged and retrieved, the default ideal (all judged rows) is the same
        default = rke.evaluate(frame, [f"ndcg{cut}"], per_query=True, ties="expected")
        assert default.item(0, 1) == pytest.approx(want[0], abs=TOL), (k, "default ideal")


@pytest.mark.parametrize("metric", NO_CLOSED_FORM)
def test_metrics_without_closed_form_refuse_expected_ties(metric: str) -> None:
    frame = pl.DataFrame(
        {"query": ["q", "q"], "item": ["a", "b"], "score": [1.0, 1.0], "relevance": [1, 0]}
    )
    with pytest.raises(rke.InvalidOptionError, match=r"ties='expected'"):
        rke.evaluate(frame, ["map", metric], ties="expected")
    with pytest.raises(rke.InvalidOptionError, match=r"ties='expected'"):
        rke.evaluate(frame.lazy(), [metric], ties="expected", per_query=True).collect()
    # under the default tie rule they evaluate
    assert rke.evaluate(frame, [metric]).height == 1


@pytest.mark.parametrize("ties", ["random", "average", "", "expectd", 1])
def test_invalid_ties_value(ties: object) -> None:
    frame = pl.DataFrame({"query": ["q"], "item": ["a"], "score": [1.0], "relevance": [1]})
    with pytest.raises(rke.InvalidOptionError, match="ties"):
        rke.evaluate(frame, ["map"], ties=ties)


def test_option_values_are_case_insensitive_like_metric_strings() -> None:
    # Metric strings are lower-cased before parsing, so option values fold case everywhere.
    frame = pl.DataFrame(
        {"query": ["q", "q"], "item": ["a", "b"], "score": [1.0, 1.0], "relevance": [0, 1]}
    )
    upper = rke.evaluate(frame, ["mrr"], ties="EXPECTED")
    lower = rke.evaluate(frame, ["mrr"], ties="expected")
    assert upper["mrr"][0] == lower["mrr"][0] == pytest.approx(0.75)
