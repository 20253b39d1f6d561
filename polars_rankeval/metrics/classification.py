"""Classification-style ranking metrics: per-query AUC, fall-out, and per-system GAUC.

They read the list's judged rows as two classes: positives are the relevant rows (label
``>= relevance_level``), negatives the judged non-relevant ones; unjudged rows take no part.

* ``auc`` (``auc@k``: the top ``k`` only): the area under the ROC curve of the list's judged
  retrieved rows, i.e. the share of (positive, negative) pairs the scores order correctly,
  tied scores counting 1/2 (Mann–Whitney; sklearn ``roc_auc_score``, torchmetrics
  ``RetrievalAUROC``). A list with one class has no AUC: ``empty="skip"`` (default) leaves it
  out of the mean (its per-query value is null), ``"zero"`` scores it 0 (torchmetrics).
  ``max_fpr=f`` (0 < f < 1) is the standardised partial AUC (McClish 1989, as sklearn
  ``roc_auc_score(max_fpr=)`` and torchmetrics ``RetrievalAUROC(max_fpr=)``): the area ``A``
  under the ROC curve (one point per distinct score, joined linearly, cut at ``fpr = f`` by
  linear interpolation), rescaled as ``(1 + (A - f²/2) / (f - f²/2)) / 2``; ``max_fpr=1`` is
  the full AUC.
* ``fall_out@k``: non-relevant rows in the top ``k`` over the list's judged non-relevant rows
  (retrieved or not); a list with none scores 0 (``empty="zero"``, trec_eval-style) or 1
  (``empty="one"``: torchmetrics' ``empty_target_action="pos"``). Lower is better.
* ``gauc``: one value per system (``by`` group), ``Σ_u w_u AUC_u / Σ_u w_u`` over the lists
  that have both classes. ``weights="positives"`` (RecBole), ``"impressions"`` (the list's
  judged retrieved rows, as the DIN paper's impressions) or ``"equal"`` (TorchRec, Elliot).
  ``tie_credit=0.0`` gives tied (positive, negative) pairs no credit (TorchRec's argsort);
  ``identical="skip"`` also leaves out lists whose judged rows all have one score (TorchRec).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import polars as pl

from polars_rankeval._engine.context import RankingContext
from polars_rankeval._engine.exact_sum import exact_sum
from polars_rankeval._engine.options import check_choice
from polars_rankeval._engine.tables import Tables
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.metrics._base import (
    Lookup,
    Metric,
    Partials,
    at,
    check_cutoff,
    named,
    no_closed_form,
    per_group,
    required_cutoff,
)

AucEmpty = Literal["skip", "zero"]
FallOutEmpty = Literal["zero", "one"]
GaucWeights = Literal["positives", "impressions", "equal"]
Identical = Literal["keep", "skip"]


def _auc_rows(
    ctx: RankingContext, k: int | None, prefix: str, wanted: set[str]
) -> dict[str, tuple[pl.Expr, pl.Expr]]:
    """Per-row ranks among the list's judged rows (a window over those rows only).

    Only the ``wanted`` ranks: each is a window over the judged rows, so the half-credit AUC
    (``avg``) does not pay for the no-credit one's (``min``, ``pos_min``).
    """
    judged = ctx.judged & ctx.within(k)
    positive = judged & ctx.relevant
    score = ctx.score + 0  # -0.0 and +0.0 are one score
    rows = {"avg": judged, "min": judged, "pos_min": positive}
    methods: dict[str, Literal["average", "min"]] = {
        "avg": "average",
        "min": "min",
        "pos_min": "min",
    }
    return {
        f"{prefix}{key}": (
            rows[key],
            ctx.over(pl.when(rows[key]).then(score).rank(methods[key])),
        )
        for key in sorted(wanted)
    }


def _partial_rows(
    ctx: RankingContext, k: int | None, prefix: str
) -> dict[str, tuple[pl.Expr, pl.Expr]]:
    """What the ROC curve's segments need, on the list's judged rows (windows over those).

    Ranks are ascending in score, ``min``/``max`` over tied scores: a row's tie group holds
    the rows ranked ``min..max``, and ``total - max`` rows score strictly higher.
    """
    judged = ctx.judged & ctx.within(k)
    negative = judged & ~ctx.relevant
    score = ctx.score + 0  # -0.0 and +0.0 are one score
    return {
        f"{prefix}max": (judged, ctx.over(pl.when(judged).then(score).rank("max"))),
        f"{prefix}neg_min": (negative, ctx.over(pl.when(negative).then(score).rank("min"))),
        f"{prefix}neg_max": (negative, ctx.over(pl.when(negative).then(score).rank("max"))),
        f"{prefix}n_judged": (judged, ctx.over(judged.sum())),
        f"{prefix}n_neg": (judged, ctx.over(negative.sum())),
    }


def _partial_area(ctx: RankingContext, k: int | None, prefix: str, max_fpr: float) -> pl.Expr:
    """The ROC curve's area over ``fpr`` in ``[0, max_fpr]`` (trapezoids, as sklearn's ``auc``).

    Each group of tied scores that holds negatives is one segment of the curve, from
    ``(fp_above, tp_above)`` to ``(fp_above + n_g, tp_above + p_g)`` (divided by N and P);
    a group of positives only is a vertical step of no area. Every negative row of a group
    carries ``1/n_g`` of its segment's area, so the sum over negative rows is a plain
    aggregation. The segment that crosses ``max_fpr`` is cut there, its ``tpr`` interpolated
    linearly (sklearn ``np.interp``, torchmetrics ``torch.lerp``).
    """
    judged = ctx.judged & ctx.within(k)
    negative = judged & ~ctx.relevant

    def col(name: str) -> pl.Expr:
        return ctx.extra[f"{prefix}{name}"].cast(pl.Float64)

    n_neg = col("n_neg")
    n_pos = col("n_judged") - n_neg
    neg_min, neg_max = col("neg_min"), col("neg_max")
    n_g = neg_max - neg_min + 1
    # rows tied with this one: ranks min..max among all judged rows
    p_g = col("max") - col("min") + 1 - n_g
    fp_above = n_neg - neg_max
    tp_above = col("n_judged") - col("max") - fp_above
    x0, x1 = fp_above / n_neg, (fp_above + n_g) / n_neg
    y0, y1 = tp_above / n_pos, (tp_above + p_g) / n_pos
    x_end = pl.min_horizontal(x1, pl.lit(max_fpr))
    y_end = y0 + (y1 - y0) * (x_end - x0) / (x1 - x0)
    area = pl.when(x_end > x0).then((x_end - x0) * (y0 + y_end) / 2).otherwise(0.0)
    return exact_sum(area / n_g, negative)


def _auc_partials(ctx: RankingContext, k: int | None, prefix: str, tie_credit: float) -> Partials:
    judged = ctx.judged & ctx.within(k)
    positive = judged & ctx.relevant
    pos_count = positive.sum().cast(pl.Float64)
    if tie_credit == 0.5:
        # Σ average rank of the positives − P(P+1)/2: pairs ordered right, ties counting 1/2
        right = ctx.extra[f"{prefix}avg"].filter(positive).sum() - pos_count * (pos_count + 1) / 2
    else:
        # negatives strictly below each positive: rows below it minus positives below it
        below = ctx.extra[f"{prefix}min"] - ctx.extra[f"{prefix}pos_min"]
        right = below.filter(positive).sum().cast(pl.Float64)
    return {
        f"{prefix}P": pos_count,
        f"{prefix}N": (judged & ~ctx.relevant).sum().cast(pl.Float64),
        f"{prefix}right": right,
        f"{prefix}lo": ctx.score.filter(judged).min(),
        f"{prefix}hi": ctx.score.filter(judged).max(),
    }


def _auc_value(p: Lookup, prefix: str) -> pl.Expr:
    pairs = p(f"{prefix}P") * p(f"{prefix}N")
    return pl.when(pairs > 0).then(p(f"{prefix}right") / pairs)


def _prefix(k: int | None, tie_credit: float) -> str:
    return f"auc{'' if k is None else k}{'' if tie_credit == 0.5 else '_strict'}:"


def _check_max_fpr(max_fpr: object) -> float | None:
    """``None`` (full AUC) or a number in ``(0, 1]``; 1 is the full AUC, so it becomes None."""
    if max_fpr is None:
        return None
    if isinstance(max_fpr, bool) or not isinstance(max_fpr, int | float):
        msg = f"option max_fpr= of 'auc' must be a number in (0, 1], got {max_fpr!r}"
        raise InvalidOptionError(msg)
    if not 0 < max_fpr <= 1:
        msg = f"option max_fpr= of 'auc' must be in (0, 1] (a false positive rate), got {max_fpr}"
        raise InvalidOptionError(msg)
    return None if max_fpr == 1 else float(max_fpr)


def auc(k: int | None = None, *, empty: AucEmpty = "skip", max_fpr: float | None = None) -> Metric:
    """``auc``: per-query ROC AUC of the judged retrieved rows (``auc@k``: the top ``k``).

    Positives are the relevant rows, negatives the judged non-relevant ones; unjudged and
    unretrieved rows take no part. Tied scores count 1/2 (Mann-Whitney). ``max_fpr``: the
    standardised partial AUC over ``fpr <= max_fpr`` (McClish), as sklearn and torchmetrics.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> # torchmetrics' RetrievalAUROC docstring example: 0.75
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": [0, 0, 0, 1, 1, 1, 1],
    ...         "item": list("abcdefg"),
    ...         "score": [0.2, 0.3, 0.5, 0.1, 0.3, 0.5, 0.2],
    ...         "relevance": [0, 0, 1, 0, 1, 0, 1],
    ...     }
    ... )
    >>> rke.evaluate(log, ["auc"]).item()
    0.75
    >>> # query 1's ROC curve has no area up to fpr 0.5 (its top row is a negative):
    >>> # (1 + (0 - 0.125) / 0.375) / 2 = 1/3, so the mean is (1 + 1/3) / 2
    >>> round(rke.evaluate(log, ["auc(max_fpr=0.5)"]).item(), 12)
    0.666666666667
    """
    k = check_cutoff(k, "auc", required=False)
    empty = check_choice("empty", empty, ["skip", "zero"])
    fpr = _check_max_fpr(max_fpr)
    options: dict[str, object] = {}
    if empty != "skip":
        options["empty"] = empty
    if fpr is not None:
        options["max_fpr"] = fpr
    name = named(at("auc", k), options)
    prefix = _prefix(k, 0.5)
    area = f"{prefix}area({fpr!r})"

    def value(p: Lookup) -> pl.Expr:
        found = _auc_value(p, prefix)
        if fpr is not None:
            # McClish: 1/2 for the chance diagonal's area fpr²/2, 1 for the full area fpr
            floor = fpr * fpr / 2
            standard = 0.5 * (1 + (p(area) - floor) / (fpr - floor))
            found = pl.when(found.is_not_null()).then(standard)
        return found.fill_null(0.0) if empty == "zero" else found

    def partials(ctx: RankingContext) -> Partials:
        no_closed_form(ctx, name)
        found = _auc_partials(ctx, k, prefix, 0.5)
        if fpr is not None:
            found[area] = _partial_area(ctx, k, prefix, fpr)
        return found

    def sparse_rows(ctx: RankingContext) -> dict[str, tuple[pl.Expr, pl.Expr]]:
        rows = _auc_rows(ctx, k, prefix, {"avg"} if fpr is None else {"avg", "min"})
        if fpr is not None:
            rows.update(_partial_rows(ctx, k, prefix))
        return rows

    return Metric(name, partials, value, sparse_rows=sparse_rows)


def fall_out(k: int, *, empty: FallOutEmpty = "zero") -> Metric:
    """``fall_out@k``: share of the judged non-relevant rows retrieved in the top ``k``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> # torchmetrics' RetrievalFallOut docstring example (top_k=2): 0.5
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": [0, 0, 0, 1, 1, 1, 1],
    ...         "item": list("abcdefg"),
    ...         "score": [0.2, 0.3, 0.5, 0.1, 0.3, 0.5, 0.2],
    ...         "relevance": [0, 0, 1, 0, 1, 0, 1],
    ...     }
    ... )
    >>> rke.evaluate(log, ["fall_out@2"]).item()
    0.5
    """
    checked = required_cutoff(k, "fall_out")
    empty = check_choice("empty", empty, ["zero", "one"])
    name = named(at("fall_out", checked), {"empty": empty} if empty != "zero" else {})
    key = f"fall_out@{checked}"

    def partials(ctx: RankingContext) -> Partials:
        negative = ctx.judged & ~ctx.relevant
        if ctx.expected:
            retrieved = exact_sum(ctx.judged_weight, ctx.within(checked)) - exact_sum(
                ctx.rel_weight, ctx.within(checked)
            )
        else:
            retrieved = (negative & ctx.within(checked)).sum().cast(pl.Float64)
        return {f"{key}:found": retrieved, f"{key}:negatives": negative.sum().cast(pl.Float64)}

    def value(p: Lookup) -> pl.Expr:
        negatives = p(f"{key}:negatives")
        return (
            pl.when(negatives > 0)
            .then(p(f"{key}:found") / negatives)
            .otherwise(1.0 if empty == "one" else 0.0)
        )

    return Metric(name, partials, value, direction="lower")


def gauc(
    *,
    weights: GaucWeights = "positives",
    tie_credit: float = 0.5,
    identical: Identical = "keep",
) -> Metric:
    """``gauc``: per-user AUC combined with weights into one value per system.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> # TorchRec's GAUC test: sessions of 3 and 2 candidates -> AUCs 0.5 and 1.0
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": [1, 1, 1, 2, 2],
    ...         "item": list("abcde"),
    ...         "score": [0.9, 0.8, 0.7, 0.6, 0.5],
    ...         "relevance": [1, 0, 1, 1, 0],
    ...     }
    ... )
    >>> rke.evaluate(log, ["gauc(weights=equal)", "gauc"]).row(0)
    (0.75, 0.6666666666666666)
    """
    weights = check_choice("weights", weights, ["positives", "impressions", "equal"])
    identical = check_choice("identical", identical, ["keep", "skip"])
    if tie_credit not in (0.0, 0.5) or isinstance(tie_credit, bool):
        msg = f"option tie_credit= of 'gauc' must be 0.5 or 0.0, got {tie_credit!r}"
        raise InvalidOptionError(msg)
    defaults: dict[str, object] = {"weights": "positives", "tie_credit": 0.5, "identical": "keep"}
    chosen: dict[str, object] = {
        "weights": weights,
        "tie_credit": float(tie_credit),
        "identical": identical,
    }
    name = named("gauc", {key: v for key, v in chosen.items() if v != defaults[key]})
    prefix = _prefix(None, float(tie_credit))

    def partials(ctx: RankingContext) -> Partials:
        no_closed_form(ctx, name)
        return _auc_partials(ctx, None, prefix, float(tie_credit))

    def value(p: Lookup) -> pl.Expr:
        found = _auc_value(p, prefix)
        if identical == "skip":
            found = pl.when(p(f"{prefix}lo") < p(f"{prefix}hi")).then(found)
        weight = {
            "positives": p(f"{prefix}P"),
            "impressions": p(f"{prefix}P") + p(f"{prefix}N"),
            "equal": pl.lit(1.0),
        }[weights]
        return pl.struct(found.alias("auc"), weight.alias("weight"))

    def reduce(frame: pl.LazyFrame, by: Sequence[str], label: str, tables: Tables) -> pl.LazyFrame:
        auc_u = pl.col(label).struct.field("auc")
        weight = pl.when(auc_u.is_not_null()).then(pl.col(label).struct.field("weight"))
        total = exact_sum(weight)
        combined = pl.when(total > 0).then(exact_sum(auc_u * weight) / total)
        return per_group(frame, by, combined.alias(label))

    return Metric(
        name,
        partials,
        value,
        level="system",
        reduce=reduce,
        sparse_rows=lambda ctx: _auc_rows(
            ctx, None, prefix, {"avg"} if tie_credit == 0.5 else {"min", "pos_min"}
        ),
    )
