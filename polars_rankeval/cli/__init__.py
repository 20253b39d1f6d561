"""``rank-eval``: evaluate a long-format log (Parquet/CSV) or a TREC run from the shell.

``rank-eval compare ...`` (the first argument is literally ``compare``) compares systems with
paired significance tests instead: :func:`polars_rankeval.compare` and
:func:`polars_rankeval.report` from the shell. ``rank-eval agreement QRELS_A QRELS_B``
measures how two sets of judgments agree (:func:`polars_rankeval.label_agreement`), and
``rank-eval similarity LOG --by system`` how different two systems' lists are
(:func:`polars_rankeval.similarity`). ``rank-eval check CANDIDATE --baseline BASELINE
--fail-if "ndcg@10 < -0.005"`` is a regression gate (:func:`polars_rankeval.check`): exit status
1 when a rule is broken. ``rank-eval off-policy LOG --target COLUMN`` estimates what a new
policy would have earned on a log another policy produced
(:func:`polars_rankeval.off_policy`; ``--slate``: :func:`polars_rankeval.slate_off_policy`),
and ``rank-eval interleaving LOG`` credits interleaved rankers with their clicks
(:func:`polars_rankeval.interleaving`). ``rank-eval explain LOG -m ndcg@10 --a trec_eval
--b gdeval`` says why a metric differs between two tools (:func:`polars_rankeval.explain`). A
log file that is itself named like one of these commands is evaluated with
``rank-eval ./compare``.

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
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import polars as pl

from polars_rankeval._engine.spill import cleanup_on_sigterm
from polars_rankeval.cli._agreement import _run_agreement
from polars_rankeval.cli._args import _output_format, _parser, _split_by
from polars_rankeval.cli._check import _run_check
from polars_rankeval.cli._compare import _run_compare
from polars_rankeval.cli._constants import (
    _COLUMN_ROLES,
    COMPARE_FORMATS,
    COMPARE_METRICS,
    COMPARE_SUFFIX_FORMATS,
    DEFAULT_METRICS,
    FORMATS,
    NDEVAL_MEASURES,
    SUFFIX_FORMATS,
    SUMMARY_QUERY,
    SYSTEM,
    CompareFormat,
    Format,
    FormatT,
)
from polars_rankeval.cli._errors import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    CliError,
    _one_line,
    _warnings_as_lines,
)
from polars_rankeval.cli._evaluation import Result, _evaluate, _metric_plan, check_metric_names
from polars_rankeval.cli._explain import _run_explain
from polars_rankeval.cli._inputs import (
    _check_output,
    _input_errors_named,
    _read_trec,
    _read_trec_runs,
    _scan,
    run_stem,
)
from polars_rankeval.cli._offpolicy import _run_interleaving, _run_off_policy
from polars_rankeval.cli._output import _ndeval, _render, _text_table, _write
from polars_rankeval.cli._similarity import _run_similarity
from polars_rankeval.errors import RankEvalError
from polars_rankeval.io import read_trec_run
from polars_rankeval.ties import tie_report

__all__ = [
    "COMPARE_FORMATS",
    "COMPARE_METRICS",
    "COMPARE_SUFFIX_FORMATS",
    "DEFAULT_METRICS",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "FORMATS",
    "SUFFIX_FORMATS",
    "SUMMARY_QUERY",
    "SYSTEM",
    "CliError",
    "CompareFormat",
    "Format",
    "FormatT",
    "Result",
    "main",
]


# main calls _run and _run_compare, and _run calls _evaluate, through this module's names:
# tests replace them here (monkeypatch.setattr(polars_rankeval.cli, "_run", ...)).


def _run(argv: Sequence[str] | None) -> None:
    args = _parser().parse_args(argv)
    args.path = args.paths[0]  # the run (or log) whose name trec_eval and ndeval print
    fmt = _output_format(args)
    by = _split_by(args.by)
    _check_output(args.output, [*args.paths, args.qrels])
    check_metric_names(args)  # before reading: a typo is not preceded by warnings on the data
    trec_files = [*args.paths, args.qrels] if args.qrels else []
    with _input_errors_named(args.paths, trec_files):
        data, by = _read_inputs(args, by, fmt)
        # trec_eval's default measures are its official set: its layout from TREC files gets
        # them; ndeval's are its 21 measures.
        if fmt == "ndeval" or args.subtopics:
            args.default_metrics = ",".join(ours for ours, _ in NDEVAL_MEASURES)
        elif fmt == "trec" and args.qrels:
            args.default_metrics = "official"
        else:
            args.default_metrics = DEFAULT_METRICS
        if args.tie_report:
            _write(_tie_report(args, data, by, fmt), args.output)
            return
        if fmt == "ndeval":
            args.per_query = True  # ndeval prints every topic, then the mean
        args.trec_layout = fmt == "trec"  # only the trec layout sums as trec_eval does
        result = _evaluate(args, data, by)
    if fmt == "ndeval":
        runid, queries = _ndeval_run(args, data)
        _write(_ndeval(result, runid, queries), args.output)
        return
    _write(_render(result, fmt), args.output)


def _read_inputs(
    args: argparse.Namespace, by: list[str], fmt: Format
) -> tuple[pl.LazyFrame, list[str]]:
    """The log, the run joined with its qrels, or several runs with a system column."""
    runs = len(args.paths) > 1
    if runs:
        by = _several_runs(args, by, fmt)
    if args.qrels:
        given = [f"--{role}" for role in _COLUMN_ROLES if getattr(args, role)]
        if given:
            msg = f"{', '.join(given)} name columns of a table; TREC files have fixed columns"
            raise CliError(msg)
        if runs:
            naming = args.system_name or "stem"
            args.run_names = _run_names(args.paths, naming)
            return _read_trec_runs(args.paths, args.qrels, naming), by
        return _read_trec(args.path, args.qrels, subtopics=args.subtopics), by
    if args.subtopics:
        msg = "--subtopics reads diversity qrels: give them with --qrels QRELS"
        raise CliError(msg)
    if args.system_name:
        msg = "--system-name names TREC runs: give them with --qrels QRELS"
        raise CliError(msg)
    return _scan(args.path), by


def _run_names(paths: list[str], naming: str) -> list[str]:
    """The runs' names in the order given: file stems, or each file's run tags in order."""
    if naming == "stem":
        return [run_stem(path) for path in paths]
    names: list[str] = []
    for path in paths:
        tags = read_trec_run(path, tag=True).select(pl.col("tag").unique(maintain_order=True))
        names += [str(tag) for tag in tags.collect()["tag"]]
    return names


def _several_runs(args: argparse.Namespace, by: list[str], fmt: Format) -> list[str]:
    """Several PATHs: TREC runs, one system each, evaluated in one pass by ``system``."""
    if not args.qrels:
        msg = (
            f"{len(args.paths)} inputs given without --qrels: several PATHs are TREC run files "
            "judged by --qrels QRELS; for logs, give one directory or a quoted glob of Parquet "
            "files with --by"
        )
        raise CliError(msg)
    if by and by != [SYSTEM]:
        msg = f"--by {','.join(by)}: several TREC runs are told apart by 'system' only"
        raise CliError(msg)
    if args.subtopics or fmt == "ndeval":
        msg = "--subtopics and --format ndeval take one run at a time (as ndeval does)"
        raise CliError(msg)
    return [SYSTEM]


def _tie_report(
    args: argparse.Namespace, data: pl.LazyFrame, by: list[str], fmt: Format
) -> str | pl.DataFrame:
    """``--tie-report``: rke.tie_report in the chosen format (not trec's or ndeval's)."""
    if fmt in ("trec", "ndeval"):
        msg = f"--tie-report prints a table: use --format table, csv, json or parquet, not {fmt}"
        raise CliError(msg)
    if args.ties:
        msg = "--tie-report evaluates every tie mode itself: leave out --ties"
        raise CliError(msg)
    specs, _ = _metric_plan(args)
    query, item, score, relevance = (getattr(args, role) or role for role in _COLUMN_ROLES)
    report = tie_report(
        data,
        [spec for spec in specs if isinstance(spec, str)],
        by=by or None,
        per_query=args.per_query,
        relevance_level=args.relevance_level,
        convention=args.convention,
        missing_queries="zero" if args.complete else None,
        query=query,
        item=item,
        score=score,
        relevance=relevance,
    )
    if fmt == "csv":
        return report.write_csv()
    if fmt == "json":
        return report.write_json() + "\n"
    if fmt == "parquet":
        return report
    return _text_table(report)


def _ndeval_run(args: argparse.Namespace, data: pl.LazyFrame) -> tuple[str, list[object]]:
    """Ndeval's runid (the tag of the run's first line; a log's file stem) and run topics."""
    query, score = args.query or "query", args.score or "score"
    queries = data.filter(pl.col(score).is_not_null()).select(query).unique().collect()
    if not args.qrels:
        return Path(args.path).stem, queries[query].to_list()
    tags = read_trec_run(args.path, tag=True).select("tag").head(1).collect()
    return str(tags["tag"][0] or ""), queries[query].to_list()


def _subcommand(command: str | None) -> Callable[[Sequence[str]], None] | None:
    """The function that runs a subcommand printing a table, None for a log to evaluate.

    Looked up at each call, not bound at import: tests replace this module's names.
    """
    return {
        "compare": _run_compare,
        "agreement": _run_agreement,
        "similarity": _run_similarity,
        "off-policy": _run_off_policy,
        "interleaving": _run_interleaving,
        "explain": _run_explain,
    }.get(command or "")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit status (0, or 2 on any mistake).

    ``rank-eval check`` returns 1 when one of its rules is broken.

    ``compare`` as the first argument runs ``rank-eval compare``; anything else evaluates.
    Ctrl-C prints ``rank-eval: interrupted`` and returns 130; SIGTERM removes any spill and
    ends the process by SIGTERM (exit status 143).
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        with cleanup_on_sigterm(), _warnings_as_lines():
            status = 0
            command = arguments[0] if arguments else None
            if command == "check":
                status = _run_check(arguments[1:])
            elif (subcommand := _subcommand(command)) is not None:
                subcommand(arguments[1:])
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
        return status
    print(f"rank-eval: error: {_one_line(message)}", file=sys.stderr)
    return EXIT_ERROR
