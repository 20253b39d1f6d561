"""TREC runs through ``rank-eval`` against trec_eval's shell loop: time and peak memory.

``python benchmarks/trec_cli_bench.py [--repeat 3] [--decimals 2] [--trec-eval PATH]`` writes 17
gzipped TREC runs (100 topics x 1,000 documents, scores rounded to ``--decimals``: 2 ties in
every list, as the issue's tied case; 6 rarely ties) and one qrels file (750 judged documents per
topic, labels 0-2) under ``benchmarks/_data/trec_cli/``, then times, each in a fresh process, the
modes alternating so a change of the machine's load hits each of them:

* ``trec_eval``: the researcher's loop, ``for r in runs/*.gz; do zcat r > tmp; trec_eval qrels
  tmp; done`` (trec_eval cannot read a pipe), its default measures;
* ``rank-eval``: ``rank-eval runs/*.gz --qrels qrels -f trec`` (one call, the same measures, the
  tie check on, as a user gets it);
* ``trec_eval -q -m all_trec`` and ``rank-eval ... -q -m all_trec``: every measure, per query;
* ``noties`` (not run by default): both rank-eval commands with ``--tie-warning off``, to show
  what the tie check costs;
* ``python``: ``read_trec_run`` -> ``join_run_qrels(by="system")`` -> ``evaluate(["official"])``
  collected (``per_query=True``), the same work from Python, timed from the first read.

Each cell is the median wall time of ``--repeat`` runs and the largest peak RSS (the process's
maximum resident set from ``wait4``; for the loop, its largest trec_eval). Both outputs are
checked line for line against trec_eval's (as sets of lines per run; rank-eval prints the runs
in the order given, each summary led by its ``runid`` line).

trec_eval is taken from ``--trec-eval``, else from PATH; build it with ``git clone
https://github.com/usnistgov/trec_eval && make -C trec_eval``.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import many_runs_bench  # benchmarks/ is the script's folder, first on sys.path

HERE = Path(__file__).resolve().parent
RUNS, TOPICS, DEPTH = 17, 100, 1000


def write_runs(decimals: int) -> tuple[list[Path], Path]:
    """The runs and the qrels, written by many_runs_bench's generator (same seed, same rows)."""
    folder = HERE / "_data" / "trec_cli" / f"decimals{decimals}"
    return many_runs_bench.write_runs(RUNS, TOPICS, DEPTH, decimals=decimals, folder=folder)


def timed(command: list[str], output: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one fresh process writing its stdout to ``output``."""
    with output.open("w") as out:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        msg = f"{' '.join(command)} exited with {os.waitstatus_to_exitcode(status)}"
        raise RuntimeError(msg)
    return wall, usage.ru_maxrss / 1024  # Linux reports KB


def trec_eval_loop(trec_eval: str, paths: list[Path], qrels: Path, options: str) -> list[str]:
    """A shell loop of one trec_eval call per run, each run decompressed first."""
    tmp = Path(tempfile.mkdtemp()) / "run.txt"
    loop = "; ".join(
        f"zcat {path} > {tmp} && {trec_eval} {options} {qrels} {tmp}" for path in paths
    )
    return ["bash", "-c", loop]


def python_path(paths: list[Path], qrels: Path) -> list[str]:
    code = f"""
import time, polars as pl, polars_rankeval as rke
start = time.perf_counter()
paths = {[str(p) for p in paths]!r}
# each run named by its file, as rank-eval names it (run01.txt.gz -> run01)
runs = [
    rke.read_trec_run(p).with_columns(system=pl.lit(p.rsplit("/", 1)[-1].split(".")[0]))
    for p in paths
]
joined = rke.join_run_qrels(pl.concat(runs), rke.read_trec_qrels({str(qrels)!r}), by="system")
result = rke.evaluate(joined, ["official"], by="system", per_query=True).collect()
print(f"{{time.perf_counter() - start:.3f}} s from the first read; {{result.shape}}")
"""
    return [sys.executable, "-c", code]


def run_blocks(text: str) -> list[set[str]]:
    """trec output split into runs, each a set of lines (the summary's runid line ends a run)."""
    blocks: list[set[str]] = [set()]
    for line in text.splitlines():
        fields = line.split("\t")
        if fields[0].strip() == "runid":
            blocks[-1].add("runid")  # trec_eval names the run by its tag, rank-eval by its file
            blocks.append(set())
        else:
            blocks[-1].add(line)
    return [block for block in blocks if block]


def machine() -> str:
    cpu = "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        names = [line for line in cpuinfo.read_text().splitlines() if line.startswith("model name")]
        cpu = names[0].split(":", 1)[1].strip() if names else cpu
    import polars as pl

    return (
        f"{os.cpu_count()} vCPU {cpu}, {platform.system()}, Python {platform.python_version()}, "
        f"Polars {pl.__version__}, load average {os.getloadavg()[0]:.2f} at start"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--decimals", type=int, default=2, help="score decimals (2: tied lists)")
    parser.add_argument("--trec-eval", default=shutil.which("trec_eval"), help="trec_eval binary")
    parser.add_argument("--modes", default="default,all_trec,python")
    args = parser.parse_args()
    if not args.trec_eval:
        sys.exit("trec_eval not found: pass --trec-eval PATH (see this script's docstring)")
    paths, qrels = write_runs(args.decimals)
    cli = [sys.executable, "-m", "polars_rankeval", *map(str, paths), "--qrels", str(qrels)]
    commands = {}
    modes = args.modes.split(",")
    if "default" in modes:
        commands["trec_eval"] = trec_eval_loop(args.trec_eval, paths, qrels, "")
        commands["rank-eval"] = [*cli, "-f", "trec"]
    if "all_trec" in modes:
        commands["trec_eval -q -m all_trec"] = trec_eval_loop(
            args.trec_eval, paths, qrels, "-q -m all_trec"
        )
        commands["rank-eval -q -m all_trec"] = [*cli, "-f", "trec", "-q", "-m", "all_trec"]
    if "noties" in modes:  # where the time goes: the same commands without the tie check
        commands["rank-eval --tie-warning off"] = [*cli, "-f", "trec", "--tie-warning", "off"]
        commands["rank-eval -q -m all_trec --tie-warning off"] = [
            *cli,
            *("-f", "trec", "-q", "-m", "all_trec", "--tie-warning", "off"),
        ]
    if "python" in modes:
        commands["python (read, join, evaluate official)"] = python_path(paths, qrels)
    print(machine())
    print(
        f"{RUNS} runs x {TOPICS} topics x {DEPTH} documents, scores with {args.decimals} decimals"
    )
    outputs = Path(tempfile.mkdtemp())
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(args.repeat):
        for index, (name, command) in enumerate(commands.items()):
            results[name].append(timed(command, outputs / f"{index}.txt"))
    for name in commands:
        walls = [wall for wall, _ in results[name]]
        peak = max(rss for _, rss in results[name])
        runs = ", ".join(f"{wall:.2f}" for wall in walls)
        print(f"{name:42} {statistics.median(walls):6.2f} s (runs {runs})  peak {peak:6.0f} MB")
    names = list(commands)
    for ours, theirs in (
        ("rank-eval", "trec_eval"),
        ("rank-eval -q -m all_trec", "trec_eval -q -m all_trec"),
    ):
        if ours not in commands:
            continue
        ratio = statistics.median(w for w, _ in results[ours]) / statistics.median(
            w for w, _ in results[theirs]
        )
        same = run_blocks((outputs / f"{names.index(ours)}.txt").read_text()) == run_blocks(
            (outputs / f"{names.index(theirs)}.txt").read_text()
        )
        print(f"{ours} / {theirs}: {ratio:.2f}x; output equal line for line: {same}")
    shutil.rmtree(outputs)


if __name__ == "__main__":
    main()
