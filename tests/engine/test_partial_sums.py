"""Summaries in passes from partial sums (``per_query=False``, ``n_buckets`` > 1).

Each pass's per-query rows are reduced to per-system sums and counts before the passes are
combined. The sums are checked against numpy on hand-made values; the evaluation in passes
against the one-pass evaluation of the same log, for every metric family, on generated logs
with ties, graded and negative labels, unjudged and unretrieved rows and empty queries.
"""

from __future__ import annotations

import importlib
import math
import warnings

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from polars_rankeval._engine.partial import PassSums, combined, partial_sums
from polars_rankeval._names.registry import resolve_metrics
from tests.properties.test_differential import logs

# the passes (ROWS_PER_PASS, RESCAN_PASSES) live in their own module
passes_module = importlib.import_module("polars_rankeval._engine.passes")

# One metric (or more) of every family, with the options they need.
EVERY_FAMILY = [
    *("p@5", "recall@5", "success@5", "hit_rate@5", "hits@5", "f1@5", "judged@5", "map"),
    *("mrr", "mar", "ndcg", "dcg", "err", "frp", "mean_rank", "r_precision", "bpref", "infap"),
    *("rbp", "bing", "g", "ndcg_rel", "rndcg", "rbp_resid", "11pt_avg", "gm_map", "gm_bpref"),
    *("spearman", "kendall_tau", "num_ret", "num_rel", "num_rel_ret", "num_q", "set_p"),
    *("set_recall", "set_map", "set_f", "set_relative_p", "relative_p@5", "rprec_mult"),
    *("utility", "num_nonrel_judged_ret", "unj@5", "iprec_at_recall(level=0.5)", "map(rel=2)"),
    *("p@5(judged_only=True)", "novelty@5", "surprisal@5", "unseen@5", "arp@5", "aplt@5"),
    *("aclt@5", "coverage@5", "entropy@5", "gini@5", "personalization@5", "auc", "fall_out@5"),
    *("gauc", "ild@5", "ils@5", "categorical_diversity@5(category=genre)", "serendipity@5"),
    *("q_measure", "ncu", "o_measure", "p_measure", "p_plus", "err_ntcir", "nerr_ntcir"),
    *(
        "ndcg_orig",
        "msndcg",
        "compat",
        "accuracy",
        "ncg",
        "inst(max_rel=3)",
        "insq(max_rel=3)",
        "bpm@5(max_rel=3)",
    ),
    *(
        "sdcg@5(max_rel=3)",
        "nerr8@5(max_rel=3)",
        "nerr9@5(max_rel=3)",
        "nerr10(max_rel=3)",
        "nerr11(max_rel=3)",
    ),
    *("alpha_ndcg@5", "alpha_dcg@5", "err_ia@5", "nerr_ia@5", "nrbp", "nnrbp", "map_ia"),
    *("p_ia@5", "strec@5"),
]
N_ITEMS = 30


def _same(left: pl.DataFrame, right: pl.DataFrame) -> None:
    # sums in another order differ in the last bits
    assert_frame_equal(left, right, rel_tol=1e-12, abs_tol=1e-12)


def _generated(seed: int = 5, n_queries: int = 60) -> tuple[pl.DataFrame, ...]:
    """Two systems' runs joined with graded subtopic qrels, and train and items tables.

    Scores are multiples of 0.25 (ties); labels -1..3; some queries have no judgments, some
    only labels <= 0 (empty queries), some rows are unjudged, some judged rows unretrieved.
    """
    rng = np.random.default_rng(seed)
    rows = []
    for system in ("a", "b"):
        for query in range(n_queries):
            depth = int(rng.integers(0, 12))
            for item in rng.choice(N_ITEMS, size=depth, replace=False):
                score = float(np.round(rng.random() * 4) / 4)
                rows.append((system, f"q{query}", int(item), score))
    run = pl.DataFrame(rows, schema=["system", "query", "item", "score"], orient="row")
    judged = []
    for query in range(n_queries):
        if query % 9 == 0:  # no judgments: not evaluated
            continue
        for item in rng.choice(N_ITEMS, size=int(rng.integers(1, 10)), replace=False):
            label = int(rng.choice([-1, 0, 0, 1, 2, 3]))
            if query % 7 == 0:  # nothing relevant
                label = min(label, 0)
            judged.extend(
                (f"q{query}", int(item), subtopic, label)
                for subtopic in range(1 + int(rng.integers(0, 2)))
            )
    qrels = pl.DataFrame(judged, schema=["query", "item", "subtopic", "relevance"], orient="row")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # coverage: some queries have no judgments
        log = rke.join_run_qrels(run, qrels, by="system").collect()
    train = pl.DataFrame(
        {
            "query": [f"q{q}" for q in rng.integers(0, n_queries, 300)],
            "item": rng.integers(0, N_ITEMS, 300),
        }
    )
    items = pl.DataFrame(
        {
            "item": list(range(N_ITEMS - 2)),  # two items have no features
            "embedding": rng.normal(size=(N_ITEMS - 2, 3)).tolist(),
            "genre": [f"g{i % 4}" for i in range(N_ITEMS - 2)],
        }
    )
    return log, train, items


@pytest.fixture(scope="module")
def generated() -> tuple[pl.DataFrame, ...]:
    return _generated()


# ---- the sums against numpy ------------------------------------------------------------------


def test_partial_sums_add_up_to_each_summary_rule() -> None:
    resolved = resolve_metrics(["map", "gm_map", "spearman", "num_ret"])
    values = {
        "map": [0.5, None, 0.25, 0.0, 1.0, None],
        "gm_map": [0.5, None, 0.0, 1e-9, 0.75, 0.1],
        "spearman": [0.5, float("nan"), None, -0.5, 1.0, float("nan")],
        "num_ret": [3, 4, None, 10, 0, 2],
    }
    rows = pl.DataFrame({"system": ["x", "x", "x", "x", "y", "y"], **values})
    # two passes: the first three rows and the last three
    parts = [
        partial_sums(rows[:3], resolved, ["system"]),
        partial_sums(rows[3:], resolved, ["system"]),
    ]
    out = combined(pl.concat(parts), resolved, ["system"]).sort("system")

    def expected(system_rows: slice) -> dict[str, float]:
        pick = {name: np.array(v[system_rows], dtype=float) for name, v in values.items()}
        kept = pick["spearman"][~np.isnan(pick["spearman"])]
        return {
            "map": float(np.nanmean(pick["map"])),
            # trec_eval's gm: exp(mean(log(max(v, 1e-5)))) over the non-null values
            "gm_map": math.exp(
                np.mean(np.log(np.maximum(pick["gm_map"][~np.isnan(pick["gm_map"])], 1e-5)))
            ),
            "spearman": float(np.mean(kept)) if kept.size else math.nan,
            "num_ret": float(np.nansum(pick["num_ret"])),
        }

    for row, system_rows in zip(out.iter_rows(named=True), [slice(0, 4), slice(4, 6)], strict=True):
        want = expected(system_rows)
        for name in values:
            assert row[name] == pytest.approx(want[name], rel=1e-12), (row["system"], name)
    assert out["__rke_rows"].to_list() == [4, 2]


def test_a_group_without_values_is_null_and_its_sum_zero() -> None:
    resolved = resolve_metrics(["map", "num_ret"])
    rows = pl.DataFrame({"map": [None, None]}, schema={"map": pl.Float64}).with_columns(
        pl.lit(None, dtype=pl.Int64).alias("num_ret")
    )
    out = combined(partial_sums(rows, resolved, []), resolved, [])
    assert out.row(0, named=True) == {"__rke_rows": 2, "map": None, "num_ret": 0}


# ---- passes against one pass -----------------------------------------------------------------


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("by", ["system", None])
def test_every_family_in_passes_equals_one_pass(generated, lazy: bool, by: str | None) -> None:
    log, train, items = generated
    metrics = [*EVERY_FAMILY, *(["unexpectedness@5(baseline=a)"] if by else [])]
    if by is None:  # one system
        log = log.filter(pl.col("system") == "a").drop("system")
    options = {"by": by, "train": train, "items": items, "catalog": N_ITEMS, "tie_warning": None}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning expected: none in one pass either
        plain = rke.evaluate(log, metrics, **options)
        data = log.lazy() if lazy else log
        passes = rke.evaluate(data, metrics, n_buckets=5, **options)
        if lazy:
            assert isinstance(passes, pl.LazyFrame)
            assert passes.collect_schema() == plain.schema
            passes = passes.collect()
    assert plain.height == (2 if by else 1)
    _same(passes, plain)


@pytest.mark.parametrize(
    "options",
    [
        {"missing_queries": "zero"},
        {"ties": "expected"},
        {"negative_labels": "nonrelevant", "unretrieved": "drop"},
        {"convention": "ranx"},
    ],
)
def test_conventions_in_passes_equal_one_pass(generated, options: dict) -> None:
    log, _, _ = generated
    metrics = ["ndcg@5", "map", "mrr", "p@5", "recall@10"]
    if "convention" not in options:  # ranx has none of these
        metrics += ["num_q", "gm_map", "spearman"]
    plain = rke.evaluate(log, metrics, by="system", tie_warning=None, **options)
    passes = rke.evaluate(log.lazy(), metrics, by="system", n_buckets=5, **options).collect()
    _same(passes, plain)


@settings(max_examples=40, deadline=None)
@given(log=logs(), n_buckets=st.sampled_from([2, 3, 5]))
def test_generated_logs_in_passes_equal_one_pass(log, n_buckets: int) -> None:
    frame = log.frame()
    metrics = ["ndcg@3", "map", "mrr", "p@2", "bpref", "num_q", "num_ret", "gm_map", "kendall_tau"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # empty evaluations warn in both
        plain = rke.evaluate(frame, metrics)
        passes = rke.evaluate(frame.lazy(), metrics, n_buckets=n_buckets).collect()
    _same(passes, plain)


# ---- warnings once, and what the passes keep -------------------------------------------------


def test_dropped_queries_warn_once_with_the_one_pass_count(generated) -> None:
    log, _, _ = generated
    metrics = ["ndcg@5", "map", "coverage@5"]
    with pytest.warns(rke.EmptyQueriesWarning) as one:
        plain = rke.evaluate(
            log, metrics, by="system", empty_queries="drop", catalog=N_ITEMS, tie_warning=None
        )
    with pytest.warns(rke.EmptyQueriesWarning) as many:
        passes = rke.evaluate(
            log.lazy(),
            metrics,
            by="system",
            empty_queries="drop",
            catalog=N_ITEMS,
            n_buckets=5,
            tie_warning=None,  # a LazyFrame is tie-checked too: this test counts the other one
        ).collect()
    _same(passes, plain)
    assert [str(w.message) for w in many] == [str(w.message) for w in one]
    assert len(many) == 1


def test_tie_warning_once_in_passes(generated) -> None:
    log, _, _ = generated
    with pytest.warns(rke.TieWarning) as one:
        plain = rke.evaluate(log, ["p@1", "mrr"], by="system", tie_warning=0.0)
    with pytest.warns(rke.TieWarning) as many:
        passes = rke.evaluate(log, ["p@1", "mrr"], by="system", tie_warning=0.0, n_buckets=5)
    _same(passes, plain)
    assert len(many) == 1
    assert str(many[0].message) == str(one[0].message)


def test_nothing_evaluated_warns_once_and_gives_the_one_pass_row(generated) -> None:
    log, _, _ = generated
    # no judgment (map, num_q) and no retrieved row (coverage, label-free, evaluates every
    # ranked list: a judged-free log alone would still give it lists)
    unjudged = log.filter(pl.col("system") == "a").with_columns(
        pl.lit(None, dtype=pl.Int64).alias("relevance"),
        pl.lit(None, dtype=log.schema["score"]).alias("score"),
    )
    metrics = ["map", "num_q", "coverage@5"]
    with pytest.warns(rke.EmptyEvaluationWarning):
        plain = rke.evaluate(unjudged, metrics, catalog=N_ITEMS)
    with pytest.warns(rke.EmptyEvaluationWarning) as many:
        passes = rke.evaluate(unjudged.lazy(), metrics, catalog=N_ITEMS, n_buckets=4).collect()
    _same(passes, plain)
    assert len(many) == 1


def test_passes_keep_one_row_per_system_not_per_query(generated, monkeypatch) -> None:
    log, _, _ = generated
    kept: list[int] = []
    result = PassSums.result

    def recording(self, *args, **kwargs):
        kept.extend(part.height for part in self.parts)
        kept.append(sum(rows.height for rows in self.system_rows))
        return result(self, *args, **kwargs)

    monkeypatch.setattr(PassSums, "result", recording)
    rke.evaluate(log.lazy(), ["ndcg@5", "map"], by="system", n_buckets=5).collect()
    # five passes, each at most one row per system; no per-system metric, no rows kept for it
    assert len(kept) == 6
    assert all(height <= 2 for height in kept[:5])
    assert kept[5] == 0
    kept.clear()
    rke.evaluate(log.lazy(), ["map", "coverage@5"], by="system", n_buckets=5, catalog=30).collect()
    # coverage's reduce reads its per-query values: those rows (and only those) are kept,
    # one per ranked list (coverage, label-free, evaluates every list with a retrieved row)
    ranked = log.filter(pl.col("score").is_not_null())
    evaluated = ranked.select("system", "query").unique().height
    assert kept[5] == evaluated


def test_per_query_in_passes_still_gives_every_query(generated) -> None:
    log, _, _ = generated
    plain = rke.evaluate(log, ["map", "ndcg@5"], by="system", per_query=True)
    passes = rke.evaluate(log.lazy(), ["map", "ndcg@5"], by="system", per_query=True, n_buckets=5)
    _same(passes.collect(), plain)
    assert passes_module.RESCAN_PASSES < 5  # the spilled route was the one taken above
