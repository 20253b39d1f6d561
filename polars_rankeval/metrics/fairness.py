"""Fairness of exposure: who a ranking shows, per group of items (metrics of ``evaluate``).

Every metric here reads ``groups=`` (each item's groups in one or several dimensions) and
most read ``group_target=`` (each group's target share); see
:mod:`polars_rankeval.fairness._groups`. With several dimensions a metric reads their
intersection (TREC Fair 2022's rule: a cell per combination of groups, an item's weight in it
the product of its weights), or the dimensions named by ``dimension=`` (``"region"``,
``"region+gender"``).

A metric's partial is the list's ranked rows (the engine's ranking, every evaluation option
applied); its finishing step joins them to the groups and computes the measure
(:mod:`polars_rankeval.fairness._trec`, ``_toolkit``, ``_geyik``). Names and anchors:

========================  ===========================================================  ======
metric                    anchor                                                       better
========================  ===========================================================  ======
``awrf``                  TREC Fair 2022 Task 1 AWRF: 1 - JS(attention-weighted group  higher
                          distribution, target)^2, discount 1/log2(max(rank, 2))
``awrf(attention=geo…)``  FairRankTune's AWRF: per-group mean geometric attention,    combo
                          combined by ``combo``
``ndcg_awrf``             TREC Fair 2022 Task 1 score: binary nDCG x AWRF              higher
``ee_l``/``ee_d``/``ee_r``  TREC Fair 2022 Task 2 expected exposure loss, disparity,   lower/
                          relevance (one ranking per query here;                       lower/
                          :func:`~polars_rankeval.expected_exposure` for sampled ones)  higher
``ndkl``                  Geyik et al. 2019 NDKL (FairRankTune's: distribution=list)   lower
``skew@k``                Geyik et al. 2019 skew of one group (``group=``)             none
``min_skew@k``            the lowest skew over the target's groups                     higher
``max_skew@k``            the highest skew over the target's groups                    lower
``exp``/``expu``/         FairRankTune's EXP / EXPU / EXPRU (Singh & Joachims'         combo
``expru``                 exposure, exposure per utility, click-through per utility
                          per group), combined by ``combo``
========================  ===========================================================  ======
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import polars as pl

from polars_rankeval._engine.context import RankingContext
from polars_rankeval._engine.options import check_choice
from polars_rankeval._engine.tables import Tables
from polars_rankeval._engine.warn import user_site, warnings_at
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.fairness._frame import VALUE, FairInput
from polars_rankeval.fairness._prepare import from_hidden, hidden_rows
from polars_rankeval.metrics._base import (
    Direction,
    Metric,
    Partials,
    at,
    check_cutoff,
    named,
    no_closed_form,
    required_cutoff,
)

#: FairRankTune's combinations of per-group values (ComboUtil.py), snake case, and which way
#: each is better: a ratio min/max of 1 is parity; the others measure a spread (0 is parity).
COMBOS: dict[str, Direction] = {
    "min_max_ratio": "higher",
    "max_min_ratio": "lower",
    "max_min_diff": "lower",
    "max_abs_diff": "lower",
    "mean_abs_dev": "lower",
    "l_two": "none",  # the norm of the group values themselves: no parity point
    "variance": "lower",
}

# Why the optimistic/pessimistic tie orders are refused.
_NO_BOUNDS = "a fairness measure is no better or worse for any one order of tied scores"

Measure = Callable[[FairInput], pl.LazyFrame]


def _dimension(value: object, metric: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        msg = f"option dimension= of {metric!r} must name a dimension of groups=, got {value!r}"
        raise InvalidOptionError(msg)
    return value


def _combo(value: object, metric: str) -> str:
    if value is None or value == "required":
        msg = (
            f"metric {metric!r} needs combo= (how the per-group values combine, as "
            f"FairRankTune's: {', '.join(COMBOS)}); FairRankTune has no default"
        )
        raise InvalidOptionError(msg)
    return check_choice("combo", str(value).lower(), list(COMBOS))


def _name(metric: str, **options: object) -> str:
    """The metric's name with the options given (None: left out)."""
    return named(metric, {key: value for key, value in options.items() if value is not None})


def _fair_metric(
    name: str,
    measure: Measure,
    *,
    depth: int | None,
    dimension: str | None,
    direction: Direction,
    reads_labels: bool,
    column: str = VALUE,
) -> Metric:
    """A metric whose partial is the ranked rows and whose finishing step is ``measure``."""
    key = f"fair_rows@{depth}" if depth is not None else "fair_rows"
    # the user's line, for the warnings the measure gives when a LazyFrame is collected
    site = user_site()

    def partials(ctx: RankingContext) -> Partials:
        no_closed_form(ctx, name)
        return {key: hidden_rows(ctx, depth)}

    def finish(
        frame: pl.LazyFrame, keys: Sequence[str], label: str, tables: Tables
    ) -> pl.LazyFrame:
        with warnings_at(site):
            fair = from_hidden(frame, keys, label, tables, dimension=dimension)
            return measure(fair).select(*keys, pl.col(column).alias(label))

    return Metric(
        name,
        partials,
        lambda p: p(key),
        direction=direction,
        needs=("groups",),
        reads_labels=reads_labels,
        finish=finish,
        tie_bounds=_NO_BOUNDS,
    )


def awrf(
    k: int | None = None,
    *,
    attention: str | None = None,
    p: float | None = None,
    combo: str | None = None,
    cutoff: int = 500,
    dimension: str | None = None,
) -> Metric:
    """``awrf``: attention-weighted rank fairness, TREC Fair 2022's (default) or FairRankTune's.

    ``attention="trec"`` (TREC Fair 2022 Task 1): ``1 − JS(a, t)²``, where ``a`` is the mean
    group distribution of the list's items weighted by ``1/log2(max(rank, 2))`` (items without
    a group are left out: the track's known-alignment rule), ``t`` the list's target and JS the
    Jensen–Shannon divergence (natural log); a list longer than ``cutoff`` (500) is refused,
    as the track does. ``attention="geometric"`` (FairRankTune's ``AWRF``, a different formula
    under the same name): each group's attention ``100·(1−p)^(rank−1)·p`` summed, over the
    group's items in the list, combined by ``combo``. ``attention`` defaults to ``"trec"``,
    or ``"geometric"`` when ``p`` or ``combo`` is given (``convention="fairranktune"``:
    ``"geometric"``).
    """
    checked = check_cutoff(k, "awrf", required=False)
    if attention is None:
        attention = "trec" if p is None and combo is None else "geometric"
    chosen = check_choice("attention", attention, ["trec", "geometric"])
    metric = at("awrf", checked)
    dim = _dimension(dimension, metric)
    if chosen == "trec":
        if p is not None or combo is not None:
            msg = (
                f"options p= and combo= of {metric!r} belong to FairRankTune's AWRF "
                "(attention=geometric); TREC Fair's AWRF (attention=trec) compares the "
                "group distribution with the target"
            )
            raise InvalidOptionError(msg)
        limit = required_cutoff(cutoff, "awrf")
        name = _name(metric, cutoff=limit if limit != 500 else None, dimension=dim)

        def trec(fair: FairInput) -> pl.LazyFrame:
            from polars_rankeval.fairness._trec import awrf_values

            return awrf_values(fair, k=checked, cutoff=limit)

        return _fair_metric(
            name, trec, depth=None, dimension=dim, direction="higher", reads_labels=False
        )
    chosen_combo = _combo(combo, metric)
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p < 1:
        msg = (
            f"option p= of {metric!r} (FairRankTune's AWRF) must be the first rank's share of "
            f"attention, 0 < p < 1, got {p!r}"
        )
        raise InvalidOptionError(msg)
    name = _name(metric, p=p, combo=chosen_combo, dimension=dim)

    def toolkit(fair: FairInput) -> pl.LazyFrame:
        from polars_rankeval.fairness._toolkit import attention_awrf_values

        return attention_awrf_values(fair, k=checked, p=float(p), combo=chosen_combo)

    return _fair_metric(
        name,
        toolkit,
        depth=None,
        dimension=dim,
        direction=COMBOS[chosen_combo],
        reads_labels=False,
    )


def ndcg_awrf(k: int | None = None, *, cutoff: int = 500, dimension: str | None = None) -> Metric:
    """``ndcg_awrf``: TREC Fair 2022 Task 1's score, binary nDCG times AWRF.

    nDCG as the track computes it: utility 1 for a relevant item, discount
    ``1/log2(max(rank, 2))``, the ideal list ``min(cutoff, R)`` relevant items long.
    """
    checked = check_cutoff(k, "ndcg_awrf", required=False)
    limit = required_cutoff(cutoff, "ndcg_awrf")
    metric = at("ndcg_awrf", checked)
    dim = _dimension(dimension, metric)
    name = _name(metric, cutoff=limit if limit != 500 else None, dimension=dim)

    def measure(fair: FairInput) -> pl.LazyFrame:
        from polars_rankeval.fairness._trec import ndcg_awrf_values

        return ndcg_awrf_values(fair, k=checked, cutoff=limit)

    return _fair_metric(
        name, measure, depth=None, dimension=dim, direction="higher", reads_labels=True
    )


def _expected_exposure(column: str, direction: Direction, what: str) -> Callable[..., Metric]:
    def build(
        *, target_len: int = 20, relevant_only: bool = True, dimension: str | None = None
    ) -> Metric:
        length = required_cutoff(target_len, column)
        if not isinstance(relevant_only, bool):
            msg = (
                f"option relevant_only= of {column!r} must be True or False, got {relevant_only!r}"
            )
            raise InvalidOptionError(msg)
        dim = _dimension(dimension, column)
        name = _name(
            column,
            target_len=length if length != 20 else None,
            relevant_only=None if relevant_only else False,
            dimension=dim,
        )

        def measure(fair: FairInput) -> pl.LazyFrame:
            from polars_rankeval.fairness._trec import expected_exposure_values

            return expected_exposure_values(fair, target_len=length, relevant_only=relevant_only)

        return _fair_metric(
            name,
            measure,
            depth=None,
            dimension=dim,
            direction=direction,
            reads_labels=relevant_only,
            column=column,
        )

    build.__name__ = column
    build.__doc__ = (
        f"``{column}``: TREC Fair 2022 Task 2's expected exposure {what} (one ranking per "
        "query).\n\n"
        "Group exposure ``s`` sums ``1/log2(max(rank, 2))`` times the item's group weight over the "
        "relevant items (``relevant_only``); the target ``t`` is the target share times the "
        "exposure of a ``target_len``-long ranking. EE-L = ||s - t||², EE-D = s·s, EE-R = s·t. "
        "For a stochastic ranker's sampled rankings use :func:`~polars_rankeval.expected_exposure`."
    )
    return build


ee_l = _expected_exposure("ee_l", "lower", "loss")
ee_d = _expected_exposure("ee_d", "lower", "disparity")
ee_r = _expected_exposure("ee_r", "higher", "relevance")


def ndkl(
    k: int | None = None,
    *,
    distribution: str = "target",
    epsilon: float = 0.0,
    dimension: str | None = None,
) -> Metric:
    """``ndkl``: normalized discounted KL divergence of the top-i group distributions (Geyik 2019).

    ``(1/Z) Σ_i Z_i KL(D_top-i ‖ D)``, ``Z_i = 1/log2(i+1)``, over the first ``k`` ranks (all
    when ``k`` is None). ``distribution="target"``: ``D`` is the target (Geyik's desired
    distribution); ``"list"``: the list's own group distribution (FairRankTune's NDKL, with
    ``epsilon=1e-7`` added to both distributions, as it does). 0 is parity; lower is fairer.
    """
    checked = check_cutoff(k, "ndkl", required=False)
    metric = at("ndkl", checked)
    chosen = check_choice("distribution", distribution, ["target", "list"])
    eps = _epsilon(epsilon, metric)
    dim = _dimension(dimension, metric)
    name = _name(
        metric,
        distribution=chosen if chosen != "target" else None,
        epsilon=eps or None,
        dimension=dim,
    )

    def measure(fair: FairInput) -> pl.LazyFrame:
        from polars_rankeval.fairness._geyik import ndkl_values

        return ndkl_values(fair, k=checked, reference=chosen, epsilon=eps)

    # distribution="list" reads the whole list's distribution, so the rows past k come too
    return _fair_metric(
        name,
        measure,
        depth=checked if chosen == "target" else None,
        dimension=dim,
        direction="lower",
        reads_labels=False,
    )


def _epsilon(value: object, metric: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        msg = f"option epsilon= of {metric!r} must be a number >= 0, got {value!r}"
        raise InvalidOptionError(msg)
    return float(value)


def skew(
    k: int, *, group: str | None = None, epsilon: float = 0.0, dimension: str | None = None
) -> Metric:
    """``skew@k``: ``ln(share of the group in the top k / its target share)`` (Geyik 2019).

    0 is parity; below 0 the group is under-represented, above over-represented (no direction:
    compare the groups with ``min_skew@k`` and ``max_skew@k``). ``epsilon`` is added to both
    shares (Credo AI Lens adds 1e-12), so a group absent from the top k gets a finite skew;
    with ``epsilon=0`` its skew is −∞, given as null with an ``UndefinedMetricWarning``.
    """
    checked = required_cutoff(k, "skew")
    metric = at("skew", checked)
    if not isinstance(group, str) or not group:
        msg = f"metric {metric!r} needs group= (the group whose skew to measure), got {group!r}"
        raise InvalidOptionError(msg)
    eps = _epsilon(epsilon, metric)
    dim = _dimension(dimension, metric)
    name = _name(metric, group=group, epsilon=eps or None, dimension=dim)

    def measure(fair: FairInput) -> pl.LazyFrame:
        from polars_rankeval.fairness._geyik import skew_values

        return skew_values(fair, k=checked, group=group, epsilon=eps)

    return _fair_metric(
        name, measure, depth=checked, dimension=dim, direction="none", reads_labels=False
    )


def _extreme_skew(which: str, direction: Direction) -> Callable[..., Metric]:
    def build(k: int, *, epsilon: float = 0.0, dimension: str | None = None) -> Metric:
        checked = required_cutoff(k, which)
        metric = at(which, checked)
        eps = _epsilon(epsilon, metric)
        dim = _dimension(dimension, metric)
        name = _name(metric, epsilon=eps or None, dimension=dim)

        def measure(fair: FairInput) -> pl.LazyFrame:
            from polars_rankeval.fairness import _geyik

            values: Callable[..., pl.LazyFrame] = getattr(_geyik, f"{which}_values")
            return values(fair, k=checked, epsilon=eps)

        return _fair_metric(
            name, measure, depth=checked, dimension=dim, direction=direction, reads_labels=False
        )

    build.__name__ = which
    low = which == "min_skew"
    build.__doc__ = (
        f"``{which}@k``: the {'lowest' if low else 'highest'} skew@k over the target's groups "
        f"(Geyik 2019 {'MinSkew' if low else 'MaxSkew'}@k); "
        f"{'higher' if low else 'lower'} is fairer, 0 is parity. A target group absent "
        "from the top k has skew −∞ (null, with a warning) unless ``epsilon`` is given."
    )
    return build


min_skew = _extreme_skew("min_skew", "higher")
max_skew = _extreme_skew("max_skew", "lower")


_TOOLKIT_DOCS = {
    "exp": "each group's mean exposure (Singh & Joachims' demographic parity), ",
    "expu": "each group's mean exposure per mean utility (Singh & Joachims' disparate treatment), ",
    "expru": "each group's click-through (label times exposure) per utility (Singh & "
    "Joachims' disparate impact), ",
}


def _toolkit_exposure(family: str, utility: bool) -> Callable[..., Metric]:
    def build(
        k: int | None = None, *, combo: str | None = None, dimension: str | None = None
    ) -> Metric:
        checked = check_cutoff(k, family, required=False)
        metric = at(family, checked)
        chosen = _combo(combo, metric)
        dim = _dimension(dimension, metric)
        name = _name(metric, combo=chosen, dimension=dim)

        def measure(fair: FairInput) -> pl.LazyFrame:
            from polars_rankeval.fairness import _toolkit

            values: Callable[..., pl.LazyFrame] = getattr(_toolkit, f"{family}_values")
            return values(fair, k=checked, combo=chosen)

        # FairRankTune's group sizes count every item of the list, ranked past k or not
        return _fair_metric(
            name,
            measure,
            depth=None,
            dimension=dim,
            direction=COMBOS[chosen],
            reads_labels=utility,
        )

    build.__name__ = family
    build.__doc__ = (
        f"``{family}``: FairRankTune's {family.upper()}, {_TOOLKIT_DOCS[family]}"
        "exposure ``1/log2(rank+1)`` summed over the top ``k`` and divided by the group's "
        "items in the list, combined over groups by ``combo``."
    )
    return build


exp = _toolkit_exposure("exp", utility=False)
expu = _toolkit_exposure("expu", utility=True)
expru = _toolkit_exposure("expru", utility=True)
