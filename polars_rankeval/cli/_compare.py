"""``rank-eval compare``: systems compared with paired significance tests.

From a log holding every system (``--by``, with ``--within`` the segments to compare inside)
or from TREC runs (``--qrels``); the systems, the segment columns and ``--baseline`` are
checked before anything is evaluated. The default output is the compact table of
:mod:`polars_rankeval.cli._compact`.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import warnings
from collections.abc import Sequence

import polars as pl

from polars_rankeval._engine.plan import finish_all
from polars_rankeval._engine.settings import settings_for
from polars_rankeval._engine.summary import drop_empty_queries
from polars_rankeval._names.registry import resolve_metrics
from polars_rankeval.cli._args import _compare_parser, _format_from, _split_by, directions
from polars_rankeval.cli._compact import compact
from polars_rankeval.cli._constants import (
    _COLUMN_ROLES,
    COMPARE_FORMATS,
    COMPARE_METRICS,
    COMPARE_SUFFIX_FORMATS,
    SYSTEM,
    CompareFormat,
)
from polars_rankeval.cli._errors import CliError
from polars_rankeval.cli._evaluation import (
    _metric_plan,
    _per_query,
    _tables,
    check_metric_names,
)
from polars_rankeval.cli._inputs import (
    _check_output,
    _input_errors_named,
    _read_trec_runs,
    _scan,
)
from polars_rankeval.cli._output import _write
from polars_rankeval.comparison import SYSTEM_SEPARATOR, compare_per_query
from polars_rankeval.comparison._depth import DEPTH_COLUMN, depth_metric, needs_depths
from polars_rankeval.comparison._pairing import check_pairable, system_names
from polars_rankeval.comparison._report import Format as ReportFormat
from polars_rankeval.comparison._report import report
from polars_rankeval.comparison._ties import split_tie_ranges, tie_notes, with_tie_flags

_REPORT_FORMATS: dict[str, ReportFormat] = {
    "markdown": "markdown",
    "latex": "latex",
    "html": "html",
}


def _need_scipy() -> None:
    """Refuse before reading anything: the tests' distributions come from scipy."""
    try:
        importlib.import_module("scipy.stats")
    except ImportError:
        msg = (
            "rank-eval compare needs scipy for the distributions of its tests: "
            'pip install "polars-rankeval[stats]"'
        )
        raise CliError(msg) from None


def _input_systems(data: pl.LazyFrame, by: list[str]) -> list[str] | None:
    """The systems of the input, sorted; None when a --by column is missing (evaluate says so).

    Read before evaluating, so a misspelled --baseline is refused at once, not after the
    evaluation of a large log (only the --by columns are read).
    """
    schema = data.collect_schema()
    if any(name not in schema for name in by):
        return None
    systems = data.select(system_names(by).alias("system")).unique().collect()["system"]
    return sorted(systems.drop_nulls().to_list())


def _check_systems(args: argparse.Namespace, systems: list[str], by: list[str]) -> None:
    if len(systems) < 2:
        found = f"one, {systems[0]!r}" if systems else "none"
        if args.qrels:
            hint = "give two or more run files"
            if args.system_name != "tag":
                hint += " (or a file whose lines carry several run tags, with --system-name tag)"
            msg = f"compare needs at least two systems; the runs hold {found}: {hint}"
        else:
            msg = (
                f"compare needs at least two systems; --by {','.join(by)} has {found} in "
                f"{args.inputs[0]!r}"
            )
        raise CliError(msg)
    if args.baseline is None or args.baseline in systems:
        return
    close = difflib.get_close_matches(args.baseline, systems, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    shown = ", ".join(repr(name) for name in systems[:10])
    more = f" and {len(systems) - 10} more" if len(systems) > 10 else ""
    joined = (
        f" (a system of several --by columns is their values joined by {SYSTEM_SEPARATOR!r})"
        if len(by) > 1
        else ""
    )
    msg = (
        f"--baseline {args.baseline!r} is not a system; the systems are {shown}{more}{joined}{hint}"
    )
    raise CliError(msg)


def _check_within(args: argparse.Namespace, data: pl.LazyFrame, by: list[str]) -> list[str]:
    """The ``--within`` columns: in the log, and naming neither the systems nor the query."""
    within = _split_by(args.within)
    if not within:
        return within
    if args.qrels:
        msg = (
            f"--within {','.join(within)}: TREC runs have no segment columns; --within names "
            "columns of a log (one PATH with --by)"
        )
        raise CliError(msg)
    schema = data.collect_schema()
    query = args.query or "query"
    for name in within:
        if name in by or name == query:
            role = "--by" if name in by else "the query column"
            msg = f"--within {name!r} is {role}: a segment column names neither systems nor queries"
            raise CliError(msg)
        if name not in schema:
            close = difflib.get_close_matches(name, schema.names(), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            msg = f"--within {name!r} is not a column of {args.inputs[0]!r}{hint}"
            raise CliError(msg)
    return within


def _compare_input(args: argparse.Namespace) -> tuple[pl.LazyFrame, list[str]]:
    """The long table to evaluate and the columns naming its systems."""
    by = _split_by(args.by)
    if args.qrels:
        given = [f"--{role}" for role in _COLUMN_ROLES if getattr(args, role)]
        if given:
            msg = f"{', '.join(given)} name columns of a table; TREC files have fixed columns"
            raise CliError(msg)
        _check_within(args, pl.LazyFrame(), by)
        if by and by != [SYSTEM]:
            msg = (
                f"--by {','.join(by)}: with --qrels the systems are the runs, in the column "
                f"{SYSTEM!r} (leave --by out)"
            )
            raise CliError(msg)
        return _read_trec_runs(args.inputs, args.qrels, args.system_name or "stem"), [SYSTEM]
    if args.system_name is not None:
        msg = "--system-name names TREC runs: it needs --qrels QRELS"
        raise CliError(msg)
    if len(args.inputs) > 1:
        msg = (
            f"{len(args.inputs)} inputs given: several inputs are TREC run files and need "
            "--qrels QRELS; a log holding every system is one PATH (a file, a directory, or "
            "a glob in quotes so the shell does not expand it)"
        )
        raise CliError(msg)
    data = _scan(args.inputs[0])
    if not by:
        msg = (
            "compare needs --by COLS, the column(s) whose values are the systems (e.g. --by system)"
        )
        raise CliError(msg)
    return data, by


def _render_compare(
    comparison: pl.DataFrame, fmt: CompareFormat, digits: int, output: str | None = None
) -> str | pl.DataFrame:
    if fmt in _REPORT_FORMATS:
        made = report(comparison, _REPORT_FORMATS[fmt], digits=digits)
        # -o table.html gets a complete page, as Report.save writes it; stdout the fragment
        return made.text_for(output or "-")
    if fmt == "csv":
        return comparison.write_csv()
    if fmt == "json":
        return comparison.write_json() + "\n"
    if fmt == "parquet":
        return comparison
    notes = "".join(f"note: {note}\n" for note in tie_notes(comparison))
    return compact(comparison, digits) + notes


def _run_compare(argv: Sequence[str]) -> None:
    # Intermixed: RUN1 --qrels QRELS RUN2 reads like RUN1 RUN2 --qrels QRELS.
    args = _compare_parser().parse_intermixed_args(argv)
    args.default_metrics = COMPARE_METRICS
    fmt = _format_from(args.format, args.output, COMPARE_FORMATS, COMPARE_SUFFIX_FORMATS, "table")
    _need_scipy()
    _check_output(args.output, [*args.inputs, args.qrels])
    check_metric_names(args)  # before reading: a typo is not preceded by warnings on the data
    with _input_errors_named(args.inputs, [*args.inputs, args.qrels] if args.qrels else []):
        rendered = _compare(args, fmt)
    _write(rendered, args.output)


def _compare(args: argparse.Namespace, fmt: CompareFormat) -> str | pl.DataFrame:
    # Warnings about the input (query coverage) wait until the options are checked, so an
    # option error stays the one line the user reads.
    with warnings.catch_warnings(record=True) as held:
        warnings.simplefilter("always")
        data, by = _compare_input(args)
        within = _check_within(args, data, by)
        args.path = ", ".join(args.inputs)  # named when nothing is evaluated
        systems = _input_systems(data, by)
        if systems is not None:
            _check_systems(args, systems, by)
    for found in held:
        warnings.warn_explicit(found.message, found.category, found.filename, found.lineno)
    specs, _ = _metric_plan(args)
    # A count or direction-less metric is refused before the log is read.
    preset, _ = settings_for(args.convention, {"ties": args.ties})
    resolved = resolve_metrics(specs, preset)
    direction = directions(args.direction, [label for label, _ in resolved])
    meanings = check_pairable([label for label, _ in resolved], dict(resolved), direction)
    if needs_depths(meanings):
        # Each list's depth, for the warning when a depth-sensitive metric meets other depths.
        specs = [*specs, depth_metric()]
    # Segments are evaluated as groups, like the systems: a query of two segments is two lists.
    groups = [*within, *by]
    # -M and -J are evaluate's depth= and judged_only= (the engine cuts the lists)
    per_query, names = _per_query(args, data, groups, specs)
    tables = _tables(args, data, names, groups)
    per_query = finish_all(per_query.lazy(), resolved, [*groups, names["query"]], tables).collect()
    per_query = drop_empty_queries(per_query)  # pairable metrics only: nothing else hidden
    # each list's tie range from evaluate's pass, kept aside for the tie flags (ties.py)
    per_query, ranges = split_tie_ranges(per_query, [*groups, names["query"]])
    # What compare() does after evaluate(): every column besides the keys is a metric.
    hidden = (*groups, names["query"], DEPTH_COLUMN)
    labels = [name for name in per_query.columns if name not in hidden]
    comparison = compare_per_query(
        per_query,
        by=by,
        within=within or None,
        query=names["query"],
        metrics=labels,
        baseline=args.baseline,
        test=args.test,
        correction=None if args.correction == "none" else args.correction,
        correction_scope=args.correction_scope,
        alpha=args.alpha,
        n_resamples=args.resamples,
        seed=args.seed,
        unpaired_queries=args.missing,
        direction=direction,
    )
    comparison = with_tie_flags(comparison, ranges, keys=by, segments=within, query=names["query"])
    return _render_compare(comparison, fmt, args.digits, args.output)
