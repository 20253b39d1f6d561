"""Building the long-format table: TREC file readers and the run/judgments join."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import polars as pl

from polars_rankeval._columns import as_polars, check_schema, make_columns

TrecKind = Literal["run", "qrels", "empty", "other"]

# Enough of a line to tell a TREC line from anything else, without reading a binary file whole.
_SNIFF_BYTES = 1 << 16


def leading_lines(path: str | Path, count: int) -> list[str]:
    """The first ``count`` non-blank lines of a file, stripped (fewer if the file has fewer).

    Each line is read up to 64 KiB, so a binary file with no newline is not read whole.
    """
    lines: list[str] = []
    with Path(path).open("rb") as file:
        while len(lines) < count:
            raw = file.readline(_SNIFF_BYTES)
            if not raw:
                break
            if raw.strip():
                lines.append(raw.decode("utf-8", errors="replace").strip())
    return lines


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def trec_line_kind(line: str) -> TrecKind:
    r"""Tell a TREC run line from a qrels line by its fields (whitespace-separated).

    A run line is ``qid Q0 docno rank score tag`` (trec_eval needs the 6 fields; more are
    ignored) with a numeric rank and score; a qrels line is ``qid iter docno rel`` with an
    integer label.

    Examples
    --------
    >>> trec_line_kind("301\tQ0\tFR940202-2-00150\t104\t  2.129133\tSTANDARD")
    'run'
    >>> trec_line_kind("301 0 CR93E-10279 0")
    'qrels'
    >>> trec_line_kind("query,item,score,relevance")
    'other'
    """
    fields = line.split()
    if not fields:
        return "empty"
    if len(fields) >= 6 and _is_number(fields[3]) and _is_number(fields[4]):
        return "run"
    if len(fields) == 4 and fields[3].lstrip("+-").isdigit():
        return "qrels"
    return "other"


def trec_file_kind(path: str | Path) -> TrecKind:
    """What the first non-blank line of a file looks like: see :func:`trec_line_kind`.

    ``"empty"`` when the file holds nothing but whitespace.
    """
    lines = leading_lines(path, 1)
    return trec_line_kind(lines[0]) if lines else "empty"


def _whitespace_fields(path: str | Path, names: list[str]) -> pl.LazyFrame:
    """Scan a whitespace-separated text file (TREC files mix tabs and runs of spaces)."""
    lines = pl.scan_csv(
        path,
        has_header=False,
        separator="\x1f",  # a byte TREC files never hold: one column per line
        quote_char=None,
        new_columns=["line"],
        schema_overrides={"line": pl.String},
    )
    fields = pl.col("line").str.extract_all(r"\S+")
    return lines.filter(fields.list.len() > 0).select(
        fields.list.get(i, null_on_oob=True).alias(name) for i, name in enumerate(names)
    )


def read_trec_run(path: str | Path) -> pl.LazyFrame:
    """Scan a TREC run file ``qid Q0 docno rank score tag`` into ``(query, item, score)``.

    The rank column is ignored, as in trec_eval; columns after the tag are ignored too.
    Scores are parsed as 64-bit floats (trec_eval 10).
    """
    raw = _whitespace_fields(path, ["query", "_iter", "item", "_rank", "score"])
    return raw.select("query", "item", pl.col("score").cast(pl.Float64))


def read_trec_qrels(path: str | Path) -> pl.LazyFrame:
    """Scan a TREC qrels file ``qid iter docno rel`` into ``(query, item, relevance)``."""
    raw = _whitespace_fields(path, ["query", "_iter", "item", "relevance"])
    return raw.select("query", "item", pl.col("relevance").cast(pl.Int64))


def join_run_qrels(
    run: pl.DataFrame | pl.LazyFrame,
    qrels: pl.DataFrame | pl.LazyFrame,
    *,
    query: str = "query",
    item: str = "item",
    score: str = "score",
    relevance: str = "relevance",
) -> pl.LazyFrame:
    """Full outer join of a run ``(query, item, score)`` and judgments ``(query, item, relevance)``.

    Judged rows missing from the run get a null score (judged, not retrieved); retrieved rows
    missing from the judgments get a null relevance (unjudged).

    Examples
    --------
    >>> import polars as pl
    >>> run = pl.DataFrame({"query": ["q"], "item": ["a"], "score": [1.0]})
    >>> qrels = pl.DataFrame({"query": ["q", "q"], "item": ["a", "b"], "relevance": [1, 2]})
    >>> join_run_qrels(run, qrels).collect().sort("item")
    shape: (2, 4)
    ┌───────┬──────┬───────┬───────────┐
    │ query ┆ item ┆ score ┆ relevance │
    │ ---   ┆ ---  ┆ ---   ┆ ---       │
    │ str   ┆ str  ┆ f64   ┆ i64       │
    ╞═══════╪══════╪═══════╪═══════════╡
    │ q     ┆ a    ┆ 1.0   ┆ 1         │
    │ q     ┆ b    ┆ null  ┆ 2         │
    └───────┴──────┴───────┴───────────┘
    """
    columns = make_columns(query=query, item=item, score=score, relevance=relevance, by=None)
    run_lf, qrels_lf = as_polars(run, "run").lazy(), as_polars(qrels, "qrels").lazy()
    check_schema(run_lf.collect_schema(), columns, need_relevance=False)
    check_schema(qrels_lf.collect_schema(), columns, need_score=False)
    return run_lf.select(query, item, score).join(
        qrels_lf.select(query, item, relevance),
        on=[query, item],
        how="full",
        coalesce=True,
        nulls_equal=False,
    )
