"""Synthetic evaluation logs for the benchmark suite, written as Parquet.

``python benchmarks/generate.py ROWS [OUT]`` writes ``ROWS`` rows (100 candidates per query)
in chunks, so even 100M rows never sit in memory at once. Columns:

* ``query``: string id (``"q0000123"``); ``item``: int id (unique within a query);
* ``score``: float64 rounded to 3 decimals, so some scores tie; null for judged items the
  system did not retrieve (about 1 per 3 queries);
* ``relevance``: sparse graded labels 0..3 on about 30% of the retrieved rows (null = unjudged),
  plus the unretrieved relevant rows.

``--ranked`` writes each query's rows together in trec_eval's order (score descending, ties by
item string descending, unretrieved rows last), as a TREC run file or a top-k export is written.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq

CANDIDATES = 100
QUERIES_PER_CHUNK = 50_000


def chunk(first_query: int, n_queries: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n = n_queries * CANDIDATES
    query = np.repeat(np.arange(first_query, first_query + n_queries), CANDIDATES)
    # distinct items within a query: a random offset plus a stride
    item = (
        rng.integers(0, 1_000_000, size=n_queries).repeat(CANDIDATES)
        + np.tile(np.arange(CANDIDATES) * 7_919, n_queries)
    ).astype(np.int64)
    label = rng.choice(np.array([0, 1, 2, 3], dtype=np.int8), size=n, p=[0.85, 0.09, 0.04, 0.02])
    score = np.round(rng.random(n) + 0.15 * label, 3)
    judged = rng.random(n) < 0.3
    retrieved = pl.DataFrame(
        {
            "query": query,
            "item": item,
            "score": score,
            "relevance": np.where(judged, label, -1),
        }
    ).with_columns(pl.col("relevance").replace(-1, None).cast(pl.Int8))
    # about one query in three has a relevant item the system did not retrieve
    missing_queries = np.flatnonzero(rng.random(n_queries) < 0.33) + first_query
    unretrieved = pl.DataFrame(
        {
            "query": missing_queries,
            "item": np.full(missing_queries.size, -1, dtype=np.int64),
            "score": np.full(missing_queries.size, None, dtype=object),
            "relevance": rng.integers(1, 4, size=missing_queries.size).astype(np.int8),
        },
        schema={"query": pl.Int64, "item": pl.Int64, "score": pl.Float64, "relevance": pl.Int8},
    )
    both = pl.concat([retrieved, unretrieved])
    return both.with_columns(pl.format("q{}", pl.col("query").cast(pl.String).str.zfill(7)))


def ranked_order(frame: pl.DataFrame) -> pl.DataFrame:
    """Each query's rows together, in trec_eval's order; unretrieved rows last."""
    return frame.sort(
        [pl.col("query"), pl.col("score"), pl.col("item").cast(pl.String)],
        descending=[False, True, True],
        nulls_last=True,
    )


def generate(rows: int, out: Path, *, ranked: bool = False) -> Path:
    n_queries = max(1, rows // CANDIDATES)
    writer = None
    try:
        for index, first in enumerate(range(0, n_queries, QUERIES_PER_CHUNK)):
            size = min(QUERIES_PER_CHUNK, n_queries - first)
            frame = chunk(first, size, seed=index)
            table = (ranked_order(frame) if ranked else frame).to_arrow()
            if writer is None:
                writer = pq.ParquetWriter(out, table.schema, compression="zstd")
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()
    return out


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if a != "--ranked"]
    rows = int(float(arguments[0]))
    target = Path(arguments[1]) if len(arguments) > 1 else Path(f"log_{rows}.parquet")
    print(generate(rows, target, ranked="--ranked" in sys.argv))
