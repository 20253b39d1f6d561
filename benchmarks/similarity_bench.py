"""Run-vs-run similarity of two 10M-row systems: ``rke.similarity`` against a Python reference.

``python benchmarks/similarity_bench.py --queries 10000 --depth 1000 --reference rbo.py``
writes two systems' rankings of the same queries (``--depth`` documents each, drawn from a
shared pool so the lists overlap, scores with ties) as one Parquet log under
``benchmarks/_data/``, then times, each in a fresh process from reading the file to the means:

* ours: ``rke.similarity(scan, ["rbo(p=0.9)", "jaccard@10", "overlap@10"], by="system")``
  (ties broken as trec_eval does);
* the reference: Corsi & Urbano's ``rbo.py`` (julian-urbano/sigir2024-rbo, MIT; pass its path,
  it is not part of this repository) on each query's two strict rankings, and Jaccard@10 and
  overlap@10 with Python sets, reading the same file with polars and looping over queries.

It prints both times, peak memory (``ru_maxrss``; the data are written by a child process, as
that value is inherited across exec) and the largest difference of the means.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl

HERE = Path(__file__).resolve().parent
DATA = HERE / "_data"
METRICS = ["rbo(p=0.9)", "jaccard@10", "overlap@10"]

OURS = r"""
import json, resource, sys, time
import polars as pl
import polars_rankeval as rke

started = time.perf_counter()
out = rke.similarity(pl.scan_parquet(sys.argv[1]), json.loads(sys.argv[2]), by="system")
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
means = {name: out[name].item() for name in json.loads(sys.argv[2])}
print(json.dumps({"seconds": seconds, "peak_mb": peak, "means": means}))
"""

REFERENCE = r"""
import importlib.util, json, resource, sys, time
import numpy as np
import polars as pl

np.in1d = np.isin  # the reference predates numpy 2, which removed in1d

spec = importlib.util.spec_from_file_location("rbo_reference", sys.argv[2])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
started = time.perf_counter()
log = pl.read_parquet(sys.argv[1]).sort(
    ["system", "query", "score", "item"], descending=[False, False, True, True]
)
lists = {}
for (system, query), rows in log.group_by(["system", "query"], maintain_order=True):
    lists.setdefault(query, {})[system] = rows["item"].to_list()
totals = {"rbo(p=0.9)": 0.0, "jaccard@10": 0.0, "overlap@10": 0.0}
for ranked in lists.values():
    a, b = ranked["a"], ranked["b"]
    totals["rbo(p=0.9)"] += module.rbo(a, b, p=0.9, ties="w", score=("ext",))["ext"]
    top_a, top_b = set(a[:10]), set(b[:10])
    totals["jaccard@10"] += len(top_a & top_b) / len(top_a | top_b)
    totals["overlap@10"] += len(top_a & top_b) / 10
means = {name: total / len(lists) for name, total in totals.items()}
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "peak_mb": peak, "means": means}))
"""


def make(queries: int, depth: int, seed: int = 19) -> Path:
    """Two systems ranking ``depth`` of ``depth * 1.5`` pooled documents per query."""
    DATA.mkdir(exist_ok=True)
    path = DATA / f"similarity_{queries}x{depth}.parquet"
    if path.exists():
        return path
    rng = np.random.default_rng(seed)
    pool = depth + depth // 2
    frames = []
    quality = rng.normal(size=(queries, pool))  # what both systems see in a document
    for system in ("a", "b"):
        noisy = quality + rng.normal(scale=0.7, size=(queries, pool))
        top = np.argsort(-noisy, axis=1)[:, :depth]
        scores = np.round(np.take_along_axis(noisy, top, axis=1), 3)  # three decimals: ties
        frames.append(
            pl.DataFrame(
                {
                    "system": system,
                    "query": np.repeat(np.arange(queries), depth).astype(str),
                    "item": pl.Series((top + 1).ravel()).cast(pl.String),
                    "score": scores.ravel(),
                }
            )
        )
    pl.concat(frames).write_parquet(path)
    return path


def run(argv: list[str]) -> dict[str, object]:
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=1_000)
    parser.add_argument("--reference", help="path to Corsi & Urbano's rbo.py")
    parser.add_argument("--make-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.make_only:
        make(args.queries, args.depth)
        return
    size = ["--queries", str(args.queries), "--depth", str(args.depth)]
    subprocess.run([sys.executable, __file__, "--make-only", *size], check=True)
    path = make(args.queries, args.depth)
    rows = 2 * args.queries * args.depth
    ours = run([sys.executable, "-c", OURS, str(path), json.dumps(METRICS)])
    print(f"{rows:,} rows; ours {ours['seconds']:.2f} s, {ours['peak_mb']:.0f} MB", flush=True)
    print("   ", ours["means"])
    if args.reference:
        theirs = run([sys.executable, "-c", REFERENCE, str(path), args.reference])
        gap = max(abs(ours["means"][n] - theirs["means"][n]) for n in METRICS)  # type: ignore[index]
        ratio = float(theirs["seconds"]) / float(ours["seconds"])  # type: ignore[arg-type]
        print(
            f"reference {theirs['seconds']:.2f} s, {theirs['peak_mb']:.0f} MB; {ratio:.1f}x; "
            f"max |diff| of the means {gap:.1e}"
        )


if __name__ == "__main__":
    main()
