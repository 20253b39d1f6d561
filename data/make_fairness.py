"""Generate ``data/fairness/``: a small search log with item groups, for the fairness guide.

Run ``python data/make_fairness.py`` to rebuild it (deterministic, seeded; ``--out DIR``
writes elsewhere). The same seed gives byte-identical files. ``data/fairness/README.md``
describes every file; in short:

* ``log.parquet``: three systems ranking 40 of a 60-item candidate pool for each of 60
  queries: ``bm25`` (noisy, favours large providers and European and American items),
  ``neural`` (more accurate, the same biases, milder) and ``fair_rerank`` (the neural scores
  re-ranked greedily towards the global target shares of region and provider size: fairer by
  design, slightly less accurate). Labels come from a depth-20 pool of the three systems
  (unpooled items unjudged: null), graded 0-3, a few -1 (junk); query ``NO_RELEVANT_QUERY``
  has no relevant item.
* ``groups.parquet`` (wide: item, provider_size, region, gender) and ``groups_long.parquet``
  (long: item, dimension, group, weight) for every catalogue item but ``N_MISSING`` that the
  log shows; in the long form some items belong to two regions, 0.5 each (the wide form keeps
  their first region).
* ``target.parquet`` (query, dimension, group, share: TREC Fair 2022's construction, half the
  query's relevant items' distribution, half the global target) and ``target_global.parquet``
  (dimension, group, share: world population by region, equal shares for provider size and
  gender, 0 for unknown gender).
* ``samples.parquet``: 20 Plackett-Luce samples of 20 items per query from two stochastic
  rankers over the items of the ``neural`` and ``fair_rerank`` lists.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import polars as pl

SEED = 31
N_QUERIES = 60
FIRST_QUERY = 101
NO_RELEVANT_QUERY = 117
N_CATALOGUE = 1500  # items "d0000" .. "d1499"
POOL = 60  # candidates per query; each system keeps its top LIST_LEN
LIST_LEN = 40
JUDGE_DEPTH = 20  # TREC-style pooling: the top 20 of every system are judged
SYSTEMS = ("bm25", "neural", "fair_rerank")
SAMPLED = ("neural", "fair_rerank")
N_SAMPLES = 20
SAMPLE_LEN = 20
N_MISSING = 5  # log items with no row in the groups tables
TWO_REGIONS = 0.08  # share of items about two regions (long form only)
JUNK = 0.015  # share of judged non-relevant pairs labelled -1

REGIONS = ("Africa", "Americas", "Asia", "Europe", "Oceania")
# The catalogue over-represents Europe and the Americas, as web collections do.
REGION_MIX = (0.07, 0.33, 0.17, 0.38, 0.05)
SIZES = ("large", "small")
GENDERS = ("female", "male", "unknown")
GENDER_MIX = (0.32, 0.48, 0.20)
LARGE_SHARE = 0.3
DIMENSIONS = ("provider_size", "region", "gender")
# World population by continent (UN, 2023, rounded to sum to 1); provider size in proportion to
# the catalogue (every provider's item equally exposed); equal for female and male, none
# targeted at the unknown level.
GLOBAL_TARGET: dict[str, dict[str, float]] = {
    "provider_size": {"large": LARGE_SHARE, "small": 1.0 - LARGE_SHARE},
    "region": {"Africa": 0.18, "Americas": 0.13, "Asia": 0.592, "Europe": 0.093, "Oceania": 0.005},
    "gender": {"female": 0.5, "male": 0.5, "unknown": 0.0},
}
# fair_rerank's pull towards a group per unit of missing presence (neural scores have sd ~0.6)
RERANK_STRENGTH = {"region": 0.25, "provider_size": 0.15}


def _item_id(index: np.ndarray) -> np.ndarray:
    return np.char.add("d", np.char.zfill(index.astype(str), 4))


def _catalogue(rng: np.random.Generator) -> pl.DataFrame:
    """One row per catalogue item: its groups, and a second region for a few."""
    n = N_CATALOGUE
    region = rng.choice(len(REGIONS), size=n, p=REGION_MIX)
    # the second region is another one, drawn with the catalogue's mix
    other = (region + 1 + rng.choice(len(REGIONS) - 1, size=n)) % len(REGIONS)
    two = rng.random(n) < TWO_REGIONS
    return pl.DataFrame(
        {
            "item": _item_id(np.arange(n)),
            "provider_size": np.where(rng.random(n) < LARGE_SHARE, "large", "small"),
            "region": np.asarray(REGIONS)[region],
            "region2": pl.Series(np.asarray(REGIONS)[other]).scatter(np.flatnonzero(~two), None),
            "gender": np.asarray(GENDERS)[rng.choice(len(GENDERS), size=n, p=GENDER_MIX)],
        }
    )


def _ranked(score: np.ndarray, item: np.ndarray) -> np.ndarray:
    """Positions of ``score`` best first, ties by item id descending (the engine's rule)."""
    # lexsort sorts ascending by the last key first: negate the score, invert the item order
    item_order = np.argsort(np.argsort(item))
    return np.lexsort((-item_order, -score))


def _fair_rerank(score: np.ndarray, groups: dict[str, np.ndarray], item: np.ndarray) -> np.ndarray:
    """Greedy re-ranking: at each position, score plus a pull towards under-shown groups.

    A group's pull is its target share times the positions filled so far, minus the items of
    the group already placed (its missing presence), times ``RERANK_STRENGTH``.
    """
    placed: list[int] = []
    free = np.ones(score.size, dtype=bool)
    counts = {d: dict.fromkeys(GLOBAL_TARGET[d], 0.0) for d in RERANK_STRENGTH}
    for position in range(1, LIST_LEN + 1):
        adjusted = score.astype(float).copy()
        for dimension, strength in RERANK_STRENGTH.items():
            target = GLOBAL_TARGET[dimension]
            missing = {g: target[g] * position - counts[dimension][g] for g in target}
            adjusted += strength * np.array([missing[g] for g in groups[dimension]])
        adjusted[~free] = -np.inf
        best = int(_ranked(adjusted, item)[0])
        placed.append(best)
        free[best] = False
        for dimension in RERANK_STRENGTH:
            counts[dimension][str(groups[dimension][best])] += 1.0
    return np.asarray(placed)


def _lists(rng: np.random.Generator, catalogue: pl.DataFrame) -> pl.DataFrame:
    """Every system's ranked list per query, with the candidates' true grades."""
    large = (catalogue["provider_size"] == "large").to_numpy()
    west = catalogue["region"].is_in(["Europe", "Americas"]).to_numpy()
    region = catalogue["region"].to_numpy()
    size = catalogue["provider_size"].to_numpy()
    frames = []
    for q in range(N_QUERIES):
        query = FIRST_QUERY + q
        pool = rng.choice(N_CATALOGUE, size=POOL, replace=False)
        item = _item_id(pool)
        truth = rng.normal(size=POOL)
        grade = np.digitize(truth, [0.5, 1.1, 1.7])  # 0..3, about 30% relevant
        if query == NO_RELEVANT_QUERY:
            grade = np.zeros_like(grade)
        # bm25: one decimal, so scores tie; neural: two decimals, fewer ties
        bm25 = np.round(
            10 + 2.0 * truth + 2.2 * rng.normal(size=POOL) + 1.2 * large[pool] + 0.9 * west[pool],
            1,
        )
        neural = np.round(
            0.5 * truth + 0.25 * rng.normal(size=POOL) + 0.3 * large[pool] + 0.25 * west[pool],
            2,
        )
        groups = {"region": region[pool], "provider_size": size[pool]}
        orders = {
            "bm25": _ranked(bm25, item)[:LIST_LEN],
            "neural": _ranked(neural, item)[:LIST_LEN],
            "fair_rerank": _fair_rerank(neural, groups, item),
        }
        scores = {
            "bm25": bm25[orders["bm25"]],
            "neural": neural[orders["neural"]],
            # the re-ranker exports its order as a score: LIST_LEN for the top, 1 for the last
            "fair_rerank": np.arange(LIST_LEN, 0, -1, dtype=np.float64),
        }
        for system in SYSTEMS:
            order = orders[system]
            score = scores[system]
            frames.append(
                pl.DataFrame(
                    {
                        "system": system,
                        "query": np.full(LIST_LEN, query, dtype=np.int64),
                        "item": item[order],
                        "score": score.astype(np.float64),
                        "grade": grade[order].astype(np.int64),
                        "position": np.arange(1, LIST_LEN + 1, dtype=np.int64),
                    }
                )
            )
    return pl.concat(frames)


def _judge(rng: np.random.Generator, lists: pl.DataFrame) -> pl.DataFrame:
    """Labels of the pooled (query, item) pairs: the grade, a few -1 (junk); others unjudged."""
    pooled = (
        lists.filter(pl.col("position") <= JUDGE_DEPTH)
        .select("query", "item", "grade")
        .unique()
        .sort("query", "item")
    )
    junk = (rng.random(pooled.height) < JUNK) & (pooled["grade"] == 0).to_numpy()
    return pooled.with_columns(
        pl.when(pl.Series(junk)).then(-1).otherwise(pl.col("grade")).alias("relevance")
    ).drop("grade")


def _missing_items(rng: np.random.Generator, lists: pl.DataFrame) -> list[str]:
    shown = lists["item"].unique().sort().to_numpy()
    return sorted(rng.choice(shown, size=N_MISSING, replace=False).tolist())


def _groups(catalogue: pl.DataFrame, missing: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    known = catalogue.filter(~pl.col("item").is_in(missing))
    wide = known.select("item", *DIMENSIONS)
    region = known.select(
        "item",
        pl.lit("region").alias("dimension"),
        pl.concat_list("region", "region2").list.drop_nulls().alias("group"),
    ).with_columns((1.0 / pl.col("group").list.len()).alias("weight"))
    parts = [
        known.select(
            "item",
            pl.lit(name).alias("dimension"),
            pl.col(name).alias("group"),
            pl.lit(1.0).alias("weight"),
        )
        for name in ("provider_size", "gender")
    ]
    long = pl.concat([*parts, region.explode("group")], how="vertical").sort(
        "item", pl.col("dimension").replace_strict(DIMENSIONS, range(3)), "group"
    )
    return wide, long


def _targets(judged: pl.DataFrame, long: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per query: half the relevant items' group distribution, half the global target."""
    glob = pl.DataFrame(
        [
            {"dimension": d, "group": g, "share": s}
            for d in DIMENSIONS
            for g, s in GLOBAL_TARGET[d].items()
        ],
        schema={"dimension": pl.String, "group": pl.String, "share": pl.Float64},
    )
    relevant = judged.filter(pl.col("relevance") >= 1).join(long, on="item", how="inner")
    observed = (
        relevant.group_by("query", "dimension", "group")
        .agg(pl.col("weight").sum())
        .with_columns(
            (pl.col("weight") / pl.col("weight").sum().over("query", "dimension")).alias("seen")
        )
    )
    queries = pl.DataFrame({"query": np.arange(FIRST_QUERY, FIRST_QUERY + N_QUERIES)})
    has_relevant = observed.select("query", "dimension").unique()
    per_query = (
        queries.join(glob, how="cross")
        .join(
            observed.select("query", "dimension", "group", "seen"),
            on=["query", "dimension", "group"],
            how="left",
        )
        .join(
            has_relevant.with_columns(pl.lit(True).alias("judged")),
            on=["query", "dimension"],
            how="left",
        )
        .select(
            "query",
            "dimension",
            "group",
            pl.when(pl.col("judged"))
            .then(0.5 * pl.col("seen").fill_null(0.0) + 0.5 * pl.col("share"))
            .otherwise(pl.col("share"))
            .alias("share"),
        )
    )
    return per_query, glob


def _samples(rng: np.random.Generator, lists: pl.DataFrame, labels: pl.DataFrame) -> pl.DataFrame:
    """Plackett-Luce samples (Gumbel trick) of SAMPLE_LEN items from each sampled list.

    ``neural`` samples its scores at a low temperature (close to its fixed ranking);
    ``fair_rerank`` samples its positions with a flat softmax, spreading exposure.
    """
    frames = []
    for system in SAMPLED:
        ranked = lists.filter(pl.col("system") == system).sort("query", "position")
        items = ranked["item"].to_numpy().reshape(N_QUERIES, LIST_LEN)
        if system == "neural":
            logit = ranked["score"].to_numpy().reshape(N_QUERIES, LIST_LEN) / 0.1
        else:
            logit = -ranked["position"].to_numpy().reshape(N_QUERIES, LIST_LEN) / 6.0
        gumbel = rng.gumbel(size=(N_QUERIES, N_SAMPLES, LIST_LEN))
        order = np.argsort(-(logit[:, None, :] + gumbel), axis=2, kind="stable")
        order = order[:, :, :SAMPLE_LEN]
        whole = np.broadcast_to(items[:, None, :], (N_QUERIES, N_SAMPLES, LIST_LEN))
        chosen = np.take_along_axis(whole, order, 2)
        rank = np.broadcast_to(np.arange(1, SAMPLE_LEN + 1), order.shape)
        frames.append(
            pl.DataFrame(
                {
                    "query": np.repeat(
                        np.arange(FIRST_QUERY, FIRST_QUERY + N_QUERIES), N_SAMPLES * SAMPLE_LEN
                    ).astype(np.int64),
                    "system": system,
                    "sample": np.broadcast_to(
                        np.arange(1, N_SAMPLES + 1)[None, :, None], order.shape
                    )
                    .ravel()
                    .astype(np.int64),
                    "item": chosen.ravel(),
                    "rank": rank.ravel().astype(np.int64),
                }
            )
        )
    return (
        pl.concat(frames)
        .with_columns((-pl.col("rank")).cast(pl.Float64).alias("score"))
        .join(labels, on=["query", "item"], how="left", maintain_order="left")
    )


def make_fairness(seed: int = SEED) -> dict[str, pl.DataFrame]:
    """Every table of ``data/fairness/``, by file stem."""
    rng = np.random.default_rng(seed)
    catalogue = _catalogue(rng)
    lists = _lists(rng, catalogue)
    labels = _judge(rng, lists)
    missing = _missing_items(rng, lists)
    wide, long = _groups(catalogue, missing)
    target, target_global = _targets(labels, long)
    log = lists.join(labels, on=["query", "item"], how="left", maintain_order="left").select(
        "query", "item", "score", "relevance", "system"
    )
    return {
        "log": log,
        "groups": wide,
        "groups_long": long,
        "target": target,
        "target_global": target_global,
        "samples": _samples(rng, lists, labels),
    }


def write(folder: Path, seed: int = SEED) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, frame in make_fairness(seed).items():
        # nothing in the file depends on the clock or the run: same frames, same bytes
        frame.write_parquet(folder / f"{name}.parquet", compression="zstd")
        print(f"{name}: {frame.shape}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "fairness")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    write(args.out, args.seed)


if __name__ == "__main__":
    main()
