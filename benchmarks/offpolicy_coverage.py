"""Bias, RMSE and interval coverage of every off-policy estimator, against the exact truth.

``python benchmarks/offpolicy_coverage.py --logs 200 --rows 10000`` draws ``--logs``
independent logs from the simulators of ``data/make_offpolicy.py`` (the worlds of
``data/offpolicy/``, whose true values are exact expectations, not Monte Carlo) and runs on
each:

* ``off_policy`` (bandit, ``--rows`` decisions): ips, snips, dm, dr, sndr, switch_dr, dr_os for
  the two targets ``pi_new`` and ``pi_greedy``, and replay for the deterministic ``pi_greedy``;
* ``slate_off_policy`` (``--rows / 4`` slates of 3-5 positions, cascade clicks): sips, iips,
  rips, snsips, sniips, snrips, pi, cascade_dr for ``pi_new`` and ``pi_top``;
* ``click_metrics`` (``--rows / 8`` impressions of 8 documents, position-based clicks with the
  true examination probabilities): dcg@5, dcg, rr, ctr@3 of ``score_new`` and ``score_alt``;
* ``interleaving`` (``--rows / 6`` team-draft multileaved impressions): ``delta`` per pair.

For each (estimator, policy) it prints the mean estimate, the truth, the bias, the RMSE, the
share of the normal 95% intervals (``alpha=0.05``) that hold the truth, with that share's
Monte Carlo standard error ``sqrt(c (1 - c) / logs)``, and the mean interval width. Nothing
is assumed: an estimator whose model is wrong (dm, replay under a non-uniform logging policy,
iips and pi under cascade clicks) shows its bias and its poor coverage.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import platform
import sys
import time
import warnings
from pathlib import Path
from types import ModuleType

import polars as pl

from polars_rankeval.offpolicy._bandit import off_policy
from polars_rankeval.offpolicy._clicks import click_metrics
from polars_rankeval.offpolicy._interleaving import interleaving
from polars_rankeval.offpolicy._slate import slate_off_policy

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

BANDIT = ["ips", "snips", "dm", "dr", "sndr", "switch_dr", "dr_os"]
SLATE = ["sips", "iips", "rips", "snsips", "sniips", "snrips", "pi", "cascade_dr"]
CLICKS = ["dcg@5", "dcg", "rr", "ctr@3"]


def load_simulator() -> ModuleType:
    """``data/make_offpolicy.py`` as a module (it is a script, not part of the package)."""
    spec = importlib.util.spec_from_file_location(
        "make_offpolicy", ROOT / "data" / "make_offpolicy.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_offpolicy"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def _rows(frame: pl.DataFrame, family: str, truth: dict[str, float]) -> list[dict[str, object]]:
    return [
        {
            "family": family,
            "estimator": row["metric"],
            "policy": row["policy"],
            "value": row["value"],
            "ci_low": row["ci_low"],
            "ci_high": row["ci_high"],
            "truth": truth[row["policy"]],
        }
        for row in frame.iter_rows(named=True)
    ]


def one_log(sim: ModuleType, worlds: dict[str, object], truth: dict, rows: int, seed: int):
    """Every estimator on one freshly drawn log of each kind."""
    found: list[dict[str, object]] = []
    bandit = sim.simulate_bandit(worlds["bandit"], rows, seed, features=False)
    targets = ["pi_new", "pi_greedy"]
    result = off_policy(
        bandit,
        BANDIT,
        target=targets,
        reward_model="q_hat",
        target_reward_model=["dm_new", "dm_greedy"],
        switch_threshold=20.0,
        shrinkage=10.0,
    )
    found += _rows(result, "bandit", truth["bandit"]["policy_value"])
    replay = off_policy(bandit, "replay", target=["pi_greedy"])
    found += _rows(replay, "bandit", truth["bandit"]["policy_value"])
    slates = sim.simulate_slates(worlds["slates"], max(rows // 4, 2), seed)
    kinds = {"conditional": "propensity", "item_position": "propensity"}
    result = slate_off_policy(
        slates,
        SLATE,
        propensity=kinds,
        target={
            name: {"conditional": name, "item_position": name} for name in ("pi_new", "pi_top")
        },
        reward_model="q_hat",
        target_reward_model=["dm_new", "dm_top"],
    )
    found += _rows(result, "slates", truth["slates"]["policy_value"])
    clicks = sim.simulate_clicks(worlds["clicks"], max(rows // 8, 2), seed)
    result = click_metrics(
        clicks, CLICKS, examination="examination", score=["score_new", "score_alt"]
    )
    values = truth["clicks"]["metric_value"]
    for row in result.iter_rows(named=True):
        found += _rows(
            pl.DataFrame([row]), "clicks", {row["policy"]: values[row["metric"]][row["policy"]]}
        )
    log = sim.simulate_interleaving(worlds["interleaving"], max(rows // 6, 2), seed)
    pairs = {(p["team"], p["baseline_team"]): p["delta"] for p in truth["interleaving"]["pairs"]}
    for row in interleaving(log).iter_rows(named=True):
        found.append(
            {
                "family": "interleaving",
                "estimator": "team_draft",
                "policy": f"{row['team']} vs {row['baseline_team']}",
                "value": row["delta"],
                "ci_low": row["ci_low"],
                "ci_high": row["ci_high"],
                "truth": pairs[(row["team"], row["baseline_team"])],
            }
        )
    return found


def summary(found: list[dict[str, object]], logs: int) -> pl.DataFrame:
    frame = pl.DataFrame(found)
    error = pl.col("value") - pl.col("truth")
    held = (pl.col("ci_low") <= pl.col("truth")) & (pl.col("truth") <= pl.col("ci_high"))
    return (
        frame.group_by("family", "estimator", "policy", maintain_order=True)
        .agg(
            pl.len().alias("logs"),
            pl.col("truth").first(),
            pl.col("value").mean().alias("mean"),
            error.mean().alias("bias"),
            (error.std() / math.sqrt(logs)).alias("bias_mc_se"),
            (error**2).mean().sqrt().alias("rmse"),
            held.mean().alias("coverage"),
            (pl.col("ci_high") - pl.col("ci_low")).mean().alias("width"),
        )
        .with_columns(
            (pl.col("coverage") * (1 - pl.col("coverage")) / logs).sqrt().alias("coverage_mc_se")
        )
    )


def _machine() -> str:
    memory = ""
    try:
        with open("/proc/meminfo") as info:
            kb = int(info.readline().split()[1])
        memory = f", {kb / 2**20:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            names = [
                line.split(":", 1)[1].strip() for line in info if line.startswith("model name")
            ]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores{memory}; Python {platform.python_version()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--logs", type=int, default=200)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0, help="first log's seed")
    parser.add_argument("--out", type=Path, help="also write the table as JSON here")
    args = parser.parse_args()
    sim = load_simulator()
    worlds = {
        "bandit": sim.bandit_world(),
        "slates": sim.slate_world(),
        "clicks": sim.click_world(),
        "interleaving": sim.interleaving_world(),
    }
    truth = {
        "bandit": sim.bandit_truth(worlds["bandit"]),
        "slates": sim.slate_truth(worlds["slates"]),
        "clicks": sim.click_truth(worlds["clicks"]),
        "interleaving": sim.interleaving_truth(worlds["interleaving"]),
    }
    started = time.perf_counter()
    found: list[dict[str, object]] = []
    n_warnings = 0
    for log in range(args.logs):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            found += one_log(sim, worlds, truth, args.rows, args.seed + log)
        n_warnings += len(caught)
    elapsed = time.perf_counter() - started
    table = summary(found, args.logs)
    print(f"machine: {_machine()}; polars {pl.__version__}")
    print(
        f"{args.logs} logs of {args.rows} bandit decisions, {args.rows // 4} slates, "
        f"{args.rows // 8} click impressions, {args.rows // 6} interleaved impressions each "
        f"(seeds {args.seed}..{args.seed + args.logs - 1}); {elapsed:.1f} s; "
        f"{n_warnings} warnings (WeightWarning etc.) silenced"
    )
    print()
    print(
        "| family | estimator | policy | truth | mean | bias ± MC se | RMSE "
        "| coverage of the 95% CI ± MC se | mean width |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for row in table.iter_rows(named=True):
        coverage = row["coverage"]
        shown = (
            "n/a"
            if coverage is None or math.isnan(coverage)
            else (f"{coverage:.1%} ± {row['coverage_mc_se']:.1%}")
        )
        print(
            f"| {row['family']} | {row['estimator']} | {row['policy']} | {row['truth']:.4f} | "
            f"{row['mean']:.4f} | {row['bias']:+.4f} ± {row['bias_mc_se'] or 0:.4f} | "
            f"{row['rmse']:.4f} | {shown} | {row['width']:.4f} |"
        )
    if args.out is not None:
        args.out.write_text(json.dumps(table.to_dicts(), indent=2) + "\n")


if __name__ == "__main__":
    main()
