"""Generate ``data/sample.parquet``: a small two-system evaluation log in long format.

Run ``python data/make_sample.py`` to rebuild it and ``data/logs/`` (deterministic, seeded).

Each of 3,000 queries has a pool of 30 candidate items, of which about two thirds are judged
with graded labels 0-3. Two systems ("bm25" and "neural") each retrieve 20 items per query with
scores that correlate with the labels to different degrees (some scores tie). The long format
holds, per system and query, every retrieved item (with its label, or null when unjudged) and
every judged item the system did not retrieve (null score).

``data/logs/date=.../model=.../part.parquet`` is the same log as a pipeline would store it:
the first 600 queries, hive-partitioned by day (even queries on 2024-06-01, odd ones on
2024-06-02) and by system (``model=``), for the examples that scan partitioned folders. It is
small (about 200 KB) so that it can be committed and a fresh clone runs those examples as
printed.

``data/trec/run.txt`` and ``data/trec/qrels.txt`` are trec_eval's own test collection
(``tests/data/results.test`` and ``qrels.test``, NIST's, see ``tests/data/LICENSE-NIST.md``),
copied unchanged under the names the TREC examples use, so their numbers are trec_eval's.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import polars as pl

N_QUERIES = 3_000
POOL = 30
DEPTH = 20
SYSTEMS = {"bm25": 0.6, "neural": 1.2}  # signal strength of each system's scores
LOG_QUERIES = 600  # queries in data/logs: a few hundred KB, small enough to commit
LOG_DATES = ("2024-06-01", "2024-06-02")


def make_sample(seed: int = 7) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n = N_QUERIES * POOL
    query = np.repeat(np.arange(N_QUERIES), POOL)
    item = rng.integers(0, 10**6, size=n)
    # Graded labels, mostly non-relevant; about a third of the pool is unjudged.
    label = rng.choice([0, 1, 2, 3], size=n, p=[0.70, 0.17, 0.09, 0.04])
    judged = rng.random(n) < 0.67
    frames = []
    for system, signal in SYSTEMS.items():
        score = np.round(signal * label + rng.normal(size=n), 2)  # 2 decimals: some ties
        pool = pl.DataFrame(
            {
                "query": query,
                "item": item,
                "score": score,
                "label": label,
                "judged": judged,
            }
        ).unique(["query", "item"], keep="first", maintain_order=True)
        retrieved = pl.col("score").rank("ordinal", descending=True).over("query") <= DEPTH
        frames.append(
            pool.filter(retrieved | pl.col("judged")).select(
                pl.lit(system).alias("system"),
                pl.format("q{}", pl.col("query").cast(pl.String).str.zfill(4)).alias("query"),
                pl.format("d{}", pl.col("item")).alias("item"),
                pl.when(retrieved).then(pl.col("score")).alias("score"),
                pl.when(pl.col("judged")).then(pl.col("label")).cast(pl.Int8).alias("relevance"),
            )
        )
    return pl.concat(frames).sort("system", "query", "item")


TREC_FILES = {"run.txt": "results.test", "trunc.txt": "results.trunc", "qrels.txt": "qrels.test"}


def write_trec(root: Path) -> list[Path]:
    """Copy trec_eval's test collection from ``tests/data`` to ``root`` (two runs and the qrels)."""
    tests_data = Path(__file__).resolve().parents[1] / "tests" / "data"
    root.mkdir(exist_ok=True)
    written = []
    for name, source in TREC_FILES.items():
        written.append(Path(shutil.copyfile(tests_data / source, root / name)))
    return written


def write_logs(sample: pl.DataFrame, root: Path) -> list[Path]:
    """Write the first ``LOG_QUERIES`` queries of ``sample`` as ``date=/model=/part.parquet``.

    The partition values become the ``date`` and ``model`` columns when the folder is scanned
    with ``hive_partitioning=True``, so they are dropped from the files themselves.
    """
    number = pl.col("query").str.slice(1).cast(pl.Int64)
    dated = sample.filter(number < LOG_QUERIES).with_columns(
        pl.when(number % 2 == 0)
        .then(pl.lit(LOG_DATES[0]))
        .otherwise(pl.lit(LOG_DATES[1]))
        .alias("date")
    )
    if root.exists():
        shutil.rmtree(root)  # no stale partition survives a rebuild
    written = []
    for date in LOG_DATES:
        for model in SYSTEMS:
            part = dated.filter((pl.col("date") == date) & (pl.col("system") == model))
            folder = root / f"date={date}" / f"model={model}"
            folder.mkdir(parents=True)
            path = folder / "part.parquet"
            part.drop("date", "system").write_parquet(path, statistics=True)
            written.append(path)
    return written


if __name__ == "__main__":
    out = Path(__file__).with_name("sample.parquet")
    sample = make_sample()
    sample.write_parquet(out, statistics=True)
    print(f"wrote {out}")
    parts = write_logs(sample, Path(__file__).with_name("logs"))
    print(f"wrote {len(parts)} partitions under {parts[0].parents[2]}")
    trec = write_trec(Path(__file__).with_name("trec"))
    print(f"wrote {', '.join(str(path) for path in trec)}")
