"""Why do two numbers differ? :func:`explain` attributes a metric's difference to its settings.

Two tools give the same metric name two numbers on the same run: a discount offset, exponential
against linear gain, the ideal list's cutoff, tie order, which queries are averaged, queries with
nothing relevant, the relevance level, the scores' precision. Each tool's definition is a preset
here, so the difference can be taken apart: the metric is evaluated under every mix of the two
setups' differing settings and each setting gets its share (:mod:`._attribute`). A side given
as the other tool's numbers (per query, or the mean it printed) is first matched to the setup
that reproduces them (:mod:`._search`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from polars_rankeval._engine.columns import as_polars
from polars_rankeval.attribution._attribute import Columns, attribute, differing
from polars_rankeval.attribution._report import Explanation, causes_frame
from polars_rankeval.attribution._search import Distance, Target, as_target, identify
from polars_rankeval.attribution._setup import Setup, resolve
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    DuplicateItemError,
    InvalidOptionError,
)

__all__ = ["Explanation", "explain"]

Side = str | Mapping[str, Any] | float | object


def explain(
    data: object,
    metric: str,
    a: Side = "trec_eval",
    b: Side = None,
    *,
    top: int = 10,
    tolerance: float | None = None,
    train: object = None,
    items: object = None,
    catalog: object = None,
    groups: object = None,
    group_target: object = None,
    query: str = "query",
    item: str = "item",
    score: str = "score",
    relevance: str = "relevance",
) -> Explanation:
    """Say why ``metric`` differs between two setups, setting by setting and query by query.

    Parameters
    ----------
    data
        The log of one system (one row per (query, item); a null score is a judged item that
        was not retrieved): a DataFrame, LazyFrame (collected), pandas DataFrame or Arrow
        table. Evaluate systems one at a time: filter the log to one.
    metric
        One metric, in any dialect ``evaluate`` reads: ``"ndcg@10"``, ``"nDCG@10"``, ``"P_10"``.
    a, b
        The two sides. Each is a convention name (``"trec_eval"``, ``"gdeval"``,
        ``"torchmetrics"`` ...), a mapping of settings (``{"convention": "trec_eval",
        "gain": "exp"}``; without ``"convention"`` it starts from trec_eval's), or the other
        tool's result: a per-query table (the query column and one value column) or the mean it
        printed (a float), which ``explain`` first matches to the setup that reproduces it.
        A setting is an ``evaluate`` keyword (``relevance_level``, ``missing_queries``,
        ``empty_queries``, ``ties``, ``negative_labels``, ``unretrieved``, ``depth``,
        ``judged_only``, and ``unlabelled``, which only presets set), an option of the metric
        (``gain``, ``discount``, ``ideal``, ``ideal_cutoff`` ... for ndcg), or one of two
        settings of the input: ``flatten`` (True: every query's rows ranked as one list, as
        torchmetrics' functional metrics rank a 2-D batch) and ``score_precision`` (scores
        rounded before ranking: ``"float32"`` or a number of decimals).
    top
        How many of the queries that move most the report shows (``per_query`` has them all).
    tolerance
        How close a setup must come to a side given as numbers; by default half a unit of the
        last digit printed (``0.5371`` matches to ``5e-05``), with at least 4 decimals (a
        float keeps no trailing zeros: ``1.0`` is read as ``1.0000``). Pass it for a tool
        that prints fewer digits (``tolerance=0.005`` for two).
    train, items, catalog, groups, group_target
        The extra tables the metric reads, as ``evaluate`` takes them (novelty, coverage,
        diversity, fairness ...).
    query, item, score, relevance
        Column names.

    Returns
    -------
    Explanation
        ``str()`` of it is a one-screen report; ``causes`` and ``per_query`` are frames.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": ["q1", "q1", "q1", "q2", "q2"],
    ...         "item": ["a", "b", "c", "a", "b"],
    ...         "score": [3.0, 2.0, 1.0, 2.0, 1.0],
    ...         "relevance": [1, 3, 0, 2, 1],
    ...     }
    ... )
    >>> why = rke.explain(log, "ndcg@3", "trec_eval", "gdeval")
    >>> why.causes.select("setting", "a", "b", "effect").with_columns(pl.col("effect").round(4))
    shape: (2, 4)
    ┌───────────────┬────────┬──────┬─────────┐
    │ setting       ┆ a      ┆ b    ┆ effect  │
    │ ---           ┆ ---    ┆ ---  ┆ ---     │
    │ str           ┆ str    ┆ str  ┆ f64     │
    ╞═══════════════╪════════╪══════╪═════════╡
    │ gain          ┆ linear ┆ exp  ┆ -0.0434 │
    │ empty_queries ┆ zero   ┆ drop ┆ 0.0     │
    └───────────────┴────────┴──────┴─────────┘
    >>> # gdeval's exponential gain lowers q1; both queries have a relevant item, so gdeval's
    >>> # rule for queries without one (left out, not 0) moves nothing here
    """
    if b is None:
        msg = "explain: give the second side b= (a convention, a mapping of settings, or numbers)"
        raise InvalidOptionError(msg)
    _check_top(top)
    frame = _collected(data)
    tables = {
        name: table
        for name, table in (
            ("train", train),
            ("items", items),
            ("catalog", catalog),
            ("groups", groups),
            ("group_target", group_target),
        )
        if table is not None
    }
    columns = Columns(query, item, score, relevance, tables)
    for option, name in (("query", query), ("item", item), ("score", score)):
        if name not in frame.columns:
            msg = f"explain: no column {name!r} ({option}=) in data; its columns: "
            raise ColumnNotFoundError(msg + ", ".join(frame.columns))
    if relevance not in frame.columns:
        msg = f"explain: no column {relevance!r} (relevance=) in data; its columns: "
        raise ColumnNotFoundError(msg + ", ".join(frame.columns))
    if not frame.schema[score].is_numeric():
        # score_precision= rounds scores before evaluate would check them
        msg = f"explain: the score column {score!r} must be numeric, got {frame.schema[score]}"
        raise ColumnTypeError(msg)
    target_a = as_target(a, metric, query, tolerance)
    target_b = as_target(b, metric, query, tolerance)
    try:
        setup_a, found_a, also_a = _side(frame, metric, a, target_a, columns)
        setup_b, found_b, also_b = _side(frame, metric, b, target_b, columns)
        names = differing(setup_a, setup_b)
        given = (target_a is None, target_b is None)
        parts = attribute(frame, setup_a, setup_b, columns, names, given=given)
    except DuplicateItemError as error:
        if "several runs" not in str(error):
            raise
        # evaluate's hint (by='system') is not explain's: it explains one system at a time
        first = str(error).split(" Each item", 1)[0]
        msg = (
            f"explain: {first} The table looks like several runs: explain takes one system's "
            "log, e.g. data.filter(pl.col('system') == 'bm25') (command line: --by system "
            "--system bm25)"
        )
        raise DuplicateItemError(msg) from None
    per_query = parts.per_query
    if per_query is not None:
        per_query = per_query.sort(
            pl.col("difference").abs(), descending=True, nulls_last=True, maintain_order=True
        )
    return Explanation(
        metric=metric,
        setup_a=setup_a,
        setup_b=setup_b,
        value_a=parts.value_a,
        value_b=parts.value_b,
        causes=causes_frame(
            parts.groups,
            setup_a,
            setup_b,
            effects=parts.effects,
            alone=parts.alone,
            moved=parts.moved,
            difference=parts.value_b - parts.value_a,
        ),
        per_query=per_query,
        target_a=None if target_a is None else target_a.what,
        target_b=None if target_b is None else target_b.what,
        residual_a=None if found_a is None else found_a.error,
        residual_b=None if found_b is None else found_b.error,
        unmatched_a=None if found_a is None else found_a.unmatched,
        unmatched_b=None if found_b is None else found_b.unmatched,
        tolerance_a=None if target_a is None else target_a.tolerance,
        tolerance_b=None if target_b is None else target_b.tolerance,
        also_a=tuple(also_a),
        also_b=tuple(also_b),
        top=top,
    )


def _side(
    frame: pl.DataFrame, metric: str, side: Side, target: Target | None, columns: Columns
) -> tuple[Setup, Distance | None, list[str]]:
    if target is None:
        assert isinstance(side, (str, Mapping))
        return resolve(side, metric), None, []
    setup, found, also = identify(frame, metric, target, columns)
    return setup, found, also


def _collected(data: object) -> pl.DataFrame:
    frame = as_polars(data)
    return frame.collect() if isinstance(frame, pl.LazyFrame) else frame


def _check_top(top: object) -> None:
    if isinstance(top, bool) or not isinstance(top, int) or top < 0:
        msg = f"explain: top= must be a whole number >= 0, got {top!r}"
        raise InvalidOptionError(msg)
