"""Conformance with trec_eval 10.0 on trec_eval's own test data (``tests/data``).

Every per-query value and every mean (``all``) that trec_eval prints for a measure we
implement must equal ours to the 4 decimals trec_eval prints; counts must match exactly.
Measures trec_eval does not print are derived from the ones it does:

* ``hits@k = round(P_k * k)`` and ``f1@k = 2 * hits@k / (k + num_rel)``;
* ``judged@k = min(k, num_ret) / k - unj_k``;
* ``hit_rate@k`` equals ``success_k``.

See ``tests/data/README.md`` for the origin of the files and the trec_eval command behind each
expected output.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval.errors import QueryCoverageWarning

DATA = Path(__file__).parents[1] / "data"
EXPECTED_DIR = DATA / "expected_v10"
ALL = "all"

#: Half a unit of trec_eval's 4th printed decimal: the largest error of a printed value.
PRINT_TOL = 5e-5 + 1e-12
#: For values derived exactly from integers (hits, f1): floating-point noise only.
EXACT_TOL = 1e-9

COUNT_METRICS = frozenset({"num_ret", "num_rel", "num_rel_ret", "num_q"})

#: trec_eval measures without a cutoff -> our metric string.
DIRECT = {
    "map": "map",
    "recip_rank": "mrr",
    "Rprec": "r_precision",
    "ndcg": "ndcg",
    "bpref": "bpref",
    # trec_eval rbp (p = 0.9) scales each query's gains by its largest judged label when that
    # is above 1; infAP reads negative labels as pooled-but-unjudged
    "rbp": "rbp",
    "infAP": "infap",
    "num_ret": "num_ret",
    "num_rel": "num_rel",
    "num_rel_ret": "num_rel_ret",
    "num_q": "num_q",
}
#: trec_eval measure families with a cutoff ``<family>_<k>`` -> our metric names.
CUTOFF_FAMILIES = {
    "P": ("p",),
    "recall": ("recall",),
    "success": ("success", "hit_rate"),
    "map_cut": ("map",),
    "ndcg_cut": ("ndcg",),
}
CUTOFF_MEASURE = re.compile(r"^(?P<family>P|recall|success|map_cut|ndcg_cut|unj)_(?P<k>\d+)$")


@dataclass(frozen=True)
class Case:
    qrels: str
    run: str
    expected: str
    relevance_level: int = 1
    missing_queries: Literal["skip", "zero"] = "skip"


CASES = {
    # trec_eval -m all_trec -q qrels.test results.test
    "test.aq": Case("qrels.test", "results.test", "out.test.aq"),
    # trec_eval -m all_trec -q -l2 qrels.rel_level results.test
    "test.aql": Case("qrels.rel_level", "results.test", "out.test.aql", relevance_level=2),
    # trec_eval -m all_trec -q -c qrels.test results.trunc
    "test.aqc": Case("qrels.test", "results.trunc", "out.test.aqc", missing_queries="zero"),
    # the same without -c: topic 302 (judged, no results) is skipped, as in trec_eval 9
    "trunc.skip": Case("qrels.test", "results.trunc", "out.test.aqc"),
    # trec_eval -m all_trec -q qrels.comment.test results.comment.test (TREC RAG 2024)
    "comment": Case("qrels.comment.test", "results.comment.test", "out.comment.all_trec.q"),
    # trec_eval -m all_trec -q qrels-302.test results-302.test
    "302": Case("qrels-302.test", "results-302.test", "out.302.all_trec.q"),
}

#: (case, metric) -> reason, for disagreements with trec_eval found by this file.
KNOWN_BUGS: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Want:
    """One expected value: trec_eval's printed text, or a value derived from printed ones."""

    value: float
    text: str | None = None
    tol: float = PRINT_TOL
    integer: bool = False

    def matches(self, ours: object) -> bool:
        if self.integer:
            return isinstance(ours, int) and not isinstance(ours, bool) and ours == self.value
        if not isinstance(ours, (int, float)) or isinstance(ours, bool):
            return False
        if self.text is not None and f"{ours:.4f}" == self.text:
            return True
        return abs(ours - self.value) <= self.tol

    def __str__(self) -> str:
        if self.text is not None:
            return self.text
        if self.integer:
            return str(int(self.value))
        return f"{self.value!r} (±{self.tol:.1e})"


Expectations = dict[str, dict[str, Want]]  # metric -> query (or "all") -> expected value


def read_expected(name: str) -> dict[str, dict[str, str]]:
    """``measure -> query -> printed value`` from a ``trec_eval -q`` output file."""
    table: dict[str, dict[str, str]] = {}
    for line in (EXPECTED_DIR / name).read_text().splitlines():
        if line.strip():
            measure, query, value = line.split("\t")
            table.setdefault(measure.strip(), {})[query.strip()] = value.strip()
    return table


def _printed(values: dict[str, str], *, integer: bool = False) -> dict[str, Want]:
    if integer:
        return {q: Want(int(v), integer=True) for q, v in values.items()}
    return {q: Want(float(v), text=v) for q, v in values.items()}


def _exact(per_query: dict[str, float]) -> dict[str, Want]:
    """Wants for values known exactly, plus their mean."""
    wants = {q: Want(v, text=f"{v:.4f}", tol=EXACT_TOL) for q, v in per_query.items()}
    mean = sum(per_query.values()) / len(per_query)
    wants[ALL] = Want(mean, text=f"{mean:.4f}", tol=EXACT_TOL)
    return wants


def _hits(precision: dict[str, str], k: int, queries: list[str]) -> dict[str, int]:
    hits = {}
    for q in queries:
        scaled = float(precision[q]) * k
        hits[q] = round(scaled)
        # P_k is printed to 4 decimals, so P_k * k is within 5e-5 * k of an integer.
        assert abs(scaled - hits[q]) <= PRINT_TOL * k < 0.5, (q, k, precision[q])
    return hits


def expectations_from_trec(table: dict[str, dict[str, str]]) -> Expectations:
    queries = sorted(q for q in table["num_ret"] if q != ALL)
    num_ret = {q: int(table["num_ret"][q]) for q in queries}
    num_rel = {q: int(table["num_rel"][q]) for q in queries}
    wants: Expectations = {}
    for measure, values in table.items():
        if measure in DIRECT:
            label = DIRECT[measure]
            wants[label] = _printed(values, integer=label in COUNT_METRICS)
            continue
        match = CUTOFF_MEASURE.match(measure)
        if match is None:
            continue
        family, k = match["family"], int(match["k"])
        if family == "unj":
            # judged@k = min(k, num_ret)/k - unj_k, per query and for the mean.
            fill = {q: min(k, num_ret[q]) / k for q in queries}
            judged = {q: Want(fill[q] - float(values[q])) for q in queries}
            mean_fill = sum(fill.values()) / len(queries)
            judged[ALL] = Want(mean_fill - float(values[ALL]))
            wants[f"judged@{k}"] = judged
            continue
        for name in CUTOFF_FAMILIES[family]:
            wants[f"{name}@{k}"] = _printed(values)
        if family == "P":
            hits = _hits(values, k, queries)
            hit_wants = {q: Want(h, integer=True) for q, h in hits.items()}
            mean_hits = sum(hits.values()) / len(queries)
            hit_wants[ALL] = Want(mean_hits, text=f"{mean_hits:.4f}", tol=EXACT_TOL)
            wants[f"hits@{k}"] = hit_wants
            wants[f"f1@{k}"] = _exact({q: 2 * hits[q] / (k + num_rel[q]) for q in queries})
    # trec_eval prints num_q for "all" only; each evaluated query counts once.
    wants["num_q"].update({q: Want(1, integer=True) for q in queries})
    return wants


def expectations_without_empty_topics(with_c: Expectations, dropped: set[str]) -> Expectations:
    """From ``-c`` expectations, those of a run that skips ``dropped`` (topics without results).

    The per-query values of the kept topics do not change. The dropped topics score 0 under
    ``-c``, so a mean over the kept ones is the ``-c`` mean times ``n_all / n_kept``; counts are
    the sums over the kept topics.
    """
    queries = [q for q in with_c["num_ret"] if q != ALL]
    kept = [q for q in queries if q not in dropped]
    scale = len(queries) / len(kept)
    wants: Expectations = {}
    for label, values in with_c.items():
        per_query = {q: values[q] for q in kept}
        if label in COUNT_METRICS:
            total = sum(int(w.value) for w in per_query.values())
            per_query[ALL] = Want(total, integer=True)
        else:
            assert all(values[q].value == 0 for q in dropped), (label, "dropped topic not 0")
            mean = values[ALL]
            per_query[ALL] = Want(mean.value * scale, tol=mean.tol * scale)
        wants[label] = per_query
    return wants


def _build_expectations() -> dict[str, Expectations]:
    expected = {
        name: expectations_from_trec(read_expected(case.expected))
        for name, case in CASES.items()
        if name != "trunc.skip"
    }
    expected["trunc.skip"] = expectations_without_empty_topics(expected["test.aqc"], {"302"})
    return expected


EXPECTED = _build_expectations()


# Runs whose query ids differ from their qrels' (trec_eval evaluates them all the same):
# results.trunc lacks topic 302, the comment run has 301 topics of which 31 are judged.
PARTIAL_COVERAGE = {"results.trunc", "results.comment.test"}


def joined_frame(case: Case) -> pl.LazyFrame:
    run = rke.read_trec_run(DATA / case.run)
    qrels = rke.read_trec_qrels(DATA / case.qrels)
    if case.run not in PARTIAL_COVERAGE:
        return rke.join_run_qrels(run, qrels)
    with pytest.warns(QueryCoverageWarning, match="query ids of the run and the qrels differ"):
        return rke.join_run_qrels(run, qrels)


@functools.cache
def ours(case_name: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per-query values and means of every expected metric, one evaluate call each."""
    case = CASES[case_name]
    lf = joined_frame(case)
    metrics = list(EXPECTED[case_name])
    options = {"relevance_level": case.relevance_level, "missing_queries": case.missing_queries}
    per_query = rke.evaluate(lf, metrics, per_query=True, **options)
    means = rke.evaluate(lf, metrics, per_query=False, **options)
    per_query_df, means_df = pl.collect_all([per_query, means])
    return per_query_df, means_df


def _params() -> list[object]:
    params = []
    for case_name, wants in EXPECTED.items():
        for label in wants:
            marks = []
            if (case_name, label) in KNOWN_BUGS:
                reason = KNOWN_BUGS[case_name, label]
                marks.append(pytest.mark.xfail(strict=True, reason=reason))
            params.append(pytest.param(case_name, label, id=f"{case_name}-{label}", marks=marks))
    return params


def _mismatches(wants: dict[str, Want], got: dict[str, object]) -> list[str]:
    lines = []
    for query, want in wants.items():
        if query not in got:
            lines.append(f"  {query}: missing, trec_eval={want}")
        elif not want.matches(got[query]):
            lines.append(f"  {query}: ours={got[query]!r}, trec_eval={want}")
    lines.extend(f"  {query}: unexpected row, ours={got[query]!r}" for query in got.keys() - wants)
    return lines


@pytest.mark.parametrize(("case_name", "label"), _params())
def test_metric_matches_trec_eval(case_name: str, label: str) -> None:
    per_query, means = ours(case_name)
    got = dict(zip(per_query["query"].to_list(), per_query[label].to_list(), strict=True))
    assert means.height == 1
    got[ALL] = means[label].item()
    lines = _mismatches(EXPECTED[case_name][label], got)
    assert not lines, f"{label} on {case_name} disagrees with trec_eval:\n" + "\n".join(lines)


@pytest.mark.parametrize("case_name", list(CASES))
def test_evaluated_queries(case_name: str) -> None:
    per_query, means = ours(case_name)
    expected_queries = sorted(q for q in EXPECTED[case_name]["num_q"] if q != ALL)
    assert per_query["query"].dtype == pl.String
    assert per_query["query"].to_list() == expected_queries
    assert means["num_q"].item() == len(expected_queries)
    assert per_query.columns == ["query", *EXPECTED[case_name]]
    assert means.columns == list(EXPECTED[case_name])


def test_missing_topic_is_zero_with_c() -> None:
    per_query, means = ours("test.aqc")
    row = per_query.filter(pl.col("query") == "302").row(0, named=True)
    assert row["num_rel"] == 77
    assert row["num_ret"] == 0
    assert row["num_rel_ret"] == 0
    assert all(row[label] == 0 for label in row if label not in {"query", "num_rel", "num_q"})
    assert means["num_q"].item() == 3


def test_missing_topic_is_skipped_without_c() -> None:
    per_query, means = ours("trunc.skip")
    assert per_query["query"].to_list() == ["301", "303"]
    assert means["num_q"].item() == 2
    assert means["num_rel"].item() == 474 + 10


def test_trec_run_comment_ids() -> None:
    per_query, _ = ours("comment")
    assert per_query.height == 31
    assert per_query["query"].str.starts_with("2024-").all()
    run_queries = joined_frame(CASES["comment"]).select(pl.col("query").n_unique()).collect()
    assert run_queries.item() == 301


NAMESPACE_METRICS = ["map", "mrr", "ndcg", "ndcg@10", "p@5", "recall@100", "bpref", "num_rel_ret"]


def test_namespace_lazyframe_evaluate() -> None:
    wants = EXPECTED["test.aq"]
    lf = joined_frame(CASES["test.aq"])
    result = lf.rank_eval.evaluate(NAMESPACE_METRICS)
    assert isinstance(result, pl.LazyFrame)
    means = result.collect()
    assert means.columns == NAMESPACE_METRICS
    lines = _mismatches(
        {label: wants[label][ALL] for label in NAMESPACE_METRICS},
        {label: means[label].item() for label in NAMESPACE_METRICS},
    )
    assert not lines, "lf.rank_eval.evaluate disagrees with trec_eval:\n" + "\n".join(lines)


def test_namespace_dataframe_ndcg() -> None:
    df = joined_frame(CASES["test.aq"]).collect()
    result = df.rank_eval.ndcg(k=10)
    assert isinstance(result, pl.DataFrame)
    assert result.shape == (1, 1)
    assert result.columns == ["ndcg@10"]
    want = EXPECTED["test.aq"]["ndcg@10"][ALL]
    assert want.matches(result.item()), (result.item(), str(want))
