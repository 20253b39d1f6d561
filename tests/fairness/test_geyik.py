"""Geyik et al.'s NDKL and skew@k against FairRankTune, Credo AI Lens' examples, brute force.

The generated logs (tied scores, one-item lists, groups absent from lists, lists shorter and
longer than ``k``, items in two groups with weights) come from ``test_toolkit``; the
rankings given to the references are recomputed there in plain Python.
"""

from __future__ import annotations

import dataclasses
import math
import random
import warnings

import FairRankTune as frt
import pandas as pd
import polars as pl
import pytest

from polars_rankeval.errors import ColumnValueError, InvalidOptionError, UndefinedMetricWarning
from polars_rankeval.fairness import _geyik, _toolkit
from polars_rankeval.fairness._frame import (
    GROUP,
    GROUP_SEPARATOR,
    ITEM,
    RANK,
    SHARE,
    WEIGHT,
    FairInput,
    N,
)
from polars_rankeval.fairness._prepare import fair_input
from tests.fairness.test_toolkit import (
    GROUPS,
    close,
    make_log,
    rankings,
    two_dimensions,
    values,
)

TARGET = {"g0": 0.4, "g1": 0.3, "g2": 0.2, "g3": 0.1}
# g3 has no target share: a list showing a g3 item diverges infinitely
ZERO = {"g0": 0.5, "g1": 0.3, "g2": 0.2, "g3": 0.0}
Member = dict[str, float]


def weighted(seed: int) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, Member]]:
    """A log, a long groups table where some items are 0.25/0.75 in two groups, the memberships."""
    log, groups = make_log(seed)
    rng = random.Random(seed + 100)
    member: dict[str, Member] = {}
    for item, group in groups.iter_rows():
        if rng.random() < 0.3:
            other = rng.choice([g for g in GROUPS if g != group])
            member[item] = {group: 0.25, other: 0.75}
        else:
            member[item] = {group: 1.0}
    table = pl.DataFrame(
        [(i, g, w) for i, m in member.items() for g, w in m.items()],
        schema=["item", "group", "weight"],
        orient="row",
    )
    return log, table, member


# --- brute force --------------------------------------------------------------------------


def prefix_share(memberships: list[Member], i: int) -> Member:
    share: Member = {}
    for m in memberships[:i]:
        for g, w in m.items():
            share[g] = share.get(g, 0.0) + w
    return {g: c / i for g, c in share.items()}


def brute_ndkl(memberships: list[Member], ref: Member, k: int | None, eps: float) -> float | None:
    m = len(memberships) if k is None else min(k, len(memberships))
    total = 0.0
    z_sum = 0.0
    for i in range(1, m + 1):
        share = prefix_share(memberships, i)
        kl = 0.0
        for g, q in ref.items():
            p = share.get(g, 0.0) + eps
            qe = q + eps
            if p == 0:
                continue
            if qe == 0:
                return None
            kl += p * math.log(p / qe)
        z = 1 / math.log2(i + 1)
        total += z * kl
        z_sum += z
    return total / z_sum


def brute_skews(memberships: list[Member], target: Member, k: int, eps: float) -> dict[str, float]:
    """Each group's skew in the extended reals (groups with p = q = 0 left out)."""
    m = min(k, len(memberships))
    share = prefix_share(memberships, m)
    out = {}
    for g, q in target.items():
        p = share.get(g, 0.0) + eps
        qe = q + eps
        if p == 0 and qe == 0:
            continue
        out[g] = math.inf if qe == 0 else -math.inf if p == 0 else math.log(p / qe)
    return out


def finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def check(got: float | None, want: float | None) -> None:
    if want is None:
        assert got is None
    else:
        close(got, want)


def quiet(frame: pl.LazyFrame) -> dict[str, float | None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return values(frame)


# --- NDKL -------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ndkl_list_equals_fairranktune(seed: int) -> None:
    log, groups = make_log(seed)
    fair = fair_input(log, groups)
    group_of = dict(groups.iter_rows())
    for k in (None, 14, 50):  # FairRankTune's ranking is the whole list: k at least n
        got = values(_geyik.ndkl_values(fair, k=k, reference="list", epsilon=1e-7))
        for query, ranked in rankings(log):
            ranking_df = pd.DataFrame({"r": [item for item, _ in ranked]})
            want = frt.Metrics.NDKL(ranking_df, {item: group_of[item] for item, _ in ranked})
            close(got[query], float(want))


def test_ndkl_refvals() -> None:
    """refvals.py: FairRankTune's NDKL of ranking 0..5 with {0,1,2} in g0, {3,4,5} in g1."""
    rows = pl.LazyFrame(
        {
            "query": ["q"] * 6,
            RANK: list(range(1, 7)),
            N: [6] * 6,
            ITEM: [str(i) for i in range(6)],
            GROUP: ["g0"] * 3 + ["g1"] * 3,
            WEIGHT: [1.0] * 6,
        }
    )
    fair = FairInput(rows, ["query"], ["g0", "g1"], pl.LazyFrame(), pl.LazyFrame())
    got = values(_geyik.ndkl_values(fair, k=None, reference="list", epsilon=1e-7))
    close(got["q"], 0.4663622886515257)


def credo_input() -> FairInput:
    """Credo AI Lens' docstring example: female, male, male, female, male, male."""
    ranked = ["female", "male", "male", "female", "male", "male"]
    rows = pl.LazyFrame(
        {
            "query": ["q"] * 6,
            RANK: list(range(1, 7)),
            N: [6] * 6,
            ITEM: [f"i{j}" for j in range(6)],
            GROUP: ranked,
            WEIGHT: [1.0] * 6,
        }
    )
    target = pl.LazyFrame({"query": ["q", "q"], GROUP: ["female", "male"], SHARE: [0.6, 0.4]})
    return FairInput(rows, ["query"], ["female", "male"], target, pl.LazyFrame())


def test_credo_lens_examples() -> None:
    """Credo AI Lens (credoai_lens, ranking metrics): NDKL 0.208096993149323, skew parity 1.111.

    Lens adds 1e-12 inside its logarithms, so its values are ours to ~1e-11.
    """
    fair = credo_input()
    got = values(_geyik.ndkl_values(fair, k=None, reference="target"))
    assert math.isclose(got["q"], 0.208096993149323, rel_tol=1e-9)
    # Lens' skew_parity "difference": max - min of p/q over the groups of the whole list
    high = values(_geyik.max_skew_values(fair, k=6))["q"]
    low = values(_geyik.min_skew_values(fair, k=6))["q"]
    assert high is not None
    assert low is not None
    assert math.isclose(math.exp(high) - math.exp(low), 1.1111111111087035, rel_tol=1e-9)


@pytest.mark.parametrize("reference", ["target", "list"])
@pytest.mark.parametrize("epsilon", [0.0, 1e-7])
@pytest.mark.parametrize("target", [TARGET, ZERO])
def test_ndkl_brute_force_weighted(reference: str, epsilon: float, target: Member) -> None:
    log, table, member = weighted(5)
    fair = fair_input(log, table, group_target=target)
    for k in (None, 1, 3, 20):
        got = quiet(_geyik.ndkl_values(fair, k=k, reference=reference, epsilon=epsilon))
        for query, ranked in rankings(log):
            memberships = [member[item] for item, _ in ranked]
            ref = target if reference == "target" else prefix_share(memberships, len(ranked))
            check(got[query], brute_ndkl(memberships, ref, k, epsilon))


def test_ndkl_undefined_warns() -> None:
    log, groups = make_log(1)
    fair = fair_input(log, groups, group_target=ZERO)
    with pytest.warns(UndefinedMetricWarning, match="NDKL.*share 0.*epsilon"):
        got = values(_geyik.ndkl_values(fair, k=None))
    assert any(v is None for v in got.values())
    assert any(v is not None for v in got.values())


# --- skew -------------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.0, 1e-12, 0.01])
@pytest.mark.parametrize("target", [TARGET, ZERO])
@pytest.mark.parametrize("k", [1, 3, 20])
def test_skew_brute_force(epsilon: float, target: Member, k: int) -> None:
    log, table, member = weighted(6)
    fair = fair_input(log, table, group_target=target)
    lows = quiet(_geyik.min_skew_values(fair, k=k, epsilon=epsilon))
    highs = quiet(_geyik.max_skew_values(fair, k=k, epsilon=epsilon))
    per_group = {g: quiet(_geyik.skew_values(fair, k=k, group=g, epsilon=epsilon)) for g in GROUPS}
    for query, ranked in rankings(log):
        skews = brute_skews([member[item] for item, _ in ranked], target, k, epsilon)
        check(lows[query], finite(min(skews.values())))
        check(highs[query], finite(max(skews.values())))
        for g in GROUPS:
            check(per_group[g][query], finite(skews[g]) if g in skews else None)


def test_skew_absent_group_warns() -> None:
    log, groups = make_log(2)
    fair = fair_input(log, groups, group_target=TARGET)
    with pytest.warns(UndefinedMetricWarning, match="min_skew@2"):
        got = values(_geyik.min_skew_values(fair, k=2))
    assert any(v is None for v in got.values())


# --- bad input ---------------------------------------------------------------------------


def test_unknown_item_refused_where_read() -> None:
    log, groups = make_log(4)
    ranked = dict(rankings(log))
    # an item ranked last in a list longer than 3: read by reference=list only
    query, items = next((q, r) for q, r in ranked.items() if len(r) > 3)
    last = items[-1][0]
    others = [item for q, r in ranked.items() if q != query for item, _ in r]
    if last in others:  # keep the unknown item out of every other list's top 3
        log = log.filter((pl.col("item") != last) | (pl.col("query") == query))
    fair = fair_input(log, groups.filter(pl.col("item") != last), group_target=TARGET)
    with pytest.raises(ColumnValueError, match=f"'{last}'.*not in the groups= table"):
        _geyik.ndkl_values(fair, k=3, reference="list").collect()
    values(_geyik.ndkl_values(fair, k=3, reference="target"))  # only the top 3 are read
    with pytest.raises(ColumnValueError, match=f"'{last}'"):
        _geyik.skew_values(fair, k=50, group="g0").collect()


def test_bad_options() -> None:
    log, groups = make_log(4)
    fair = fair_input(log, groups, group_target=TARGET)
    with pytest.raises(InvalidOptionError, match="reference="):
        _geyik.ndkl_values(fair, k=None, reference="population")
    with pytest.raises(InvalidOptionError, match="epsilon="):
        _geyik.ndkl_values(fair, k=None, epsilon=-1.0)
    with pytest.raises(InvalidOptionError, match=r"group=.*'g9'"):
        _geyik.skew_values(fair, k=3, group="g9")
    with pytest.raises(InvalidOptionError, match="k="):
        _geyik.min_skew_values(fair, k=None)  # type: ignore[arg-type]


def test_two_dimensions() -> None:
    """Intersectional cells: NDKL(list) against FairRankTune, skew against a product target."""
    log, wide, cell = two_dimensions(4)
    target = {"region": {"eu": 0.5, "us": 0.3, "asia": 0.2}, "size": {"small": 0.4, "large": 0.6}}
    fair = fair_input(log, wide, group_target=target)
    got = values(_geyik.ndkl_values(fair, k=None, reference="list", epsilon=1e-7))
    for query, ranked in rankings(log):
        ranking_df = pd.DataFrame({"r": [item for item, _ in ranked]})
        want = frt.Metrics.NDKL(ranking_df, {item: cell[item] for item, _ in ranked})
        close(got[query], float(want))
    shares = {
        f"{r}{GROUP_SEPARATOR}{s}": target["region"][r] * target["size"][s]
        for r in target["region"]
        for s in target["size"]
    }
    ndkl = quiet(_geyik.ndkl_values(fair, k=5))
    highs = quiet(_geyik.max_skew_values(fair, k=5, epsilon=1e-9))
    for query, ranked in rankings(log):
        memberships = [{cell[item]: 1.0} for item, _ in ranked]
        check(ndkl[query], brute_ndkl(memberships, shares, 5, 0.0))
        skews = brute_skews(memberships, shares, 5, 1e-9)
        check(highs[query], finite(max(skews.values())))


def test_same_bits_shuffled_and_streaming() -> None:
    """Every measure of both modules: the same bits over shuffled rows and the streaming engine."""
    log, groups = make_log(3, labels="dense")
    fair = fair_input(log, groups, group_target=TARGET)
    shuffled = dataclasses.replace(
        fair, rows=fair.rows.collect().sample(fraction=1.0, shuffle=True, seed=7).lazy()
    )
    measures = [
        lambda f: _toolkit.exp_values(f, k=3, combo="variance"),
        lambda f: _toolkit.expu_values(f, k=None, combo="mean_abs_dev"),
        lambda f: _toolkit.expru_values(f, k=5, combo="l_two"),
        lambda f: _toolkit.attention_awrf_values(f, k=None, p=0.2, combo="max_abs_diff"),
        lambda f: _geyik.ndkl_values(f, k=4),
        lambda f: _geyik.ndkl_values(f, k=None, reference="list", epsilon=1e-7),
        lambda f: _geyik.skew_values(f, k=4, group="g1"),
        lambda f: _geyik.min_skew_values(f, k=6, epsilon=1e-6),
        lambda f: _geyik.max_skew_values(f, k=6),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for measure in measures:
            first = measure(fair).collect().sort("query")
            assert first.equals(measure(shuffled).collect().sort("query"))
            assert first.equals(measure(fair).collect(engine="streaming").sort("query"))
