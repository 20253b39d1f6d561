"""Re-run the reliability audit's mutation sample: every one-line mutant must fail a test.

The audit (round 3) applied 20 one-line mutations to compare, report, plot, spark, trec_sets,
interpolated and the CLI; 6 survived their area's tests and 2 survived the whole suite. This
script applies each mutant (the same lines, at their current places), runs its area's tests
and then, if it survived, the whole suite; it restores the file after each run, and exits 1
if any mutant survives.

Usage::

    python benchmarks/mutation_sample.py            # area tests, whole suite for survivors
    python benchmarks/mutation_sample.py --check    # only check every mutant still applies
    python benchmarks/mutation_sample.py M02 M07    # some mutants

``--check`` runs in the test suite (tests/test_benchmark_scripts.py), so a mutant whose line
moved or changed is noticed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutant:
    key: str
    path: str
    original: str
    mutated: str
    tests: tuple[str, ...]
    occurrence: int = 1  # which occurrence of ``original`` to change (1-based)


MUTANTS = [
    Mutant(
        "M01",
        "polars_rankeval/compare/_corrections.py",
        "np.maximum.accumulate((m - np.arange(m)) * ranked)",
        "np.minimum.accumulate((m - np.arange(m)) * ranked)",
        ("tests/test_compare.py",),
    ),
    Mutant(
        "M02",
        "polars_rankeval/compare/_stats.py",
        "return 1.0 if not d.any() else 0.0",
        "return 1.0",
        ("tests/test_compare.py", "tests/test_stats.py"),
    ),
    Mutant(
        "M03",
        "polars_rankeval/compare/_stats.py",
        "wins, losses = int((d > 0).sum()), int((d < 0).sum())",
        "wins, losses = int((d >= 0).sum()), int((d < 0).sum())",
        ("tests/test_compare.py", "tests/test_stats.py"),
    ),
    Mutant(
        "M04",
        "polars_rankeval/compare/_stats.py",
        "(count + 1.0) / (n_resamples + 1.0)",
        "count / n_resamples",
        ("tests/test_compare.py", "tests/test_stats.py"),
    ),
    Mutant(
        "M05",
        "polars_rankeval/report.py",
        "(max if directions[metric] else min)(finite)",
        "(min if directions[metric] else max)(finite)",
        ("tests/test_report.py",),
    ),
    Mutant(
        "M06",
        "polars_rankeval/report.py",
        '"_": r"\\_",',
        "",
        ("tests/test_report.py",),
    ),
    Mutant(
        "M07",
        "polars_rankeval/report.py",
        "return html.escape(text, quote=True)",
        "return text",
        ("tests/test_report.py",),
    ),
    Mutant(
        "M08",
        "polars_rankeval/plot.py",
        "pairs.filter(~both & (x.is_not_null() | y.is_not_null())).height",
        "pairs.filter(~both).height",
        ("tests/test_plot.py", "polars_rankeval/plot"),
    ),
    Mutant(
        "M09",
        "polars_rankeval/plot.py",
        "if low >= 0.0 and high <= 1.0:",
        "if low >= 0.0 and high < 1.0:",
        ("tests/test_plot.py", "polars_rankeval/plot"),
    ),
    Mutant(
        "M10",
        "polars_rankeval/plot.py",
        "TIE_TOLERANCE = 1e-12",
        "TIE_TOLERANCE = 0.0",
        ("tests/test_plot.py", "polars_rankeval/plot"),
    ),
    Mutant(
        "M11",
        "polars_rankeval/spark.py",
        "functions.avg(functions.when(~functions.isnan(values), values))",
        "functions.avg(values)",
        ("tests/test_spark.py",),
    ),
    Mutant(
        "M12",
        "polars_rankeval/spark.py",
        "pending = [whole.slice(whole.height - tail)]",
        "pending = []",
        ("tests/test_spark.py",),
    ),
    Mutant(
        "M13",
        "polars_rankeval/metrics/trec_sets.py",
        "(x + 1.0) * precision * recall / (x * precision + recall)",
        "(x * x + 1.0) * precision * recall / (x * x * precision + recall)",
        ("tests/test_trec_sets.py",),
    ),
    Mutant(
        "M14",
        "polars_rankeval/metrics/trec_sets.py",
        "num_rel.cast(pl.Float64) + 0.9).floor()",
        "num_rel.cast(pl.Float64) + 0.5).floor()",
        ("tests/test_trec_sets.py",),
    ),
    Mutant(
        "M15",
        "polars_rankeval/metrics/trec_sets.py",
        "(num_docs + hits - ret - rel)",
        "(num_docs - hits - ret - rel)",
        ("tests/test_trec_sets.py",),
    ),
    Mutant(
        "M16",
        "polars_rankeval/metrics/interpolated.py",
        'mode="half_away_from_zero"',
        'mode="half_to_even"',
        ("tests/test_trec_output.py",),
    ),
    Mutant(
        "M17",
        "polars_rankeval/metrics/interpolated.py",
        ">= needed",
        "> needed",
        ("tests/test_trec_output.py",),
    ),
    Mutant(
        "M18",
        "polars_rankeval/cli.py",
        "EXIT_ERROR = 2",
        "EXIT_ERROR = 1",
        ("tests/test_cli.py",),
    ),
    Mutant(
        "M19",
        "polars_rankeval/cli.py",
        ">= args.max_docs",
        "> args.max_docs",
        ("tests/test_cli.py", "tests/test_trec_output.py"),
    ),
    Mutant(
        "M20",
        "polars_rankeval/cli.py",
        "(pl.col(relevance) >= 0)",
        "(pl.col(relevance) > 0)",
        ("tests/test_cli.py", "tests/test_trec_output.py"),
    ),
]


def _source(mutant: Mutant) -> Path:
    """The mutated file: a module, or the same module inside a package split since."""
    path = ROOT / mutant.path
    if path.exists():
        return path
    package = path.with_suffix("")
    for candidate in sorted(package.glob("*.py")):
        if mutant.original in candidate.read_text(encoding="utf-8"):
            return candidate
    msg = f"{mutant.key}: neither {mutant.path} nor a module of {package} exists"
    raise SystemExit(msg)


def _apply(mutant: Mutant) -> tuple[Path, str]:
    path = _source(mutant)
    text = path.read_text(encoding="utf-8")
    count = text.count(mutant.original)
    if count < mutant.occurrence:
        msg = f"{mutant.key}: {mutant.original!r} not found in {path.relative_to(ROOT)}"
        raise SystemExit(msg)
    start = -1
    for _ in range(mutant.occurrence):
        start = text.index(mutant.original, start + 1)
    mutated = text[:start] + mutant.mutated + text[start + len(mutant.original) :]
    return path, mutated


def _run_tests(tests: list[str], workers: str) -> bool:
    """True when the tests fail (the mutant is killed)."""
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    if workers != "0":
        command += ["-n", workers]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    return result.returncode != 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("keys", nargs="*", help="mutants to run (default: all)")
    parser.add_argument("--check", action="store_true", help="only check the mutants apply")
    parser.add_argument("--workers", default="2", help="pytest-xdist workers (0: none)")
    parser.add_argument("--no-full", action="store_true", help="skip the whole-suite rerun")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if not args.keys or m.key in args.keys]
    survivors = []
    for mutant in chosen:
        path, mutated = _apply(mutant)
        if args.check:
            continue
        original = path.read_text(encoding="utf-8")
        started = time.perf_counter()
        try:
            path.write_text(mutated, encoding="utf-8")
            killed = _run_tests(list(mutant.tests), args.workers)
            where = "area tests"
            if not killed and not args.no_full:
                killed = _run_tests([], args.workers)
                where = "whole suite"
        finally:
            path.write_text(original, encoding="utf-8")
        outcome = "killed" if killed else "SURVIVED"
        seconds = time.perf_counter() - started
        shown = path.relative_to(ROOT)
        print(f"{mutant.key} {outcome:8} by {where:11} {seconds:6.1f} s  {shown}")
        if not killed:
            survivors.append(mutant.key)
    if args.check:
        print(f"{len(chosen)} mutants apply")
        return 0
    print(f"{len(chosen) - len(survivors)} of {len(chosen)} killed; survivors: {survivors}")
    return 1 if survivors else 0


if __name__ == "__main__":
    raise SystemExit(main())
