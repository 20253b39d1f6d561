"""Bandit off-policy estimators over a long log, as Open Bandit Pipeline (obp) defines them.

Every estimator is a sum of per-row products of the columns a log already has (the logging
policy's propensity of the logged action, the target policy's probability of it, the reward,
and a reward model's predictions), so this module only writes those per-row *parts* and
checks the log; :mod:`polars_rankeval.offpolicy._core` sums them per target policy and
segment and adds the standard errors, intervals and weight diagnostics.

The definitions follow obp's ``obp/ope/estimators.py`` (with ``w = target / propensity``):

========== =================================================================================
ips        mean(r * min(w, clip))                              (InverseProbabilityWeighting)
snips      sum(r * w) / sum(w)                 (SelfNormalizedInverseProbabilityWeighting)
dm         mean(dm)                                                         (DirectMethod)
dr         mean(dm + min(w, clip) * (r - q))                                (DoublyRobust)
sndr       mean(dm) + sum(w * (r - q)) / sum(w)                 (SelfNormalizedDoublyRobust)
switch_dr  mean(dm + 1[w <= switch_threshold] * w * (r - q))              (SwitchDoublyRobust)
dr_os      mean(dm + s*w / (w^2 + s) * (r - q)), s = shrinkage  (DoublyRobustWithShrinkage)
replay     sum(1[target == 1] * r) / sum(1[target == 1])                      (ReplayMethod)
========== =================================================================================

where ``q`` is the reward model's prediction for the logged action and ``dm`` the reward
model averaged over the target policy's actions in the row's context.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import polars as pl

from polars_rankeval._engine.evaluate import Engine
from polars_rankeval._engine.options import check_choice
from polars_rankeval._engine.warn import Site, user_site, warn_at
from polars_rankeval.errors import EmptyEvaluationWarning, InvalidOptionError
from polars_rankeval.offpolicy._bandit_log import (
    POLICY,
    Log,
    Tuning,
    check_schema,
    validate_candidates,
    validate_events,
)
from polars_rankeval.offpolicy._core import WEIGHT, Parts, estimate
from polars_rankeval.offpolicy._options import column_name, parse_names, per_policy, read_log

#: the estimators this module computes (results list them in the order they are asked for)
ESTIMATORS: tuple[str, ...] = ("ips", "snips", "dm", "dr", "sndr", "switch_dr", "dr_os", "replay")
#: the estimators that read a reward model
MODEL_ESTIMATORS = frozenset({"dm", "dr", "sndr", "switch_dr", "dr_os"})
_ENGINES: list[Engine] = ["auto", "in-memory", "streaming"]
_F64 = pl.Float64


# -- options ------------------------------------------------------------------------------


def parse_estimators(estimators: str | Sequence[str]) -> tuple[str, ...]:
    """The estimator names, lower-cased, in order, each once.

    Examples
    --------
    >>> parse_estimators("ips, SNIPS,ips")
    ('ips', 'snips')
    """
    return parse_names(estimators, ESTIMATORS, "bandit")


def _policies(target: str | Sequence[str] | Mapping[str, str]) -> dict[str, str]:
    """``target=`` as {policy name: column}: a column, a list of columns, or a dict."""
    if isinstance(target, str):
        return {target: target}
    if isinstance(target, Mapping):
        pairs = [(column_name("target", k), column_name("target", v)) for k, v in target.items()]
    else:
        pairs = [(name, name) for name in (column_name("target", v) for v in target)]
    if not pairs:
        msg = "option target= names no target policy column"
        raise InvalidOptionError(msg)
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names):
        msg = f"option target= names a policy twice: {names}"
        raise InvalidOptionError(msg)
    return dict(pairs)


def _hyper(option: str, value: object, obp_name: str) -> float:
    """A non-negative hyperparameter (inf allowed), as obp checks its ``lambda_``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        msg = f"option {option}= (obp's {obp_name}) must be a number >= 0, got {value!r}"
        raise InvalidOptionError(msg)
    if value < 0:
        msg = f"option {option}= (obp's {obp_name}) must be >= 0, got {value!r}"
        raise InvalidOptionError(msg)
    return float(value)


def tuning(
    estimators: tuple[str, ...],
    *,
    clip: float | None,
    switch_threshold: float | None,
    shrinkage: float | None,
) -> Tuning:
    """Check the hyperparameters; the two estimators defined by theirs must be given it."""
    for name, value, option, meaning in (
        ("switch_dr", switch_threshold, "switch_threshold", "inf gives dr without clipping"),
        ("dr_os", shrinkage, "shrinkage", "0 gives dm, inf gives dr without clipping"),
    ):
        if name in estimators and value is None:
            msg = (
                f"estimator {name!r} needs {option}= (obp's lambda_; {meaning}): the estimator "
                "is defined by it, so there is no default"
            )
            raise InvalidOptionError(msg)
    return Tuning(
        estimators=estimators,
        clip=math.inf if clip is None else _hyper("clip", clip, "lambda_"),
        switch_threshold=(
            math.inf
            if switch_threshold is None
            else _hyper("switch_threshold", switch_threshold, "lambda_")
        ),
        shrinkage=math.inf if shrinkage is None else _hyper("shrinkage", shrinkage, "lambda_"),
    )


# -- the per-row parts ----------------------------------------------------------------------


def estimator_parts(
    tune: Tuning, *, w: pl.Expr, t: pl.Expr, r: pl.Expr, q: pl.Expr, dm: pl.Expr
) -> dict[str, pl.Expr]:
    """The parts ``{e}__m``, ``{e}__a``, ``{e}__b`` of each estimator for one logged decision.

    ``w`` is the unclipped weight target/propensity, ``t`` the target's probability of the
    logged action, ``r`` the reward, ``q`` the reward model's prediction for the logged action
    and ``dm`` the reward model averaged over the target policy (both unused without a model).
    The core's value is ``sum(m) / N + sum(a) / sum(b)``.
    """
    clipped = w if math.isinf(tune.clip) else w.clip(upper_bound=tune.clip)
    parts: dict[str, pl.Expr] = {}
    for name in tune.estimators:
        if name == "ips":  # obp estimators.py L334-338
            parts["ips__m"] = r * clipped
        elif name == "snips":  # L655-656: no clipping in SNIPW
            parts["snips__a"] = r * w
            parts["snips__b"] = w
        elif name == "dm":  # L735-738
            parts["dm__m"] = dm
        elif name == "dr":  # L981-996
            parts["dr__m"] = dm + clipped * (r - q)
        elif name == "sndr":  # L1344-1353: unclipped, the correction divided by mean(w)
            parts["sndr__m"] = dm
            parts["sndr__a"] = w * (r - q)
            parts["sndr__b"] = w
        elif name == "switch_dr":  # L1464-1474: unclipped, kept where w <= lambda_
            kept = pl.when(w <= tune.switch_threshold).then(w).otherwise(0.0)
            parts["switch_dr__m"] = dm + kept * (r - q)
        elif name == "dr_os":  # L1669-1683
            s = tune.shrinkage
            # obp divides 0 by 0 (NaN) at w = 0 with lambda_ = 0; the shrunk weight's limit
            # there is 0 for every lambda_, which is what is used.
            shrunk = (
                w if math.isinf(s) else pl.when(w == 0).then(0.0).otherwise(s * w / (w * w + s))
            )
            parts["dr_os__m"] = dm + shrunk * (r - q)
        else:  # replay, L111-113: a row counts where the target takes the logged action
            match = (t == 1).cast(_F64)
            parts["replay__a"] = match * r
            parts["replay__b"] = match
    return parts


def event_parts(lf: pl.LazyFrame, log: Log, tune: Tuning) -> pl.LazyFrame:
    """The parts of every (target policy, logged decision): one block of rows per policy.

    Keys: ``policy``, then the ``by`` columns, then the unit (``query``) when there is one.
    """
    p = pl.col(log.propensity).cast(_F64)
    r = pl.col(log.reward).cast(_F64)
    q = pl.col(log.reward_model).cast(_F64) if log.reward_model is not None else pl.lit(0.0)
    keep = [*log.by, *([log.query] if log.query is not None else [])]
    blocks = []
    for policy, column in log.targets.items():
        t = pl.col(column).cast(_F64)
        w = t / p
        dm_column = log.target_reward_model.get(policy)
        dm = pl.col(dm_column).cast(_F64) if dm_column is not None else pl.lit(0.0)
        parts = estimator_parts(tune, w=w, t=t, r=r, q=q, dm=dm)
        blocks.append(
            lf.select(
                pl.lit(policy, dtype=pl.String).alias(POLICY),
                *keep,
                *(expr.alias(name) for name, expr in parts.items()),
                w.alias(WEIGHT),
            )
        )
    return pl.concat(blocks, how="vertical")


def candidate_events(lf: pl.LazyFrame, log: Log) -> tuple[pl.LazyFrame, Log]:
    """The candidate form reduced to the event form: one row per context.

    The logged row gives the propensity, the reward, the reward model's prediction and each
    target's probability of the logged action; the DM term of each target is computed here,
    ``sum_a target(a|x) * reward_model(x, a)`` over the context's candidate rows.
    """
    if log.logged is None:  # pragma: no cover - off_policy calls this for the candidate form
        msg = "candidate_events needs the logged= column"
        raise AssertionError(msg)
    logged = pl.col(log.logged)
    targets = {policy: f"__rke_target_{i}" for i, policy in enumerate(log.targets)}
    models = {policy: f"__rke_dm_{i}" for i, policy in enumerate(log.targets)}
    aggs = [
        pl.col(log.propensity).filter(logged).first().cast(_F64),
        pl.col(log.reward).filter(logged).first().cast(_F64),
        *(
            pl.col(c).filter(logged).first().cast(_F64).alias(targets[p])
            for p, c in log.targets.items()
        ),
    ]
    if log.reward_model is not None:
        q = pl.col(log.reward_model).cast(_F64)
        aggs.append(q.filter(logged).first())
        aggs.extend(
            (pl.col(c).cast(_F64) * q).sum().alias(models[p]) for p, c in log.targets.items()
        )
    events = lf.group_by(log.context).agg(aggs)
    reduced = Log(
        targets=targets,
        propensity=log.propensity,
        reward=log.reward,
        reward_model=log.reward_model,
        target_reward_model=models if log.reward_model is not None else {},
        query=log.query,
        item=None,
        logged=None,
        by=log.by,
    )
    return events, reduced


# -- the public function --------------------------------------------------------------------


@dataclass(frozen=True)
class BanditParts:
    """The checked options of :func:`off_policy`, and the parts of any log (or partition).

    Picklable: Spark ships it to its workers, each building the parts of its partition.
    """

    names: tuple[str, ...]
    log: Log
    tune: Tuning

    def parts(self, lf: pl.LazyFrame, *, engine: Engine, site: Site | None) -> Parts:
        """The log's values checked, then its per-row parts (one set per target policy)."""
        log = self.log
        check_schema(lf.collect_schema(), log, self.tune)
        if log.logged is not None:
            rows = validate_candidates(lf, log, self.tune, engine, site or user_site())
            lf, log = candidate_events(lf, log)
        else:
            rows = validate_events(lf, log, self.tune, engine)
        if not rows and site is not None:
            warn_at("the log has no rows: the result is empty", EmptyEvaluationWarning, site)
        return Parts(
            event_parts(lf, log, self.tune),
            keys=[POLICY, *log.by],
            estimators=list(self.names),
            unit=log.query,
            site=site,
        )

    def __call__(self, lf: pl.LazyFrame) -> Parts:
        """A Spark partition's parts: checked in memory, no warning (the driver gives them)."""
        return self.parts(lf, engine="in-memory", site=None)


def prepare(
    estimators: str | Sequence[str],
    *,
    target: str | Sequence[str] | Mapping[str, str],
    propensity: str,
    reward: str,
    reward_model: str | None,
    target_reward_model: str | Sequence[str] | Mapping[str, str] | None,
    query: str | None,
    item: str | None,
    logged: str | None,
    by: str | Sequence[str] | None,
    clip: float | None,
    switch_threshold: float | None,
    shrinkage: float | None,
) -> BanditParts:
    """:func:`off_policy`'s options checked, before any row is read."""
    names = parse_estimators(estimators)
    tune = tuning(names, clip=clip, switch_threshold=switch_threshold, shrinkage=shrinkage)
    targets = _policies(target)
    by_names = () if by is None else (by,) if isinstance(by, str) else tuple(by)
    candidate = logged is not None
    if candidate and query is None:
        msg = "the candidate form (logged=) needs query= (the column naming each context)"
        raise InvalidOptionError(msg)
    if not candidate and item is not None:
        msg = (
            "item= names the action in the candidate form (one row per candidate, with "
            "logged=); the event form does not read it"
        )
        raise InvalidOptionError(msg)
    if candidate and target_reward_model is not None:
        msg = (
            "target_reward_model= is for the event form: with logged= the DM term is computed "
            "from target= and reward_model= over each context's candidate rows"
        )
        raise InvalidOptionError(msg)
    log = Log(
        targets=targets,
        propensity=column_name("propensity", propensity),
        reward=column_name("reward", reward),
        reward_model=None if reward_model is None else column_name("reward_model", reward_model),
        target_reward_model=per_policy("target_reward_model", target_reward_model, list(targets)),
        query=None if query is None else column_name("query", query),
        item=None if item is None else column_name("item", item),
        logged=None if logged is None else column_name("logged", logged),
        by=tuple(column_name("by", b) for b in by_names),
    )
    needs_model = [name for name in names if name in MODEL_ESTIMATORS]
    if needs_model and log.reward_model is None:
        msg = f"estimator(s) {needs_model} need reward_model= (the reward model's prediction)"
        raise InvalidOptionError(msg)
    if needs_model and not candidate and not log.target_reward_model:
        msg = (
            f"estimator(s) {needs_model} need target_reward_model= (per target policy, the "
            "reward model averaged over its actions: sum_a target(a|x) * q(x, a)), or the "
            "candidate form (logged=) that computes it"
        )
        raise InvalidOptionError(msg)
    return BanditParts(names, log, tune)


def off_policy(
    data: object,
    estimators: str | Sequence[str] = "ips,snips",
    *,
    target: str | Sequence[str] | Mapping[str, str] = "target",
    propensity: str = "propensity",
    reward: str = "reward",
    reward_model: str | None = None,
    target_reward_model: str | Sequence[str] | Mapping[str, str] | None = None,
    query: str | None = None,
    item: str | None = None,
    logged: str | None = None,
    by: str | Sequence[str] | None = None,
    clip: float | None = None,
    switch_threshold: float | None = None,
    shrinkage: float | None = None,
    alpha: float = 0.05,
    per_query: bool = False,
    baseline: str | None = None,
    interval: Literal["normal", "bootstrap"] = "normal",
    n_resamples: int = 1000,
    seed: int = 0,
    engine: Engine = "auto",
) -> pl.DataFrame:
    """Estimate target policies' mean reward from a log another (logging) policy produced.

    The bandit estimators of Open Bandit Pipeline (obp, ``obp/ope/estimators.py``), with
    ``w = target / propensity`` the importance weight of a logged decision, ``r`` its reward,
    ``q`` the reward model's prediction for the logged action and ``dm`` the reward model
    averaged over the target policy's actions in that context:

    * ``ips``: ``mean(min(w, clip) * r)``; ``snips``: ``sum(w * r) / sum(w)``;
    * ``dm``: ``mean(dm)``; ``dr``: ``mean(dm + min(w, clip) * (r - q))``;
    * ``sndr``: ``mean(dm) + sum(w * (r - q)) / sum(w)``;
    * ``switch_dr``: ``mean(dm + 1[w <= switch_threshold] * w * (r - q))``;
    * ``dr_os``: ``mean(dm + s * w / (w^2 + s) * (r - q))`` with ``s = shrinkage`` (0 where
      ``w = 0``, where obp computes 0/0 for ``s = 0``);
    * ``replay``: the mean reward of the decisions where the target takes the logged action:
      ``sum(1[target == 1] * r) / sum(1[target == 1])`` (a deterministic target only).

    ``clip`` applies to ``ips`` and ``dr`` only, as in obp (the self-normalised and switch
    estimators use the raw weight). The result has the standard error of each estimate (the
    delta method), a normal or bootstrap interval, and the weights' effective sample size,
    largest and mean; a :class:`~polars_rankeval.errors.WeightWarning` says when they make an
    estimate unreliable.

    Two shapes of log are read:

    * **event form** (default): one row per logged decision, holding ``propensity`` (the
      logging policy's probability of the logged action), the ``target`` column(s) (each
      target policy's probability of that action), the ``reward``, and for the model-based
      estimators ``reward_model`` (``q``) and ``target_reward_model`` (``dm`` per target);
    * **candidate form** (``logged=`` a Boolean column): one row per (context ``query``,
      candidate action ``item``), each with every target's probability of the action and the
      reward model's prediction for it; the logged row (``logged`` True, exactly one per
      context) has the propensity and the reward. ``dm`` is computed here as
      ``sum_a target(a) * reward_model(a)`` over the context's rows. The target's probabilities
      must sum to 1 over each context (within 1e-6). A candidate row may carry the logging
      policy's propensity too (or null): where it is 0 and a target gives the action
      probability, a ``WeightWarning`` says the weighted estimates are biased (they can never
      see that action); the estimate is still returned, as ``dm`` is sound.

    Parameters
    ----------
    data
        The log: a DataFrame, LazyFrame, pandas or pyarrow table, or a path (Parquet, CSV,
        NDJSON).
    estimators
        Estimator names (a list or one comma-separated string) from ``ips``, ``snips``, ``dm``,
        ``dr``, ``sndr``, ``switch_dr``, ``dr_os``, ``replay``.
    target
        The target policy's probability column: a name, a list of names (each names its
        policy) or a dict ``{policy: column}``; several policies are estimated in one call.
    propensity, reward
        The logging policy's probability of the logged action (in (0, 1]) and the reward.
    reward_model
        The reward model's prediction for the row's action (``q``); needed by ``dm``, ``dr``,
        ``sndr``, ``switch_dr`` and ``dr_os``.
    target_reward_model
        Event form: the reward model averaged over the target policy's actions in the row's
        context (``sum_a target(a) * q(a)``), one column per target (a name with one target,
        a list in the order of ``target``, or a dict ``{policy: column}``).
    query
        The unit id: the context (candidate form, required) or the logged decision (event
        form, optional: it names rows in errors and is needed by ``per_query``/``baseline``).
    item
        Candidate form: the action; when given, an action repeated in a context is an error.
    logged
        Candidate form: the Boolean column that is True on each context's logged row.
    by
        Segment column(s): one estimate per segment.
    clip
        Weights above it are cut to it in ``ips`` and ``dr`` (obp's ``lambda_``); None: none.
    switch_threshold
        ``switch_dr``: the largest weight whose correction is kept (obp's ``lambda_``).
    shrinkage
        ``dr_os``: the shrinkage ``s`` of the optimistic weight ``s*w/(w^2+s)`` (obp's
        ``lambda_``; 0 gives ``dm``, ``inf`` gives ``dr``).
    alpha, interval, n_resamples, seed
        Interval level ``1 - alpha``; ``"normal"`` (``value ± z * se``) or ``"bootstrap"``
        (percentile interval of ``n_resamples`` draws of the units, seeded).
    per_query
        One row per unit with each estimator's influence value (whose mean is the estimate):
        the per-query table that pairs target policies in ``compare_per_query``. Needs ``query``.
    baseline
        A target policy's name: compare every other policy with it, paired on the logged units.
    engine
        Polars' engine: ``"auto"``, ``"in-memory"`` or ``"streaming"``.

    Returns
    -------
    pl.DataFrame
        ``metric`` (the estimator), ``policy``, the ``by`` columns, ``n_queries`` (units),
        ``value``, ``se``, ``ci_low``, ``ci_high``, ``ess``, ``max_weight``, ``mean_weight``.

    Raises
    ------
    ColumnValueError
        A propensity of 0, above 1, null or NaN; a target probability outside [0, 1]; a null,
        NaN or infinite reward or prediction; a non-deterministic target with ``replay``;
        candidate form: a context without exactly one logged row, or whose target
        probabilities do not sum to 1, or that repeats an action. The message names the
        first rows (by their 0-based row number and ``query``) or contexts. The values are
        checked in one pass over the log before the estimate's pass.
    ColumnNotFoundError, ColumnTypeError
        A column is missing, or not numeric (``logged``: not Boolean).
    UnknownMetricError, InvalidOptionError
        An unknown estimator; an option out of range or missing (``reward_model`` for the
        model-based estimators, ``switch_threshold`` for ``switch_dr``, ``shrinkage`` for
        ``dr_os``: they define the estimator, so they have no default).

    Warns
    -----
    WeightWarning
        The weights make an estimate unreliable (tiny effective sample size, mean weight far
        from 1), or (candidate form) a target puts mass on actions logged with propensity 0.
    EmptyEvaluationWarning
        The log has no rows.

    Examples
    --------
    >>> import polars as pl
    >>> log = pl.DataFrame(
    ...     {
    ...         "propensity": [0.8, 0.25, 0.5, 0.2],
    ...         "reward": [0.1, 0.2, 0.0, 1.0],
    ...         "target": [0.6, 0.4, 0.3, 0.9],
    ...     }
    ... )
    >>> log = pl.concat([log] * 5)  # 20 rows: 4 would draw a WeightWarning (tiny ess)
    >>> off_policy(log, "ips,snips").select("metric", "policy", "value")
    shape: (2, 3)
    ┌────────┬────────┬──────────┐
    │ metric ┆ policy ┆ value    │
    │ ---    ┆ ---    ┆ ---      │
    │ str    ┆ str    ┆ f64      │
    ╞════════╪════════╪══════════╡
    │ ips    ┆ target ┆ 1.22375  │
    │ snips  ┆ target ┆ 0.657047 │
    └────────┴────────┴──────────┘
    """
    site = user_site()
    engine = check_choice("engine", engine, _ENGINES)
    build = prepare(
        estimators,
        target=target,
        propensity=propensity,
        reward=reward,
        reward_model=reward_model,
        target_reward_model=target_reward_model,
        query=query,
        item=item,
        logged=logged,
        by=by,
        clip=clip,
        switch_threshold=switch_threshold,
        shrinkage=shrinkage,
    )
    parts = build.parts(read_log(data), engine=engine, site=site)
    return estimate(
        parts,
        alpha=alpha,
        per_query=per_query,
        baseline=baseline,
        interval=interval,
        n_resamples=n_resamples,
        seed=seed,
        engine=engine,
    )
