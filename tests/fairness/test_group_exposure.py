"""The fairness input stage and ``rke.group_exposure``, checked against brute force in Python.

* groups= in the wide and the long layout (several dimensions, several groups per item with
  weights) give the same memberships; bad tables are refused naming the item and the column;
* group_target= in every form gives the same shares; bad targets are refused;
* group exposure per list (ties, cutoffs, sampled rankings, relevant only, attention models,
  intersected dimensions, items without a group) equals a plain-Python computation;
* the two roads to a measure (inside ``evaluate``, and from a log of rankings) agree;
* the summary's share, interval and verdict follow their definitions; results do not depend
  on row order or eager/lazy input, and the plan streams.
"""

from __future__ import annotations

import math
import random
import re
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    ColumnValueError,
    InvalidOptionError,
)
from polars_rankeval.fairness._frame import GROUP, ITEM, RANK, SHARE, VALUE, WEIGHT
from polars_rankeval.fairness._groups import DIMENSION, read_groups
from polars_rankeval.metrics.fairness import _fair_metric

SEP = " × "


def _random_case(seed: int, *, samples: int = 1) -> tuple[pl.DataFrame, pl.DataFrame, dict]:
    """A log with ties, graded/unjudged/negative labels and items without a group."""
    rng = random.Random(seed)
    items = [f"d{i}" for i in range(14)]
    memberships: dict[str, dict[str, dict[str, float]]] = {}
    for item in items[:12]:  # d12, d13 have no group
        region = rng.choice([{"eu": 1.0}, {"us": 1.0}, {"asia": 1.0}, {"eu": 0.5, "us": 0.5}])
        memberships[item] = {"region": region, "size": {rng.choice(["big", "small"]): 1.0}}
    rows = []
    for query in range(1, 6):
        chosen = rng.sample(items, rng.randint(1, 9))
        for sample in range(samples):
            order = chosen[:]
            rng.shuffle(order)
            for item in order:
                rows.append(
                    {
                        "query": query,
                        "sample": sample,
                        "item": item,
                        "score": float(rng.randint(0, 3)),  # ties
                        "relevance": rng.choice([None, -1, 0, 1, 2]),
                    }
                )
    log = pl.DataFrame(rows, schema_overrides={"relevance": pl.Int64})
    long = pl.DataFrame(
        [
            {"item": item, "dimension": dim, "group": group, "weight": weight}
            for item, dims in memberships.items()
            for dim, groups in dims.items()
            for group, weight in groups.items()
        ]
    )
    return log, long, memberships


def _trec_order(rows: list[dict]) -> list[dict]:
    """trec_eval's order: score descending, ties by the item's string descending."""
    ranked = [r for r in rows if r["score"] is not None]
    return sorted(ranked, key=lambda r: (r["score"], r["item"]), reverse=True)


def _brute_exposure(
    log: pl.DataFrame,
    memberships: dict,
    dims: list[str],
    *,
    k: int | None = None,
    attention=lambda r: 1 / math.log2(max(r, 2)),
    relevant_only: bool = False,
    sample: str | None = None,
) -> dict[tuple[int, str | None], float]:
    """Per (query, cell) exposure, averaged over samples, in plain Python."""
    lists: dict[tuple, list[dict]] = defaultdict(list)
    for row in log.iter_rows(named=True):
        lists[(row["query"], row[sample] if sample else 0)].append(row)
    total: dict[tuple[int, str | None], float] = defaultdict(float)
    samples: dict[int, set] = defaultdict(set)
    for (query, draw), rows in lists.items():
        samples[query].add(draw)
        for rank, row in enumerate(_trec_order(rows), start=1):
            if k is not None and rank > k:
                continue
            label = row["relevance"]
            if relevant_only and not (label is not None and label >= 1):
                continue
            if row["item"] not in memberships:
                total[(query, None)] += attention(rank)
                continue
            cells = [("", 1.0)]
            for dim in dims:
                cells = [
                    ((c + SEP + g) if c else g, w * gw)
                    for c, w in cells
                    for g, gw in memberships[row["item"]][dim].items()
                ]
            for cell, weight in cells:
                total[(query, cell)] += attention(rank) * weight
    return {key: value / len(samples[key[0]]) for key, value in total.items()}


def _wide(memberships: dict) -> pl.DataFrame:
    """The wide layout: region as a list column (equal weights), size as a string."""
    return pl.DataFrame(
        {
            "item": list(memberships),
            "region": [sorted(m["region"]) for m in memberships.values()],
            "size": [next(iter(m["size"])) for m in memberships.values()],
        }
    )


def _per_query(table: pl.DataFrame) -> dict[tuple[int, str | None], float]:
    return {
        (row["query"], row["group"]): row["exposure"]
        for row in table.iter_rows(named=True)
        if row["exposure"] > 0
    }


def _close(got: dict, want: dict) -> None:
    want = {key: value for key, value in want.items() if value > 0}
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key


# --- the groups table ---------------------------------------------------------------------


def test_wide_and_long_layouts_give_the_same_memberships() -> None:
    _, long, memberships = _random_case(1)
    wide = read_groups(_wide(memberships).lazy(), "item").memberships.collect()
    from_long = read_groups(long.lazy(), "item").memberships.collect()
    key = [ITEM, DIMENSION, GROUP]
    assert_frame_equal(wide.sort(key), from_long.sort(key), check_column_order=False)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dims", [["region"], ["size"], ["region", "size"]])
def test_exposure_per_query_equals_brute_force(seed: int, dims: list[str]) -> None:
    log, long, memberships = _random_case(seed)
    got = rke.group_exposure(
        log, groups=long, dimension="+".join(dims), per_query=True, group_target="uniform"
    )
    _close(_per_query(got), _brute_exposure(log, memberships, dims))


@pytest.mark.parametrize("seed", range(4))
def test_cutoff_relevant_only_and_attention_models(seed: int) -> None:
    log, _, memberships = _random_case(seed)
    dims = ["region", "size"]
    cases = [
        ({"k": 3}, {"k": 3}),
        ({"relevant_only": True}, {"relevant_only": True}),
        ({"attention": "log2"}, {"attention": lambda r: 1 / math.log2(r + 1)}),
        (
            {"attention": "geometric", "p": 0.3},
            {"attention": lambda r: 0.3 * 0.7 ** (r - 1)},
        ),
        ({"attention": {1: 1.0, 2: 0.5}}, {"attention": lambda r: {1: 1.0, 2: 0.5}.get(r, 0.0)}),
        ({"attention": 1.0 / pl.col("rank")}, {"attention": lambda r: 1.0 / r}),
    ]
    for ours, brute in cases:
        got = rke.group_exposure(log, groups=_wide(memberships), per_query=True, **ours)
        _close(_per_query(got), _brute_exposure(log, memberships, dims, **brute))


@pytest.mark.parametrize("seed", range(4))
def test_sampled_rankings_average_over_samples(seed: int) -> None:
    log, long, memberships = _random_case(seed, samples=3)
    got = rke.group_exposure(log, groups=long, sample="sample", per_query=True)
    _close(_per_query(got), _brute_exposure(log, memberships, ["region", "size"], sample="sample"))


def test_summary_share_interval_and_verdict_follow_their_definitions() -> None:
    log, long, _ = _random_case(3)
    per_query = rke.group_exposure(log, groups=long, dimension="size", per_query=True)
    summary = rke.group_exposure(log, groups=long, dimension="size", alpha=0.1)
    z = 1.6448536269514722
    for row in summary.iter_rows(named=True):
        mine = per_query.filter(pl.col("group").eq_missing(row["group"]))
        shares = mine["share"].to_list()
        n = len(shares)
        mean = sum(shares) / n
        sd = math.sqrt(sum((s - mean) ** 2 for s in shares) / (n - 1)) if n > 1 else 0.0
        target = sum(mine["target"].to_list()) / n
        assert row["n_queries"] == n
        assert row["share"] == pytest.approx(mean, rel=1e-12)
        assert row["ci_low"] == pytest.approx(mean - z * sd / math.sqrt(n), rel=1e-9, abs=1e-12)
        assert row["target"] == pytest.approx(target, rel=1e-12)
        assert row["difference"] == pytest.approx(mean - target, abs=1e-12)
        want = (
            "over" if row["ci_low"] > target else "under" if row["ci_high"] < target else "within"
        )
        assert row["verdict"] == want


def test_items_without_a_group_are_shown_as_the_group_null() -> None:
    log = pl.DataFrame({"query": [1, 1], "item": ["a", "zz"], "score": [2.0, 1.0]})
    groups = pl.DataFrame({"item": ["a"], "size": ["big"]})
    table = rke.group_exposure(log, groups=groups, per_query=True)
    assert table.select("group", "exposure").rows() == [("big", 1.0), (None, 1.0)]


def test_a_target_group_no_item_belongs_to_gets_exposure_zero() -> None:
    log = pl.DataFrame({"query": [1, 1], "item": ["a", "b"], "score": [2.0, 1.0]})
    groups = pl.DataFrame({"item": ["a", "b"], "size": ["big", "big"]})
    with pytest.warns(rke.GroupWarning, match=r"share to 'small', which no item"):
        table = rke.group_exposure(
            log, groups=groups, group_target={"big": 0.5, "small": 0.5}, per_query=True
        )
    assert table.select("group", "exposure", "target").rows() == [
        ("big", 2.0, 0.5),
        ("small", 0.0, 0.5),
    ]


# --- group_target= ------------------------------------------------------------------------


def test_every_target_form_gives_the_same_shares() -> None:
    log, long, _ = _random_case(2)
    shares = {"region": {"eu": 0.4, "us": 0.4, "asia": 0.2}, "size": {"big": 0.3, "small": 0.7}}
    table_long = pl.DataFrame(
        [(d, g, s) for d, gs in shares.items() for g, s in gs.items()],
        schema=["dimension", "group", "share"],
        orient="row",
    )
    joint = pl.DataFrame(
        [
            (r, z, shares["region"][r] * shares["size"][z])
            for r in shares["region"]
            for z in shares["size"]
        ],
        schema=["region", "size", "share"],
        orient="row",
    )
    per_query = pl.DataFrame({"query": [1, 2, 3, 4, 5]}).join(table_long, how="cross")
    results = [
        rke.group_exposure(log, groups=long, group_target=target, per_query=True)
        for target in (shares, table_long, joint, per_query, table_long.lazy())
    ]
    for other in results[1:]:
        assert_frame_equal(results[0], other)
    eu_big = results[0].filter(pl.col("group") == "eu × big")["target"].unique().to_list()
    assert eu_big == [pytest.approx(0.4 * 0.3)]


def test_population_and_uniform_targets() -> None:
    groups = pl.DataFrame({"item": ["a", "b", "c", "d"], "size": ["big", "big", "big", "small"]})
    log = pl.DataFrame({"query": [1], "item": ["a"], "score": [1.0]})
    population = rke.group_exposure(log, groups=groups, per_query=True)
    assert population.select("group", "target").rows() == [("big", 0.75), ("small", 0.25)]
    uniform = rke.group_exposure(log, groups=groups, group_target="uniform", per_query=True)
    assert uniform["target"].to_list() == [0.5, 0.5]


def test_target_path_is_read(tmp_path: Path) -> None:
    groups = pl.DataFrame({"item": ["a", "b"], "size": ["big", "small"]})
    path = tmp_path / "target.csv"
    pl.DataFrame({"group": ["big", "small"], "share": [0.9, 0.1]}).write_csv(path)
    log = pl.DataFrame({"query": [1], "item": ["a"], "score": [1.0]})
    table = rke.group_exposure(log, groups=groups, group_target=str(path), per_query=True)
    assert table["target"].to_list() == [0.9, 0.1]


@pytest.mark.parametrize(
    ("target", "error", "match"),
    [
        ({"big": 0.5, "small": 0.6}, ColumnValueError, "sum to 1.1"),
        ({"big": -0.5, "small": 1.5}, ColumnValueError, "finite and >= 0"),
        ({"big": "half"}, InvalidOptionError, "must be a number"),
        ({"size": {"big": 1.0}, "big": 0.0}, InvalidOptionError, "not a mix"),
        ("fair", InvalidOptionError, "'population', 'uniform'"),
        (pl.DataFrame({"group": ["big"]}), ColumnNotFoundError, "no 'share' column"),
        (pl.DataFrame({"group": ["big"], "share": ["1"]}), ColumnTypeError, "numeric"),
        (
            pl.DataFrame({"query": [9], "group": ["big"], "share": [1.0]}),
            ColumnValueError,
            "query 1",
        ),
    ],
)
def test_bad_targets_are_refused(target: object, error: type, match: str) -> None:
    groups = pl.DataFrame({"item": ["a", "b"], "size": ["big", "small"]})
    log = pl.DataFrame({"query": [1], "item": ["a"], "score": [1.0]})
    with pytest.raises(error, match=match):
        rke.group_exposure(log, groups=groups, group_target=target, per_query=True)
    probe = _fair_metric(
        "probe",
        _probe_target,
        depth=None,
        dimension=None,
        direction="higher",
        reads_labels=False,
    )
    with pytest.raises(error, match=match):
        rke.evaluate(log, [probe], groups=groups, group_target=target)


def test_target_without_groups_is_refused() -> None:
    log = pl.DataFrame({"query": [1], "item": ["a"], "score": [1.0], "relevance": [1]})
    with pytest.raises(InvalidOptionError, match="needs groups="):
        rke.evaluate(log, ["ndcg"], group_target="uniform")


def test_several_dimensions_need_a_dimension_for_a_flat_mapping() -> None:
    _, long, _ = _random_case(0)
    log = pl.DataFrame({"query": [1], "item": ["d0"], "score": [1.0]})
    with pytest.raises(InvalidOptionError, match="dimension="):
        rke.group_exposure(log, groups=long, group_target={"eu": 1.0})
    ok = rke.group_exposure(log, groups=long, group_target={"eu": 1.0}, dimension="region")
    assert ok.filter(pl.col("group") == "eu")["target"].item() == 1.0


# --- bad groups tables --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("groups", "error", "match"),
    [
        (pl.DataFrame({"item": ["a", "b"], "size": [None, "big"]}),
         ColumnValueError, "item 'a' has no group in dimension 'size'"),
        (pl.DataFrame({"item": ["a", "a"], "group": ["x", "y"], "weight": [0.5, 0.6]}),
         ColumnValueError, "sum to 1.1"),
        (pl.DataFrame({"item": ["a"], "group": ["x"], "weight": [0.0]}),
         ColumnValueError, "finite and > 0"),
        (pl.DataFrame({"item": ["a", "b"], "dimension": ["s", "r"], "group": ["x", "y"]}),
         ColumnValueError, "has groups in 1 of the 2 dimensions"),
        (pl.DataFrame({"item": [1], "size": ["big"]}), ColumnTypeError, "cast one of them"),
        (pl.DataFrame({"id": ["a"], "size": ["big"]}), ColumnNotFoundError, "not in the groups"),
        (pl.DataFrame({"item": ["a"], "size": [1.5]}), ColumnTypeError, "dimension column"),
        (pl.DataFrame({"item": ["a"]}), ColumnNotFoundError, "only the item column"),
        (pl.DataFrame({"item": ["a"], "group": ["x"], "extra": [1]}),
         ColumnNotFoundError, "other columns"),
    ],
)  # fmt: skip
def test_bad_groups_tables_are_refused(groups: pl.DataFrame, error: type, match: str) -> None:
    log = pl.DataFrame({"query": [1], "item": ["a"], "score": [1.0]})
    with pytest.raises(error, match=re.escape(match) if "(" in match else match):
        rke.group_exposure(log, groups=groups, per_query=True)


def test_unknown_dimension_and_bad_options_are_refused() -> None:
    log, long, _ = _random_case(0)
    with pytest.raises(InvalidOptionError, match="dimensions are"):
        rke.group_exposure(log, groups=long, dimension="gender")
    with pytest.raises(InvalidOptionError, match="0 < p < 1"):
        rke.group_exposure(log, groups=long, attention="geometric")
    with pytest.raises(InvalidOptionError, match="attention="):
        rke.group_exposure(log, groups=long, attention="linear")
    with pytest.raises(InvalidOptionError, match="k="):
        rke.group_exposure(log, groups=long, k=0)
    with pytest.raises(ColumnNotFoundError, match="option sample="):
        rke.group_exposure(log, groups=long, sample="draw")
    with pytest.raises(ColumnValueError, match="appears more than once"):
        rke.group_exposure(pl.concat([log, log]), groups=long)


def _probe_target(fair):  # a measure that reads the target shares
    shares = fair.target.group_by(fair.keys).agg(pl.col(SHARE).sum().alias(VALUE))
    return fair.rows.select(fair.keys).unique().join(shares, on=fair.keys)


# --- the two roads agree --------------------------------------------------------------------


def _probe(fair):  # per-list exposure of every cell, one number: sum over cells of cell x exposure
    term = pl.col(WEIGHT).fill_null(0.0) / pl.max_horizontal(pl.col(RANK), 2).log(2)
    return fair.rows.group_by(fair.keys).agg(
        (term * pl.col(GROUP).fill_null("").str.len_chars()).sum().alias(VALUE)
    )


@pytest.mark.parametrize("seed", range(4))
def test_evaluate_and_the_log_road_build_the_same_rows(seed: int) -> None:
    log, long, _ = _random_case(seed)
    log = log.with_columns(system=pl.lit("a")).vstack(log.with_columns(system=pl.lit("b")))
    metric = _fair_metric(
        "probe", _probe, depth=None, dimension=None, direction="higher", reads_labels=False
    )
    inside = rke.evaluate(log, [metric], groups=long, per_query=True, by="system")
    table = rke.group_exposure(log, groups=long, per_query=True, by="system")
    outside = (
        table.with_columns(
            (pl.col("exposure") * pl.col("group").fill_null("").str.len_chars()).alias("x")
        )
        .group_by("system", "query")
        .agg(pl.col("x").sum().alias("probe"))
    )
    joined = inside.join(outside, on=["system", "query"], suffix="_log")
    assert joined.height == inside.height
    for a, b in joined.select("probe", "probe_log").rows():
        assert a == pytest.approx(b, rel=1e-12)


def test_evaluate_reads_the_groups_lazily_from_parquet(tmp_path: Path) -> None:
    log, long, _ = _random_case(5)
    log.write_parquet(tmp_path / "log.parquet")
    long.write_parquet(tmp_path / "groups.parquet")
    metric = _fair_metric(
        "probe", _probe, depth=None, dimension=None, direction="higher", reads_labels=False
    )
    lazy = rke.evaluate(
        pl.scan_parquet(tmp_path / "log.parquet"),
        [metric],
        groups=tmp_path / "groups.parquet",
        per_query=True,
    )
    assert isinstance(lazy, pl.LazyFrame)
    eager = rke.evaluate(log, [metric], groups=long, per_query=True)
    assert_frame_equal(lazy.collect().sort("query"), eager.sort("query"))


# --- order, input type, streaming -----------------------------------------------------------


def test_results_do_not_depend_on_row_order_or_input_type() -> None:
    log, long, _ = _random_case(4, samples=2)
    first = rke.group_exposure(log, groups=long, sample="sample")
    shuffled = rke.group_exposure(
        log.sample(fraction=1.0, shuffle=True, seed=1),
        groups=long.sample(fraction=1.0, shuffle=True, seed=2),
        sample="sample",
    )
    lazy = rke.group_exposure(log.lazy(), groups=long.lazy(), sample="sample").collect()
    assert_frame_equal(first, shuffled)
    assert_frame_equal(first, lazy)
    assert_frame_equal(first, rke.group_exposure(log.to_pandas(), groups=long, sample="sample"))


def test_group_exposure_plan_streams(tmp_path: Path) -> None:
    from tests.offpolicy.test_clicks import assert_streams

    log, long, _ = _random_case(1)
    log.write_parquet(tmp_path / "log.parquet")
    long.write_parquet(tmp_path / "groups.parquet")
    plan = rke.group_exposure(
        pl.scan_parquet(tmp_path / "log.parquet"),
        groups=pl.scan_parquet(tmp_path / "groups.parquet"),
        per_query=True,
    )
    assert_streams(plan)


def test_namespace_methods() -> None:
    log, long, _ = _random_case(1)
    assert_frame_equal(
        log.rank_eval.group_exposure(groups=long), rke.group_exposure(log, groups=long)
    )
    lazy = log.lazy().rank_eval.group_exposure(groups=long)
    assert isinstance(lazy, pl.LazyFrame)
