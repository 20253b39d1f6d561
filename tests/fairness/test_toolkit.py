"""FairRankTune's EXP, EXPU, EXPRU and attention AWRF with its combos, against FairRankTune live.

Each list of a generated log (tied scores, unjudged and graded labels, one-item lists, groups
absent from lists, lists shorter and longer than ``k``) is given to FairRankTune 0.0.7 as it
documents: ``ranking_df`` the list's top ``k`` in the engine's order (score descending, ties
by the item's string form descending, recomputed here in plain Python), ``item_group_dict``
every item of the list. Weighted memberships (our extension) are checked by brute force.
"""

from __future__ import annotations

import math
import random
import warnings
from collections.abc import Iterator

import FairRankTune as frt
import numpy as np
import pandas as pd
import polars as pl
import pytest

from polars_rankeval.errors import ColumnValueError, InvalidOptionError, UndefinedMetricWarning
from polars_rankeval.fairness import _toolkit
from polars_rankeval.fairness._frame import (
    GROUP,
    GROUP_SEPARATOR,
    ITEM,
    LABEL,
    RANK,
    VALUE,
    WEIGHT,
    FairInput,
)
from polars_rankeval.fairness._prepare import fair_input

REL = 1e-12
COMBOS = {
    "min_max_ratio": "MinMaxRatio",
    "max_min_ratio": "MaxMinRatio",
    "max_min_diff": "MaxMinDiff",
    "max_abs_diff": "MaxAbsDiff",
    "mean_abs_dev": "MeanAbsDev",
    "l_two": "LTwo",
    "variance": "Variance",
}
GROUPS = ["g0", "g1", "g2", "g3"]


# --- generated data ----------------------------------------------------------------------


def make_log(seed: int, labels: str = "unit") -> tuple[pl.DataFrame, pl.DataFrame]:
    """A log (query, item, score with ties, relevance) and a one-group-per-item table."""
    rng = random.Random(seed)
    items = [f"i{j:02d}" for j in range(30)]
    # g3 holds few items, so many lists lack it
    group_of = {item: rng.choice(["g0", "g0", "g1", "g1", "g2", "g3"]) for item in items}
    rows = []
    for q in range(12):
        n = 1 if q in (0, 5) else rng.randint(2, 14)
        for item in rng.sample(items, n):
            if labels == "unit":
                label = rng.choice([0.0, 0.0, 0.5, 1.0, 1.0, None])
            elif labels == "dense":  # most items useful: expu/expru are mostly defined
                label = rng.choice([0.25, 0.5, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0])
            else:
                label = rng.choice([0.0, 1.0, 2.0, 3.0, -1.0, None])
            rows.append((f"q{q}", item, float(rng.randint(0, 3)), label))
    log = pl.DataFrame(
        rows,
        schema={
            "query": pl.String,
            "item": pl.String,
            "score": pl.Float64,
            "relevance": pl.Float64,
        },
        orient="row",
    )
    groups = pl.DataFrame({"item": items, "group": [group_of[i] for i in items]})
    return log, groups


def rankings(log: pl.DataFrame) -> Iterator[tuple[str, list[tuple[str, float | None]]]]:
    """Each query's (item, label) in the engine's order, computed in plain Python."""
    by_query: dict[str, list[tuple[float, str, float | None]]] = {}
    for query, item, score, label in log.iter_rows():
        by_query.setdefault(query, []).append((score, item, label))
    for query, rows in sorted(by_query.items()):
        rows.sort(key=lambda r: (r[0], r[1]), reverse=True)
        yield query, [(item, label) for _, item, label in rows]


def values(frame: pl.LazyFrame) -> dict[str, float | None]:
    """``{query: value}`` of a measure's output, checking it has one row per list."""
    got = frame.collect()
    assert got.columns == ["query", VALUE]
    assert got["query"].n_unique() == got.height
    return dict(zip(got["query"].to_list(), got[VALUE].to_list(), strict=True))


def close(got: float | None, want: float) -> None:
    assert got is not None, want
    assert math.isclose(got, want, rel_tol=REL, abs_tol=1e-15), (got, want)


def frt_call(
    measure: str,
    ranked: list[tuple[str, float | None]],
    group_of: dict[str, str],
    k: int | None,
    combo: str,
    p: float = 0.3,
) -> float:
    """FairRankTune's value for one list; NaN where a group's value is not finite.

    (FairRankTune's numpy then gives inf, NaN, or 0 for min/inf: undefined, null here.)
    """
    top = ranked if k is None else ranked[:k]
    ranking_df = pd.DataFrame({"r": [item for item, _ in top]})
    item_group = {item: group_of[item] for item, _ in ranked}
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if measure == "exp":
            value, groups = frt.Metrics.EXP(ranking_df, item_group, COMBOS[combo])
        elif measure in ("expu", "expru"):
            utility = [0.0 if lab is None else lab for _, lab in top]
            relevance_df = pd.DataFrame({"r": utility})
            if measure == "expu":
                value, groups = frt.Metrics.EXPU(
                    ranking_df, item_group, relevance_df, COMBOS[combo]
                )
            else:  # Singh & Joachims' click model: relevance times position bias
                ctr = [u / np.log2(r + 1) for r, u in enumerate(utility, start=1)]
                value, groups = frt.Metrics.EXPRU(
                    ranking_df, item_group, relevance_df, pd.DataFrame({"r": ctr}), COMBOS[combo]
                )
        else:
            value, groups = frt.Metrics.AWRF(ranking_df, item_group, p, COMBOS[combo])
    if not all(math.isfinite(v) for v in groups.values()):
        return math.nan
    return float(value)


def ours(measure: str, fair: FairInput, k: int | None, combo: str, p: float = 0.3) -> pl.LazyFrame:
    if measure == "awrf":
        return _toolkit.attention_awrf_values(fair, k=k, p=p, combo=combo)
    function = {
        "exp": _toolkit.exp_values,
        "expu": _toolkit.expu_values,
        "expru": _toolkit.expru_values,
    }[measure]
    return function(fair, k=k, combo=combo)


# --- against FairRankTune -------------------------------------------------------------------


@pytest.mark.parametrize("measure", ["exp", "expu", "expru", "awrf"])
@pytest.mark.parametrize("k", [None, 1, 3, 20])
@pytest.mark.parametrize("seed", [1, 2])
def test_equals_fairranktune(measure: str, k: int | None, seed: int) -> None:
    log, groups = make_log(seed, labels="dense" if seed == 2 else "unit")
    fair = fair_input(log, groups)
    group_of = dict(groups.iter_rows())
    for combo in COMBOS:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = values(ours(measure, fair, k, combo))
        undefined = []
        for query, ranked in rankings(log):
            want = frt_call(measure, ranked, group_of, k, combo)
            if math.isfinite(want):
                close(got[query], want)
            else:  # FairRankTune's inf or NaN: null here, with a warning
                assert got[query] is None, (query, combo, want)
                undefined.append(query)
        warned = [w for w in caught if issubclass(w.category, UndefinedMetricWarning)]
        assert len(warned) == (1 if undefined else 0), (combo, undefined)
        if undefined:
            assert undefined[0] in str(warned[0].message)


def test_docs_measured_values() -> None:
    """refvals.py's measured FairRankTune values: ranking 0..5, {0,1,2} in g0, {3,4,5} in g1."""
    rows = pl.LazyFrame(
        {
            "query": ["q"] * 6,
            RANK: list(range(1, 7)),
            ITEM: [str(i) for i in range(6)],
            GROUP: ["g0"] * 3 + ["g1"] * 3,
            WEIGHT: [1.0] * 6,
            LABEL: [1.0] * 6,
        }
    )
    fair = FairInput(rows, ["query"], ["g0", "g1"], pl.LazyFrame(), pl.LazyFrame())
    got = values(_toolkit.exp_values(fair, k=None, combo="min_max_ratio"))
    close(got["q"], 0.5508095940041025)
    # the per-group means 0.7103099178571526 and 0.3912455174719856: their difference
    got = values(_toolkit.exp_values(fair, k=None, combo="max_min_diff"))
    close(got["q"], 0.7103099178571526 - 0.3912455174719856)


def test_docs_example_ranktune() -> None:
    """FairRankTune's docs/Metrics.md example: RankTune's 1000 items (10%/90%), phi=0, seed 10."""
    ranking_df, item_group_dict = frt.RankTune.GenFromGroups(np.asarray([0.1, 0.9]), 1000, 0, 1, 10)
    ranked = [str(x) for x in ranking_df[ranking_df.columns[0]]]
    group_of = {str(item): str(group) for item, group in item_group_dict.items()}
    rows = pl.LazyFrame(
        {
            "query": ["q"] * len(ranked),
            RANK: list(range(1, len(ranked) + 1)),
            ITEM: ranked,
            GROUP: [group_of[i] for i in ranked],
            WEIGHT: [1.0] * len(ranked),
        }
    )
    fair = FairInput(rows, ["query"], ["0", "1"], pl.LazyFrame(), pl.LazyFrame())
    # the docs' printed values, which FairRankTune 0.0.7 reproduces
    close(values(_toolkit.exp_values(fair, k=None, combo="min_max_ratio"))["q"], 0.5420744267551784)
    close(values(_toolkit.exp_values(fair, k=None, combo="max_abs_diff"))["q"], 0.04794176431544876)
    close(
        values(_toolkit.exp_values(fair, k=None, combo="max_min_diff"))["q"],
        0.2093867087428094 - 0.11350318011191189,
    )


# --- weights (our extension), by brute force ------------------------------------------------


def brute(
    measure: str,
    ranked: list[tuple[str, float | None]],
    member: dict[str, dict[str, float]],
    k: int | None,
    combo: str,
    p: float,
) -> float | None:
    size: dict[str, float] = {}
    expo: dict[str, float] = {}
    util: dict[str, float] = {}
    for rank, (item, label) in enumerate(ranked, start=1):
        for group, w in member[item].items():
            size[group] = size.get(group, 0.0) + w
            expo.setdefault(group, 0.0)
            util.setdefault(group, 0.0)
            if k is None or rank <= k:
                if measure == "awrf":
                    expo[group] += w * 100 * (1 - p) ** (rank - 1) * p
                elif measure == "expru":
                    expo[group] += w * (label or 0.0) / math.log2(rank + 1)
                else:
                    expo[group] += w / math.log2(rank + 1)
                util[group] += w * (label or 0.0)
    vals = []
    for group in sorted(size):
        mean = expo[group] / size[group]
        if measure in ("expu", "expru"):
            if util[group] == 0:
                return None
            mean = mean / (util[group] / size[group])
        vals.append(mean)
    avg = sum(vals) / len(vals)
    g = len(vals)
    if combo == "min_max_ratio":
        return min(vals) / max(vals)
    if combo == "max_min_ratio":
        return None if min(vals) == 0 else max(vals) / min(vals)
    if combo == "max_min_diff":
        return max(vals) - min(vals)
    if combo == "max_abs_diff":
        return max(abs(v - avg) for v in vals)
    if combo == "mean_abs_dev":
        return sum(abs(v - avg) for v in vals) / g
    if combo == "l_two":
        return math.sqrt(sum(v * v for v in vals))
    return sum((v - avg) ** 2 for v in vals) / g


@pytest.mark.parametrize("measure", ["exp", "expu", "expru", "awrf"])
@pytest.mark.parametrize("k", [None, 2, 5])
def test_weighted_memberships_brute_force(measure: str, k: int | None) -> None:
    log, groups = make_log(7)
    rng = random.Random(3)
    member: dict[str, dict[str, float]] = {}
    long = []
    for item, group in groups.iter_rows():
        if rng.random() < 0.4:
            other = rng.choice([g for g in GROUPS if g != group])
            member[item] = {group: 0.25, other: 0.75}
        else:
            member[item] = {group: 1.0}
        long += [(item, g, w) for g, w in member[item].items()]
    table = pl.DataFrame(long, schema=["item", "group", "weight"], orient="row")
    fair = fair_input(log, table)
    for combo in COMBOS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            got = values(ours(measure, fair, k, combo, p=0.2))
        for query, ranked in rankings(log):
            want = brute(measure, ranked, member, k, combo, 0.2)
            if want is None:
                assert got[query] is None
            else:
                close(got[query], want)


# --- bad input ---------------------------------------------------------------------------


def test_unknown_item_refused() -> None:
    log, groups = make_log(4)
    missing = log["item"][3]
    fair = fair_input(log, groups.filter(pl.col("item") != missing))
    with pytest.raises(ColumnValueError, match=f"'{missing}'.*not in the groups= table"):
        _toolkit.exp_values(fair, k=3, combo="variance").collect()


def test_labels_outside_unit_refused() -> None:
    log, groups = make_log(4, labels="graded")
    fair = fair_input(log, groups)
    with pytest.raises(ColumnValueError, match=r"EXPU reads the label as a utility in \[0, 1\]"):
        _toolkit.expu_values(fair, k=None, combo="variance").collect()
    with pytest.raises(ColumnValueError, match=r"EXPRU reads the label"):
        _toolkit.expru_values(fair, k=None, combo="variance").collect()


def test_bad_options() -> None:
    log, groups = make_log(4)
    fair = fair_input(log, groups)
    with pytest.raises(InvalidOptionError, match="combo="):
        _toolkit.exp_values(fair, k=None, combo="MinMaxRatio")
    with pytest.raises(InvalidOptionError, match="k="):
        _toolkit.exp_values(fair, k=0, combo="variance")
    with pytest.raises(InvalidOptionError, match="p="):
        _toolkit.attention_awrf_values(fair, k=None, p=1.0, combo="variance")


def two_dimensions(seed: int) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, str]]:
    """A log, a wide groups table (region, size) and each item's intersectional cell."""
    log, groups = make_log(seed, labels="dense")
    rng = random.Random(seed + 50)
    region = {item: rng.choice(["eu", "us", "asia"]) for item in groups["item"]}
    size = {item: rng.choice(["small", "large"]) for item in groups["item"]}
    wide = pl.DataFrame(
        {
            "item": list(region),
            "region": [region[i] for i in region],
            "size": [size[i] for i in region],
        }
    )
    cell = {item: f"{region[item]}{GROUP_SEPARATOR}{size[item]}" for item in region}
    return log, wide, cell


@pytest.mark.parametrize("measure", ["exp", "expu", "awrf"])
def test_two_dimensions_equal_fairranktune(measure: str) -> None:
    """Two dimensions: FairRankTune's groups are the intersectional cells."""
    log, wide, cell = two_dimensions(3)
    fair = fair_input(log, wide)
    for k in (None, 4):
        for combo in ("min_max_ratio", "mean_abs_dev"):
            got = quiet(ours(measure, fair, k, combo))
            for query, ranked in rankings(log):
                want = frt_call(measure, ranked, cell, k, combo)
                if math.isfinite(want):
                    close(got[query], want)
                else:
                    assert got[query] is None


def quiet(frame: pl.LazyFrame) -> dict[str, float | None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return values(frame)
