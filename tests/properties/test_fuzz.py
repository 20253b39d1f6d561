"""Fuzz ``evaluate`` with random frames: nulls, NaN, infinities, odd dtypes, empty groups,
duplicates, bad metric strings and options. Each call must either return values in range or
raise one of the documented errors (subclasses of ``RankEvalError``), never a Polars panic or
any other exception.

A second strategy draws only valid inputs: each must evaluate, and its values must equal the
brute-force oracle of ``tests/support/reference.py``. ``event()`` reports the share of examples that
reach the value checks (``--hypothesis-show-statistics``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import polars_rankeval as rke
from tests.support import reference as ref

BOUNDED = {"p@3", "recall@5", "success@2", "f1@3", "judged@3", "map", "map@3", "mrr", "ndcg"}
BOUNDED |= {"ndcg@3", "r_precision", "bpref", "infap", "err@5", "rbp", "mar", "ndcg@3(gain=exp)"}
CORRELATIONS = {"spearman", "kendall_tau"}
COUNTS = {"num_ret", "num_rel", "num_rel_ret", "num_q", "hits@3"}
GOOD = sorted(BOUNDED | CORRELATIONS | COUNTS | {"dcg@3", "frp@3", "mean_rank"})
BAD = ["ndgc@3", "p@0", "p", "bpref@3", "ndcg@3(foo=1)", "map@x", ""]

ID_VALUES = {
    "int": st.integers(-3, 12),
    "str": st.sampled_from(["a", "b", "10", "9", "é", ""]),
}
# Odd values stay a minority, so most frames get evaluated and their values checked.
SCORES = st.one_of(
    *[st.sampled_from([0.0, -0.0, 1.0, 1.0, 2.5, 3.0])] * 6,
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
)
LABELS = st.one_of(st.none(), st.integers(-2, 4))


@st.composite
def frames(draw: st.DrawFn) -> pl.DataFrame:
    n = draw(st.integers(0, 14))
    query_kind = draw(st.sampled_from(["int", "str"]))
    item_kind = draw(st.sampled_from(["int", "str"]))
    rare_null = draw(st.sampled_from([False] * 5 + [True]))

    def ids(kind: str) -> st.SearchStrategy[object]:
        return st.one_of(st.none(), ID_VALUES[kind]) if rare_null else ID_VALUES[kind]

    queries = draw(st.lists(ids(query_kind), min_size=n, max_size=n))
    items = draw(st.lists(ids(item_kind), min_size=n, max_size=n))
    scores = draw(st.lists(SCORES, min_size=n, max_size=n))
    labels = draw(st.lists(LABELS, min_size=n, max_size=n))
    frame = pl.DataFrame(
        {"query": queries, "item": items, "score": scores, "relevance": labels},
        schema={
            "query": pl.Int64 if query_kind == "int" else pl.String,
            "item": pl.Int64 if item_kind == "int" else pl.String,
            "score": pl.Float64,
            "relevance": pl.Int64,
        },
    )
    casts = {
        "query": draw(st.sampled_from([None, pl.Categorical, pl.String])),
        "score": draw(st.sampled_from([None, pl.Float32, pl.Int32, pl.String, pl.Boolean])),
        "relevance": draw(
            st.sampled_from([None, pl.Float64, pl.Int8, pl.UInt8, pl.String, pl.Boolean])
        ),
    }
    for column, dtype in casts.items():
        if dtype == pl.Categorical:  # categorical from strings only
            frame = frame.with_columns(pl.col(column).cast(pl.String).cast(pl.Categorical))
        elif dtype is not None:
            frame = frame.with_columns(pl.col(column).cast(dtype, strict=False))
    return frame


OPTIONS = st.fixed_dictionaries(
    {"duplicates": st.sampled_from(["first", "first", "max_score", "last", "error"])},
    optional={
        "ties": st.sampled_from(["trec", "expected", "random"]),
        "relevance_level": st.sampled_from([0, 1, 2, 1.5]),
        "missing_queries": st.sampled_from(["skip", "zero"]),
        "nan_scores": st.sampled_from(["error", "last"]),
        "per_query": st.booleans(),
        "n_buckets": st.sampled_from([1, 2, "auto"]),
    },
)


def _check_values(result: pl.DataFrame) -> None:
    for column in result.columns:
        if column == "query":
            continue
        for value in result[column].to_list():
            if value is None:
                continue
            if column in CORRELATIONS:
                assert math.isnan(value) or -1.0 - 1e-12 <= value <= 1.0 + 1e-12, (column, value)
            elif column in BOUNDED:
                assert 0.0 <= value <= 1.0 + 1e-12, (column, value)
            elif column in COUNTS:
                assert value >= 0, (column, value)
            else:
                assert not math.isnan(value), (column, value)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    frame=frames(),
    metrics=st.lists(st.sampled_from(GOOD), min_size=1, max_size=4, unique=True),
    bad_metric=st.one_of(st.none(), st.none(), st.none(), st.sampled_from(BAD)),
    options=OPTIONS,
    lazy=st.booleans(),
)
def test_evaluate_returns_values_in_range_or_a_documented_error(
    frame, metrics, bad_metric, options, lazy
):
    if bad_metric is not None:
        metrics = [*metrics, bad_metric]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rke.EmptyEvaluationWarning)
        try:
            result = rke.evaluate(frame.lazy() if lazy else frame, metrics, **options)
            if lazy:
                result = result.collect()
        except rke.RankEvalError as error:
            event(f"documented error: {type(error).__name__}")
            return
    event("reached the value checks")
    _check_values(result)


# ---- valid inputs: they must evaluate, and the values must be the oracle's ---------------------
#
# The strategy above ends most examples in a documented error, so few reach the value checks.
# This one draws only valid inputs (non-null ids, no NaN, unique (query, item) per system,
# integer labels), with ties, unjudged, negative and unretrieved rows, integer, string and
# categorical ids, cutoff sweeps, metric options, by= and per_query. Every example must
# evaluate without raising, and every value is compared with ``tests/support/reference.py`` (the
# mean over all tie orderings for ties="expected") or, for the correlations it lacks, range-checked.

UNIT, COUNT, RANK, NONNEG, CORRELATION = "unit", "count", "rank", "nonneg", "correlation"
REQUIRED, OPTIONAL, NONE = "required", "optional", "none"
RefFn = Callable[[ref.Query, "int | None"], "float | int | None"]


@dataclass(frozen=True)
class Spec:
    """One metric family (with options) the valid strategy draws, and its oracle."""

    name: str
    options: str  # "" or "(option=value,...)", appended to every column name
    cutoff: str  # REQUIRED, OPTIONAL or NONE
    bounds: str
    oracle: RefFn | None  # None: range checks only
    expected_ties: bool = True  # has a closed form under ties="expected"

    def metric(self, cutoffs: list[int]) -> str:
        at = "@" + ",".join(map(str, cutoffs)) if cutoffs else ""
        return self.name + at + self.options

    def columns(self, cutoffs: list[int]) -> dict[str, tuple[Spec, int | None]]:
        if not cutoffs:
            return {self.name + self.options: (self, None)}
        return {f"{self.name}@{k}{self.options}": (self, k) for k in cutoffs}


SPECS = [
    Spec("p", "", REQUIRED, UNIT, lambda q, k: q.precision(k)),
    Spec("recall", "", REQUIRED, UNIT, lambda q, k: q.recall(k)),
    Spec("success", "", REQUIRED, UNIT, lambda q, k: q.success(k)),
    Spec("hit_rate", "", REQUIRED, UNIT, lambda q, k: q.success(k)),
    Spec("hits", "", REQUIRED, COUNT, lambda q, k: q.hits(k)),
    Spec("f1", "", REQUIRED, UNIT, lambda q, k: q.f1(k)),
    Spec("judged", "", REQUIRED, UNIT, lambda q, k: q.judged(k)),
    Spec("map", "", OPTIONAL, UNIT, lambda q, k: q.average_precision(k)),
    Spec("mrr", "", OPTIONAL, UNIT, lambda q, k: q.reciprocal_rank(k)),
    Spec("mar", "", OPTIONAL, UNIT, ref.mean_average_recall),
    Spec("ndcg", "", OPTIONAL, UNIT, lambda q, k: q.ndcg(k)),
    Spec("dcg", "", OPTIONAL, NONNEG, lambda q, k: q.dcg(k)),
    Spec("ndcg", "(gain=exp)", OPTIONAL, UNIT, lambda q, k: ref.ndcg_variant(q, k, gain="exp")),
    Spec(
        "ndcg",
        "(ideal=retrieved)",
        OPTIONAL,
        UNIT,
        lambda q, k: ref.ndcg_variant(q, k, ideal="retrieved"),
    ),
    Spec(
        "dcg",
        "(discount=jarvelin,log_base=10)",
        OPTIONAL,
        NONNEG,
        lambda q, k: ref.dcg_variant(q, k, discount="jarvelin", log_base=10),
    ),
    Spec("frp", "", OPTIONAL, RANK, ref.first_relevant_position),
    Spec("mean_rank", "", OPTIONAL, RANK, ref.mean_rank),
    Spec("err", "", OPTIONAL, UNIT, ref.err, expected_ties=False),
    Spec(
        "err",
        "(max_grade=3)",
        OPTIONAL,
        UNIT,
        lambda q, k: ref.err(q, k, max_grade=3),
        expected_ties=False,
    ),
    Spec("r_precision", "", NONE, UNIT, lambda q, _: q.r_precision()),
    Spec("bpref", "", NONE, UNIT, lambda q, _: q.bpref(), expected_ties=False),
    Spec("infap", "", NONE, UNIT, lambda q, _: ref.infap(q), expected_ties=False),
    Spec("rbp", "", NONE, UNIT, lambda q, _: ref.rbp(q)),
    Spec("rbp", "(p=0.5,gain=binary)", NONE, UNIT, lambda q, _: ref.rbp(q, p=0.5, gain="binary")),
    Spec("num_ret", "", NONE, COUNT, lambda q, _: len(q.ranking)),
    Spec("num_rel", "", NONE, COUNT, lambda q, _: q.num_rel),
    Spec("num_rel_ret", "", NONE, COUNT, lambda q, _: q.hits(None)),
    Spec("num_q", "", NONE, COUNT, lambda q, _: 1),
    Spec("spearman", "", NONE, CORRELATION, None, expected_ties=False),
    Spec("kendall_tau", "", NONE, CORRELATION, None, expected_ties=False),
]
SUMMED = {"num_ret", "num_rel", "num_rel_ret", "num_q"}
VALID_LABELS = (None, -2, -1, 0, 1, 2, 3, 4)
# frequent values make ties; all multiples of 0.25, exact in float32
VALID_SCORES = st.one_of(st.sampled_from([0.0, 0.5, 1.0]), st.integers(-8, 8).map(lambda i: i / 4))
# Pools drawn without replacement ("9" > "10" and "é" > "z" in the tie-break by string form)
VALID_ITEMS = {
    "int": list(range(26)),
    "str": ["", "a", "ab", "b", "z", "A", "Z", "_", "é", "éa", "0", "1", "10", "9", "90", "a b"],
}


@dataclass(frozen=True)
class ValidCase:
    rows: dict[str, list[ref.Row]]  # system -> rows
    frame: pl.DataFrame
    metrics: list[str]
    columns: dict[str, tuple[Spec, int | None]]
    options: dict[str, Any]
    lazy: bool


@st.composite
def valid_cases(draw: st.DrawFn) -> ValidCase:
    ties = draw(st.sampled_from(["trec", "trec", "expected"]))
    # ties="expected" is checked by brute force over tie orderings: at most 6! per query
    max_items = 6 if ties == "expected" else 9
    query_kind = draw(st.sampled_from(["int", "str", "categorical"]))
    item_kind = draw(st.sampled_from(["int", "str", "categorical"]))
    systems = draw(st.sampled_from([["A"], ["A", "B"]]))
    rows: dict[str, list[ref.Row]] = {}
    for system in systems:
        rows[system] = []
        for qi in range(draw(st.integers(1, 4))):
            # ids not in creation order; the same ids in both systems
            query: Any = (7 * qi) % 10 if query_kind == "int" else f"q{(7 * qi) % 10}"
            pool = list(VALID_ITEMS["int" if item_kind == "int" else "str"])
            items = [pool.pop(draw(st.integers(0, len(pool) - 1))) for _ in range(max_items)]
            for item in items[: draw(st.integers(1, max_items))]:
                score = draw(st.one_of(st.none(), *[VALID_SCORES] * 4))
                rows[system].append((query, item, score, draw(st.sampled_from(VALID_LABELS))))
    frame = pl.DataFrame(
        [(system, *row) for system, system_rows in rows.items() for row in system_rows],
        schema={
            "system": pl.String,
            "query": pl.Int64 if query_kind == "int" else pl.String,
            "item": pl.Int64 if item_kind == "int" else pl.String,
            "score": draw(st.sampled_from([pl.Float64, pl.Float32])),
            "relevance": draw(st.sampled_from([pl.Int64, pl.Int32, pl.Int8, pl.Float64])),
        },
        orient="row",
    )
    for column, kind in (("query", query_kind), ("item", item_kind)):
        if kind == "categorical":
            frame = frame.with_columns(pl.col(column).cast(pl.Categorical))
    specs = [spec for spec in SPECS if ties == "trec" or spec.expected_ties]
    # draws without replacement, not unique lists: no draw is rejected, no example is invalid
    chosen = [specs.pop(draw(st.integers(0, len(specs) - 1))) for _ in range(5)]
    chosen = chosen[: draw(st.integers(1, 5))]
    metrics: list[str] = []
    columns: dict[str, tuple[Spec, int | None]] = {}
    for spec in chosen:
        # one cutoff, or a sweep of up to three
        cutoffs = draw(st.permutations([1, 2, 3, 5, 10]))[: draw(st.integers(1, 3))]
        if spec.cutoff == NONE or (spec.cutoff == OPTIONAL and draw(st.booleans())):
            cutoffs = []
        metrics.append(spec.metric(cutoffs))
        columns |= spec.columns(cutoffs)
    options: dict[str, Any] = {
        "ties": ties,
        "per_query": draw(st.booleans()),
        "relevance_level": draw(st.sampled_from([0, 1, 1, 2])),
        "missing_queries": draw(st.sampled_from(["skip", "zero"])),
    }
    # two systems share (query, item) pairs, so they need by=; one system may use it too
    if len(systems) == 2 or draw(st.booleans()):
        options["by"] = draw(st.sampled_from(["system", ["system"]]))
    lazy = draw(st.booleans())
    if lazy:
        options["n_buckets"] = draw(st.sampled_from([1, 2, "auto"]))
    return ValidCase(rows, frame, metrics, columns, options, lazy)


def _oracle_per_query(
    rows: list[ref.Row], columns: dict[str, tuple[Spec, int | None]], options: dict[str, Any]
) -> dict[str, dict[str, float | int | None]]:
    """``{query: {column: value}}``; with ties="expected", the mean over every tie ordering."""
    level = options["relevance_level"]
    queries = ref.queries(rows, relevance_level=level, missing_queries=options["missing_queries"])
    result: dict[str, dict[str, float | int | None]] = {}
    for query, trec_query in queries.items():
        if options["ties"] == "expected":
            query_rows = [(item, score, label) for q, item, score, label in rows if q == query]
            rankings = [ref.Query(o, level) for o in ref.tie_orderings(query_rows)]
        else:
            rankings = [trec_query]
        values: dict[str, float | int | None] = {}
        for column, (spec, k) in columns.items():
            if spec.oracle is None:
                continue
            each = [spec.oracle(q, k) for q in rankings]
            # undefined (R = 0) for one ordering means undefined for all of them
            values[column] = None if None in each else sum(each) / len(each)  # type: ignore[arg-type]
        result[str(query)] = values
    return result


def _in_bounds(bounds: str, value: float) -> bool:
    if bounds == CORRELATION:
        return math.isnan(value) or -1.0 - 1e-12 <= value <= 1.0 + 1e-12
    if math.isnan(value):
        return False
    if bounds == UNIT:
        return 0.0 <= value <= 1.0 + 1e-12
    if bounds == RANK:
        return value >= 1.0
    return value >= 0.0


def _assert_row(got: dict[str, Any], want: dict[str, Any], columns: dict, where: str) -> None:
    for column, (spec, _) in columns.items():
        value = got[column]
        if value is not None:
            assert _in_bounds(spec.bounds, value), (where, column, value)
        if column in want:
            expected = want[column]
            if expected is None:
                assert value is None, (where, column, value)
            else:
                assert value is not None, (where, column, expected)
                assert math.isclose(value, expected, rel_tol=0.0, abs_tol=1e-9), (
                    where,
                    column,
                    value,
                    expected,
                )


def _summary(per_query: dict[str, dict[str, Any]], columns: dict) -> dict[str, Any]:
    """Means over the evaluated queries, nulls left out; sums for the counts."""
    out: dict[str, Any] = {}
    for column, (spec, _) in columns.items():
        if spec.oracle is None:
            continue
        values = [row[column] for row in per_query.values() if row[column] is not None]
        if spec.name in SUMMED:
            out[column] = sum(values)
        else:
            out[column] = sum(values) / len(values) if values else None
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=valid_cases())
def test_valid_inputs_evaluate_to_the_oracle_values(case: ValidCase) -> None:
    data = case.frame.lazy() if case.lazy else case.frame
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rke.EmptyEvaluationWarning)
        result = rke.evaluate(data, case.metrics, **case.options)
        if case.lazy:
            result = result.collect()
    by = "by" in case.options
    keys = (["system"] if by else []) + (["query"] if case.options["per_query"] else [])
    assert result.columns == [*keys, *case.columns]
    want = {
        system: _oracle_per_query(rows, case.columns, case.options)
        for system, rows in case.rows.items()
    }
    if case.options["per_query"]:
        got = {
            (row.pop("system") if by else "A", str(row.pop("query"))): row
            for row in result.iter_rows(named=True)
        }
        expected = {
            (s, q): values for s, per_query in want.items() for q, values in per_query.items()
        }
        assert sorted(got) == sorted(expected), "evaluated queries differ"
        for key, values in expected.items():
            _assert_row(got[key], values, case.columns, str(key))
    else:
        got = {row.pop("system") if by else "A": row for row in result.iter_rows(named=True)}
        # by=: a system with no evaluated query has no row; without by=, one row of nulls
        expected = {s: _summary(q, case.columns) for s, q in want.items() if q or not by}
        assert sorted(got) == sorted(expected), "systems differ"
        for system, values in expected.items():
            _assert_row(got[system], values, case.columns, system)
    evaluated = sum(len(per_query) for per_query in want.values())
    event("valid input: values checked" + ("" if evaluated else " (no query evaluated)"))
