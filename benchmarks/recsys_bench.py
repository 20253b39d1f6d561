"""Beyond-accuracy recommender metrics against the standard suite, on the suite's 10M-row log.

``python benchmarks/recsys_bench.py [--rows 1e7] [--train-rows 1e6]`` generates (once, under
``benchmarks/_data/``) the suite's log (``generate.py``), a train table of past interactions
(``train-rows`` rows: the log's query ids as users, Zipf-popular items) and an item table (a
category of 20 and a 16-dimensional embedding per item), then times, each in a fresh process,
from ``scan_parquet`` to the collected result:

* ``standard``: ndcg@10, map, mrr, p@10, recall@100;
* ``beyond``: the whole beyond-accuracy set at k=10 (per-query novelty, surprisal, unseen, arp,
  aplt, aclt, ild, categorical diversity, auc, fall-out; per-system coverage, entropy, gini,
  personalization, gauc);
* each beyond-accuracy metric alone.

It prints a Markdown table (time, peak RSS, ratio to the standard suite) for
``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

HERE = Path(__file__).resolve().parent
DATA = HERE / "_data"
sys.path.insert(0, str(HERE))

STANDARD = ["ndcg@10", "map", "mrr", "p@10", "recall@100"]
BEYOND = [
    "novelty@10",
    "surprisal@10",
    "unseen@10",
    "arp@10",
    "aplt@10",
    "aclt@10",
    "ild@10",
    "categorical_diversity@10(category=genre)",
    "auc",
    "fall_out@10",
    "coverage@10",
    "entropy@10",
    "gini@10",
    "personalization@10",
    "gauc",
]


def make_tables(log: Path, train_rows: int, data: Path, seed: int = 5) -> tuple[Path, Path]:
    """The train and item tables for ``log`` (written once)."""
    rows = pl.scan_parquet(log).select(pl.len()).collect().item()
    train_path = data / f"train_{rows}_{train_rows}.parquet"
    items_path = data / f"items_{rows}.parquet"
    if train_path.exists() and items_path.exists():
        return train_path, items_path
    rng = np.random.default_rng(seed)
    items = (
        (pl.scan_parquet(log).select(pl.col("item").unique()).filter(pl.col("item") >= 0))
        .collect()["item"]
        .to_numpy()
    )
    users = pl.scan_parquet(log).select(pl.col("query").unique()).collect()["query"].to_numpy()
    weights = 1.0 / np.arange(1, items.size + 1) ** 0.8
    weights /= weights.sum()
    order = rng.permutation(items.size)
    picked = items[order][rng.choice(items.size, size=train_rows, p=weights)]
    pl.DataFrame({"query": rng.choice(users, size=train_rows), "item": picked}).write_parquet(
        train_path
    )
    centres = rng.normal(size=(20, 16))
    genre = rng.integers(0, 20, size=items.size)
    embedding = (centres[genre] + 0.5 * rng.normal(size=(items.size, 16))).astype(np.float32)
    pl.DataFrame(
        {"item": items, "genre": [f"g{g:02d}" for g in genre], "embedding": embedding}
    ).write_parquet(items_path)
    return train_path, items_path


def _child(log: str, train: str, items: str, metrics: list[str]) -> None:
    import polars_rankeval as rke

    started = time.perf_counter()
    lf = pl.scan_parquet(log)
    out = rke.evaluate(
        lf,
        metrics,
        train=pl.scan_parquet(train),
        items=pl.scan_parquet(items),
        catalog=pl.scan_parquet(items),
    )
    frame = out.collect() if isinstance(out, pl.LazyFrame) else out
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_mb": peak, "values": frame.row(0)}))


def _run(log: Path, train: Path, items: Path, metrics: list[str]) -> dict[str, float]:
    command = [sys.executable, __file__, "--child", str(log), str(train), str(items), *metrics]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument("--train-rows", type=float, default=1e6)
    parser.add_argument("--alone", action="store_true", help="also time each metric alone")
    parser.add_argument("--data", type=Path, default=DATA, help="where the inputs are written")
    args = parser.parse_args()
    from generate import generate

    args.data.mkdir(exist_ok=True)
    rows = int(args.rows)
    log = args.data / f"log_{rows}.parquet"
    if not log.exists():
        generate(rows, log)
    train, items = make_tables(log, int(args.train_rows), args.data)
    standard = _run(log, train, items, STANDARD)
    beyond = _run(log, train, items, BEYOND)

    def line(name: str, count: int, run: dict[str, float]) -> str:
        ratio = run["seconds"] / standard["seconds"]
        return f"| {name} | {count} | {run['seconds']:.2f} | {run['peak_mb']:.0f} | {ratio:.1f}x |"

    lines = [
        "| set | metrics | time (s) | peak RSS (MB) | time / standard |",
        "| --- | --- | --- | --- | --- |",
        line("standard", len(STANDARD), standard),
        line("beyond-accuracy", len(BEYOND), beyond),
    ]
    if args.alone:
        for metric in BEYOND:
            lines.append(line(metric, 1, _run(log, train, items, [metric])))
    print("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    else:
        main()
