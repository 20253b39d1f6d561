"""``rank-eval explain``: why one metric's number differs between two tools (or definitions).

``rank-eval explain LOG -m ndcg@10 --a trec_eval --b gdeval`` prints
:func:`polars_rankeval.explain`'s report; ``RUN --qrels QRELS`` takes a TREC run. A side is a
convention (``gdeval``), settings over one (``trec_eval,gain=exp,ties=expected``; without a
convention they start from trec_eval's), the mean another tool printed (``0.5371``), or a file
of its per-query numbers: a CSV/Parquet table (the query column and one value column) or
trec_eval's ``-q`` output (``measure query value`` lines; the ``all`` line is left out).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from polars_rankeval._names.ours import _parse_value
from polars_rankeval.attribution import explain
from polars_rankeval.cli._args import _format_from, _Parser, _split_by
from polars_rankeval.cli._constants import SUMMARY_QUERY
from polars_rankeval.cli._errors import CliError
from polars_rankeval.cli._inputs import _check_output, _input_errors_named, _read_trec, _scan
from polars_rankeval.cli._output import _write
from polars_rankeval.conventions import CONVENTIONS

_FORMATS = ("text", "csv", "json")
_SUFFIXES = {".txt": "text", ".csv": "csv", ".json": "json"}


def _explain_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rank-eval explain",
        description="Why one metric's number differs between two setups (two tools' "
        "definitions, or another tool's printed numbers): each differing setting's share of "
        "the difference, and the queries that move most.",
    )
    parser.add_argument("log", metavar="LOG", help="a long-format log (Parquet/CSV) or a TREC run")
    parser.add_argument("--qrels", help="the TREC qrels file when LOG is a TREC run")
    parser.add_argument("-m", "--metric", required=True, help="one metric, e.g. ndcg@10")
    side = (
        "a convention ({names}), settings over one (trec_eval,gain=exp,ties=expected), the "
        "mean another tool printed (0.5371), or a file of its per-query numbers (CSV/Parquet "
        "with the query column and one value column, or trec_eval -q output)"
    ).format(names=", ".join(CONVENTIONS))
    parser.add_argument("--a", required=True, help=f"the first side: {side}")
    parser.add_argument("--b", required=True, help="the second side, of the same kinds")
    parser.add_argument(
        "--by",
        action="append",
        default=[],
        help="the column whose values are the systems, with --system naming the one explained",
    )
    parser.add_argument("--system", help="the system (value of --by) to explain")
    parser.add_argument(
        "--top", type=int, default=10, help="queries shown in the report (default 10)"
    )
    parser.add_argument(
        "--per-query",
        action="store_true",
        help="csv/json: every query's values and effects instead of the causes",
    )
    parser.add_argument("--query", default="query", help="query column (default query)")
    parser.add_argument("--item", default="item", help="item column (default item)")
    parser.add_argument("--score", default="score", help="score column (default score)")
    parser.add_argument("--relevance", default="relevance", help="label column (default relevance)")
    parser.add_argument("--format", choices=_FORMATS, default=None, help="default text")
    parser.add_argument("-o", "--output", help="write to this file instead of stdout")
    return parser


def _side(text: str, option: str, query: str, metric: str) -> object:
    """A side as explain takes it: a convention, a settings mapping, a mean, or a table."""
    stripped = text.strip()
    try:
        number = float(stripped)
    except ValueError:
        number = None
    if number is not None and math.isfinite(number) and not Path(stripped).exists():
        return number
    if Path(stripped).is_file():
        return _values_file(stripped, option, query, metric)
    settings: dict[str, Any] = {}
    for part in (piece.strip() for piece in stripped.split(",")):
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep:
            if "convention" in settings:
                msg = f"{option} {text!r}: one convention per side, then key=value settings"
                raise CliError(msg)
            settings["convention"] = key
            continue
        settings[key.strip().lower()] = (
            None if value.strip() == "None" else _parse_value(value.strip(), text)
        )
    if not settings:
        msg = f"{option} is empty: give a convention, settings, a mean or a file"
        raise CliError(msg)
    return settings


def _values_file(path: str, option: str, query: str, metric: str) -> pl.DataFrame:
    """Another tool's per-query numbers: a table, or trec_eval ``-q`` output for one measure."""
    suffix = Path(path).suffix.lower()
    if suffix in {".csv", ".tsv", ".parquet"}:
        table = _scan(path).collect()
        if query in table.columns:  # rank-eval's own per-query output ends with its mean
            table = table.filter(pl.col(query).cast(pl.String) != SUMMARY_QUERY)
        return table
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        msg = f"{option} {path}: not UTF-8 text (trec_eval -q output), nor a .csv/.parquet table"
        raise CliError(msg) from None
    lines = [line.split() for line in text.splitlines()]
    rows = [fields for fields in lines if fields]
    if not rows or any(len(fields) != 3 for fields in rows):
        msg = (
            f"{option} {path}: expected trec_eval -q lines 'measure query value' (or a .csv/"
            ".parquet table)"
        )
        raise CliError(msg)
    measures = sorted({fields[0] for fields in rows})
    if len(measures) > 1:
        if metric not in measures:
            msg = f"{option} {path} holds several measures {measures}: name one with -m"
            raise CliError(msg)
        rows = [fields for fields in rows if fields[0] == metric]
    try:
        values = [float(fields[2]) for fields in rows if fields[1] != SUMMARY_QUERY]
    except ValueError:
        msg = f"{option} {path}: a value is not a number"
        raise CliError(msg) from None
    queries = [fields[1] for fields in rows if fields[1] != SUMMARY_QUERY]
    return pl.DataFrame({query: queries, "value": values})


def _run_explain(argv: Sequence[str]) -> None:
    """Run ``rank-eval explain``; mistakes raise CliError or RankEvalError (one line)."""
    args = _explain_parser().parse_args(argv)
    fmt = _format_from(args.format, args.output, _FORMATS, _SUFFIXES, "text")
    by = _split_by(args.by)
    if bool(by) != bool(args.system):
        msg = "--by and --system go together: the column of systems and the one to explain"
        raise CliError(msg)
    if len(by) > 1:
        msg = "--by takes one column with --system"
        raise CliError(msg)
    if args.top < 0:
        msg = f"--top must be >= 0, got {args.top}"
        raise CliError(msg)
    inputs = [args.log, *([args.qrels] if args.qrels else [])]
    _check_output(args.output, inputs)
    with _input_errors_named([args.log], inputs if args.qrels else []):
        data = _read_trec(args.log, args.qrels) if args.qrels else _scan(args.log)
        query = "query" if args.qrels else args.query
        if by:
            if by[0] not in data.collect_schema().names():
                msg = f"--by {by[0]}: no such column in {args.log}"
                raise CliError(msg)
            data = data.filter(pl.col(by[0]).cast(pl.String) == args.system)
        frame = data.collect()
        if by and frame.height == 0:
            msg = f"--system {args.system}: no row of {args.log} has {by[0]} = {args.system}"
            raise CliError(msg)
        names = (
            {}
            if args.qrels
            else {
                "item": args.item,
                "score": args.score,
                "relevance": args.relevance,
            }
        )
        why = explain(
            frame,
            args.metric,
            _side(args.a, "--a", query, args.metric),
            _side(args.b, "--b", query, args.metric),
            top=args.top,
            query=query,
            **names,
        )
    if fmt == "text":
        _write(str(why) + "\n", args.output)
        return
    table = why.per_query if args.per_query else why.causes
    if table is None:
        msg = f"{args.metric} has no per-query values: leave out --per-query"
        raise CliError(msg)
    _write(table.write_csv() if fmt == "csv" else table.write_json() + "\n", args.output)
