"""Benchmark of rke.compare_per_query: 100,000 queries × 5 systems × 5 metrics, randomization.

Each configuration runs in a fresh process (wall time of the comparison alone, after building
the per-query table, and that process's peak RSS). ``--write`` puts the table into
benchmarks/README.md between the compare markers.

    python -m pip install -e ".[stats]"
    python benchmarks/compare_bench.py --write
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
METRICS = ["ndcg@10", "map", "mrr", "p@10", "recall@100"]
SYSTEMS = ["bm25", "dense", "hybrid", "rerank", "splade"]


def per_query_table(n_queries: int, seed: int = 0):  # type: ignore[no-untyped-def]
    """Metric-like per-query values: shared query difficulty, small system effects, many ties."""
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(seed)
    difficulty = rng.beta(2, 3, n_queries)
    frames = []
    for index, system in enumerate(SYSTEMS):
        columns = {"system": system, "query": np.arange(n_queries)}
        for metric in METRICS:
            noise = rng.normal(0.01 * index, 0.15, n_queries)
            columns[metric] = np.clip(difficulty + noise, 0, 1).round(2)  # ties, like P@10
        frames.append(pl.DataFrame(columns))
    return pl.concat(frames)


def child(config: dict[str, object]) -> None:
    import resource

    import polars_rankeval as rke

    table = per_query_table(int(config["queries"]))  # type: ignore[arg-type]
    start = time.perf_counter()
    out = rke.compare_per_query(
        table,
        by="system",
        baseline=config["baseline"],
        test=config["test"],  # type: ignore[arg-type]
        n_resamples=int(config["resamples"]),  # type: ignore[arg-type]
    )
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_mb": peak, "rows": out.height}))


CONFIGS = [
    {"queries": 100_000, "baseline": "bm25", "test": "randomization", "resamples": 10_000},
    {"queries": 100_000, "baseline": None, "test": "randomization", "resamples": 10_000},
    {"queries": 100_000, "baseline": "bm25", "test": "t", "resamples": 10_000},
    {"queries": 100_000, "baseline": "bm25", "test": "bootstrap", "resamples": 10_000},
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true", help="update benchmarks/README.md")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(json.loads(args.child))
        return
    lines = [
        f"Machine: {os.cpu_count()} vCPU, {platform.system()}, Python "
        f"{platform.python_version()}. One run per row, each in a fresh process; the time is "
        "the comparison alone (the per-query table is built first).",
        "",
        "| queries | systems × metrics | pairs | test | resamples | rows out | time (s) "
        "| peak RSS (MB) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for config in CONFIGS:
        done = subprocess.run(
            [sys.executable, __file__, "--child", json.dumps(config)],
            capture_output=True,
            text=True,
            check=True,
        )
        result = json.loads(done.stdout.strip().splitlines()[-1])
        pairs = "vs bm25" if config["baseline"] else "all pairs"
        line = (
            f"| {config['queries']:,} | {len(SYSTEMS)} × {len(METRICS)} | {pairs} | "
            f"{config['test']} | {config['resamples']:,} | {result['rows']} | "
            f"{result['seconds']:.1f} | {result['peak_mb']:.0f} |"
        )
        print(line, flush=True)
        lines.append(line)
    if args.write:
        readme = HERE / "README.md"
        text = readme.read_text()
        block = "<!-- compare:start -->\n" + "\n".join(lines) + "\n<!-- compare:end -->"
        if "<!-- compare:start -->" in text:
            text = re.sub(r"<!-- compare:start -->.*<!-- compare:end -->", block, text, flags=re.S)
        else:
            text += (
                "\n## Comparing systems: `compare` at 100,000 queries\n\n"
                '```bash\npython -m pip install -e ".[stats]"\n'
                "python benchmarks/compare_bench.py --write\n```\n\n"
                "The target: 100,000 queries × 5 systems × 5 metrics with "
                '`test="randomization"` and `n_resamples=10_000` in under a minute at bounded '
                "memory. The resampling runs in numpy on the per-query table, in chunks of "
                "about 4M resample × query cells, with one set of random draws shared by every "
                "pair and metric of the same size.\n\n" + block + "\n"
            )
        readme.write_text(text)


if __name__ == "__main__":
    main()
