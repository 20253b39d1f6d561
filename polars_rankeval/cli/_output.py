"""Writing the output: table, csv, json, parquet, and trec_eval's layout.

The ``trec`` layout refuses names that would break its lines; the result goes to stdout or
to the ``-o`` file.
"""

from __future__ import annotations

import csv
import io
import math
import sys
from pathlib import Path

import polars as pl

from polars_rankeval._names.registry import TREC_QUERY_ONLY, TREC_SUMMARY_ONLY, trec_measure_of
from polars_rankeval.cli._constants import NDEVAL_MEASURES, SUMMARY_QUERY, Format
from polars_rankeval.cli._errors import CliError
from polars_rankeval.cli._evaluation import Result
from polars_rankeval.io import write_atomically

_TREC_WIDTH = 22  # trec_eval prints "%-22s\t%s\t%.4f"


def _table(result: Result) -> pl.DataFrame:
    """Summary rows only, or the per-query rows followed by the summary rows (query "all")."""
    if result.per_query is None:
        return result.summary
    per_query = result.per_query
    named = per_query.filter(pl.col(result.query).cast(pl.String) == SUMMARY_QUERY)
    if named.height:
        # The summary row would be told from this query by nothing: a reader (rank-eval check)
        # drops both, or cannot tell which is which.
        msg = (
            f"a query is named {SUMMARY_QUERY!r} (column {result.query!r}), the id of the summary "
            "rows --per-query adds, so a reader could not tell them apart: rename that query"
        )
        raise CliError(msg)
    summary = result.summary.with_columns(pl.lit(SUMMARY_QUERY).alias(result.query))
    # The relaxed concat makes the query column a string, so it can hold "all" whatever the
    # dtype of the ids (int, categorical, enum...), and lets a mean (float) sit under an int.
    return pl.concat([per_query, summary.select(per_query.columns)], how="vertical_relaxed")


def _trec_lines(frame: pl.DataFrame, result: Result, *, means: bool) -> list[str]:
    """trec_eval's lines ``measure<TAB>query<TAB>value`` for the rows of one run.

    Built a column at a time, then interleaved row by row (trec_eval's order: each query's
    measures together): a Python loop over rows and labels asking the frame's schema for every
    value took 9.8-11.3 s for ``-q -m all_trec`` on 17 runs of 100 topics (165,000 lines); this
    takes 0.2 s.
    """
    metrics, schema = dict(result.metrics), frame.schema
    queries = [SUMMARY_QUERY] * frame.height if means else frame[result.query].to_list()
    columns: list[list[str | None]] = []
    for label in result.printed:
        measure = trec_measure_of(label)
        if measure == "runid":
            if means and not result.by:  # with --by, _trec names the run
                columns.append(
                    [f"{'runid':<{_TREC_WIDTH}}\t{query}\t{result.runid}" for query in queries]
                )
            continue
        if measure in TREC_QUERY_ONLY:  # relstring: text, per query only
            if not means:
                keys = zip(
                    *(frame[name].to_list() for name in (*result.by, result.query)), strict=True
                )
                columns.append(
                    [
                        f"{label:<{_TREC_WIDTH}}\t{query}\t'{result.relstrings.get(key, '')}'"
                        for query, key in zip(queries, keys, strict=True)
                    ]
                )
            continue
        if not means and {measure, metrics[label].name} & TREC_SUMMARY_ONLY:
            continue  # trec_eval -q prints num_q, gm_map, gm_bpref only in the summary
        head = f"{label:<{_TREC_WIDTH}}\t"
        integer = schema[label].is_integer()
        columns.append(
            [
                # trec_eval prints no line for a measure it cannot compute (None)
                None
                if value is None
                else f"{head}{query}\t{value:d}"
                if integer
                else f"{head}{query}\t{value:.4f}"
                for query, value in zip(queries, frame[label].to_list(), strict=True)
            ]
        )
    return [line for row in zip(*columns, strict=True) for line in row if line is not None]


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
    """trec_eval's layout; with ``--by``, one block per run, its summary led by a runid line.

    Several TREC runs print as trec_eval would print them one after another, each summary led
    by ``runid all NAME`` (its file stem, or its tag with ``--system-name tag``), with any
    ``-m``, so the blocks can be told apart.
    """
    _check_trec_fields(result)
    # trec_eval's running sums (summed query by query in id order), not Polars' mean
    summary = result.summary if result.trec_summary is None else result.trec_summary
    by = result.by
    blocks: list[tuple[tuple[object, ...], pl.DataFrame, pl.DataFrame | None]]
    if not by:
        blocks = [((), summary, result.per_query)]
    else:
        per_query = (
            result.per_query.partition_by(by, as_dict=True) if result.per_query is not None else {}
        )
        blocks = [
            (key, means, per_query.get(key))
            for key, means in summary.partition_by(by, maintain_order=True, as_dict=True).items()
        ]
    if result.runs:  # the runs in the order given, as consecutive trec_eval calls print them
        order = {name: index for index, name in enumerate(result.runs)}
        blocks.sort(key=lambda block: order.get(str(block[0][0]), len(order)))
    lines: list[str] = []
    for key, means, queries in blocks:
        # key holds the by values of this block (empty without --by)
        if queries is not None:
            lines.extend(_trec_lines(queries, result, means=False))
        if result.runs:  # trec_eval run after run: each summary names its run
            lines.append(f"{'runid':<{_TREC_WIDTH}}\t{SUMMARY_QUERY}\t{key[0]}")
        elif by:
            runid = "/".join(f"{name}={value}" for name, value in zip(by, key, strict=True))
            lines.append(f"{'runid':<{_TREC_WIDTH}}\t{SUMMARY_QUERY}\t{runid}")
        lines.extend(_trec_lines(means, result, means=True))
    return "".join(f"{line}\n" for line in lines)


def _ndeval_number(value: object) -> str:
    """C's ``%.6f``, as ndeval prints it (glibc writes the NaN of 0/0 as ``-nan``)."""
    if value is None:
        return "-nan"
    number = float(value)  # type: ignore[arg-type]
    return "-nan" if math.isnan(number) else f"{number:.6f}"


def _ndeval_topic(query: object) -> tuple[int, str]:
    """Ndeval's topic: the number (its ``%d``), sorted numerically; other ids as they are."""
    text = str(query)
    return (int(text), str(int(text))) if text.isdigit() else (sys.maxsize, text)


def _ndeval(result: Result, runid: str, run_queries: list[object]) -> str:
    """Ndeval's CSV: ``runid,topic,<measures>``, a row per run topic, then ``amean``.

    A run topic without judgments gets a row of zeros and is left out of the mean, as in
    ndeval; the mean is over the topics both have.
    """
    if result.by:
        msg = "--format ndeval prints one run, as ndeval does: leave out --by"
        raise CliError(msg)
    if result.per_query is None:
        msg = "internal: --format ndeval needs the per-query rows"
        raise CliError(msg)
    names = dict(NDEVAL_MEASURES)
    labels = [label for label, _ in result.metrics]
    evaluated = {str(row[result.query]): row for row in result.per_query.iter_rows(named=True)}
    topics = sorted({str(q) for q in run_queries} | set(evaluated), key=_ndeval_topic)
    # The csv module quotes a field only where it must (a comma, a quote, a line break), so
    # plain ids print as ndeval prints them and odd ones cannot add or shift columns.
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["runid", "topic", *(names.get(label, label) for label in labels)])
    for topic in topics:
        row = evaluated.get(topic)
        values = [_ndeval_number(row[label] if row else 0.0) for label in labels]
        writer.writerow([runid, _ndeval_topic(topic)[1], *values])
    means = result.summary.row(0, named=True)
    writer.writerow([runid, "amean", *(_ndeval_number(means[label]) for label in labels)])
    return text.getvalue()


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
    """Every command's output: to stdout, or whole or not at all to the ``-o`` file."""
    if output is None:
        # _output_format refused parquet without -o, so this is text.
        sys.stdout.write(str(rendered))
        return

    def write(path: Path) -> None:
        if isinstance(rendered, pl.DataFrame):
            rendered.write_parquet(path)
        else:
            path.write_text(rendered, encoding="utf-8")

    write_atomically(output, write, who="-o")
