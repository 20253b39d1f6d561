"""The benchmark-only profile script still runs on the library's current plan builders.

It times nothing here (timings live in ``benchmarks/``); it only has to run and print every
stage, so the next person who profiles starts from a working script.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[2]


def test_profile_script_prints_every_stage(tmp_path: Path) -> None:
    log = pl.DataFrame(
        {
            "query": ["q1", "q1", "q1", "q2", "q2"],
            "item": [1, 2, 3, 1, 4],
            "score": [0.9, 0.9, None, 0.5, 0.7],
            "relevance": pl.Series([1, 0, 2, 3, None], dtype=pl.Int8),
        }
    )
    path = tmp_path / "log.parquet"
    log.write_parquet(path)
    script = ROOT / "benchmarks" / "profile.py"
    metrics = "ndcg@10,map,mrr,p@10,recall@100,kendall_tau"
    command = [sys.executable, str(script), "--path", str(path), "--metrics", metrics]
    done = subprocess.run(
        [*command, "--repeat", "1"], capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0, done.stderr
    for stage in ("Polars floor", "scan", "order window", "sparse windows", "group-by"):
        assert stage in done.stdout, done.stdout
    assert "checks" in done.stdout
    assert "passes (default)" in done.stdout


def test_tukey_bench_runs_every_test_on_a_tiny_table() -> None:
    script = ROOT / "benchmarks" / "tukey_bench.py"
    command = [sys.executable, str(script), "--systems", "3", "--queries", "6"]
    done = subprocess.run(
        [*command, "--resamples", "50"], capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| 3 ")]
    assert {line.split("|")[2].strip() for line in rows} >= {"tukey", "tukey_hsd"}, done.stdout
    assert "error" not in done.stdout, done.stdout


def test_recsys_benchmark_runs_every_beyond_accuracy_metric(tmp_path: Path) -> None:
    script = ROOT / "benchmarks" / "recsys_bench.py"
    command = [sys.executable, str(script), "--rows", "2e4", "--train-rows", "2e3"]
    done = subprocess.run(
        [*command, "--data", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "| beyond-accuracy | 15 |" in done.stdout, done.stdout


def test_cold_start_script_times_every_command() -> None:
    script = ROOT / "benchmarks" / "cold_start.py"
    done = subprocess.run(
        [sys.executable, str(script), "--repeat", "1"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    for command in ("import polars ", "import polars_rankeval", "rank-eval --help"):
        assert command in done.stdout, done.stdout
    assert "optional extras loaded: none" in done.stdout, done.stdout
