"""Property tests: monotonicity, bounds, invariances and NDCG's extreme values.

The logs come from the strategy of ``tests/properties/test_differential.py`` (graded and negative
labels, ties, unjudged and unretrieved rows, string and integer ids, float32 and float64
scores). The properties hold for any correct implementation, so they need no oracle:

* moving a relevant retrieved item up the ranking never lowers a rank-based metric of its query
  (and moving up an item whose gain is at least that of every row it passes never lowers DCG or
  NDCG);
* bounded metrics stay within their bounds per query and in the mean, under both tie modes and
  every convention preset;
* results do not change under a positive affine map of the scores (shift by an integer, scale by
  a power of two, so no float rounding can make or break a tie), nor when several systems are
  evaluated together with ``by=`` instead of one at a time;
* NDCG is 1 for a ranking in ideal order with every judged row retrieved and no tied scores,
  and 0 when no retrieved row has a positive label.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import polars as pl
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import polars_rankeval as rke
from tests.properties.test_differential import FAST, Log, logs, system_pairs
from tests.support import reference as ref

CUTOFFS = (1, 3, 5, 10)
TOL = 1e-12


class _NeverRaised(Warning):
    pass


#: a log in which no query is evaluated is a legitimate input here; its warning is not the
#: subject of these tests (older versions of the package do not have it)
EMPTY_WARNING: type[Warning] = getattr(rke, "EmptyEvaluationWarning", _NeverRaised)

# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


def evaluate(frame: pl.DataFrame, metrics: list[Any], **options: Any) -> pl.DataFrame:
    """``rke.evaluate`` on a DataFrame, without the warning about an empty evaluation."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EMPTY_WARNING)
        return rke.evaluate(frame, metrics, **options)


def cut(families: tuple[str, ...], cutoffs: tuple[int, ...] = CUTOFFS) -> list[str]:
    return [f"{family}@{k}" for family in families for k in cutoffs]


def per_query(frame: pl.DataFrame, metrics: list[Any], **options: Any) -> dict[Any, dict]:
    """``{(*by, query): {metric: value}}`` for the evaluated queries."""
    out = evaluate(frame, metrics, per_query=True, **options)
    names = [m if isinstance(m, str) else m.name for m in metrics]
    keys = out.columns[: out.width - len(names)]
    assert out.columns[len(keys) :] == names
    return {tuple(row.pop(key) for key in keys): row for row in out.iter_rows(named=True)}


def same(a: float | None, b: float | None) -> bool:
    """Equal within TOL; nulls equal nulls and NaNs equal NaNs."""
    if a is None or b is None:
        return a is b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=0.0, abs_tol=TOL)


def assert_same_per_query(got: dict[Any, dict], want: dict[Any, dict], context: str) -> None:
    assert sorted(got, key=repr) == sorted(want, key=repr), f"{context}: query sets differ"
    bad = [
        f"{key} {metric}: got {got[key][metric]!r}, expected {value!r}"
        for key, row in want.items()
        for metric, value in row.items()
        if not same(got[key][metric], value)
    ]
    assert not bad, f"{context}:\n" + "\n".join(bad)


def gain(label: int | None) -> int:
    return label if label is not None and label > 0 else 0


def trec_order(rows: list[ref.Row], query: Any) -> list[ref.Row]:
    """Retrieved rows of ``query`` in trec_eval's order (score desc, then item string desc)."""
    retrieved = [row for row in rows if row[0] == query and row[2] is not None]
    return sorted(retrieved, key=lambda row: ref.trec_sort_key(row[1], row[2]), reverse=True)


# ---------------------------------------------------------------------------------------------
# 1. Monotonicity
# ---------------------------------------------------------------------------------------------

#: non-decreasing when a relevant row moves up (relevance at ``relevance_level``)
BINARY_MONOTONE = [
    *cut(("p", "recall", "success", "map", "mrr")),
    *("map", "mrr", "r_precision"),
]
#: non-decreasing when a row moves up past rows of no larger gain (label when positive)
GAIN_MONOTONE = [*cut(("ndcg", "dcg")), "ndcg"]


def _move_up(
    rows: list[ref.Row], index: int, how: str, ties: str
) -> tuple[list[ref.Row], list[ref.Row], str]:
    """Change scores so that row ``index`` ends strictly higher in its query's ranking.

    ``how="swap"``: swap its score with the row ranked directly above it, where that makes the
    two rows trade places (under ``ties="trec"`` the tie-break by item can otherwise move the
    other row past further rows; then the move falls back to ``"step"``). ``"step"``: a score
    just above the tie group of the row directly above it (the whole group, so the tie-break
    cannot leave it below). ``"top"``: a score above the top.

    Returns the new rows, the rows the moved row may now precede that preceded it before (its
    competitors, whose gain it must match for DCG to be monotone) and the move made.
    """
    query, item, score, label = rows[index]
    order = trec_order(rows, query)
    names = [row[1] for row in order]
    position = names.index(item)
    assert position > 0
    above = order[position - 1]
    if how == "swap":
        new_rows = list(rows)
        new_rows[index] = (query, item, above[2], label)
        other = rows.index(above)
        new_rows[other] = (*above[:2], score, above[3])
        swapped = [*names[: position - 1], item, above[1], *names[position + 1 :]]
        # Under ties="expected" each tie order of the old scores maps to one of the new scores
        # in which the two rows trade places (the other rows stay put): always a valid move.
        if ties == "expected" or [row[1] for row in trec_order(new_rows, query)] == swapped:
            return new_rows, [above], how
        how = "step"
    scores = sorted({row[2] for row in order})
    if how == "top":
        new_score = scores[-1] + 1.0
    else:
        higher = [s for s in scores if s > above[2]]
        # midpoints of multiples of 0.25 are multiples of 0.125, exact in float32 and float64
        new_score = (above[2] + higher[0]) / 2 if higher else above[2] + 1.0
    new_rows = list(rows)
    new_rows[index] = (query, item, new_score, label)
    new_order = trec_order(new_rows, query)
    new_position = [row[1] for row in new_order].index(item)
    assert new_position < position
    # every other row keeps its relative order
    assert [r[1] for r in new_order if r[1] != item] == [r for r in names if r != item]
    passed = new_order[new_position + 1 : position + 1]
    if ties == "expected":
        # the old tie group is randomly ordered: the row may pass all of it
        passed += [row for row in order[position + 1 :] if row[2] == score]
    return new_rows, passed, how


@st.composite
def moves(draw: st.DrawFn) -> tuple[Log, int, int, str]:
    """A log, a relevance level and a relevant retrieved row that is not ranked first."""
    level = draw(st.sampled_from([1, 2]))
    log = draw(logs())
    candidates = []
    for index, (query, item, score, label) in enumerate(log.rows):
        if score is None or label is None or label < level:
            continue
        if trec_order(log.rows, query)[0][1] != item:
            candidates.append(index)
    if not candidates:
        # a new query (ids of the strategy are 0..9 or q0..q9): a row above a relevant one
        query: Any = 99 if log.variant.int_queries else "q99"
        above, below = (101, 100) if log.variant.int_items else ("y", "x")  # ties: above wins
        label_above = draw(st.sampled_from([None, -1, 0, 1, 2, 3]))
        rows = [
            *log.rows,
            (query, above, draw(st.sampled_from([0.5, 1.0])), label_above),
            (query, below, draw(st.sampled_from([0.0, 0.5])), draw(st.integers(level, 3))),
        ]
        log = Log(rows, log.variant)
        candidates = [len(rows) - 1]
    return (
        log,
        level,
        draw(st.sampled_from(candidates)),
        draw(st.sampled_from(["swap", "step", "top"])),
    )


@settings(FAST, max_examples=100)
@given(move=moves(), ties=st.sampled_from(["trec", "expected"]))
def test_moving_a_relevant_row_up_never_lowers_a_metric(
    move: tuple[Log, int, int, str], ties: str
) -> None:
    log, level, index, how = move
    new_rows, competitors, how = _move_up(log.rows, index, how, ties)
    moved_gain = gain(log.rows[index][3])
    metrics = list(BINARY_MONOTONE)
    if all(moved_gain >= gain(row[3]) for row in competitors):
        metrics += GAIN_MONOTONE
    event(f"move: {how}, ties={ties}, gain metrics checked: {len(metrics) > len(BINARY_MONOTONE)}")
    query = (log.rows[index][0],)

    options = {"relevance_level": level, "ties": ties}
    before = per_query(log.frame(), metrics, **options)[query]
    after = per_query(Log(new_rows, log.variant).frame(), metrics, **options)[query]
    lowered = [
        f"{metric}: {before[metric]!r} -> {after[metric]!r}"
        for metric in metrics
        if after[metric] < before[metric] - TOL
    ]
    event(f"some metric rose: {any(after[m] > before[m] + TOL for m in metrics)}")
    assert not lowered, f"{how} move of {log.rows[index]} lowered:\n" + "\n".join(lowered)


def test_moving_up_hand_example() -> None:
    # ranking c (0), b (1), a (2); moving a (label 2) above c raises everything
    frame = pl.DataFrame(
        {
            "query": ["q"] * 3,
            "item": ["a", "b", "c"],
            "score": [1.0, 2.0, 3.0],
            "relevance": [2, 1, 0],
        }
    )
    moved = frame.with_columns(score=pl.when(pl.col("item") == "a").then(4.0).otherwise("score"))
    metrics = ["p@1", "mrr", "map", "ndcg", "ndcg@1", "dcg@3", "r_precision"]
    before = evaluate(frame, metrics, relevance_level=2).row(0, named=True)
    after = evaluate(moved, metrics, relevance_level=2).row(0, named=True)
    assert before["p@1"] == 0.0
    assert after["p@1"] == 1.0
    assert after["mrr"] == after["map"] == after["r_precision"] == 1.0
    assert after["ndcg"] > before["ndcg"]


# ---------------------------------------------------------------------------------------------
# 2. Bounds
# ---------------------------------------------------------------------------------------------

UNIT_BOUNDED = [
    *cut(("p", "recall", "success", "hit_rate", "f1", "judged", "map", "mrr", "ndcg", "mar")),
    *("map", "mrr", "mar", "r_precision", "ndcg", "rbp", "rbp(gain=binary)", "rbp(p=0.5)"),
    *(f"ndcg@{k}(gain=exp)" for k in CUTOFFS),
    *(f"ndcg@{k}(ideal=retrieved)" for k in CUTOFFS),
    *("ndcg(gain=exp)", "ndcg(ideal=retrieved)"),
]
#: the Metric-object spelling of an option (strings: test_boolean_option_in_metric_string)
GAIN_LEVEL = [rke.metrics.ndcg(k, gain_level=True) for k in (None, 5)]
#: no closed form under ties="expected"
TREC_ONLY_UNIT_BOUNDED = ["bpref", "infap", *cut(("err",))]
CORRELATIONS = ["spearman", "kendall_tau"]
RANKS = cut(("frp", "mean_rank"))  # within [1, k + 1] or null
COUNTS = ["num_ret", "num_rel", "num_rel_ret", "num_q"]
HITS = cut(("hits",))  # within [0, k]


def _k(metric: str) -> int:
    return int(metric.split("@")[1].split("(", maxsplit=1)[0])


def _check_bounds(
    row: dict[str, Any], unit: list[str], *, per_query_row: bool, ties: str, context: str
) -> list[str]:
    bad = []
    for metric in unit:
        value = row[metric]
        if not per_query_row and value is None:
            continue  # the mean over no evaluated query
        if value is None or not (-TOL <= value <= 1 + TOL):
            bad.append(f"{metric} = {value!r}")
    for metric in (m for m in CORRELATIONS if m in row):
        value = row[metric]
        if value is not None and not math.isnan(value) and not (-1 - TOL <= value <= 1 + TOL):
            bad.append(f"{metric} = {value!r}")
    for metric in (m for m in RANKS if m in row):
        value = row[metric]
        if value is not None and not (1 - TOL <= value <= _k(metric) + 1 + TOL):
            bad.append(f"{metric} = {value!r}")
    for metric in (m for m in HITS if m in row):
        value = row[metric]
        if value is None and not per_query_row:
            continue
        if value is None or not (-TOL <= value <= _k(metric) + TOL):
            bad.append(f"{metric} = {value!r}")
        elif per_query_row and ties == "trec" and value != int(value):
            bad.append(f"{metric} = {value!r} is not an integer")
    for metric in (m for m in COUNTS if m in row):
        value = row[metric]
        if not isinstance(value, int) or value < 0:
            bad.append(f"{metric} = {value!r}")
    if per_query_row and "num_rel_ret" in row:
        if row["num_rel_ret"] > min(row["num_ret"], row["num_rel"]):
            bad.append(f"num_rel_ret {row['num_rel_ret']} > min(num_ret, num_rel)")
        if row["num_q"] != 1:
            bad.append(f"num_q = {row['num_q']} for one query")
    return [f"{context}: {line}" for line in bad]


@settings(FAST, max_examples=30)
@given(
    log=logs(),
    ties=st.sampled_from(["trec", "expected"]),
    relevance_level=st.sampled_from([1, 2]),
    missing_queries=st.sampled_from(["skip", "zero"]),
)
def test_bounded_metrics_stay_in_bounds(
    log: Log, ties: str, relevance_level: int, missing_queries: str
) -> None:
    unit = UNIT_BOUNDED + (TREC_ONLY_UNIT_BOUNDED if ties == "trec" else [])
    metrics = [*unit, *GAIN_LEVEL, *CORRELATIONS, *RANKS, *COUNTS, *HITS]
    unit += [metric.name for metric in GAIN_LEVEL]
    options = {"ties": ties, "relevance_level": relevance_level, "missing_queries": missing_queries}
    frame = log.frame()
    bad = []
    for key, row in per_query(frame, metrics, **options).items():
        bad += _check_bounds(row, unit, per_query_row=True, ties=ties, context=f"query {key}")
    summary = evaluate(frame, metrics, **options)
    assert summary.height == 1
    bad += _check_bounds(
        summary.row(0, named=True), unit, per_query_row=False, ties=ties, context="mean"
    )
    assert not bad, f"{options}:\n" + "\n".join(bad)


#: the bounded metrics each preset defines (ranx's rbp uses raw labels: not bounded)
CONVENTION_METRICS = {
    "sklearn": ["ndcg", *cut(("ndcg",))],
    "ranx": [
        *cut(("hit_rate", "success", "p", "recall", "f1", "mrr", "map", "ndcg")),
        *("r_precision", "mrr", "map", "ndcg"),
    ],
    "torchmetrics": [
        *cut(("p", "recall", "hit_rate", "success", "map", "mrr", "ndcg")),
        *("map", "mrr", "ndcg", "r_precision"),
    ],
    "spark": [*cut(("p", "recall", "map", "ndcg")), "map", "ndcg"],
    "recommenders": [*cut(("p", "recall", "map", "ndcg")), "map", "ndcg", "r_precision"],
    "ir_measures": [
        *cut(("p", "recall", "success", "map", "mrr", "ndcg", "judged")),
        *("map", "mrr", "ndcg", "r_precision"),
    ],
}


@pytest.mark.parametrize("convention", sorted(CONVENTION_METRICS))
@settings(FAST, max_examples=25)
@given(log=logs(), ties=st.sampled_from([None, "trec", "expected"]))
def test_convention_metrics_stay_in_bounds(convention: str, log: Log, ties: str | None) -> None:
    unit = list(CONVENTION_METRICS[convention])
    if convention == "ranx" and ties != "expected":
        unit.append("bpref")
    metrics = [*unit, *COUNTS]
    options: dict[str, Any] = {"convention": convention, "ties": ties}
    frame = log.frame()
    tie_mode = ties or ("expected" if convention == "sklearn" else "trec")
    bad = []
    for key, row in per_query(frame, metrics, **options).items():
        bad += _check_bounds(row, unit, per_query_row=True, ties=tie_mode, context=f"query {key}")
    summary = evaluate(frame, metrics, **options)
    assert summary.height == 1
    bad += _check_bounds(
        summary.row(0, named=True), unit, per_query_row=False, ties=tie_mode, context="mean"
    )
    assert not bad, f"{options}:\n" + "\n".join(bad)


# ---------------------------------------------------------------------------------------------
# 3. Invariance
# ---------------------------------------------------------------------------------------------

#: every metric family that accepts ties="expected", and those that do not
EXPECTED_OK = [
    *cut(("p", "recall", "success", "hit_rate", "hits", "f1", "judged", "map", "mrr", "ndcg")),
    *cut(("dcg", "mar", "frp", "mean_rank")),
    *("map", "mrr", "ndcg", "dcg", "mar", "frp", "mean_rank", "r_precision", "rbp"),
    *("ndcg@10(gain=exp)", "ndcg@10(ideal=retrieved)", "rbp(gain=binary)"),
    *("spearman", "kendall_tau", *COUNTS),
]
TREC_ONLY = ["bpref", "infap", "err@5", "err@10"]


def _metrics_for(ties: str) -> list[str]:
    return EXPECTED_OK + (TREC_ONLY if ties == "trec" else [])


@settings(FAST, max_examples=25)
@given(
    log=logs(),
    shift=st.integers(-8, 8),
    scale=st.sampled_from([0.25, 0.5, 1.0, 2.0, 4.0]),
    ties=st.sampled_from(["trec", "expected"]),
    relevance_level=st.sampled_from([1, 2]),
)
def test_positive_affine_map_of_scores_changes_nothing(
    log: Log, shift: int, scale: float, ties: str, relevance_level: int
) -> None:
    frame = log.frame()
    # scores are multiples of 0.25 in [-10, 10]: the result is a multiple of 1/16 below 50 in
    # magnitude, exact in float32, so the order and the ties are exactly the same
    mapped = frame.with_columns(pl.col("score") * scale + float(shift))
    assert mapped.schema == frame.schema
    metrics = _metrics_for(ties)
    options = {"ties": ties, "relevance_level": relevance_level}
    assert_same_per_query(
        per_query(mapped, metrics, **options),
        per_query(frame, metrics, **options),
        f"score * {scale} + {shift}, {options}",
    )


@settings(FAST, max_examples=20)
@given(pair=system_pairs(), ties=st.sampled_from(["trec", "expected"]))
def test_by_groups_together_equal_each_alone(pair: tuple[Log, Log], ties: str) -> None:
    systems = {"A": pair[0].frame(), "B": pair[1].frame()}
    both = pl.concat(
        [frame.with_columns(system=pl.lit(name)) for name, frame in systems.items()]
    ).select("system", "query", "item", "score", "relevance")
    metrics = _metrics_for(ties)
    together = per_query(both, metrics, by="system", ties=ties)
    for name, frame in systems.items():
        alone = per_query(frame, metrics, ties=ties)
        mine = {key[1:]: row for key, row in together.items() if key[0] == name}
        assert_same_per_query(mine, alone, f"system {name}, ties={ties}")


# ---------------------------------------------------------------------------------------------
# 4. NDCG at its extremes
# ---------------------------------------------------------------------------------------------

NDCG_VARIANTS = [
    "ndcg",
    *cut(("ndcg",)),
    "ndcg(gain=exp)",
    "ndcg@3(gain=exp)",
    "ndcg(ideal=retrieved)",
    "ndcg@5(ideal=retrieved)",
    "ndcg(discount=jarvelin)",
    "ndcg@3(log_base=10)",
]

ITEM_IDS = st.text(alphabet="abcxyz019", min_size=1, max_size=4)


@st.composite
def ideal_queries(draw: st.DrawFn) -> pl.DataFrame:
    """Queries ranked in ideal order: every positive label retrieved, distinct scores."""
    rows = []
    for q in range(draw(st.integers(1, 4))):
        positive = draw(st.lists(st.integers(1, 4), min_size=1, max_size=8))
        zero_gain = draw(st.lists(st.sampled_from([0, -1, None]), max_size=5))
        labels = sorted(positive, reverse=True) + zero_gain
        items = draw(st.lists(ITEM_IDS, min_size=len(labels), max_size=len(labels), unique=True))
        top = draw(st.integers(-5, 20))
        step = draw(st.sampled_from([0.5, 1.0, 3.0]))
        rows += [
            (f"q{q}", item, top - step * i, label)
            for i, (item, label) in enumerate(zip(items, labels, strict=True))
        ]
        # judged rows that are not retrieved, with no gain: they do not change the ideal DCG
        extra = draw(st.lists(st.sampled_from([0, -1]), max_size=3))
        rows += [(f"q{q}", f"unretrieved{j}", None, label) for j, label in enumerate(extra)]
    order = draw(st.permutations(range(len(rows))))
    return pl.DataFrame(
        [rows[i] for i in order],
        schema={"query": pl.String, "item": pl.String, "score": pl.Float64, "relevance": pl.Int64},
        orient="row",
    )


@settings(FAST, max_examples=40)
@given(
    frame=ideal_queries(),
    ties=st.sampled_from(["trec", "expected"]),
    relevance_level=st.sampled_from([1, 2]),
)
def test_ndcg_is_one_in_ideal_order(frame: pl.DataFrame, ties: str, relevance_level: int) -> None:
    options = {"ties": ties, "relevance_level": relevance_level}
    got = per_query(frame, NDCG_VARIANTS, **options)
    assert len(got) == frame["query"].n_unique()
    bad = [
        f"{key} {metric} = {value!r}"
        for key, row in got.items()
        for metric, value in row.items()
        if not same(value, 1.0)
    ]
    summary = evaluate(frame, NDCG_VARIANTS, **options).row(0, named=True)
    bad += [f"mean {m} = {v!r}" for m, v in summary.items() if not same(v, 1.0)]
    for convention in ("sklearn", "torchmetrics", "ranx"):
        values = evaluate(frame, ["ndcg", "ndcg@5"], convention=convention, ties=ties)
        bad += [
            f"{convention} {m} = {v!r}"
            for m, v in values.row(0, named=True).items()
            if not same(v, 1.0)
        ]
    assert not bad, f"{options}:\n" + "\n".join(bad)


@st.composite
def gainless_queries(draw: st.DrawFn) -> pl.DataFrame:
    """Queries whose retrieved rows have no positive label (judged positives unretrieved)."""
    rows = []
    for q in range(draw(st.integers(1, 4))):
        retrieved = draw(st.lists(st.sampled_from([0, -1, None]), min_size=1, max_size=8))
        if all(label is None for label in retrieved):
            retrieved[0] = 0  # at least one judged row, so the query is evaluated
        unretrieved = draw(st.lists(st.sampled_from([0, 1, 2, 3, -1]), max_size=4))
        n = len(retrieved) + len(unretrieved)
        items = draw(st.lists(ITEM_IDS, min_size=n, max_size=n, unique=True))
        scores = draw(
            st.lists(
                st.sampled_from([0.0, 0.5, 1.0, 2.0]),
                min_size=len(retrieved),
                max_size=len(retrieved),
            )
        )
        labels = retrieved + unretrieved
        rows += [
            (f"q{q}", item, scores[i] if i < len(retrieved) else None, labels[i])
            for i, item in enumerate(items)
        ]
    return pl.DataFrame(
        rows,
        schema={"query": pl.String, "item": pl.String, "score": pl.Float64, "relevance": pl.Int64},
        orient="row",
    )


@settings(FAST, max_examples=40)
@given(frame=gainless_queries(), ties=st.sampled_from(["trec", "expected"]))
def test_ndcg_is_zero_without_a_retrieved_gain(frame: pl.DataFrame, ties: str) -> None:
    metrics = [*NDCG_VARIANTS, "dcg", *cut(("dcg",))]
    got = per_query(frame, metrics, ties=ties)
    assert len(got) == frame["query"].n_unique()
    bad = [
        f"{key} {metric} = {value!r}"
        for key, row in got.items()
        for metric, value in row.items()
        if value != 0.0
    ]
    for convention in ("sklearn", "torchmetrics", "ranx", "spark"):
        values = evaluate(frame, ["ndcg", "ndcg@5"], convention=convention, ties=ties)
        bad += [
            f"{convention} {m} = {v!r}" for m, v in values.row(0, named=True).items() if v != 0.0
        ]
    assert not bad, f"ties={ties}:\n" + "\n".join(bad)


def test_ndcg_extremes_hand_example() -> None:
    frame = pl.DataFrame(
        {
            "query": ["ideal"] * 3 + ["none"] * 3,
            "item": ["a", "b", "c", "a", "b", "c"],
            "score": [3.0, 2.0, 1.0, 3.0, 2.0, None],
            "relevance": [2, 1, 0, 0, None, 3],
        }
    )
    got = evaluate(frame, ["ndcg", "ndcg@2"], per_query=True).sort("query")
    assert got.rows() == [("ideal", 1.0, 1.0), ("none", 0.0, 0.0)]


# ---------------------------------------------------------------------------------------------
# Regression: a bug found while writing these tests (boolean options in metric strings)
# ---------------------------------------------------------------------------------------------


def test_boolean_option_in_metric_string() -> None:
    frame = pl.DataFrame(
        {"query": ["q", "q"], "item": ["a", "b"], "score": [2.0, 1.0], "relevance": [1, 2]}
    )
    metric = rke.metrics.ndcg(5, gain_level=True)
    assert metric.name == "ndcg@5(gain_level=True)"
    want = evaluate(frame, [metric], relevance_level=2)
    # README: "Every metric option can be given three ways", a metric string among them.
    # Metric strings are lower-cased before parsing, so "True" arrives as "true".
    for spec in (metric.name, "ndcg@5(gain_level=true)"):
        assert evaluate(frame, [spec], relevance_level=2).rows() == want.rows()
    off = evaluate(frame, ["ndcg@5(gain_level=false)"], relevance_level=2)
    assert off.rows() == evaluate(frame, ["ndcg@5"], relevance_level=2).rows()
    assert off.rows() != want.rows()
