"""What ``rke.explain`` costs, in units of the one ``evaluate`` it takes apart.

``python benchmarks/explain_bench.py --rows 1e6`` writes once, under ``benchmarks/_data/explain/``,
a log of ``--rows / 100`` queries x 100 rows (graded labels on about a third of the rows, scores
with 2 decimals so some tie, a tenth of the judged rows unretrieved), then times, each case in a
fresh process, ``--repeat`` times (median shown, all times beside it), from the read log to the
result, and the process's peak RSS:

* ``evaluate``: ``rke.evaluate(log, "ndcg@10")``, the unit;
* ``explain trec_eval -> torchmetrics``: three settings differ (ties, unretrieved, unlabelled):
  the metric under 2^3 = 8 mixes, each evaluated for its mean and per query;
* ``explain trec_eval -> gdeval``: two settings (gain, and empty_queries: gdeval.pl leaves out
  topics with nothing relevant): 4 mixes;
* ``explain a printed mean``: the search for the setup behind gdeval's mean, printed to 4
  decimals (presets, then changes of one or two settings), then the attribution.

No peer explains a difference, so there is no ratio to a peer; the table gives each case's time
over ``evaluate``'s. ``--rows 1e4 --repeat 1`` is a smoke run of a few seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import polars as pl

HERE = Path(__file__).resolve().parent
DATA = HERE / "_data" / "explain"
SEED = 32

CASES = {
    "evaluate": "rke.evaluate(log, 'ndcg@10')",
    "explain trec_eval -> torchmetrics": "rke.explain(log, 'ndcg@10', 'trec_eval', 'torchmetrics')",
    "explain trec_eval -> gdeval": "rke.explain(log, 'ndcg@10', 'trec_eval', 'gdeval')",
    "explain a printed mean": (
        "rke.explain(log, 'ndcg@10', 'trec_eval', "
        "round(rke.evaluate(log, 'ndcg@10', convention='gdeval').item(), 4))"
    ),
}


def make_log(rows: int, path: Path) -> None:
    """``rows / 100`` queries x 100 rows, from a fixed seed."""
    rng = np.random.default_rng(SEED)
    queries = max(rows // 100, 1)
    n = queries * 100
    labels = rng.choice([0, 1, 2, 3], size=n, p=[0.55, 0.25, 0.15, 0.05])
    judged = rng.random(n) < 0.35
    score = np.round(rng.random(n) + 0.3 * labels, 2)
    unretrieved = judged & (rng.random(n) < 0.1)
    pl.DataFrame(
        {
            "query": np.repeat(np.arange(queries), 100),
            "item": np.tile(np.arange(100), queries),
            "score": pl.Series(score).set(pl.Series(unretrieved), None)
            if unretrieved.any()
            else score,
            "relevance": pl.Series(labels.astype(np.int8)).set(pl.Series(~judged), None),
        }
    ).write_parquet(path)


def time_case(path: Path, call: str) -> dict[str, float]:
    """One case in a fresh process: seconds from the read log to the result, peak RSS (MiB)."""
    script = textwrap.dedent(
        f"""
        import json, resource, time, warnings
        import polars as pl
        import polars_rankeval as rke
        warnings.simplefilter("ignore")
        log = pl.read_parquet({str(path)!r})
        start = time.perf_counter()
        result = {call}
        seconds = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps({{"seconds": seconds, "peak_mib": peak}}))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e6)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = int(args.rows)
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"log_{rows}.parquet"
    if not path.exists():
        make_log(rows, path)
    print(f"# {rows:,} rows; {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs")
    print("| case | seconds (median) | all runs | x evaluate | peak RSS MiB |")
    print("| --- | --- | --- | --- | --- |")
    unit = None
    for name, call in CASES.items():
        runs = [time_case(path, call) for _ in range(args.repeat)]
        seconds = statistics.median(run["seconds"] for run in runs)
        unit = unit or seconds
        peak = max(run["peak_mib"] for run in runs)
        every = ", ".join(f"{run['seconds']:.2f}" for run in runs)
        print(f"| {name} | {seconds:.2f} | {every} | {seconds / unit:.1f} | {peak:.0f} |")


if __name__ == "__main__":
    main()
