"""Brute force over tie orders: every order of every group of tied scores, written out."""

from __future__ import annotations

import itertools

import polars as pl


def all_orders(log: pl.DataFrame) -> pl.DataFrame:
    """Every order of every tie group of each list, as lists ``query|n`` with distinct scores.

    Evaluated under ``ties="trec"`` (nothing left to break), the largest and smallest value
    per original query are a metric's best and worst case over the orders of its ties, and
    the mean is its expectation.
    """
    out = []
    for (query,), rows in log.group_by("query", maintain_order=True):
        retrieved = rows.filter(pl.col("score").is_not_null())
        rest = rows.filter(pl.col("score").is_null())
        groups = [
            group["item"].to_list()
            for _, group in retrieved.sort("score", descending=True).group_by(
                "score", maintain_order=True
            )
        ]
        for n, combo in enumerate(itertools.product(*(itertools.permutations(g) for g in groups))):
            order = [item for group in combo for item in group]
            scores = {item: float(len(order) - i) for i, item in enumerate(order)}
            key = pl.lit(f"{query}|{n}").alias("query")
            ranked = retrieved.with_columns(
                pl.col("item").replace_strict(scores, return_dtype=pl.Float64).alias("score"), key
            )
            out.append(pl.concat([ranked, rest.with_columns(key)]))
    return pl.concat(out)
