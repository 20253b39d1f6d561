"""The groups table and the target shares: read once, checked, in one canonical form.

``groups=`` maps items to groups, in one or several *dimensions* (provider size, region,
gender ...). Two layouts are read:

* **wide**: the item column, then one column per dimension holding the item's group (a
  string, integer, boolean or categorical); a list column gives several groups, with equal
  weights;
* **long**: the item column, ``group``, and optionally ``dimension`` (one dimension when
  absent, named ``"group"``) and ``weight`` (the item's share in the group; equal shares when
  absent). An item's weights in one dimension must sum to 1 (TREC Fair's fractional page
  alignments: a page about two continents is 0.5 in each).

Either way the result is one row per (item, dimension, group) with a weight. An item with no
group in a dimension it should have is refused (a null is not a group: name the unknown level,
e.g. ``"unknown"``, as TREC Fair's ``@UNKNOWN``). Items of the log that are not in the table at
all are the measures' business (TREC Task 1 drops them; the others refuse them).

``group_target=`` gives each group's target share:

* ``None`` or ``"population"``: each group's share of the groups table's items (an
  intersectional cell's share counts the items in that cell);
* ``"uniform"``: the same share for every group of the universe;
* a mapping ``{group: share}`` (one dimension) or ``{dimension: {group: share}}``;
* a table: ``group`` and ``share`` columns, optionally ``dimension`` and the log's query column
  (a target per query, as TREC Fair's); or one column per dimension plus ``share`` (a joint
  target over the intersectional cells).

Shares are checked: finite, non-negative, summing to 1 (within 1e-6) per dimension (and query).
With several dimensions and per-dimension shares, a cell's target is the product of its
dimensions' shares. A target group that no item belongs to joins the universe with exposure 0
(it counts fully against every system); a group of the items that the target does not name has
target share 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product

import polars as pl

from polars_rankeval._engine.tables import read_table, refuse_rows
from polars_rankeval._engine.warn import warn_at
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    ColumnValueError,
    GroupWarning,
    InvalidOptionError,
)
from polars_rankeval.fairness._frame import GROUP, GROUP_SEPARATOR, ITEM, SHARE, SIZE, WEIGHT

DIMENSION = "__rke_fair_dimension"
_ONE_DIMENSION = "group"  # a long table without a dimension column
_SHARE_TOLERANCE = 1e-6
_WEIGHT_TOLERANCE = 1e-9
_GROUP_TYPES = (pl.String, pl.Categorical, pl.Enum, pl.Boolean)


@dataclass(frozen=True)
class GroupTable:
    """The groups table in canonical form (lazy), its dimensions and each one's groups."""

    memberships: pl.LazyFrame  # ITEM (String), DIMENSION, GROUP (String), WEIGHT (Float64)
    dimensions: tuple[str, ...]
    levels: Mapping[str, tuple[str, ...]]
    # cells and population per choice of dimensions, computed once
    _cache: dict[tuple[str, ...], tuple[pl.DataFrame, pl.DataFrame]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def _cells_and_population(self, dimensions: Sequence[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
        key = tuple(dimensions)
        if key not in self._cache:
            cells = self._cells(dimensions).collect()
            sizes = cells.group_by(GROUP).agg(pl.col(WEIGHT).sum().alias(SIZE))
            n_items = float(self.memberships.select(pl.col(ITEM).n_unique()).collect().item())
            population = sizes.select(GROUP, SIZE, (pl.col(SIZE) / n_items).alias(SHARE))
            self._cache[key] = (cells, population)
        return self._cache[key]

    def chosen(self, dimension: str | None, metric: str) -> tuple[str, ...]:
        """The dimensions a metric reads: all of them (intersected) or the ``dimension=`` ones.

        ``dimension`` may name several, joined by ``+`` (``"region+gender"``).
        """
        if dimension is None:
            return self.dimensions
        names = tuple(part.strip() for part in dimension.split("+"))
        unknown = [name for name in names if name not in self.dimensions]
        if unknown or len(set(names)) != len(names):
            msg = (
                f"option dimension={dimension!r} of {metric!r}: the groups table's dimensions "
                f"are {list(self.dimensions)}; name one, or several joined by '+'"
            )
            raise InvalidOptionError(msg)
        return names

    def cells(self, dimensions: Sequence[str]) -> pl.LazyFrame:
        """Each item's intersectional cells over ``dimensions``: ITEM, GROUP, WEIGHT."""
        return self._cells_and_population(dimensions)[0].lazy()

    def _cells(self, dimensions: Sequence[str]) -> pl.LazyFrame:
        """:meth:`cells`, as a plan.

        A cell is the dimensions' groups joined by ``GROUP_SEPARATOR``; its weight is the
        product of the item's weights (TREC Fair's outer product of alignments).
        """
        frames = [
            self.memberships.filter(pl.col(DIMENSION) == name).select(
                ITEM, pl.col(GROUP).alias(f"{GROUP}{i}"), pl.col(WEIGHT).alias(f"{WEIGHT}{i}")
            )
            for i, name in enumerate(dimensions)
        ]
        cells = frames[0]
        for frame in frames[1:]:
            cells = cells.join(frame, on=ITEM, how="inner")
        count = len(dimensions)
        label = (
            pl.concat_str([pl.col(f"{GROUP}{i}") for i in range(count)], separator=GROUP_SEPARATOR)
            if count > 1
            else pl.col(f"{GROUP}0")
        )
        weight = pl.col(f"{WEIGHT}0")
        for i in range(1, count):
            weight = weight * pl.col(f"{WEIGHT}{i}")
        return cells.select(ITEM, label.alias(GROUP), weight.alias(WEIGHT))

    def universe(self, dimensions: Sequence[str]) -> list[str]:
        """Every cell over ``dimensions`` (all combinations of their groups), sorted."""
        combos = product(*(self.levels[name] for name in dimensions))
        return sorted(GROUP_SEPARATOR.join(combo) for combo in combos)

    def population(self, dimensions: Sequence[str]) -> pl.LazyFrame:
        """Each cell's size (sum of item weights: SIZE) and share of the items (SHARE)."""
        return self._cells_and_population(dimensions)[1].lazy()


def _as_group_label(column: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    if dtype == pl.Boolean:
        return column.cast(pl.String).str.to_lowercase()
    return column.cast(pl.String)


def _check_group_dtype(name: str, dtype: pl.DataType) -> pl.DataType:
    inner = dtype.inner if isinstance(dtype, (pl.List, pl.Array)) else dtype
    if not (inner.is_integer() or isinstance(inner, _GROUP_TYPES) or inner in _GROUP_TYPES):
        msg = (
            f"column {name!r} of the groups= table is {dtype}: a dimension column holds each "
            "item's group (a string, integer, boolean or categorical, or a list of them); pass "
            "a table with only the item column and dimension columns, or the long layout "
            "(item, dimension, group, weight)"
        )
        raise ColumnTypeError(msg)
    return inner if isinstance(inner, pl.DataType) else inner()


def _wide(table: pl.LazyFrame, item: str, schema: pl.Schema) -> tuple[pl.LazyFrame, list[str]]:
    dimensions = [name for name in schema.names() if name != item]
    if not dimensions:
        msg = (
            f"the groups= table has only the item column {item!r}: add one column per "
            "dimension (e.g. 'region', 'gender') holding each item's group, or the long layout "
            "(item, dimension, group, weight)"
        )
        raise ColumnNotFoundError(msg)
    parts = []
    for name in dimensions:
        dtype = schema[name]
        inner = _check_group_dtype(name, dtype)
        nested = isinstance(dtype, (pl.List, pl.Array))
        part = table.select(
            pl.col(item).cast(pl.String).alias(ITEM),
            pl.lit(name).alias(DIMENSION),
            pl.col(name).alias(GROUP),
        )
        if nested:
            part = part.with_columns(
                (1.0 / pl.col(GROUP).list.len().cast(pl.Float64)).alias(WEIGHT)
            ).explode(GROUP)
        else:
            part = part.with_columns(pl.lit(1.0).alias(WEIGHT))
        parts.append(part.with_columns(_as_group_label(pl.col(GROUP), inner)))
    return pl.concat(parts, how="vertical"), dimensions


def _long(table: pl.LazyFrame, item: str, schema: pl.Schema) -> tuple[pl.LazyFrame, list[str]]:
    _check_group_dtype("group", schema["group"])
    extra = [n for n in schema.names() if n not in (item, "group", "dimension", "weight")]
    if extra:
        msg = (
            f"the groups= table has a 'group' column (the long layout: item, dimension, group, "
            f"weight) and other columns {extra}: drop them, or use the wide layout (one column "
            "per dimension, no 'group' column)"
        )
        raise ColumnNotFoundError(msg)
    dimension = (
        pl.col("dimension").cast(pl.String) if "dimension" in schema else pl.lit(_ONE_DIMENSION)
    )
    if "weight" in schema and not schema["weight"].is_numeric():
        msg = f"column 'weight' of the groups= table must be numeric, got {schema['weight']}"
        raise ColumnTypeError(msg)
    frame = table.select(
        pl.col(item).cast(pl.String).alias(ITEM),
        dimension.alias(DIMENSION),
        _as_group_label(pl.col("group"), schema["group"]).alias(GROUP),
        *([pl.col("weight").cast(pl.Float64).alias(WEIGHT)] if "weight" in schema else []),
    )
    if "weight" not in schema:
        frame = frame.with_columns((1.0 / pl.len().over(ITEM, DIMENSION)).alias(WEIGHT))
    if "dimension" in schema:
        names = frame.select(pl.col(DIMENSION).unique().sort()).collect()[DIMENSION].drop_nulls()
        dimensions = names.to_list()
    else:
        dimensions = [_ONE_DIMENSION]
    return frame, dimensions


def _checked(memberships: pl.LazyFrame, dimensions: list[str]) -> pl.LazyFrame:
    """The memberships, refusing (when read) nulls, bad weights and items missing a dimension."""

    def null_message(rows: pl.DataFrame) -> str:
        row = rows.row(0, named=True)
        return (
            f"groups= table: item {row[ITEM]!r} has no group in dimension {row[DIMENSION]!r} "
            "(null): a null is not a group; name the unknown level (e.g. 'unknown', as TREC "
            "Fair's '@UNKNOWN') or leave the item out of the table"
        )

    memberships = refuse_rows(
        memberships,
        pl.col(GROUP).is_null() | pl.col(ITEM).is_null() | pl.col(DIMENSION).is_null(),
        [ITEM, DIMENSION],
        null_message,
    )

    def weight_message(rows: pl.DataFrame) -> str:
        row = rows.row(0, named=True)
        return (
            f"groups= table: item {row[ITEM]!r} has weight {row[WEIGHT]!r} in group "
            f"{row[GROUP]!r}: weights must be finite and > 0"
        )

    weight = pl.col(WEIGHT)
    memberships = refuse_rows(
        memberships,
        weight.is_null() | ~weight.is_finite() | (weight <= 0),
        [ITEM, GROUP, WEIGHT],
        weight_message,
    )

    def sum_message(rows: pl.DataFrame) -> str:
        row = rows.row(0, named=True)
        return (
            f"groups= table: item {row[ITEM]!r}'s weights in dimension {row[DIMENSION]!r} sum "
            f"to {row['__total']!r}, not 1: an item's shares of one dimension's groups must "
            "add up to 1"
        )

    total = pl.col(WEIGHT).sum().over(ITEM, DIMENSION)
    memberships = refuse_rows(
        memberships.with_columns(total.alias("__total")),
        (pl.col("__total") - 1.0).abs() > _WEIGHT_TOLERANCE,
        [ITEM, DIMENSION, "__total"],
        sum_message,
    ).drop("__total")
    if len(dimensions) > 1:

        def missing_message(rows: pl.DataFrame) -> str:
            row = rows.row(0, named=True)
            return (
                f"groups= table: item {row[ITEM]!r} has groups in {row['__count']} of the "
                f"{len(dimensions)} dimensions {dimensions}: give every item a group in every "
                "dimension (name the unknown level, e.g. 'unknown')"
            )

        count = pl.col(DIMENSION).n_unique().over(ITEM)
        memberships = refuse_rows(
            memberships.with_columns(count.alias("__count")),
            pl.col("__count") != len(dimensions),
            [ITEM, "__count"],
            missing_message,
        ).drop("__count")
    return memberships


def read_groups(table: pl.LazyFrame, item: str) -> GroupTable:
    """The ``groups=`` table (keyed by the log's item column) in canonical form."""
    schema = table.collect_schema()
    if "group" in schema:
        memberships, dimensions = _long(table, item, schema)
    else:
        memberships, dimensions = _wide(table, item, schema)
    # read and checked once (a catalogue's size: far smaller than the log), then every metric,
    # dimension choice and pass of the evaluation joins the same frame
    checked = _checked(memberships, dimensions).collect()
    levels_frame = checked.select(DIMENSION, GROUP).unique().sort(DIMENSION, GROUP)
    levels = {
        name: tuple(levels_frame.filter(pl.col(DIMENSION) == name)[GROUP].to_list())
        for name in dimensions
    }
    empty = [name for name, groups in levels.items() if not groups]
    if empty:
        msg = f"the groups= table has no group in dimension(s) {empty}"
        raise ColumnValueError(msg)
    return GroupTable(checked.lazy(), tuple(dimensions), levels)


# --- the target ---------------------------------------------------------------------------


def _shares_frame(value: Mapping[object, object]) -> pl.DataFrame:
    """A mapping target as a long frame: dimension (or null), group, share."""
    rows: list[tuple[str | None, str, float]] = []
    nested = [isinstance(v, Mapping) for v in value.values()]
    if any(nested) and not all(nested):
        msg = (
            "option group_target=: a mapping is either {group: share} or "
            "{dimension: {group: share}}, not a mix"
        )
        raise InvalidOptionError(msg)
    pairs: list[tuple[str | None, Mapping[object, object]]] = (
        [(str(dim), shares) for dim, shares in value.items()]  # type: ignore[misc]
        if all(nested) and value
        else [(None, value)]
    )
    for dimension, shares in pairs:
        for group, share in shares.items():
            if isinstance(share, bool) or not isinstance(share, (int, float)):
                msg = f"option group_target=: share of {group!r} must be a number, got {share!r}"
                raise InvalidOptionError(msg)
            label = str(group).lower() if isinstance(group, bool) else str(group)
            rows.append((dimension, label, float(share)))
    return pl.DataFrame(
        rows, schema={"dimension": pl.String, "group": pl.String, "share": pl.Float64}, orient="row"
    )


@dataclass(frozen=True)
class Target:
    """Target shares per cell, per query or for every query: the query column or None, the frame.

    ``frame`` has (the query column,) GROUP, SHARE for every cell of the universe.
    """

    query: str | None
    frame: pl.DataFrame


def _check_sums(frame: pl.DataFrame, keys: list[str], where: str) -> None:
    shares = frame["share"]
    bad = frame.filter(~pl.col("share").is_finite() | (pl.col("share") < 0))
    if shares.null_count() or bad.height:
        row = (bad if bad.height else frame.filter(pl.col("share").is_null())).row(0, named=True)
        msg = f"{where}: share {row['share']!r} of group {row['group']!r} must be finite and >= 0"
        raise ColumnValueError(msg)
    sums = frame.group_by(keys, maintain_order=True).agg(pl.col("share").sum().alias("__sum"))
    wrong = sums.filter((pl.col("__sum") - 1.0).abs() > _SHARE_TOLERANCE)
    if wrong.height:
        row = wrong.row(0, named=True)
        place = ", ".join(f"{k}={row[k]!r}" for k in keys) or "the target"
        msg = (
            f"{where}: the shares of {place} sum to {row['__sum']!r}, not 1: a target is a "
            "distribution over the groups"
        )
        raise ColumnValueError(msg)


def resolve_target(
    value: object, table: GroupTable, dimensions: Sequence[str], query: str, metric: str
) -> Target:
    """The target shares of every cell over ``dimensions`` (eager: a target table is small)."""
    universe = table.universe(dimensions)
    word = value if isinstance(value, str) else None  # == on a frame compares its values
    if value is None or word == "population":
        population = table.population(dimensions).collect()
        cells = pl.DataFrame({GROUP: universe}).join(
            population.select(GROUP, SHARE), on=GROUP, how="left"
        )
        return Target(None, cells.with_columns(pl.col(SHARE).fill_null(0.0)))
    if word == "uniform":
        share = 1.0 / len(universe)
        return Target(None, pl.DataFrame({GROUP: universe, SHARE: [share] * len(universe)}))
    if isinstance(value, Mapping):
        frame = _shares_frame(value)
        if frame["dimension"].null_count():
            if len(dimensions) != 1:
                msg = (
                    f"option group_target= of {metric!r}: a {{group: share}} mapping is one "
                    f"dimension's target, but the metric reads {list(dimensions)}: pass "
                    "{dimension: {group: share}} or choose one with dimension="
                )
                raise InvalidOptionError(msg)
            frame = frame.with_columns(pl.lit(dimensions[0]).alias("dimension"))
        return _from_long(frame, None, dimensions, universe, metric)
    target_frame = read_table(value, "group_target").collect()
    return _from_table(target_frame, dimensions, universe, query, metric)


def _from_table(
    frame: pl.DataFrame, dimensions: Sequence[str], universe: list[str], query: str, metric: str
) -> Target:
    if "share" not in frame.columns:
        msg = f"the group_target= table has no 'share' column; columns present: {frame.columns}"
        raise ColumnNotFoundError(msg)
    if not frame.schema["share"].is_numeric():
        dtype = frame.schema["share"]
        msg = f"column 'share' of the group_target= table must be numeric, got {dtype}"
        raise ColumnTypeError(msg)
    by_query = query if query in frame.columns else None
    frame = frame.with_columns(pl.col("share").cast(pl.Float64))
    if "group" in frame.columns:
        if "dimension" not in frame.columns:
            if len(dimensions) != 1:
                msg = (
                    f"the group_target= table has no 'dimension' column, so it is one "
                    f"dimension's target, but {metric!r} reads {list(dimensions)}: add a "
                    "'dimension' column, or choose one with dimension="
                )
                raise ColumnNotFoundError(msg)
            frame = frame.with_columns(pl.lit(dimensions[0]).alias("dimension"))
        frame = frame.with_columns(
            pl.col("dimension").cast(pl.String), pl.col("group").cast(pl.String)
        )
        return _from_long(frame, by_query, dimensions, universe, metric)
    # one column per dimension: a joint target over the cells
    missing = [name for name in dimensions if name not in frame.columns]
    if missing:
        msg = (
            f"the group_target= table needs 'group' (and 'dimension') columns, or one column "
            f"per dimension of {metric!r} ({list(dimensions)}); missing {missing}; columns "
            f"present: {frame.columns}"
        )
        raise ColumnNotFoundError(msg)
    label = (
        pl.concat_str([pl.col(n).cast(pl.String) for n in dimensions], separator=GROUP_SEPARATOR)
        if len(dimensions) > 1
        else pl.col(dimensions[0]).cast(pl.String)
    )
    keys = [by_query] if by_query else []
    cells = frame.select(*keys, label.alias("group"), "share")
    _check_sums(cells, keys, "group_target= table")
    return _spread(cells, by_query, universe)


def _from_long(
    frame: pl.DataFrame,
    by_query: str | None,
    dimensions: Sequence[str],
    universe: list[str],
    metric: str,
) -> Target:
    keys = [by_query] if by_query else []
    frame = frame.filter(pl.col("dimension").is_in(list(dimensions)))
    _check_sums(frame, [*keys, "dimension"], "group_target=")
    given = set(frame["dimension"].unique().to_list())
    absent = [name for name in dimensions if name not in given]
    if absent:
        msg = (
            f"option group_target= gives no shares for dimension(s) {absent} that {metric!r} "
            "reads: give every dimension's shares, or choose dimensions with dimension="
        )
        raise InvalidOptionError(msg)
    # a cell's share is the product of its dimensions' shares
    cells: pl.DataFrame | None = None
    for i, name in enumerate(dimensions):
        part = frame.filter(pl.col("dimension") == name).select(
            *keys, pl.col("group").alias(f"g{i}"), pl.col("share").alias(f"s{i}")
        )
        if cells is None:
            cells = part
        elif keys:
            cells = cells.join(part, on=keys, how="inner")
        else:
            cells = cells.join(part, how="cross")
    assert cells is not None
    count = len(dimensions)
    label = (
        pl.concat_str([pl.col(f"g{i}") for i in range(count)], separator=GROUP_SEPARATOR)
        if count > 1
        else pl.col("g0")
    )
    share = pl.col("s0")
    for i in range(1, count):
        share = share * pl.col(f"s{i}")
    return _spread(
        cells.select(*keys, label.alias("group"), share.alias("share")), by_query, universe
    )


def _spread(cells: pl.DataFrame, by_query: str | None, universe: list[str]) -> Target:
    """Every cell of the universe (and of the target) with its share; 0 where not named."""
    keys = [by_query] if by_query else []
    named = cells["group"].unique().to_list()
    outside = sorted(
        set(cells.filter(pl.col("share") > 0)["group"].to_list()) - set(universe), key=str
    )
    if outside:
        shown = ", ".join(repr(group) for group in outside[:3])
        more = f" and {len(outside) - 3} more" if len(outside) > 3 else ""
        known = ", ".join(repr(group) for group in universe[:6])
        warn_at(
            f"group_target= gives a share to {shown}{more}, which no item of groups= belongs to "
            f"(the groups are {known}{', ...' if len(universe) > 6 else ''}): kept with "
            "exposure 0, so it counts against every system; is it misspelt?",
            GroupWarning,
        )
    everything = sorted(set(universe) | set(named))
    base = pl.DataFrame({GROUP: everything})
    if keys:
        base = cells.select(keys).unique().join(base, how="cross")
    out = base.join(
        cells.rename({"group": GROUP, "share": SHARE}), on=[*keys, GROUP], how="left"
    ).with_columns(pl.col(SHARE).fill_null(0.0))
    return Target(by_query, out.sort([*keys, GROUP]))
