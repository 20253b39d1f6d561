"""The expression namespace inside ``group_by().agg()`` is the frame path, group by group.

* Every metric family under every convention preset and both tie modes gives, per group, what
  ``evaluate(..., by=<the group keys>)`` gives (the frame path is checked against trec_eval,
  pytrec_eval and brute force elsewhere).
* A group holding several queries is evaluated query by query: grouping by query, by system,
  and by system and date all agree with ``evaluate``; a hand-worked mean proves the group is not
  ranked as one list.
* ``query=`` names the query column, ``query=None`` makes each group one list, and a missing
  query column is our error saying so.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval._names.registry import parse_metrics
from polars_rankeval.conventions import CONVENTIONS

# One metric string per family (and the cut/uncut forms where both exist).
FAMILIES = [
    "p@3",
    "recall@5",
    "success@2",
    "hit_rate@2",
    "hits@3",
    "f1@3",
    "judged@3",
    "map",
    "map@3",
    "mrr",
    "mrr@3",
    "mar@4",
    "ndcg",
    "ndcg@3",
    "dcg@3",
    "err@5",
    "frp@3",
    "mean_rank",
    "r_precision",
    "bpref",
    "infap",
    "rbp",
    "spearman",
    "kendall_tau",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "num_q",
]
NO_EXPECTED_TIES = {"bpref", "infap", "err@5"}


def _log(seed: int = 7) -> pl.DataFrame:
    """Two systems × two dates × 12 queries: ties, graded and negative labels, unjudged and
    unretrieved rows, a query with no relevant item, one with nothing retrieved and one with no
    judgment; the same items recur across queries, systems and dates."""
    rng = np.random.default_rng(seed)
    rows = []
    for system in ("bm25", "neural"):
        for date in ("2026-01-01", "2026-01-02"):
            for q in range(12):
                n = int(rng.integers(1, 9))
                items = rng.choice(12, size=n, replace=False)
                for item in items:
                    retrieved = q != 10 and rng.random() < 0.85
                    judged = q != 11 and rng.random() < 0.8
                    label = int(rng.choice([-1, 0, 0, 1, 2, 3])) if judged else None
                    if q == 9 and label is not None:
                        label = min(label, 0)
                    score = float(rng.integers(0, 4)) / 2 if retrieved else None
                    rows.append((system, date, f"q{q}", f"d{item}", score, label))
    return pl.DataFrame(
        rows, schema=["system", "date", "query", "item", "score", "relevance"], orient="row"
    )


def _supported(convention: str) -> list[str]:
    families = CONVENTIONS[convention].families
    if families is None:
        return FAMILIES
    keep = []
    for metric in FAMILIES:
        try:
            parse_metrics(metric, CONVENTIONS[convention])
        except rke.InvalidOptionError:
            continue
        keep.append(metric)
    return keep


def _assert_same(frame: pl.DataFrame, grouped: pl.DataFrame, keys: list[str]) -> None:
    """Frame-path rows equal the expression rows; extra expression groups are empty."""
    joined = frame.join(grouped, on=keys, how="left", suffix="_expr")
    assert joined.height == frame.height
    for name in frame.columns:
        if name in keys:
            continue
        for want, got in zip(joined[name], joined[f"{name}_expr"], strict=True):
            if want is None or (isinstance(want, float) and math.isnan(want)):
                assert got is None or math.isnan(got), name
            else:
                assert got == pytest.approx(want, rel=1e-12, abs=1e-12), name
    # Groups without an evaluated query have no frame row: null means, zero counts.
    extra = grouped.join(frame.select(keys), on=keys, how="anti")
    for name in grouped.columns:
        if name not in keys:
            assert all(value in (None, 0) for value in extra[name]), name


@pytest.mark.parametrize("ties", ["trec", "expected"])
@pytest.mark.parametrize("convention", sorted(CONVENTIONS))
def test_every_family_and_preset_matches_the_frame_path(convention: str, ties: str) -> None:
    log = _log()
    metrics = _supported(convention)
    if ties == "expected":
        metrics = [metric for metric in metrics if metric not in NO_EXPECTED_TIES]
    assert metrics
    keys = ["system", "date"]
    with warnings.catch_warnings():
        # gdeval leaves out queries with nothing relevant and says so: the same on both paths
        warnings.simplefilter("ignore", rke.EmptyQueriesWarning)
        frame = rke.evaluate(log, metrics, by=keys, convention=convention, ties=ties)
        grouped = log.group_by(keys).agg(
            pl.col("relevance").rank_eval.metric(metric, convention=convention, ties=ties)
            for metric in metrics
        )
    assert frame.height > 0
    _assert_same(frame, grouped, keys)


@pytest.mark.parametrize("metric", sorted(NO_EXPECTED_TIES))
def test_metrics_without_closed_form_refuse_expected_ties_on_both_paths(metric: str) -> None:
    log = _log()
    with pytest.raises(rke.InvalidOptionError, match="ties='expected'"):
        rke.evaluate(log, [metric], by="system", ties="expected")
    with pytest.raises(rke.InvalidOptionError, match="ties='expected'"):
        log.group_by("system").agg(pl.col("relevance").rank_eval.metric(metric, ties="expected"))


@pytest.mark.parametrize(
    "keys", [["system", "query"], ["system"], ["system", "date"], ["date", "system", "query"]]
)
def test_groupings_match_evaluate_by(keys: list[str]) -> None:
    log = _log(3)
    if "date" not in keys:  # one run per system: a single day
        log = log.filter(pl.col("date") == "2026-01-01")
    metrics = ["ndcg@3", "map", "mrr", "p@3", "bpref", "num_q"]
    by = [key for key in keys if key != "query"]
    frame = rke.evaluate(log, metrics, by=by, per_query="query" in keys)
    grouped = (
        log.lazy()
        .group_by(keys)
        .agg(
            pl.col("relevance").rank_eval.ndcg(k=3),
            pl.col("relevance").rank_eval.map(),
            pl.col("relevance").rank_eval.mrr(),
            pl.col("relevance").rank_eval.precision(k=3),
            pl.col("relevance").rank_eval.bpref(),
            rke.metric_expr("num_q"),
        )
    )
    if "query" in keys:
        frame = frame.drop("num_q")  # per query, num_q is 1 by definition
        grouped = grouped.drop("num_q")
    _assert_same(frame, grouped.collect(), keys)


# Hand-worked: system a, query 1 ranks x (0), y (1): RR 1/2; query 2 ranks x (1): RR 1. Ranked
# as one list of the system (the old bug) it would be x(q1)=0.9, y=0.8, x(q2)=0.7: RR 1/2.
HAND = pl.DataFrame(
    {
        "system": ["a", "a", "a", "b", "b"],
        "query": [1, 1, 2, 1, 2],
        "item": ["x", "y", "x", "x", "x"],
        "score": [0.9, 0.8, 0.7, 0.5, 0.4],
        "relevance": [0, 1, 1, 0, 1],
    }
)


def test_group_of_several_queries_is_the_mean_over_its_queries() -> None:
    out = HAND.group_by("system").agg(pl.col("relevance").rank_eval.mrr()).sort("system")
    assert out["mrr"].to_list() == [0.75, 0.5]
    # In select() the whole frame is one group, still evaluated query by query.
    only_a = HAND.filter(pl.col("system") == "a")
    assert only_a.select(pl.col("relevance").rank_eval.mrr()).item() == 0.75


def test_query_none_ranks_each_group_as_one_list() -> None:
    lists = pl.DataFrame(
        {
            "system": ["a", "a", "a", "b", "b"],
            "item": ["x", "y", "z", "x", "y"],
            "score": [0.9, 0.8, 0.7, 0.5, 0.4],
            "relevance": [0, 0, 1, 1, 0],
        }
    )
    out = lists.group_by("system").agg(pl.col("relevance").rank_eval.mrr(query=None)).sort("system")
    assert out["mrr"].to_list() == pytest.approx([1 / 3, 1.0])
    # Without query=None the missing query column is an error, not a guess.
    with pytest.raises(rke.ColumnNotFoundError, match="query=None"):
        lists.group_by("system").agg(pl.col("relevance").rank_eval.mrr())
    # The same item twice in one list is a duplicate, not a silent number.
    with pytest.raises(rke.DuplicateItemError):
        HAND.drop("query").group_by("system").agg(pl.col("relevance").rank_eval.mrr(query=None))


def test_custom_query_column_and_expressions() -> None:
    renamed = HAND.rename({"query": "qid", "score": "s"})
    out = (
        renamed.group_by("system")
        .agg(pl.col("relevance").rank_eval.mrr(query="qid", score=pl.col("s") * 2))
        .sort("system")
    )
    assert out["mrr"].to_list() == [0.75, 0.5]


def test_missing_query_column_says_to_pass_query() -> None:
    renamed = HAND.rename({"query": "qid"})
    with pytest.raises(rke.ColumnNotFoundError, match=r"query=.*query=None") as info:
        renamed.group_by("system").agg(pl.col("relevance").rank_eval.mrr())
    assert "python_udf" not in str(info.value)


def test_missing_score_column_names_the_option() -> None:
    with pytest.raises(rke.ColumnNotFoundError, match=r"'points' \(option score=\)"):
        HAND.group_by("system").agg(pl.col("relevance").rank_eval.mrr(score="points"))


@pytest.mark.parametrize(
    ("option", "value"),
    [("by", "system"), ("per_query", True), ("n_buckets", 2), ("progress", True)],
)
def test_frame_only_options_are_refused_with_a_reason(option: str, value: object) -> None:
    with pytest.raises(rke.InvalidOptionError, match=rf"{option}=.*group_by"):
        HAND.group_by("system").agg(pl.col("relevance").rank_eval.mrr(**{option: value}))


def test_every_setting_applies_in_the_expression_path() -> None:
    # Under torchmetrics' preset (unretrieved="drop"), the unretrieved relevant row is gone:
    # recall@3 = 1/1; under trec_eval it counts toward R: 1/2.
    log = pl.DataFrame(
        {
            "query": ["q", "q", "q"],
            "item": ["a", "b", "c"],
            "score": [2.0, 1.0, None],
            "relevance": [1, 0, 1],
        }
    )
    for convention, want in (("torchmetrics", 1.0), ("trec_eval", 0.5)):
        frame = rke.evaluate(log, ["recall@3"], convention=convention)["recall@3"][0]
        expression = log.group_by("query").agg(
            pl.col("relevance").rank_eval.recall(k=3, convention=convention)
        )["recall@3"][0]
        assert frame == expression == want
    # missing_queries="zero" scores a judged query with nothing retrieved as 0.
    with_missing = pl.concat(
        [log, pl.DataFrame({"query": ["r"], "item": ["a"], "score": [None], "relevance": [1]})],
        how="vertical_relaxed",
    )
    for missing, want in (("skip", 1.0), ("zero", 0.5)):
        value = with_missing.select(
            pl.col("relevance").rank_eval.mrr(missing_queries=missing)
        ).item()
        assert value == want


def test_a_sweep_is_refused_in_one_expression() -> None:
    with pytest.raises(rke.InvalidOptionError, match="one expression per cutoff"):
        HAND.group_by("system").agg(pl.col("relevance").rank_eval.ndcg(k=[1, 3]))


def _with_nan(log: pl.DataFrame) -> pl.DataFrame:
    nan = log.with_columns(
        pl.when(pl.int_range(pl.len()) % 7 == 0)
        .then(float("nan"))
        .otherwise(pl.col("score"))
        .alias("score")
    )
    return nan


@pytest.mark.parametrize(
    ("setting", "value", "metric"),
    [
        ("relevance_level", 2, "p@3"),
        ("negative_labels", "nonrelevant", "bpref"),
        ("unretrieved", "drop", "recall@5"),
        ("missing_queries", "zero", "map"),
        ("ties", "expected", "ndcg@3"),
        ("convention", "ranx", "ndcg@3"),
        ("nan_scores", "last", "mrr"),
        ("duplicates", "max_score", "mrr"),
    ],
)
def test_each_setting_applies_on_both_paths(setting: str, value: object, metric: str) -> None:
    log = _log(11).filter(pl.col("date") == "2026-01-01").drop("date")
    if setting == "nan_scores":
        log = _with_nan(log)
    if setting == "duplicates":
        # Each repeated pair comes back with a higher score and the label 3.
        again = log.filter(pl.int_range(pl.len()) % 5 == 0).with_columns(
            pl.col("score") + 10, pl.lit(3, dtype=pl.Int64).alias("relevance")
        )
        log = pl.concat([log, again])
    frame = rke.evaluate(log, [metric], by="system", **{setting: value})
    grouped = log.group_by("system").agg(
        pl.col("relevance").rank_eval.metric(metric, **{setting: value})
    )
    _assert_same(frame, grouped, ["system"])
    if setting not in ("nan_scores", "duplicates"):  # those raise without the setting
        default = rke.evaluate(log, [metric], by="system")
        assert not frame.equals(default), "the setting must change this example"
    else:
        with pytest.raises(rke.RankEvalError):
            log.group_by("system").agg(pl.col("relevance").rank_eval.metric(metric))
