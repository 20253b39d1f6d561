"""``rank-eval``: evaluate a long-format log (Parquet/CSV) or a TREC run from the shell.

Examples
--------
``rank-eval data/sample.parquet --by system``
``rank-eval run.txt --qrels qrels.txt -m ndcg@10,map,p@5 --per-query``
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from polars_rankeval.errors import RankEvalError
from polars_rankeval.evaluate import evaluate
from polars_rankeval.io import join_run_qrels, read_trec_qrels, read_trec_run
from polars_rankeval.registry import split_metric_list

DEFAULT_METRICS = "ndcg@10,ndcg,map,mrr,p@10,recall@100,bpref,num_q"


def _scan(path: str) -> pl.LazyFrame:
    suffix = Path(path.rstrip("*")).suffix.lower()
    if suffix in {".csv", ".tsv"}:
        return pl.scan_csv(path, separator="\t" if suffix == ".tsv" else ",")
    if suffix in {".ndjson", ".jsonl"}:
        return pl.scan_ndjson(path)
    # Parquet files, globs and hive-partitioned directories.
    return pl.scan_parquet(path)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rank-eval",
        description=(
            "Evaluate ranking metrics (trec_eval-exact) over a long-format table with one row "
            "per (query, item): columns query, item, score, relevance."
        ),
    )
    parser.add_argument("path", help="Parquet/CSV log, or a TREC run file when --qrels is given")
    parser.add_argument("--qrels", help="TREC qrels file; PATH is then a TREC run file")
    parser.add_argument(
        "-m",
        "--metrics",
        default=DEFAULT_METRICS,
        help=f"comma-separated metric strings (default: {DEFAULT_METRICS})",
    )
    parser.add_argument("--by", action="append", default=[], help="column to group runs by")
    parser.add_argument("--per-query", action="store_true", help="one row per query")
    parser.add_argument(
        "-l", "--relevance-level", type=int, default=None, help="as trec_eval -l (default 1)"
    )
    parser.add_argument(
        "--ties", choices=["trec", "expected"], default=None, help="tie handling (default trec)"
    )
    parser.add_argument(
        "--convention",
        default="trec_eval",
        help="trec_eval (default), sklearn, ranx, torchmetrics, spark or recommenders",
    )
    parser.add_argument(
        "-c",
        "--complete",
        action="store_true",
        help="score judged queries with no retrieved row as 0 (trec_eval -c)",
    )
    for role in ("query", "item", "score", "relevance"):
        parser.add_argument(f"--{role}", default=role, help=f"name of the {role} column")
    parser.add_argument(
        "--buckets",
        default="auto",
        help="passes over hash buckets of the query ids: an int, or auto (default)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument("--csv", action="store_true", help="print CSV instead of a table")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit status."""
    args = _parser().parse_args(argv)
    names = {"query": args.query, "item": args.item, "score": args.score}
    try:
        if args.qrels:
            data = join_run_qrels(
                read_trec_run(args.path),
                read_trec_qrels(args.qrels),
                **names,
                relevance="relevance",
            )
        else:
            data = _scan(args.path)
        result = evaluate(
            data,
            split_metric_list(args.metrics),
            per_query=args.per_query,
            by=args.by or None,
            relevance_level=args.relevance_level,
            ties=args.ties,
            convention=args.convention,
            missing_queries="zero" if args.complete else None,
            n_buckets=int(args.buckets) if args.buckets.isdigit() else args.buckets,
            progress=False if args.no_progress else None,
            relevance=args.relevance,
            **names,
        ).collect()
    except (RankEvalError, FileNotFoundError, pl.exceptions.PolarsError) as error:
        print(f"rank-eval: error: {error}", file=sys.stderr)
        return 2
    if args.csv:
        sys.stdout.write(result.write_csv())
    else:
        with pl.Config(
            tbl_rows=-1,
            tbl_cols=-1,
            float_precision=4,
            tbl_hide_dataframe_shape=True,
            tbl_hide_column_data_types=True,
            tbl_width_chars=200,
        ):
            print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
