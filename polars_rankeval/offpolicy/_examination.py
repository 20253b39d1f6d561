"""Examination probabilities for the click metrics, and the click log's shared checks.

Under the position-based model an item shown at ``position`` is examined with probability
``p(position)``. :func:`~polars_rankeval.offpolicy._clicks.click_metrics` reads them in any of
these forms: a mapping or list by position, a column, an expression such as
:func:`power_law_examination`, or a table by position (and segment) as
:func:`examination_from_randomized` estimates it from a log whose order was randomised
(Joachims, Swaminathan & Schnabel, WSDM 2017 sec. 5; Agarwal et al., WSDM 2019 sec. 3).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import polars as pl

from polars_rankeval._engine.columns import by_list
from polars_rankeval._engine.tables import refuse_rows
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    ColumnValueError,
    InvalidOptionError,
)
from polars_rankeval.offpolicy._options import read_log

PREFIX = "__rke_click_"
#: The column the examination probability of each logged row is put in.
EXAMINATION = PREFIX + "examination"
# What examination_from_randomized adds beside the position and the segments.
_ESTIMATE_COLUMNS = ("impressions", "clicks", "ctr", "examination")
_EXAMPLES = 3


def power_law_examination(eta: float, *, position: str = "position") -> pl.Expr:
    """Examination probability ``(1 / position) ** eta`` (a position-bias power law).

    The usual simulation model of position bias (Joachims et al. 2017 sec. 6: ``eta`` = 1 is
    "severity" 1); pass the expression as ``examination=``.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"position": [1, 2, 4]})
    >>> df.select(power_law_examination(1.0))["examination"].to_list()
    [1.0, 0.5, 0.25]
    """
    if isinstance(eta, bool) or not isinstance(eta, int | float) or not math.isfinite(eta):
        msg = f"eta of power_law_examination must be a finite number, got {eta!r}"
        raise InvalidOptionError(msg)
    if eta < 0:
        msg = f"eta of power_law_examination must be >= 0 (lower positions seen less), got {eta}"
        raise InvalidOptionError(msg)
    return ((1.0 / pl.col(position).cast(pl.Float64)) ** float(eta)).alias("examination")


def require(schema: pl.Schema, columns: Sequence[tuple[str, object]]) -> None:
    """Each ``(option, column)`` must name a column of the log."""
    for option, name in columns:
        if not isinstance(name, str):
            msg = f"option {option}= must be a column name, got {name!r}"
            raise InvalidOptionError(msg)
        if name not in schema:
            msg = (
                f"column {name!r} ({option}=) is not in the log; columns present: "
                f"{list(schema.names())}"
            )
            raise ColumnNotFoundError(msg)


def _examples(rows: pl.DataFrame) -> str:
    """``(query, item, position) ('q1', 'a', 0), ...``: the first few offending rows."""
    keys = rows.columns
    shown = [
        "(" + ", ".join(repr(row[key]) for key in keys) + ")"
        for row in rows.head(_EXAMPLES).iter_rows(named=True)
    ]
    # our own columns (the examination probability) under the name the user passed them as
    names = [key.removeprefix(PREFIX) for key in keys]
    return f"e.g. ({', '.join(names)}) {', '.join(shown)}"


def refuse(lf: pl.LazyFrame, bad: pl.Expr, shown: list[str], what: str) -> pl.LazyFrame:
    """Refuse (when read) every row where ``bad`` holds; the message names the first rows."""

    def message(rows: pl.DataFrame) -> str:
        return f"{what}: {_examples(rows)}"

    return refuse_rows(lf, bad.fill_null(value=True), shown, message)


def check_position_and_click(
    lf: pl.LazyFrame, schema: pl.Schema, position: str, click: str, shown: list[str]
) -> pl.LazyFrame:
    if not schema[position].is_integer():
        msg = (
            f"column {position!r} (position=) must hold integer positions (1 = the top), "
            f"got {schema[position]}"
        )
        raise ColumnTypeError(msg)
    if not (schema[click] == pl.Boolean or schema[click].is_numeric()):
        msg = f"column {click!r} (click=) must hold 0/1 or booleans, got {schema[click]}"
        raise ColumnTypeError(msg)
    lf = refuse(
        lf,
        pl.col(position).is_null() | (pl.col(position) <= 0),
        shown,
        f"column {position!r} (position=) must be a position >= 1 (1 = the top) on every row, "
        "found null or <= 0",
    )
    value = pl.col(click).cast(pl.Float64)
    return refuse(
        lf,
        value.is_null() | ~value.is_in([0.0, 1.0]),
        shown,
        f"column {click!r} (click=) must be 0 or 1 on every row, found another value or null",
    )


def examination_from_randomized(
    data: object,
    *,
    position: str = "position",
    click: str = "click",
    by: str | Sequence[str] | None = None,
) -> pl.DataFrame:
    """Examination probability per position, from a log whose result order was randomised.

    When the order shown is random, an item's relevance does not depend on its position, so
    the click-through rate at a position is proportional to its examination probability
    (result randomisation, Joachims et al. WSDM 2017 sec. 5; Agarwal et al. WSDM 2019 sec. 3)::

        examination(j) = CTR(j) / CTR(1),   CTR(j) = clicks at j / rows shown at j

    Position 1 is taken as always examined. Every position from 1 to the deepest logged one
    needs impressions and at least one click, and no position may beat position 1's CTR (an
    estimate above 1 means too few impressions): each is a clear error naming the position.

    Parameters
    ----------
    data
        The randomised log, one row per item shown (DataFrame, LazyFrame, pandas, pyarrow or
        a path).
    position, click
        Column names: the position shown at (1 = the top), and the click (0/1).
    by
        Segment column(s): one estimate per segment (e.g. device).

    Returns
    -------
    pl.DataFrame
        ``by`` columns, ``position``, ``impressions`` (rows at the position), ``clicks``,
        ``ctr`` and ``examination``: pass it to :func:`click_metrics` as ``examination=``.

    Examples
    --------
    >>> import polars as pl
    >>> log = pl.DataFrame(
    ...     {"position": [1, 2, 1, 2, 1, 2, 1, 2], "click": [1, 1, 1, 0, 0, 0, 1, 0]}
    ... )
    >>> examination_from_randomized(log)["examination"].to_list()
    [1.0, 0.3333333333333333]
    """
    segments = by_list(by)
    lf = read_log(data)
    schema = lf.collect_schema()
    require(schema, [("position", position), ("click", click), *[("by", b) for b in segments]])
    lf = check_position_and_click(lf, schema, position, click, [*segments, position, click])
    per_position = (
        lf.group_by([*segments, position])
        .agg(
            pl.len().cast(pl.Int64).alias("impressions"),
            pl.col(click).cast(pl.Float64).sum().alias("clicks"),
        )
        .with_columns((pl.col("clicks") / pl.col("impressions")).alias("ctr"))
        .sort([*segments, position])
        .collect()
    )
    if per_position.height == 0:
        msg = "examination_from_randomized: the log has no rows"
        raise ColumnValueError(msg)
    top = pl.col("ctr").filter(pl.col(position) == 1).first()
    deepest = pl.col(position).max()
    over = segments or None
    checked = per_position.with_columns(
        (pl.col("ctr") / (top.over(over) if over else top)).alias("examination"),
        (pl.len().over(over) if over else pl.len()).alias(PREFIX + "n"),
        (deepest.over(over) if over else deepest).alias(PREFIX + "deepest"),
    )
    _check_estimates(checked, segments, position)
    return checked.drop(PREFIX + "n", PREFIX + "deepest")


def _where(row: Mapping[str, object], segments: list[str]) -> str:
    if not segments:
        return ""
    return " in segment " + ", ".join(f"{s}={row[s]!r}" for s in segments)


def _check_estimates(frame: pl.DataFrame, segments: list[str], position: str) -> None:
    """Raise for a segment with a position gap, no clicks at position 1, or a 0 or > 1 estimate."""
    gaps = frame.filter(pl.col(PREFIX + "n") != pl.col(PREFIX + "deepest"))
    if gaps.height:
        row = gaps.row(0, named=True)
        present = set(
            frame.filter(
                pl.all_horizontal([pl.col(s).eq_missing(row[s]) for s in segments] or [True])
            )[position].to_list()
        )
        missing = [p for p in range(1, row[PREFIX + "deepest"] + 1) if p not in present]
        msg = (
            f"examination_from_randomized: position(s) {missing[:5]}{_where(row, segments)} "
            f"have no impressions (positions run to {row[PREFIX + 'deepest']}): no "
            "examination probability can be estimated there"
        )
        raise ColumnValueError(msg)
    for row in frame.iter_rows(named=True):
        where = _where(row, segments)
        if row["examination"] is None or math.isnan(row["examination"]):
            msg = (
                f"examination_from_randomized: position 1{where} has no clicks "
                f"({frame.filter(pl.col(position) == 1)['impressions'].sum()} rows), so no "
                "examination probability is relative to it"
            )
            raise ColumnValueError(msg)
        if row["examination"] == 0:
            msg = (
                f"examination_from_randomized: position {row[position]}{where} has no clicks "
                f"in {row['impressions']} impressions: its examination estimate is 0, and a "
                "click there could never be weighted; log more impressions or cut the "
                "positions evaluated"
            )
            raise ColumnValueError(msg)
        if row["examination"] > 1:
            msg = (
                f"examination_from_randomized: position {row[position]}{where} has a higher "
                f"CTR than position 1 ({row['ctr']:.4g} > {row['ctr'] / row['examination']:.4g} "
                f"over {row['impressions']} impressions): an examination estimate above 1 "
                "means too few impressions for a stable estimate"
            )
            raise ColumnValueError(msg)


Examination = str | Mapping[int, float] | Sequence[float] | pl.Expr | pl.DataFrame | pl.LazyFrame


def _from_mapping(values: Mapping[int, float], position: str) -> pl.LazyFrame:
    """A table of the given probabilities by position (joined: a join streams, a replace not)."""
    for key, value in values.items():
        if isinstance(key, bool) or not isinstance(key, int) or key <= 0:
            msg = f"examination= maps positions (ints >= 1) to probabilities, got key {key!r}"
            raise InvalidOptionError(msg)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or math.isnan(value)
            or not 0 < value <= 1
        ):
            msg = (
                f"examination= probability of position {key} must be in (0, 1], got "
                f"{value!r}: a position never examined gives no unbiased click estimate"
            )
            raise InvalidOptionError(msg)
    return pl.LazyFrame(
        {position: list(values), "examination": [float(v) for v in values.values()]},
        schema={position: pl.Int64, "examination": pl.Float64},
    )


def attach_examination(
    lf: pl.LazyFrame, examination: object, schema: pl.Schema, position: str
) -> pl.LazyFrame:
    """The log with each row's examination probability in ``EXAMINATION`` (null: none given)."""
    if isinstance(examination, str):
        require(schema, [("examination", examination)])
        if not schema[examination].is_numeric():
            msg = (
                f"column {examination!r} (examination=) must be numeric, got {schema[examination]}"
            )
            raise ColumnTypeError(msg)
        expr = pl.col(examination).cast(pl.Float64)
    elif isinstance(examination, pl.Expr):
        expr = examination.cast(pl.Float64)
    elif isinstance(examination, Mapping):
        return _join_examination(lf, _from_mapping(examination, position), schema, position)
    elif isinstance(examination, (pl.DataFrame, pl.LazyFrame)):
        return _join_examination(lf, examination.lazy(), schema, position)
    elif isinstance(examination, (list, tuple)):
        table = _from_mapping({i + 1: v for i, v in enumerate(examination)}, position)
        return _join_examination(lf, table, schema, position)
    else:
        msg = (
            "examination= must be a mapping or list of probabilities by position, a column "
            "name, an expression (power_law_examination(eta)) or a table with 'position' and "
            f"'examination' columns (examination_from_randomized), got {type(examination)}"
        )
        raise InvalidOptionError(msg)
    return lf.with_columns(expr.alias(EXAMINATION))


def _join_examination(
    lf: pl.LazyFrame, table: pl.LazyFrame, schema: pl.Schema, position: str
) -> pl.LazyFrame:
    """Join a table of probabilities by position (and by the segments it shares with the log)."""
    names = table.collect_schema().names()
    if position not in names or "examination" not in names:
        msg = (
            f"the examination= table needs columns {position!r} and 'examination' "
            f"(as examination_from_randomized returns), got {names}"
        )
        raise ColumnNotFoundError(msg)
    keys = [n for n in names if n not in _ESTIMATE_COLUMNS and n in schema]
    # a table of probabilities is small: read it now, so a repeated key is refused before it
    # could duplicate log rows in the join
    given = table.select(*keys, pl.col("examination").cast(pl.Float64).alias(EXAMINATION))
    small = given.collect()
    repeated = small.filter(small.select(keys).is_duplicated())
    if repeated.height:
        msg = (
            f"the examination= table has several rows for the same {', '.join(keys)}: "
            f"{_examples(repeated.select(keys))}"
        )
        raise InvalidOptionError(msg)
    if not small[position].dtype.is_integer():
        msg = f"the examination= table's {position!r} column must hold integer positions"
        raise ColumnTypeError(msg)
    # positions the log's dtype cannot hold are never logged: drop them, do not fail the cast
    small = small.with_columns(pl.col(position).cast(schema[position], strict=False))
    small = small.filter(pl.col(position).is_not_null())
    return lf.join(small.lazy(), on=keys, how="left", nulls_equal=True)
