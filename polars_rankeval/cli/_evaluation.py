"""Evaluating: the per-query and summary rows the command prints (:class:`Result`).

The metrics to compute and their printed order, trec_eval's ``-N``, its runid and relstring, and
nothing evaluated as an error saying why. ``-M`` and ``-J`` are only passed on, as evaluate's
``depth=`` and ``judged_only=``: the engine cuts the lists.
"""

from __future__ import annotations

import argparse
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn

import polars as pl

from polars_rankeval._engine.columns import make_columns
from polars_rankeval._engine.evaluate import evaluate_frame
from polars_rankeval._engine.input import Cut, cut_lists
from polars_rankeval._engine.plan import finish_all
from polars_rankeval._engine.settings import settings_for
from polars_rankeval._engine.summary import drop_empty_queries, per_query_only, summary
from polars_rankeval._engine.tables import Tables, make_tables
from polars_rankeval._engine.tie_bounds import warn_about_ties
from polars_rankeval._engine.validation import warn_if_empty
from polars_rankeval._names.registry import (
    parse_metrics,
    resolve_metrics,
    trec_measure_names,
    trec_measure_of,
)
from polars_rankeval._names.trec_eval import command_line_metrics
from polars_rankeval.cli._constants import _COLUMN_ROLES
from polars_rankeval.cli._errors import CliError
from polars_rankeval.errors import EmptyEvaluationWarning
from polars_rankeval.io import read_trec_run
from polars_rankeval.lists import maybe_from_lists
from polars_rankeval.metrics import Metric, utility
from polars_rankeval.metrics.geometric import MIN_GEO_MEAN

_DIGITS = 9  # relstring: labels above 9 have no digit of their own


@dataclass(frozen=True)
class Result:
    """What the command computed: per-query rows (if asked for) and the summary rows.

    ``printed`` is the order of the ``trec`` lines: the metric labels, and with trec_eval's
    measure names also ``runid`` and ``relstring``, which are not metrics (``runid`` names the
    run, ``relstrings`` holds each query's string, keyed by its ``by`` values and query).
    """

    per_query: pl.DataFrame | None
    summary: pl.DataFrame
    metrics: list[tuple[str, Metric]]
    by: list[str]
    query: str
    printed: list[str] = field(default_factory=list)
    runid: str = ""
    relstrings: dict[tuple[object, ...], str] = field(default_factory=dict)
    # Several TREC runs in one call, their names in the order given: each trec block is one
    # run, its runid line the run's name.
    runs: tuple[str, ...] = ()
    # The summary rows as trec_eval sums them (see _trec_summary), for the trec layout.
    trec_summary: pl.DataFrame | None = None


def _with_num_docs(spec: str, num_docs: int | None) -> str | Metric:
    """trec_eval's ``-N``: the collection size reaches utility, its only user (4th coefficient)."""
    if num_docs is None or trec_measure_of(spec) != "utility":
        return spec
    parameters = spec.partition("_")[2]
    coefficients = [float(value) for value in parameters.split(",")] if parameters else []
    options = dict(zip("abcd", coefficients, strict=False))
    return replace(utility(**options, num_docs=num_docs), name=spec)


def _metric_plan(args: argparse.Namespace) -> tuple[list[str | Metric], list[str]]:
    """The metrics to evaluate, and the names in the order the trec lines print them.

    Every ``-m`` a trec_eval measure, measure with parameters or set (``-m P.5,10``,
    ``-m all_trec``): trec_eval's names in trec_eval's order, as it prints them whatever the
    order of its ``-m`` options. Otherwise each ``-m`` is a list of our metric strings (where
    one is a trec_eval form, its names), in the order given.
    """
    specs = command_line_metrics(args.metrics or [args.default_metrics], trec_measure_names)
    printed = specs  # a sweep (ndcg@5,10) is widened to its labels in _printed_labels
    # runid and relstring are text, not metrics: the trec output prints them itself.
    kept = [name for name in specs if trec_measure_of(name) not in ("runid", "relstring")]
    return [_with_num_docs(name, args.num_docs) for name in kept], printed


def check_metric_names(args: argparse.Namespace) -> None:
    """Resolve the ``-m`` metrics before any file is read (a typo is the only line printed).

    The same resolution the evaluation does later, with the command's convention; without
    ``-m`` the defaults need no check.
    """
    if not args.metrics:
        return
    specs, _ = _metric_plan(args)
    preset, _ = settings_for(args.convention, {"ties": args.ties})
    resolve_metrics(specs, preset)


def _printed_labels(printed: list[str], resolved: list[tuple[str, Metric]]) -> list[str]:
    """The trec lines' order: each name, a sweep (``ndcg@5,10``) widened to its labels."""
    labels = iter(label for label, _ in resolved)
    order: list[str] = []
    for name in printed:
        if trec_measure_of(name) in ("runid", "relstring"):
            order.append(name)
        else:  # resolved holds each name's labels in the same order
            order.extend(next(labels) for _ in range(len(parse_metrics(name))))
    return order


def _evaluate(args: argparse.Namespace, data: pl.LazyFrame, by: list[str]) -> Result:
    specs, printed = _metric_plan(args)
    per_query, names = _per_query(args, data, by, specs)
    # The same preset evaluate used, so each column gets its metric's summary rule.
    preset, _ = settings_for(args.convention, {"ties": args.ties})
    resolved = resolve_metrics(specs, preset)
    tables = _tables(args, data, names, by)
    per_query = finish_all(per_query.lazy(), resolved, [*by, names["query"]], tables).collect()
    per_query = drop_empty_queries(per_query)
    per_query = _warn_about_ties(args, per_query, by)
    means = summary(per_query.lazy(), resolved, by, tables).collect()
    if args.per_query:  # per-system metrics have no per-query rows (a warning says so)
        per_query = per_query_only(per_query, resolved)
    printed = _printed_labels(printed, resolved)
    relstring = next((name for name in printed if trec_measure_of(name) == "relstring"), None)
    keys = [*by, names["query"]]
    return Result(
        per_query if args.per_query else None,
        means,
        resolved,
        by,
        names["query"],
        printed,
        _runid(args, per_query, names["query"]) if "runid" in printed and not by else "",
        _relstrings(_cut(args, data, names, by), relstring, names, keys)
        if relstring and args.per_query
        else {},
        runs=tuple(getattr(args, "run_names", ())),
        trec_summary=(
            _trec_summary(per_query, means, resolved, by, names["query"])
            if getattr(args, "trec_layout", False)
            else None
        ),
    )


def _trec_summary(
    per_query: pl.DataFrame,
    means: pl.DataFrame,
    resolved: list[tuple[str, Metric]],
    by: list[str],
    query: str,
) -> pl.DataFrame:
    """The means as trec_eval computes them: summed query by query, then divided.

    trec_eval adds each query's value to a running double in the order of the query ids
    (``strcmp``) and divides by the number of queries (``gm_map``: the floored logs, then
    ``exp``). Polars' mean sums in another order, which can differ in the last bit and so, on a
    value such as 0.10605, in the fourth decimal printed: the trec layout uses this order.
    """
    ordered = per_query.sort([*by, pl.col(query).cast(pl.String)])
    sums = []
    for label, metric in resolved:
        if metric.level != "query" or metric.summary not in ("mean", "gm"):
            continue
        values = pl.col(label).drop_nulls().cast(pl.Float64)
        if metric.summary == "gm":
            values = values.clip(lower_bound=MIN_GEO_MEAN).log()
        total = values.cum_sum().last() / pl.col(label).count()
        sums.append((total.exp() if metric.summary == "gm" else total).alias(label))
    if not sums:
        return means
    found = ordered.group_by(by, maintain_order=True).agg(sums) if by else ordered.select(sums)
    replaced = [name for name in found.columns if name not in by]
    if not by:
        return means.with_columns(found.select(replaced).to_series(i) for i in range(len(replaced)))
    kept = means.drop(replaced)
    return kept.join(found, on=by, how="left", nulls_equal=True).select(means.columns)


def _warn_about_ties(
    args: argparse.Namespace, per_query: pl.DataFrame, by: list[str]
) -> pl.DataFrame:
    """Evaluate's TieWarning for the command (``--tie-warning``: evaluate's ``tie_warning=``).

    The tie ranges come from evaluate's own pass (``keep_tie_ranges=True``); the rule is
    :func:`~polars_rankeval._engine.tie_bounds.warn_about_ties`'s, as for ``evaluate``.
    """
    return warn_about_ties(per_query, by, limit=args.tie_warning)


def _table_options(args: argparse.Namespace) -> dict[str, Any]:
    """The table flags (``--train`` ... ``--group-target``) as evaluate's keywords.

    A ``--catalog`` that is a number is a size.
    """
    catalog: object = args.catalog
    if isinstance(catalog, str) and catalog.isdigit():
        catalog = int(catalog)
    return {
        "train": args.train,
        "items": args.items,
        "catalog": catalog,
        "groups": args.groups,
        "group_target": args.group_target,
    }


def _tables(
    args: argparse.Namespace, data: pl.LazyFrame, names: dict[str, Any], by: list[str]
) -> Tables:
    columns = make_columns(**names, by=by or None)
    long, _ = maybe_from_lists(data, columns)  # per-user lists: the keys of the long format
    return make_tables(long.collect_schema(), columns, **_table_options(args))


def _cut(
    args: argparse.Namespace, data: pl.LazyFrame, names: dict[str, Any], by: list[str]
) -> pl.LazyFrame:
    """The lists as evaluated (``-M``, ``-J``), for the relstrings: the engine's own cut."""
    cut = Cut(getattr(args, "max_docs", None), getattr(args, "judged_only", False))
    columns = make_columns(**names, by=by or None)
    return cut_lists(data, columns, cut, nan_last=args.nan_scores == "last")


def _runid(args: argparse.Namespace, per_query: pl.DataFrame, query: str) -> str:
    """trec_eval's runid: the run tag of the last evaluated query (the 6th field of a line)."""
    if not args.qrels:
        return Path(args.path).stem
    tags = read_trec_run(args.path, tag=True).select("query", "tag").collect()
    by_query = dict(zip(tags["query"], tags["tag"], strict=True))
    evaluated = [str(name) for name in per_query[query] if str(name) in by_query]
    # With -c the last query may have no run lines; trec_eval then names the run's first.
    tag = by_query[evaluated[-1]] if evaluated else tags["tag"][0]
    return str(tag or "")


def _relstrings(
    data: pl.LazyFrame, name: str, names: dict[str, Any], keys: list[str]
) -> dict[tuple[object, ...], str]:
    """trec_eval's relstring per query: one character per retrieved item, in rank order.

    The label's digit (``>`` above 9), ``-`` for an item not in the qrels, ``.`` for a pooled
    but unjudged one (negative label); the first ``relstring_N`` items (10 by default).
    """
    length = int(name.rpartition("_")[2]) if name != "relstring" else 10
    score, item, relevance = names["score"], names["item"], names["relevance"]
    label = pl.col(relevance)
    char = (
        pl.when(label.is_null())
        .then(pl.lit("-"))
        .when(label < 0)
        .then(pl.lit("."))
        .when(label > _DIGITS)
        .then(pl.lit(">"))
        .otherwise(label.cast(pl.Int64).cast(pl.String))
    )
    # Each list's first items in trec_eval's order (score, then item, descending): a top-k per
    # list, sorted, took half the time of sorting every row (0.27 s against 0.51 s on 17 runs
    # of 100 topics x 1,000 documents).
    first = (
        pl.struct(score, item, char.alias("char"))
        .top_k_by([score, item], k=length)
        .sort(descending=True)
        .struct.field("char")
    )
    strings = (
        data.filter(pl.col(score).is_not_null())
        .group_by(keys)
        .agg(first.str.join("").alias("__rke_relstring"))
        .collect()
    )
    return {row[:-1]: row[-1] for row in strings.iter_rows()}


def _per_query(
    args: argparse.Namespace, data: pl.LazyFrame, by: list[str], metrics: list[str | Metric]
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """``evaluate(per_query=True)`` with the options of the command, and the column names.

    Nothing evaluated is an error saying why (the reason of the ``EmptyEvaluationWarning``).
    """
    names: dict[str, Any] = {role: getattr(args, role) or role for role in _COLUMN_ROLES}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", EmptyEvaluationWarning)
        # Per query once; the summary is computed from it (no second pass over the log).
        per_query = evaluate_frame(
            data,
            metrics,
            per_query=True,
            by=by or None,
            relevance_level=args.relevance_level,
            ties=args.ties,
            convention=args.convention,
            missing_queries="zero" if args.complete else None,
            duplicates=args.duplicates,
            nan_scores=args.nan_scores,
            empty_queries=args.empty_queries,
            depth=getattr(args, "max_docs", None),
            judged_only=getattr(args, "judged_only", False),
            **_table_options(args),
            raw=True,
            # the ranges for the warning (compare: for its flags) unless --tie-warning off
            keep_tie_ranges=getattr(args, "tie_warning", 0.01) is not None,
            n_buckets=args.buckets,
            progress=False if args.no_progress else None,
            spill_dir=args.spill_dir,
            **names,
        ).collect()
    reasons = []
    for warning in caught:
        if issubclass(warning.category, EmptyEvaluationWarning):
            reasons.append(str(warning.message))
        else:
            warnings.warn_explicit(
                warning.message, warning.category, warning.filename, warning.lineno
            )
    if per_query.is_empty():
        if not reasons:
            # One unbounded pass (--buckets 1) returns the empty result without the warning;
            # the library's own check still says why.
            columns = make_columns(**names, by=by or None)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", EmptyEvaluationWarning)
                warn_if_empty(per_query, data, columns)
            reasons = [str(warning.message) for warning in caught]
        _nothing_evaluated(args, reasons)
    return per_query, names


def _nothing_evaluated(args: argparse.Namespace, reasons: list[str]) -> NoReturn:
    # The warning reads "no query was evaluated (why); the result is empty ...": keep the why.
    reason = reasons[0].split("; the result is empty")[0] if reasons else "no query was evaluated"
    if "the input has no rows" in reason:
        msg = f"{args.path!r} is empty: it has no rows"
    elif args.qrels and "'score' column is entirely null" in reason:
        msg = (
            f"{reason}: the run has no scores; were the run and the qrels given the other way "
            "round?"
        )
    elif args.qrels:
        msg = f"{reason}: do the run and the qrels use the same query ids?"
    else:
        msg = reason
    raise CliError(msg)
