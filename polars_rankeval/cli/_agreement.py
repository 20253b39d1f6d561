"""``rank-eval agreement``: how two sets of TREC qrels (two judges) agree on their labels.

Cohen's κ, Krippendorff's α and the Jaccard index of the relevant sets, over all queries or
per query (``--per-query``, then an ``all`` row), from :func:`polars_rankeval.label_agreement`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import polars as pl

from polars_rankeval.agreement import label_agreement
from polars_rankeval.cli._args import _format_from, _Parser
from polars_rankeval.cli._errors import CliError
from polars_rankeval.cli._inputs import _check_output, _check_text_file
from polars_rankeval.cli._output import _text_table, _write
from polars_rankeval.io import read_trec_qrels

AgreementFormat = Literal["table", "csv", "json"]
_FORMATS: tuple[AgreementFormat, ...] = ("table", "csv", "json")
_SUFFIXES: dict[str, AgreementFormat] = {".csv": "csv", ".json": "json", ".txt": "table"}
_TABLE_WIDTH = 1000  # one line per query: the column names are not wrapped

_DESCRIPTION = (
    "How two judges' TREC qrels agree: per query (--per-query) and over all queries, Cohen's "
    "kappa (unweighted, linear and quadratic weights), Krippendorff's alpha (nominal, ordinal) "
    "on the items both judged, the Jaccard index of the relevant sets, and the items only one "
    "side judged."
)


def _agreement_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="rank-eval agreement", description=_DESCRIPTION)
    parser.add_argument("qrels_a", metavar="QRELS_A", help="TREC qrels file of the first judge")
    parser.add_argument("qrels_b", metavar="QRELS_B", help="TREC qrels file of the second judge")
    parser.add_argument(
        "--per-query",
        action="store_true",
        help="one row per query, then the row 'all' over every query",
    )
    parser.add_argument(
        "--relevance-level",
        type=int,
        default=1,
        metavar="N",
        help="an item is relevant (for the Jaccard index) at label N or more (default 1)",
    )
    parser.add_argument(
        "--format",
        choices=_FORMATS,
        default=None,
        help="table (default), csv or json; -o PATH with .csv or .json picks it too",
    )
    parser.add_argument("-o", "--output", metavar="PATH", help="write here instead of stdout")
    parser.add_argument(
        "-d", "--digits", type=int, default=4, help="decimals in the table (default 4)"
    )
    return parser


def _agreement_table(args: argparse.Namespace) -> pl.DataFrame:
    for path in (args.qrels_a, args.qrels_b):
        if not Path(path).exists():
            msg = f"qrels file {path!r} does not exist"
            raise CliError(msg)
        _check_text_file(path, "qrels")
    found = label_agreement(
        read_trec_qrels(args.qrels_a),
        read_trec_qrels(args.qrels_b),
        relevance_level=args.relevance_level,
        per_query=args.per_query,
    )
    if not args.per_query:
        return found
    overall = label_agreement(
        read_trec_qrels(args.qrels_a),
        read_trec_qrels(args.qrels_b),
        relevance_level=args.relevance_level,
    )
    # trec_eval's convention: the summary row of a per-query listing is the query "all".
    return pl.concat([found, overall.select(pl.lit("all").alias("query"), pl.all())])


def _render(table: pl.DataFrame, fmt: AgreementFormat, digits: int) -> str:
    if fmt == "csv":
        return table.write_csv()
    if fmt == "json":
        return table.write_json() + "\n"
    return _text_table(table, digits=digits, width=_TABLE_WIDTH)


def _run_agreement(argv: Sequence[str]) -> None:
    """``rank-eval agreement QRELS_A QRELS_B [--per-query] [--format F] [-o PATH]``."""
    args = _agreement_parser().parse_args(argv)
    fmt = _format_from(args.format, args.output, _FORMATS, _SUFFIXES, "table")
    if args.digits < 0:
        msg = f"--digits must be 0 or more, got {args.digits}"
        raise CliError(msg)
    _check_output(args.output, [args.qrels_a, args.qrels_b])
    _write(_render(_agreement_table(args), fmt, args.digits), args.output)
