"""``rank-eval``: evaluate a long-format log (Parquet/CSV) or a TREC run from the shell.

``rank-eval compare ...`` (the first argument is literally ``compare``) compares systems with
paired significance tests instead: :func:`polars_rankeval.compare` and
:func:`polars_rankeval.report.report` from the shell. A log file that is itself named
``compare`` is evaluated with ``rank-eval ./compare``.

Every mistake ends the same way: exit status 2 and one line on stderr, ``rank-eval: error: ...``,
naming the file or option at fault (never a traceback).

Examples
--------
``rank-eval data/sample.parquet --by system``
``rank-eval run.txt --qrels qrels.txt -m ndcg@10,map,p@5 --per-query --format trec``
``rank-eval compare data/sample.parquet --by system --baseline bm25 -m ndcg@10,map``
``rank-eval compare bm25.txt splade.txt --qrels qrels.txt --baseline bm25 --test randomization``
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import glob
import gzip
import importlib
import math
import os
import re
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, NoReturn, TypeVar

import polars as pl

from polars_rankeval._columns import make_columns
from polars_rankeval._spill import cleanup_on_sigterm
from polars_rankeval.compare import CORRECTIONS, SYSTEM_SEPARATOR, TESTS, compare_per_query
from polars_rankeval.conventions import CONVENTIONS
from polars_rankeval.errors import EmptyEvaluationWarning, QueryCoverageWarning, RankEvalError
from polars_rankeval.evaluate import evaluate, settings_for, summary
from polars_rankeval.io import (
    _whitespace_fields,
    join_run_qrels,
    leading_lines,
    read_trec_qrels,
    read_trec_run,
    trec_file_kind,
)
from polars_rankeval.metrics import Metric, utility
from polars_rankeval.registry import (
    TREC_QUERY_ONLY,
    TREC_SUMMARY_ONLY,
    parse_metrics,
    resolve_metrics,
    split_metric_list,
    trec_measure_names,
    trec_measure_of,
)
from polars_rankeval.report import Format as ReportFormat
from polars_rankeval.report import report
from polars_rankeval.validation import warn_if_empty

DEFAULT_METRICS = "ndcg@10,ndcg,map,mrr,p@10,recall@100,bpref,num_q"
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report Ctrl-C

Format = Literal["table", "csv", "json", "parquet", "trec"]
FORMATS: tuple[Format, ...] = ("table", "csv", "json", "parquet", "trec")
SUFFIX_FORMATS: dict[str, Format] = {
    ".csv": "csv",
    ".json": "json",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".txt": "trec",
    ".trec": "trec",
}
#: ``rank-eval compare``: the default metrics, the output formats and the -o suffixes.
COMPARE_METRICS = "ndcg@10,map,mrr,p@10,recall@100"
CompareFormat = Literal["markdown", "latex", "html", "table", "csv", "json", "parquet"]
COMPARE_FORMATS: tuple[CompareFormat, ...] = (
    "markdown",
    "latex",
    "html",
    "table",
    "csv",
    "json",
    "parquet",
)
COMPARE_SUFFIX_FORMATS: dict[str, CompareFormat] = {
    ".md": "markdown",
    ".tex": "latex",
    ".html": "html",
    ".csv": "csv",
    ".json": "json",
    ".parquet": "parquet",
    ".pq": "parquet",
}
#: The column naming the run of each row when TREC runs are compared.
SYSTEM = "system"
FormatT = TypeVar("FormatT", bound=str)
SUMMARY_QUERY = "all"  # trec_eval's query id for the summary over queries
_TREC_WIDTH = 22  # trec_eval prints "%-22s\t%s\t%.4f"
_DIGITS = 9  # relstring: labels above 9 have no digit of their own
_GLOB_CHARS = frozenset("*?[")
_COLUMN_ROLES = ("query", "item", "score", "relevance")


class CliError(Exception):
    """A mistake on the command line; the message is printed as one line."""


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
        "--ties", choices=["trec", "expected"], default=None, help="tie handling (default trec)"
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
        "path",
        help=(
            "Parquet/CSV/TSV/NDJSON log, a directory or a glob of Parquet files (hive "
            "partitions become columns), or a TREC run file when --qrels is given"
        ),
    )
    parser.add_argument("--qrels", help="TREC qrels file; PATH is then a TREC run file")
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
        help="output format (default: from the -o suffix, else table)",
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
polars_rankeval.compare(); markdown, latex and html print polars_rankeval.report()'s table.

Input, one of:
  LOG --by COLS               one table (Parquet/CSV/TSV/NDJSON file, a directory or a quoted
                              glob) holding every system; the systems are the values of the
                              --by columns (several columns: the values joined by
                              {SYSTEM_SEPARATOR!r}, e.g. 'bm25{SYSTEM_SEPARATOR}2024-06-01')
  RUN RUN ... --qrels QRELS   TREC run files judged by one qrels file; each run is a system,
                              named by its file stem (bm25.txt: bm25), or with
                              --system-name tag by the run tag of its lines (then one file
                              may hold several runs); --by is then 'system'

'compare' is read as this command only as the first argument: a log file named 'compare' is
evaluated with rank-eval ./compare. Errors exit with status 2 and one line on stderr."""

_COMPARE_EPILOG = """\
examples:
  rank-eval compare data/sample.parquet --by system --baseline bm25 -m ndcg@10,map
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
    _add_evaluation_options(parser)
    parser.add_argument(
        "-f",
        "--format",
        choices=COMPARE_FORMATS,
        default=None,
        help="markdown, latex, html: the systems x metrics table with significance marks; "
        "table, csv, json, parquet: one row per (metric, baseline, system) with every "
        "statistic (default: from the -o suffix, else markdown)",
    )
    parser.add_argument(
        "--digits",
        type=_digits,
        default=4,
        help="decimals shown by markdown, latex, html and table (default 4; csv, json and "
        "parquet keep full precision)",
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


# ---- reading the input ----------------------------------------------------------------------


def _is_glob(path: str) -> bool:
    return bool(_GLOB_CHARS & set(path))


def _check_exists(path: str, role: str) -> None:
    """A missing file, or a directory or glob with nothing to read, is named before Polars."""
    if _is_glob(path):
        if not glob.glob(path, recursive=True):
            msg = f"{role} {path!r} matches no file"
            raise CliError(msg)
        return
    target = Path(path)
    if not target.exists():
        msg = f"{role} {path!r}: no such file or directory"
        raise CliError(msg)
    if target.is_dir() and not any(entry.is_file() for entry in target.rglob("*")):
        msg = f"{role} directory {path!r} holds no files"
        raise CliError(msg)


def _input_files(path: str) -> list[Path]:
    """The files an input stands for: itself, a glob's matches, a directory's members."""
    matches = glob.glob(path, recursive=True) if _is_glob(path) else [path]
    files: list[Path] = []
    for match in matches:
        target = Path(match)
        if target.is_dir():
            files.extend(sorted(entry for entry in target.rglob("*") if entry.is_file()))
        elif target.is_file():
            files.append(target)
    return files


def _check_output(output: str | None, inputs: Sequence[str | None]) -> None:
    """Refuse ``-o`` naming an input (the run would replace the log it reads with its result).

    Real paths are compared, and file identities where the output exists, so a symlink, a
    hard link, ``./x`` or a glob match of the input is caught too.
    """
    if output is None:
        return
    target = Path(output)
    real = os.path.realpath(target)
    for given in inputs:
        if given is None:
            continue
        for file in _input_files(given):
            if os.path.realpath(file) == real or (
                target.is_file() and os.path.samefile(file, target)
            ):
                which = repr(given) if str(file) == given else f"{str(file)!r} (of input {given!r})"
                msg = (
                    f"-o {output!r} is the input {which}: it would be overwritten by the result; "
                    "write the result to another file"
                )
                raise CliError(msg)


def _bad_parquet(inputs: Sequence[str]) -> CliError | None:
    """The first file of the inputs whose Parquet footer cannot be read, as an error naming it.

    Polars' "File out of specification" names no file; only on that error are the files read
    again, footer only, one by one (the normal path pays nothing).
    """
    for given in inputs:
        for file in _input_files(given):
            if file.name.startswith((".", "_")):  # hidden or _SUCCESS: Polars skips them
                continue
            try:
                pl.read_parquet_schema(file)
            except (pl.exceptions.PolarsError, OSError) as error:
                reason = str(error).split("\n")[0].removeprefix("parquet: ")
                reason = reason.removeprefix("File out of specification: ")
                reason = re.sub(r",? got .* instead$", "", reason)  # raw bytes, unreadable
                where = "" if str(file) == given else f" (in input {given!r})"
                msg = (
                    f"{str(file)!r}{where} is not a readable Parquet file ({reason}): it is "
                    "truncated, corrupt or not Parquet; replace or remove it, or leave it out "
                    "of the input (a glob such as 'dir/**/*.parquet')"
                )
                return CliError(msg)
    return None


def _bad_utf8(paths: Sequence[str]) -> CliError | None:
    """The first line of the TREC files that is not UTF-8, as an error naming file and line."""
    for path in paths:
        opener = gzip.open if path.endswith(".gz") else open
        try:
            with opener(path, "rb") as file:
                for number, line in enumerate(file, start=1):
                    try:
                        line.decode("utf-8")
                    except UnicodeDecodeError as error:
                        msg = (
                            f"{path!r} line {number} is not UTF-8 text ({error.reason} at "
                            f"byte {error.start}): convert the file to UTF-8 "
                            "(e.g. iconv -f latin1 -t utf-8)"
                        )
                        return CliError(msg)
        except OSError:
            continue
    return None


@contextlib.contextmanager
def _input_errors_named(inputs: Sequence[str], trec_files: Sequence[str]) -> Iterator[None]:
    """Name the input file behind Polars errors that name none (corrupt Parquet, bad UTF-8)."""
    try:
        yield
    except pl.exceptions.PolarsError as error:
        text = str(error).lower()
        named: CliError | None = None
        if "parquet" in text and not trec_files:
            named = _bad_parquet(inputs)
        elif "utf-8" in text or "utf8" in text:
            named = _bad_utf8(trec_files)
        if named is None:
            raise
        raise named from error


def _check_text_file(path: str, role: str) -> None:
    if Path(path).is_dir():
        msg = f"{role} {path!r} is a directory, not a file"
        raise CliError(msg)
    if not leading_lines(path, 1):
        msg = f"{role} file {path!r} is empty"
        raise CliError(msg)


def _read_trec(run_path: str, qrels_path: str) -> pl.LazyFrame:
    """The run and the judgments joined, after checking they are the right way round."""
    _check_trec_files(run_path, qrels_path)
    return join_run_qrels(read_trec_run(run_path), read_trec_qrels(qrels_path))


def _check_trec_files(run_path: str, qrels_path: str) -> None:
    """Both files exist, hold lines, and are a run and a qrels file in that order."""
    _check_exists(run_path, "run")
    _check_exists(qrels_path, "qrels")
    _check_text_file(run_path, "run")
    _check_text_file(qrels_path, "qrels")
    run_kind, qrels_kind = trec_file_kind(run_path), trec_file_kind(qrels_path)
    swapped = "were the run and the qrels given the other way round? (rank-eval RUN --qrels QRELS)"
    if run_kind == "qrels":
        msg = (
            f"the run {run_path!r} has no scores (its lines have 4 fields, like a qrels file "
            f"'qid iter docno rel'): {swapped}"
        )
        raise CliError(msg)
    if qrels_kind == "run":
        msg = (
            f"the qrels {qrels_path!r} has lines like a run 'qid Q0 docno rank score tag', "
            f"not 'qid iter docno rel': {swapped}"
        )
        raise CliError(msg)
    if _is_parquet(run_path):
        msg = (
            f"the run {run_path!r} is a Parquet file; with --qrels, PATH must be a TREC run "
            "file 'qid Q0 docno rank score tag' (a Parquet log needs no --qrels)"
        )
        raise CliError(msg)


def _is_parquet(path: str) -> bool:
    with Path(path).open("rb") as file:
        return file.read(4) == b"PAR1"


def _check_log_file(path: str, suffix: str) -> None:
    """Refuse, with the reason, a single file that Polars would misread or fail on obscurely."""
    if suffix in {".csv", ".tsv", ".ndjson", ".jsonl"}:
        lines = leading_lines(path, 2)
        if not lines:
            msg = f"{path!r} is empty"
            raise CliError(msg)
        if len(lines) == 1 and suffix in {".csv", ".tsv"}:
            # Polars would type the columns of a header-only file as strings.
            msg = f"{path!r} is empty: it has a header line and no rows"
            raise CliError(msg)
        return
    if Path(path).stat().st_size == 0:
        msg = f"{path!r} is empty"
        raise CliError(msg)
    if _is_parquet(path):
        return
    kind = trec_file_kind(path)
    if kind == "run":
        msg = (
            f"{path!r} looks like a TREC run file (qid Q0 docno rank score tag): "
            "pass the judgments with --qrels QRELS"
        )
    elif kind == "qrels":
        msg = (
            f"{path!r} looks like a TREC qrels file (qid iter docno rel): evaluate a run "
            f"against it with rank-eval RUN --qrels {path}"
        )
    else:
        msg = (
            f"{path!r} is not a Parquet file; CSV, TSV and NDJSON logs are read by their suffix "
            "(.csv, .tsv, .ndjson, .jsonl), TREC runs with --qrels QRELS"
        )
    raise CliError(msg)


def _scan(path: str) -> pl.LazyFrame:
    _check_exists(path, "input")
    suffix = Path(path.rstrip("*")).suffix.lower()
    if Path(path).is_file():
        _check_log_file(path, suffix)
    if suffix in {".csv", ".tsv"}:
        return pl.scan_csv(path, separator="\t" if suffix == ".tsv" else ",")
    if suffix in {".ndjson", ".jsonl"}:
        return pl.scan_ndjson(path)
    # Parquet files, directories and globs. Polars reads hive partitions (model=bm25/) of a
    # directory by default but not of a glob; the docs (guides/cli.md) promise both.
    return pl.scan_parquet(path, hive_partitioning=True if _is_glob(path) else None)


def _read_trec_runs(paths: Sequence[str], qrels_path: str, naming: str) -> pl.LazyFrame:
    """Each TREC run joined with the judgments, with a ``system`` column naming its run.

    A run is named by its file stem, or with ``naming="tag"`` by the run tag of its lines (one
    file may then hold several runs). Each run is joined with the qrels on its own, so a judged
    item it did not retrieve is its row with a null score, as for one run.
    """
    for path in paths:
        _check_trec_files(path, qrels_path)
    runs: list[tuple[str, str, pl.LazyFrame]] = []  # (name, file, run)
    if naming == "tag":
        for path in paths:
            fields = ["query", "_iter", "item", "_rank", "score", "tag"]
            lines = _whitespace_fields(path, fields)
            run = lines.select("query", "item", pl.col("score").cast(pl.Float64), "tag")
            tags = run.select(pl.col("tag").unique(maintain_order=True)).collect()["tag"]
            if tags.null_count():
                msg = (
                    f"the run {path!r} has lines without a run tag (the 6th field of "
                    "'qid Q0 docno rank score tag'): name the runs by their files instead "
                    "(--system-name stem)"
                )
                raise CliError(msg)
            runs.extend((tag, path, run.filter(pl.col("tag") == tag).drop("tag")) for tag in tags)
    else:
        runs = [(Path(path).stem, path, read_trec_run(path)) for path in paths]
    files: dict[str, str] = {}
    for name, path, _ in runs:
        if name in files and naming == "tag":
            msg = (
                f"the run tag {name!r} is in both {files[name]!r} and {path!r}: give each run "
                "its own tag, or name the runs by their files (--system-name stem)"
            )
            raise CliError(msg)
        if name in files:
            msg = (
                f"two runs are named {name!r} (a run is named by its file stem): "
                f"{files[name]!r} and {path!r}; rename one, or name the runs by the run tag "
                "of their lines (--system-name tag)"
            )
            raise CliError(msg)
        files[name] = path
    qrels = read_trec_qrels(qrels_path)
    joined = [
        join_run_qrels(run, qrels).with_columns(pl.lit(name).alias(SYSTEM)) for name, _, run in runs
    ]
    return pl.concat(joined, how="vertical").select(SYSTEM, *_COLUMN_ROLES)


# ---- evaluating -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    """What the command computed: per-query rows (if asked for) and the summary rows.

    ``printed`` is the order of the ``trec`` lines: the metric labels, and with trec_eval's
    measure names also ``runid`` and ``relstring``, which are not metrics (``runid`` names the
    run, ``relstrings`` holds each query's string, keyed by its ``by`` values and query).
    """

    per_query: pl.DataFrame | None
    summary: pl.DataFrame
    metrics: list[tuple[str, Metric]]
    by: list[str]
    query: str
    printed: list[str] = field(default_factory=list)
    runid: str = ""
    relstrings: dict[tuple[object, ...], str] = field(default_factory=dict)


def _with_num_docs(spec: str, num_docs: int | None) -> str | Metric:
    """trec_eval's ``-N``: the collection size reaches utility, its only user (4th coefficient)."""
    if num_docs is None or trec_measure_of(spec) != "utility":
        return spec
    parameters = spec.partition("_")[2]
    coefficients = [float(value) for value in parameters.split(",")] if parameters else []
    options = dict(zip("abcd", coefficients, strict=False))
    return replace(utility(**options, num_docs=num_docs), name=spec)


def _metric_plan(args: argparse.Namespace) -> tuple[list[str | Metric], list[str]]:
    """The metrics to evaluate, and the names in the order the trec lines print them.

    Every ``-m`` a trec_eval measure, measure with parameters or set (``-m P.5,10``,
    ``-m all_trec``): trec_eval's names in trec_eval's order, as it prints them whatever the
    order of its ``-m`` options. Otherwise each ``-m`` is a list of our metric strings (where
    one is a trec_eval form, its names), in the order given.
    """
    values: list[str] = args.metrics or [args.default_metrics]
    printed = trec_measure_names(values)
    if printed is None:
        specs = []
        for value in values:
            named = trec_measure_names([value])
            specs.extend(named if named is not None else split_metric_list(value))
    else:
        specs = printed
    printed = specs  # a sweep (ndcg@5,10) is widened to its labels in _printed_labels
    # runid and relstring are text, not metrics: the trec output prints them itself.
    kept = [name for name in specs if trec_measure_of(name) not in ("runid", "relstring")]
    return [_with_num_docs(name, args.num_docs) for name in kept], printed


def _printed_labels(printed: list[str], resolved: list[tuple[str, Metric]]) -> list[str]:
    """The trec lines' order: each name, a sweep (``ndcg@5,10``) widened to its labels."""
    labels = iter(label for label, _ in resolved)
    order: list[str] = []
    for name in printed:
        if trec_measure_of(name) in ("runid", "relstring"):
            order.append(name)
        else:  # resolved holds each name's labels in the same order
            order.extend(next(labels) for _ in range(len(parse_metrics(name))))
    return order


def _evaluate(args: argparse.Namespace, data: pl.LazyFrame, by: list[str]) -> Result:
    specs, printed = _metric_plan(args)
    data = _limit_items(args, data, by)
    per_query, names = _per_query(args, data, by, specs)
    # The same preset evaluate used, so each column gets its metric's summary rule.
    preset, _ = settings_for(args.convention, {"ties": args.ties})
    resolved = resolve_metrics(specs, preset)
    means = summary(per_query.lazy(), resolved, by).collect()
    printed = _printed_labels(printed, resolved)
    relstring = next((name for name in printed if trec_measure_of(name) == "relstring"), None)
    keys = [*by, names["query"]]
    return Result(
        per_query if args.per_query else None,
        means,
        resolved,
        by,
        names["query"],
        printed,
        _runid(args, per_query, names["query"]) if "runid" in printed else "",
        _relstrings(data, relstring, names, keys) if relstring and args.per_query else {},
    )


def _limit_items(args: argparse.Namespace, data: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
    """trec_eval's ``-M k`` and ``-J``: what each query's ranking holds before evaluation.

    ``-M``: the first k retrieved items in trec_eval's order (score descending, ties by item
    id descending); a judged item past the cut stays as judged but not retrieved, so it still
    counts toward R, as in trec_eval. ``-J`` (after ``-M``, as trec_eval): retrieved items
    without a judgment or with a negative label (pooled but unjudged) are dropped, and the
    rest keep their order, so they are ranked again without gaps.
    """
    if args.max_docs is None and not args.judged_only:
        return data
    query, item, score, relevance = (getattr(args, role) or role for role in _COLUMN_ROLES)
    keys = [*by, query]
    retrieved = pl.col(score).is_not_null()
    if args.max_docs is not None:
        cut = "__rke_cut"
        data = (
            data.sort(
                [*keys, score, item],
                descending=[*(False for _ in keys), True, True],
                nulls_last=True,
            )
            .with_columns(
                (retrieved & (pl.int_range(pl.len()).over(keys) >= args.max_docs)).alias(cut)
            )
            .filter(~pl.col(cut) | pl.col(relevance).is_not_null())
            .with_columns(pl.when(pl.col(cut)).then(None).otherwise(pl.col(score)).alias(score))
            .drop(cut)
        )
    if args.judged_only:
        judged = pl.col(relevance).is_not_null() & (pl.col(relevance) >= 0)
        data = data.filter(~retrieved | judged)
    return data


def _runid(args: argparse.Namespace, per_query: pl.DataFrame, query: str) -> str:
    """trec_eval's runid: the run tag of the last evaluated query (the 6th field of a line)."""
    if not args.qrels:
        return Path(args.path).stem
    fields = ["query", "_iter", "_item", "_rank", "_score", "tag"]
    tags = _whitespace_fields(args.path, fields).select("query", "tag").collect()
    by_query = dict(zip(tags["query"], tags["tag"], strict=True))
    evaluated = [str(name) for name in per_query[query] if str(name) in by_query]
    # With -c the last query may have no run lines; trec_eval then names the run's first.
    tag = by_query[evaluated[-1]] if evaluated else tags["tag"][0]
    return str(tag or "")


def _relstrings(
    data: pl.LazyFrame, name: str, names: dict[str, Any], keys: list[str]
) -> dict[tuple[object, ...], str]:
    """trec_eval's relstring per query: one character per retrieved item, in rank order.

    The label's digit (``>`` above 9), ``-`` for an item not in the qrels, ``.`` for a pooled
    but unjudged one (negative label); the first ``relstring_N`` items (10 by default).
    """
    length = int(name.rpartition("_")[2]) if name != "relstring" else 10
    score, item, relevance = names["score"], names["item"], names["relevance"]
    label = pl.col(relevance)
    char = (
        pl.when(label.is_null())
        .then(pl.lit("-"))
        .when(label < 0)
        .then(pl.lit("."))
        .when(label > _DIGITS)
        .then(pl.lit(">"))
        .otherwise(label.cast(pl.Int64).cast(pl.String))
    )
    strings = (
        data.filter(pl.col(score).is_not_null())
        .sort([*keys, score, item], descending=[*(False for _ in keys), True, True])
        .group_by(keys, maintain_order=True)
        .agg(char.head(length).str.join("").alias("__rke_relstring"))
        .collect()
    )
    return {row[:-1]: row[-1] for row in strings.iter_rows()}


def _per_query(
    args: argparse.Namespace, data: pl.LazyFrame, by: list[str], metrics: list[str | Metric]
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """``evaluate(per_query=True)`` with the options of the command, and the column names.

    Nothing evaluated is an error saying why (the reason of the ``EmptyEvaluationWarning``).
    """
    names: dict[str, Any] = {role: getattr(args, role) or role for role in _COLUMN_ROLES}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", EmptyEvaluationWarning)
        # Per query once; the summary is computed from it (no second pass over the log).
        per_query = evaluate(
            data,
            metrics,
            per_query=True,
            by=by or None,
            relevance_level=args.relevance_level,
            ties=args.ties,
            convention=args.convention,
            missing_queries="zero" if args.complete else None,
            duplicates=args.duplicates,
            nan_scores=args.nan_scores,
            n_buckets=args.buckets,
            progress=False if args.no_progress else None,
            spill_dir=args.spill_dir,
            **names,
        ).collect()
    reasons = []
    for warning in caught:
        if issubclass(warning.category, EmptyEvaluationWarning):
            reasons.append(str(warning.message))
        else:
            warnings.warn_explicit(
                warning.message, warning.category, warning.filename, warning.lineno
            )
    if per_query.is_empty():
        if not reasons:
            # One unbounded pass (--buckets 1) returns the empty result without the warning;
            # the library's own check still says why.
            columns = make_columns(**names, by=by or None)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", EmptyEvaluationWarning)
                warn_if_empty(per_query, data, columns)
            reasons = [str(warning.message) for warning in caught]
        _nothing_evaluated(args, reasons)
    return per_query, names


def _nothing_evaluated(args: argparse.Namespace, reasons: list[str]) -> NoReturn:
    # The warning reads "no query was evaluated (why); the result is empty ...": keep the why.
    reason = reasons[0].split("; the result is empty")[0] if reasons else "no query was evaluated"
    if "the input has no rows" in reason:
        msg = f"{args.path!r} is empty: it has no rows"
    elif args.qrels and "'score' column is entirely null" in reason:
        msg = (
            f"{reason}: the run has no scores; were the run and the qrels given the other way "
            "round?"
        )
    elif args.qrels:
        msg = f"{reason}: do the run and the qrels use the same query ids?"
    else:
        msg = reason
    raise CliError(msg)


# ---- writing the output ---------------------------------------------------------------------


def _table(result: Result) -> pl.DataFrame:
    """Summary rows only, or the per-query rows followed by the summary rows (query "all")."""
    if result.per_query is None:
        return result.summary
    per_query = result.per_query
    summary = result.summary.with_columns(pl.lit(SUMMARY_QUERY).alias(result.query))
    # The relaxed concat makes the query column a string, so it can hold "all" whatever the
    # dtype of the ids (int, categorical, enum...), and lets a mean (float) sit under an int.
    return pl.concat([per_query, summary.select(per_query.columns)], how="vertical_relaxed")


def _trec_value(value: object, dtype: pl.DataType) -> str | None:
    if value is None:
        return None  # trec_eval prints no line for a measure it cannot compute
    if dtype.is_integer():
        return f"{value:d}"
    return f"{value:.4f}"


def _trec_lines(frame: pl.DataFrame, result: Result, *, means: bool) -> list[str]:
    """trec_eval's lines ``measure<TAB>query<TAB>value`` for the rows of one run."""
    metrics = dict(result.metrics)
    lines = []
    for row in frame.iter_rows(named=True):
        query = SUMMARY_QUERY if means else row[result.query]
        for label in result.printed:
            measure = trec_measure_of(label)
            if measure == "runid":
                if means and not result.by:  # with --by, _trec names the run
                    lines.append(f"{'runid':<{_TREC_WIDTH}}\t{query}\t{result.runid}")
                continue
            if measure in TREC_QUERY_ONLY:  # relstring: text, per query only
                if not means:
                    key = (*(row[name] for name in result.by), row[result.query])
                    lines.append(
                        f"{label:<{_TREC_WIDTH}}\t{query}\t'{result.relstrings.get(key, '')}'"
                    )
                continue
            if not means and {measure, metrics[label].name} & TREC_SUMMARY_ONLY:
                continue  # trec_eval -q prints num_q, gm_map, gm_bpref only in the summary
            value = _trec_value(row[label], frame.schema[label])
            if value is not None:
                lines.append(f"{label:<{_TREC_WIDTH}}\t{query}\t{value}")
    return lines


# Whitespace splits trec_eval's fields and a line break starts a new line: a name holding one
# would forge lines of the output (a system named "bm25\nmap  all  0.99").
_TREC_UNSAFE = r"[\s\p{Cc}]"


def _check_trec_fields(result: Result) -> None:
    """Refuse a --by value, query id or run name that would break the trec layout."""
    checks: list[tuple[str, pl.Series]] = [
        (f"--by value (column {name!r})", result.summary[name]) for name in result.by
    ]
    if result.per_query is not None:
        checks.append(("query id", result.per_query[result.query]))
    checks.append(("run name", pl.Series([result.runid])))
    for what, values in checks:
        text = values.cast(pl.String)
        bad = text.filter(text.str.contains(_TREC_UNSAFE))
        if len(bad):
            msg = (
                f"--format trec: the {what} {bad[0]!r} holds whitespace or a control character, "
                "which would break the 'measure<TAB>query<TAB>value' lines; rename it, or use "
                "--format csv or json"
            )
            raise CliError(msg)


def _trec(result: Result) -> str:
    """trec_eval's layout; with ``--by``, one block per run, its summary led by a runid line."""
    _check_trec_fields(result)
    by = result.by
    blocks: list[tuple[tuple[object, ...], pl.DataFrame, pl.DataFrame | None]]
    if not by:
        blocks = [((), result.summary, result.per_query)]
    else:
        per_query = (
            result.per_query.partition_by(by, as_dict=True) if result.per_query is not None else {}
        )
        blocks = [
            (key, means, per_query.get(key))
            for key, means in result.summary.partition_by(
                by, maintain_order=True, as_dict=True
            ).items()
        ]
    lines: list[str] = []
    for key, means, queries in blocks:
        # key holds the by values of this block (empty without --by)
        if queries is not None:
            lines.extend(_trec_lines(queries, result, means=False))
        if by:
            runid = "/".join(f"{name}={value}" for name, value in zip(by, key, strict=True))
            lines.append(f"{'runid':<{_TREC_WIDTH}}\t{SUMMARY_QUERY}\t{runid}")
        lines.extend(_trec_lines(means, result, means=True))
    return "".join(f"{line}\n" for line in lines)


def _render(result: Result, fmt: Format) -> str | pl.DataFrame:
    if fmt == "trec":
        return _trec(result)
    table = _table(result)
    if fmt == "csv":
        return table.write_csv()
    if fmt == "json":
        return table.write_json() + "\n"
    if fmt == "parquet":
        return table
    return _text_table(table)


def _text_table(table: pl.DataFrame, *, digits: int = 4, width: int = 200) -> str:
    """Polars' table: every row and column, ``digits`` decimals, no shape or dtype lines."""
    with pl.Config(
        tbl_rows=-1,
        tbl_cols=-1,
        float_precision=digits,
        tbl_hide_dataframe_shape=True,
        tbl_hide_column_data_types=True,
        tbl_width_chars=width,
    ):
        return f"{table}\n"


def _write(rendered: str | pl.DataFrame, output: str | None) -> None:
    if output is None:
        # _output_format refused parquet without -o, so this is text.
        sys.stdout.write(str(rendered))
    elif isinstance(rendered, pl.DataFrame):
        rendered.write_parquet(output)
    else:
        Path(output).write_text(rendered, encoding="utf-8")


# ---- rank-eval compare ----------------------------------------------------------------------

_REPORT_FORMATS: dict[str, ReportFormat] = {
    "markdown": "markdown",
    "latex": "latex",
    "html": "html",
}
_TABLE_WIDTH_COMPARE = 1000  # one line per comparison: its column names are not wrapped


def _need_scipy() -> None:
    """Refuse before reading anything: the tests' distributions come from scipy."""
    try:
        importlib.import_module("scipy.stats")
    except ImportError:
        msg = (
            "rank-eval compare needs scipy for the distributions of its tests: "
            'pip install "polars-rankeval[stats]"'
        )
        raise CliError(msg) from None


def _system_expr(by: list[str]) -> pl.Expr:
    """A system's name as compare gives it: its --by values as text, joined by " / "."""
    if len(by) == 1:
        return pl.col(by[0]).cast(pl.String)
    return pl.concat_str([pl.col(name).cast(pl.String) for name in by], separator=SYSTEM_SEPARATOR)


def _input_systems(data: pl.LazyFrame, by: list[str]) -> list[str] | None:
    """The systems of the input, sorted; None when a --by column is missing (evaluate says so).

    Read before evaluating, so a misspelled --baseline is refused at once, not after the
    evaluation of a large log (only the --by columns are read).
    """
    schema = data.collect_schema()
    if any(name not in schema for name in by):
        return None
    systems = data.select(_system_expr(by).alias("system")).unique().collect()["system"]
    return sorted(systems.drop_nulls().to_list())


def _check_systems(args: argparse.Namespace, systems: list[str], by: list[str]) -> None:
    if len(systems) < 2:
        found = f"one, {systems[0]!r}" if systems else "none"
        if args.qrels:
            hint = "give two or more run files"
            if args.system_name != "tag":
                hint += " (or a file whose lines carry several run tags, with --system-name tag)"
            msg = f"compare needs at least two systems; the runs hold {found}: {hint}"
        else:
            msg = (
                f"compare needs at least two systems; --by {','.join(by)} has {found} in "
                f"{args.inputs[0]!r}"
            )
        raise CliError(msg)
    if args.baseline is None or args.baseline in systems:
        return
    close = difflib.get_close_matches(args.baseline, systems, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    shown = ", ".join(repr(name) for name in systems[:10])
    more = f" and {len(systems) - 10} more" if len(systems) > 10 else ""
    joined = (
        f" (a system of several --by columns is their values joined by {SYSTEM_SEPARATOR!r})"
        if len(by) > 1
        else ""
    )
    msg = (
        f"--baseline {args.baseline!r} is not a system; the systems are {shown}{more}{joined}{hint}"
    )
    raise CliError(msg)


def _compare_input(args: argparse.Namespace) -> tuple[pl.LazyFrame, list[str]]:
    """The long table to evaluate and the columns naming its systems."""
    by = _split_by(args.by)
    if args.qrels:
        given = [f"--{role}" for role in _COLUMN_ROLES if getattr(args, role)]
        if given:
            msg = f"{', '.join(given)} name columns of a table; TREC files have fixed columns"
            raise CliError(msg)
        if by and by != [SYSTEM]:
            msg = (
                f"--by {','.join(by)}: with --qrels the systems are the runs, in the column "
                f"{SYSTEM!r} (leave --by out)"
            )
            raise CliError(msg)
        return _read_trec_runs(args.inputs, args.qrels, args.system_name or "stem"), [SYSTEM]
    if args.system_name is not None:
        msg = "--system-name names TREC runs: it needs --qrels QRELS"
        raise CliError(msg)
    if len(args.inputs) > 1:
        msg = (
            f"{len(args.inputs)} inputs given: several inputs are TREC run files and need "
            "--qrels QRELS; a log holding every system is one PATH (a file, a directory, or "
            "a glob in quotes so the shell does not expand it)"
        )
        raise CliError(msg)
    data = _scan(args.inputs[0])
    if not by:
        msg = (
            "compare needs --by COLS, the column(s) whose values are the systems (e.g. --by system)"
        )
        raise CliError(msg)
    return data, by


def _render_compare(
    comparison: pl.DataFrame, fmt: CompareFormat, digits: int
) -> str | pl.DataFrame:
    if fmt in _REPORT_FORMATS:
        text = str(report(comparison, _REPORT_FORMATS[fmt], digits=digits))
        return text if text.endswith("\n") else f"{text}\n"
    if fmt == "csv":
        return comparison.write_csv()
    if fmt == "json":
        return comparison.write_json() + "\n"
    if fmt == "parquet":
        return comparison
    return _text_table(comparison, digits=digits, width=_TABLE_WIDTH_COMPARE)


def _run_compare(argv: Sequence[str]) -> None:
    # Intermixed: RUN1 --qrels QRELS RUN2 reads like RUN1 RUN2 --qrels QRELS.
    args = _compare_parser().parse_intermixed_args(argv)
    args.default_metrics = COMPARE_METRICS
    fmt = _format_from(
        args.format, args.output, COMPARE_FORMATS, COMPARE_SUFFIX_FORMATS, "markdown"
    )
    _need_scipy()
    _check_output(args.output, [*args.inputs, args.qrels])
    with _input_errors_named(args.inputs, [*args.inputs, args.qrels] if args.qrels else []):
        rendered = _compare(args, fmt)
    _write(rendered, args.output)


def _compare(args: argparse.Namespace, fmt: CompareFormat) -> str | pl.DataFrame:
    data, by = _compare_input(args)
    args.path = ", ".join(args.inputs)  # named when nothing is evaluated
    systems = _input_systems(data, by)
    if systems is not None:
        _check_systems(args, systems, by)
    specs, _ = _metric_plan(args)
    per_query, names = _per_query(args, _limit_items(args, data, by), by, specs)
    # What compare() does after evaluate(): every column besides the keys is a metric.
    labels = [name for name in per_query.columns if name not in (*by, names["query"])]
    comparison = compare_per_query(
        per_query,
        by=by,
        query=names["query"],
        metrics=labels,
        baseline=args.baseline,
        test=args.test,
        correction=None if args.correction == "none" else args.correction,
        correction_scope=args.correction_scope,
        alpha=args.alpha,
        n_resamples=args.resamples,
        seed=args.seed,
        missing=args.missing,
    )
    return _render_compare(comparison, fmt, args.digits)


# ---- entry point ----------------------------------------------------------------------------


def _run(argv: Sequence[str] | None) -> None:
    args = _parser().parse_args(argv)
    fmt = _output_format(args)
    by = _split_by(args.by)
    _check_output(args.output, [args.path, args.qrels])
    with _input_errors_named([args.path], [args.path, args.qrels] if args.qrels else []):
        if args.qrels:
            given = [f"--{role}" for role in _COLUMN_ROLES if getattr(args, role)]
            if given:
                msg = f"{', '.join(given)} name columns of a table; TREC files have fixed columns"
                raise CliError(msg)
            data = _read_trec(args.path, args.qrels)
        else:
            data = _scan(args.path)
        # trec_eval's default measures are its official set: its layout from TREC files gets
        # them.
        args.default_metrics = "official" if fmt == "trec" and args.qrels else DEFAULT_METRICS
        result = _evaluate(args, data, by)
    _write(_render(result, fmt), args.output)


def _one_line(message: str) -> str:
    """The first paragraph of a message, on one line (Polars appends plans and hints)."""
    paragraph = message.strip().split("\n\n")[0]
    return " ".join(paragraph.split())


@contextlib.contextmanager
def _warnings_as_lines() -> Iterator[None]:
    """Warnings of polars_rankeval as one stderr line each, ``rank-eval: warning: ...``.

    Python's own format adds the file, line and source of the ``warn`` call, which mean
    nothing to a shell user. Other packages' warnings keep that format.
    """
    with warnings.catch_warnings():
        # shown once and the run goes on, even where warnings are errors (python -W error)
        warnings.simplefilter("default", QueryCoverageWarning)
        shown = warnings.showwarning

        # warnings.showwarning's signature: six positional parameters
        def show(  # noqa: PLR0917
            message: Warning | str,
            category: type[Warning],
            filename: str,
            lineno: int,
            file: Any = None,
            line: str | None = None,
        ) -> None:
            if category.__module__.startswith("polars_rankeval"):
                print(f"rank-eval: warning: {_one_line(str(message))}", file=sys.stderr)
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        yield


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit status (0, or 2 on any mistake).

    ``compare`` as the first argument runs ``rank-eval compare``; anything else evaluates.
    Ctrl-C prints ``rank-eval: interrupted`` and returns 130; SIGTERM removes any spill and
    ends the process by SIGTERM (exit status 143).
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        with cleanup_on_sigterm(), _warnings_as_lines():
            if arguments[:1] == ["compare"]:
                _run_compare(arguments[1:])
            else:
                _run(arguments)
    except SystemExit as done:  # --help
        return done.code if isinstance(done.code, int) else 0
    except KeyboardInterrupt:
        print("rank-eval: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (CliError, RankEvalError, pl.exceptions.PolarsError) as error:
        message = str(error)
    except OSError as error:
        message = f"{error.filename}: {error.strerror}" if error.filename else str(error)
    except MemoryError as error:
        detail = f" ({error})" if str(error) else ""
        message = (
            f"out of memory{detail}: for a large log, bound the memory with --buckets N; "
            "compare many systems with a test other than tukey"
        )
    else:
        return 0
    print(f"rank-eval: error: {_one_line(message)}", file=sys.stderr)
    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
