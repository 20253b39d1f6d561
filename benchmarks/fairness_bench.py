"""Fairness of exposure on a 10M-row log with 3 group dimensions: ours (lazy) next to the peers.

``python benchmarks/fairness_bench.py --rows 1e7`` writes, once, under
``benchmarks/_data/fairness/`` (``--data`` elsewhere), from a fixed seed:

* ``log_<rows>.parquet``: ``--rows / 100`` queries x 100 candidates: ``query`` (Int64), ``item``
  (Int64, distinct within a query), ``score`` (Float64, 3 decimals, so some tie), ``relevance``
  (Int8, graded 0-3 on about 30% of the rows, null = unjudged);
* ``groups_<rows>.parquet``: the catalogue of ``--rows / 10`` items (1M at 10M rows), wide
  layout: ``item``, ``provider_size`` (2 groups), ``region`` (5), ``gender`` (3), drawn with
  unequal frequencies; every item of the log has a row;
* ``target_global.parquet``: ``dimension``, ``group``, ``share`` (as ``data/fairness/``'s).

Then it times, each case in a fresh process, ``--repeat`` times (the median is shown, all
times beside it), the wall time from the scan to the collected result (imports excluded and
shown apart) and the process's peak RSS:

* **ours**: ``rke.evaluate`` with the fairness metrics of ``METRICS`` (a), and
  ``rke.group_exposure`` at ``k=10`` (b), both lazily from ``pl.scan_parquet``; beside them a
  Polars floor: the top 10 of every list joined to its groups, summed per intersectional group;
* **peers** (c), on the first ``--peer-queries`` queries only (their time is extrapolated
  linearly to every query, and the table says so): FairRankTune's ``EXP`` (MinMaxRatio) and
  ``NDKL`` called per query on the top 10 (a Python loop; each call gets the query's 100
  candidates as ``item_group_dict``), and the TREC Fair 2022 track's ``AWRFMetric`` (nDCG x
  AWRF, all three dimensions intersected, the global target) called per query as the track's
  ``Task1Evaluation.py`` calls it, imported from the verbatim copy in
  ``tests/fairness/reference/`` (skipped with a message when it is not there). Reading the
  subset, ranking it and building the peers' inputs is timed apart.

Groups are intersected over the three dimensions everywhere (2 x 5 x 3 = 30 cells). With 30
cells a top 10 always misses some group present among the candidates, so FairRankTune's
MinMaxRatio is 0 on every list: its mean is printed to show the call ran, not as a check.
``--rows 1e5 --repeat 1`` is a smoke run of a few seconds. Until ``rke.group_exposure``
exists, the cases of ours are skipped with a message (``--skip-ours`` skips them anyway).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "_data" / "fairness"
SEED = 31
CANDIDATES = 100
QUERIES_PER_CHUNK = 50_000
K = 10

# The API under test, in one place: metric strings and options may still change.
METRICS = ["ndcg@10", "awrf@10", "ndkl@10", "exp@10(combo=min_max_ratio)"]
EVALUATE_OPTIONS: dict[str, object] = {"tie_warning": None}  # as suite.py's lazy rows
GROUP_EXPOSURE_OPTIONS: dict[str, object] = {"k": K}

DIMENSIONS: dict[str, tuple[tuple[str, ...], tuple[float, ...]]] = {
    "provider_size": (("large", "small"), (0.3, 0.7)),
    "region": (("Africa", "Americas", "Asia", "Europe", "Oceania"), (0.07, 0.33, 0.17, 0.38, 0.05)),
    "gender": (("female", "male", "unknown"), (0.32, 0.48, 0.20)),
}
GLOBAL_TARGET: dict[str, dict[str, float]] = {
    "provider_size": {"large": 0.3, "small": 0.7},
    "region": {"Africa": 0.18, "Americas": 0.13, "Asia": 0.592, "Europe": 0.093, "Oceania": 0.005},
    "gender": {"female": 0.5, "male": 0.5, "unknown": 0.0},
}


# --- data -----------------------------------------------------------------------------------
def _log_chunk(first_query: int, n_queries: int, n_items: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n = n_queries * CANDIDATES
    # distinct items within a query: a random offset plus a stride prime to the catalogue size
    item = (
        rng.integers(0, n_items, size=n_queries).repeat(CANDIDATES)
        + np.tile(np.arange(CANDIDATES) * 7_919, n_queries)
    ) % n_items
    label = rng.choice(np.array([0, 1, 2, 3], dtype=np.int8), size=n, p=[0.85, 0.09, 0.04, 0.02])
    judged = rng.random(n) < 0.3
    return pl.DataFrame(
        {
            "query": np.repeat(
                np.arange(first_query, first_query + n_queries, dtype=np.int64), CANDIDATES
            ),
            "item": item.astype(np.int64),
            "score": np.round(rng.random(n) + 0.15 * label, 3),
            "relevance": pl.Series(np.where(judged, label, -1)).replace(-1, None).cast(pl.Int8),
        }
    )


def _groups(n_items: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    columns: dict[str, object] = {"item": np.arange(n_items, dtype=np.int64)}
    for name, (levels, mix) in DIMENSIONS.items():
        columns[name] = np.asarray(levels)[rng.choice(len(levels), size=n_items, p=mix)]
    return pl.DataFrame(columns)


def write_data(rows: int, folder: Path) -> dict[str, Path]:
    """The log, the groups table and the target (Parquet), each written once."""
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    paths = {
        "log": folder / f"log_{rows}.parquet",
        "groups": folder / f"groups_{rows}.parquet",
        "target": folder / "target_global.parquet",
    }
    n_queries = max(1, rows // CANDIDATES)
    n_items = max(rows // 10, 10_000)
    if not paths["log"].exists():
        writer = None
        partial = paths["log"].with_suffix(".partial")
        try:
            for index, first in enumerate(range(0, n_queries, QUERIES_PER_CHUNK)):
                size = min(QUERIES_PER_CHUNK, n_queries - first)
                table = _log_chunk(first, size, n_items, SEED + index).to_arrow()
                if writer is None:
                    writer = pq.ParquetWriter(partial, table.schema, compression="zstd")
                writer.write_table(table)
        finally:
            if writer is not None:
                writer.close()
        partial.rename(paths["log"])  # a killed run leaves no half log behind
    if not paths["groups"].exists():
        _groups(n_items, SEED).write_parquet(paths["groups"], row_group_size=1_000_000)
    if not paths["target"].exists():
        pl.DataFrame(
            [
                {"dimension": d, "group": g, "share": s}
                for d, shares in GLOBAL_TARGET.items()
                for g, s in shares.items()
            ]
        ).write_parquet(paths["target"])
    return paths


# --- child processes --------------------------------------------------------------------------
def _run(code: str, arguments: dict[str, object]) -> dict[str, Any]:
    """Run ``code`` in a fresh process; it prints one JSON line as its last output line."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", PEAK + textwrap.dedent(code), json.dumps(arguments)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["failed"]
        errors = [line for line in lines if "Error" in line or "error" in line]
        return {"error": (errors or lines)[-1]}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# Peak RSS of this process: VmHWM (reset at exec). ru_maxrss is the fallback only: on Linux a
# child inherits its parent's high-water mark through fork, so it could show the parent's peak.
PEAK = """
def peak_mb():
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""

OURS = """
import json, sys, time, warnings
t0 = time.perf_counter()
import polars as pl
import polars_rankeval as rke
imported = time.perf_counter() - t0
args = json.loads(sys.argv[1])
warnings.simplefilter("ignore")
t0 = time.perf_counter()
log = pl.scan_parquet(args["log"])
groups = pl.scan_parquet(args["groups"])
if args["case"] == "floor":
    dims = args["dimensions"]
    top = log.filter(
        pl.col("score").rank("ordinal", descending=True).over("query") <= args["k"]
    ).with_columns(
        (1.0 / pl.col("score").rank("ordinal", descending=True).over("query").clip(2, None)
         .cast(pl.Float64).log(2)).alias("w")
    )
    out = (
        top.join(groups, on="item", how="inner")
        .group_by("query", *dims).agg(pl.col("w").sum())
        .group_by(*dims).agg(pl.col("w").mean())
        .collect()
    )
    values = {"groups": out.height}
elif args["case"] == "evaluate":
    out = rke.evaluate(log, args["metrics"], groups=groups,
                       group_target=pl.scan_parquet(args["target"]), **args["options"])
    if isinstance(out, pl.LazyFrame):
        out = out.collect()
    values = {k: v for k, v in out.row(0, named=True).items() if isinstance(v, float)}
else:
    out = rke.group_exposure(log, groups=groups, **args["options"])
    if isinstance(out, pl.LazyFrame):
        out = out.collect()
    values = {"rows": out.height}
seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "import_s": imported, "rss_mb": peak_mb(),
                  "values": values}))
"""

# The peers' shared input: the first n queries, each list ranked as trec_eval ranks (score
# descending, ties by the item's string form descending), and each item's intersectional cell.
PEER_INPUT = """
import polars as pl
def peer_input(args):
    dims = args["dimensions"]
    lists = (
        pl.scan_parquet(args["log"])
        .filter(pl.col("query") < args["queries"])
        .join(pl.scan_parquet(args["groups"]), on="item", how="left")
        .with_columns(
            pl.concat_str(dims, separator=" x ").alias("cell"),
            pl.col("item").cast(pl.String).alias("key"),
        )
        .sort(["query", "score", "key"], descending=[False, True, True])
        .group_by("query", maintain_order=True)
        .agg("item", "cell", "relevance")
        .collect()
    )
    return lists
"""

FAIRRANKTUNE = """
import json, sys, time, warnings
warnings.simplefilter("ignore")
t0 = time.perf_counter()
import pandas as pd
import FairRankTune as frt
from FairRankTune.Metrics.EXP import EXP
from FairRankTune.Metrics.NDKL import NDKL
imported = time.perf_counter() - t0
args = json.loads(sys.argv[1])
t0 = time.perf_counter()
lists = peer_input(args)
inputs = []
for items, cells in zip(lists["item"].to_list(), lists["cell"].to_list()):
    inputs.append((pd.DataFrame({0: items[: args["k"]]}), dict(zip(items, cells))))
prep = time.perf_counter() - t0
seconds, values = {}, {}
for name, call in (("EXP MinMaxRatio", lambda r, g: EXP(r, g, "MinMaxRatio")[0]),
                   ("NDKL", lambda r, g: NDKL(r, g))):
    t0 = time.perf_counter()
    out = [call(ranking, group_of) for ranking, group_of in inputs]
    seconds[name] = time.perf_counter() - t0
    values[name] = sum(out) / len(out)
print(json.dumps({"seconds": seconds, "prep_s": prep, "import_s": imported,
                  "rss_mb": peak_mb(), "values": values, "queries": len(inputs),
                  "version": __import__("importlib.metadata").metadata.version("FairRankTune")}))
"""

TREC = """
import json, sys, time, warnings
warnings.simplefilter("ignore")
t0 = time.perf_counter()
import numpy as np
import pandas as pd
import xarray as xr
from tests.fairness.reference.wptrec.dimension import FairDim
from tests.fairness.reference.wptrec.metrics.awrf import AWRFMetric
imported = time.perf_counter() - t0
args = json.loads(sys.argv[1])
t0 = time.perf_counter()
lists = peer_input(args)
# the track's inputs: one-hot page alignments per dimension over the whole catalogue, the
# intersectional target per topic (here the global one), qrels of the relevant pages
catalogue = pl.read_parquet(args["groups"])
pages = pd.Index(catalogue["item"].to_numpy(), name="page")
dimensions = []
for name, levels in args["levels"].items():
    codes = catalogue[name].to_numpy()
    frame = pd.DataFrame({level: (codes == level).astype("f8") for level in levels}, index=pages)
    frame.name = name
    array = xr.DataArray(frame.to_numpy(), coords={"page": pages, name: levels},
                         dims=["page", name])
    dimensions.append(FairDim(frame, array))
shares = [np.array([args["shares"][name][level] for level in levels])
          for name, levels in args["levels"].items()]
cell = shares[0][:, None, None] * shares[1][None, :, None] * shares[2][None, None, :]
topics = lists["query"].to_numpy()
coords = {"topic_id": topics, **{name: list(levels) for name, levels in args["levels"].items()}}
target = xr.DataArray(np.broadcast_to(cell, (len(topics), *cell.shape)).copy(),
                      coords=coords, dims=["topic_id", *args["levels"]])
relevant = (
    lists.select("query", "item", "relevance").explode("item", "relevance")
    .filter(pl.col("relevance") >= 1)
)
qrels = pd.DataFrame({"topic_id": relevant["query"].to_numpy(),
                      "page_id": relevant["item"].to_numpy()}).set_index("topic_id")
metric = AWRFMetric(qrels, dimensions, target)
runs = [(q, pd.Series(items[: args["k"]], name=q))
        for q, items in zip(topics.tolist(), lists["item"].to_list())]
prep = time.perf_counter() - t0
t0 = time.perf_counter()
scores, skipped = [], 0
for q, run in runs:
    try:
        scores.append(float(metric(run, name=q)["Score"]))
    except KeyError:  # the track's qrels lookup fails on a topic without relevant pages
        skipped += 1
seconds = time.perf_counter() - t0
print(json.dumps({"seconds": {"AWRFMetric (nDCG x AWRF)": seconds}, "prep_s": prep,
                  "import_s": imported, "rss_mb": peak_mb(),
                  "values": {"AWRFMetric (nDCG x AWRF)": sum(scores) / max(len(scores), 1)},
                  "queries": len(runs), "skipped": skipped}))
"""


# --- report -----------------------------------------------------------------------------------
def _machine() -> str:
    cpu = platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            names = [
                line.split(":", 1)[1].strip() for line in info if line.startswith("model name")
            ]
        cpu = names[0] if names else cpu
        with open("/proc/meminfo") as info:
            memory = f", {int(info.readline().split()[1]) / 2**20:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        memory = ""
    return f"{cpu}, {os.cpu_count()} cores{memory}, {platform.system()} {platform.release()}"


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _ours_available() -> str | None:
    """None when the fairness API is there, else why the cases of ours are skipped."""
    done = subprocess.run(
        [sys.executable, "-c", "import polars_rankeval as r; r.group_exposure"],
        capture_output=True,
        text=True,
        check=False,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        },
    )
    if done.returncode == 0:
        return None
    return "polars_rankeval.group_exposure is not available yet"


def _time_ours(label: str, arguments: dict[str, object], rows: int, repeat: int) -> None:
    runs = [_run(OURS, arguments) for _ in range(repeat)]
    failed = [run for run in runs if "error" in run]
    if failed:
        print(f"| ours | {label} | error: {failed[0]['error']} | | | |")
        return
    times = sorted(float(run["seconds"]) for run in runs)
    median = statistics.median(times)
    rss = max(float(run["rss_mb"]) for run in runs)
    spread = (
        f"median of {len(times)}: {', '.join(f'{t:.2f}' for t in times)}; "
        if len(times) > 1
        else ""
    )
    print(
        f"| ours | {label} | {median:.2f} | {rows / median:,.0f} | {rss:.0f} | "
        f"{spread}import {runs[0]['import_s']:.2f} |"
    )
    values = runs[0]["values"]
    if isinstance(values, dict) and values:
        shown = ", ".join(
            f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in values.items()
        )
        print(f"|  | {label}: result | {shown} | | | |")


def _time_peer(tool: str, code: str, arguments: dict[str, object], n_queries: int) -> None:
    result = _run(PEER_INPUT + code, arguments)
    if "error" in result:
        print(f"| {tool} | | error: {result['error']} | | | |")
        return
    done = int(result["queries"])
    scale = n_queries / done
    note = "" if scale == 1 else f" (timed on {done:,} queries, x{scale:g})"
    skipped = int(result.get("skipped", 0))
    if skipped:
        note += f" ({skipped} queries without relevant pages raise KeyError: skipped)"
    values = result["values"]
    for name, seconds in result["seconds"].items():
        mean = values[name]
        print(
            f"| {tool} | {name}, per-query loop{note} | {seconds * scale:.2f} | "
            f"{done * CANDIDATES / seconds:,.0f} | {result['rss_mb']:.0f} | inputs "
            f"{result['prep_s']:.2f}, import {result['import_s']:.2f}; mean {mean:.4f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes per case (ours)")
    parser.add_argument("--peer-queries", type=int, default=2_000)
    parser.add_argument("--skip-ours", action="store_true")
    parser.add_argument("--skip-peers", action="store_true")
    args = parser.parse_args()
    rows = int(args.rows)
    started = time.perf_counter()
    paths = write_data(rows, args.data)
    written = time.perf_counter() - started
    n_rows = pl.scan_parquet(paths["log"]).select(pl.len()).collect().item()
    n_queries = max(1, rows // CANDIDATES)
    n_items = pl.scan_parquet(paths["groups"]).select(pl.len()).collect().item()
    print(f"machine: {_machine()}")
    print(
        f"versions: Python {platform.python_version()}, polars {pl.__version__}, numpy "
        f"{np.__version__}, polars-rankeval {_version('polars-rankeval')}, FairRankTune "
        f"{_version('FairRankTune')}"
    )
    print(
        f"data: log {n_rows:,} rows in {n_queries:,} queries "
        f"({paths['log'].stat().st_size / 2**20:.0f} MiB), groups {n_items:,} items x "
        f"{len(DIMENSIONS)} dimensions ({' x '.join(str(len(v[0])) for v in DIMENSIONS.values())}"
        f" groups); ready in {written:.1f} s"
    )
    print()
    print("| tool | what | time s | rows/s | peak RSS MiB | apart (s) |")
    print("|---|---|---|---|---|---|")
    common = {
        "log": str(paths["log"]),
        "groups": str(paths["groups"]),
        "target": str(paths["target"]),
        "dimensions": list(DIMENSIONS),
        "k": K,
    }
    skip = "--skip-ours" if args.skip_ours else _ours_available()
    _time_ours(
        "polars floor: top-10 exposure per intersectional group",
        {**common, "case": "floor"},
        n_rows,
        args.repeat,
    )
    if skip:
        print(f"| ours | evaluate, group_exposure | skipped: {skip} | | | |")
    else:
        _time_ours(
            f"evaluate {', '.join(METRICS)}",
            {**common, "case": "evaluate", "metrics": METRICS, "options": EVALUATE_OPTIONS},
            n_rows,
            args.repeat,
        )
        _time_ours(
            f"group_exposure k={K}",
            {**common, "case": "group_exposure", "options": GROUP_EXPOSURE_OPTIONS},
            n_rows,
            args.repeat,
        )
    if not args.skip_peers:
        peer = {
            **common,
            "queries": min(args.peer_queries, n_queries),
            "levels": {name: list(levels) for name, (levels, _) in DIMENSIONS.items()},
            "shares": GLOBAL_TARGET,
        }
        _time_peer("FairRankTune", FAIRRANKTUNE, peer, n_queries)
        reference = ROOT / "tests" / "fairness" / "reference" / "wptrec" / "metrics" / "awrf.py"
        if reference.exists():
            _time_peer("TREC Fair 2022 wptrec", TREC, peer, n_queries)
        else:
            where = reference.relative_to(ROOT)
            print(f"| TREC Fair 2022 wptrec | | skipped: no copy at {where} | | | |")
    print()
    print(
        "time s: the wall time inside a fresh process from the scan to the result (imports "
        "excluded, shown apart); ours: the median of the runs; peers: their per-query loop on "
        "the first queries, extrapolated linearly to all of them (reading the subset, ranking "
        "it and building their inputs shown apart); rows/s: the rate actually measured; peak "
        "RSS: the process's high-water mark (VmHWM), reading included."
    )


if __name__ == "__main__":
    main()
