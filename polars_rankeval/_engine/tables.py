"""The extra tables some metrics read, and the one place they enter the evaluation.

Beyond-accuracy recommender metrics need more than the ranked log:

* ``train=``: past interactions, one row per (user, item) event, with the log's query and
  item column names (popularity, novelty, "unseen" share, long tail, serendipity);
* ``items=``: one row per item with feature columns, an embedding (List/Array) column or a
  category column (diversity);
* ``catalog=``: the item universe, a frame with the item column or just its size (coverage,
  catalog-wide Gini);
* ``groups=``: each item's groups in one or several dimensions, with ``group_target=`` the
  target shares (fairness of exposure; read by :mod:`polars_rankeval.fairness._groups`).

Each may be a polars DataFrame or LazyFrame, a pandas DataFrame or pyarrow Table, or a path
(Parquet, CSV, NDJSON; a directory of Parquet files). They are read lazily: only the columns
and aggregates the chosen metrics use are computed, inside the evaluation's own query.

Metrics say which tables they need (:attr:`Metric.needs`) and which per-row columns they read
from them (:attr:`Metric.inputs`, :class:`RowInput`); :func:`join_inputs` adds those columns to
the log before ranking, once per distinct input however many metrics read it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import polars as pl

from polars_rankeval._engine.columns import Columns, as_polars
from polars_rankeval._engine.warn import user_site, warn_at
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    ColumnValueError,
    InvalidOptionError,
    UnusedTableWarning,
)

TableName = Literal["train", "items", "catalog", "subtopics", "groups", "group_target"]

#: The evaluation keywords that hold extra tables (forwarded as they are by compare, bootstrap ...).
TABLE_KEYWORDS = ("train", "items", "catalog", "groups", "group_target")

TABLE_HELP: dict[str, str] = {
    "train": "train= (past interactions: one row per (user, item) event, with the log's query "
    "and item columns)",
    "items": "items= (one row per item: the item column plus feature columns, an embedding "
    "list/array column or a category column)",
    "catalog": "catalog= (the item universe: a frame with the item column, or its size as an int)",
    "groups": "groups= (each item's groups: the item column plus one column per dimension, "
    "or the long layout item, dimension, group, weight) and optionally group_target= (the "
    "target shares)",
    "group_target": "group_target= (the target share of each group)",
    "subtopics": "a log with a 'subtopics' column (rke.join_run_qrels(run, "
    "rke.read_trec_qrels(path, subtopics=True)))",
}

# Per-row columns the train table gives the log (joined on the item, or on (query, item)).
TRAIN_USERS = "__rke_train_users"  # distinct train users of the item (0 if absent)
TRAIN_COUNT = "__rke_train_count"  # train rows (interactions) of the item (0 if absent)
TRAIN_N_USERS = "__rke_train_n_users"  # distinct users in train
TRAIN_N_ROWS = "__rke_train_n_rows"  # rows (interactions) in train
TRAIN_N_ITEMS = "__rke_train_n_items"  # distinct items in train
SEEN = "__rke_seen"  # the (query, item) pair occurs in train
# The catalog size's column (prefixed: a short name could be a user's by= column).
CATALOG_N = "__rke_n"

Source = object  # a frame, a path, or a catalog size: checked by read_table


class MissingTableError(InvalidOptionError):
    """A metric needs a table (``train=``, ``items=``, ``catalog=``) that was not given."""


@dataclass(frozen=True)
class Tables:
    """The extra tables of one evaluation, as LazyFrames with the log's key names.

    ``query`` and ``item`` are the log's column names; the train table uses both, the items
    and catalog tables the item column.
    """

    query: str = "query"
    item: str = "item"
    train: pl.LazyFrame | None = None
    items: pl.LazyFrame | None = None
    catalog: pl.LazyFrame | None = None
    catalog_size: int | None = None
    # fairness: the groups table (keyed by the log's item column) and group_target= as given
    # (a path read as a table); polars_rankeval.fairness._groups puts them in canonical form
    groups: pl.LazyFrame | None = None
    group_target: object = None
    # what a reader of these tables computed once for every metric (the groups' canonical form)
    cache: dict[str, object] = field(default_factory=dict, compare=False, repr=False)

    def require(self, name: TableName, metric: str) -> pl.LazyFrame:
        """The table, or a :class:`MissingTableError` naming the metric and the keyword."""
        table = getattr(self, name)
        if table is None:
            raise missing_table(name, metric)
        return table  # type: ignore[no-any-return]

    def has(self, name: TableName) -> bool:
        """Whether the table was given (the catalog as a frame or as a size)."""
        if name == "catalog":
            return self.catalog is not None or self.catalog_size is not None
        return getattr(self, name) is not None

    def catalog_items(self, metric: str) -> pl.LazyFrame:
        """The number of catalog items, as a one-row frame with column ``CATALOG_N``."""
        if self.catalog_size is not None:
            return pl.LazyFrame({CATALOG_N: [self.catalog_size]}, schema={CATALOG_N: pl.Int64})
        catalog = self.require("catalog", metric)
        return catalog.select(pl.col(self.item).n_unique().cast(pl.Int64).alias(CATALOG_N))


def missing_table(name: TableName, metric: str) -> MissingTableError:
    """The error for a metric whose table is missing."""
    guide = (
        "the fairness guide (docs/pages/guides/fairness.md)"
        if name in ("groups", "group_target")
        else "the recommender evaluation guide (docs/pages/guides/recommender.md)"
    )
    msg = f"metric {metric!r} needs the {name} table: pass {TABLE_HELP[name]}; see {guide}"
    return MissingTableError(msg)


def _scan_path(path: str | os.PathLike[str], option: str) -> pl.LazyFrame:
    """A lazy scan of a table file by its suffix (a directory is read as Parquet)."""
    location = Path(path)
    if not location.exists():
        msg = f"option {option}=: no file or directory {str(location)!r}"
        raise InvalidOptionError(msg)
    suffix = location.suffix.lower()
    if location.is_dir() or suffix in (".parquet", ".pq"):
        return pl.scan_parquet(location)
    if suffix in (".csv", ".tsv"):
        return pl.scan_csv(location, separator="\t" if suffix == ".tsv" else ",")
    if suffix in (".ndjson", ".jsonl"):
        return pl.scan_ndjson(location)
    msg = (
        f"option {option}=: cannot tell the format of {str(location)!r}; give a .parquet, "
        ".csv, .tsv, .ndjson or .jsonl file, a directory of Parquet files, or a frame"
    )
    raise InvalidOptionError(msg)


def read_table(value: object, option: str) -> pl.LazyFrame:
    """A table given as a frame, a pandas/Arrow table, a path or a list of paths, as a LazyFrame."""
    if isinstance(value, (str, os.PathLike)):
        return _scan_path(value, option)
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(part, (str, os.PathLike)) for part in value)
    ):
        return pl.concat([_scan_path(part, option) for part in value], how="vertical_relaxed")
    return as_polars(value, option).lazy()


# A table may name its keys as the log does, or by these usual names (a log made from lists
# names its item column after the list, e.g. "recommended", while the item table says "item").
_USUAL_KEYS = {"query": ("query", "user"), "item": ("item",)}


def _key(
    table: pl.LazyFrame, option: TableName, name: str, log_dtype: pl.DataType, role: str
) -> pl.LazyFrame:
    """Check the table has the key column and make its dtype the log's (ints widen)."""
    schema = table.collect_schema()
    shown = name  # the table's own name for the key, in messages
    if name not in schema:
        usual = [key for key in _USUAL_KEYS[role] if key in schema]
        if len(usual) != 1:
            names = list(dict.fromkeys([name, *_USUAL_KEYS[role]]))
            msg = (
                f"column {name!r} ({role} key, as in the log) is not in the {option}= table; "
                f"columns present: {list(schema.names())}; name it "
                f"{' or '.join(map(repr, names))}"
            )
            raise ColumnNotFoundError(msg)
        shown = usual[0]
        table = table.rename({usual[0]: name})
    against = f"the log's {role} column ({name!r})"
    return align_key(table, name, log_dtype, option=option, against=against, shown=shown)


def align_key(
    table: pl.LazyFrame,
    name: str,
    dtype: pl.DataType,
    *,
    option: str,
    against: str,
    shown: str | None = None,
) -> pl.LazyFrame:
    """The key column ``name`` in ``dtype``, the reference table's, so joins match ids.

    The one rule for every extra table: integers of another width are cast (strictly: an id
    that does not fit fails when read), strings and categoricals meet, anything else is a
    ``ColumnTypeError`` naming both dtypes (``against`` names the reference column, ``shown``
    the table's own name for the key when it was renamed).
    """
    own = table.collect_schema()[name]
    if own == dtype:
        return table
    if own.is_integer() and dtype.is_integer():
        return table.with_columns(pl.col(name).cast(dtype, strict=True))
    if own in (pl.String, pl.Categorical) and dtype in (pl.String, pl.Categorical):
        return table.with_columns(pl.col(name).cast(dtype))
    msg = (
        f"column {shown or name!r} of the {option}= table is {own} but {against} is {dtype}; "
        "cast one of them so the ids match"
    )
    raise ColumnTypeError(msg)


_BAD = "__rke_bad_row"


def refuse_rows(
    frame: pl.LazyFrame,
    bad: pl.Expr,
    shown: list[str],
    message: Callable[[pl.DataFrame], str],
) -> pl.LazyFrame:
    """``frame`` unchanged, but collecting it raises ColumnValueError if a row is ``bad``.

    The check runs when the data is read (the frame stays lazy); ``message`` gets the bad
    rows' ``shown`` columns. The same all-true-mask device as the log's value checks.
    """

    def check(packed: pl.Series) -> pl.Series:
        rows = packed.struct.unnest().filter(pl.col(_BAD))
        if rows.height:
            raise ColumnValueError(message(rows.drop(_BAD)))
        return pl.Series(packed.name, [True] * len(packed), dtype=pl.Boolean)

    mask = pl.struct(*shown, bad.alias(_BAD)).map_batches(
        check, return_dtype=pl.Boolean, is_elementwise=True
    )
    return frame.filter(mask)


def warn_rows(
    frame: pl.LazyFrame,
    flagged: pl.Expr,
    shown: list[str],
    message: Callable[[pl.DataFrame], str],
    category: type[Warning],
) -> pl.LazyFrame:
    """``frame`` unchanged, but reading it warns (``category``) once if a row is ``flagged``.

    The warning's counterpart of :func:`refuse_rows`, for a small frame (one row per system):
    every row is read in one call, so there is one warning; it points at the user's line,
    taken now (the frame may be read later, in a Polars thread).
    """
    site = user_site()

    def check(packed: pl.Series) -> pl.Series:
        rows = packed.struct.unnest().filter(pl.col(_BAD))
        if rows.height:
            warn_at(message(rows.drop(_BAD)), category, site)
        return pl.Series(packed.name, [True] * len(packed), dtype=pl.Boolean)

    # not elementwise: one call over every row, so one warning with every flagged row
    mask = pl.struct(*shown, flagged.alias(_BAD)).map_batches(check, return_dtype=pl.Boolean)
    return frame.filter(mask)


def _one_row_per_item(items: pl.LazyFrame, item: str) -> pl.LazyFrame:
    """The items table, refusing (when read) an item with several rows."""

    def message(rows: pl.DataFrame) -> str:
        repeated = rows[item].unique().sort()
        return (
            f"the items= table must have one row per item: some items have several rows, "
            f"e.g. {repeated[0]!r}"
        )

    return refuse_rows(items, pl.len().over(item) > 1, [item], message)


def make_tables(
    log_schema: pl.Schema,
    columns: Columns,
    *,
    train: object = None,
    items: object = None,
    catalog: object = None,
    groups: object = None,
    group_target: object = None,
) -> Tables:
    """Read and check the extra tables against the log's key columns (lazily)."""
    query_dtype = log_schema[columns.query]
    item_dtype = log_schema[columns.item]
    train_frame = items_frame = catalog_frame = None
    catalog_size = None
    if train is not None:
        train_frame = read_table(train, "train")
        train_frame = _key(train_frame, "train", columns.query, query_dtype, "query")
        train_frame = _key(train_frame, "train", columns.item, item_dtype, "item")
    if items is not None:
        items_frame = _key(read_table(items, "items"), "items", columns.item, item_dtype, "item")
        items_frame = _one_row_per_item(items_frame, columns.item)
    if catalog is not None:
        if isinstance(catalog, bool) or (isinstance(catalog, int) and catalog <= 0):
            msg = f"option catalog= must be a table of items or a positive int, got {catalog!r}"
            raise InvalidOptionError(msg)
        if isinstance(catalog, int):
            catalog_size = catalog
        else:
            catalog_frame = read_table(catalog, "catalog")
            catalog_frame = _key(catalog_frame, "catalog", columns.item, item_dtype, "item")
    groups_frame, target = group_tables(groups, group_target, columns.item, item_dtype)
    return Tables(
        query=columns.query,
        item=columns.item,
        train=train_frame,
        items=items_frame,
        catalog=catalog_frame,
        catalog_size=catalog_size,
        groups=groups_frame,
        group_target=target,
    )


_TARGET_WORDS = ("population", "uniform")


def group_tables(
    groups: object, group_target: object, item: str, item_dtype: pl.DataType
) -> tuple[pl.LazyFrame | None, object]:
    """``groups=`` read and keyed by the log's item column; ``group_target=`` checked.

    A ``group_target`` path is read as a table; its content (and the groups table's) is
    checked by :mod:`polars_rankeval.fairness._groups` when a metric reads it.
    """
    is_path = isinstance(group_target, os.PathLike) or (
        isinstance(group_target, str) and group_target not in _TARGET_WORDS
    )
    if isinstance(group_target, str) and is_path and Path(group_target).suffix == "":
        msg = (
            f"option group_target={group_target!r}: give 'population', 'uniform', a mapping "
            "{group: share} or {dimension: {group: share}}, or a table (or its path) with "
            "'group' and 'share' columns"
        )
        raise InvalidOptionError(msg)
    if groups is None:
        if group_target is not None:
            msg = (
                "option group_target= needs groups= (each item's groups): the target shares "
                "are over those groups"
            )
            raise InvalidOptionError(msg)
        return None, None
    frame = _key(read_table(groups, "groups"), "groups", item, item_dtype, "item")
    target = read_table(group_target, "group_target") if is_path else group_target
    return frame, target


@dataclass(frozen=True)
class RowInput:
    """Per-row columns a metric reads from an extra table, added to the log by a join.

    ``key`` identifies the input (two metrics naming the same key share one join); ``add``
    returns the log with the columns added and every log row kept exactly once.
    """

    key: str
    table: TableName
    add: Callable[[pl.LazyFrame, Tables], pl.LazyFrame]


def check_needs(named: Iterable[tuple[str, Sequence[str]]], tables: Tables) -> None:
    """Raise for the first metric whose table is missing, naming it and the keyword."""
    for label, needs in named:
        for name in needs:
            if not tables.has(name):  # type: ignore[arg-type]
                raise missing_table(name, label)  # type: ignore[arg-type]


# The metrics that read items= with similarity="features" and train= with "cooccurrence".
_SIMILARITY_FAMILIES = ("ild", "ils", "serendipity")


def warn_unused_tables(named: Iterable[tuple[str, Sequence[str]]], tables: Tables) -> None:
    """Warn (UnusedTableWarning) for each table passed that no metric asked reads.

    ``named`` holds every metric of the evaluation (label, needs). A table passed for nothing
    is usually a definition the user did not expect: ``ild@k`` under
    ``convention="recommenders"`` measures similarity by train co-occurrence and never reads
    ``items=``. The warning points at the user's line.
    """
    pairs = list(named)
    needed = {name for _, needs in pairs for name in needs}
    given = {
        "train": tables.train is not None,
        "items": tables.items is not None,
        "catalog": tables.catalog is not None or tables.catalog_size is not None,
        "groups": tables.groups is not None,
    }
    unused = [name for name, passed in given.items() if passed and name not in needed]
    if not unused:
        return
    site = user_site()
    labels = [label for label, _ in pairs]
    for name in unused:
        hint = ""
        if name == "items":
            other = [
                label
                for label, needs in pairs
                if label.split("@")[0].split("(")[0] in _SIMILARITY_FAMILIES and "train" in needs
            ]
            if other:
                hint = (
                    f"; {other[0]!r} measures similarity by train co-occurrence (the "
                    "default of convention='recommenders'): similarity=features reads items="
                )
        warn_at(
            f"option {name}= is not read by any metric asked ({', '.join(labels[:6])}"
            f"{', ...' if len(labels) > 6 else ''}){hint}",
            UnusedTableWarning,
            site,
        )


def join_inputs(lf: pl.LazyFrame, inputs: Iterable[RowInput], tables: Tables) -> pl.LazyFrame:
    """Add each distinct input's columns to the log (before ranking)."""
    done: set[str] = set()
    for row_input in inputs:
        if row_input.key in done:
            continue
        done.add(row_input.key)
        lf = row_input.add(lf, tables)
    return lf


def _train(tables: Tables) -> pl.LazyFrame:
    return tables.require("train", "a train-based metric")


def _add_popularity(lf: pl.LazyFrame, tables: Tables) -> pl.LazyFrame:
    train = _train(tables)
    item, query = tables.item, tables.query
    per_item = train.group_by(item).agg(
        pl.col(query).n_unique().cast(pl.Int64).alias(TRAIN_USERS),
        pl.len().cast(pl.Int64).alias(TRAIN_COUNT),
    )
    totals = train.select(
        pl.col(query).n_unique().cast(pl.Int64).alias(TRAIN_N_USERS),
        pl.len().cast(pl.Int64).alias(TRAIN_N_ROWS),
        pl.col(item).n_unique().cast(pl.Int64).alias(TRAIN_N_ITEMS),
    )
    joined = lf.join(per_item, on=item, how="left", nulls_equal=False).with_columns(
        pl.col(TRAIN_USERS).fill_null(0), pl.col(TRAIN_COUNT).fill_null(0)
    )
    return joined.join(totals, how="cross")


def _add_seen(lf: pl.LazyFrame, tables: Tables) -> pl.LazyFrame:
    train = _train(tables)
    pairs = (
        train.select(tables.query, tables.item)
        .unique()
        .with_columns(pl.lit(value=True).alias(SEEN))
    )
    joined = lf.join(pairs, on=[tables.query, tables.item], how="left", nulls_equal=False)
    return joined.with_columns(pl.col(SEEN).fill_null(value=False))


# Item popularity in train: distinct users, interactions, and the train totals.
POPULARITY = RowInput("train_popularity", "train", _add_popularity)
# Whether the user interacted with the item in train.
SEEN_IN_TRAIN = RowInput("train_seen", "train", _add_seen)


# The item's positive subtopic judgments, from the log's ``subtopics`` column (diversity qrels
# joined by join_run_qrels): List[Struct{subtopic: String, relevance: Int64}].
SUBTOPICS_COLUMN = "subtopics"
SUBTOPIC_JUDGMENTS = "__rke_subtopics"
_SUBTOPIC_DTYPE = pl.List(pl.Struct({"subtopic": pl.String, "relevance": pl.Int64}))


def _add_subtopics(lf: pl.LazyFrame, tables: Tables) -> pl.LazyFrame:
    """The log's subtopic judgments, checked and cast to one dtype (lists of structs)."""
    schema = lf.collect_schema()
    if SUBTOPICS_COLUMN not in schema:
        msg = (
            "the intent-aware (diversity) metrics read each item's subtopic judgments from a "
            f"{SUBTOPICS_COLUMN!r} column, which the log does not have: build the log with "
            "rke.join_run_qrels(run, rke.read_trec_qrels(path, subtopics=True)) (diversity qrels "
            "'topic subtopic docno judgment'; command line: --subtopics); see "
            "docs/pages/guides/beyond-trec-eval.md"
        )
        raise ColumnNotFoundError(msg)
    dtype = schema[SUBTOPICS_COLUMN]
    inner = dtype.inner if isinstance(dtype, (pl.List, pl.Array)) else None
    fields = {f.name: f.dtype for f in inner.fields} if isinstance(inner, pl.Struct) else {}
    if (
        "subtopic" not in fields
        or "relevance" not in fields
        or not fields["relevance"].is_integer()
    ):
        msg = (
            f"column {SUBTOPICS_COLUMN!r} must be a list of {{subtopic, relevance}} structs "
            f"(integer relevance), as rke.join_run_qrels builds it, got {dtype}"
        )
        raise ColumnTypeError(msg)
    if dtype == _SUBTOPIC_DTYPE:  # as join_run_qrels builds it: nothing to convert
        return lf.with_columns(pl.col(SUBTOPICS_COLUMN).alias(SUBTOPIC_JUDGMENTS))
    judgments = pl.col(SUBTOPICS_COLUMN).list.eval(
        pl.struct(
            pl.element().struct.field("subtopic").cast(pl.String).alias("subtopic"),
            pl.element().struct.field("relevance").cast(pl.Int64).alias("relevance"),
        )
    )
    return lf.with_columns(judgments.cast(_SUBTOPIC_DTYPE).alias(SUBTOPIC_JUDGMENTS))


# Each item's subtopic judgments (intent-aware metrics).
SUBTOPIC_INPUT = RowInput("subtopics", "subtopics", _add_subtopics)
