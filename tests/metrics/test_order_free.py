"""Results do not depend on the rows' order, the engine or the passes: to the last bit.

A Float64 sum rounds after each addition, so a sum over shuffled rows can differ in its
last bit; Polars' streaming engine hands a group's rows over in an order that changes from
run to run. Every metric is evaluated here on a log and on shuffles of it, and the per-query
values and the means must be equal, not close (``DataFrame.equals``).
"""

from __future__ import annotations

import importlib
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval._engine.exact_sum import exact_sum
from polars_rankeval.metrics.interpolated import RECALL_LEVELS
from tests.engine.test_streaming import (
    BEYOND_ACCURACY,
    DIVERSITY_LOG,
    INTENT_AWARE,
    ITEMS,
    METRICS,
    TRAIN,
)

passes_module = importlib.import_module("polars_rankeval._engine.passes")


def _log(seed: int = 7, n_queries: int = 25, depth: int = 40) -> pl.DataFrame:
    """Two systems; ties, graded, negative and missing labels, unretrieved rows, an empty list."""
    rng = np.random.default_rng(seed)
    rows = []
    for system in ("A", "B"):
        for q in range(n_queries):
            n = 1 if q == 0 else depth
            for i in range(n):
                score = float(rng.integers(0, 12)) / 4 if rng.random() > 0.1 else None
                label = int(rng.integers(-1, 4)) if rng.random() > 0.2 else None
                rows.append((system, f"q{q}", f"d{i}", score, 0 if q == 0 else label))
    return pl.DataFrame(
        rows, schema=["system", "query", "item", "score", "relevance"], orient="row"
    )


LOG = _log()


def _shuffles(frame: pl.DataFrame, n: int = 3) -> list[pl.DataFrame]:
    return [frame.sample(fraction=1.0, shuffle=True, seed=seed) for seed in range(n)]


def _assert_identical(got: pl.DataFrame, want: pl.DataFrame) -> None:
    assert got.columns == want.columns
    differ = [c for c in want.columns if not got[c].equals(want[c])]
    assert not differ, f"columns differ in some bit: {differ}"


@pytest.mark.parametrize("per_query", [True, False])
def test_every_metric_is_identical_over_shuffled_rows(per_query: bool) -> None:
    want = rke.evaluate(LOG, METRICS, by="system", per_query=per_query)
    for shuffled in _shuffles(LOG):
        _assert_identical(rke.evaluate(shuffled, METRICS, by="system", per_query=per_query), want)


def test_expected_ties_are_identical_over_shuffled_rows() -> None:
    metrics = ["ndcg@10", "map", "rbp", "mrr", "dcg@5"]
    want = rke.evaluate(LOG, metrics, by="system", per_query=True, ties="expected")
    for shuffled in _shuffles(LOG):
        got = rke.evaluate(shuffled, metrics, by="system", per_query=True, ties="expected")
        _assert_identical(got, want)


def test_beyond_accuracy_is_identical_over_shuffled_rows() -> None:
    tables = {"train": TRAIN, "items": ITEMS, "catalog": 10}
    log = LOG.with_columns(pl.col("item").str.replace("d", "").cast(pl.Int64) % 6)
    log = log.unique(["system", "query", "item"], keep="first", maintain_order=True)
    log = log.with_columns(
        pl.col("item")
        .cast(pl.String)
        .replace_strict({str(i): name for i, name in enumerate("abcdef")}, default="z")
    )
    want = rke.evaluate(log, BEYOND_ACCURACY, by="system", **tables)
    for shuffled in _shuffles(log):
        _assert_identical(rke.evaluate(shuffled, BEYOND_ACCURACY, by="system", **tables), want)


def test_intent_aware_is_identical_over_shuffled_rows() -> None:
    want = rke.evaluate(DIVERSITY_LOG, INTENT_AWARE, by="system", per_query=True)
    for shuffled in _shuffles(DIVERSITY_LOG, 5):
        got = rke.evaluate(shuffled, INTENT_AWARE, by="system", per_query=True)
        _assert_identical(got, want)


def test_means_are_identical_in_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    metrics = ["ndcg@10", "map", "gm_map", "rbp", "err@20", "bpref"]
    want = rke.evaluate(LOG, metrics, by="system")
    monkeypatch.setattr(passes_module, "ROWS_PER_PASS", 300)  # 1,950 rows: several passes
    got = rke.evaluate(LOG.lazy(), metrics, by="system").collect()
    _assert_identical(got, want)


def test_engines_give_identical_values() -> None:
    metrics = ["ndcg@10", "map", "rbp", "err@20"]
    streaming = rke.evaluate(LOG.lazy(), metrics, by="system", per_query=True).collect(
        engine="streaming"
    )
    in_memory = rke.evaluate(LOG.lazy(), metrics, by="system", per_query=True).collect(
        engine="in-memory"
    )
    _assert_identical(streaming, in_memory)


def test_exact_sum_is_the_exact_sum_rounded_once() -> None:
    """math.fsum (an independent exact sum) in every order; past its range, the float sum."""
    import math

    rng = np.random.default_rng(3)
    values = (rng.random(500) / np.log2(rng.integers(2, 1000, 500))).tolist()
    values += [1.0, -1.0 + 1e-16, 1e-12]
    frame = pl.DataFrame({"v": values})
    for shuffled in _shuffles(frame, 4):
        assert shuffled.select(exact_sum(pl.col("v"))).item() == math.fsum(values)
    # a term past 2^47, NaN, inf: the Float64 sum, never a dropped term
    assert pl.DataFrame({"v": [2.0**60, 1.0]}).select(exact_sum(pl.col("v"))).item() == 2.0**60
    nan = pl.DataFrame({"v": [float("nan"), 1.0]}).select(exact_sum(pl.col("v"))).item()
    assert math.isnan(nan)
    inf = pl.DataFrame({"v": [float("inf"), 1.0]}).select(exact_sum(pl.col("v"))).item()
    assert inf == float("inf")
    # tiny sums below the fixed point's resolution: the float sum, not zero
    assert (
        pl.DataFrame({"v": [1e-30, 2e-30]}).select(exact_sum(pl.col("v"))).item() == 1e-30 + 2e-30
    )
    # the filter, and groups
    grouped = (
        pl.DataFrame({"g": [1, 1, 2], "v": [0.5, 0.25, 2.0], "keep": [True, False, True]})
        .group_by("g")
        .agg(exact_sum(pl.col("v"), pl.col("keep")))
        .sort("g")
    )
    assert grouped["v"].to_list() == [0.5, 2.0]


# The interpolated family: 11pt_avg adds its levels' values. pl.sum_horizontal added them in
# an order that changed with the engine and the thread count (1 ulp in per-query 11pt_avg).
INTERPOLATED = [
    "11pt_avg",
    "11pt_avg_.25,.5,.75",
    "11pt_avg(rounding=v9)",
    "iprec_at_recall_0.00",
    "iprec_at_recall(level=0.3)",
    "iprec_at_recall(level=0.3,rounding=v9)",
    "iprec_at_recall(level=1)",
]


def _trec_interpolated(labels: list[int | None], num_rel: int, levels: list[float]) -> float:
    """trec_eval 10's m_11pt_avg.c walk (lround cutoffs), values summed from the top level down.

    ``labels``: the retrieved rows' labels in trec_eval's order (score, docno descending).
    """
    cutoffs = [math.floor(level * num_rel + 0.5) for level in sorted(levels)]  # lround, >= 0
    current = len(cutoffs) - 1
    relevant = [label is not None and label >= 1 for label in labels]
    rel_so_far = sum(relevant)
    while current >= 0 and cutoffs[current] > rel_so_far:
        current -= 1
    total, int_precis = 0.0, 0.0
    for i in range(len(labels), 0, -1):
        if rel_so_far == 0:
            break
        int_precis = max(int_precis, rel_so_far / i)
        if relevant[i - 1]:
            while current >= 0 and rel_so_far == cutoffs[current]:
                total += int_precis
                current -= 1
            rel_so_far -= 1
    while current >= 0:
        total += int_precis
        current -= 1
    return total / len(levels)


def test_interpolated_family_is_identical_over_shuffles_and_engines() -> None:
    want = rke.evaluate(LOG, INTERPOLATED, by="system", per_query=True)
    frames = [LOG, *_shuffles(LOG)]
    for frame in frames:
        for engine in ("in-memory", "streaming"):
            got = rke.evaluate(frame, INTERPOLATED, by="system", per_query=True, engine=engine)
            _assert_identical(got, want)
            lazy = rke.evaluate(frame.lazy(), INTERPOLATED, by="system", per_query=True)
            _assert_identical(lazy.collect(engine=engine), want)
        _assert_identical(
            rke.evaluate(frame, INTERPOLATED, by="system"),
            rke.evaluate(LOG, INTERPOLATED, by="system"),
        )


def test_eleven_pt_avg_is_trec_evals_sum_to_the_last_bit() -> None:
    """Per query, bit for bit, a plain-Python copy of trec_eval's walk (not within a tolerance)."""
    got = rke.evaluate(LOG, ["11pt_avg"], by="system", per_query=True, engine="in-memory")
    values = {(s, q): v for s, q, v in got.iter_rows()}
    checked = 0
    for (system, query), rows in LOG.group_by(["system", "query"]):
        labels = dict(zip(rows["item"], rows["relevance"], strict=True))
        if all(label is None for label in labels.values()) or rows["score"].is_null().all():
            continue  # no judgment or no retrieved row: not evaluated (trec_eval without -c)
        ranked = sorted(
            (
                (item, score)
                for item, score in zip(rows["item"], rows["score"], strict=True)
                if score is not None
            ),
            key=lambda pair: (pair[1], pair[0].encode()),
            reverse=True,
        )
        num_rel = sum(1 for label in labels.values() if label is not None and label >= 1)
        want = _trec_interpolated([labels[item] for item, _ in ranked], num_rel, RECALL_LEVELS)
        assert values[(system, query)] == want, (system, query)
        checked += 1
    assert checked > 40


_THREADS_CHILD = """
import sys, polars as pl, polars_rankeval as rke
log = pl.read_ipc(sys.argv[1])
for engine in ("in-memory", "streaming"):
    rke.evaluate(log, {metrics!r}, by="system", per_query=True, engine=engine).write_ipc(
        sys.argv[2] + engine
    )
"""


@pytest.mark.parametrize("threads", ["1", "3"])
def test_interpolated_family_does_not_depend_on_the_thread_count(
    tmp_path: Path, threads: str
) -> None:
    LOG.write_ipc(tmp_path / "log.arrow")
    child = tmp_path / "child.py"
    child.write_text(_THREADS_CHILD.format(metrics=INTERPOLATED))
    env = {**os.environ, "POLARS_MAX_THREADS": threads}
    subprocess.run(
        [sys.executable, str(child), str(tmp_path / "log.arrow"), str(tmp_path / "out-")],
        env=env,
        check=True,
        timeout=120,
    )
    want = rke.evaluate(LOG, INTERPOLATED, by="system", per_query=True)
    for engine in ("in-memory", "streaming"):
        _assert_identical(pl.read_ipc(tmp_path / f"out-{engine}"), want)


# Polars divides a column of two or more rows by a scalar as x * (1 / k), which rounds twice:
# p@10 of 3 hits was 0.30000000000000004 among other queries and 0.3 (trec_eval's 3 / 10) for
# a query alone, or alone in its hash bucket, so the last bit followed n_buckets.
_QUOTIENTS = [
    "p@10",
    "p@3",
    "judged@10",
    "unj@3",
    "11pt_avg_.1,.3",
    "ncu(stop=rank,gamma=0.7)",
    "ndcg_orig(b=2)",
    "compat(p=0.8)",
    "sdcg@3(max_rel=3)",
    "bpm@3(max_rel=3)",
]


def test_a_query_alone_gets_the_same_bits_as_among_others() -> None:
    names = [*METRICS, *_QUOTIENTS]
    log = LOG.filter(pl.col("system") == "A").drop("system")
    together = rke.evaluate(log, names, per_query=True)
    for query in ["q3", "q7", "q11"]:
        alone = rke.evaluate(log.filter(pl.col("query") == query), names, per_query=True)
        _assert_identical(alone, together.filter(pl.col("query") == query))
    # the quotients over every query of three logs
    for seed in range(3):
        log = _log(seed).filter(pl.col("system") == "A").drop("system")
        together = rke.evaluate(log, _QUOTIENTS, per_query=True)
        for query in together["query"]:
            alone = rke.evaluate(log.filter(pl.col("query") == query), _QUOTIENTS, per_query=True)
            _assert_identical(alone, together.filter(pl.col("query") == query))


def test_precision_is_the_c_quotient() -> None:
    """trec_eval's P_10 is (double) 3 / (double) 10 = 0.3, not 3 * 0.1."""
    rows = [(q, f"d{i}", 10.0 - i, int(i < 3)) for q in ("q1", "q2", "q3") for i in range(10)]
    log = pl.DataFrame(rows, schema=["query", "item", "score", "relevance"], orient="row")
    out = rke.evaluate(log, ["p@10", "P_10", "judged@10"], per_query=True)
    assert out["p@10"].to_list() == [3 / 10] * 3
    assert out["P_10"].to_list() == [3 / 10] * 3
    assert rke.evaluate(log, ["p@10"]).item() == 3 / 10


def test_beyond_accuracy_lists_get_the_same_bits_alone() -> None:
    """Per-list metrics divided by k (unseen@k, surprisal@k, categorical_diversity@k)."""
    names = ["unseen@5", "surprisal@5", "categorical_diversity@5(category=genre)", "ild@5"]
    tables = {"train": TRAIN, "items": ITEMS}
    for seed in range(2):
        log = _log(seed, n_queries=12).filter(pl.col("system") == "A").drop("system")
        log = log.with_columns(pl.col("item").str.replace("d", "").cast(pl.Int64) % 6)
        log = log.unique(["query", "item"], keep="first", maintain_order=True)
        log = log.with_columns(
            pl.col("item")
            .cast(pl.String)
            .replace_strict({str(i): name for i, name in enumerate("abcdef")}, default="z")
        )
        together = rke.evaluate(log, names, per_query=True, **tables)
        for query in together["query"]:
            one = log.filter(pl.col("query") == query)
            alone = rke.evaluate(one, names, per_query=True, **tables)
            _assert_identical(alone, together.filter(pl.col("query") == query))
