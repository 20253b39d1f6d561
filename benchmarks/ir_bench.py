"""Diversity and C/W/L measures against ir_measures: the same data, the values, time and memory.

``python benchmarks/ir_bench.py --queries 10000 --depth 1000 [--peer]`` writes a TREC run
(``--queries`` × ``--depth`` rows) and diversity qrels (about 100 judged documents per query,
1 to 6 subtopics, grades 0-2) under ``benchmarks/_data/``, then times, each in a fresh process
from reading the files to the means:

* ``diversity``: ``alpha_ndcg@20`` and ``err_ia@20`` (ir_measures: ``alpha_nDCG@20`` and
  ``ERR_IA@20``, pyndeval);
* ``cwl``: INST, INSQ, BPM@10, SDCG@10, NERR8@10, NERR9@10, NERR10 and NERR11 (``max_rel=2``;
  ir_measures: cwl_eval).

Ours reads the Parquet files lazily and streams (``convention="ir_measures"``, so the values are
comparable); with ``--peer`` ir_measures reads the same data converted to its input (a pandas
run and qrels frame; the run sorted as a run file is, since cwl_eval keeps tied documents in the
order given). Peak memory is the process's maximum resident set (``ru_maxrss``). The
means of both tools are printed with their largest difference.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl

HERE = Path(__file__).resolve().parent
DATA = HERE / "_data"

SETS = {
    "diversity": (["alpha_nDCG@20", "ERR_IA@20"]),
    "cwl": [
        "INST(max_rel=2)",
        "INSQ(max_rel=2)",
        "BPM(max_rel=2)@10",
        "SDCG(max_rel=2)@10",
        "NERR8(max_rel=2)@10",
        "NERR9(max_rel=2)@10",
        "NERR10(max_rel=2)",
        "NERR11(max_rel=2)",
    ],
}

OURS = r"""
import json, resource, sys, time
import polars as pl
import polars_rankeval as rke

run_path, qrels_path, names = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
started = time.perf_counter()
run = pl.scan_parquet(run_path)
qrels = pl.scan_parquet(qrels_path)
diversity = any("IA" in n or "alpha" in n for n in names)
if diversity:
    log = rke.join_run_qrels(run, qrels)
else:
    judged = qrels.group_by("query", "item").agg(pl.col("relevance").max())
    log = rke.join_run_qrels(run, judged)
means = rke.evaluate(log, names, convention="ir_measures").collect()
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "peak_mb": peak, "means": means.row(0, named=True)}))
"""

PEER = r"""
import json, resource, sys, time
import pandas as pd
import ir_measures

run_path, qrels_path, names = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
started = time.perf_counter()
run = pd.read_parquet(run_path).rename(columns={"query": "query_id", "item": "doc_id"})
# a run file's order (trec_eval's: score, then docno, descending): cwl_eval keeps ties as given
run = run.sort_values(["query_id", "score", "doc_id"], ascending=[True, False, False])
qrels = pd.read_parquet(qrels_path).rename(
    columns={"query": "query_id", "item": "doc_id", "subtopic": "iteration"}
)
diversity = any("IA" in n or "alpha" in n for n in names)
if not diversity:
    qrels = qrels.groupby(["query_id", "doc_id"], as_index=False)["relevance"].max()
measures = [ir_measures.parse_measure(n) for n in names]
means = ir_measures.calc_aggregate(measures, qrels, run)
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "peak_mb": peak,
                  "means": {str(m): float(v) for m, v in means.items()}}))
"""


def make(queries: int, depth: int, seed: int = 18) -> tuple[Path, Path]:
    """A run of queries × depth rows (scores with ties) and diversity qrels, as Parquet."""
    DATA.mkdir(exist_ok=True)
    run_path = DATA / f"ir_run_{queries}x{depth}.parquet"
    qrels_path = DATA / f"ir_qrels_{queries}x{depth}.parquet"
    if run_path.exists() and qrels_path.exists():
        return run_path, qrels_path
    rng = np.random.default_rng(seed)
    pool = depth + depth // 5
    query = np.repeat(np.arange(queries), depth)
    item = np.concatenate([rng.choice(pool, size=depth, replace=False) for _ in range(queries)])
    pl.DataFrame(
        {
            "query": query.astype(str),
            "item": [f"d{i:05d}" for i in item],
            "score": np.round(rng.random(query.size), 3),  # three decimals: some ties
        }
    ).write_parquet(run_path)
    judged_per_query = 100
    q = np.repeat(np.arange(queries), judged_per_query)
    docs = np.concatenate(
        [rng.choice(pool, size=judged_per_query, replace=False) for _ in range(queries)]
    )
    n_sub = rng.integers(1, 7, size=queries)[q]
    rows = {"query": [], "subtopic": [], "item": [], "relevance": []}
    for subtopic in range(1, 7):
        present = subtopic <= n_sub
        hit = present & (rng.random(q.size) < 0.35)
        grade = np.where(hit, rng.choice([1, 2], size=q.size, p=[0.7, 0.3]), 0)
        keep = present & (hit | (rng.random(q.size) < 0.2))
        rows["query"].append(q[keep].astype(str))
        rows["subtopic"].append(np.full(int(keep.sum()), str(subtopic)))
        rows["item"].append(np.array([f"d{i:05d}" for i in docs[keep]]))
        rows["relevance"].append(grade[keep])
    pl.DataFrame({name: np.concatenate(parts) for name, parts in rows.items()}).write_parquet(
        qrels_path
    )
    return run_path, qrels_path


def run(script: str, python: str, run_path: Path, qrels_path: Path, names: list[str]) -> dict:
    done = subprocess.run(
        [python, "-c", script, str(run_path), str(qrels_path), json.dumps(names)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=1_000)
    parser.add_argument("--sets", default="diversity,cwl")
    parser.add_argument("--peer", action="store_true", help="also run ir_measures")
    parser.add_argument("--python", default=sys.executable, help="the peer's interpreter")
    parser.add_argument("--make-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.make_only:
        make(args.queries, args.depth)
        return
    # The data are written by a child process: on Linux a process's peak RSS (ru_maxrss) is
    # inherited across fork and exec, so the timed children must not descend from a big one.
    subprocess.run(
        [sys.executable, __file__, "--make-only", "--queries", str(args.queries),
         "--depth", str(args.depth)],
        check=True,
    )  # fmt: skip
    run_path, qrels_path = make(args.queries, args.depth)
    print(
        f"{args.queries * args.depth:,} run rows; {platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()}, polars {pl.__version__}"
    )
    for name in args.sets.split(","):
        names = SETS[name]
        ours = run(OURS, sys.executable, run_path, qrels_path, names)
        line = f"{name:10s} ours {ours['seconds']:7.2f} s {ours['peak_mb']:7.0f} MB"
        if args.peer:
            theirs = run(PEER, args.python, run_path, qrels_path, names)
            gap = max(abs(ours["means"][n] - theirs["means"][n]) for n in names)
            line += (
                f" | ir_measures {theirs['seconds']:7.2f} s {theirs['peak_mb']:7.0f} MB"
                f" | {theirs['seconds'] / ours['seconds']:5.1f}x | max |diff| {gap:.1e}"
            )
        print(line, flush=True)
        print("   ", {n: round(v, 6) for n, v in ours["means"].items()})


if __name__ == "__main__":
    main()
