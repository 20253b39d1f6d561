"""Time and peak memory of the Tukey HSD tests as the number of systems grows.

Run: ``python benchmarks/tukey_bench.py [--systems 5,10,17,30] [--queries 100]
[--resamples 10000] [--no-ranx]``.

Every measurement runs in a fresh child process (``python tukey_bench.py --child ...``), which
reports the wall time of the call alone and its own peak RSS (``VmHWM``, else ``getrusage``), so one
run's memory does not hide another's. The per-query table is generated from a seed: topic
difficulty plus a system effect plus noise, clipped to [0, 1] like a metric, the same table for
every tool. Measured:

* ``tukey``: ``compare_per_query(..., test="tukey")``, the randomized Tukey HSD;
* ``tukey_hsd``: the parametric Tukey HSD over the two-way ANOVA, through
  ``compare_per_query(..., test="tukey_hsd")`` once compare calls
  ``_stats.tukey_hsd_parametric_p``, else that function directly (the output says which);
* ``ranx``: ranx's ``stat_test="tukey"`` test (``ranx.statistical_tests.tukey_hsd_test``, that
  is scipy's one-way ``tukey_hsd``) on the same per-query scores, when ranx is installed. It is
  the statistics step of ``ranx.compare`` only, without evaluating runs;
* ``ranx_compare``: ``ranx.compare(qrels, runs, ["map"], stat_test="tukey")`` end to end on
  generated runs of 100 documents a query (other data: ranx evaluates runs, it cannot take a
  per-query table), in a fresh process, so numba's compilation is included as a user sees it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import subprocess
import sys
import time

import numpy as np
import polars as pl


def per_query_table(n_systems: int, n_queries: int, seed: int = 0) -> pl.DataFrame:
    """One row per (system, query) with a metric-like ``map`` column."""
    rng = np.random.default_rng(seed)
    topic = rng.beta(2, 4, n_queries)  # hard and easy topics, shared by every system
    effect = np.linspace(0.0, 0.08, n_systems)  # small, graded system differences
    noise = rng.normal(0.0, 0.12, (n_queries, n_systems))
    scores = np.clip(topic[:, None] + effect[None, :] + noise, 0.0, 1.0)
    return pl.DataFrame(
        {
            "system": np.repeat([f"s{i:02d}" for i in range(n_systems)], n_queries),
            "query": np.tile(np.arange(n_queries), n_systems),
            "map": scores.T.ravel(),
        }
    )


def ranx_runs(n_systems: int, n_queries: int, seed: int = 0) -> tuple[object, list[object]]:
    """ranx qrels and runs of 100 documents a query (10% relevant), graded system quality."""
    from ranx import Qrels, Run  # type: ignore[import-untyped]

    rng = np.random.default_rng(seed)
    relevant = rng.random((n_queries, 100)) < 0.1
    qrels = Qrels(
        {
            f"q{q}": {f"d{d}": 1 for d in np.flatnonzero(relevant[q])} or {"d0": 0}
            for q in range(n_queries)
        }
    )
    runs = []
    for system in range(n_systems):
        scores = rng.random((n_queries, 100)) + relevant * (0.2 + 0.02 * system)
        ranking = {
            f"q{q}": {f"d{d}": float(scores[q, d]) for d in range(100)} for q in range(n_queries)
        }
        runs.append(Run(ranking, name=f"s{system:02d}"))
    return qrels, runs


def _peak_mb() -> float:
    # VmHWM is this process image's own peak; ru_maxrss survives exec on Linux, so a child
    # would report its parent's peak if the parent had been bigger.
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    # ru_maxrss is in KiB on Linux (bytes on macOS).
    scale = 1.0 if sys.platform != "darwin" else 1.0 / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 1024


def child(mode: str, n_systems: int, n_queries: int, resamples: int) -> dict[str, object]:
    """Run one measurement in this process and describe it."""
    import polars_rankeval as rke
    from polars_rankeval.comparison import _stats

    table = per_query_table(n_systems, n_queries)
    scores = np.column_stack(
        [
            table.filter(pl.col("system") == name)["map"].to_numpy()
            for name in sorted(table["system"].unique())
        ]
    )
    # Imports are not timed: the first call of every tool pays for the same scipy.stats.
    import scipy.stats  # type: ignore[import-untyped]  # noqa: F401

    if mode == "ranx":
        from ranx.statistical_tests import tukey_hsd_test  # type: ignore[import-untyped]
    if mode == "ranx_compare":
        from ranx import compare

        qrels, runs = ranx_runs(n_systems, n_queries)
    ready_mb = _peak_mb()
    path = mode
    start = time.perf_counter()
    if mode == "tukey":
        out = rke.compare_per_query(table, by="system", test="tukey", n_resamples=resamples)
        smallest = float(out["p_value"].min())  # type: ignore[arg-type]
        path = "compare_per_query"
    elif mode == "tukey_hsd":
        # rke.compare is the function; the module is found by its name.
        module = sys.modules["polars_rankeval.comparison._compare"]
        wired = getattr(module, "tukey_hsd_parametric_p", None)
        if wired is _stats.tukey_hsd_parametric_p:
            out = rke.compare_per_query(table, by="system", test="tukey_hsd")
            smallest = float(out["p_value"].min())  # type: ignore[arg-type]
            path = "compare_per_query"
        else:
            smallest = float(_stats.tukey_hsd_parametric_p(scores).min())
            path = "_stats.tukey_hsd_parametric_p"
    elif mode == "ranx_compare":
        compare(qrels, runs, ["map"], stat_test="tukey")
        smallest = float("nan")  # other data: runs of 100 documents, evaluated by ranx
        path = "ranx.compare, evaluating 100-document runs"
    else:
        names = [f"s{i:02d}" for i in range(n_systems)]
        found = tukey_hsd_test(names, list(scores.T), 0.05)
        smallest = min(row["p-value"] for row in found)
        path = "ranx tukey_hsd_test"
    seconds = time.perf_counter() - start
    return {
        "mode": mode,
        "path": path,
        "systems": n_systems,
        "queries": n_queries,
        "resamples": resamples if mode == "tukey" else None,
        "seconds": seconds,
        "peak_mb": _peak_mb(),
        "ready_mb": ready_mb,
        "smallest_p": smallest,
    }


def measure(mode: str, n_systems: int, n_queries: int, resamples: int) -> dict[str, object]:
    command = [sys.executable, __file__, "--child", mode]
    command += ["--systems", str(n_systems), "--queries", str(n_queries)]
    command += ["--resamples", str(resamples)]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=3600)
    if done.returncode != 0:
        return {"mode": mode, "systems": n_systems, "error": done.stderr.strip()[-300:]}
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", default="5,10,17,30")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--no-ranx", action="store_true")
    parser.add_argument("--child", choices=["tukey", "tukey_hsd", "ranx", "ranx_compare"])
    args = parser.parse_args()
    if args.child:
        systems = int(args.systems)
        print(json.dumps(child(args.child, systems, args.queries, args.resamples)))
        return
    modes = ["tukey", "tukey_hsd"]
    if not args.no_ranx:
        if importlib.util.find_spec("ranx") is None:
            print("ranx is not installed: its rows are left out")
        else:
            modes += ["ranx", "ranx_compare"]
    print(f"{args.queries} queries, {args.resamples:,} resamples for the randomized test")
    print("| systems | test | path | wall (s) | peak RSS (MB) | after setup (MB) | min p |")
    print("| ---: | --- | --- | ---: | ---: | ---: | ---: |")
    for systems in (int(value) for value in args.systems.split(",")):
        for mode in modes:
            row = measure(mode, systems, args.queries, args.resamples)
            if "error" in row:
                print(f"| {systems} | {mode} | error: {row['error']} | | | | |")
                continue
            print(
                f"| {systems} | {mode} | {row['path']} | {row['seconds']:.2f} "
                f"| {row['peak_mb']:.0f} | {row['ready_mb']:.0f} | {row['smallest_p']:.3g} |"
            )


if __name__ == "__main__":
    main()
