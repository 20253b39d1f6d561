"""``rank-eval``: evaluate a long-format log (Parquet/CSV) or a TREC run from the shell.

Every mistake ends the same way: exit status 2 and one line on stderr, ``rank-eval: error: ...``,
naming the file or option at fault (never a traceback).

Examples
--------
``rank-eval data/sample.parquet --by system``
``rank-eval run.txt --qrels qrels.txt -m ndcg@10,map,p@5 --per-query --format trec``
"""

from __future__ import annotations

import argparse
import glob
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NoReturn

import polars as pl

from polars_rankeval._columns import make_columns
from polars_rankeval.conventions import CONVENTIONS
from polars_rankeval.errors import EmptyEvaluationWarning, RankEvalError
from polars_rankeval.evaluate import evaluate, settings_for, summary
from polars_rankeval.io import (
    join_run_qrels,
    leading_lines,
    read_trec_qrels,
    read_trec_run,
    trec_file_kind,
)
from polars_rankeval.metrics import Metric
from polars_rankeval.registry import resolve_metrics, split_metric_list
from polars_rankeval.validation import warn_if_empty

DEFAULT_METRICS = "ndcg@10,ndcg,map,mrr,p@10,recall@100,bpref,num_q"
EXIT_ERROR = 2

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
SUMMARY_QUERY = "all"  # trec_eval's query id for the summary over queries
_TREC_WIDTH = 22  # trec_eval prints "%-22s\t%s\t%.4f"
_GLOB_CHARS = frozenset("*?[")
_COLUMN_ROLES = ("query", "item", "score", "relevance")


class CliError(Exception):
    """A mistake on the command line; the message is printed as one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # argparse prints the usage and exits; raise instead so the one-line rule holds.
        msg = f"{message} (see rank-eval --help)"
        raise CliError(msg)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rank-eval",
        description=(
            "Evaluate ranking metrics (trec_eval-exact) over a long-format table with one row "
            "per (query, item): columns query, item, score, relevance. Errors exit with "
            "status 2 and one line on stderr."
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
    parser.add_argument(
        "-m",
        "--metrics",
        default=DEFAULT_METRICS,
        help=f"comma-separated metric strings (default: {DEFAULT_METRICS})",
    )
    parser.add_argument(
        "--by",
        action="append",
        default=[],
        help="column(s) to group runs by: comma-separated, or repeat the option",
    )
    parser.add_argument(
        "-q",
        "--per-query",
        action="store_true",
        help=f"one row per query, then the summary rows (query {SUMMARY_QUERY!r})",
    )
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
        f"({', '.join(f'{s} {f}' for s, f in SUFFIX_FORMATS.items())})",
    )
    parser.add_argument("--csv", action="store_true", help="deprecated: use --format csv")
    parser.add_argument(
        "--buckets",
        type=_buckets,
        default="auto",
        help="passes over hash buckets of the query ids: a positive int, or auto (default)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return parser


def _buckets(text: str) -> int | str:
    if text == "auto":
        return text
    if text.isdigit() and int(text) > 0:
        return int(text)
    msg = f"must be a positive integer or auto, got {text!r}"
    raise argparse.ArgumentTypeError(msg)


def _split_by(values: Sequence[str]) -> list[str]:
    """``--by date,model`` and ``--by date --by model`` both give ``["date", "model"]``."""
    names = [name.strip() for value in values for name in value.split(",")]
    return [name for name in names if name]


def _output_format(args: argparse.Namespace) -> Format:
    chosen: Format | None = args.format
    if args.csv:
        if chosen not in (None, "csv"):
            msg = f"--csv conflicts with --format {chosen}"
            raise CliError(msg)
        print("rank-eval: warning: --csv is deprecated; use --format csv", file=sys.stderr)
        chosen = "csv"
    if chosen is None and args.output:
        suffix = Path(args.output).suffix.lower()
        if suffix not in SUFFIX_FORMATS:
            msg = (
                f"cannot tell the output format from {args.output!r} (suffix {suffix!r}); "
                f"pass --format ({', '.join(FORMATS)}) or use a suffix among "
                f"{', '.join(SUFFIX_FORMATS)}"
            )
            raise CliError(msg)
        chosen = SUFFIX_FORMATS[suffix]
    chosen = chosen or "table"
    if chosen == "parquet" and not args.output:
        msg = "--format parquet writes a binary file: give it with -o/--output PATH"
        raise CliError(msg)
    return chosen


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


def _check_text_file(path: str, role: str) -> None:
    if Path(path).is_dir():
        msg = f"{role} {path!r} is a directory, not a file"
        raise CliError(msg)
    if not leading_lines(path, 1):
        msg = f"{role} file {path!r} is empty"
        raise CliError(msg)


def _read_trec(run_path: str, qrels_path: str) -> pl.LazyFrame:
    """The run and the judgments joined, after checking they are the right way round."""
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
    return join_run_qrels(read_trec_run(run_path), read_trec_qrels(qrels_path))


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
    # directory by default but not of a glob; the README promises both.
    return pl.scan_parquet(path, hive_partitioning=True if _is_glob(path) else None)


# ---- evaluating -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    """What the command computed: per-query rows (if asked for) and the summary rows."""

    per_query: pl.DataFrame | None
    summary: pl.DataFrame
    metrics: list[tuple[str, Metric]]
    by: list[str]
    query: str


def _evaluate(args: argparse.Namespace, data: pl.LazyFrame, by: list[str]) -> Result:
    metrics = split_metric_list(args.metrics)
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
    # The same preset evaluate used, so each column gets its metric's summary rule.
    preset, _ = settings_for(args.convention, {"ties": args.ties})
    resolved = resolve_metrics(metrics, preset)
    means = summary(per_query.lazy(), resolved, by).collect()
    return Result(per_query if args.per_query else None, means, resolved, by, names["query"])


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
    lines = []
    for row in frame.iter_rows(named=True):
        query = SUMMARY_QUERY if means else row[result.query]
        for label, metric in result.metrics:
            if not means and metric.name == "num_q":
                continue  # trec_eval -q prints num_q only in the summary
            value = _trec_value(row[label], frame.schema[label])
            if value is not None:
                lines.append(f"{label:<{_TREC_WIDTH}}\t{query}\t{value}")
    return lines


def _trec(result: Result) -> str:
    """trec_eval's layout; with ``--by``, one block per run, its summary led by a runid line."""
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
    with pl.Config(
        tbl_rows=-1,
        tbl_cols=-1,
        float_precision=4,
        tbl_hide_dataframe_shape=True,
        tbl_hide_column_data_types=True,
        tbl_width_chars=200,
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


# ---- entry point ----------------------------------------------------------------------------


def _run(argv: Sequence[str] | None) -> None:
    args = _parser().parse_args(argv)
    fmt = _output_format(args)
    by = _split_by(args.by)
    if args.qrels:
        given = [f"--{role}" for role in _COLUMN_ROLES if getattr(args, role)]
        if given:
            msg = f"{', '.join(given)} name columns of a table; TREC files have fixed columns"
            raise CliError(msg)
        data = _read_trec(args.path, args.qrels)
    else:
        data = _scan(args.path)
    _write(_render(_evaluate(args, data, by), fmt), args.output)


def _one_line(message: str) -> str:
    """The first paragraph of a message, on one line (Polars appends plans and hints)."""
    paragraph = message.strip().split("\n\n")[0]
    return " ".join(paragraph.split())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit status (0, or 2 on any mistake)."""
    try:
        _run(argv)
    except SystemExit as done:  # --help
        return done.code if isinstance(done.code, int) else 0
    except (CliError, RankEvalError, pl.exceptions.PolarsError) as error:
        message = str(error)
    except OSError as error:
        message = f"{error.filename}: {error.strerror}" if error.filename else str(error)
    else:
        return 0
    print(f"rank-eval: error: {_one_line(message)}", file=sys.stderr)
    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
