"""The command's vocabulary: default metrics, output formats, ``-o`` suffixes, columns."""

from __future__ import annotations

from typing import Literal, TypeVar

DEFAULT_METRICS = "ndcg@10,ndcg,map,mrr,p@10,recall@100,bpref,num_q"

Format = Literal["table", "csv", "json", "parquet", "trec", "ndeval"]
FORMATS: tuple[Format, ...] = ("table", "csv", "json", "parquet", "trec", "ndeval")
#: ndeval's measures, in the order of its CSV columns: (our metric string, its column name).
_NDEVAL_CUT: tuple[tuple[str, str], ...] = (("err_ia", "ERR-IA"), ("nerr_ia", "nERR-IA"))
_NDEVAL_CUT += (("alpha_dcg", "alpha-DCG"), ("alpha_ndcg", "alpha-nDCG"))
NDEVAL_MEASURES: tuple[tuple[str, str], ...] = (
    *((f"{ours}@{k}", f"{theirs}@{k}") for ours, theirs in _NDEVAL_CUT for k in (5, 10, 20)),
    ("nrbp", "NRBP"),
    ("nnrbp", "nNRBP"),
    ("map_ia", "MAP-IA"),
    *((f"p_ia@{k}", f"P-IA@{k}") for k in (5, 10, 20)),
    *((f"strec@{k}", f"strec@{k}") for k in (5, 10, 20)),
)
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
CompareFormat = Literal["table", "markdown", "latex", "html", "csv", "json", "parquet"]
COMPARE_FORMATS: tuple[CompareFormat, ...] = (
    "table",
    "markdown",
    "latex",
    "html",
    "csv",
    "json",
    "parquet",
)
COMPARE_SUFFIX_FORMATS: dict[str, CompareFormat] = {
    ".txt": "table",
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
