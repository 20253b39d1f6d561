"""Results do not depend on the rows' order, the engine or the passes: to the last bit.

A Float64 sum rounds after each addition, so a sum over shuffled rows can differ in its
last bit; Polars' streaming engine hands a group's rows over in an order that changes from
run to run. Every metric is evaluated here on a log and on shuffles of it, and the per-query
values and the means must be equal, not close (``DataFrame.equals``).
"""

from __future__ import annotations

import importlib

import numpy as np
import polars as pl
import pytest
from test_streaming import BEYOND_ACCURACY, DIVERSITY_LOG, INTENT_AWARE, ITEMS, METRICS, TRAIN

import polars_rankeval as rke
from polars_rankeval._exact_sum import exact_sum

passes_module = importlib.import_module("polars_rankeval._passes")


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
