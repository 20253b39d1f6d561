"""Beyond-accuracy metrics against Microsoft Recommenders on the same data, values and time.

``python benchmarks/recsys_peer.py --python /path/to/venv/bin/python [--users 20000]`` writes a
train table and top-10 lists (CSV, under ``benchmarks/_data/``), runs Recommenders'
``python_evaluation`` functions (``novelty``, ``catalog_coverage``,
``distributional_coverage``, ``diversity`` with item co-occurrence) in the given Python (a
venv where ``pip install recommenders`` succeeded), and ours under
``convention="recommenders"`` in this one; it prints each metric's two values, their
difference and both times (each tool in its own process, from reading the CSVs to the value).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

HERE = Path(__file__).resolve().parent
DATA = HERE / "_data"

PEER = r"""
import json, sys, time
import pandas as pd
from recommenders.evaluation import python_evaluation as pe

started = time.perf_counter()
train = pd.read_csv(sys.argv[1])
reco = pd.read_csv(sys.argv[2])
read = time.perf_counter() - started
out = {}
for name, run in [
    ("novelty@10", lambda: pe.novelty(train, reco)),
    ("coverage@10", lambda: pe.catalog_coverage(train, reco)),
    ("entropy@10", lambda: pe.distributional_coverage(train, reco)),
    ("ild@10", lambda: pe.diversity(train, reco)),
]:
    begin = time.perf_counter()
    value = float(run())
    out[name] = {"value": value, "seconds": time.perf_counter() - begin + read}
print(json.dumps(out))
"""

METRICS = ["novelty@10", "coverage@10", "entropy@10", "ild@10"]


def make(users: int, items: int = 5_000, history: int = 20, seed: int = 3) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, items + 1) ** 0.9
    weights /= weights.sum()
    train = pl.DataFrame(
        {
            "userID": np.repeat(np.arange(users), history),
            "itemID": rng.choice(items, size=users * history, p=weights),
        }
    ).unique()
    # Recommenders refuses recommendations of items the user has seen in train
    seen = train.group_by("userID").agg(pl.col("itemID")).sort("userID")["itemID"].to_list()
    top = []
    for user in range(users):
        candidates = rng.choice(items, size=60, replace=False, p=weights)
        top.append(np.setdiff1d(candidates, seen[user], assume_unique=True)[:10])
    reco = pl.DataFrame(
        {
            "userID": np.concatenate([np.full(len(t), u) for u, t in enumerate(top)]),
            "itemID": np.concatenate(top),
            "prediction": np.concatenate([np.arange(len(t), 0, -1) for t in top]).astype(float),
        }
    )
    DATA.mkdir(exist_ok=True)
    train_path, reco_path = DATA / f"peer_train_{users}.csv", DATA / f"peer_reco_{users}.csv"
    train.write_csv(train_path)
    reco.write_csv(reco_path)
    return train_path, reco_path


def ours(train_path: Path, reco_path: Path) -> dict[str, dict[str, float]]:
    import polars_rankeval as rke

    out = {}
    for metric in METRICS:
        started = time.perf_counter()
        value = rke.evaluate(
            pl.read_csv(reco_path),
            [metric],
            query="userID",
            item="itemID",
            score="prediction",
            convention="recommenders",
            train=pl.read_csv(train_path),
        ).item()
        out[metric] = {"value": value, "seconds": time.perf_counter() - started}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--python", required=True, help="a Python with recommenders installed")
    parser.add_argument("--users", type=int, default=20_000)
    args = parser.parse_args()
    train_path, reco_path = make(args.users)
    done = subprocess.run(
        [args.python, "-c", PEER, str(train_path), str(reco_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    peer = json.loads(done.stdout.strip().splitlines()[-1])
    mine = ours(train_path, reco_path)
    print(f"{args.users} users, top-10 lists, train {pl.read_csv(train_path).height} rows")
    print("| metric | Recommenders | ours | abs diff | Recommenders s | ours s | speed-up |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for metric in METRICS:
        a, b = peer[metric], mine[metric]
        print(
            f"| {metric} | {a['value']:.10f} | {b['value']:.10f} | "
            f"{abs(a['value'] - b['value']):.1e} | {a['seconds']:.2f} | {b['seconds']:.2f} | "
            f"{a['seconds'] / b['seconds']:.1f}x |"
        )


if __name__ == "__main__":
    sys.exit(main())
