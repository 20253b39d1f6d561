"""``df.rank_eval.off_policy`` and friends: thin adapters that give the functions' results.

The functions are checked against obp, vw-estimators, pyxclib and mpkato's interleaving in
the other modules here; the namespaces must only hand the frame over and keep its type (a
LazyFrame gets a LazyFrame back).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke

DATA = Path(__file__).resolve().parents[2] / "data" / "offpolicy"


@pytest.mark.parametrize("lazy", [False, True])
def test_off_policy_namespace_equals_the_function(lazy: bool) -> None:
    log = pl.read_parquet(DATA / "bandit.parquet")
    frame = log.lazy() if lazy else log
    options = {"target": ["pi_new", "pi_greedy"], "by": "device"}
    got = frame.rank_eval.off_policy("ips,snips", **options)
    assert isinstance(got, pl.LazyFrame if lazy else pl.DataFrame)
    assert_frame_equal(
        got.lazy().collect(), rke.off_policy(log, "ips,snips", **options), rel_tol=1e-12
    )


def test_the_other_namespaces_equal_their_functions() -> None:
    slates = pl.read_parquet(DATA / "slates.parquet")
    both = {"conditional": "propensity", "item_position": "propensity"}
    assert_frame_equal(
        slates.rank_eval.slate_off_policy("sips,pi", propensity=both, target="pi_new"),
        rke.slate_off_policy(slates, "sips,pi", propensity=both, target="pi_new"),
        rel_tol=1e-12,
    )
    clicks = pl.read_parquet(DATA / "clicks.parquet")
    exam = {position: 1 / position for position in range(1, 9)}
    assert_frame_equal(
        clicks.rank_eval.click_metrics("dcg@5,ctr@3", examination=exam, score="score_new"),
        rke.click_metrics(clicks, "dcg@5,ctr@3", examination=exam, score="score_new"),
        rel_tol=1e-12,
    )
    interleaved = pl.read_parquet(DATA / "interleaving.parquet")
    assert_frame_equal(
        interleaved.lazy().rank_eval.interleaving(baseline="bm25").collect(),
        rke.interleaving(interleaved, baseline="bm25"),
    )
