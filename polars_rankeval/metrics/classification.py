"""Classification-style ranking metrics: per-query AUC, fall-out, and per-system GAUC.

They read the list's judged rows as two classes: positives are the relevant rows (label
``>= relevance_level``), negatives the judged non-relevant ones; unjudged rows take no part.

* ``auc`` (``auc@k``: the top ``k`` only): the area under the ROC curve of the list's judged
  retrieved rows, i.e. the share of (positive, negative) pairs the scores order correctly,
  tied scores counting 1/2 (Mann–Whitney; sklearn ``roc_auc_score``, torchmetrics
  ``RetrievalAUROC``). A list with one class has no AUC: ``empty="skip"`` (default) leaves it
  out of the mean, ``"zero"`` scores it 0 (torchmetrics).
* ``fall_out@k``: non-relevant rows in the top ``k`` over the list's judged non-relevant rows
  (retrieved or not); a list with none scores 0 (``empty="zero"``, trec_eval-style) or 1
  (``empty="one"``: torchmetrics' ``empty_target_action="pos"``). Lower is better.
* ``gauc``: one value per system (``by`` group), ``Σ_u w_u AUC_u / Σ_u w_u`` over the lists
  that have both classes. ``weights="positives"`` (RecBole), ``"impressions"`` (the list's
  judged retrieved rows, as the DIN paper's impressions) or ``"equal"`` (TorchRec, Elliot).
  ``tie_credit=0.0`` gives tied (positive, negative) pairs no credit (TorchRec's argsort);
  ``identical="skip"`` also leaves out lists whose judged rows all have one score (TorchRec).
  Partial AUC (``max_fpr``) is not built yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import polars as pl

from polars_rankeval._options import check_choice
from polars_rankeval.context import RankingContext
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
from polars_rankeval.tables import Tables

AucEmpty = Literal["skip", "zero"]
FallOutEmpty = Literal["zero", "one"]
GaucWeights = Literal["positives", "impressions", "equal"]
Identical = Literal["keep", "skip"]


def _auc_rows(
    ctx: RankingContext, k: int | None, prefix: str
) -> dict[str, tuple[pl.Expr, pl.Expr]]:
    """Per-row ranks among the list's judged rows (a window over those rows only)."""
    judged = ctx.judged & ctx.within(k)
    positive = judged & ctx.relevant
    score = ctx.score + 0  # -0.0 and +0.0 are one score
    return {
        f"{prefix}avg": (judged, ctx.over(pl.when(judged).then(score).rank("average"))),
        f"{prefix}min": (judged, ctx.over(pl.when(judged).then(score).rank("min"))),
        f"{prefix}pos_min": (positive, ctx.over(pl.when(positive).then(score).rank("min"))),
    }


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


def auc(k: int | None = None, *, empty: AucEmpty = "skip") -> Metric:
    """``auc``: per-query ROC AUC of the judged retrieved rows (``auc@k``: the top ``k``).

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
    """
    k = check_cutoff(k, "auc", required=False)
    empty = check_choice("empty", empty, ["skip", "zero"])
    name = named(at("auc", k), {"empty": empty} if empty != "skip" else {})
    prefix = _prefix(k, 0.5)

    def value(p: Lookup) -> pl.Expr:
        found = _auc_value(p, prefix)
        return found.fill_null(0.0) if empty == "zero" else found

    def partials(ctx: RankingContext) -> Partials:
        no_closed_form(ctx, name)
        return _auc_partials(ctx, k, prefix, 0.5)

    return Metric(
        name,
        partials,
        value,
        sparse_rows=lambda ctx: _auc_rows(ctx, k, prefix),
    )


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
            retrieved = (
                ctx.judged_weight.filter(ctx.within(checked)).sum()
                - ctx.rel_weight.filter(ctx.within(checked)).sum()
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
        total = weight.sum()
        combined = pl.when(total > 0).then((auc_u * weight).sum() / total)
        return per_group(frame, by, combined.alias(label))

    return Metric(
        name,
        partials,
        value,
        level="system",
        reduce=reduce,
        sparse_rows=lambda ctx: _auc_rows(ctx, None, prefix),
    )
