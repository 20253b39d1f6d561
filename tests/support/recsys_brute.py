"""Brute-force helpers for the recommender metric tests: plain Python, no polars_rankeval.

A generated log (several systems, tied scores, unretrieved rows, graded and unjudged labels,
a list with no retrieved row) and train table, and each list's top k in trec_eval's order
(score descending, ties by the item id as a string, descending).
"""

from __future__ import annotations

import random
from collections import defaultdict

import polars as pl

# The generated logs' columns: several systems, integer ids, float scores, integer labels.
LOG_SCHEMA = {
    "system": pl.String,
    "query": pl.Int64,
    "item": pl.Int64,
    "score": pl.Float64,
    "relevance": pl.Int64,
}


def generated(
    seed: int = 0, n_users: int = 30, n_items: int = 40
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A log (system, query, item, score, relevance) and a train table (query, item)."""
    rng = random.Random(seed)
    rows = []
    for system in ("a", "b"):
        for user in range(n_users):
            if user == 7:
                continue  # a user with no list at all
            items = rng.sample(range(n_items), rng.randint(1, 12))
            for item in items:
                score = None if rng.random() < 0.1 else float(rng.randint(0, 5))  # ties
                label = rng.choice([None, None, 0, 0, 1, 2, -1])
                rows.append((system, user, item, score, label))
    log = pl.DataFrame(
        rows,
        schema=LOG_SCHEMA,
        orient="row",
    )
    train_rows = []
    for user in range(n_users + 5):  # some train users never get a list
        for _ in range(rng.randint(0, 8)):
            # popularity skewed to low ids; items >= 30 never occur in train
            train_rows.append((user, min(int(rng.expovariate(0.12)), 29)))
    train = pl.DataFrame(train_rows, schema={"query": pl.Int64, "item": pl.Int64}, orient="row")
    return log, train


def top_k(log: pl.DataFrame, k: int) -> dict[tuple[str, int], list[int]]:
    """Each (system, query) list's top-k retrieved items in trec order.

    Lists with no retrieved row are left out: label-free metrics evaluate every list with a
    retrieved row, and only those.
    """
    lists: dict[tuple[str, int], list[tuple[float, str, int]]] = defaultdict(list)
    for system, query, item, score, _ in log.iter_rows():
        if score is not None:
            lists[(system, query)].append((score, str(item), item))
    return {
        key: [item for _, _, item in sorted(rows, reverse=True)[:k]]
        for key, rows in lists.items()
        if rows
    }


def train_stats(train: pl.DataFrame) -> tuple[dict[int, set[int]], dict[int, int], int, int]:
    """Users of each item, rows of each item, distinct users, rows."""
    users: dict[int, set[int]] = defaultdict(set)
    counts: dict[int, int] = defaultdict(int)
    for user, item in train.iter_rows():
        users[item].add(user)
        counts[item] += 1
    return users, counts, train["query"].n_unique(), train.height


def mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def means_by_system(per_list: dict[tuple[str, int], float | None]) -> dict[str, float | None]:
    """Mean over each system's lists of the non-null values."""
    grouped: dict[str, list[float]] = defaultdict(list)
    for (system, _), value in per_list.items():
        grouped.setdefault(system, [])
        if value is not None:
            grouped[system].append(value)
    return {system: mean(values) for system, values in grouped.items()}
