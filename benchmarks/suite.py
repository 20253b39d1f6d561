"""The benchmark suite: every tool on the same Parquet logs, wall time and peak RSS, one run.

    python benchmarks/suite.py                      # 1M and 10M rows, all tools, + 100M ours
    python benchmarks/suite.py --sizes 1e6 --write  # and rewrite the table in README.md
    python benchmarks/suite.py --orders both        # also the same logs in ranked order

Each measurement runs in a fresh Python process (``--worker TOOL PATH``), so peak RSS
(``ru_maxrss`` of that process, via ``os.wait4``) belongs to one tool. Wall time runs from just
before the Parquet file is read to the metric means, end to end, after the imports (ranx's
numba compilation is reported separately as its cold start). Every tool computes the standard
suite ndcg@10, map, mrr, p@10 and recall@100 and its means are compared with ours.

Tools: polars_rankeval (lazy ``scan_parquet`` with the default bounded passes over hash
buckets of the query ids, which re-read the log for up to 3 passes and spill it once for more;
the same with ``ties="expected"``; lazy in one unbounded pass; eager on a DataFrame), the
Polars floor (scan the same columns, one ``rank().over(query)``, a ``group_by(query)`` sum),
pytrec_eval (dicts built from the frame), ranx (``Qrels.from_df``/``Run.from_df`` +
``evaluate``, cold and warm), ir_measures (``calc_aggregate`` on pandas frames) and a plain
pandas implementation in the style of Microsoft Recommenders (sort, cumcount, merge, groupby).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "_data"
SUITE = ["ndcg@10", "map", "mrr", "p@10", "recall@100"]
TREC_NAMES = {
    "ndcg@10": "ndcg_cut_10",
    "map": "map",
    "mrr": "recip_rank",
    "p@10": "P_10",
    "recall@100": "recall_100",
}
TOOLS = [
    "rke_lazy",
    "rke_lazy_one_pass",
    "rke_lazy_expected",
    "rke_eager",
    "floor",
    "pytrec_eval",
    "ranx",
    "ir_measures",
    "pandas",
]
BIG_TOOLS = [
    "rke_lazy",
    "rke_lazy_expected",
    "floor",
]  # the only ones run at 100M rows (others exceed RAM/time)


# ---- workers (run in a child process) --------------------------------------------------------


def _rke(path: str, mode: str) -> dict[str, float]:
    import polars as pl

    import polars_rankeval as rke

    if mode == "eager":
        out = rke.evaluate(pl.read_parquet(path), SUITE)
    else:
        n_buckets = 1 if mode == "one_pass" else "auto"
        ties = "expected" if mode == "expected" else "trec"
        # The lazy rows time the metrics, as the peers compute them: since issue 27 a
        # LazyFrame also gets the tie check by default (the DataFrame row keeps it), which on
        # this log's 3-decimal scores, tied in 99% of the lists, costs about 3x (README).
        lazy = rke.evaluate(
            pl.scan_parquet(path), SUITE, n_buckets=n_buckets, ties=ties, tie_warning=None
        )
        out = lazy.collect()
    return out.row(0, named=True)


def _floor(path: str) -> dict[str, float]:
    import polars as pl

    out = (
        pl.scan_parquet(path)
        .select("query", "score", "relevance")
        .with_columns(pl.col("score").rank().over("query").alias("rank"))
        .group_by("query")
        .agg(pl.col("rank").sum(), pl.col("relevance").sum())
        .select(pl.col("rank").sum(), pl.col("relevance").sum())
        .collect()
    )
    return {"checksum": float(out.row(0)[0])}


def _dicts(path: str) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    import polars as pl

    frame = pl.read_parquet(path)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    judged = frame.filter(pl.col("relevance").is_not_null())
    for query, item, label in judged.select("query", "item", "relevance").iter_rows():
        qrels.setdefault(query, {})[str(item)] = int(label)
    retrieved = frame.filter(pl.col("score").is_not_null())
    for query, item, score in retrieved.select("query", "item", "score").iter_rows():
        run.setdefault(query, {})[str(item)] = float(score)
    return qrels, run


def _pytrec(path: str) -> dict[str, float]:
    import pytrec_eval

    qrels, run = _dicts(path)
    values = pytrec_eval.RelevanceEvaluator(qrels, set(TREC_NAMES.values())).evaluate(run)
    return {
        ours: sum(v[trec] for v in values.values()) / len(values)
        for ours, trec in TREC_NAMES.items()
    }


def _pandas_frames(path: str):
    import polars as pl

    frame = pl.read_parquet(path).with_columns(pl.col("item").cast(pl.String))
    qrels = (
        frame.filter(pl.col("relevance").is_not_null())
        .select(
            pl.col("query").alias("q_id"),
            pl.col("item").alias("doc_id"),
            pl.col("relevance").cast(pl.Int64).alias("score"),
        )
        .to_pandas()
    )
    run = (
        frame.filter(pl.col("score").is_not_null())
        .select(pl.col("query").alias("q_id"), pl.col("item").alias("doc_id"), "score")
        .to_pandas()
    )
    return qrels, run


def _ranx(path: str, timings: dict[str, float]) -> dict[str, float]:
    import warnings

    warnings.simplefilter("ignore")
    from ranx import Qrels, Run, evaluate

    start = time.perf_counter()
    qrels_df, run_df = _pandas_frames(path)
    # ranx 0.3.21 asserts object dtype; pandas 3 reads strings as its new "str" dtype
    for df in (qrels_df, run_df):
        df["q_id"] = df["q_id"].astype(object)
        df["doc_id"] = df["doc_id"].astype(object)
    qrels = Qrels.from_df(qrels_df, q_id_col="q_id", doc_id_col="doc_id", score_col="score")
    run = Run.from_df(run_df, q_id_col="q_id", doc_id_col="doc_id", score_col="score")
    built = time.perf_counter()
    names = ["ndcg@10", "map", "mrr", "precision@10", "recall@100"]
    evaluate(qrels, run, names, make_comparable=True)  # cold: numba compiles here
    cold = time.perf_counter()
    result = evaluate(qrels, run, names, make_comparable=True)
    warm = time.perf_counter()
    timings["ranx_build_s"] = built - start
    timings["ranx_cold_s"] = cold - start
    timings["seconds"] = (built - start) + (warm - cold)  # build + one warm evaluation
    return dict(zip(SUITE, (float(result[name]) for name in names), strict=True))


def _ir_measures(path: str) -> dict[str, float]:
    import ir_measures
    from ir_measures import AP, RR, P, R, nDCG

    qrels, run = _pandas_frames(path)
    qrels = qrels.rename(columns={"q_id": "query_id", "doc_id": "doc_id", "score": "relevance"})
    run = run.rename(columns={"q_id": "query_id"})
    measures = [nDCG @ 10, AP, RR, P @ 10, R @ 100]
    result = ir_measures.calc_aggregate(measures, qrels, run)
    return dict(zip(SUITE, (float(result[m]) for m in measures), strict=True))


def _pandas(path: str) -> dict[str, float]:
    """A plain pandas evaluation in the style of Microsoft Recommenders' python_evaluation."""
    import numpy as np
    import pandas as pd

    qrels, run = _pandas_frames(path)
    # trec_eval's order: score descending, ties by item id descending (byte order)
    run = run.sort_values(["q_id", "score", "doc_id"], ascending=[True, False, False])
    run["rank"] = run.groupby("q_id").cumcount() + 1
    judged = run.merge(qrels, on=["q_id", "doc_id"], how="left", suffixes=("", "_rel"))
    judged["label"] = judged["score_rel"].fillna(0)
    judged["relevant"] = (judged["label"] >= 1).astype(np.int64)
    judged["hits"] = judged.groupby("q_id")["relevant"].cumsum()
    num_rel = (qrels["score"] >= 1).groupby(qrels["q_id"]).sum().rename("R")
    judged = judged.merge(num_rel, left_on="q_id", right_index=True, how="inner")
    judged["ap_term"] = np.where(judged["relevant"] == 1, judged["hits"] / judged["rank"], 0.0)
    judged["gain10"] = np.where(
        judged["rank"] <= 10, judged["label"].clip(lower=0) / np.log2(judged["rank"] + 1), 0.0
    )
    first = judged[judged["relevant"] == 1].groupby("q_id")["rank"].min()
    ideal = qrels[qrels["score"] > 0].sort_values(["q_id", "score"], ascending=[True, False])
    ideal["pos"] = ideal.groupby("q_id").cumcount() + 1
    ideal = ideal[ideal["pos"] <= 10]
    idcg = (ideal["score"] / np.log2(ideal["pos"] + 1)).groupby(ideal["q_id"]).sum()
    per_query = pd.DataFrame(
        {
            "R": judged.groupby("q_id")["R"].first(),
            "ap": judged.groupby("q_id")["ap_term"].sum(),
            "dcg": judged.groupby("q_id")["gain10"].sum(),
            "p10": judged[judged["rank"] <= 10].groupby("q_id")["relevant"].sum() / 10,
            "hits100": judged[judged["rank"] <= 100].groupby("q_id")["relevant"].sum(),
        }
    )
    per_query["rr"] = (1 / first).reindex(per_query.index).fillna(0)
    per_query["idcg"] = idcg.reindex(per_query.index).fillna(0)
    safe_r = per_query["R"].where(per_query["R"] > 0)
    ndcg = (per_query["dcg"] / per_query["idcg"].where(per_query["idcg"] > 0)).fillna(0)
    return {
        "ndcg@10": float(ndcg.mean()),
        "map": float((per_query["ap"] / safe_r).fillna(0).mean()),
        "mrr": float(per_query["rr"].mean()),
        "p@10": float(per_query["p10"].fillna(0).mean()),
        "recall@100": float((per_query["hits100"] / safe_r).fillna(0).mean()),
    }


def worker(tool: str, path: str) -> None:
    """Run one tool once and print its timings and means as JSON."""
    # Import the heavy libraries before the clock starts: import cost is not evaluation.
    import polars  # noqa: F401

    if tool.startswith("rke_"):
        import polars_rankeval  # noqa: F401
    if tool in ("pytrec_eval", "ir_measures"):
        import pytrec_eval  # noqa: F401
    if tool in ("ranx", "ir_measures", "pandas"):
        import pandas  # noqa: F401
    timings: dict[str, float] = {}
    start = time.perf_counter()
    runners = {
        "rke_lazy": lambda: _rke(path, "lazy"),
        "rke_lazy_one_pass": lambda: _rke(path, "one_pass"),
        "rke_lazy_expected": lambda: _rke(path, "expected"),
        "rke_eager": lambda: _rke(path, "eager"),
        "floor": lambda: _floor(path),
        "pytrec_eval": lambda: _pytrec(path),
        "ranx": lambda: _ranx(path, timings),
        "ir_measures": lambda: _ir_measures(path),
        "pandas": lambda: _pandas(path),
    }
    means = runners[tool]()
    timings.setdefault("seconds", time.perf_counter() - start)
    print(json.dumps({"means": means, **timings}))


# ---- driver ----------------------------------------------------------------------------------


def run_worker(tool: str, path: Path, timeout: int) -> dict[str, object]:
    """Run one worker process; its own peak RSS comes from ``os.wait4``'s rusage."""
    import tempfile

    with tempfile.TemporaryFile("w+") as out:
        child = subprocess.Popen(
            [sys.executable, __file__, "--worker", tool, str(path)],
            stdout=out,
            stderr=subprocess.DEVNULL,
        )
        started = time.monotonic()
        deadline = started + timeout
        samples: list[tuple[float, float]] = []  # (seconds, RSS in MB) every RSS_EVERY s
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                child.kill()
                os.wait4(child.pid, 0)
                return {"error": f"over {timeout} s"}
            now = time.monotonic() - started
            if not samples or now - samples[-1][0] >= RSS_EVERY:
                samples.append((round(now, 1), _rss_mb(child.pid)))
            time.sleep(0.05)
        child.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        if child.returncode != 0:
            return {"error": f"failed, exit {child.returncode} (out of memory or an exception)"}
        out.seek(0)
        result: dict[str, object] = json.loads(out.read().strip().splitlines()[-1])
    result["peak_rss_mb"] = usage.ru_maxrss / 1024  # KiB on Linux
    # CPU seconds of the whole process (imports included): on a shared machine the wall time
    # depends on the other processes' load, the CPU time much less.
    result["cpu_s"] = usage.ru_utime + usage.ru_stime
    # where in the run the memory peaks (the spill, a pass, the end): see the out-of-core section
    result["rss_samples"] = samples
    return result


RSS_EVERY = 5.0


def _rss_mb(pid: int) -> float:
    """The current resident set size of process ``pid`` in MB (0 where unreadable)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    line = next((line for line in status.splitlines() if line.startswith("VmRSS:")), "")
    return int(line.split()[1]) / 1024 if line else 0.0


# On a log in ranked order (each query's rows together, best first): ours and the peers
# that benefit from order; ranx and ir_measures sort whatever they get.
RANKED_TOOLS = ["rke_lazy", "rke_lazy_one_pass", "rke_eager", "floor", "pytrec_eval"]


def data_file(rows: int, *, ranked: bool = False) -> Path:
    DATA.mkdir(exist_ok=True)
    path = DATA / f"log_{rows}{'_ranked' if ranked else ''}.parquet"
    if not path.exists():
        print(f"generating {path.name} ...", file=sys.stderr)
        # In a child process: a worker forked from a parent that grew while generating would
        # start from the parent's resident pages and report them as its own peak RSS.
        command = [sys.executable, str(HERE / "generate.py"), str(rows), str(path)]
        subprocess.run([*command, *(["--ranked"] if ranked else [])], check=True)
    return path


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem = next(
            line for line in Path("/proc/meminfo").read_text().splitlines() if "MemTotal" in line
        )
        mem_gib = int(mem.split()[1]) / 1024**2
    except (OSError, StopIteration):
        mem_gib = float("nan")
    import polars as pl

    return (
        f"{os.cpu_count()} vCPU {cpu}, {mem_gib:.0f} GiB RAM, {platform.system()}, "
        f"Python {platform.python_version()}, Polars {pl.__version__}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e6,1e7,1e8", help="rows per log, comma-separated")
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per measurement")
    parser.add_argument("--write", action="store_true", help="write the table into README.md")
    parser.add_argument(
        "--orders",
        choices=["unsorted", "ranked", "both"],
        default="unsorted",
        help="the generated order, the same rows in ranked (trec) order, or both",
    )
    parser.add_argument("--worker", nargs=2, metavar=("TOOL", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    sys.path.insert(0, str(HERE))
    results: dict[str, dict[str, dict[str, object]]] = {}
    orders = ["unsorted", "ranked"] if args.orders == "both" else [args.orders]
    for size in (int(float(s)) for s in args.sizes.split(",")):
        for order in orders:
            ranked = order == "ranked"
            path = data_file(size, ranked=ranked)
            tools = [t for t in args.tools.split(",") if size <= 10**7 or t in BIG_TOOLS]
            tools = [t for t in tools if not ranked or t in RANKED_TOOLS]
            label = f"{size:,}" + (" ranked" if ranked else "")
            results[label] = {}
            for tool in tools:
                print(f"{label:>18} rows  {tool:18s}", end=" ", flush=True, file=sys.stderr)
                results[label][tool] = run_worker(tool, path, args.timeout)
                print(json.dumps(results[label][tool]), file=sys.stderr)
    table = render(results, machine())
    print(table)
    (HERE / "_data" / "last_results.json").write_text(json.dumps(results, indent=1))
    if args.write:
        readme = HERE / "README.md"
        text = readme.read_text()
        start, end = "<!-- suite:start -->", "<!-- suite:end -->"
        before, _, rest = text.partition(start)
        _, _, after = rest.partition(end)
        readme.write_text(f"{before}{start}\n{table}\n{end}{after}")


def render(results: dict[str, dict[str, dict[str, object]]], machine_text: str) -> str:
    lines = [
        f"Machine: {machine_text}. One run per cell; times in seconds, peak RSS in MB.",
        "",
        "| rows | tool | time | CPU | peak RSS | time / ours (lazy) "
        "| max abs diff of means vs ours |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for size, tools in results.items():
        ours = tools.get("rke_lazy", {})
        for tool, result in tools.items():
            if "error" in result:
                lines.append(f"| {size} | {tool} | — | — | — | — | {result['error']} |")
                continue
            seconds = float(result["seconds"])  # type: ignore[arg-type]
            ratio = seconds / float(ours["seconds"]) if "seconds" in ours else float("nan")
            means = result["means"]
            diff = "—"
            if tool == "rke_lazy_expected":
                diff = "— (expected over tie orders)"
            elif tool != "floor" and "means" in ours:
                worst = max(abs(means[m] - ours["means"][m]) for m in SUITE)  # type: ignore[index]
                diff = f"{worst:.1e}"
            extra = ""
            if tool == "ranx":
                build, cold = result["ranx_build_s"], result["ranx_cold_s"]
                extra = f" (build {build:.1f}, cold incl. JIT {cold:.1f})"
            lines.append(
                f"| {size} | {tool}{extra} | {seconds:.2f} | {result['cpu_s']:.1f} "
                f"| {result['peak_rss_mb']:.0f} "
                f"| {ratio:.1f}x | {diff} |"
            )
    lines.extend(_targets(results))
    return "\n".join(lines)


def _targets(results: dict[str, dict[str, dict[str, object]]]) -> list[str]:
    """The standard suite's speed targets, one line per log: ours against the floor and pytrec_eval.

    Issue 29 asks for at most 1.5x the Polars floor and at least 15x pytrec_eval on a ranked
    log; the ratios are of one run of each in this invocation (fresh processes).
    """

    def seconds(tools: dict[str, dict[str, object]], tool: str) -> float | None:
        result = tools.get(tool, {})
        return float(result["seconds"]) if "seconds" in result else None  # type: ignore[arg-type]

    lines = []
    for size, tools in results.items():
        ours = seconds(tools, "rke_lazy")
        if ours is None:
            continue
        parts = []
        floor = seconds(tools, "floor")
        if floor is not None:
            ratio = f"**{ours / floor:.1f}x** (target <= 1.5x)"
            parts.append(f"ours / floor = {ours:.2f} / {floor:.2f} = {ratio}")
        peer = seconds(tools, "pytrec_eval")
        if peer is not None:
            ratio = f"**{peer / ours:.1f}x** (target >= 15x ranked)"
            parts.append(f"pytrec_eval / ours = {peer:.2f} / {ours:.2f} = {ratio}")
        if parts:
            lines.append(f"* {size} rows: " + "; ".join(parts))
    return ["", *lines] if lines else []


if __name__ == "__main__":
    main()
