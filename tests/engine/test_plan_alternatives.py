"""The plans tried for issue 29 (``benchmarks/profile.py --alternatives``) compute today's values.

None of them replaced the window plan (the benchmark measures why); this holds each one equal
to it on a log built to break orders: tied scores (the two zeros among them), item ids whose
decimal strings sort unlike their values (9 above 10), graded, zero and negative labels,
unjudged and unretrieved rows, a list with no judgment and one with nothing retrieved. So a
ratio the benchmark prints compares two ways of computing the same numbers, never a plan that
got faster by computing something else. Times are never checked here.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

ROOT = Path(__file__).resolve().parents[2]
SUITE = ["ndcg@10", "map", "mrr", "p@10", "recall@100"]


def _profile_module() -> ModuleType:
    # "profile" is also a standard-library module: load the script by its path
    spec = importlib.util.spec_from_file_location("rke_profile", ROOT / "benchmarks" / "profile.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


profile = _profile_module()


def tricky_log(seed: int, n_queries: int = 60) -> pl.LazyFrame:
    """Lists of 1-40 rows; scores from a few values, so most lists tie, some many times."""
    rng = np.random.default_rng(seed)
    rows: list[tuple[str, int, float | None, int | None]] = []
    for query in range(n_queries):
        kind = query % 10  # 8: nothing judged, 9: nothing retrieved
        size = int(rng.integers(1, 41))
        # 1..12 and 90..110: "9" > "10" > "100" as strings, the other way as numbers
        items = rng.choice(np.r_[1:13, 90:111], size=min(size, 33), replace=False)
        for item in items:
            retrieved = kind != 9 and rng.random() < 0.9
            score = float(rng.choice([-0.0, 0.0, 0.25, 0.5, 1.0, 2.0])) if retrieved else None
            label: int | None = None
            if kind != 8 and rng.random() < 0.7:
                label = int(rng.choice([-2, -1, 0, 0, 1, 2, 3]))
            rows.append((f"q{query:03d}", int(item), score, label))
    schema = {"query": pl.String, "item": pl.Int64, "score": pl.Float64, "relevance": pl.Int8}
    return pl.DataFrame(rows, schema=schema, orient="row").lazy()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_other_orders_are_todays_order(seed: int) -> None:
    log = tricky_log(seed).with_row_index("row")
    today = profile._trec_order(log).select("row", "order").sort("row").collect()
    for plan in (profile._split_order, profile._order_by_window, profile._arg_sort_order):
        got = plan(log).select("row", "order").sort("row").collect()
        assert_frame_equal(got, today, check_dtypes=False)
    # the log ties within lists, or the split's second window would go untested
    ranks = profile._float_ranks(log).collect()
    assert (ranks["last"] > ranks["first"]).sum() > 100


@pytest.mark.parametrize("k", [1, 3, 10])
@pytest.mark.parametrize("seed", [0, 1])
def test_top_k_plans_give_todays_hits(seed: int, k: int) -> None:
    log = tricky_log(seed)
    today = profile._hits(profile._trec_order(log), k).collect()
    for plan in (profile._top_k_threshold, profile._rank_threshold, profile._top_k_by):
        got = plan(log, k).collect()
        # a list with no row among the kept ones has no hit: compare on today's lists
        got = today.select("query").join(got, on="query", how="left").fill_null(0)
        assert_frame_equal(got, today, check_dtypes=False)
    assert today["hits"].sum() > 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_group_by_plan_gives_todays_values(seed: int) -> None:
    log = tricky_log(seed)
    today = profile._window_plan(log, SUITE).collect()
    grouped = profile._group_plan(log, SUITE).collect()
    assert_frame_equal(grouped, today)
    assert today.height < 60  # the lists with no judgment or nothing retrieved are left out
