"""The command's vocabulary: default metrics, output formats, ``-o`` suffixes, columns."""

from __future__ import annotations

from typing import Literal, TypeVar

DEFAULT_METRICS = "ndcg@10,ndcg,map,mrr,p@10,recall@100,bpref,num_q"

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
_COLUMN_ROLES = ("query", "item", "score", "relevance")
