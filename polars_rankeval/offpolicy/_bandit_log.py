"""The bandit log's contract and checks: which column plays which part, and the bad values.

The schema is checked before any data is read; the values in one pass over the log (a count
per check), and only a failing check reads the log again, to name its first rows or contexts
in input order. A LazyFrame is therefore read once more than the estimate needs when the log
is sound: the price of an error that names the rows rather than a NaN in the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from polars_rankeval._engine.evaluate import Engine
from polars_rankeval._engine.warn import Site, warn_at
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    ColumnValueError,
    InvalidOptionError,
    WeightWarning,
)

#: how far a context's target probabilities may sum from 1 (candidate form)
SUM_TOLERANCE = 1e-6
#: the column of the results that names the target policy
POLICY = "policy"

_F64 = pl.Float64
_ROW = "__rke_row"
_N_LOGGED = "__rke_n_logged"
_N_ROWS = "__rke_n_rows"
_EXAMPLES = 3


@dataclass(frozen=True)
class Log:
    """The resolved options: which column plays which part.

    ``targets`` and ``target_reward_model`` map a policy's name to its column; ``query`` is
    the unit id (None in the event form without ``query=``: every row is a unit).
    """

    targets: dict[str, str]
    propensity: str
    reward: str
    reward_model: str | None
    target_reward_model: dict[str, str]
    query: str | None
    item: str | None
    logged: str | None
    by: tuple[str, ...]

    @property
    def context(self) -> list[str]:
        """The columns identifying one context (candidate form) or one event."""
        return [*self.by, self.query] if self.query is not None else list(self.by)


@dataclass(frozen=True)
class Tuning:
    """The estimators asked for and their hyperparameters (obp's ``lambda_`` of each)."""

    estimators: tuple[str, ...]
    clip: float
    switch_threshold: float
    shrinkage: float


def _not_probability(x: pl.Expr, *, zero_allowed: bool) -> pl.Expr:
    """True where ``x`` is not a probability (null and NaN included)."""
    low = x < 0 if zero_allowed else x <= 0
    return x.is_null() | x.is_nan() | low | (x > 1)


def _not_finite(x: pl.Expr) -> pl.Expr:
    return x.is_null() | ~x.is_finite()


def _shown(frame: pl.DataFrame, ids: Sequence[str], values: Sequence[str]) -> str:
    """``e.g. row 3 (propensity=0.0); row 7 (...)``: where each bad row is and what it holds."""
    out = []
    for row in frame.iter_rows(named=True):
        where = [f"row {row[_ROW]}"] if _ROW in row else []
        where += [f"{key}={row[key]!r}" for key in ids]
        what = ", ".join(f"{key}={row[key]!r}" for key in values)
        out.append(", ".join(where) + (f" ({what})" if what else ""))
    return "e.g. " + "; ".join(out)


@dataclass(frozen=True)
class _Check:
    """A bad-value test: the rows (or contexts) it flags, what to show, what to say."""

    bad: pl.Expr
    values: list[str]
    message: str  # formatted with {n} (how many) and {examples}


@dataclass(frozen=True)
class _Source:
    """Where checks look: the input's rows, or one row per context.

    A bad row is shown by its row number and ``ids``; a bad context by ``ids``.
    """

    frame: pl.LazyFrame
    ids: list[str]
    per_row: bool


def _check_all(
    steps: list[tuple[_Source, list[_Check]]],
    *,
    engine: Engine,
    extra: dict[str, pl.Expr] | None = None,
) -> dict[str, int]:
    """Count every check in one pass per source; raise for the first step's first bad check.

    The steps' order is the order errors are raised in (a check that reads which row is the
    logged one comes after the check of that). ``extra`` counts ride along on the first
    step's source; their values are returned.
    """
    extra = extra or {}
    sources: list[_Source] = []
    for source, _ in steps:
        if all(source is not seen for seen in sources):
            sources.append(source)
    queries = []
    for at, source in enumerate(sources):
        sums = [
            check.bad.sum().alias(f"__rke_c{i}_{j}")
            for i, (where, checks) in enumerate(steps)
            if where is source
            for j, check in enumerate(checks)
        ]
        more = [expr.alias(name) for name, expr in extra.items()] if at == 0 else []
        queries.append(source.frame.select(*sums, *more))
    counts: dict[str, int] = {}
    for frame in pl.collect_all(queries, engine=engine):
        counts.update({name: int(frame[name][0] or 0) for name in frame.columns})
    for i, (source, checks) in enumerate(steps):
        for j, check in enumerate(checks):
            if counts[f"__rke_c{i}_{j}"]:
                _raise(source, check, counts[f"__rke_c{i}_{j}"], engine)
    return {name: counts[name] for name in extra}


def _raise(source: _Source, check: _Check, n: int, engine: Engine) -> None:
    """Raise ``check``'s error naming its first rows (input order) or contexts (sorted)."""
    ids = source.ids
    if source.per_row:
        found = source.frame.with_row_index(_ROW).filter(check.bad).sort(_ROW)
        shown = found.head(_EXAMPLES).select(_ROW, *ids, *check.values)
    else:
        found = source.frame.filter(check.bad).sort(ids, nulls_last=True)
        shown = found.head(_EXAMPLES).select(*ids, *check.values)
    frame = shown.collect(engine=engine)
    rename = {name: name.removeprefix("__rke_") for name in frame.columns if name != _ROW}
    examples = _shown(
        frame.rename(rename),
        [rename.get(c, c) for c in ids],
        [rename.get(c, c) for c in check.values],
    )
    raise ColumnValueError(check.message.format(n=n, examples=examples))


def check_schema(schema: pl.Schema, log: Log, tune: Tuning) -> None:
    """Missing columns, and dtypes the estimators cannot read, before any data is read."""
    present = list(schema.names())
    numeric = [
        ("propensity", log.propensity),
        ("reward", log.reward),
        *(("target", column) for column in log.targets.values()),
        *((("reward_model", log.reward_model),) if log.reward_model is not None else ()),
        *(("target_reward_model", c) for c in log.target_reward_model.values()),
    ]
    ids = [("by", b) for b in log.by] + [
        (option, name)
        for option, name in (("query", log.query), ("item", log.item), ("logged", log.logged))
        if name is not None
    ]
    for option, name in [*ids, *numeric]:
        if name not in schema:
            msg = (
                f"column {name!r} (option {option}=) is not in the input; columns present: "
                f"{present}"
            )
            raise ColumnNotFoundError(msg)
    for option, name in numeric:
        dtype = schema[name]
        if not (dtype.is_numeric() or dtype in (pl.Boolean, pl.Null)):
            msg = f"column {name!r} (option {option}=) must be numeric (int or float), got {dtype}"
            raise ColumnTypeError(msg)
    for option, name in ids:
        if schema[name].is_nested():
            msg = f"column {name!r} (option {option}=) must hold scalar ids, got {schema[name]}"
            raise ColumnTypeError(msg)
    if log.logged is not None and schema[log.logged] != pl.Boolean:
        msg = (
            f"column {log.logged!r} (option logged=) must be Boolean (True on the logged "
            f"action's row), got {schema[log.logged]}"
        )
        raise ColumnTypeError(msg)
    if POLICY in log.by:
        msg = f"by= must not name a column {POLICY!r}: the results name the target policy so"
        raise InvalidOptionError(msg)


def _value_checks(log: Log, tune: Tuning, *, on: pl.Expr | None) -> list[_Check]:
    """The per-row checks of the logged decisions (``on``: which rows are logged ones)."""

    def only(bad: pl.Expr) -> pl.Expr:
        return bad if on is None else on & bad

    where = "" if on is None else " on logged rows"
    p = pl.col(log.propensity).cast(_F64)
    checks = [
        _Check(
            only(_not_probability(p, zero_allowed=False)),
            [log.propensity],
            f"column {log.propensity!r} (option propensity=) must hold the logging policy's "
            f"probability of the logged action, in (0, 1]{where}: {{n}} row(s) hold 0, a value "
            "above 1, null or NaN, {examples}. A propensity of 0 says the logged action could "
            "not have been logged: the log or its propensities are wrong",
        ),
        _Check(
            only(_not_finite(pl.col(log.reward).cast(_F64))),
            [log.reward],
            f"column {log.reward!r} (option reward=) must hold a finite reward{where}: {{n}} "
            "row(s) hold null, NaN or inf, {examples}",
        ),
    ]
    if "replay" in tune.estimators:
        for policy, column in log.targets.items():
            t = pl.col(column).cast(_F64)
            checks.append(
                _Check(
                    only(~t.is_in([0.0, 1.0]).fill_null(False)),
                    [column],
                    f"estimator 'replay' needs a deterministic target policy, but column "
                    f"{column!r} (policy {policy!r}) gives the logged action a probability "
                    f"other than 0 or 1{where} in {{n}} row(s), {{examples}}; leave 'replay' "
                    "out for a stochastic policy",
                )
            )
    return checks


def validate_events(lf: pl.LazyFrame, log: Log, tune: Tuning, engine: Engine) -> int:
    """The event form's value checks, in one pass over the log (a second names the rows).

    Returns the number of rows.
    """
    checks: list[_Check] = []
    if log.query is not None:
        checks.append(
            _Check(
                pl.col(log.query).is_null(),
                [log.query],
                f"{{n}} row(s) have a null {log.query!r} (option query=, the event id), "
                "{examples}",
            )
        )
    for policy, column in log.targets.items():
        checks.append(
            _Check(
                _not_probability(pl.col(column).cast(_F64), zero_allowed=True),
                [column],
                f"column {column!r} (option target=, policy {policy!r}) must hold the target "
                "policy's probability of the logged action, in [0, 1]: {n} row(s) do not "
                "(null, NaN, below 0 or above 1), {examples}",
            )
        )
    checks += _value_checks(log, tune, on=None)
    for option, columns in (
        ("reward_model", [log.reward_model] if log.reward_model is not None else []),
        ("target_reward_model", list(log.target_reward_model.values())),
    ):
        checks += [
            _Check(
                _not_finite(pl.col(c).cast(_F64)),
                [c],
                f"column {c!r} (option {option}=) must hold a finite prediction: {{n}} row(s) "
                "hold null, NaN or inf, {examples}",
            )
            for c in columns
        ]
    rows = _Source(lf, [log.query] if log.query else [], per_row=True)
    steps = [(rows, checks)]
    if log.query is not None:
        repeated = lf.group_by(log.context).agg(pl.len().alias("__rke_rows"))
        unique_ids = _Check(
            pl.col("__rke_rows") > 1,
            ["__rke_rows"],
            f"{{n}} event id(s) in {log.query!r} (option query=) occur on more than one "
            "row, {examples}; in the event form each row is one logged decision with "
            "its own id (use logged= for one row per candidate action)",
        )
        steps.append((_Source(repeated, log.context, per_row=False), [unique_ids]))
    counts = _check_all(steps, engine=engine, extra={_N_ROWS: pl.len()})
    return counts[_N_ROWS]


def validate_candidates(
    lf: pl.LazyFrame, log: Log, tune: Tuning, engine: Engine, site: Site
) -> int:
    """The candidate form's checks: rows, then contexts; warns where the log lacks support.

    Returns the number of rows.
    """
    # off_policy only calls this with both (the candidate form needs them)
    assert log.logged is not None
    assert log.query is not None
    logged = pl.col(log.logged)
    ids = log.context
    first: list[_Check] = [
        _Check(
            pl.any_horizontal(pl.col(c).is_null() for c in [log.query, log.logged]),
            [log.query, log.logged],
            f"{{n}} row(s) have a null {log.query!r} (option query=, the context) or "
            f"{log.logged!r} (option logged=), {{examples}}",
        )
    ]
    checks = [
        _Check(
            _not_probability(pl.col(c).cast(_F64), zero_allowed=True),
            [*ids, c],
            f"column {c!r} (option target=, policy {policy!r}) must hold the target policy's "
            "probability of each candidate action, in [0, 1]: {n} row(s) do not (null, NaN, "
            "below 0 or above 1), {examples}",
        )
        for policy, c in log.targets.items()
    ]
    p = pl.col(log.propensity).cast(_F64)
    checks.append(
        _Check(
            ~logged & p.is_not_null() & (p.is_nan() | (p < 0) | (p > 1)),
            [*ids, log.propensity],
            f"column {log.propensity!r} (option propensity=) must be null or in [0, 1] on the "
            "rows that were not logged: {n} row(s) are not, {examples}",
        )
    )
    checks += [
        _Check(check.bad, [*ids, *check.values], check.message)
        for check in _value_checks(log, tune, on=logged)
    ]
    if log.reward_model is not None:
        checks.append(
            _Check(
                _not_finite(pl.col(log.reward_model).cast(_F64)),
                [*ids, log.reward_model],
                f"column {log.reward_model!r} (option reward_model=) must hold a finite "
                "prediction on every candidate row: {n} row(s) hold null, NaN or inf, {examples}",
            )
        )
    sums = {policy: f"__rke_sum({c})" for policy, c in log.targets.items()}
    aggs = [logged.cast(pl.UInt32).sum().alias(_N_LOGGED)]
    aggs += [pl.col(c).cast(_F64).sum().alias(sums[p]) for p, c in log.targets.items()]
    if log.item is not None:
        aggs += [pl.len().alias("__rke_rows"), pl.col(log.item).n_unique().alias("__rke_items")]
    contexts = lf.group_by(ids).agg(aggs)
    # Which row is logged is checked first: every check of the logged rows reads it.
    shape = [
        _Check(
            pl.col(_N_LOGGED) != 1,
            [_N_LOGGED],
            f"each context (option query=) must have exactly one row with {log.logged!r} "
            "True (the logged action): {n} context(s) do not, {examples}",
        )
    ]
    if log.item is not None:
        shape.append(
            _Check(
                pl.col("__rke_rows") > pl.col("__rke_items"),
                ["__rke_rows", "__rke_items"],
                f"each candidate action (option item={log.item!r}) may occur once per "
                "context: {n} context(s) repeat one, {examples}",
            )
        )
    unsupported = {
        f"__rke_unsupported_{i}": ((p == 0) & (pl.col(c).cast(_F64) > 0)).fill_null(False).sum()
        for i, c in enumerate(log.targets.values())
    }
    sums_to_one = [
        _Check(
            (pl.col(sums[policy]) - 1).abs() > SUM_TOLERANCE,
            [sums[policy]],
            f"the target probabilities in column {c!r} (policy {policy!r}) must sum to 1 over "
            f"each context's candidate actions (within {SUM_TOLERANCE:g}): {{n}} context(s) do "
            "not, {examples}; a policy putting mass on actions missing from the log cannot be "
            "evaluated by the DM term",
        )
        for policy, c in log.targets.items()
    ]
    rows, per_context = _Source(lf, [], per_row=True), _Source(contexts, ids, per_row=False)
    counts = _check_all(
        [(rows, first), (per_context, shape), (rows, checks), (per_context, sums_to_one)],
        engine=engine,
        extra={_N_ROWS: pl.len(), **unsupported},
    )
    for i, (policy, column) in enumerate(log.targets.items()):
        if counts[f"__rke_unsupported_{i}"]:
            _warn_unsupported(lf, log, policy, column, engine=engine, site=site)
    return counts[_N_ROWS]


def _warn_unsupported(
    lf: pl.LazyFrame, log: Log, policy: str, column: str, *, engine: Engine, site: Site
) -> None:
    """Warn that the target puts mass on candidates the logging policy never takes."""
    p = pl.col(log.propensity).cast(_F64)
    missing = (p == 0) & (pl.col(column).cast(_F64) > 0)
    found = (
        lf.filter(missing.fill_null(False))
        .group_by(log.context)
        .agg(pl.col(column).cast(_F64).sum().alias("mass"))
    )
    n, mass = found.select(pl.len(), pl.col("mass").mean()).collect(engine=engine).row(0)
    first = found.sort(log.context, nulls_last=True).head(_EXAMPLES).collect(engine=engine)
    warn_at(
        f"policy {policy!r} (column {column!r}) puts probability on candidate actions that the "
        f"logging policy never takes (propensity 0) in {n} context(s), on average {mass:.3g} of "
        f"the mass there, {_shown(first, log.context, ['mass'])}. The importance-weighted "
        "estimates (ips, snips, dr, sndr, switch_dr, dr_os, replay) never see those actions, "
        "so they are biased; dm is not",
        WeightWarning,
        site,
    )
