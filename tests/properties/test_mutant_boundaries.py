"""Boundaries that no test pinned: each test kills one of the audit's surviving mutants (round 4).

The reliability audit (round 4, §2.7) applied one-line mutants to the code; these survived
every test, or died only by a doctest or by accident in another area's file. Each test here
states the behaviour at the boundary the mutant moves, with the expected value worked out
from first principles (an exact enumeration, a count, a hand computation), and runs in well
under a second. ``benchmarks/mutation_sample.py`` applies the mutants (keys ``M12`` ... below).

=====  =======================  ========================================================
key    place                    mutant
=====  =======================  ========================================================
M12    compare/_stats.py        ``_ZERO = 1e-12`` → ``1e-6``: a real difference of 1e-9
                                becomes a tie
M13    compare/_stats.py        ``2**n <= n_resamples`` → ``<``: at ``2^n == n_resamples``
                                the exact enumeration gives way to Monte Carlo
M15    compare/_stats.py        ``lgamma(m + 1)`` → ``lgamma(m)``: the randomized Tukey
                                floor ``(m!)^(1−k)`` becomes ``((m−1)!)^(1−k)``
M22    compare/_bootstrap.py    the 1e-12 slack of "the interval misses its estimate"
                                dropped: rounding alone nulls an interval
M25    meaning.py               lower-is-better ``difference < 0`` → ``<= 0``: no change
                                counts as better
M26    metrics/coverage.py      ``distinct > size`` → ``>=``: a catalog exactly the size
                                of the recommended items is refused
=====  =======================  ========================================================
"""

from __future__ import annotations

import itertools
import math
import warnings

import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval._engine.meaning import meanings
from polars_rankeval.errors import BootstrapBiasWarning

pytest.importorskip("scipy", reason="compare's tests need the stats extra")


def _pair_table(baseline: list[float], system: list[float]) -> pl.DataFrame:
    """Per-query values of systems ``a`` (baseline) and ``b``, paired by query."""
    n = len(baseline)
    return pl.DataFrame(
        {
            "system": ["a"] * n + ["b"] * n,
            "query": list(range(n)) * 2,
            "m": [*baseline, *system],
        }
    )


# --- M12: a difference of 1e-9 is a difference; 1e-13 of a value near 1 is rounding ----------


def test_a_difference_of_1e9_is_a_win_not_a_tie() -> None:
    # b beats a by 1e-9 on each of 5 queries: 5 wins, and the exact sign test's p is
    # 2 · (1/2)^5 = 0.0625 (binomial, 5 of 5 wins).
    table = _pair_table([0.5] * 5, [0.5 + 1e-9] * 5)
    row = rke.compare_per_query(table, by="system", baseline="a", test="sign", correction=None)
    assert row.select("wins", "ties", "losses").row(0) == (5, 0, 0)
    assert row["p_value"][0] == pytest.approx(2 * 0.5**5, rel=1e-12)
    assert row["delta"][0] == pytest.approx(1e-9, rel=1e-6)


def test_a_difference_of_1e13_is_a_tie() -> None:
    # 1e-13 on values near 0.5 is below the tie tolerance (1e-12 of max(1, |value|)): ties,
    # and a sign test of no informative query gives p = 1.
    table = _pair_table([0.5] * 5, [0.5 + 1e-13] * 5)
    row = rke.compare_per_query(table, by="system", baseline="a", test="sign", correction=None)
    assert row.select("wins", "ties", "losses").row(0) == (0, 5, 0)
    assert row["p_value"][0] == 1.0


# --- M13: 2^n == n_resamples is enumerated exactly ----------------------------------------------


def _exact_sign_flip_p(d: list[float]) -> float:
    """Share of the 2^n sign vectors whose |Σ s·d| reaches the observed |Σ d|."""
    observed = abs(sum(d))
    vectors = list(itertools.product((-1, 1), repeat=len(d)))
    hits = sum(
        abs(sum(s * x for s, x in zip(signs, d, strict=True))) >= observed for signs in vectors
    )
    return hits / len(vectors)


def test_randomization_is_exact_when_2_to_the_n_equals_n_resamples() -> None:
    d = [0.5, 1.0, -0.25, 2.0]
    # all + (3.25), only −0.25 flipped (3.75), and their negatives: 4 of 16
    assert _exact_sign_flip_p(d) == 0.25
    table = _pair_table([0.0] * 4, d)
    for seed in (0, 1, 2):
        row = rke.compare_per_query(
            table,
            by="system",
            baseline="a",
            test="randomization",
            n_resamples=16,
            seed=seed,
            correction=None,
        )
        # exact: 0.25 whatever the seed; 16 Monte Carlo draws give (count + 1) / 17, never 1/4
        assert row["p_value"][0] == 0.25


def test_randomization_one_draw_short_of_2_to_the_n_is_monte_carlo() -> None:
    # the other side of the boundary: 15 draws for 16 sign vectors is Monte Carlo, so the p
    # is (count + 1) / 16 and depends on the seed (the exact p, 1/4, would not)
    table = _pair_table([0.0] * 4, [0.5, 1.0, -0.25, 2.0])
    found = set()
    for seed in range(5):
        row = rke.compare_per_query(
            table,
            by="system",
            baseline="a",
            test="randomization",
            n_resamples=15,
            seed=seed,
            correction=None,
        )
        p = row["p_value"][0]
        assert p * 16 == pytest.approx(round(p * 16), abs=1e-9)
        assert p >= 2.0 ** (1 - 4)  # never below the floor of 4 non-zero differences
        found.add(p)
    assert len(found) > 1, found


# --- M15: the randomized Tukey floor is (m!)^(1−k) ----------------------------------------------


def _exact_tukey_p(scores: list[tuple[float, ...]], i: int, j: int) -> float:
    """Share of the (m!)^n within-query arrangements whose range of sums reaches |Σ_i − Σ_j|."""
    m = len(scores[0])
    gap = abs(sum(row[i] for row in scores) - sum(row[j] for row in scores))
    orders = list(itertools.permutations(range(m)))
    hits = total = 0
    for chosen in itertools.product(orders, repeat=len(scores)):
        sums = [
            sum(row[order[s]] for row, order in zip(scores, chosen, strict=True)) for s in range(m)
        ]
        hits += max(sums) - min(sums) >= gap - 1e-12
        total += 1
    return hits / total


def test_randomized_tukey_p_stays_at_the_permutation_floor() -> None:
    # Two informative queries with scores (2, 1, 0) for systems a, b, c, and 18 queries where
    # all three tie (they add the same to every sum). a − c = 4 is reached only when both
    # queries are arranged alike: 1/6 of the 36 arrangements, which is also the floor
    # (3!)^(1−2) = 1/6 of k = 2 informative queries. (3!)^20 > n_resamples: Monte Carlo.
    informative = [(2.0, 1.0, 0.0), (2.0, 1.0, 0.0)]
    assert _exact_tukey_p(informative, 0, 2) == pytest.approx(1 / 6)
    assert math.factorial(3) ** (1 - 2) == pytest.approx(1 / 6)
    scores = informative + [(0.5, 0.5, 0.5)] * 18
    rows = [
        (name, q, v) for q, row in enumerate(scores) for name, v in zip("abc", row, strict=True)
    ]
    table = pl.DataFrame(rows, schema=["system", "query", "m"], orient="row")
    out = rke.compare_per_query(
        table, by="system", baseline="a", test="tukey", n_resamples=10_000, correction=None
    )
    p = dict(zip(out["system"], out["p_value"], strict=True))
    # 10,000 draws estimate 1/6 within ±0.015 (about 4 standard errors), never below the floor
    assert 1 / 6 - 1e-12 <= p["c"] <= 1 / 6 + 0.015
    assert p["b"] == pytest.approx(_exact_tukey_p(informative, 0, 1), abs=0.03)


# --- M22: an interval that misses its estimate only by rounding is kept -------------------------


def test_bootstrap_interval_missing_its_estimate_by_rounding_is_kept() -> None:
    # Every query's p@6 rises by exactly one hit (1/6) from a to b, so every resampled
    # difference of means is 1/6 and the interval of the difference is {1/6}. Each mean is
    # rounded, so on this log (7 queries, seed 1, 10 draws) the observed difference is
    # 0.16666666666666652 and the basic interval [0.1666666666666663, 0.1666666666666665]
    # ends 1 ulp below it: rounding, not an interval that misses its estimate. So no
    # BootstrapBiasWarning and no nulled interval.
    hits_a = [5, 3, 5, 5, 4, 3, 5]
    rows = [
        (system, query, f"i{rank}", float(6 - rank), int(rank < hits + extra))
        for query, hits in enumerate(hits_a)
        for system, extra in (("a", 0), ("b", 1))
        for rank in range(6)
    ]
    log = pl.DataFrame(rows, schema=["system", "query", "item", "score", "relevance"], orient="row")
    with warnings.catch_warnings():
        warnings.simplefilter("error", BootstrapBiasWarning)
        out = rke.bootstrap(log, ["p@6"], by="system", baseline="a", n_resamples=10, seed=1)
    # with a baseline, ci_low/ci_high are the interval of delta (the shared schema)
    delta, low, high = out.select("delta", "ci_low", "ci_high").row(0)
    assert delta == pytest.approx(1 / 6, abs=1e-12)
    assert low is not None
    assert high is not None
    assert low == pytest.approx(1 / 6, abs=1e-12)
    assert high == pytest.approx(1 / 6, abs=1e-12)


# --- M25: for a lower-is-better metric, no change is not better --------------------------------


def test_no_change_is_neither_better_nor_worse_for_either_direction() -> None:
    found = meanings(["frp", "map", "latency"], lower_is_better=["latency"])
    for column in ("frp", "latency"):  # ours, and another tool's declared column
        lower = found[column]
        assert lower.direction == "lower"
        assert not lower.better(0.0)
        assert lower.better(-1e-9)
        assert not lower.better(1e-9)
    higher = found["map"]
    assert not higher.better(0.0)
    assert higher.better(1e-9)
    assert not higher.better(-1e-9)


# --- M26: a catalog exactly the size of the recommended items is full coverage ------------------


def test_catalog_size_equal_to_the_recommended_items_is_accepted() -> None:
    # 3 distinct items recommended in the top 2 of two lists: coverage@2 of a catalog of 3 is
    # 3 / 3 = 1 exactly; a catalog of 2 cannot hold them and is refused, naming both counts.
    log = pl.DataFrame(
        {
            "query": [1, 1, 2, 2],
            "item": ["x", "y", "y", "z"],
            "score": [2.0, 1.0, 2.0, 1.0],
            "relevance": [1, 0, 1, 0],
        }
    )
    assert rke.evaluate(log, ["coverage@2"], catalog=3)["coverage@2"].item() == 1.0
    assert rke.evaluate(log, ["coverage@2"], catalog=4)["coverage@2"].item() == 0.75
    with pytest.raises(rke.RankEvalError, match=r"3 distinct items but catalog=2"):
        rke.evaluate(log, ["coverage@2"], catalog=2)
