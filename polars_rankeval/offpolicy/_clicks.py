"""Click-log metrics of a new ranker, weighted by the inverse examination probability.

A click log holds, per impression (``query``: an impression or session id), the items shown,
the ``position`` each was shown at and whether it was clicked. Under the position-based model
a click needs the item to be examined (probability ``p(position)``, the *examination*
propensity) and found relevant: ``P(click) = p(position) * rel(item)``. Dividing each click by
the examination probability of the position it was logged at makes it an unbiased estimate of
relevance, so any metric that is a sum over items of ``lambda(rank) * rel(item)`` can be
estimated for a *new* ranking of the same items (Joachims, Swaminathan & Schnabel, "Unbiased
Learning-to-Rank with Biased Feedback", WSDM 2017, eq. 5; Agarwal, Zaitsev, Wang, Li, Najork &
Joachims, "Estimating Position Bias without Intrusive Interventions", WSDM 2019, sec. 2)::

    value(q) = sum over clicked items d of q:  lambda(rank_new(d)) / p(position_logged(d))

and the reported value is its mean over impressions (an impression without a click counts 0).
``rank_new`` is the rank of ``d`` among the impression's items under the evaluated ranker's
``score``, ordered by the project's ranking rule (score descending, ties by the item's string
form descending, as trec_eval: :func:`polars_rankeval._engine.context.trec_key`); an item with a
null score is not ranked and earns nothing. The metrics (``lambda``):

* ``dcg@k``: ``1[rank <= k] / log2(rank + 1)`` (linear gain: a click is gain 1; trec_eval's
  discount); ``dcg`` without ``k`` ranks the whole impression;
* ``rr`` / ``rr@k``: ``1[rank <= k] / rank``. With one click per impression this is the
  reciprocal rank of the click; with several it is their sum: the first click's reciprocal rank
  is not a sum over items, so it has no such unbiased estimate;
* ``ctr@k``: ``1[rank <= k]``: clicks on the new top ``k`` per impression, had each of those
  items been examined (the de-biased click-through rate of the top ``k``).

``clip`` caps each click's weight ``1 / p`` (propensity clipping, Joachims et al. 2017 sec. 5:
``max(p, 1/clip)``): less variance, some bias towards items shown low in the log.

The examination probabilities are given (a mapping or list by position, a column, an
expression such as :func:`power_law_examination`, or a table by position) or estimated from
a log whose order was randomised (:func:`examination_from_randomized`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import polars as pl

from polars_rankeval._engine.columns import by_list
from polars_rankeval._engine.context import trec_key
from polars_rankeval._engine.evaluate import Engine
from polars_rankeval._engine.options import check_choice
from polars_rankeval._engine.warn import user_site
from polars_rankeval._names.split import metric_list
from polars_rankeval.errors import (
    ColumnTypeError,
    InvalidOptionError,
    UnknownMetricError,
)
from polars_rankeval.offpolicy._core import Parts, estimate
from polars_rankeval.offpolicy._examination import (
    EXAMINATION,
    PREFIX,
    Examination,
    attach_examination,
    check_position_and_click,
    examination_from_randomized,
    power_law_examination,
    refuse,
    require,
)
from polars_rankeval.offpolicy._options import read_log

__all__ = [
    "click_metrics",
    "click_parts",
    "examination_from_randomized",
    "parse_click_metrics",
    "power_law_examination",
]

Lambda = Literal["dcg", "rr", "ctr"]
_KNOWN: tuple[Lambda, ...] = ("dcg", "rr", "ctr")
_WEIGHT = PREFIX + "weight"
_RANK = PREFIX + "rank"
_SCORE = PREFIX + "score"
POLICY = "policy"
_ENGINES: list[Engine] = ["auto", "in-memory", "streaming"]


@dataclass(frozen=True)
class ClickMetric:
    """One click metric: its family (``lambda``) and cutoff."""

    family: Lambda
    k: int | None

    @property
    def name(self) -> str:
        """``"dcg@10"``, ``"rr"``."""
        return self.family if self.k is None else f"{self.family}@{self.k}"

    def gain(self, rank: pl.Expr) -> pl.Expr:
        """``lambda(rank)`` (0 past the cutoff; null where the item is not ranked)."""
        rank = rank.cast(pl.Float64)
        if self.family == "dcg":
            value = 1.0 / (rank + 1.0).log(2)
        elif self.family == "rr":
            value = 1.0 / rank
        else:
            # a literal, so an unranked row (null rank) must be masked by hand
            value = pl.when(rank.is_not_null()).then(1.0)
        if self.k is None:
            return value
        return pl.when(rank <= self.k).then(value).otherwise(0.0)


_SPEC = re.compile(r"^\s*([a-z_]+)\s*(?:@\s*([0-9,\s]+))?\s*$")


def _unknown(name: str) -> UnknownMetricError:
    close = difflib.get_close_matches(name, [*_KNOWN, "mrr"], n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    msg = (
        f"unknown click metric {name!r}{hint} The click metrics are 'dcg' / 'dcg@k', "
        "'rr' / 'rr@k' and 'ctr@k' (a comma-separated string or a list)"
    )
    return UnknownMetricError(msg)


def parse_click_metrics(metrics: object) -> list[ClickMetric]:
    """Read ``metrics=``: ``"dcg@10,rr,ctr@5"``, a list of such names, or ``"dcg@5,10"``.

    Examples
    --------
    >>> [m.name for m in parse_click_metrics("dcg@5,10,rr,ctr@3")]
    ['dcg@5', 'dcg@10', 'rr', 'ctr@3']
    """
    specs = metric_list(metrics)
    if not isinstance(specs, list) or not specs or not all(isinstance(s, str) for s in specs):
        msg = f"metrics must be a non-empty list such as ['dcg@10', 'rr'], got {metrics!r}"
        raise InvalidOptionError(msg)
    parsed: list[ClickMetric] = []
    for spec in specs:
        match = _SPEC.match(spec.lower())
        if match is None:
            raise _unknown(spec)
        family = "rr" if match[1] == "mrr" else match[1]
        if family not in _KNOWN:
            raise _unknown(match[1])
        cutoffs: list[int | None] = [None]
        if match[2] is not None:
            parts = [part.strip() for part in match[2].split(",")]
            if not all(part.isdigit() and int(part) > 0 for part in parts):
                msg = f"cutoff of click metric {spec!r} must be a positive int, e.g. 'dcg@10'"
                raise InvalidOptionError(msg)
            cutoffs = [int(part) for part in parts]
        parsed.extend(ClickMetric(family, k) for k in cutoffs)
    names = [metric.name for metric in parsed]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        msg = f"click metrics repeat in the list: {repeated}"
        raise InvalidOptionError(msg)
    return parsed


def _targets(score: object, schema: pl.Schema) -> dict[str, str]:
    """``score=`` as {policy name: column}: one column, a list, or a mapping."""
    if isinstance(score, str):
        targets = {score: score}
    elif isinstance(score, Mapping):
        targets = dict(score)
    elif isinstance(score, (list, tuple)) and score:
        targets = {name: name for name in score}
    else:
        targets = {}
    if not targets or not all(isinstance(c, str) for c in (*targets, *targets.values())):
        msg = (
            "score= must be the ranker's score column, a list of them, or a mapping "
            f"{{ranker name: column}}, got {score!r}"
        )
        raise InvalidOptionError(msg)
    for column in targets.values():
        require(schema, [("score", column)])
        if not schema[column].is_numeric():
            msg = f"column {column!r} (score=) must be numeric, got {schema[column]}"
            raise ColumnTypeError(msg)
    return targets


def _check_clip(clip: object) -> float | None:
    if clip is None:
        return None
    if isinstance(clip, bool) or not isinstance(clip, int | float) or not clip >= 1:
        msg = (
            f"clip= is the largest weight 1/p a click may get (a number >= 1) or None, got {clip!r}"
        )
        raise InvalidOptionError(msg)
    return float(clip)


def _checked_log(
    lf: pl.LazyFrame,
    schema: pl.Schema,
    *,
    keys: list[str],
    item: str,
    position: str,
    click: str,
    targets: Mapping[str, str],
) -> pl.LazyFrame:
    """The log, refusing (when read) each malformed row with the rows named."""
    impression = keys  # (*by, query): one impression
    shown = [*keys, item, position]
    lf = refuse(
        lf,
        pl.any_horizontal([pl.col(name).is_null() for name in [*keys, item]]),
        shown,
        f"the impression and item columns ({', '.join(map(repr, [*keys, item]))}) must not be null",
    )
    lf = check_position_and_click(lf, schema, position, click, [*shown, click])
    lf = refuse(
        lf,
        pl.len().over([*impression, position]) > 1,
        shown,
        f"each impression shows one item per position, but some impressions repeat a "
        f"position ({position!r})",
    )
    lf = refuse(
        lf,
        pl.len().over([*impression, item]) > 1,
        shown,
        f"each impression shows an item once, but some impressions repeat an item ({item!r})",
    )
    for column in dict.fromkeys(targets.values()):
        lf = refuse(
            lf,
            pl.col(column).cast(pl.Float64).is_nan().fill_null(value=False),
            [*shown, column],
            f"column {column!r} (score=) holds NaN; a null score leaves the item unranked, NaN "
            "has no place in the order",
        )
    value = pl.col(EXAMINATION)
    lf = refuse(
        lf,
        value.is_null() | value.is_nan(),
        shown,
        "examination= gives no examination probability for some logged positions (or NaN)",
    )
    return refuse(
        lf,
        (value <= 0) | (value > 1),
        [*shown, EXAMINATION],
        "examination probabilities must be in (0, 1]: a position never examined (0) gives no "
        "unbiased click estimate, and above 1 is no probability",
    )


def click_parts(
    data: object,
    metrics: object = "dcg@10,rr,ctr@5",
    *,
    examination: Examination,
    query: str = "query",
    item: str = "item",
    position: str = "position",
    click: str = "click",
    score: str | Sequence[str] | Mapping[str, str] = "score",
    by: str | Sequence[str] | None = None,
    clip: float | None = None,
) -> tuple[pl.LazyFrame, list[ClickMetric]]:
    """The per-row parts of the click metrics: the estimate is their sum over an impression.

    One row per (ranker, logged row) with ``policy``, the ``by`` columns, ``query`` and, per
    metric, a column ``f"{name}__m"`` = ``click * min(1/p, clip) * lambda(rank_new)``
    (0 for an unranked item). The mean over impressions of the per-impression sums is the
    metric (:func:`click_metrics`); the parts are the off-policy core's "mean part" with the
    impression as the unit.
    """
    parsed = parse_click_metrics(metrics)
    segments = by_list(by)
    clip_at = _check_clip(clip)
    lf = read_log(data)
    schema = lf.collect_schema()
    require(
        schema,
        [
            ("query", query),
            ("item", item),
            ("position", position),
            ("click", click),
            *[("by", b) for b in segments],
        ],
    )
    if POLICY in segments:
        msg = f"by= may not name a column {POLICY!r}: the result names each ranker there"
        raise InvalidOptionError(msg)
    targets = _targets(score, schema)
    keys = [*segments, query]
    lf = attach_examination(lf, examination, schema, position)
    lf = _checked_log(
        lf, schema, keys=keys, item=item, position=position, click=click, targets=targets
    )
    weight = 1.0 / pl.col(EXAMINATION)
    if clip_at is not None:
        weight = pl.min_horizontal(weight, pl.lit(clip_at))
    lf = lf.with_columns((pl.col(click).cast(pl.Float64) * weight).alias(_WEIGHT))
    per_target = [
        lf.select(
            pl.lit(name).alias(POLICY),
            *keys,
            pl.col(item),
            pl.col(_WEIGHT),
            pl.col(column).cast(pl.Float64).alias(_SCORE),
        )
        for name, column in targets.items()
    ]
    long = pl.concat(per_target)
    # The project's ranking rule (score descending, ties by item string descending), so a
    # tie ranks here exactly as evaluate() ranks it.
    order = trec_key(pl.col(_SCORE), pl.col(item)).rank("ordinal", descending=True)
    rank = pl.when(pl.col(_SCORE).is_not_null()).then(order.over([POLICY, *keys]))
    long = long.with_columns(rank.alias(_RANK))
    parts = [
        (pl.col(_WEIGHT) * metric.gain(pl.col(_RANK))).fill_null(0.0).alias(f"{metric.name}__m")
        for metric in parsed
    ]
    return long.select(POLICY, *keys, *parts), parsed


def click_metrics(
    data: object,
    metrics: object = "dcg@10,rr,ctr@5",
    *,
    examination: Examination,
    query: str = "query",
    item: str = "item",
    position: str = "position",
    click: str = "click",
    score: str | Sequence[str] | Mapping[str, str] = "score",
    by: str | Sequence[str] | None = None,
    clip: float | None = None,
    alpha: float = 0.05,
    per_query: bool = False,
    baseline: str | None = None,
    interval: Literal["normal", "bootstrap"] = "normal",
    n_resamples: int = 1000,
    seed: int = 0,
    engine: Engine = "auto",
) -> pl.DataFrame:
    """Click metrics of a new ranker on a click log, weighted by inverse examination probability.

    For each impression ``q`` and metric ``lambda`` (module docstring; Joachims et al. WSDM
    2017 eq. 5, Agarwal et al. WSDM 2019 sec. 2)::

        value(q) = sum_{d in q, clicked} lambda(rank_new(d)) * min(1 / p(position(d)), clip)

    with ``rank_new`` the item's rank under ``score`` (descending; ties by the item's string
    form descending, the project's rule), ``lambda`` = ``1/log2(rank+1)`` for ``dcg@k``,
    ``1/rank`` for ``rr@k``, ``1`` for ``ctr@k`` (0 past ``k``). The estimate is the mean of
    ``value(q)`` over impressions, ``se`` its standard error (sample standard deviation over
    ``sqrt(n)``), the interval normal (or bootstrap) at level ``1 - alpha``: the off-policy
    core's summary (:mod:`polars_rankeval.offpolicy._core`), as for every estimator.

    Parameters
    ----------
    data
        The click log, one row per item shown (DataFrame, LazyFrame, pandas, pyarrow or a
        path).
    metrics
        ``"dcg@10,rr,ctr@5"``: ``dcg``/``dcg@k``, ``rr``/``rr@k``, ``ctr``/``ctr@k`` (a list or
        one comma-separated string; ``dcg@5,10`` sweeps the cutoff).
    examination
        The examination probability of each logged position: a mapping ``{position: p}``, a
        list (``[p1, p2, ...]`` for positions 1, 2, ...), a column name, an expression
        (:func:`power_law_examination`), or a table with the ``position`` column and an
        ``examination`` column (and any segment columns it shares with the log), as
        :func:`examination_from_randomized` returns. Every logged row needs one in (0, 1].
    query, item, position, click
        Column names: the impression (or session) id, the item, the position it was shown at
        (1 = the top), and the click (0/1).
    score
        The evaluated ranker's score column (higher ranks first; null: not ranked), a list of
        them, or a mapping ``{ranker name: column}``: several rankers in one call, named in
        the ``policy`` column.
    by
        Segment column(s): one estimate per segment.
    clip
        The largest weight ``1/p`` a click may get (None: no clipping).
    alpha
        One minus the confidence level of the interval.
    per_query
        True: one row per (ranker, segment, impression) with a column per metric, the
        impression's ``value(q)``: the per-query table that pairs rankers.
    baseline
        A ranker's name (a ``policy`` value): compare the others with it, paired by
        impression, through :func:`~polars_rankeval.compare_per_query`.
    interval, n_resamples, seed
        ``"normal"`` or ``"bootstrap"`` (percentile, ``n_resamples`` draws of the impressions
        from ``seed``).
    engine
        Polars' engine: ``"auto"``, ``"in-memory"`` or ``"streaming"``.

    Returns
    -------
    pl.DataFrame
        ``metric``, ``policy``, the ``by`` columns, ``n_queries`` (impressions), ``value``,
        ``se``, ``ci_low``, ``ci_high`` and the weight diagnostics ``ess``, ``max_weight``,
        ``mean_weight`` (null: the click weights are no importance weights of one unit).

    Examples
    --------
    >>> import polars as pl
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": [1, 1, 2, 2],
    ...         "item": ["a", "b", "a", "b"],
    ...         "position": [1, 2, 1, 2],
    ...         "click": [0, 1, 0, 0],
    ...         "score": [0.1, 0.9, 0.5, 0.2],
    ...     }
    ... )
    >>> # impression 1: b clicked at position 2 (p = 0.5), ranked first by score: 1 / 0.5 = 2
    >>> out = click_metrics(log, "rr", examination={1: 1.0, 2: 0.5})
    >>> out.select("metric", "n_queries", "value").row(0)
    ('rr', 2, 1.0)
    """
    site = user_site()
    engine = check_choice("engine", engine, _ENGINES)
    if not isinstance(per_query, bool):
        msg = f"per_query= must be True or False, got {per_query!r}"
        raise InvalidOptionError(msg)
    rows, parsed = click_parts(
        data,
        metrics,
        examination=examination,
        query=query,
        item=item,
        position=position,
        click=click,
        score=score,
        by=by,
        clip=clip,
    )
    parts = Parts(
        rows,
        keys=[POLICY, *by_list(by)],
        estimators=[metric.name for metric in parsed],
        unit=query,
        site=site,
    )
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
