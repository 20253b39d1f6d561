"""The options and the checks of a slate log: what :func:`slate_off_policy` reads, and how.

The options are checked before any row is read (:func:`prepare`), the log's columns and values
when the parts are built (:class:`SlateLog`): a slate whose positions repeat, a probability
outside (0, 1], a joint probability that differs within a slate are errors that name the
rows. :class:`SlateLog` is picklable, so Spark's workers build their partitions' parts with it.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import polars as pl

from polars_rankeval._engine.evaluate import Engine
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    ColumnValueError,
    InvalidOptionError,
)
from polars_rankeval.offpolicy._options import column_name, parse_names, per_policy

#: the estimators this module computes, in the order results list them
ESTIMATORS: tuple[str, ...] = (
    "sips",
    "iips",
    "rips",
    "snsips",
    "sniips",
    "snrips",
    "pi",
    "cascade_dr",
)
#: the kinds of slate probability a propensity or target column can hold
KINDS: tuple[str, ...] = ("conditional", "joint", "item_position", "cascade")
#: which probability each estimator weighs by
NEEDS: dict[str, str] = {
    "sips": "joint",
    "snsips": "joint",
    "iips": "item_position",
    "sniips": "item_position",
    "pi": "item_position",
    "rips": "cascade",
    "snrips": "cascade",
    "cascade_dr": "cascade",
}
#: the self-normalised estimators obp normalises per position (a term per position)
PER_POSITION = frozenset({"sniips", "snrips"})
_DERIVED = frozenset({"joint", "cascade"})  # the kinds the conditional probabilities give
_KIND_TEXT = {
    "conditional": "the probability of the shown item at its position given the items above",
    "joint": "the probability of the whole slate",
    "item_position": "the probability of the shown item at its position (marginal)",
    "cascade": "the probability of the slate's items from the top down to this position",
}
_POLICY = "policy"
_EXAMPLES = 3
_ROWS = "__rke_rows"
_W = "__rke_w_"  # + kind: the row's importance weight of that kind


def parse_estimators(estimators: str | Sequence[str]) -> tuple[str, ...]:
    """The estimator names, lower-cased, in order, each once.

    Examples
    --------
    >>> parse_estimators("sips, SNRIPS,sips,cascade-dr")
    ('sips', 'snrips', 'cascade_dr')
    """
    return parse_names(estimators, ESTIMATORS, "slate")


def _kinds(option: str, value: object) -> dict[str, str]:
    """A column name (conditional probabilities) or a dict {kind: column}, as {kind: column}."""
    if isinstance(value, str):
        return {"conditional": column_name(option, value)}
    if isinstance(value, Mapping) and value:
        out: dict[str, str] = {}
        for kind, column in value.items():
            if kind not in KINDS:
                close = difflib.get_close_matches(str(kind), KINDS, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                msg = f"option {option}= has an unknown kind {kind!r}: the kinds are {list(KINDS)}"
                raise InvalidOptionError(msg + hint)
            out[kind] = column_name(option, column)
        return out
    msg = (
        f"option {option}= must be a column of conditional probabilities or a dict "
        f"{{kind: column}} with kinds among {list(KINDS)}, got {value!r}"
    )
    raise InvalidOptionError(msg)


def _targets(target: object, default: Sequence[str] | None) -> dict[str, dict[str, str]]:
    """``target=`` as {policy: {kind: column}}; a bare column plays the kinds ``default``."""

    def bare(column: object) -> dict[str, str]:
        if default is None:
            msg = (
                f"option target= names the column {column!r} but propensity= gives several kinds "
                "in different columns, so which kind it holds is unclear: pass "
                "target={policy: {kind: column}}"
            )
            raise InvalidOptionError(msg)
        return dict.fromkeys(default, column_name("target", column))

    if isinstance(target, str):
        return {target: bare(target)}
    out: dict[str, dict[str, str]] = {}
    if isinstance(target, Mapping):
        for policy, spec in target.items():
            name = column_name("target", policy)
            out[name] = bare(spec) if isinstance(spec, str) else _kinds(f"target[{name!r}]", spec)
    elif isinstance(target, Sequence):
        for column in target:
            if column_name("target", column) in out:
                msg = f"option target= names the column {column!r} twice"
                raise InvalidOptionError(msg)
            out[column] = bare(column)
    if not out:
        msg = "option target= must name the target policy's column(s), got " + repr(target)
        raise InvalidOptionError(msg)
    return out


def _has(spec: Mapping[str, str], kind: str) -> bool:
    """Whether ``spec`` gives ``kind`` directly or through the conditional probabilities."""
    return kind in spec or (kind in _DERIVED and "conditional" in spec)


def _require(
    estimators: Sequence[str], logging: Mapping[str, str], targets: Mapping[str, dict[str, str]]
) -> None:
    """A clear error for the first estimator whose probabilities are not given."""
    for name in estimators:
        kind = NEEDS[name]
        derive = " (or 'conditional', from which it is derived)" if kind in _DERIVED else ""
        why = (
            ""
            if kind in _DERIVED
            else "; it cannot be derived from conditional probabilities. Where the logging "
            "policy draws each position independently the two are equal: "
            "propensity={'conditional': col, 'item_position': col}"
        )
        if not _has(logging, kind):
            msg = (
                f"estimator {name!r} needs the logging policy's {kind} probability "
                f"({_KIND_TEXT[kind]}): pass propensity={{{kind!r}: column}}{derive}{why}"
            )
            raise InvalidOptionError(msg)
        for policy, spec in targets.items():
            if not _has(spec, kind):
                msg = (
                    f"estimator {name!r} needs target policy {policy!r}'s {kind} probability "
                    f"({_KIND_TEXT[kind]}): pass target={{{policy!r}: {{{kind!r}: column}}}}"
                    f"{derive}"
                )
                raise InvalidOptionError(msg)


# -- checks -------------------------------------------------------------------------------


def _check_schema(lf: pl.LazyFrame, roles: Sequence[tuple[str, str, str]]) -> None:
    """Missing columns and wrong dtypes; ``roles`` holds (column, option, 'id'|'int'|'num')."""
    schema = lf.collect_schema()
    for column, option, dtype in roles:
        if column not in schema:
            msg = (
                f"column {column!r} (option {option}=) is not in the log; its columns are "
                f"{schema.names()}"
            )
            raise ColumnNotFoundError(msg)
        have = schema[column]
        if dtype == "int" and not have.is_integer():
            msg = f"column {column!r} (option {option}=) must hold integers, got {have}"
            raise ColumnTypeError(msg)
        if dtype == "num" and not (have.is_integer() or have.is_float() or have == pl.Boolean):
            msg = f"column {column!r} (option {option}=) must hold numbers, got {have}"
            raise ColumnTypeError(msg)


def _shown(frame: pl.DataFrame, ids: Sequence[str], value: str | None) -> str:
    label = "(" + ", ".join(ids) + ")"
    rows = []
    for row in frame.head(_EXAMPLES).iter_rows(named=True):
        text = "(" + ", ".join(repr(row[c]) for c in ids) + ")"
        text += f": {row[value]!r}" if value is not None else ""
        rows.append(text + (f" ({row[_ROWS]} rows)" if row.get(_ROWS, 1) > 1 else ""))
    return f"e.g. {label} {', '.join(rows)}"


def _check_values(
    lf: pl.LazyFrame,
    checks: Sequence[tuple[pl.Expr, str, str | None]],
    ids: Sequence[str],
    engine: Engine,
) -> None:
    """Raise for the first check that some rows fail: (flag, what is wrong, column shown)."""
    if not checks:
        return
    counts = lf.select(
        flag.fill_null(False).sum().alias(str(i)) for i, (flag, _, _) in enumerate(checks)
    ).collect(engine=engine)
    for i, (flag, what, value) in enumerate(checks):
        bad = counts[str(i)][0]
        if not bad:
            continue
        shown = [*ids, *([value] if value is not None and value not in ids else [])]
        first = (
            lf.filter(flag.fill_null(False))
            .group_by(shown)
            .agg(pl.len().alias(_ROWS))  # a repeated position is shown once, with its count
            .sort(list(ids), nulls_last=True)
            .head(_EXAMPLES)
            .collect(engine=engine)
        )
        msg = f"{bad} row(s) {what}, {_shown(first, ids, value)}"
        raise ColumnValueError(msg)


def _probability_checks(
    column: str, option: str, *, logging: bool
) -> tuple[pl.Expr, str, str | None]:
    p = pl.col(column).cast(pl.Float64)
    low = p <= 0 if logging else p < 0
    bad = p.is_null() | p.is_nan() | low | (p > 1)
    span = "(0, 1] (a logged item must have had a chance to be shown)" if logging else "[0, 1]"
    return bad, f"have a {option}= probability ({column!r}) outside {span}, null or NaN", column


# -- parts --------------------------------------------------------------------------------


def _log_checks(
    logging: Mapping[str, str],
    targets: Mapping[str, Mapping[str, str]],
    numbers: Sequence[tuple[str, str]],
    *,
    slate: list[str],
    query: str,
    position: str,
) -> list[tuple[pl.Expr, str, str | None]]:
    """The value checks of a slate log, in the order their errors are raised."""
    checks: list[tuple[pl.Expr, str, str | None]] = [
        (pl.col(query).is_null(), f"have a null slate id ({query!r}, option query=)", None),
        (pl.col(position).is_null(), f"have a null position ({position!r})", None),
        (
            pl.struct(*slate, position).is_duplicated(),
            "repeat a position within their slate (each position is shown once per slate)",
            None,
        ),
    ]
    checks += [
        _probability_checks(c, "propensity", logging=True) for c in dict.fromkeys(logging.values())
    ]
    checks += [
        _probability_checks(c, "target", logging=False)
        for spec in targets.values()
        for c in spec.values()
    ]
    for column, option in numbers:
        v = pl.col(column).cast(pl.Float64)
        what = f"have a {option}= value ({column!r}) that is null, NaN or infinite"
        checks.append((v.is_null() | v.is_nan() | v.is_infinite(), what, column))
    for option, spec in [("propensity", logging), *(("target", s) for s in targets.values())]:
        if "joint" in spec:
            what = (
                f"belong to a slate whose {option}= joint probability ({spec['joint']!r}) "
                "differs between its rows (it is one number per slate)"
            )
            checks.append((pl.col(spec["joint"]).n_unique().over(slate) > 1, what, spec["joint"]))
        if "cascade" in spec:
            # obp's check_rips_inputs: the probability of the items down to position l cannot
            # exceed that down to the position above.
            c = pl.col(spec["cascade"])
            grows = c > c.shift(1).over(slate, order_by=position)
            what = (
                f"have a {option}= cascade probability ({spec['cascade']!r}) above that of the "
                "position above (it must not grow down a slate)"
            )
            checks.append((grows, what, spec["cascade"]))
    return checks


@dataclass(frozen=True)
class SlateLog:
    """:func:`slate_off_policy`'s checked options: the columns and what each holds."""

    names: tuple[str, ...]
    query: str
    position: str
    reward: str
    by: tuple[str, ...]
    logging: Mapping[str, str]
    targets: Mapping[str, Mapping[str, str]]
    reward_model: str | None
    expected: Mapping[str, str]

    @property
    def keys(self) -> list[str]:
        """The columns one estimate is made per: the policy, then the segments."""
        return [_POLICY, *self.by]

    def check(self, lf: pl.LazyFrame, engine: Engine) -> None:
        """The log's columns and values, or an error naming the column or the rows."""
        by = list(self.by)
        roles: list[tuple[str, str, str]] = [
            (self.query, "query", "id"),
            (self.position, "position", "int"),
            (self.reward, "reward", "num"),
            *((c, "by", "id") for c in by),
            *((c, "propensity", "num") for c in self.logging.values()),
            *((c, "target", "num") for spec in self.targets.values() for c in spec.values()),
            *(((self.reward_model, "reward_model", "num"),) if self.reward_model else ()),
            *((c, "target_reward_model", "num") for c in self.expected.values()),
        ]
        _check_schema(lf, roles)
        numbers = [(self.reward, "reward")]
        numbers += [(self.reward_model, "reward_model")] if self.reward_model else []
        numbers += [(c, "target_reward_model") for c in self.expected.values()]
        checks = _log_checks(
            self.logging,
            self.targets,
            numbers,
            slate=[*by, self.query],
            query=self.query,
            position=self.position,
        )
        _check_values(lf, checks, [*by, self.query, self.position], engine)


def prepare(
    estimators: str | Sequence[str],
    *,
    query: str,
    position: str,
    reward: str,
    propensity: str | Mapping[str, str],
    target: str | Sequence[str] | Mapping[str, str | Mapping[str, str]],
    reward_model: str | None,
    target_reward_model: str | Sequence[str] | Mapping[str, str] | None,
    by: str | Sequence[str] | None,
) -> SlateLog:
    """The options of :func:`~polars_rankeval.slate_off_policy` checked, before any row."""
    names = parse_estimators(estimators)
    for option, value in (("query", query), ("position", position), ("reward", reward)):
        column_name(option, value)
    by_list = [] if by is None else [by] if isinstance(by, str) else list(by)
    for column in by_list:
        column_name("by", column)
    if _POLICY in by_list or query in by_list or position in by_list:
        msg = f"option by= must not hold 'policy', the query or the position column: {by_list}"
        raise InvalidOptionError(msg)
    logging = _kinds("propensity", propensity)
    # A bare target column plays the roles propensity='s one column plays: one kind, or several
    # kinds given by the same column (a logging policy that draws each position on its own,
    # whose conditional probability is also its item-position marginal).
    default = list(logging) if len(set(logging.values())) == 1 else None
    targets = _targets(target, default)
    _require(names, logging, targets)
    expected = per_policy("target_reward_model", target_reward_model, list(targets))
    if "cascade_dr" in names and (reward_model is None or not expected):
        msg = (
            "estimator 'cascade_dr' needs reward_model= (the reward model's value of the logged "
            "item at its position) and target_reward_model= (that model averaged over the "
            "target policy's choice at the position, a column per target policy)"
        )
        raise InvalidOptionError(msg)
    return SlateLog(
        names=names,
        query=query,
        position=position,
        reward=reward,
        by=tuple(by_list),
        logging=logging,
        targets=targets,
        reward_model=reward_model,
        expected=expected,
    )
