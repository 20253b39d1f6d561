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

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import polars as pl

from polars_rankeval._engine.evaluate import Engine
from polars_rankeval._engine.options import check_choice
from polars_rankeval._engine.warn import Site, user_site
from polars_rankeval.errors import InvalidOptionError, WeightWarning
from polars_rankeval.offpolicy._core import (
    WEIGHT,
    Interval,
    Parts,
    buckets,
    estimate,
    estimate_in_buckets,
)
from polars_rankeval.offpolicy._options import read_log
from polars_rankeval.offpolicy._slate_log import (
    _DERIVED,
    _POLICY,
    _W,
    NEEDS,
    PER_POSITION,
    SlateLog,
    _has,
    prepare,
)


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
            # slates: sum(r*w) / sum_rows(w) * n_rows / n_slates. The last factor, the mean
            # slate length, is the core's scale: l = 1 per row sums to the rows, so it merges
            # across passes and Spark partitions and enters the standard error exactly.
            parts += [
                (r * wk).alias(f"{name}__a"),
                wk.alias(f"{name}__b"),
                pl.lit(1.0).alias(f"{name}__l"),
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
        wanted = {f"{n}__{part}" for n in group for part in "mabl"} | {WEIGHT}
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


@dataclass(frozen=True)
class SlateParts:
    """A slate log's parts: one or two sets (:func:`parts_sets`), from any log or partition.

    Picklable: Spark ships it to its workers; ``SlateParts(log, index)`` called on a
    partition gives that partition's set ``index``.
    """

    log: SlateLog
    index: int = 0

    def sets(self, lf: pl.LazyFrame, *, engine: Engine, site: Site | None) -> list[Parts]:
        """The log's values checked, then every target policy's parts, in one or two sets."""
        log = self.log
        log.check(lf, engine)
        rows = pl.concat(
            [
                slate_parts(
                    lf,
                    estimators=log.names,
                    policy=policy,
                    logging=log.logging,
                    target=spec,
                    query=log.query,
                    position=log.position,
                    reward=log.reward,
                    reward_model=log.reward_model,
                    target_reward_model=log.expected.get(policy),
                    by=list(log.by),
                )
                for policy, spec in log.targets.items()
            ],
            how="vertical",
        )
        return parts_sets(
            rows, log.names, keys=log.keys, query=log.query, position=log.position, site=site
        )

    def __call__(self, lf: pl.LazyFrame) -> Parts:
        """Set ``index`` of a Spark partition's parts (checked in memory)."""
        return self.sets(lf, engine="in-memory", site=None)[self.index]


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
    n_buckets: int | None = None,
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
        in one call: a column, a list of columns (each names its policy), or a dict
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
    n_buckets
        Estimate in this many passes over hash buckets of the slates (bounded memory: a
        slate's weights are products over its rows, which Polars computes in memory). Each
        pass holds about ``1 / n_buckets`` of the slates and reads the log twice; the result
        equals one pass's to about 1e-15 (each bucket's sums are rounded once). Not with
        ``per_query``, ``baseline`` or bootstrap intervals, which hold every slate.
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
    engine = check_choice("engine", engine, ["auto", "in-memory", "streaming"])
    log = prepare(
        estimators,
        query=query,
        position=position,
        reward=reward,
        propensity=propensity,
        target=target,
        reward_model=reward_model,
        target_reward_model=target_reward_model,
        by=by,
    )
    lf = read_log(data)
    if n_buckets is not None:
        return _in_buckets(
            log,
            lf.lazy(),
            n_buckets,
            per_query=per_query,
            baseline=baseline,
            interval=interval,
            alpha=alpha,
            engine=engine,
            site=site,
        )
    sets = SlateParts(log).sets(lf, engine=engine, site=site)
    results = each_set(
        len(sets),
        lambda index: estimate(
            sets[index],
            alpha=alpha,
            per_query=per_query,
            baseline=baseline,
            interval=interval,
            n_resamples=n_resamples,
            seed=seed,
            engine=engine,
        ),
    )
    return _merge(results, log.names, log.keys, query, per_query=per_query, baseline=baseline)


def each_set(n_sets: int, run: Callable[[int], pl.DataFrame]) -> list[pl.DataFrame]:
    """``run(index)`` for each parts set; a weight warning is given once, by the first set.

    Both sets read the same joint weights, so their diagnostics are the same numbers.
    """
    results: list[pl.DataFrame] = []
    for index in range(n_sets):
        with warnings.catch_warnings():
            if results:
                warnings.simplefilter("ignore", WeightWarning)
            results.append(run(index))
    return results


def _in_buckets(
    log: SlateLog,
    lf: pl.LazyFrame,
    n_buckets: object,
    *,
    per_query: bool,
    baseline: object,
    interval: str,
    alpha: float,
    engine: Engine,
    site: Site,
) -> pl.DataFrame:
    """``slate_off_policy(..., n_buckets=n)``: each parts set estimated in passes over buckets."""
    if isinstance(n_buckets, bool) or not isinstance(n_buckets, int) or n_buckets < 1:
        msg = f"option n_buckets= must be a positive int (or None: one pass), got {n_buckets!r}"
        raise InvalidOptionError(msg)
    if per_query or baseline is not None or interval != "normal":
        msg = (
            "n_buckets= bounds the memory of the estimates; per_query=True, baseline= and "
            "interval='bootstrap' hold every slate at once: leave n_buckets out for them"
        )
        raise InvalidOptionError(msg)
    # each bucket's slates checked once, and its parts sets built once for both rounds
    per_bucket = [
        SlateParts(log).sets(piece, engine=engine, site=None)
        for piece in buckets(lf, [*log.by, log.query], n_buckets)
    ]
    results = each_set(
        len(per_bucket[0]),
        lambda index: estimate_in_buckets(
            [sets[index] for sets in per_bucket], alpha=alpha, engine=engine, site=site
        ),
    )
    return _merge(results, log.names, log.keys, log.query, per_query=False, baseline=None)


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
