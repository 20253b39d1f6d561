"""Read once: 17 gzipped TREC runs evaluated lazily against collect-then-evaluate.

``python benchmarks/read_once_bench.py [--repeat 3]`` reads the runs that
``benchmarks/many_runs_bench.py`` writes under ``benchmarks/_data/many_runs/`` (17 runs of 100
topics x 1,000 documents, gzipped), joins them with the qrels (``join_run_qrels(...,
by="system")``) and times, each in a fresh process, from the lazy join to the means of the
standard suite (ndcg@10, map, mrr, p@10, recall@100) by system:

* ``lazy``: ``evaluate(joined).collect()`` (default ``n_buckets="auto"``);
* ``eager``: ``evaluate(joined.collect(), tie_warning=None)``: collect-then-evaluate doing the
  same work (the tie check is only done for a DataFrame);
* ``eager_tie_check``: ``evaluate(joined.collect())`` with the default tie check.

Reading the files (``read_trec_run``, which holds them in memory) is timed apart and is the
same in every mode. Modes alternate, so a change of the machine's load hits each of them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "_data" / "many_runs"
SUITE = ["ndcg@10", "map", "mrr", "p@10", "recall@100"]
MODES = ["lazy", "eager", "eager_tie_check"]


def worker(mode: str) -> None:
    import warnings

    import polars as pl

    import polars_rankeval as rke

    warnings.simplefilter("ignore")  # the tie and coverage warnings are not timed output
    start = time.perf_counter()
    runs = [
        rke.read_trec_run(path).with_columns(pl.lit(path.name[:5]).alias("system"))
        for path in sorted(DATA.glob("run*.txt.gz"))
    ]
    joined = rke.join_run_qrels(
        pl.concat(runs), rke.read_trec_qrels(DATA / "qrels.txt"), by="system"
    )
    read = time.perf_counter()
    if mode == "lazy":
        out = rke.evaluate(joined, SUITE, by="system").collect()
    elif mode == "eager":
        out = rke.evaluate(joined.collect(), SUITE, by="system", tie_warning=None)
    else:
        out = rke.evaluate(joined.collect(), SUITE, by="system")
    done = time.perf_counter()
    print(json.dumps({"read": read - start, "evaluate": done - read, "rows": out.height}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return
    if not (DATA / "run17.txt.gz").exists():
        sys.exit("no runs: write them first with python benchmarks/many_runs_bench.py")
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    reads: list[float] = []
    for _ in range(args.repeat):
        for mode in MODES:
            done = subprocess.run(
                [sys.executable, __file__, "--worker", mode],
                capture_output=True,
                text=True,
                check=True,
            )
            result = json.loads(done.stdout.strip().splitlines()[-1])
            times[mode].append(result["evaluate"])
            reads.append(result["read"])
    print(f"reading the 17 runs and the qrels: median {statistics.median(reads):.2f} s")
    for mode, seconds in times.items():
        shown = ", ".join(f"{s:.2f}" for s in seconds)
        print(f"{mode:16s} median {statistics.median(seconds):.2f} s  ({shown})")


if __name__ == "__main__":
    main()
