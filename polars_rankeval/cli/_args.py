"""Argument parsing: the parsers of ``rank-eval`` and ``rank-eval compare``.

Also the option types (``--buckets``, ``--alpha``...), ``--by`` split into columns, and the
output format: ``--format``, else the ``-o`` suffix.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NoReturn

from polars_rankeval.cli._constants import (
    _COLUMN_ROLES,
    COMPARE_FORMATS,
    COMPARE_METRICS,
    COMPARE_SUFFIX_FORMATS,
    DEFAULT_METRICS,
    FORMATS,
    SUFFIX_FORMATS,
    SUMMARY_QUERY,
    Format,
    FormatT,
)
from polars_rankeval.cli._errors import CliError
from polars_rankeval.comparison import CORRECTIONS, SYSTEM_SEPARATOR, TESTS
from polars_rankeval.conventions import CONVENTIONS


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # argparse prints the usage and exits; raise instead so the one-line rule holds.
        msg = f"{message} (see {self.prog} --help)"
        raise CliError(msg)


def _add_metrics(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument(
        "-m",
        "--metrics",
        action="append",
        default=None,
        help=f"comma-separated metric strings (default: {default}); repeatable; trec_eval's "
        "measures, parameters and sets too: -m P.5,10 -m ndcg_cut.10 -m official, -m all_trec",
    )


def _add_by(parser: argparse.ArgumentParser, text: str) -> None:
    parser.add_argument("--by", action="append", default=[], help=text)


_DIRECTIONS = ("higher", "lower", "none")


def _direction(text: str) -> tuple[str, str]:
    """``arp@10=lower`` -> ``("arp@10", "lower")`` (split at the last ``=``)."""
    metric, sep, value = text.rpartition("=")
    if not sep or not metric.strip() or value.strip() not in _DIRECTIONS:
        msg = f"expected METRIC=higher, METRIC=lower or METRIC=none, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return metric.strip(), value.strip()


def add_direction(parser: argparse.ArgumentParser) -> None:
    """``--direction METRIC=higher|lower|none`` (repeatable): the ``direction=`` option."""
    parser.add_argument(
        "--direction",
        action="append",
        type=_direction,
        default=[],
        metavar="METRIC=DIR",
        help="override a metric's direction: higher, lower or none (repeatable, e.g. "
        "--direction arp@10=lower); better/worse, the marks and the verdicts follow it",
    )


def directions(
    given: Sequence[tuple[str, str]], metrics: Sequence[str] | None = None
) -> dict[str, str] | None:
    """The ``--direction`` values as compare's ``direction=``, each metric once.

    ``metrics``, when known, are the compared metrics: a ``--direction`` naming another is an
    error before anything is read.
    """
    found: dict[str, str] = {}
    for metric, value in given:
        if found.get(metric, value) != value:
            msg = f"--direction gives {metric!r} two directions ({found[metric]} and {value})"
            raise CliError(msg)
        found[metric] = value
    if metrics is not None:
        unknown = [metric for metric in found if metric not in metrics]
        if unknown:
            msg = (
                f"--direction names {', '.join(map(repr, unknown))}, which is not a compared "
                f"metric; metrics: {', '.join(metrics)}"
            )
            raise CliError(msg)
    return found or None


def _add_evaluation_options(parser: argparse.ArgumentParser) -> None:
    """The options that reach ``evaluate``: trec_eval's -l and -c, conventions, column names."""
    parser.add_argument(
        "-l", "--relevance-level", type=int, default=None, help="as trec_eval -l (default 1)"
    )
    parser.add_argument(
        "-c",
        "--complete",
        action="store_true",
        help="score judged queries with no retrieved row as 0 (trec_eval -c)",
    )
    parser.add_argument(
        "-M",
        "--max-docs",
        type=_positive_int,
        default=None,
        help="evaluate at most this many items per query, the first in trec_eval's order "
        "(score descending, then item id descending) (trec_eval -M)",
    )
    parser.add_argument(
        "-J",
        "--judged-only",
        action="store_true",
        help="drop retrieved items without a judgment (or with a negative label) before "
        "ranking (trec_eval -J)",
    )
    parser.add_argument(
        "-N",
        "--num-docs",
        type=_non_negative_int,
        default=None,
        help="number of documents in the collection, used by utility's 4th coefficient "
        "(trec_eval -N)",
    )
    parser.add_argument(
        "--ties",
        choices=["trec", "expected", "optimistic", "pessimistic"],
        default=None,
        help="tie handling (default trec): expected = the mean over all orders of tied "
        "scores; optimistic/pessimistic = the best/worst order",
    )
    parser.add_argument(
        "--convention",
        default="trec_eval",
        help=f"a tool's definitions: {', '.join(CONVENTIONS)} (default trec_eval)",
    )
    parser.add_argument(
        "--duplicates",
        choices=["error", "first", "last", "max_score"],
        default=None,
        help="a repeated (query, item) pair is an error (default) or keeps one row",
    )
    parser.add_argument(
        "--nan-scores",
        choices=["error", "last"],
        default=None,
        help="a NaN score is an error (default) or ranks last",
    )
    parser.add_argument(
        "--empty-queries",
        choices=["zero", "drop"],
        default=None,
        help="queries with judgments but nothing relevant score 0 (zero, default, as "
        "trec_eval) or are left out (drop), with their number on stderr",
    )
    parser.add_argument(
        "--train",
        help="past interactions (Parquet/CSV/NDJSON with the query and item columns) for "
        "popularity, novelty and serendipity metrics",
    )
    parser.add_argument(
        "--items",
        help="item table (the item column plus features, an embedding or a category) for "
        "diversity metrics",
    )
    parser.add_argument(
        "--catalog",
        help="the item universe for coverage and Gini: a table file with the item column, or "
        "the number of items",
    )
    parser.add_argument(
        "--groups",
        help="each item's groups for the fairness metrics (awrf, ndkl, ee_l ...): a table file "
        "with the item column and one column per dimension, or item, dimension, group, weight",
    )
    parser.add_argument(
        "--group-target",
        help="the fairness metrics' target shares: population (default), uniform, or a table "
        "file with group and share columns (and optionally dimension and the query column)",
    )
    for role in _COLUMN_ROLES:
        parser.add_argument(f"--{role}", help=f"name of the {role} column (default {role})")


def _add_pass_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--buckets",
        type=_buckets,
        default="auto",
        help="passes over hash buckets of the query ids: a positive int, or auto (default)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument(
        "--spill-dir",
        help="directory for the temporary bucket files of more than 3 passes (default: the "
        "system's temporary directory); they are removed at the end",
    )


def _suffix_help(suffixes: Mapping[str, str]) -> str:
    return ", ".join(f"{suffix} {fmt}" for suffix, fmt in suffixes.items())


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rank-eval",
        description=(
            "Evaluate ranking metrics (trec_eval-exact) over a long-format table with one row "
            "per (query, item): columns query, item, score, relevance. Errors exit with "
            "status 2 and one line on stderr."
        ),
        epilog=(
            "To compare systems with paired significance tests: rank-eval compare --help. "
            "A log file named 'compare' is evaluated as ./compare."
        ),
    )
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help=(
            "Parquet/CSV/TSV/NDJSON log, a directory or a glob of Parquet files (hive "
            "partitions become columns), or with --qrels one or more TREC run files"
        ),
    )
    parser.add_argument(
        "--qrels",
        help="TREC qrels file; each PATH is then a TREC run file (several runs: one table "
        "with a system column, one block per run in --format trec)",
    )
    parser.add_argument(
        "--system-name",
        choices=["stem", "tag"],
        default=None,
        help="with several TREC runs, name each by its file stem (default) or by its run tag "
        "(the 6th field of its lines)",
    )
    parser.add_argument(
        "--tie-warning",
        type=_tie_warning,
        default=0.01,
        metavar="LIMIT",
        help="warn when the order of tied scores can move a mean by more than LIMIT "
        "(default 0.01; 0: any movement; off: no check), as evaluate's tie_warning=",
    )
    parser.add_argument(
        "--tie-report",
        action="store_true",
        help="instead of the metrics, how much ties can move each one: the trec value, the "
        "expectation, the best and worst tie orders, their range, and the share of the top-k "
        "positions in tie groups (rke.tie_report)",
    )
    parser.add_argument(
        "--subtopics",
        action="store_true",
        help="the qrels are diversity qrels 'topic subtopic docno judgment' (TREC Web track, "
        "ndeval); the default metrics become ndeval's (see --format ndeval)",
    )
    _add_metrics(parser, DEFAULT_METRICS)
    _add_by(parser, "column(s) to group runs by: comma-separated, or repeat the option")
    parser.add_argument(
        "-q",
        "--per-query",
        action="store_true",
        help=f"one row per query, then the summary rows (query {SUMMARY_QUERY!r})",
    )
    _add_evaluation_options(parser)
    parser.add_argument(
        "-f",
        "--format",
        choices=FORMATS,
        default=None,
        help="output format (default: from the -o suffix, else table); ndeval: ndeval's CSV, "
        "byte for byte (with --subtopics)",
    )
    parser.add_argument(
        "-o",
        "--output",
        help="write to this file; the suffix picks the format when --format is not given "
        f"({_suffix_help(SUFFIX_FORMATS)})",
    )
    parser.add_argument("--csv", action="store_true", help="deprecated: use --format csv")
    _add_pass_options(parser)
    return parser


_COMPARE_DESCRIPTION = f"""\
Compare systems on ranking metrics, paired by query: evaluate per query (trec_eval-exact),
then for every system against --baseline (or every pair) the mean difference, its interval,
the effect size, a paired significance test and corrected p-values. The same numbers as
polars_rankeval.compare(). By default a compact table, one block per pair of systems: both
means, the difference [interval], p (adjusted), effect size d, wins/ties/losses and a verdict
(better / worse / n.s., by each metric's direction). markdown, latex and html print
polars_rankeval.report()'s paper table; csv, json and parquet every statistic.

Input, one of:
  LOG --by COLS               one table (Parquet/CSV/TSV/NDJSON file, a directory or a quoted
                              glob) holding every system; the systems are the values of the
                              --by columns (several columns: the values joined by
                              {SYSTEM_SEPARATOR!r}, e.g. 'bm25{SYSTEM_SEPARATOR}2024-06-01')
  RUN RUN ... --qrels QRELS   TREC run files judged by one qrels file; each run is a system,
                              named by its file stem (bm25.txt: bm25), or with
                              --system-name tag by the run tag of its lines (then one file
                              may hold several runs); --by is then 'system'

--within COLS compares the systems inside each segment of a log (each value of COLS, e.g.
--within activity); the correction runs over every segment's comparisons.

'compare' is read as this command only as the first argument: a log file named 'compare' is
evaluated with rank-eval ./compare. Errors exit with status 2 and one line on stderr."""

_COMPARE_EPILOG = """\
examples:
  rank-eval compare data/sample.parquet --by system --baseline bm25 -m ndcg@10,map
  rank-eval compare logs.parquet --by system --within activity --baseline bm25
  rank-eval compare bm25.txt splade.txt --qrels qrels.txt --baseline bm25 --test randomization
  rank-eval compare "logs/**/*.parquet" --by model --test bootstrap -f csv -o comparison.csv"""


def _compare_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rank-eval compare",
        description=_COMPARE_DESCRIPTION,
        epilog=_COMPARE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "inputs",
        nargs="+",
        metavar="PATH",
        help="a log holding every system, or with --qrels two or more TREC run files",
    )
    parser.add_argument(
        "--qrels", help="TREC qrels file; each PATH is then a TREC run file (one system)"
    )
    parser.add_argument(
        "--system-name",
        choices=["stem", "tag"],
        default=None,
        help="with --qrels, name each run by its file stem (default) or by its run tag "
        "(the 6th field of its lines)",
    )
    _add_metrics(parser, COMPARE_METRICS)
    _add_by(
        parser,
        "the column(s) whose values are the systems, required for a log: comma-separated, or "
        "repeat the option (with --qrels: system)",
    )
    parser.add_argument(
        "--within",
        action="append",
        default=[],
        metavar="COLS",
        help="compare the systems inside each segment, the values of these column(s) of the "
        "log (comma-separated, or repeat the option); the output starts with them",
    )
    parser.add_argument(
        "--baseline",
        help="compare every other system with this one (default: every pair of systems); with "
        f"several --by columns, their values joined by {SYSTEM_SEPARATOR!r}",
    )
    parser.add_argument(
        "--test",
        choices=TESTS,
        default="t",
        help="paired t-test (default), Wilcoxon signed-rank, sign, randomization (sign-flip), "
        "bootstrap, or randomized Tukey HSD over all systems",
    )
    parser.add_argument(
        "--correction",
        choices=[*CORRECTIONS, "none"],
        default="holm",
        help="multiple-comparison correction of the p-values (default holm; fdr_bh is "
        "Benjamini-Hochberg; not applied to tukey, which controls the family-wise error itself)",
    )
    parser.add_argument(
        "--correction-scope",
        choices=["all", "metric"],
        default="all",
        help="one family of every comparison (default all), or one family per metric",
    )
    parser.add_argument(
        "--alpha",
        type=_alpha,
        default=0.05,
        help="significance level; intervals are at 1 - alpha (default 0.05)",
    )
    parser.add_argument(
        "--resamples",
        type=_positive_int,
        default=10_000,
        help="resamples of the randomization, bootstrap and tukey tests (default 10000)",
    )
    parser.add_argument(
        "--seed",
        type=_non_negative_int,
        default=0,
        help="seed of the resampling tests (default 0: results are reproducible)",
    )
    parser.add_argument(
        "--missing",
        choices=["drop", "zero"],
        default="drop",
        help="a query one system has no value for: left out of that pair (default drop, "
        "counted in n_dropped) or scored 0 (zero)",
    )
    add_direction(parser)
    _add_evaluation_options(parser)
    parser.add_argument(
        "-f",
        "--format",
        choices=COMPARE_FORMATS,
        default=None,
        help="table: one block per pair of systems, a row per metric (means, delta "
        "[interval], p, effect size, W/T/L, verdict), 100 columns wide; markdown, latex, html: "
        "the systems x metrics table with significance marks; csv, json, parquet: one row per "
        "(metric, baseline, system) with every statistic (default: from the -o suffix, else "
        "table)",
    )
    parser.add_argument(
        "--digits",
        type=_digits,
        default=4,
        help="decimals shown by table, markdown, latex and html (default 4; the table's "
        "effect size has 2; csv, json and parquet keep full precision)",
    )
    parser.add_argument(
        "-o",
        "--output",
        help="write to this file; the suffix picks the format when --format is not given "
        f"({_suffix_help(COMPARE_SUFFIX_FORMATS)})",
    )
    _add_pass_options(parser)
    return parser


def _buckets(text: str) -> int | str:
    if text == "auto":
        return text
    if text.isdigit() and int(text) > 0:
        return int(text)
    msg = f"must be a positive integer or auto, got {text!r}"
    raise argparse.ArgumentTypeError(msg)


def _integer(text: str, low: int, high: int | None, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < low or (high is not None and value > high):
        msg = f"must be {what}, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _positive_int(text: str) -> int:
    return _integer(text, 1, None, "a positive integer")


def _non_negative_int(text: str) -> int:
    return _integer(text, 0, None, "a non-negative integer")


def _digits(text: str) -> int:
    return _integer(text, 0, 12, "an integer from 0 to 12")


def _alpha(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < 1:  # NaN fails too
        msg = f"must be a number between 0 and 1 (exclusive), got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value < math.inf:  # NaN fails too
        msg = f"must be a number >= 0, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _tie_warning(text: str) -> float | None:
    """``--tie-warning``: a limit >= 0 as evaluate's ``tie_warning=``, or ``off`` (its None).

    0 warns on any movement, as ``tie_warning=0`` does in Python; ``off`` (or ``none``) is the
    command line's spelling of ``tie_warning=None``, which a number cannot say.

    >>> _tie_warning("0"), _tie_warning("off"), _tie_warning("None")
    (0.0, None, None)
    """
    if text.strip().lower() in ("off", "none"):
        return None
    try:
        return _non_negative_float(text)
    except argparse.ArgumentTypeError:
        msg = f"must be a number >= 0 or 'off', got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None


def _split_by(values: Sequence[str]) -> list[str]:
    """``--by date,model`` and ``--by date --by model`` both give ``["date", "model"]``."""
    names = [name.strip() for value in values for name in value.split(",")]
    return [name for name in names if name]


def _format_from(
    chosen: FormatT | None,
    output: str | None,
    formats: Sequence[FormatT],
    suffixes: dict[str, FormatT],
    default: FormatT,
) -> FormatT:
    """``--format``, else the format the ``-o`` suffix names, else ``default``."""
    if chosen is None and output:
        suffix = Path(output).suffix.lower()
        if suffix not in suffixes:
            msg = (
                f"cannot tell the output format from {output!r} (suffix {suffix!r}); "
                f"pass --format ({', '.join(formats)}) or use a suffix among "
                f"{', '.join(suffixes)}"
            )
            raise CliError(msg)
        chosen = suffixes[suffix]
    chosen = chosen or default
    if chosen == "parquet" and not output:
        msg = "--format parquet writes a binary file: give it with -o/--output PATH"
        raise CliError(msg)
    return chosen


def _output_format(args: argparse.Namespace) -> Format:
    chosen: Format | None = args.format
    if args.csv:
        if chosen not in (None, "csv"):
            msg = f"--csv conflicts with --format {chosen}"
            raise CliError(msg)
        print("rank-eval: warning: --csv is deprecated; use --format csv", file=sys.stderr)
        chosen = "csv"
    return _format_from(chosen, args.output, FORMATS, SUFFIX_FORMATS, "table")
