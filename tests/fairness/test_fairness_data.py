"""The fairness guide's data set: the committed files, their schemas and designed properties.

Nothing here is timed and nothing uses polars_rankeval: ``data/fairness/`` must be what
``data/make_fairness.py`` writes (byte for byte on a rerun), and the properties the guide
relies on (``fair_rerank`` exposes regions closer to the target than ``bm25``, at a small cost
in accuracy) are checked by brute force in plain Python.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data" / "fairness"
SCRIPT = ROOT / "data" / "make_fairness.py"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
FILES = ("log", "groups", "groups_long", "target", "target_global", "samples")
SCHEMAS = {
    "log": {
        "query": pl.Int64,
        "item": pl.String,
        "score": pl.Float64,
        "relevance": pl.Int64,
        "system": pl.String,
    },
    "groups": {
        "item": pl.String,
        "provider_size": pl.String,
        "region": pl.String,
        "gender": pl.String,
    },
    "groups_long": {
        "item": pl.String,
        "dimension": pl.String,
        "group": pl.String,
        "weight": pl.Float64,
    },
    "target": {"query": pl.Int64, "dimension": pl.String, "group": pl.String, "share": pl.Float64},
    "target_global": {"dimension": pl.String, "group": pl.String, "share": pl.Float64},
    "samples": {
        "query": pl.Int64,
        "system": pl.String,
        "sample": pl.Int64,
        "item": pl.String,
        "rank": pl.Int64,
        "score": pl.Float64,
        "relevance": pl.Int64,
    },
}
LEVELS = {
    "provider_size": ["large", "small"],
    "region": ["Africa", "Americas", "Asia", "Europe", "Oceania"],
    "gender": ["female", "male", "unknown"],
}
SYSTEMS = {"bm25", "neural", "fair_rerank"}
NO_RELEVANT_QUERY = 117


@pytest.fixture(scope="module")
def tables() -> dict[str, pl.DataFrame]:
    return {name: pl.read_parquet(DATA / f"{name}.parquet") for name in FILES}


def _generate(folder: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(folder)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env=ENV,
    )
    assert done.returncode == 0, done.stderr


def test_files_exist_with_their_schemas(tables: dict[str, pl.DataFrame]) -> None:
    assert (DATA / "README.md").is_file()
    for name, frame in tables.items():
        assert dict(frame.schema) == SCHEMAS[name], name
    size = sum(path.stat().st_size for path in DATA.iterdir())
    assert size < 3 * 2**20  # small enough to commit


def test_the_generator_rewrites_the_committed_files_byte_for_byte(
    tmp_path: Path, tables: dict[str, pl.DataFrame]
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    _generate(first)
    _generate(second)
    for name in FILES:
        path = f"{name}.parquet"
        assert (first / path).read_bytes() == (second / path).read_bytes(), name
        assert_frame_equal(pl.read_parquet(first / path), tables[name])


def test_the_log_has_the_cases_the_guide_needs(tables: dict[str, pl.DataFrame]) -> None:
    log = tables["log"]
    assert set(log["system"].unique()) == SYSTEMS
    sizes = log.group_by("system", "query").len()
    assert sizes.height == 3 * 60
    assert set(sizes["len"]) == {40}
    assert log.select("system", "query", "item").is_duplicated().sum() == 0
    ties = log.group_by("system", "query").agg(pl.len() - pl.col("score").n_unique())
    assert ties["len"].sum() > 0  # scores tie within lists
    labels = log["relevance"]
    assert labels.null_count() > 0
    assert set(labels.drop_nulls().unique()) == {-1, 0, 1, 2, 3}
    assert (labels == -1).sum() < 0.02 * labels.len()  # a few
    # one query has no relevant item, whatever the system
    relevant = log.filter(pl.col("relevance") >= 1)["query"].unique()
    assert set(log["query"].unique()) - set(relevant) == {NO_RELEVANT_QUERY}
    # a label belongs to the (query, item) pair, whichever system retrieved it
    per_pair = log.group_by("query", "item").agg(pl.col("relevance").n_unique())
    assert per_pair["relevance"].max() == 1
    # a handful of the log's items have no row in either groups table
    for name in ("groups", "groups_long"):
        unknown = log.join(tables[name], on="item", how="anti")["item"].unique()
        assert 1 <= unknown.len() <= 10, name


def test_the_wide_and_long_groups_hold_the_same_items_and_groups(
    tables: dict[str, pl.DataFrame],
) -> None:
    wide, long = tables["groups"], tables["groups_long"]
    assert wide["item"].is_unique().all()
    assert set(wide["item"]) == set(long["item"])
    for dimension, levels in LEVELS.items():
        assert set(wide[dimension]) == set(levels)
        assert set(long.filter(dimension=dimension)["group"]) == set(levels)
    totals = long.group_by("item", "dimension").agg(pl.col("weight").sum(), pl.len())
    assert totals.height == 3 * wide.height  # every item in every dimension
    assert (totals["weight"] - 1.0).abs().max() < 1e-12
    memberships: dict[tuple[str, str], set[str]] = defaultdict(set)
    for row in long.iter_rows(named=True):
        memberships[(row["item"], row["dimension"])].add(row["group"])
        assert row["weight"] in (1.0, 0.5)
    for row in wide.iter_rows(named=True):
        for dimension in LEVELS:
            groups = memberships[(row["item"], dimension)]
            assert row[dimension] in groups
            assert len(groups) == 1 or dimension == "region"
    two = [item for (item, dimension), groups in memberships.items() if len(groups) == 2]
    assert len(two) > 20  # some items are about two regions


def test_target_shares_sum_to_one_over_every_group(tables: dict[str, pl.DataFrame]) -> None:
    queries = set(tables["log"]["query"])
    for name, keys in (("target", ["query", "dimension"]), ("target_global", ["dimension"])):
        frame = tables[name]
        assert frame["share"].min() >= 0.0
        sums = frame.group_by(keys).agg(pl.col("share").sum(), pl.col("group").sort())
        assert (sums["share"] - 1.0).abs().max() < 1e-12, name
        for row in sums.iter_rows(named=True):
            assert row["group"] == LEVELS[row["dimension"]], name
    assert set(tables["target"]["query"]) == queries
    assert sums.height == len(LEVELS)
    # the query without relevant items gets the global target
    alone = tables["target"].filter(query=NO_RELEVANT_QUERY).drop("query")
    assert_frame_equal(alone, tables["target_global"], check_row_order=False)


def test_samples_are_permutations_of_the_systems_lists(tables: dict[str, pl.DataFrame]) -> None:
    samples, log = tables["samples"], tables["log"]
    assert set(samples["system"]) == {"neural", "fair_rerank"}
    counts = samples.group_by("query", "system").agg(pl.col("sample").n_unique(), pl.len())
    assert counts.height == 2 * 60
    assert set(counts["sample"]) == {20}
    assert set(counts["len"]) == {20 * 20}
    per_sample = samples.group_by("query", "system", "sample").agg(
        pl.col("rank").sort(), pl.col("item").n_unique()
    )
    assert all(ranks == list(range(1, 21)) for ranks in per_sample["rank"].to_list())
    assert set(per_sample["item"]) == {20}
    assert (samples["score"] == -samples["rank"].cast(pl.Float64)).all()
    listed = {
        (row["system"], row["query"], row["item"]): row["relevance"]
        for row in log.iter_rows(named=True)
    }
    for row in samples.iter_rows(named=True):
        assert (row["system"], row["query"], row["item"]) in listed
        assert row["relevance"] == listed[(row["system"], row["query"], row["item"])]
    # the two stochastic rankers really draw different rankings of a query
    distinct = samples.group_by("query", "system", "sample").agg(pl.col("item"))
    spread = distinct.group_by("query", "system").agg(pl.col("item").n_unique())
    assert spread["item"].max() > 1


# --- the designed properties, by brute force in plain Python ------------------------------
def _ranked_lists(log: pl.DataFrame) -> dict[tuple[str, int], list[dict[str, object]]]:
    """Each list best first: score descending, ties by item id descending (trec_eval)."""
    lists: dict[tuple[str, int], list[dict[str, object]]] = defaultdict(list)
    for row in log.iter_rows(named=True):
        lists[(row["system"], row["query"])].append(row)
    return {
        key: sorted(rows, key=lambda r: (r["score"], r["item"]), reverse=True)
        for key, rows in lists.items()
    }


def _region_distance(
    tables: dict[str, pl.DataFrame], per_query: bool, k: int = 10
) -> dict[str, float]:
    """Mean L1 distance of the top-k region exposure (TREC discount) from the target."""
    regions: dict[str, dict[str, float]] = defaultdict(dict)
    for row in tables["groups_long"].filter(dimension="region").iter_rows(named=True):
        regions[row["item"]][row["group"]] = row["weight"]
    targets: dict[object, dict[str, float]] = defaultdict(dict)
    if per_query:
        for row in tables["target"].filter(dimension="region").iter_rows(named=True):
            targets[row["query"]][row["group"]] = row["share"]
    else:
        for row in tables["target_global"].filter(dimension="region").iter_rows(named=True):
            targets[None][row["group"]] = row["share"]
    total: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for (system, query), rows in _ranked_lists(tables["log"]).items():
        exposure: dict[str, float] = defaultdict(float)
        for rank, row in enumerate(rows[:k], 1):
            for group, weight in regions.get(str(row["item"]), {}).items():  # unknown: dropped
                exposure[group] += weight / math.log2(max(rank, 2))
        mass = sum(exposure.values())
        target = targets[query if per_query else None]
        total[system] += sum(abs(exposure[g] / mass - share) for g, share in target.items())
        count[system] += 1
    return {system: total[system] / count[system] for system in total}


def _mean_ndcg(log: pl.DataFrame, k: int = 10) -> dict[str, float]:
    """nDCG@k with gain 2^label - 1 (negative labels count 0), queries without relevant: 0."""
    judged: dict[int, list[int]] = defaultdict(list)
    for (query, _item), label in {
        (row["query"], row["item"]): row["relevance"] for row in log.iter_rows(named=True)
    }.items():
        if label is not None:
            judged[query].append(max(label, 0))
    total: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for (system, query), rows in _ranked_lists(log).items():
        gains = [max(int(row["relevance"] or 0), 0) for row in rows[:k]]
        dcg = sum((2**g - 1) / math.log2(i + 1) for i, g in enumerate(gains, 1))
        ideal = sorted(judged[query], reverse=True)[:k]
        idcg = sum((2**g - 1) / math.log2(i + 1) for i, g in enumerate(ideal, 1))
        total[system] += dcg / idcg if idcg else 0.0
        count[system] += 1
    return {system: total[system] / count[system] for system in total}


def test_fair_rerank_exposes_regions_closer_to_the_target(
    tables: dict[str, pl.DataFrame],
) -> None:
    for per_query in (False, True):
        distance = _region_distance(tables, per_query)
        assert distance["fair_rerank"] < 0.75 * distance["bm25"], distance
        assert distance["fair_rerank"] < 0.75 * distance["neural"], distance


def test_fair_rerank_is_slightly_less_accurate_than_neural(
    tables: dict[str, pl.DataFrame],
) -> None:
    ndcg = _mean_ndcg(tables["log"])
    assert ndcg["bm25"] < ndcg["fair_rerank"] < ndcg["neural"], ndcg
    assert ndcg["neural"] - ndcg["fair_rerank"] < 0.1, ndcg


def test_fair_rerank_moves_provider_size_towards_the_catalogue_share(
    tables: dict[str, pl.DataFrame],
) -> None:
    size = dict(tables["groups"].select("item", "provider_size").iter_rows())
    target = dict(
        tables["target_global"]
        .filter(dimension="provider_size")
        .select("group", "share")
        .iter_rows()
    )
    large: dict[str, list[float]] = defaultdict(list)
    for (system, _query), rows in _ranked_lists(tables["log"]).items():
        top = [size[str(r["item"])] for r in rows[:10] if str(r["item"]) in size]
        large[system].append(top.count("large") / len(top))
    share = {system: sum(values) / len(values) for system, values in large.items()}
    gap = {system: abs(value - target["large"]) for system, value in share.items()}
    assert gap["fair_rerank"] < gap["bm25"], share
    assert gap["fair_rerank"] < gap["neural"], share


# --- the speed script, on a tiny log (nothing timed) ----------------------------------------
def _bench(tmp_path: Path, *options: str) -> str:
    script = ROOT / "benchmarks" / "fairness_bench.py"
    small = ["--rows", "2e4", "--repeat", "1", "--data", str(tmp_path)]
    done = subprocess.run(
        [sys.executable, str(script), *small, *options],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env=ENV,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_speed_script_runs_the_peers(tmp_path: Path) -> None:
    out = _bench(tmp_path, "--skip-ours", "--peer-queries", "50")
    assert "error" not in out, out
    assert "| ours | polars floor: top-10 exposure per intersectional group |" in out, out
    assert "| ours | evaluate, group_exposure | skipped: --skip-ours |" in out, out
    for row in (
        "| FairRankTune | EXP MinMaxRatio, per-query loop (timed on 50 queries, x4)",
        "| FairRankTune | NDKL, per-query loop (timed on 50 queries, x4)",
        "| TREC Fair 2022 wptrec | AWRFMetric (nDCG x AWRF), per-query loop (timed on 50",
    ):
        assert row in out, out


def test_speed_script_runs_ours(tmp_path: Path) -> None:
    out = _bench(tmp_path, "--skip-peers")
    rows = {
        line.split("|")[2].strip(): line for line in out.splitlines() if line.startswith("| ours |")
    }
    assert "group_exposure k=10" in rows, out
    assert "evaluate ndcg@10, awrf@10, ndkl@10, exp@10(combo=min_max_ratio)" in rows, out
    for line in rows.values():
        assert "error" not in line, line
