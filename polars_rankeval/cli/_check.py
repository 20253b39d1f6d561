"""``rank-eval check``: a regression gate for CI jobs and batch scripts.

``rank-eval check CANDIDATE --baseline BASELINE [--qrels QRELS] --fail-if "ndcg@10 < -0.005"
[--fail-if-significant] [--min recall@100=0.8] [--fail-on-missing-queries]`` runs
:func:`polars_rankeval.check`. Exit status 0: every rule holds; 1: a rule is broken; 2: a
mistake in the command or the inputs (one line on stderr). With ``$GITHUB_STEP_SUMMARY`` set,
the Markdown summary is appended to that file as well.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from polars_rankeval.cli._args import _format_from, _Parser, add_direction, directions
from polars_rankeval.cli._errors import CliError
from polars_rankeval.cli._inputs import (
    TABLE_SUFFIXES,
    _check_output,
    _input_errors_named,
    _read_trec,
    _scan,
    is_table_path,
)
from polars_rankeval.cli._output import _write
from polars_rankeval.comparison import CORRECTIONS, TESTS
from polars_rankeval.gate import CheckOptionError, check
from polars_rankeval.io import leading_lines

EXIT_FAILED = 1
_SUMMARY_VARIABLE = "GITHUB_STEP_SUMMARY"
#: check()'s options as this command spells them: its errors name these flags (D5).
_CLI_OPTIONS = {
    "fail_if": "--fail-if",
    "fail_if_significant": "--fail-if-significant",
    "floors": "--min",
    "ceilings": "--max",
    "fail_on_missing_queries": "--fail-on-missing-queries",
    "metrics": "-m/--metrics",
    "query": "--query",
    "by": "--by",
    "candidate_system": "--candidate-system",
    "baseline_system": "--baseline-system",
    "direction": "--direction",
}
_FORMATS = ("text", "json", "markdown")
# -o's suffix picks the format, as in the other commands (_format_from).
_SUFFIXES = {".txt": "text", ".json": "json", ".md": "markdown"}
_TREC_EVAL_FIELDS = 3  # a line of trec_eval's output: measure, query, value

_EPILOG = """\
examples:
  # nightly: store the baseline's per-query values once
  rank-eval prod.parquet -m ndcg@10,recall@100 --per-query -o baseline.parquet
  # in CI: fail on a drop of more than 0.005, or a significant loss, or recall below 0.8
  rank-eval check candidate.parquet --baseline baseline.parquet \\
      --fail-if "ndcg@10 < -0.005" --fail-if-significant --min recall@100=0.8
  # TREC runs
  rank-eval check new.run --baseline old.run --qrels qrels.txt --fail-if "map < -1%"

exit status: 0 pass, 1 a rule is broken, 2 a mistake in the command or its inputs
"""


def _check_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rank-eval check",
        description="Check a candidate against a baseline with regression rules (a CI gate).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "candidate",
        metavar="CANDIDATE",
        help="a log or a per-query table (Parquet/CSV), or with --qrels a TREC run",
    )
    parser.add_argument(
        "--baseline",
        required=True,
        metavar="BASELINE",
        help="the same kinds: a log, a per-query table written by rank-eval ... --per-query -o, "
        "or with --qrels a TREC run",
    )
    parser.add_argument("--qrels", help="TREC qrels for the TREC runs among the inputs")
    parser.add_argument(
        "-m",
        "--metrics",
        action="append",
        default=None,
        help="comma-separated metrics to check (default: those the rules name, else every "
        "metric of a per-query baseline); repeatable",
    )
    parser.add_argument(
        "--fail-if",
        action="append",
        default=[],
        metavar="RULE",
        help="'METRIC OP NUMBER' on the change candidate - baseline, OP one of < <= > >=: "
        "'ndcg@10 < -0.005'; with %% relative to the baseline: 'map < -1%%'; repeatable",
    )
    parser.add_argument(
        "--fail-if-significant",
        action="store_true",
        help="fail on a change in a metric's worse direction that the paired test finds "
        "significant (after --correction)",
    )
    parser.add_argument(
        "--min",
        action="append",
        default=[],
        metavar="METRIC=VALUE",
        help="the candidate's value must be at least VALUE (repeatable)",
    )
    parser.add_argument(
        "--max",
        action="append",
        default=[],
        metavar="METRIC=VALUE",
        help="the candidate's value must be at most VALUE (repeatable)",
    )
    parser.add_argument(
        "--fail-on-missing-queries",
        action="store_true",
        help="fail when a baseline query is not in the candidate",
    )
    parser.add_argument("--test", choices=TESTS, default="t", help="paired test (default t)")
    parser.add_argument(
        "--correction",
        choices=[*CORRECTIONS, "none"],
        default="holm",
        help="correction of the p-values across the metrics (default holm)",
    )
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level (0.05)")
    parser.add_argument("--resamples", type=int, default=10_000, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument(
        "--by",
        default="system",
        help="the system column of an input holding several systems (default system)",
    )
    parser.add_argument("--candidate-system", help="the candidate's system in its input")
    parser.add_argument("--baseline-system", help="the baseline's system in its input")
    parser.add_argument(
        "--convention", default="trec_eval", help="a tool's definitions (default trec_eval)"
    )
    parser.add_argument(
        "-c",
        "--complete",
        action="store_true",
        help="with TREC runs: judged queries a run has no line for score 0 (trec_eval -c)",
    )
    parser.add_argument(
        "-l", "--relevance-level", type=int, default=None, help="as trec_eval -l (default 1)"
    )
    for role in ("query", "item", "score", "relevance"):
        parser.add_argument(f"--{role}", default=role, help=f"{role} column (default {role})")
    add_direction(parser)
    parser.add_argument(
        "--format",
        choices=_FORMATS,
        default=None,
        help="default text, or as the suffix of -o says (.txt, .json, .md)",
    )
    parser.add_argument("-o", "--output", help="write to this file instead of stdout")
    return parser


def _bounds(values: list[str], option: str) -> dict[str, float]:
    """``--min recall@100=0.8`` (repeatable) as a mapping."""
    out: dict[str, float] = {}
    for value in values:
        name, sep, number = value.rpartition("=")
        try:
            bound = float(number)
        except ValueError:
            bound = math.nan
        if not sep or not name.strip() or math.isnan(bound):
            msg = f"{option} takes METRIC=VALUE, e.g. {option} recall@100=0.8, got {value!r}"
            raise CliError(msg)
        out[name.strip()] = bound
    return out


def _read(path: str, qrels: str | None, role: str) -> pl.LazyFrame:
    if is_table_path(path):
        return _scan(path)
    if qrels is None:
        msg = (
            f"{path}: the {role} is not a table file ({', '.join(sorted(TABLE_SUFFIXES))}); "
            "for a TREC run give --qrels QRELS"
        )
        raise CliError(msg)
    if _is_trec_eval_output(path):
        msg = (
            f"{path}: the {role} looks like trec_eval's output (measure, query, value), which "
            "holds no ranking to evaluate and is not a per-query table; store the baseline "
            "as a table: rank-eval RUN --qrels QRELS -m ... --per-query -o baseline.parquet"
        )
        raise CliError(msg)
    return _read_trec(path, qrels)


def _is_trec_eval_output(path: str) -> bool:
    """A first line of three fields (``map  all  0.1785``), as trec_eval prints; not a run.

    The line is the decompressed text's (a gzip run's compressed bytes may split into three).
    """
    try:
        first = leading_lines(path, 1)
    except OSError:
        return False  # the TREC reader names a missing file
    return bool(first) and len(first[0].split()) == _TREC_EVAL_FIELDS


@contextlib.contextmanager
def _spelled_for_the_command_line() -> Iterator[None]:
    """check()'s option errors with this command's flags (``--fail-if``, not ``fail_if=``)."""
    try:
        yield
    except CheckOptionError as error:
        raise CliError(error.spelled(_CLI_OPTIONS)) from error


def _evaluation_options(args: argparse.Namespace) -> dict[str, Any]:
    """-c and -l reach evaluate only when given (a per-query table takes none)."""
    options: dict[str, Any] = {}
    if args.complete:
        options["missing_queries"] = "zero"
    if args.relevance_level is not None:
        options["relevance_level"] = args.relevance_level
    return options


def _run_check(argv: Sequence[str]) -> int:
    """Run ``rank-eval check``; returns 0 (pass) or 1 (a rule broken)."""
    args = _check_parser().parse_args(argv)
    floors, ceilings = _bounds(args.min, "--min"), _bounds(args.max, "--max")
    if not 0 < args.alpha < 1:
        msg = f"--alpha must be in (0, 1), got {args.alpha}"
        raise CliError(msg)
    fmt = _format_from(args.format, args.output, _FORMATS, _SUFFIXES, "text")
    _check_output(args.output, [args.candidate, args.baseline, args.qrels])
    summary = os.environ.get(_SUMMARY_VARIABLE)
    # The summary is appended to: naming an input (or -o) would corrupt it (F3).
    _check_output(
        summary or None, [args.candidate, args.baseline, args.qrels], option=f"${_SUMMARY_VARIABLE}"
    )
    if summary and args.output and _same_file(summary, args.output):
        msg = (
            f"${_SUMMARY_VARIABLE} {summary!r} is the -o file: the summary would be appended "
            "to the result; write the result to another file"
        )
        raise CliError(msg)
    inputs = [args.candidate, args.baseline]
    with (
        _input_errors_named(inputs, [*inputs, args.qrels] if args.qrels else []),
        _spelled_for_the_command_line(),
    ):
        candidate = _read(args.candidate, args.qrels, "candidate")
        baseline = _read(args.baseline, args.qrels, "baseline")
        result = check(
            candidate,
            baseline,
            args.metrics,
            fail_if=args.fail_if,
            fail_if_significant=args.fail_if_significant,
            floors=floors,
            ceilings=ceilings,
            fail_on_missing_queries=args.fail_on_missing_queries,
            test=args.test,
            correction=None if args.correction == "none" else args.correction,
            alpha=args.alpha,
            n_resamples=args.resamples,
            seed=args.seed,
            by=args.by,
            system=args.candidate_system,
            baseline=args.baseline_system,
            query=args.query,
            item=args.item,
            score=args.score,
            relevance=args.relevance,
            convention=args.convention,
            direction=directions(args.direction),
            **_evaluation_options(args),
        )
    rendered = {"text": result.text, "json": result.json, "markdown": result.markdown}
    _write(rendered[fmt](), args.output)
    if summary:
        _append_summary(summary, result.markdown())
    return 0 if result.passed else EXIT_FAILED


def _same_file(one: str, other: str) -> bool:
    """The same file, by real path or (where both exist) by identity (a hard link)."""
    if os.path.realpath(one) == os.path.realpath(other):
        return True
    return Path(one).is_file() and Path(other).is_file() and os.path.samefile(one, other)


def _append_summary(path: str, markdown: str) -> None:
    """Append to ``$GITHUB_STEP_SUMMARY``; a failure is a warning, not the verdict's exit code.

    GitHub Actions shows this file on the job's page; other steps append to it too. The
    verdict is already printed: an unwritable summary must not turn a pass (0) or a broken
    rule (1) into a usage error (2).
    """
    try:
        with Path(path).open("a", encoding="utf-8") as handle:
            handle.write(markdown)
    except OSError as error:
        reason = error.strerror or str(error)
        print(
            f"rank-eval: warning: cannot append the summary to ${_SUMMARY_VARIABLE} "
            f"({path!r}): {reason}",
            file=sys.stderr,
        )
