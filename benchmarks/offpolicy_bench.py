"""Off-policy estimators on a 10M-row log: ours (lazy from Parquet) next to vw-estimators and obp.

``python benchmarks/offpolicy_bench.py --rows 1e7`` writes, once, under
``benchmarks/_data/offpolicy/`` a bandit log of ``--rows`` decisions and a slate log of about
``--rows`` rows (``--rows / 4`` slates of 3-5 positions), both drawn from the simulators of
``data/make_offpolicy.py``, then times, each in a fresh process, printing the wall time of the
estimate (the process's start and imports excluded, and shown apart) and its peak RSS:

* **ours**: ``off_policy(pl.scan_parquet(...), "ips,snips,dr", ...)`` for one target policy
  and for two in one call, the same with all seven bandit estimators, and
  ``slate_off_policy`` with sips, iips, rips, pi and cascade_dr for two targets; beside them
  the Polars floor, a scan that only sums the columns the estimators read;
* **vw-estimators** (``pip install vw-estimators``): its per-row ``add_example`` loop, IPS and
  SNIPS for one target, and the slate pseudo-inverse estimator per slate; the time to read
  the columns into Python lists is shown apart;
* **obp** (Open Bandit Pipeline), when ``--obp-python`` names a Python it installs on
  (obp needs Python < 3.10): IPW, SNIPW and DR for one target on numpy arrays, and
  SlateStandardIPS, SlateIndependentIPS and SlateRewardInteractionIPS; building its inputs
  (``action_dist`` and the reward model as ``(n, actions, 1)`` arrays) is shown apart.

Each of our cases runs ``--repeat`` times (fresh processes; the best time is shown, all of
them beside it). Every peer's estimate is checked against ours (relative difference
printed). ``--vw-rows`` times vw-estimators on the first rows only (then its time is
extrapolated linearly, and the output says so).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import platform
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import ModuleType

import numpy as np
import polars as pl

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "_data" / "offpolicy"
SEED = 11
TARGETS = ["pi_new", "pi_greedy"]
DMS = ["dm_new", "dm_greedy"]
SLATE_TARGETS = ["pi_new", "pi_top"]


def load_simulator() -> ModuleType:
    """``data/make_offpolicy.py`` as a module (it is a script, not part of the package)."""
    path = ROOT / "data" / "make_offpolicy.py"
    spec = importlib.util.spec_from_file_location("make_offpolicy", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_offpolicy"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def write_logs(rows: int, folder: Path, *, obp: bool = False) -> dict[str, Path]:
    """The bandit and slate logs (Parquet), and obp's inputs (.npz) when asked, written once."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {
        "bandit": folder / f"bandit_{rows}.parquet",
        "slates": folder / f"slates_{rows}.parquet",
        "bandit_npz": folder / f"bandit_{rows}.npz",
        "slates_npz": folder / f"slates_{rows}.npz",
    }
    sim = load_simulator()
    if not paths["bandit"].exists():
        bandit = sim.simulate_bandit(sim.bandit_world(), rows, SEED, features=False)
        bandit.write_parquet(paths["bandit"], row_group_size=1_000_000)
        del bandit
    if not paths["slates"].exists():
        slates = sim.simulate_slates(sim.slate_world(), max(rows // 4, 1), SEED)
        slates.write_parquet(paths["slates"], row_group_size=1_000_000)
        del slates
    if obp and not paths["bandit_npz"].exists():
        # obp reads whole distributions: the per-user tables travel, its process indexes them
        world = sim.bandit_world()
        logged = pl.read_parquet(
            paths["bandit"], columns=["user", "action", "reward", "propensity"]
        )
        np.savez(
            paths["bandit_npz"],
            user=logged["user"].to_numpy(),
            action=logged["action"].to_numpy(),
            reward=logged["reward"].to_numpy(),
            pscore=logged["propensity"].to_numpy(),
            pi_new=world.targets["pi_new"],
            q_hat=world.reward_model,
        )
    if obp and not paths["slates_npz"].exists():
        # obp's slate estimators read joint, item-position and cascade propensities directly
        kinds = pl.read_parquet(paths["slates"]).select(
            (pl.col("query").rank("dense") - 1).cast(pl.Int64).alias("slate_id"),
            pl.col("reward"),
            (pl.col("position") - 1).alias("position"),
            pl.col("propensity").alias("pscore_item_position"),
            pl.col("propensity").product().over("query").alias("pscore"),
            pl.col("propensity").cum_prod().over("query", order_by="position").alias("cascade"),
            pl.col("pi_new").alias("e_item_position"),
            pl.col("pi_new").product().over("query").alias("e_pscore"),
            pl.col("pi_new").cum_prod().over("query", order_by="position").alias("e_cascade"),
        )
        np.savez(paths["slates_npz"], **{name: kinds[name].to_numpy() for name in kinds.columns})
    return paths


def _run(python: str, code: str, arguments: dict[str, object]) -> dict[str, object]:
    """Run ``code`` in a fresh process; it prints one JSON line as its last output line."""
    started = time.perf_counter()
    done = subprocess.run(
        [python, "-c", PEAK + textwrap.dedent(code), json.dumps(arguments)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["failed"]
        errors = [line for line in lines if "Error" in line or "error" in line]
        return {"error": (errors or lines)[-1]}
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    result["process_s"] = time.perf_counter() - started
    return result


# Peak RSS of this process: VmHWM (reset at exec). ru_maxrss is not used: on Linux a child
# inherits its parent's high-water mark through fork, so it would show the parent's peak.
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
from polars_rankeval.offpolicy._bandit import off_policy
from polars_rankeval.offpolicy._slate import slate_off_policy
imported = time.perf_counter() - t0
args = json.loads(sys.argv[1])
warnings.simplefilter("ignore")
t0 = time.perf_counter()
if args["case"] == "floor":
    out = pl.scan_parquet(args["path"]).select(
        [(pl.col("reward") * pl.col(t) / pl.col("propensity")).sum().alias(t)
         for t in args["targets"]]
    ).collect()
    values = {}
elif args["case"] == "slates":
    kinds = {"conditional": "propensity", "item_position": "propensity"}
    out = slate_off_policy(
        pl.scan_parquet(args["path"]), args["estimators"], propensity=kinds,
        target={t: {"conditional": t, "item_position": t} for t in args["targets"]},
        reward_model="q_hat", target_reward_model=args["dms"],
    )
    values = {f"{r['metric']}/{r['policy']}": r["value"] for r in out.iter_rows(named=True)}
else:
    out = off_policy(
        pl.scan_parquet(args["path"]), args["estimators"], target=args["targets"],
        reward_model="q_hat", target_reward_model=args["dms"], switch_threshold=20.0,
        shrinkage=10.0,
    )
    values = {f"{r['metric']}/{r['policy']}": r["value"] for r in out.iter_rows(named=True)}
seconds = time.perf_counter() - t0
rss = peak_mb()
print(json.dumps({"seconds": seconds, "import_s": imported, "rss_mb": rss, "values": values}))
"""

VW = """
import json, sys, time
import polars as pl
from estimators.bandits import ips, snips
from estimators.slates import pseudo_inverse
args = json.loads(sys.argv[1])
n = args["rows"]
values, seconds, load = {}, {}, {}
t0 = time.perf_counter()
log = pl.read_parquet(args["bandit"], columns=["propensity", "reward", "pi_new"], n_rows=n)
p_log, r, p_pred = (log[c].cast(pl.Float64).to_list() for c in ["propensity", "reward", "pi_new"])
del log
load["bandit"] = time.perf_counter() - t0
for name, module in (("ips", ips), ("snips", snips)):
    estimator = module.Estimator()
    add = estimator.add_example
    t0 = time.perf_counter()
    for a, b, c in zip(p_log, r, p_pred):
        add(a, b, c)
    seconds[name] = time.perf_counter() - t0
    values[f"{name}/pi_new"] = estimator.get()
del p_log, r, p_pred
t0 = time.perf_counter()
slates = (
    pl.scan_parquet(args["slates"])
    .filter(pl.col("query") < args["slates_n"])
    .group_by("query")
    .agg(pl.col("propensity").sort_by("position"), pl.col("pi_new").sort_by("position"),
         pl.col("reward").sum().cast(pl.Float64))
    .collect()
)
p_logs, p_preds, rewards = (slates[c].to_list() for c in ["propensity", "pi_new", "reward"])
del slates
load["slates"] = time.perf_counter() - t0
estimator = pseudo_inverse.Estimator()
add = estimator.add_example
t0 = time.perf_counter()
for a, b, c in zip(p_logs, rewards, p_preds):
    add(a, b, c)
seconds["pi"] = time.perf_counter() - t0
values["pi/pi_new"] = estimator.get()
rss = peak_mb()
print(json.dumps({"seconds": seconds, "load_s": load, "rss_mb": rss, "values": values,
                  "slates": len(p_logs)}))
"""

OBP = """
import json, sys, time, warnings
warnings.simplefilter("ignore")
t0 = time.perf_counter()
import numpy as np
import obp
from obp.ope import (InverseProbabilityWeighting, SelfNormalizedInverseProbabilityWeighting,
    DoublyRobust, SlateStandardIPS, SlateIndependentIPS, SlateRewardInteractionIPS)
imported = time.perf_counter() - t0
args = json.loads(sys.argv[1])
values, seconds = {}, {}
t0 = time.perf_counter()
data = np.load(args["bandit"])
user, action = data["user"], data["action"].astype(np.int64)
reward, pscore = data["reward"].astype(np.float64), data["pscore"]
action_dist = data["pi_new"][user][:, :, None]
q_hat = data["q_hat"][user][:, :, None]
prep = time.perf_counter() - t0
for name, estimator, extra in (
    ("ips", InverseProbabilityWeighting(), {}),
    ("snips", SelfNormalizedInverseProbabilityWeighting(), {}),
    ("dr", DoublyRobust(), {"estimated_rewards_by_reg_model": q_hat}),
):
    t0 = time.perf_counter()
    values[f"{name}/pi_new"] = float(estimator.estimate_policy_value(
        reward=reward, action=action, action_dist=action_dist, pscore=pscore, **extra))
    seconds[name] = time.perf_counter() - t0
del action_dist, q_hat, user, action, reward, pscore
s = np.load(args["slates"])
common = {"slate_id": s["slate_id"], "reward": s["reward"].astype(np.float64),
          "position": s["position"].astype(np.int64)}
for name, estimator, kind in (
    ("sips", SlateStandardIPS(len_list=5), {"pscore": s["pscore"],
        "evaluation_policy_pscore": s["e_pscore"]}),
    ("iips", SlateIndependentIPS(len_list=5), {"pscore_item_position": s["pscore_item_position"],
        "evaluation_policy_pscore_item_position": s["e_item_position"]}),
    ("rips", SlateRewardInteractionIPS(len_list=5), {"pscore_cascade": s["cascade"],
        "evaluation_policy_pscore_cascade": s["e_cascade"]}),
):
    t0 = time.perf_counter()
    try:
        values[f"{name}/pi_new"] = float(estimator.estimate_policy_value(**common, **kind))
        seconds[name] = time.perf_counter() - t0
    except Exception as error:
        values[f"{name}/pi_new"] = f"{type(error).__name__}: {error}"
rss = peak_mb()
print(json.dumps({"seconds": seconds, "prep_s": prep, "import_s": imported, "rss_mb": rss,
                  "values": values, "version": obp.__version__,
                  "python": sys.version.split()[0], "numpy": np.__version__}))
"""


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


def _difference(ours: float, theirs: object) -> str:
    if not isinstance(theirs, (int, float)):
        return f"not comparable ({theirs})"
    return f"{abs(ours - theirs) / max(abs(ours), 1e-300):.1e}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--vw-rows", type=float, default=None, help="vw-estimators on these rows")
    parser.add_argument("--obp-python", default=None, help="a Python with obp installed")
    parser.add_argument("--skip-vw", action="store_true")
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes per case (ours)")
    args = parser.parse_args()
    rows = int(args.rows)
    started = time.perf_counter()
    paths = write_logs(rows, args.data, obp=args.obp_python is not None)
    written = time.perf_counter() - started
    n_slate_rows = pl.scan_parquet(paths["slates"]).select(pl.len()).collect().item()
    print(f"machine: {_machine()}")
    print(
        f"versions: Python {platform.python_version()}, polars {pl.__version__}, numpy "
        f"{np.__version__}, polars-rankeval {_version('polars-rankeval')}, vw-estimators "
        f"{_version('vw-estimators')}"
    )
    print(
        f"logs: bandit {rows:,} rows ({paths['bandit'].stat().st_size / 2**20:.0f} MiB), slates "
        f"{n_slate_rows:,} rows in {rows // 4:,} slates "
        f"({paths['slates'].stat().st_size / 2**20:.0f} MiB); ready in {written:.1f} s"
    )
    print()
    print("| tool | what | estimate s | rows/s | peak RSS MiB | apart (s) |")
    print("|---|---|---|---|---|---|")
    cases = {
        "polars floor: sum r*w for 2 targets": ("floor", "bandit", [], TARGETS, DMS),
        "off_policy ips,snips,dr x 1 target (pi_new)": (
            "bandit",
            "bandit",
            "ips,snips,dr",
            TARGETS[:1],
            DMS[:1],
        ),
        "off_policy ips,snips,dr x 2 targets": ("bandit", "bandit", "ips,snips,dr", TARGETS, DMS),
        "off_policy 7 estimators x 2 targets": (
            "bandit",
            "bandit",
            "ips,snips,dm,dr,sndr,switch_dr,dr_os",
            TARGETS,
            DMS,
        ),
        "slate_off_policy sips,iips,rips,pi,cascade_dr x 2": (
            "slates",
            "slates",
            "sips,iips,rips,pi,cascade_dr",
            SLATE_TARGETS,
            ["dm_new", "dm_top"],
        ),
    }
    ours: dict[str, float] = {}
    for label, (case, log, estimators, targets, dms) in cases.items():
        arguments = {
            "case": case,
            "path": str(paths[log]),
            "estimators": estimators,
            "targets": targets,
            "dms": dms,
        }
        runs = [_run(sys.executable, OURS, arguments) for _ in range(args.repeat)]
        failed = [run for run in runs if "error" in run]
        if failed:
            print(f"| ours | {label} | error: {failed[0]['error']} | | | |")
            continue
        n = n_slate_rows if log == "slates" else rows
        times = sorted(float(run["seconds"]) for run in runs)  # type: ignore[arg-type]
        ours |= runs[0]["values"]  # type: ignore[arg-type]
        rss = max(float(run["rss_mb"]) for run in runs)  # type: ignore[arg-type]
        spread = (
            f"best of {len(times)}: {', '.join(f'{t:.2f}' for t in times)}; "
            if len(times) > 1
            else ""
        )
        print(
            f"| ours | {label} | {times[0]:.2f} | {n / times[0]:,.0f} | {rss:.0f} | "
            f"{spread}import {runs[0]['import_s']:.2f} |"
        )
    if not args.skip_vw:
        vw_rows = int(args.vw_rows) if args.vw_rows else rows
        scale = rows / vw_rows
        arguments = {
            "rows": vw_rows,
            "bandit": str(paths["bandit"]),
            "slates": str(paths["slates"]),
            "slates_n": max(vw_rows // 4, 1),
        }
        result = _run(sys.executable, VW, arguments)
        if "error" in result:
            print(f"| vw-estimators | | error: {result['error']} | | | |")
        else:
            note = "" if scale == 1 else f" (timed on {vw_rows:,} rows, x{scale:g})"
            load = result["load_s"]
            for name, seconds in result["seconds"].items():  # type: ignore[union-attr]
                n = result["slates"] if name == "pi" else vw_rows
                unit = "slates" if name == "pi" else "rows"
                print(
                    f"| vw-estimators | {name} pi_new, add_example loop{note} | "
                    f"{seconds * scale:.2f} | {n / seconds:,.0f} {unit} | {result['rss_mb']:.0f} "
                    f"| read to lists {load['slates' if name == 'pi' else 'bandit']:.2f} |"  # type: ignore[index]
                )
            for key, value in result["values"].items():  # type: ignore[union-attr]
                if key in ours and scale == 1:
                    print(
                        f"|  | {key}: ours vs vw relative difference | "
                        f"{_difference(ours[key], value)} | | | |"
                    )
    if args.obp_python:
        arguments = {"bandit": str(paths["bandit_npz"]), "slates": str(paths["slates_npz"])}
        result = _run(args.obp_python, OBP, arguments)
        if "error" in result:
            print(f"| obp | | error: {result['error']} | | | |")
        else:
            tool = f"obp {result['version']} (Python {result['python']})"
            for name, seconds in result["seconds"].items():  # type: ignore[union-attr]
                n = n_slate_rows if name in ("sips", "iips", "rips") else rows
                print(
                    f"| {tool} | {name} pi_new | {seconds:.2f} | {n / seconds:,.0f} | "
                    f"{result['rss_mb']:.0f} | inputs {result['prep_s']:.2f}, import "
                    f"{result['import_s']:.2f} |"
                )
            for key, value in result["values"].items():  # type: ignore[union-attr]
                if key in ours:
                    print(
                        f"|  | {key}: ours vs obp relative difference | "
                        f"{_difference(ours[key], value)} | | | |"
                    )
    print()
    print(
        "estimate s: the estimate's wall time inside a fresh process (imports and, for the "
        "peers, reading the log into their input form excluded and shown apart); peak RSS: "
        "the process's, reading and estimating included."
    )


if __name__ == "__main__":
    main()
