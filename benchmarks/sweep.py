"""Cost of a cutoff sweep: 20 cutoffs of ndcg (and of p, recall, map) against one cutoff.

Run: ``python benchmarks/sweep.py [n_queries]`` (default 10,000 queries x 100 items = 1M rows).
Each configuration is timed lazily from the same Parquet file, best of 3 runs, on the
streaming engine. A sweep shares the ranking context (one set of window passes); each extra
cutoff adds only filtered sums to the one group_by.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import polars as pl
from quick_compare import make_log

import polars_rankeval as rke

CUTOFFS = ",".join(
    str(k) for k in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 100)
)


def best_of(path: Path, metrics: list[str], repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        rke.evaluate(pl.scan_parquet(path), metrics).collect()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    n_queries = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log.parquet"
        make_log(n_queries).write_parquet(path)
        rows = [
            ("ndcg@10", ["ndcg@10"]),
            ("ndcg@<20 cutoffs>", [f"ndcg@{CUTOFFS}"]),
            ("p, recall, map, ndcg @10", ["p@10", "recall@10", "map@10", "ndcg@10"]),
            (
                "p, recall, map, ndcg @<20 cutoffs>",
                [f"p@{CUTOFFS}", f"recall@{CUTOFFS}", f"map@{CUTOFFS}", f"ndcg@{CUTOFFS}"],
            ),
        ]
        timings = {label: best_of(path, metrics) for label, metrics in rows}
    print(f"rows={n_queries * 100:,}")
    for label, seconds in timings.items():
        print(f"{label:40s} {seconds:6.2f} s")
    print(f"ndcg sweep / one cutoff: {timings['ndcg@<20 cutoffs>'] / timings['ndcg@10']:.2f}x")
    four = timings["p, recall, map, ndcg @<20 cutoffs>"] / timings["p, recall, map, ndcg @10"]
    print(f"4-metric sweep / one cutoff: {four:.2f}x")


if __name__ == "__main__":
    main()
