"""Krichene & Rendle's corrections against exact fractions, their published toy example, and a
simulation where each user's full rank is known.

References: ``_reference.py`` (the paper's p(r~ | r), BV and constrained least squares in exact
fractions, no numpy), the paper's Table 2 (toy example, n = 10,000, m = 100), and brute force.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.sampling import _correction as correction_module
from polars_rankeval.sampling import sample_negatives, sampled_correction, sampled_log
from polars_rankeval.sampling._correction import (
    Correction,
    metric_by_rank,
    rank_probabilities,
    solve,
)
from tests.sampling import _reference as ref


@pytest.mark.parametrize(("n_items", "m"), [(7, 3), (12, 5), (2, 1)])
def test_rank_probabilities_are_the_papers_binomial(n_items: int, m: int) -> None:
    got = rank_probabilities(n_items, m)
    for r in range(1, n_items + 1):
        for j in range(m + 1):
            assert got[r - 1, j] == pytest.approx(float(ref.binomial(n_items, m, r, j)), abs=1e-15)


def test_metric_by_rank_is_evaluates_value_at_each_rank() -> None:
    ranks = range(1, 31)
    assert list(metric_by_rank("hits@3", 30, {})) == [float(r <= 3) for r in ranks]
    assert list(metric_by_rank("recip_rank", 30, {})) == pytest.approx([1 / r for r in ranks])
    ndcg = [1 / math.log2(r + 1) if r <= 5 else 0.0 for r in ranks]
    assert list(metric_by_rank("ndcg@5", 30, {})) == pytest.approx(ndcg, abs=1e-15)
    # past the exact ranks a cutoff metric keeps its floor
    long = metric_by_rank("hits@3", 1500, {})
    assert len(long) == 1500
    assert long[3:].sum() == 0


FULL = {
    "hits@2": lambda r: Fraction(int(r <= 2)),
    "recip_rank": lambda r: Fraction(1, r),
}


@pytest.mark.parametrize("metric", sorted(FULL))
@pytest.mark.parametrize("gamma", [Fraction(1, 10), Fraction(1), Fraction(1, 100), Fraction(0)])
@pytest.mark.parametrize(("n_items", "m"), [(9, 3), (6, 2)])
def test_bias_variance_matches_exact_fractions(
    metric: str, gamma: Fraction, n_items: int, m: int
) -> None:
    full = [FULL[metric](r) for r in range(1, n_items + 1)]
    expected = ref.bias_variance(full, m, gamma)
    got = sampled_correction(
        metric, n_items=n_items, n_negatives=m, estimator="bv", gamma=float(gamma)
    )
    assert got["sampled_rank"].to_list() == list(range(1, m + 2))
    assert got["value"].to_list() == pytest.approx([float(x) for x in expected], rel=1e-9, abs=1e-9)


def test_gamma_one_is_the_posterior_mean() -> None:
    # gamma = 1: x[j] = sum_r P(r) p(j|r) M(r) / sum_r P(r) p(j|r)
    n_items, m = 8, 3
    full = [Fraction(1, r) for r in range(1, n_items + 1)]
    posterior = [
        sum(ref.binomial(n_items, m, r, j) * full[r - 1] for r in range(1, n_items + 1))
        / sum(ref.binomial(n_items, m, r, j) for r in range(1, n_items + 1))
        for j in range(m + 1)
    ]
    got = sampled_correction("recip_rank", n_items=n_items, n_negatives=m, gamma=1.0)
    assert got["value"].to_list() == pytest.approx([float(x) for x in posterior], rel=1e-12)


@pytest.mark.parametrize("metric", sorted(FULL))
@pytest.mark.parametrize(("n_items", "m"), [(9, 3), (7, 4), (11, 2)])
def test_constrained_least_squares_matches_brute_force(metric: str, n_items: int, m: int) -> None:
    full = [FULL[metric](r) for r in range(1, n_items + 1)]
    expected = ref.constrained_least_squares(full, m)
    got = sampled_correction(metric, n_items=n_items, n_negatives=m, estimator="cls")
    values = got["value"].to_list()
    assert values == pytest.approx([float(x) for x in expected], abs=1e-7)
    assert all(a >= b - 1e-12 for a, b in itertools.pairwise(values))


def test_the_papers_toy_example_expected_sampled_metrics() -> None:
    # Krichene & Rendle, Table 2: n = 10,000, m = 100 sampled items; their means over 1,000
    # samplings (standard errors <= 0.129 / sqrt(1000) ~ 0.004, values rounded to 0.001)
    ranks = {
        "A": [100] * 5,
        "B": [40, 40, 8437, 9266, 4482],
        "C": [212, 2, 743, 5342, 1548],
    }
    published = {
        "map": {"A": 0.630, "B": 0.336, "C": 0.325},
        "ndcg": {"A": 0.724, "B": 0.444, "C": 0.460},
        "recall@10": {"A": 1.000, "B": 0.400, "C": 0.567},
    }
    probabilities = rank_probabilities(10_000, 100)
    for metric, values in published.items():
        curve = metric_by_rank(metric, 101, {})
        for system, value in values.items():
            expected = np.mean([probabilities[r - 1] @ curve for r in ranks[system]])
            assert expected == pytest.approx(value, abs=0.0105), (metric, system)


def test_simulation_corrected_mean_tracks_the_full_metric() -> None:
    # a catalog of 300 items; each of 200 users' one positive sits at a known full rank; 30
    # seeds of 30 uniform negatives each. The corrected estimate's mean must equal its exact
    # expectation under sampling without replacement (hypergeometric, computed in plain
    # Python) within 4 standard errors (the pipeline is exact), and remove at least 80% of
    # the plain sampled metric's bias (0.43 here). Not all of it: with a uniform prior over
    # full ranks the estimator is biased for a recommender whose ranks are not uniform (the
    # paper: only not sampling removes the bias); here BV 0.1 is 0.06 off, CLS 0.04.
    n_items, m, seeds = 300, 30, 30
    rng = np.random.default_rng(0)
    ranks = np.concatenate(
        [rng.integers(1, 11, 60), rng.integers(11, 60, 80), rng.integers(60, 301, 60)]
    )
    rows = []
    for user, rank in enumerate(ranks):
        order = list(range(1, n_items))
        order.insert(int(rank) - 1, 0)  # item 0, the positive, at its full rank
        rows += [(user, i, float(n_items - place)) for place, i in enumerate(order)]
    scores = pl.DataFrame(rows, schema=["query", "item", "score"], orient="row")
    positives = pl.DataFrame({"query": range(len(ranks)), "item": [0] * len(ranks)})
    logs = [
        sampled_log(
            scores,
            positives,
            sample_negatives(positives, catalog=n_items, n_negatives=m, per="positive", seed=s),
        ).with_columns(pl.lit(s).alias("seed"))
        for s in range(seeds)
    ]
    per = rke.evaluate(pl.concat(logs), ["recip_rank", "hits@10"], per_query=True, by="seed")
    sampled_rank = (1 / per["recip_rank"]).round(0).cast(pl.Int64).to_numpy()
    truth = float(np.mean(ranks <= 10))
    plain_bias = per["hits@10"].mean() - truth  # type: ignore[operator]
    assert plain_bias > 0.4
    settings: tuple[tuple[Correction, float | None], ...] = (("bv", 0.1), ("cls", None))
    for estimator, gamma in settings:
        table = sampled_correction(
            "hits@10", n_items=n_items, n_negatives=m, estimator=estimator, gamma=gamma
        )["value"].to_list()
        credit = per.with_columns(pl.Series("credit", [table[r - 1] for r in sampled_rank]))
        by_seed = credit.group_by("seed").agg(pl.col("credit").mean())["credit"]
        mean, error = by_seed.mean(), by_seed.std() / math.sqrt(seeds)  # type: ignore[operator]
        exact = sum(
            sum(
                Fraction(
                    math.comb(int(r) - 1, j) * math.comb(n_items - int(r), m - j),
                    math.comb(n_items - 1, m),
                )
                * Fraction(table[j])
                for j in range(m + 1)
            )
            for r in ranks
        ) / len(ranks)
        assert abs(mean - float(exact)) < 4 * error, estimator  # type: ignore[operator]
        assert abs(mean - truth) < 0.2 * plain_bias, estimator  # type: ignore[operator]


def test_refusals() -> None:
    with pytest.raises(InvalidOptionError, match="estimator="):
        sampled_correction("hits@10", n_items=100, n_negatives=10, estimator="ls")  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match="gamma="):
        sampled_correction("hits@10", n_items=100, n_negatives=10, gamma=1.5)
    with pytest.raises(InvalidOptionError, match="gamma= belongs"):
        sampled_correction("hits@10", n_items=100, n_negatives=10, estimator="cls", gamma=0.1)
    with pytest.raises(InvalidOptionError, match="at most n_items - 1"):
        sampled_correction("hits@10", n_items=10, n_negatives=10)
    with pytest.raises(InvalidOptionError, match="n_negatives="):
        sampled_correction("hits@10", n_items=10, n_negatives=0)
    with pytest.raises(InvalidOptionError, match="rank alone"):
        sampled_correction("auc", n_items=50, n_negatives=10)
    with pytest.raises(InvalidOptionError, match="cutoff metric"):
        sampled_correction("recip_rank", n_items=2000, n_negatives=10)


def test_solve_credits_only_the_possible_ranks() -> None:
    out = solve(np.array([1.0, 0.0, 0.0]), 1, "bv", 0.0)
    assert out.tolist() == pytest.approx([5 / 6, -1 / 6])  # by hand: the doctest's case


def test_block_by_block_qr_equals_one_block(monkeypatch: pytest.MonkeyPatch) -> None:
    # a million-item catalog is reduced in blocks of full ranks: blocks of 4 must give the
    # exact fractions' answer too (here 9 ranks: three blocks, the last one short)
    monkeypatch.setattr(correction_module, "_CHUNK", 4)
    full = [Fraction(1, r) for r in range(1, 10)]
    for gamma in (Fraction(1, 10), Fraction(0)):
        expected = ref.bias_variance(full, 3, gamma)
        got = solve(np.array([float(x) for x in full]), 3, "bv", float(gamma))
        assert got.tolist() == pytest.approx([float(x) for x in expected], rel=1e-9, abs=1e-9)
    expected = ref.constrained_least_squares(full, 3)
    got = solve(np.array([float(x) for x in full]), 3, "cls", 0.0)
    assert got.tolist() == pytest.approx([float(x) for x in expected], abs=1e-7)
