"""Eager against lazy: ``evaluate`` on an in-memory DataFrame and on ``scan_parquet``, tie check on.

``python benchmarks/eager_bench.py PATH [--repeat 3] [--modes eager,lazy,...]`` times the standard
suite (ndcg@10, map, mrr, p@10, recall@100) on the Parquet log ``PATH`` (for the issue's tied log:
``python benchmarks/generate.py 10000000 benchmarks/_data/tied10m.parquet``: 3-decimal scores, 99%
of the lists tied), each run in a fresh process, the modes alternating so a change of the shared
machine's load hits each of them:

* ``eager``: ``evaluate(pl.read_parquet(PATH), SUITE)``, the default tie check
  (``tie_warning=0.01``); the time is the evaluation (the read is timed apart: a DataFrame
  is already in memory);
* ``lazy``: ``evaluate(pl.scan_parquet(PATH), SUITE).collect()``, the same check; the time
  includes the read (a LazyFrame reads while it evaluates);
* ``eager_off`` / ``lazy_off``: the same with ``tie_warning=None``.

Peak RSS is each process's own (``resource.getrusage(RUSAGE_SELF).ru_maxrss``), the read of the
DataFrame included. Prints the machine, each run, the best of the runs per mode, and the ratios
of eager to lazy (time and peak RSS).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

SUITE = ["ndcg@10", "map", "mrr", "p@10", "recall@100"]
MODES = ["eager", "lazy", "eager_off", "lazy_off"]


def worker(mode: str, path: str) -> None:
    """One run of one mode in this (fresh) process; prints a JSON line."""
    import resource
    import warnings

    import polars as pl

    import polars_rankeval as rke

    limit = None if mode.endswith("_off") else 0.01
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        if mode.startswith("eager"):
            frame = pl.read_parquet(path)
            read = time.perf_counter()
            out = rke.evaluate(frame, SUITE, tie_warning=limit)
        else:
            read = start
            out = rke.evaluate(pl.scan_parquet(path), SUITE, tie_warning=limit).collect()
        done = time.perf_counter()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    peak = usage.ru_maxrss / 1024  # KiB on Linux
    warned = any(type(w.message).__name__ == "TieWarning" for w in caught)
    means = {name: out[name][0] for name in SUITE}
    print(
        json.dumps(
            {
                "read": read - start,
                "evaluate": done - read,
                "peak_mb": peak,
                "cpu": usage.ru_utime + usage.ru_stime,
                "warned": warned,
                "means": means,
            }
        )
    )


def machine() -> str:
    """The CPU, core count, memory and versions, as the benchmark tables print them."""
    import polars as pl

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            names = [
                line.split(":", 1)[1].strip() for line in info if line.startswith("model name")
            ]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{os.cpu_count()} CPU ({cpu}), {memory:.0f} GiB RAM, Python {platform.python_version()}, "
        f"Polars {pl.__version__}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--modes", default="eager,lazy")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.path)
        return
    modes = args.modes.split(",")
    print(machine())
    runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in modes}
    for _ in range(args.repeat):
        for mode in modes:
            done = subprocess.run(
                [sys.executable, __file__, args.path, "--worker", mode],
                capture_output=True,
                text=True,
                check=True,
            )
            run = json.loads(done.stdout.strip().splitlines()[-1])
            runs[mode].append(run)
            print(
                f"{mode:10} evaluate {run['evaluate']:6.2f} s  read {run['read']:5.2f} s  "
                f"peak {run['peak_mb']:6.0f} MB  process CPU {run['cpu']:6.2f} s  "
                f"warned={run['warned']}",
                flush=True,
            )
    best = {mode: min(r["evaluate"] for r in rs) for mode, rs in runs.items()}
    peak = {mode: min(r["peak_mb"] for r in rs) for mode, rs in runs.items()}
    print("best of", args.repeat)
    for mode in modes:
        print(f"{mode:10} {best[mode]:6.2f} s  {peak[mode]:6.0f} MB")
    for eager, lazy in (("eager", "lazy"), ("eager_off", "lazy_off")):
        if eager in best and lazy in best:
            print(
                f"{eager} / {lazy}: time {best[eager] / best[lazy]:.2f}x, "
                f"peak RSS {peak[eager] / peak[lazy]:.2f}x"
            )
    means = {mode: rs[0]["means"] for mode, rs in runs.items()}
    if len({json.dumps(m, sort_keys=True) for m in means.values()}) > 1:
        print("MEANS DIFFER:", means)


if __name__ == "__main__":
    main()
