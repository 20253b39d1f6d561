"""Many TREC runs: one ``rank-eval`` call for all of them against a shell loop of one call each.

``python benchmarks/many_runs_bench.py --runs 17 --topics 100 --depth 1000`` writes ``--runs``
gzipped TREC runs (``--depth`` documents per topic, scores with ties) and one qrels file under
``benchmarks/_data/many_runs/``, then times, each as a fresh process as a shell would start it:

* ``rank-eval RUN_1 ... RUN_n --qrels QRELS -f trec`` (one call, trec_eval's official measures);
* the same command once per run (the loop users wrote before), summed;
* ``rank-eval compare RUN_1 ... RUN_n --qrels QRELS --baseline run01``.

It prints the three times and checks that the one-call output equals the loop's outputs
concatenated, each with its run's name on the ``runid`` line.
"""

from __future__ import annotations

import argparse
import gzip
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DATA = HERE / "_data" / "many_runs"
COMMAND = [sys.executable, "-m", "polars_rankeval"]


def write_runs(
    runs: int, topics: int, depth: int, *, decimals: int = 2, folder: Path = DATA
) -> tuple[list[Path], Path]:
    """Gzipped runs (scores rounded to ``decimals``) and their qrels under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    pool = depth * 3
    qrels = folder / "qrels.txt"
    with qrels.open("w") as out:
        for topic in range(topics):
            judged = rng.choice(pool, size=pool // 4, replace=False)
            labels = rng.choice([0, 0, 0, 1, 2], size=judged.size)
            out.writelines(
                f"{401 + topic} 0 D{doc:06d} {label}\n"
                for doc, label in zip(judged, labels, strict=True)
            )
    paths = []
    for run in range(1, runs + 1):
        path = folder / f"run{run:02d}.txt.gz"
        paths.append(path)
        if path.exists():
            continue
        with gzip.open(path, "wt") as out:
            for topic in range(topics):
                docs = rng.choice(pool, size=depth, replace=False)
                scores = np.round(np.sort(rng.normal(10, 2, depth))[::-1], decimals)
                out.writelines(
                    f"{401 + topic} Q0 D{doc:06d} {rank} {score:.{decimals}f} run{run:02d}\n"
                    for rank, (doc, score) in enumerate(zip(docs, scores, strict=True), start=1)
                )
    return paths, qrels


def _timed(argv: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    return time.perf_counter() - started, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=17)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--depth", type=int, default=1000)
    args = parser.parse_args()
    paths, qrels = write_runs(args.runs, args.topics, args.depth)
    files = [str(path) for path in paths]
    one_call, together = _timed([*COMMAND, *files, "--qrels", str(qrels), "-f", "trec"])
    loop = 0.0
    outputs = []
    for path in files:
        seconds, out = _timed([*COMMAND, path, "--qrels", str(qrels), "-f", "trec"])
        loop += seconds
        outputs.append(out)
    compare, _ = _timed(
        [
            *COMMAND,
            "compare",
            *files,
            "--qrels",
            str(qrels),
            "--baseline",
            "run01",
            "-m",
            "map,p@10,ndcg@10",
        ]
    )
    # The loop's outputs name each run by its tag, the one call by its file stem (run01.txt.gz:
    # run01), the same names here.
    same = together == "".join(outputs)
    print(f"{args.runs} runs x {args.topics} topics x {args.depth} documents (gzipped)")
    print(f"one call: {one_call:.2f} s; a loop of {args.runs} calls: {loop:.2f} s")
    print(f"compare, one call: {compare:.2f} s")
    print(f"one call's output equals the loop's, run by run: {same}")


if __name__ == "__main__":
    main()
