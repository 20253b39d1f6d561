"""Slate and ranking off-policy estimators over a long log of (slate, position) rows.

Each row of the log is one position of one logged slate (``query=``, ``position=``), with the
reward observed there and the probabilities of the shown item under the logging policy
(``propensity=``) and under each target policy (``target=``). This module turns them into the
per-row *parts* of :mod:`polars_rankeval.offpolicy._core`, which sums them per target policy
and segment and adds standard errors, intervals and weight diagnostics.

The definitions follow Open Bandit Pipeline's ``obp/ope/estimators_slate.py`` (McInerney et
al. 2020; Kiyohara et al. 2022) and vw-estimators' ``slates/pseudo_inverse.py`` (Swaminathan
et al. 2017, example 4). With ``n`` the number of slates and ``w`` a weight target/logging:

========== =================================================================================
sips       sum(r * w_joint) / n                                         (SlateStandardIPS)
iips       sum(r * w_item_position) / n                              (SlateIndependentIPS)
rips       sum(r * w_cascade) / n                               (SlateRewardInteractionIPS)
snsips     sum(r * w_joint / mean_rows(w_joint)) / n          (SelfNormalizedSlateStandardIPS)
sniips     sum_l sum(r * w_ip at l) / sum(w_ip at l) * n_l / n   (... per position l, obp's
snrips     the same with w_cascade                                  SN base class)
pi         sum(r * (sum_slate(w_item_position) - (K - 1))) / n, K = the slate's rows (PI)
cascade_dr sum(w_cascade * (r - q) + w_cascade_prev * e) / n        (SlateCascadeDoublyRobust)
========== =================================================================================

where ``q`` is the reward model's value of the logged item (``reward_model=``), ``e`` the
reward model averaged over the target policy's choices at that position given the items above
(``target_reward_model=``) and ``w_cascade_prev`` the cascade weight of the position above (1
at the top).
"""

from __future__ import annotations

import difflib
import os
import warnings
from collections.abc import Mapping, Sequence

import polars as pl

from polars_rankeval._engine.columns import as_polars
from polars_rankeval._engine.evaluate import Engine
from polars_rankeval._engine.options import check_choice
from polars_rankeval._engine.tables import _scan_path
from polars_rankeval._engine.warn import Site, user_site
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    ColumnValueError,
    InvalidOptionError,
    UnknownMetricError,
    WeightWarning,
)
from polars_rankeval.offpolicy._core import WEIGHT, Interval, Parts, estimate

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
    names = estimators.split(",") if isinstance(estimators, str) else list(estimators)
    out: list[str] = []
    for name in names:
        if not isinstance(name, str):
            msg = f"estimators= must hold estimator names (str), got {name!r}"
            raise InvalidOptionError(msg)
        key = name.strip().lower().replace("-", "_")
        if key not in ESTIMATORS:
            close = difflib.get_close_matches(key, ESTIMATORS, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            msg = f"unknown estimator {name!r}: the slate estimators are {list(ESTIMATORS)}{hint}"
            raise UnknownMetricError(msg)
        if key not in out:
            out.append(key)
    if not out:
        msg = f"estimators= names no estimator; choose from {list(ESTIMATORS)}"
        raise InvalidOptionError(msg)
    return tuple(out)


def _column(option: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        msg = f"option {option}= must be a column name (str), got {value!r}"
        raise InvalidOptionError(msg)
    return value


def _kinds(option: str, value: object) -> dict[str, str]:
    """A column name (conditional probabilities) or a dict {kind: column}, as {kind: column}."""
    if isinstance(value, str):
        return {"conditional": _column(option, value)}
    if isinstance(value, Mapping) and value:
        out: dict[str, str] = {}
        for kind, column in value.items():
            if kind not in KINDS:
                close = difflib.get_close_matches(str(kind), KINDS, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                msg = f"option {option}= has an unknown kind {kind!r}: the kinds are {list(KINDS)}"
                raise InvalidOptionError(msg + hint)
            out[kind] = _column(option, column)
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
        return dict.fromkeys(default, _column("target", column))

    if isinstance(target, str):
        return {target: bare(target)}
    out: dict[str, dict[str, str]] = {}
    if isinstance(target, Mapping):
        for policy, spec in target.items():
            name = _column("target", policy)
            out[name] = bare(spec) if isinstance(spec, str) else _kinds(f"target[{name!r}]", spec)
    elif isinstance(target, Sequence):
        for column in target:
            if _column("target", column) in out:
                msg = f"option target= names the column {column!r} twice"
                raise InvalidOptionError(msg)
            out[column] = bare(column)
    if not out:
        msg = "option target= must name the target policy's column(s), got " + repr(target)
        raise InvalidOptionError(msg)
    return out


def _per_policy(option: str, value: object, policies: Sequence[str]) -> dict[str, str]:
    """An option holding one column per target policy, as {policy: column}."""
    if value is None:
        return {}
    if isinstance(value, str):
        if len(policies) != 1:
            msg = (
                f"option {option}= must name one column per target policy ({list(policies)}): "
                f"pass a dict {{policy: column}} or a list in the order of target=, got {value!r}"
            )
            raise InvalidOptionError(msg)
        return {policies[0]: value}
    if isinstance(value, Mapping):
        out = {str(k): _column(option, v) for k, v in value.items()}
    elif isinstance(value, Sequence):
        columns = [_column(option, v) for v in value]
        if len(columns) != len(policies):
            msg = (
                f"option {option}= lists {len(columns)} column(s) for {len(policies)} target "
                f"policies {list(policies)}; give one per policy, in the order of target="
            )
            raise InvalidOptionError(msg)
        out = dict(zip(policies, columns, strict=True))
    else:
        msg = f"option {option}= must be a column, a list or a dict {{policy: column}}"
        raise InvalidOptionError(msg)
    if set(out) != set(policies):
        msg = (
            f"option {option}= must give a column for each target policy {list(policies)}, "
            f"got one for {sorted(out)}"
        )
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


def _probability(spec: Mapping[str, str], kind: str, slate: list[str], position: str) -> pl.Expr:
    """The kind's probability: its column, or derived from the conditional probabilities."""
    if kind in spec:
        return pl.col(spec[kind]).cast(pl.Float64)
    c = pl.col(spec["conditional"]).cast(pl.Float64)
    if kind == "joint":
        return c.log().sum().over(slate).exp()
    return c.log().cum_sum().over(slate, order_by=position).exp()


def _weight(
    logging: Mapping[str, str],
    target: Mapping[str, str],
    kind: str,
    slate: list[str],
    position: str,
) -> pl.Expr:
    """Target / logging probability of ``kind`` for each row."""
    if kind in _DERIVED and kind not in logging and kind not in target:
        # Both from conditional probabilities: one running sum of log-ratios, so that a long
        # slate's tiny joint probabilities never underflow to 0/0. A target probability of 0
        # gives log 0 = -inf, and exp(-inf) = 0: the weight of every position from there on.
        ratio = (
            pl.col(target["conditional"]).cast(pl.Float64).log()
            - pl.col(logging["conditional"]).cast(pl.Float64).log()
        )
        total = (
            ratio.sum().over(slate)
            if kind == "joint"
            else ratio.cum_sum().over(slate, order_by=position)
        )
        return total.exp()
    return _probability(target, kind, slate, position) / _probability(
        logging, kind, slate, position
    )


def slate_parts(
    lf: pl.LazyFrame,
    *,
    estimators: Sequence[str],
    policy: str,
    logging: Mapping[str, str],
    target: Mapping[str, str],
    query: str,
    position: str,
    reward: str,
    reward_model: str | None,
    target_reward_model: str | None,
    by: Sequence[str],
) -> pl.LazyFrame:
    """One target policy's per-row parts: ``policy``, ``by``, query, position and the parts.

    Examples
    --------
    >>> log = pl.LazyFrame(
    ...     {
    ...         "query": [1, 1],
    ...         "position": [2, 1],
    ...         "reward": [1.0, 0.0],
    ...         "p": [0.5, 0.5],
    ...         "pe": [1.0, 0.5],
    ...     }
    ... )
    >>> slate_parts(
    ...     log,
    ...     estimators=["rips"],
    ...     policy="new",
    ...     logging={"conditional": "p"},
    ...     target={"conditional": "pe"},
    ...     query="query",
    ...     position="position",
    ...     reward="reward",
    ...     reward_model=None,
    ...     target_reward_model=None,
    ...     by=[],
    ... ).select("position", "rips__m").collect()
    shape: (2, 2)
    ┌──────────┬─────────┐
    │ position ┆ rips__m │
    │ ---      ┆ ---     │
    │ i64      ┆ f64     │
    ╞══════════╪═════════╡
    │ 2        ┆ 2.0     │
    │ 1        ┆ 0.0     │
    └──────────┴─────────┘
    """
    slate = [*by, query]
    kinds = {NEEDS[name] for name in estimators}
    if _has(logging, "joint") and _has(target, "joint"):
        kinds.add("joint")  # the diagnostics read the joint weight
    r = pl.col(reward).cast(pl.Float64)
    w = {kind: pl.col(_W + kind) for kind in kinds}
    out = lf.select(
        pl.lit(policy, pl.String).alias(_POLICY),
        *by,
        query,
        position,
        r.alias(reward),
        *(_weight(logging, target, kind, slate, position).alias(_W + kind) for kind in kinds),
        *([pl.col(reward_model).cast(pl.Float64).alias("__rke_q")] if reward_model else []),
        *(
            [pl.col(target_reward_model).cast(pl.Float64).alias("__rke_e")]
            if target_reward_model
            else []
        ),
    )
    parts: list[pl.Expr] = []
    for name in estimators:
        wk = w[NEEDS[name]]
        if name in ("sips", "iips", "rips"):
            parts.append((r * wk).alias(f"{name}__m"))
        elif name == "snsips":
            # obp divides by the weights' mean over ROWS (not slates) and by the number of
            # slates, i.e. sum(r*w) / sum_rows(w) * n_rows / n_slates; the last factor is the
            # segment's mean slate length (exactly the slate size when slates are complete; the
            # standard error takes it as fixed, so with slates of varying length it is close).
            length = pl.len().over(by) if by else pl.len()
            slates = pl.col(query).n_unique().over(by) if by else pl.col(query).n_unique()
            parts += [
                (r * wk * length.cast(pl.Float64) / slates.cast(pl.Float64)).alias(f"{name}__a"),
                wk.alias(f"{name}__b"),
            ]
        elif name in PER_POSITION:
            parts += [(r * wk).alias(f"{name}__a"), wk.alias(f"{name}__b")]
        elif name == "pi":
            # vw-estimators: w = sum_k p_pred_k / p_log_k - (K - 1) over the slate's K slots;
            # its slate reward is the sum of the positions' rewards.
            pseudo = wk.sum().over(slate) - (pl.len().over(slate).cast(pl.Float64) - 1.0)
            parts.append((r * pseudo).alias(f"{name}__m"))
        else:  # cascade_dr, obp L682-689: iw_prev is the previous position's weight, 1 on top
            previous = wk.shift(1).over(slate, order_by=position).fill_null(1.0)
            dr = wk * (r - pl.col("__rke_q")) + previous * pl.col("__rke_e")
            parts.append(dr.alias(f"{name}__m"))
    if "joint" in kinds:
        # The slate's joint weight once per slate (its top row), for ess and the largest weight.
        top = pl.col(position) == pl.col(position).min().over(slate)
        parts.append(pl.when(top).then(w["joint"]).alias(WEIGHT))
    return out.select(_POLICY, *by, query, position, *parts)


def parts_sets(
    rows: pl.LazyFrame,
    estimators: Sequence[str],
    *,
    keys: list[str],
    query: str,
    position: str,
    site: Site | None = None,
) -> list[Parts]:
    """The core's parts from :func:`slate_parts` rows (all targets stacked): one or two sets.

    obp normalises ``sniips``/``snrips`` per position but ``snsips`` over all rows, so the
    per-position ones are a second set of parts with the position as the term. The first set
    has one row per slate (its rows' parts summed), since the core counts a term's rows as its
    units. Each set is summed by :func:`~polars_rankeval.offpolicy._core.estimate` alone.
    """
    out = []
    names = rows.collect_schema().names()
    for group, term in (
        ([n for n in estimators if n not in PER_POSITION], None),
        ([n for n in estimators if n in PER_POSITION], position),
    ):
        if not group:
            continue
        wanted = {f"{n}__{part}" for n in group for part in "mab"} | {WEIGHT}
        kept = [c for c in names if c in wanted]
        frame = rows.select(*keys, query, position, *kept)
        if term is None:
            frame = frame.group_by([*keys, query]).agg(
                *(pl.col(c).sum() for c in kept if c != WEIGHT),
                *(pl.col(c).max() for c in kept if c == WEIGHT),  # non-null on one row
            )
        out.append(Parts(frame, keys=keys, estimators=group, unit=query, term=term, site=site))
    return out


# -- the public function ------------------------------------------------------------------


def slate_off_policy(
    data: object,
    estimators: str | Sequence[str] = "sips,rips",
    *,
    query: str = "query",
    position: str = "position",
    reward: str = "reward",
    propensity: str | Mapping[str, str] = "propensity",
    target: str | Sequence[str] | Mapping[str, str | Mapping[str, str]],
    reward_model: str | None = None,
    target_reward_model: str | Sequence[str] | Mapping[str, str] | None = None,
    by: str | Sequence[str] | None = None,
    alpha: float = 0.05,
    per_query: bool = False,
    baseline: str | None = None,
    interval: Interval = "normal",
    n_resamples: int = 1000,
    seed: int = 0,
    engine: Engine = "auto",
) -> pl.DataFrame:
    """Estimate target ranking policies' values from a slate log another policy produced.

    The log has one row per shown position of each logged slate. Estimators (``n`` slates,
    ``w`` = target probability / logging probability of the kind the estimator reads):

    * ``sips`` (joint ``w``), ``iips`` (item-position ``w``), ``rips`` (cascade ``w``, reward
      interactions down the slate): ``sum(reward * w) / n``, obp's definitions;
    * ``snsips``, ``sniips``, ``snrips``: their self-normalised forms, exactly as obp computes
      them (``snsips`` divides by the mean joint weight over rows; ``sniips`` and ``snrips``
      by the mean weight of each position);
    * ``pi``: the pseudo-inverse estimator (vw-estimators; valid when the logging policy
      draws positions independently): slate weight ``sum(w_item_position) - (K - 1)`` times
      the slate's summed reward;
    * ``cascade_dr``: Cascade-DR (Kiyohara et al. 2022) with your reward model.

    Parameters
    ----------
    data
        The log: a DataFrame, LazyFrame, pandas or Arrow table, or a path to a Parquet/CSV file.
    estimators
        Names from the list above, or one comma-separated string.
    query
        The slate id column (a slate is one value of ``by`` and ``query``).
    position
        The position column (integers; any order: 0- or 1-based, rows in any order).
    reward
        The reward observed at the row's position (a click, a rating; any real number).
    propensity
        The logging policy's probabilities of the shown items. A column name: the
        **conditional** probability of the shown item at its position given the items above
        (what a Plackett-Luce or top-down sampler logs); the joint probability is then its
        product over the slate and the cascade probability its running product down the slate.
        Or a dict ``{kind: column}`` with kinds ``"conditional"``, ``"joint"`` (the whole
        slate's probability, the same on each of its rows), ``"item_position"`` (the marginal
        probability of the item at that position) and ``"cascade"`` (the probability of the
        items from the top to this position): obp's ``pscore``, ``pscore_item_position`` and
        ``pscore_cascade``. A kind given directly is used as given. ``sips``/``snsips`` read
        the joint, ``rips``/``snrips``/``cascade_dr`` the cascade, ``iips``/``sniips``/``pi``
        the item-position probability, which cannot be derived from conditional ones.
    target
        The target policies' probabilities of the same items, one policy or several evaluated
        in one pass: a column, a list of columns (each names its policy), or a dict
        ``{policy: column}`` or ``{policy: {kind: column}}``. A bare column holds the kinds that
        ``propensity``'s column holds, when it gives one column (a column name: conditional;
        ``{"conditional": "p", "item_position": "p"}``: both).
    reward_model
        ``cascade_dr``: the reward model's value for the logged item at its position, given
        the items above (obp's ``q_hat`` of the logged action).
    target_reward_model
        ``cascade_dr``: the reward model averaged over the target policy's choice at the row's
        position given the logged items above, ``sum_a pi_e(a | above) * q_hat(a)``; a column
        per target policy (a column, a list in the order of ``target``, or a dict).
    by
        Segment column(s): one estimate per target policy and segment.
    alpha
        Intervals at level ``1 - alpha``.
    per_query
        One row per (policy, segment, slate) with each estimator's influence value, whose mean
        is the estimate: the per-query table that pairs target policies
        (:func:`~polars_rankeval.compare_per_query`).
    baseline
        A target policy's name: compare the others with it, paired by slate.
    interval
        ``"normal"`` (value ± z * se) or ``"bootstrap"`` (slates resampled).
    n_resamples, seed
        The bootstrap's draws and random seed.
    engine
        Polars' engine: ``"auto"``, ``"in-memory"`` or ``"streaming"``.

    Returns
    -------
    pl.DataFrame
        ``metric`` (the estimator), ``policy``, the ``by`` columns, ``n_queries`` (slates),
        ``value``, ``se``, ``ci_low``, ``ci_high`` and the joint weights' ``ess``,
        ``max_weight`` and ``mean_weight`` (null where the joint weight is not known). A
        self-normalised estimate whose weights sum to 0 (in some position, for ``sniips`` and
        ``snrips``) is null, where obp gives NaN.

    Raises
    ------
    ColumnNotFoundError, ColumnTypeError
        A named column is missing or not numeric (``position``: not integer).
    ColumnValueError
        Naming the first rows: a null slate id or position, a position shown twice in a
        slate, a logging probability outside (0, 1] or a target one outside [0, 1] (or null,
        NaN), a null/NaN reward, a joint probability that differs within a slate, a cascade
        probability that grows down a slate.
    InvalidOptionError
        An estimator whose probabilities or reward model are not given (naming the option).

    Examples
    --------
    Twelve slates of two positions, shown with probability 1/2 each; the new ranker puts the
    clicked top item of the even slates first with probability 0.6 (0.4 in the odd ones):

    >>> log = pl.DataFrame(
    ...     {
    ...         "query": [i // 2 for i in range(24)],
    ...         "position": [1, 2] * 12,
    ...         "reward": [1.0, 0.0, 0.0, 0.0] * 6,
    ...         "p": [0.5] * 24,
    ...         "new": [0.6, 0.5, 0.4, 0.5] * 6,
    ...     }
    ... )
    >>> slate_off_policy(log, "sips,rips", propensity="p", target="new").select(
    ...     "metric", "policy", "n_queries", "value", "ess"
    ... )
    shape: (2, 5)
    ┌────────┬────────┬───────────┬───────┬───────────┐
    │ metric ┆ policy ┆ n_queries ┆ value ┆ ess       │
    │ ---    ┆ ---    ┆ ---       ┆ ---   ┆ ---       │
    │ str    ┆ str    ┆ i64       ┆ f64   ┆ f64       │
    ╞════════╪════════╪═══════════╪═══════╪═══════════╡
    │ sips   ┆ new    ┆ 12        ┆ 0.6   ┆ 11.538462 │
    │ rips   ┆ new    ┆ 12        ┆ 0.6   ┆ 11.538462 │
    └────────┴────────┴───────────┴───────┴───────────┘
    """
    site = user_site()
    names = parse_estimators(estimators)
    engine = check_choice("engine", engine, ["auto", "in-memory", "streaming"])
    for option, value in (("query", query), ("position", position), ("reward", reward)):
        _column(option, value)
    by_list = [] if by is None else [by] if isinstance(by, str) else list(by)
    for column in by_list:
        _column("by", column)
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
    expected = _per_policy("target_reward_model", target_reward_model, list(targets))
    if "cascade_dr" in names and (reward_model is None or not expected):
        msg = (
            "estimator 'cascade_dr' needs reward_model= (the reward model's value of the logged "
            "item at its position) and target_reward_model= (that model averaged over the "
            "target policy's choice at the position, a column per target policy)"
        )
        raise InvalidOptionError(msg)

    lf = _scan_path(data, "data") if isinstance(data, (str, os.PathLike)) else as_polars(data)
    lf = lf.lazy()
    roles: list[tuple[str, str, str]] = [
        (query, "query", "id"),
        (position, "position", "int"),
        (reward, "reward", "num"),
        *((c, "by", "id") for c in by_list),
        *((c, "propensity", "num") for c in logging.values()),
        *((c, "target", "num") for spec in targets.values() for c in spec.values()),
        *(((reward_model, "reward_model", "num"),) if reward_model else ()),
        *((c, "target_reward_model", "num") for c in expected.values()),
    ]
    _check_schema(lf, roles)
    numbers = [(reward, "reward")]
    numbers += [(reward_model, "reward_model")] if reward_model else []
    numbers += [(c, "target_reward_model") for c in expected.values()]
    checks = _log_checks(
        logging, targets, numbers, slate=[*by_list, query], query=query, position=position
    )
    _check_values(lf, checks, [*by_list, query, position], engine)

    rows = pl.concat(
        [
            slate_parts(
                lf,
                estimators=names,
                policy=policy,
                logging=logging,
                target=spec,
                query=query,
                position=position,
                reward=reward,
                reward_model=reward_model,
                target_reward_model=expected.get(policy),
                by=by_list,
            )
            for policy, spec in targets.items()
        ],
        how="vertical",
    )
    keys = [_POLICY, *by_list]
    results: list[pl.DataFrame] = []
    for parts in parts_sets(rows, names, keys=keys, query=query, position=position, site=site):
        with warnings.catch_warnings():
            if results:  # the same joint weights: warn about them once
                warnings.simplefilter("ignore", WeightWarning)
            results.append(
                estimate(
                    parts,
                    alpha=alpha,
                    per_query=per_query,
                    baseline=baseline,
                    interval=interval,
                    n_resamples=n_resamples,
                    seed=seed,
                    engine=engine,
                )
            )
    return _merge(results, names, keys, query, per_query=per_query, baseline=baseline)


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


def _merge(
    results: list[pl.DataFrame],
    names: Sequence[str],
    keys: list[str],
    query: str,
    *,
    per_query: bool,
    baseline: object,
) -> pl.DataFrame:
    """One result from the two estimate calls, estimators in the order asked for."""
    if len(results) == 1:
        out = results[0]
    elif per_query and baseline is None:
        on = [*keys, query]
        out = results[0].join(results[1], on=on, how="full", coalesce=True, nulls_equal=True)
        return out.select(*on, *names).sort(on, nulls_last=True)
    else:
        out = pl.concat(results, how="vertical")
    if "metric" not in out.columns:
        return out
    order = {name: i for i, name in enumerate(names)}
    rank = pl.col("metric").replace_strict(order, default=len(order), return_dtype=pl.Int64)
    return out.with_row_index("__rke_i").sort(rank, "__rke_i").drop("__rke_i")
