"""The shared input stage of every fairness measure: ranked rows, their groups, the target.

Two roads lead to the same :class:`~polars_rankeval.fairness._frame.FairInput`:

* inside :func:`~polars_rankeval.evaluate`, a fairness metric's partial is the list's ranked
  rows (:func:`hidden_rows`, ranked by the engine with every evaluation option applied), and its
  finishing step turns the per-query frame into a FairInput (:func:`from_hidden`);
* :func:`~polars_rankeval.expected_exposure` and :func:`~polars_rankeval.group_exposure` read
  a log that may hold several sampled rankings per query (``sample=``) and rank each one with
  the same rule (:func:`fair_input`).

Both then join the items' groups (:mod:`polars_rankeval.fairness._groups`) and the target
shares, so a measure sees the same frame whichever road it came by.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from polars_rankeval._engine.columns import as_polars
from polars_rankeval._engine.context import RankingContext, trec_key
from polars_rankeval._engine.tables import Tables, group_tables, missing_table, refuse_rows
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    InvalidOptionError,
)
from polars_rankeval.fairness._frame import (
    GROUP,
    ITEM,
    JUDGED,
    LABEL,
    NUM_REL,
    RANK,
    RELEVANT,
    SAMPLE,
    SHARE,
    FairInput,
    N,
)
from polars_rankeval.fairness._groups import GroupTable, read_groups, resolve_target

_ROWS = "rows"


@dataclass(frozen=True)
class GroupInputs:
    """The groups table in canonical form and ``group_target=`` as given."""

    table: GroupTable
    target: object  # None, "population", "uniform", a mapping, or a table


# --- inside evaluate ----------------------------------------------------------------------


def hidden_rows(ctx: RankingContext, depth: int | None) -> pl.Expr:
    """A list's ranked rows (the first ``depth``, or all), its length and relevant count.

    One struct per list: ``rows`` (item, rank, label, relevant of each retrieved row within
    ``depth``), ``n`` (rows retrieved) and ``num_rel`` (relevant judged items of the query).
    """
    assert ctx.item is not None
    row = pl.struct(
        ctx.item.alias("item"),
        ctx.rank.cast(pl.Int64).alias("rank"),
        ctx.label.cast(pl.Float64).alias("label"),
        ctx.relevant.alias("relevant"),
    )
    # unique().implode() stays on the streaming engine; rows are unique within a list
    rows = row.filter(ctx.within(depth)).unique().implode()
    return pl.struct(
        rows.alias(_ROWS),
        ctx.retrieved.sum().cast(pl.Int64).alias("n"),
        ctx.num_rel.max().cast(pl.Int64).alias("num_rel"),
    )


def from_hidden(
    frame: pl.LazyFrame,
    keys: Sequence[str],
    label: str,
    tables: Tables,
    *,
    dimension: str | None,
) -> FairInput:
    """The FairInput of a fairness metric's finishing step (its hidden value in ``label``)."""
    keys = list(keys)
    lists = frame.select(*keys, pl.col(label).alias("__h")).filter(pl.col("__h").is_not_null())
    rows = (
        lists.select(
            *keys,
            pl.col("__h").struct.field(_ROWS).alias(_ROWS),
            pl.col("__h").struct.field("n").alias(N),
            pl.col("__h").struct.field("num_rel").alias(NUM_REL),
        )
        .explode(_ROWS)
        .filter(pl.col(_ROWS).is_not_null())
        .select(
            *keys,
            pl.lit(0, dtype=pl.Int64).alias(SAMPLE),
            pl.col(_ROWS).struct.field("rank").alias(RANK),
            N,
            pl.col(_ROWS).struct.field("item").alias(ITEM),
            pl.col(_ROWS).struct.field("label").alias(LABEL),
            pl.col(_ROWS).struct.field("relevant").alias(RELEVANT),
            NUM_REL,
            # evaluate hands over only the lists it evaluates
            pl.lit(value=True).alias(JUDGED),
        )
    )
    inputs = group_inputs(tables, label)
    query = keys[-1]
    return assemble(rows, keys, inputs, dimension=dimension, query=query, metric=label)


def group_inputs(tables: Tables, metric: str) -> GroupInputs:
    """The evaluation's groups in canonical form, or the missing-table error naming the metric."""
    if tables.groups is None:
        raise missing_table("groups", metric)
    table = tables.cache.get("groups")
    if not isinstance(table, GroupTable):  # read once per evaluation, for every metric and pass
        table = read_groups(tables.groups, tables.item)
        tables.cache["groups"] = table
    return GroupInputs(table, tables.group_target)


def assemble(
    rows: pl.LazyFrame,
    keys: list[str],
    inputs: GroupInputs,
    *,
    dimension: str | None,
    query: str,
    metric: str,
) -> FairInput:
    """Join the ranked rows to their groups and every list to the target shares."""
    table = inputs.table
    dimensions = table.chosen(dimension, metric)
    cells = table.cells(dimensions)
    joined = rows.join(cells, on=ITEM, how="left")
    target = resolve_target(inputs.target, table, dimensions, query, metric)
    universe = sorted(set(table.universe(dimensions)) | set(target.frame[GROUP].to_list()))
    lists = rows.select(keys).unique()
    if target.query is None:
        shares = lists.join(target.frame.lazy(), how="cross")
    else:
        shares = _per_query_shares(lists, keys, target.frame, target.query, query)
    population = table.population(dimensions)
    return FairInput(joined, keys, universe, shares.select(*keys, GROUP, SHARE), population)


def _per_query_shares(
    lists: pl.LazyFrame, keys: list[str], frame: pl.DataFrame, target_query: str, query: str
) -> pl.LazyFrame:
    """Each list's query's target (a query without one is refused when read)."""
    shares = frame.rename({target_query: query}) if target_query != query else frame
    queries = shares.select(query).unique().with_columns(pl.lit(value=True).alias("__has"))
    lists = lists.with_columns(pl.col(query).cast(shares.schema[query], strict=False))

    def message(bad: pl.DataFrame) -> str:
        return (
            f"the group_target= table has no shares for query {bad[query][0]!r} (it gives a "
            "target per query, so every evaluated query needs one)"
        )

    checked = refuse_rows(
        lists.join(queries.lazy(), on=query, how="left"),
        pl.col("__has").is_null(),
        [query],
        message,
    ).drop("__has")
    return checked.join(shares.lazy(), on=query, how="inner")


# --- from a log of (sampled) rankings -----------------------------------------------------


def _column(schema: pl.Schema, name: str, option: str) -> None:
    if name not in schema:
        msg = (
            f"column {name!r} (option {option}=) is not in the log; columns present: "
            f"{list(schema.names())}"
        )
        raise ColumnNotFoundError(msg)


def fair_input(
    data: object,
    groups: object,
    *,
    group_target: object = None,
    sample: str | None = None,
    by: Sequence[str] = (),
    dimension: str | None = None,
    relevance_level: int = 1,
    query: str = "query",
    item: str = "item",
    score: str = "score",
    relevance: str | None = "relevance",
    metric: str = "fairness",
) -> FairInput:
    """A FairInput from a log holding one ranking per (``by``, query, ``sample``).

    Each ranking is ordered by the engine's rule (score descending, ties by the item's string
    form descending); a row with a null score is not ranked. ``NUM_REL`` counts the query's
    distinct items with ``relevance >= relevance_level`` over all its rankings.
    """
    lf = as_polars(data).lazy()
    schema = lf.collect_schema()
    for name, option in ((query, "query"), (item, "item"), (score, "score")):
        _column(schema, name, option)
    for name in by:
        _column(schema, name, "by")
    if sample is not None:
        _column(schema, sample, "sample")
    if not schema[score].is_numeric():
        msg = f"column {score!r} (option score=) must be numeric, got {schema[score]}"
        raise ColumnTypeError(msg)
    labels = relevance if relevance is not None and relevance in schema else None
    if labels is not None and not schema[labels].is_numeric():
        msg = f"column {labels!r} (option relevance=) must be numeric, got {schema[labels]}"
        raise ColumnTypeError(msg)
    keys = [*by, query]
    ranking = [*keys, sample] if sample is not None else keys
    label = pl.col(labels).cast(pl.Float64) if labels is not None else pl.lit(None, pl.Float64)
    relevant = ((label >= relevance_level) & (label >= 0)).fill_null(value=False)

    def duplicate(bad: pl.DataFrame) -> str:
        row = bad.row(0, named=True)
        where = ", ".join(f"{k}={row[k]!r}" for k in ranking)
        return (
            f"item {row[item]!r} appears more than once in the ranking of {where}: each "
            "ranking holds an item once"
            + (" (several sampled rankings per query need sample=)" if sample is None else "")
        )

    lf = refuse_rows(lf, pl.len().over([*ranking, item]) > 1, [*ranking, item], duplicate)
    retrieved = pl.col(score).is_not_null()
    key = trec_key(pl.col(score), pl.col(item))
    rows = lf.select(
        *keys,
        # any id type: the measures only group by it and count the distinct ones
        (
            pl.col(sample).rank("dense").over(keys).cast(pl.Int64)
            if sample is not None
            else pl.lit(0, pl.Int64)
        ).alias(SAMPLE),
        pl.when(retrieved)
        .then(key.rank("ordinal", descending=True).over(ranking))
        .cast(pl.Int64)
        .alias(RANK),
        retrieved.sum().over(ranking).cast(pl.Int64).alias(N),
        pl.col(item).cast(pl.String).alias(ITEM),
        label.alias(LABEL),
        relevant.alias(RELEVANT),
        pl.col(item).filter(relevant).n_unique().over(keys).cast(pl.Int64).alias(NUM_REL),
        (label >= 0).fill_null(value=False).any().over(keys).alias(JUDGED),
    )
    rows = rows.filter(pl.col(RANK).is_not_null())
    groups_frame, target = group_tables(groups, group_target, item, schema[item])
    if groups_frame is None:
        msg = f"{metric} needs groups= (each item's groups)"
        raise InvalidOptionError(msg)
    inputs = GroupInputs(read_groups(groups_frame, item), target)
    return assemble(rows, keys, inputs, dimension=dimension, query=query, metric=metric)
