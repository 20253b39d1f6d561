"""The expression path: a metric as an aggregation inside ``group_by(...).agg(...)``.

Each group is evaluated **query by query**, with the same plan, settings, checks and query
selection as :func:`~polars_rankeval.evaluate`, and gives the mean over its evaluated queries
(the ``num_*`` counts are summed). So ``group_by("system")`` gives the per-system mean and
``group_by("query")`` the per-query value; ``query=None`` makes each group one ranked list.

How: the expression packs the group's rows into one list per group (``implode``); one Python
call receives the lists of all groups, turns them back into a long frame keyed by the group's
position, and runs the frame-level plan with that position as a ``by`` key. There is no second
implementation of any metric, so the two paths cannot drift apart.
"""

from __future__ import annotations

from typing import Any

import polars as pl
import polars.selectors as cs

from polars_rankeval._engine.columns import check_schema, make_columns
from polars_rankeval._engine.context import Ties
from polars_rankeval._engine.plan import HAS_RELEVANT, finish_all, per_query_plan
from polars_rankeval._engine.settings import EmptyQueries, MissingQueries, settings_for
from polars_rankeval._engine.summary import summary_of
from polars_rankeval._engine.tables import make_tables
from polars_rankeval._engine.validation import INTERNAL, Duplicates, NanScores
from polars_rankeval._names.registry import MetricRequest, resolve_metrics
from polars_rankeval.conventions import ConventionName, NegativeLabels, Unretrieved
from polars_rankeval.errors import ColumnNotFoundError, InvalidOptionError
from polars_rankeval.metrics._base import Metric

IntoExpr = str | pl.Expr

_GROUP = INTERNAL + "group"
_ROWS = INTERNAL + "rows"
_ONE_LIST = INTERNAL + "query"


def _field(role: str, value: object, taken: set[str]) -> tuple[pl.Expr, str]:
    """The struct field carrying one role's column, and the name it will have.

    A column name becomes a selector that may match nothing, so a missing column reaches our
    own check (with our message) instead of failing inside Polars' planner.
    """
    if isinstance(value, str):
        return cs.by_name(value, require_all=False).as_expr(), value
    if isinstance(value, pl.Expr):
        # The expression's own name shows in messages; the role's name if that one is taken.
        name = value.meta.output_name(raise_if_undetermined=False) or role
        for candidate in (name, role, INTERNAL + role):
            if candidate not in taken:
                name = candidate
                break
        return value.alias(name), name
    msg = f"option {role}= must be a column name or a polars expression, got {value!r}"
    raise InvalidOptionError(msg)


def _missing_column(role: str, name: str) -> ColumnNotFoundError:
    # Only the columns the expression asked for reach it, so there is no list to show.
    if role == "query":
        return ColumnNotFoundError(
            f"column {name!r} (option query=) is not in the frame: pass query= naming the "
            "query id column, so that each query of a group is ranked separately, or "
            "query=None if each group is one ranked list"
        )
    return ColumnNotFoundError(
        f"column {name!r} (option {role}=) is not in the frame: pass {role}= naming the "
        f"{role} column"
    )


def metric_expr(
    metric: str | Metric | MetricRequest,
    *,
    relevance: IntoExpr = "relevance",
    score: IntoExpr = "score",
    item: IntoExpr = "item",
    query: IntoExpr | None = "query",
    relevance_level: int | None = None,
    missing_queries: MissingQueries | None = None,
    ties: Ties | None = None,
    convention: ConventionName = "trec_eval",
    negative_labels: NegativeLabels | None = None,
    unretrieved: Unretrieved | None = None,
    duplicates: Duplicates | None = None,
    nan_scores: NanScores | None = None,
    empty_queries: EmptyQueries | None = None,
    train: object = None,
    items: object = None,
    catalog: object = None,
    groups: object = None,
    group_target: object = None,
) -> pl.Expr:
    """One metric as an aggregation: the mean over each group's evaluated queries.

    Inside ``group_by(keys).agg(...)`` every group is split by ``query`` into ranked lists,
    evaluated exactly as :func:`~polars_rankeval.evaluate` evaluates them (same settings,
    checks and query selection), and averaged (``num_*`` counts are summed). A group with no
    evaluated query gives null (counts: 0). In ``select`` the whole frame is one group.

    Parameters
    ----------
    metric
        One metric string (``"ndcg@10"``) or Metric object; a cutoff sweep is refused (one
        expression gives one column).
    relevance, score, item, query
        Column names or expressions. ``query=None`` means each group is one ranked list.
    relevance_level, missing_queries, ties, convention, negative_labels, unretrieved, duplicates, nan_scores, empty_queries
        As in :func:`~polars_rankeval.evaluate`; with ``empty_queries="drop"`` a group's lists
        with nothing relevant are left out of its mean (no warning: there is no count to
        report inside an aggregation).
    train, items, catalog, groups, group_target
        The extra tables of the beyond-accuracy and fairness metrics, as in
        :func:`~polars_rankeval.evaluate`. Per-system metrics (coverage, Gini, GAUC ...) are
        refused here: use ``evaluate(..., by=...)``.

    Returns
    -------
    pl.Expr
        Named after the metric, e.g. ``ndcg@10``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "system": ["a", "a", "a", "a", "b", "b"],
    ...         "query": [1, 1, 2, 2, 1, 2],
    ...         "item": ["x", "y", "x", "y", "x", "x"],
    ...         "score": [0.9, 0.8, 0.7, 0.6, 0.5, 0.4],
    ...         "relevance": [0, 1, 1, 0, 1, 1],
    ...     }
    ... )
    >>> # System a: query 1 finds its relevant item at rank 2, query 2 at rank 1.
    >>> log.group_by("system").agg(rke.metric_expr("mrr")).sort("system")
    shape: (2, 2)
    ┌────────┬──────┐
    │ system ┆ mrr  │
    │ ---    ┆ ---  │
    │ str    ┆ f64  │
    ╞════════╪══════╡
    │ a      ┆ 0.75 │
    │ b      ┆ 1.0  │
    └────────┴──────┘
    """  # noqa: E501
    preset, settings = settings_for(convention, locals())
    resolved = resolve_metrics([metric], preset)
    if len(resolved) != 1:
        msg = (
            f"an expression gives one column, but {metric!r} names {len(resolved)} metrics; "
            "use one expression per cutoff"
        )
        raise InvalidOptionError(msg)
    label, chosen = resolved[0]
    if chosen.level == "system":
        msg = (
            f"{label!r} is a per-system metric (one value over a whole run, not a mean over "
            "ranked lists), so it has no expression form; use "
            f"rke.evaluate(frame, [{label!r}], by=<your group columns>) instead"
        )
        raise InvalidOptionError(msg)
    if any(row_input.table == "subtopics" for row_input in chosen.inputs):
        msg = (
            f"{label!r} reads each item's subtopic judgments (a 'subtopics' column), which an "
            "expression's columns do not carry; use "
            f"rke.evaluate(frame, [{label!r}], by=<your group columns>) instead"
        )
        raise InvalidOptionError(msg)
    roles: dict[str, object] = {"relevance": relevance, "score": score, "item": item}
    if query is not None:
        roles["query"] = query
    taken = {value for value in roles.values() if isinstance(value, str)}
    fields, names = [], {}
    for role, value in roles.items():
        field, names[role] = _field(role, value, taken)
        taken.add(names[role])
        fields.append(field)
    # Column roles must differ (checked once, when the expression is built).
    columns = make_columns(
        query=names.get("query", _ONE_LIST),
        item=names["item"],
        score=names["score"],
        relevance=names["relevance"],
        by=[_GROUP],
    )

    group_table = groups  # the closure's argument below is also called groups

    def evaluate_groups(groups: pl.Series) -> pl.Series:
        long = (
            groups.rename(_ROWS)
            .to_frame()
            .with_row_index(_GROUP)
            .explode(_ROWS, empty_as_null=False)
            .unnest(_ROWS)
        )
        for role, name in names.items():
            if name not in long.columns:
                raise _missing_column(role, name)
        if query is None:
            long = long.with_columns(pl.lit(0).alias(_ONE_LIST))
        check_schema(long.schema, columns)
        tables = make_tables(
            long.schema,
            columns,
            train=train,
            items=items,
            catalog=catalog,
            groups=group_table,
            group_target=group_target,
        )
        plan = per_query_plan(
            long.lazy(), columns, resolved, settings, checked_in="agg", tables=tables
        )
        plan = finish_all(plan.collect().lazy(), resolved, columns.partition, tables)
        if settings.empty_queries == "drop":
            plan = plan.filter(pl.col(HAS_RELEVANT)).drop(HAS_RELEVANT)
        combined = summary_of(label, chosen)
        if chosen.summary == "nanmean":
            # A group of one query is that query's value: NaN stays NaN (undefined), where a
            # mean over no defined value would be null.
            combined = pl.when(pl.len() == 1).then(pl.col(label).first()).otherwise(combined)
        means = plan.group_by(_GROUP).agg(combined.alias(label)).collect()
        every_group = pl.DataFrame({_GROUP: pl.arange(0, len(groups), eager=True)})
        values = every_group.join(means, on=_GROUP, how="left", coalesce=True)[label]
        if chosen.summary == "sum":
            values = values.fill_null(0)  # a sum over no query is 0, as in evaluate
        return values.cast(dtype)  # type: ignore[no-any-return]

    dtype = pl.Int64 if chosen.summary == "sum" else pl.Float64
    packed = pl.struct(fields).implode()
    # Element-wise over the groups' lists: one value per group, any batch of groups at once.
    return packed.map_batches(evaluate_groups, return_dtype=dtype, is_elementwise=True).alias(label)


def _refuse_frame_options(options: dict[str, Any]) -> None:
    """Keywords of ``evaluate`` that have no meaning inside ``group_by().agg()``."""
    advice = {
        "by": "put the columns in group_by(...) instead",
        "per_query": "group_by the query column (and any run columns) instead",
        "n_buckets": "the expression runs on the rows Polars hands it; use evaluate() for "
        "bounded memory",
        "progress": "use evaluate() for a progress bar",
        "engine": "choose the engine when you collect the frame",
    }
    for option, why in advice.items():
        if option in options:
            msg = f"option {option}= does not apply inside group_by().agg(): {why}"
            raise InvalidOptionError(msg)
