"""Re-run the reliability audits' mutation samples: every one-line mutant must fail a test.

Round 3 applied 20 one-line mutations to compare, report, plot, spark, trec_sets, interpolated
and the CLI (keys ``R3-M01`` ... ``R3-M20``); round 4 applied 34 to the gate, similarity,
compare, ties, meaning and the metrics (keys ``M01`` ... ``M34``, as in the audit's table).
This script applies each mutant (the same lines, at their current places), runs its area's
tests and then, if it survived, the whole suite, and exits 1 if any mutant survives.

The mutants are applied to a scratch copy of the checkout (its tracked and untracked files,
``git ls-files``), and the tests run there with ``PYTHONPATH`` pointing at it, so the working
tree is never modified: another process reading the sources meanwhile (an editor, a test run,
another person in the same checkout) never sees a mutant, and an interrupted run leaves
nothing behind. ``--in-place`` mutates the checkout itself (restored after each run). Each
set of area tests first runs once without a mutant: a mutant counts as killed only if its
tests pass without it (``--no-baseline`` skips that run).

Usage::

    python benchmarks/mutation_sample.py                # all, area tests then whole suite
    python benchmarks/mutation_sample.py --check        # only check every mutant still applies
    python benchmarks/mutation_sample.py M12 M13 R3-M02 # some mutants
    python benchmarks/mutation_sample.py --round 4 --no-full   # round 4, area tests only

``--check`` runs in the test suite (tests/properties/test_mutation_sample.py), so a mutant whose
line moved or changed is noticed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
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


# The round-3 audit's 20 mutants (keys R3-M01 ... R3-M20).
ROUND_3 = [
    Mutant(
        "R3-M01",
        "polars_rankeval/comparison/_corrections.py",
        "np.maximum.accumulate((m - np.arange(m)) * ranked)",
        "np.minimum.accumulate((m - np.arange(m)) * ranked)",
        ("tests/comparison/test_compare.py",),
    ),
    Mutant(
        "R3-M02",
        "polars_rankeval/comparison/_stats.py",
        "return 1.0 if not d.any() else 0.0",
        "return 1.0",
        ("tests/comparison/test_compare.py", "tests/comparison/test_stats.py"),
    ),
    Mutant(
        "R3-M03",
        "polars_rankeval/comparison/_stats.py",
        "return sign_p(int((d > 0).sum()), int((d < 0).sum()), stats)",
        "return sign_p(int((d >= 0).sum()), int((d < 0).sum()), stats)",
        ("tests/comparison/test_compare.py", "tests/comparison/test_stats.py"),
    ),
    Mutant(
        "R3-M04",
        "polars_rankeval/comparison/_stats.py",
        "(count + 1.0) / (n_resamples + 1.0)",
        "count / n_resamples",
        ("tests/comparison/test_compare.py", "tests/comparison/test_stats.py"),
    ),
    Mutant(
        "R3-M05",
        "polars_rankeval/comparison/_report.py",
        "(max if directions[metric] else min)(finite)",
        "(min if directions[metric] else max)(finite)",
        ("tests/comparison/test_report.py",),
    ),
    Mutant(
        "R3-M06",
        "polars_rankeval/comparison/_report.py",
        '"_": r"\\_",',
        "",
        ("tests/comparison/test_report.py",),
    ),
    Mutant(
        "R3-M07",
        "polars_rankeval/comparison/_report.py",
        "return html.escape(text, quote=True)",
        "return text",
        ("tests/comparison/test_report.py",),
    ),
    Mutant(
        "R3-M08",
        "polars_rankeval/plot.py",
        "pairs.filter(~both & (x.is_not_null() | y.is_not_null())).height",
        "pairs.filter(~both).height",
        ("tests/plot/test_plot.py", "polars_rankeval/plot"),
    ),
    Mutant(
        "R3-M09",
        "polars_rankeval/plot.py",
        "if low >= 0.0 and high <= 1.0:",
        "if low >= 0.0 and high < 1.0:",
        ("tests/plot/test_plot.py", "polars_rankeval/plot"),
    ),
    Mutant(
        "R3-M10",
        "polars_rankeval/plot.py",
        "TIE_TOLERANCE = 1e-12",
        "TIE_TOLERANCE = 0.0",
        ("tests/plot/test_plot.py", "polars_rankeval/plot"),
    ),
    Mutant(
        "R3-M11",
        "polars_rankeval/spark.py",
        "functions.avg(functions.when(~functions.isnan(values), values))",
        "functions.avg(values)",
        ("tests/spark/test_spark.py",),
    ),
    Mutant(
        "R3-M12",
        "polars_rankeval/spark.py",
        "pending = [whole.slice(whole.height - tail)]",
        "pending = []",
        ("tests/spark/test_spark.py",),
    ),
    Mutant(
        "R3-M13",
        "polars_rankeval/metrics/trec_sets.py",
        "(x + 1.0) * precision * recall / (x * precision + recall)",
        "(x * x + 1.0) * precision * recall / (x * x * precision + recall)",
        ("tests/metrics/test_trec_sets.py",),
    ),
    Mutant(
        "R3-M14",
        "polars_rankeval/metrics/trec_sets.py",
        "num_rel.cast(pl.Float64) + 0.9).floor()",
        "num_rel.cast(pl.Float64) + 0.5).floor()",
        ("tests/metrics/test_trec_sets.py",),
    ),
    Mutant(
        "R3-M15",
        "polars_rankeval/metrics/trec_sets.py",
        "(num_docs + hits - ret - rel)",
        "(num_docs - hits - ret - rel)",
        ("tests/metrics/test_trec_sets.py",),
    ),
    Mutant(
        "R3-M16",
        "polars_rankeval/metrics/interpolated.py",
        'mode="half_away_from_zero"',
        'mode="half_to_even"',
        ("tests/conformance/test_trec_output.py",),
    ),
    Mutant(
        "R3-M17",
        "polars_rankeval/metrics/interpolated.py",
        ">= needed",
        "> needed",
        ("tests/conformance/test_trec_output.py",),
    ),
    Mutant(
        "R3-M18",
        "polars_rankeval/cli.py",
        "EXIT_ERROR = 2",
        "EXIT_ERROR = 1",
        ("tests/cli/test_cli.py",),
    ),
    Mutant(
        "R3-M19",
        # -M's cut is the engine's depth= (issue 28): rows past the cut are flagged, so the
        # mutant (one row too many or too few) is ">" -> ">=" on the flag
        "polars_rankeval/_engine/input.py",
        "(position > cut.depth)",
        "(position >= cut.depth)",
        (
            "tests/engine/test_depth.py",
            "tests/cli/test_cli.py",
            "tests/conformance/test_trec_output.py",
        ),
    ),
    Mutant(
        "R3-M20",
        # -J filters with the engine's judged_only_rows
        "polars_rankeval/_engine/plan.py",
        "(grade >= 0)",
        "(grade > 0)",
        ("tests/cli/test_cli.py", "tests/conformance/test_trec_output.py"),
    ),
]


# The round-4 audit's 34 mutants (reliability-audit.md §5), keys as there. The audit's area
# tests, plus tests/properties/test_mutant_boundaries.py where that file pins the boundary a mutant
# moves.
ROUND_4 = [
    Mutant(
        "M01",
        "polars_rankeval/gate/_rules.py",
        "return delta / abs(baseline_mean)",
        "return delta / baseline_mean",
        ("tests/gate/test_check.py",),
    ),
    Mutant(
        "M02",
        "polars_rankeval/gate/_rules.py",
        "threshold=value / 100 if relative else value,",
        "threshold=value / 10 if relative else value,",
        ("tests/gate/test_check.py",),
    ),
    Mutant(
        "M03",
        "polars_rankeval/gate/_rules.py",
        '"<=": change <= self.threshold,',
        '"<=": change < self.threshold,',
        ("tests/gate/test_check.py",),
    ),
    Mutant(
        "M04",
        "polars_rankeval/gate/_rules.py",
        "if shared == 0 or math.isnan(delta):",
        "if shared == 0:",
        ("tests/gate/test_check.py",),
    ),
    Mutant(
        "M05",
        "polars_rankeval/gate/_rules.py",
        "worse = delta < 0 if higher else delta > 0",
        "worse = delta <= 0 if higher else delta > 0",
        ("tests/gate/test_check.py",),
    ),
    Mutant(
        "M06",
        "polars_rankeval/gate/_rules.py",
        "not value >= self.floors[metric]",
        "not value > self.floors[metric]",
        ("tests/gate/test_check.py",),
    ),
    Mutant(
        "M07",
        "polars_rankeval/gate/_result.py",
        '"<0.0001" if value < 1e-4',
        '"<0.0001" if value < 1e-3',
        ("tests/gate/test_check.py",),
    ),
    Mutant(
        "M08",
        "polars_rankeval/agreement/_similarity/_measures.py",
        "if not 0 < p < 1:",
        "if not 0 < p <= 1:",
        ("tests/agreement/test_similarity.py",),
    ),
    Mutant(
        "M09",
        "polars_rankeval/agreement/_similarity/_measures.py",
        "if k is not None and k < 1:",
        "if k is not None and k < 0:",
        ("tests/agreement/test_similarity.py",),
    ),
    Mutant(
        "M10",
        "polars_rankeval/agreement/_similarity/_rbo.py",
        "geometric_tail = p.pow(l_ + 1) / (1 - p)",
        "geometric_tail = p.pow(l_) / (1 - p)",
        ("tests/agreement/test_similarity.py",),
    ),
    Mutant(
        "M11",
        "polars_rankeval/agreement/_similarity/_rbo.py",
        "in_first, in_second = pl.col(_D) <= s, (pl.col(_D) > s)",
        "in_first, in_second = pl.col(_D) <= s, (pl.col(_D) >= s)",
        ("tests/agreement/test_similarity.py",),
    ),
    Mutant(
        "M12",
        "polars_rankeval/comparison/_stats.py",
        "_ZERO = 1e-12",
        "_ZERO = 1e-6",
        (
            "tests/comparison/test_stats.py",
            "tests/comparison/test_compare.py",
            "tests/properties/test_mutant_boundaries.py",
        ),
    ),
    Mutant(
        "M13",
        "polars_rankeval/comparison/_stats.py",
        "if n < 63 and 2**n <= n_resamples:",
        "if n < 63 and 2**n < n_resamples:",
        (
            "tests/comparison/test_stats.py",
            "tests/comparison/test_compare.py",
            "tests/properties/test_mutant_boundaries.py",
        ),
    ),
    Mutant(
        "M14",
        "polars_rankeval/comparison/_stats.py",
        "np.maximum(floor, (count + 1.0) / (n_resamples + 1.0)), dtype=np.float64)",
        "(count + 1.0) / (n_resamples + 1.0), dtype=np.float64)",
        ("tests/comparison/test_stats.py", "tests/comparison/test_compare.py"),
    ),
    Mutant(
        "M15",
        "polars_rankeval/comparison/_stats.py",
        "return math.exp((1 - k) * math.lgamma(m + 1))",
        "return math.exp((1 - k) * math.lgamma(m))",
        (
            "tests/comparison/test_stats.py",
            "tests/comparison/test_compare.py",
            "tests/properties/test_mutant_boundaries.py",
        ),
    ),
    Mutant(
        "M16",
        "polars_rankeval/comparison/_stats.py",
        "half = float(stats.t.ppf(1 - alpha / 2, n - 1))",
        "half = float(stats.t.ppf(1 - alpha, n - 1))",
        ("tests/comparison/test_stats.py", "tests/comparison/test_compare.py"),
    ),
    Mutant(
        "M17",
        "polars_rankeval/comparison/_stats.py",
        "df_residual=(m - 1) * (n - 1),",
        "df_residual=m * (n - 1),",
        ("tests/comparison/test_stats.py", "tests/comparison/test_compare.py"),
    ),
    Mutant(
        "M18",
        "polars_rankeval/comparison/_within.py",
        'int(counts["n"].max() or 0) <= 1',
        'int(counts["n"].max() or 0) < 1',
        ("tests/comparison/test_compare_within.py",),
    ),
    Mutant(
        "M19",
        "polars_rankeval/comparison/_within.py",
        'raw = raw.filter(pl.col("n_queries") > 0)',
        'raw = raw.filter(pl.col("n_queries") >= 0)',
        ("tests/comparison/test_compare_within.py",),
    ),
    Mutant(
        "M20",
        "polars_rankeval/comparison/_bootstrap.py",
        "low_q, high_q = alpha / 2, 1 - alpha / 2",
        "low_q, high_q = alpha, 1 - alpha",
        ("tests/comparison/test_bootstrap.py",),
    ),
    Mutant(
        "M21",
        "polars_rankeval/comparison/_bootstrap.py",
        "found[label] = float((np.sum(extreme) + 1) / (len(draws) + 1))",
        "found[label] = float(np.sum(extreme) / len(draws))",
        ("tests/comparison/test_bootstrap.py",),
    ),
    Mutant(
        "M22",
        "polars_rankeval/comparison/_bootstrap.py",
        "return not low - 1e-12 <= value <= high + 1e-12",
        "return not low <= value <= high",
        ("tests/comparison/test_bootstrap.py", "tests/properties/test_mutant_boundaries.py"),
    ),
    Mutant(
        "M23",
        "polars_rankeval/_engine/exact_sum.py",
        "(exact - floating).abs() <= _AGREEMENT * floating.abs()",
        "(exact - floating).abs() <= _AGREEMENT",
        ("tests/metrics/test_order_free.py",),
    ),
    Mutant(
        "M24",
        "polars_rankeval/_engine/tie_bounds.py",
        "if spread > limit:",
        "if spread >= limit:",
        (
            "tests/engine/test_ties.py",
            "tests/conformance/test_tie_bounds.py",
            "tests/engine/test_tie_check.py",
        ),
    ),
    Mutant(
        "M25",
        "polars_rankeval/_engine/meaning.py",
        "return difference < 0",
        "return difference <= 0",
        ("tests/engine/test_meaning.py", "tests/properties/test_mutant_boundaries.py"),
    ),
    Mutant(
        "M26",
        "polars_rankeval/metrics/coverage.py",
        "distinct > size,",
        "distinct >= size,",
        ("tests/metrics/test_coverage.py", "tests/properties/test_mutant_boundaries.py"),
    ),
    Mutant(
        "M27",
        "polars_rankeval/metrics/classification.py",
        "- pos_count * (pos_count + 1) / 2",
        "- pos_count * (pos_count - 1) / 2",
        ("tests/metrics/test_classification.py",),
    ),
    Mutant(
        "M28",
        "polars_rankeval/metrics/popularity.py",
        "(n_users / users).log(2) / n_users.log(2)",
        "(n_users / users).log(2)",
        ("tests/metrics/test_popularity.py",),
    ),
    Mutant(
        "M29",
        "polars_rankeval/metrics/diversity.py",
        'pl.when(pl.col("__rke_n") >= 2).then(',
        'pl.when(pl.col("__rke_n") > 2).then(',
        ("tests/metrics/test_diversity.py",),
    ),
    Mutant(
        "M30",
        "polars_rankeval/metrics/intent_aware.py",
        'counted = pl.col(_SUBTOPIC).struct.field("relevance") >= rel',
        'counted = pl.col(_SUBTOPIC).struct.field("relevance") > rel',
        ("tests/metrics/test_intent_aware.py",),
    ),
    Mutant(
        "M31",
        "polars_rankeval/metrics/cwl.py",
        "return y.log() - 0.5 / y + series - near",
        "return y.log() - 0.5 / y - series - near",
        ("tests/metrics/test_cwl.py",),
    ),
    Mutant(
        "M32",
        "polars_rankeval/metrics/ntcir.py",
        "if any(low > high for low, high in itertools.pairwise(checked)):",
        "if any(low >= high for low, high in itertools.pairwise(checked)):",
        ("tests/conformance/test_ntcir.py",),
    ),
    Mutant(
        "M33",
        "polars_rankeval/agreement/labels.py",
        "alpha = 1.0 - (n - 1) * observed / expected",
        "alpha = 1.0 - n * observed / expected",
        ("tests/agreement/test_agreement_labels.py",),
    ),
    Mutant(
        "M34",
        "polars_rankeval/agreement/correlation.py",
        "p = above_e.sum(axis=1) + 1  # 1-based",
        "p = above_e.sum(axis=1)  # 1-based",
        ("tests/agreement/test_agreement_correlation.py", "tests/metrics/test_correlation.py"),
    ),
]

MUTANTS = ROUND_3 + ROUND_4


def _source(mutant: Mutant, root: Path = ROOT) -> Path:
    """The mutated file: a module, or the same module inside a package split since."""
    path = root / mutant.path
    if path.exists():
        return path
    package = path.with_suffix("")
    for candidate in sorted(package.glob("*.py")):
        if mutant.original in candidate.read_text(encoding="utf-8"):
            return candidate
    msg = f"{mutant.key}: neither {mutant.path} nor a module of {package} exists"
    raise SystemExit(msg)


def _apply(mutant: Mutant, root: Path = ROOT) -> tuple[Path, str]:
    path = _source(mutant, root)
    text = path.read_text(encoding="utf-8")
    count = text.count(mutant.original)
    if count < mutant.occurrence:
        msg = f"{mutant.key}: {mutant.original!r} not found in {path.relative_to(root)}"
        raise SystemExit(msg)
    start = -1
    for _ in range(mutant.occurrence):
        start = text.index(mutant.original, start + 1)
    mutated = text[:start] + mutant.mutated + text[start + len(mutant.original) :]
    return path, mutated


def _copy_checkout(target: Path) -> None:
    """Copy the checkout's files (tracked, and untracked but not ignored) under ``target``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8")
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is skipped
            destination = target / name
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination)


def _environment(root: Path) -> dict[str, str]:
    """The tests' environment: ``root``'s package first on the path, for child processes too."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    if root != ROOT:
        # the editable install points at the checkout: make sure the copy is what imports
        probe = subprocess.run(
            [sys.executable, "-c", "import polars_rankeval; print(polars_rankeval.__file__)"],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        if not Path(probe).resolve().is_relative_to(root.resolve()):
            msg = f"the copy's package does not import first (got {probe}); use --in-place"
            raise SystemExit(msg)
    return env


def _run_tests(tests: list[str], workers: str, root: Path, env: dict[str, str]) -> bool:
    """True when the tests fail (the mutant is killed)."""
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    if workers != "0":
        command += ["-n", workers]
    result = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, check=False)
    return result.returncode != 0


def _run(chosen: list[Mutant], args: argparse.Namespace, root: Path) -> list[str]:
    """Apply each mutant in ``root``, run its tests, restore the file; the keys not killed.

    A mutant counts as killed only if its area's tests pass without it: each set of area
    tests runs once on the unmutated code first (unless ``--no-baseline``), and a failing set
    marks its mutants BROKEN (not killed), so a test that fails anyway cannot hide a survivor.
    """
    env = _environment(root)
    passing: dict[tuple[str, ...], bool] = {}
    not_killed = []
    for mutant in chosen:
        path, mutated = _apply(mutant, root)
        original = path.read_text(encoding="utf-8")
        started = time.perf_counter()
        if not args.no_baseline and mutant.tests not in passing:
            passing[mutant.tests] = not _run_tests(list(mutant.tests), args.workers, root, env)
        if not passing.get(mutant.tests, True):
            outcome, where = "BROKEN", "area tests fail without the mutant"
            killed = False
        else:
            try:
                path.write_text(mutated, encoding="utf-8")
                killed = _run_tests(list(mutant.tests), args.workers, root, env)
                where = "area tests"
                if not killed and not args.no_full:
                    killed = _run_tests([], args.workers, root, env)
                    where = "whole suite"
            finally:
                path.write_text(original, encoding="utf-8")
            outcome = "killed" if killed else "SURVIVED"
        seconds = time.perf_counter() - started
        shown = path.relative_to(root)
        print(f"{mutant.key:7} {outcome:8} by {where:11} {seconds:6.1f} s  {shown}", flush=True)
        if not killed:
            not_killed.append(mutant.key)
    return not_killed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("keys", nargs="*", help="mutants to run (default: all)")
    parser.add_argument("--check", action="store_true", help="only check the mutants apply")
    parser.add_argument("--round", choices=["3", "4"], help="only this audit's mutants")
    parser.add_argument("--workers", default="2", help="pytest-xdist workers (0: none)")
    parser.add_argument("--no-full", action="store_true", help="skip the whole-suite rerun")
    parser.add_argument(
        "--no-baseline", action="store_true", help="skip the unmutated run of the area tests"
    )
    parser.add_argument(
        "--in-place", action="store_true", help="mutate the checkout, not a scratch copy"
    )
    args = parser.parse_args(argv)
    unknown = sorted(set(args.keys) - {m.key for m in MUTANTS})
    if unknown:
        parser.error(f"unknown mutants {unknown}; keys: R3-M01 ... R3-M20, M01 ... M34")
    pool = {"3": ROUND_3, "4": ROUND_4}.get(args.round or "", MUTANTS)
    chosen = [m for m in pool if not args.keys or m.key in args.keys]
    if args.check:
        for mutant in chosen:
            _apply(mutant)
        print(f"{len(chosen)} mutants apply")
        return 0
    if args.in_place:
        survivors = _run(chosen, args, ROOT)
    else:
        with tempfile.TemporaryDirectory(prefix="rke-mutants-") as scratch:
            _copy_checkout(Path(scratch))
            survivors = _run(chosen, args, Path(scratch))
    print(f"{len(chosen) - len(survivors)} of {len(chosen)} killed; not killed: {survivors}")
    return 1 if survivors else 0


if __name__ == "__main__":
    raise SystemExit(main())
