"""Discounted cumulative gain: ``dcg``, ``dcg@k``, ``ndcg``, ``ndcg@k`` and their variants.

Defaults are trec_eval's: linear gain (the label when positive, else 0), discount
``log2(rank + 1)``, and the ideal ordering taken from every judged row of the query, retrieved
or not. ``ndcg@k`` cuts both the run and the ideal list at ``k`` (trec_eval ``ndcg_cut_k``);
uncut ``ndcg`` compares the whole run with the whole ideal list (trec_eval ``ndcg``).
``relevance_level`` does not apply, as in trec_eval.

Options:

* ``gain``: ``"linear"``, ``"exp"`` (``2^label - 1``, ranx ``ndcg_burges``), ``"binary"`` (1 for
  relevant rows, ``label >= relevance_level``) or a mapping from label to gain (labels not in
  the mapping, negative and null labels give 0);
* ``gain_level``: when True, labels below ``relevance_level`` give no gain, in the run and in
  the ideal list (ranx); by default ``relevance_level`` does not touch DCG, as in trec_eval;
* ``log_base``: base of the logarithm in the discount (default 2);
* ``discount``: ``"log"`` (``1/log_b(i + 1)``) or ``"jarvelin"`` (Järvelin & Kekäläinen 2002:
  rank 1 undiscounted, then ``1/log_b(i)``);
* ``ideal``: ``"judged"`` (all judged rows) or ``"retrieved"`` (only the retrieved rows, the
  scikit-learn convention).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Literal

import polars as pl

from polars_rankeval._options import check_choice
from polars_rankeval.context import RankingContext
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.metrics._base import (
    Metric,
    Partials,
    at,
    check_cutoff,
    named,
    ratio_or_zero,
)

Gain = Literal["linear", "exp", "binary"] | Mapping[int, float]
Discount = Literal["log", "jarvelin"]
Ideal = Literal["judged", "retrieved"]


def _check_options(gain: object, log_base: object, discount: object, ideal: object) -> None:
    if not isinstance(gain, Mapping):
        check_choice("gain", gain, ["linear", "exp", "binary", "{label: gain, ...}"])
    else:
        for label, value in gain.items():
            if isinstance(label, bool) or not isinstance(label, int):
                msg = f"gain= mapping keys must be integer labels, got {label!r}"
                raise InvalidOptionError(msg)
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                msg = f"gain= mapping values must be finite numbers, got {value!r}"
                raise InvalidOptionError(msg)
    if (
        isinstance(log_base, bool)
        or not isinstance(log_base, (int, float))
        or not log_base > 1
        or not math.isfinite(log_base)
    ):
        msg = f"option log_base= must be a number > 1, got {log_base!r}"
        raise InvalidOptionError(msg)
    check_choice("discount", discount, ["log", "jarvelin"])
    check_choice("ideal", ideal, ["judged", "retrieved"])


def gain_expr(label: pl.Expr, gain: Gain, relevant: pl.Expr) -> pl.Expr:
    """Per-row gain from the Int64 label; unjudged (null) and negative labels give 0."""
    if gain == "binary":
        return relevant.cast(pl.Float64)
    if isinstance(gain, Mapping):
        # A when/then chain streams; replace_strict falls back to the in-memory engine.
        mapped: pl.Expr = pl.lit(0.0)
        for key, value in sorted(gain.items(), reverse=True):
            if key >= 0:
                mapped = pl.when(label == key).then(float(value)).otherwise(mapped)
        return mapped.fill_null(0.0)
    positive = pl.when(label > 0).then(label).otherwise(0).cast(pl.Float64)
    if gain == "exp":
        return pl.lit(2.0).pow(positive) - 1.0
    return positive


def _discount(position: pl.Expr, log_base: float, discount: Discount) -> pl.Expr:
    i = position.cast(pl.Float64)
    if discount == "jarvelin":
        return pl.when(i <= 1.0).then(1.0).otherwise(1.0 / i.log(log_base))
    return 1.0 / (i + 1.0).log(log_base)


def _options(
    gain: Gain, log_base: float, discount: Discount, ideal: Ideal, gain_level: bool
) -> dict[str, object]:
    shown: dict[str, object] = {}
    if isinstance(gain, Mapping):
        shown["gain"] = "{" + ",".join(f"{key}:{value:g}" for key, value in gain.items()) + "}"
    elif gain != "linear":
        shown["gain"] = gain
    if log_base != 2:
        shown["log_base"] = f"{log_base:g}"
    if discount != "log":
        shown["discount"] = discount
    if ideal != "judged":
        shown["ideal"] = ideal
    if gain_level:
        shown["gain_level"] = True
    return shown


class _DcgFamily:
    """Shared builders of one (gain, log_base, discount, ideal) setting."""

    def __init__(
        self, gain: Gain, log_base: float, discount: Discount, ideal: Ideal, gain_level: bool
    ) -> None:
        _check_options(gain, log_base, discount, ideal)
        if not isinstance(gain_level, bool):
            msg = f"option gain_level= must be True or False, got {gain_level!r}"
            raise InvalidOptionError(msg)
        self.gain = gain
        self.log_base = float(log_base)
        self.discount = discount
        self.ideal = ideal
        self.gain_level = gain_level
        self.suffix = named("", _options(gain, log_base, discount, ideal, gain_level))
        self.trec_default = not self.suffix

    def key(self, name: str, k: int | None) -> str:
        return at(name, k) + self.suffix

    def rows(self, ctx: RankingContext) -> dict[str, pl.Expr]:
        terms: dict[str, pl.Expr] = {}
        gain = self._gain(ctx)
        if ctx.expected:
            terms[self.key("gain_mean", None)] = ctx.tie_groups("dcg").spread(gain)
        # Linear and exp gains order labels alike, so the shared ideal order serves them;
        # other gains may not, and "retrieved" draws the ideal from other rows.
        if self.ideal == "retrieved" or not self._shares_ideal_order():
            pool = ctx.retrieved if self.ideal == "retrieved" else ctx.judged
            ranked = pl.when(pool & (gain > 0)).then(gain).rank("ordinal", descending=True)
            terms[self.key("ideal_rank", None)] = ctx.over(ranked)
        return terms

    def _shares_ideal_order(self) -> bool:
        return self.gain in ("linear", "exp") and not self.gain_level

    def _gain(self, ctx: RankingContext) -> pl.Expr:
        if self.trec_default:
            return ctx.gain
        gain = gain_expr(ctx.label, self.gain, ctx.relevant)
        return pl.when(ctx.relevant).then(gain).otherwise(0.0) if self.gain_level else gain

    def dcg_partial(self, ctx: RankingContext, k: int | None) -> Partials:
        gain = ctx.extra[self.key("gain_mean", None)] if ctx.expected else self._gain(ctx)
        term = gain * _discount(ctx.rank, self.log_base, self.discount)
        return {self.key("dcg", k): term.filter(ctx.within(k)).sum()}

    def idcg_partial(self, ctx: RankingContext, k: int | None) -> Partials:
        ideal_rank = ctx.extra.get(self.key("ideal_rank", None), ctx.ideal_rank)
        gain = self._gain(ctx)
        in_ideal = ideal_rank.is_not_null()
        if k is not None:
            in_ideal = in_ideal & (ideal_rank <= k).fill_null(value=False)
        term = gain * _discount(ideal_rank, self.log_base, self.discount)
        return {self.key("idcg", k): term.filter(in_ideal).sum()}


def _at_most_one(ratio: pl.Expr) -> pl.Expr:
    """DCG and IDCG are summed in different orders, so an ideal ranking can exceed 1 by an ulp.

    Only that rounding excess is removed; a real excess (a bug) would stay visible.
    """
    return pl.when((ratio > 1.0) & (ratio < 1.0 + 1e-12)).then(1.0).otherwise(ratio)


def dcg(
    k: int | None = None,
    *,
    gain: Gain = "linear",
    log_base: float = 2,
    discount: Discount = "log",
    gain_level: bool = False,
) -> Metric:
    """``dcg@k = Σ_{i ≤ k} gain_i · discount(i)`` (uncut, defaults: trec_eval ``dcg``)."""
    k = check_cutoff(k, "dcg", required=False)
    family = _DcgFamily(gain, log_base, discount, "judged", gain_level)
    return Metric(
        family.key("dcg", k),
        lambda ctx: family.dcg_partial(ctx, k),
        lambda p: p(family.key("dcg", k)),
        rows=family.rows,
    )


def ndcg(
    k: int | None = None,
    *,
    gain: Gain = "linear",
    log_base: float = 2,
    discount: Discount = "log",
    ideal: Ideal = "judged",
    gain_level: bool = False,
) -> Metric:
    """``ndcg@k = dcg@k / idcg@k``; 0 when the ideal DCG is 0."""
    k = check_cutoff(k, "ndcg", required=False)
    family = _DcgFamily(gain, log_base, discount, ideal, gain_level)
    return Metric(
        family.key("ndcg", k),
        lambda ctx: {**family.dcg_partial(ctx, k), **family.idcg_partial(ctx, k)},
        lambda p: _at_most_one(ratio_or_zero(p(family.key("dcg", k)), p(family.key("idcg", k)))),
        rows=family.rows,
    )
