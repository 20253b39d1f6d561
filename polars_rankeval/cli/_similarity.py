"""``rank-eval similarity``: how different the systems of a log rank, with no labels.

``rank-eval similarity LOG --by system [--baseline X] [-m rbo(p=0.9),jaccard@10]
[--per-query] [--ties trec|w|a|b] [--format table|csv|json] [-o PATH]`` prints
:func:`polars_rankeval.similarity`. ``rank-eval similarity RUN RUN ...`` takes TREC runs
instead (no qrels: similarity reads no labels), each a system named as ``rank-eval`` names runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import polars as pl

from polars_rankeval._names.split import split_each
from polars_rankeval.agreement._similarity import TIES, similarity
from polars_rankeval.cli._args import _format_from, _Parser, _split_by
from polars_rankeval.cli._constants import SYSTEM
from polars_rankeval.cli._errors import CliError
from polars_rankeval.cli._inputs import (
    _check_output,
    _input_errors_named,
    _scan,
    is_table_path,
    read_unjudged_runs,
)
from polars_rankeval.cli._output import _text_table, _write
from polars_rankeval.comparison._pairing import SYSTEM_SEPARATOR

SIMILARITY_METRICS = "rbo(p=0.9),jaccard@10"
_FORMATS = ("table", "csv", "json")
_SUFFIXES = {".txt": "table", ".csv": "csv", ".json": "json"}


def _similarity_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rank-eval similarity",
        description="How different the systems' ranked lists are, per pair of systems, "
        "averaged over the queries both have (no relevance labels needed).",
    )
    parser.add_argument(
        "log",
        metavar="LOG",
        nargs="+",
        help="a long-format log (Parquet/CSV) of all systems, or two or more TREC run files "
        "(each a system, named by its file as rank-eval names runs)",
    )
    parser.add_argument(
        "--system-name",
        choices=("stem", "tag"),
        default=None,
        help="TREC runs: name each by its file (stem, TREC's input. prefix dropped; default) "
        "or by the run tag of its lines (tag)",
    )
    parser.add_argument(
        "--by",
        action="append",
        default=[],
        help="the column(s) whose values are the systems: comma-separated, or repeat the option",
    )
    parser.add_argument(
        "--baseline",
        help="compare every other system with this one (default: every pair); with several "
        f"--by columns, their values joined by {SYSTEM_SEPARATOR!r}",
    )
    parser.add_argument(
        "-m",
        "--metrics",
        action="append",
        default=None,
        help=f"comma-separated: rbo(p=..,output=ext|min|max|res,ties=..), jaccard[@k], "
        f"overlap@k, kendall_tau@k (default: {SIMILARITY_METRICS}); repeatable",
    )
    parser.add_argument(
        "--per-query", action="store_true", help="one row per metric, pair and query"
    )
    parser.add_argument(
        "--within",
        action="append",
        default=[],
        help="segment column(s): compare the systems inside each segment (comma-separated or "
        "repeated)",
    )
    parser.add_argument(
        "--ties",
        choices=TIES,
        default="trec",
        help="trec: break ties as trec_eval (default); w, a, b: Corsi & Urbano's RBO variants",
    )
    parser.add_argument("--query", default="query", help="query column (default query)")
    parser.add_argument("--item", default="item", help="item column (default item)")
    parser.add_argument("--score", default="score", help="score column (default score)")
    parser.add_argument("--format", choices=_FORMATS, default=None, help="default table")
    parser.add_argument("--digits", type=int, default=4, help="decimals of the table (4)")
    parser.add_argument("-o", "--output", help="write to this file instead of stdout")
    return parser


def _are_trec_runs(paths: list[str]) -> bool:
    """Whether the inputs are TREC run files (not a table: by suffix, directory or Parquet)."""
    return not any(is_table_path(path) for path in paths)


def _render(table: pl.DataFrame, fmt: str, digits: int) -> str:
    if fmt == "csv":
        return table.write_csv()
    if fmt == "json":
        return table.write_json() + "\n"
    return _text_table(table, digits=digits, width=1000)


def _run_similarity(argv: Sequence[str]) -> None:
    """Run ``rank-eval similarity``; mistakes raise CliError or RankEvalError (one line)."""
    args = _similarity_parser().parse_args(argv)
    by = _split_by(args.by)
    runs = _are_trec_runs(args.log)
    if runs and by and by != [SYSTEM]:
        msg = f"--by {','.join(by)}: TREC runs are told apart by 'system' only"
        raise CliError(msg)
    if runs and len(args.log) < 2:
        msg = f"{args.log[0]!r}: similarity compares two or more TREC run files; give another run"
        raise CliError(msg)
    if runs:
        by = [SYSTEM]
    elif len(args.log) > 1:
        msg = (
            f"{len(args.log)} inputs given: several inputs are TREC run files; for logs, give "
            "one file, directory or quoted glob with --by"
        )
        raise CliError(msg)
    elif args.system_name:
        msg = "--system-name names TREC runs: give two or more run files"
        raise CliError(msg)
    if not by:
        msg = "similarity needs --by COLS, the column(s) whose values are the systems"
        raise CliError(msg)
    fmt = _format_from(args.format, args.output, _FORMATS, _SUFFIXES, "table")
    metrics = split_each(args.metrics or [SIMILARITY_METRICS])
    _check_output(args.output, args.log)
    with _input_errors_named(args.log, args.log if runs else []):
        if runs:
            names = ("query", "item", "score")
            if any(getattr(args, role) != role for role in names):
                msg = "--query, --item, --score name columns of a table; TREC runs have fixed ones"
                raise CliError(msg)
            data = read_unjudged_runs(args.log, args.system_name or "stem")
        else:
            data = _scan(args.log[0])
        # A system's name is its value as text (several --by: joined by " / "), so the
        # text of --baseline names it as given.
        table = similarity(
            data,
            metrics,
            by=by,
            baseline=args.baseline,
            query=args.query,
            item=args.item,
            score=args.score,
            per_query=args.per_query,
            ties=args.ties,
            within=_split_by(args.within) or None,
        )
    _write(_render(table, fmt, args.digits), args.output)
