"""Discounted cumulative gain: ``dcg``, ``dcg@k``, ``ndcg``, ``ndcg@k`` and their variants.

Defaults are trec_eval's: linear gain (the label when positive, else 0), discount
``log2(rank + 1)``, and the ideal ordering taken from every judged row of the query, retrieved
or not. ``ndcg@k`` cuts both the run and the ideal list at ``k`` (trec_eval ``ndcg_cut_k``);
uncut ``ndcg`` compares the whole run with the whole ideal list (trec_eval ``ndcg``).
``relevance_level`` does not apply, as in trec_eval.

Options:

* ``gain``: ``"linear"``, ``"exp"`` (``2^label - 1``, ranx ``ndcg_burges``), ``"binary"`` (1 for
  relevant rows, ``label >= relevance_level``) or a mapping from label to gain, as trec_eval's
  ``-m ndcg.1=3,2=9`` and ir_measures' ``nDCG(gains=...)``. With ``"exp"``, a query whose
  DCG overflows Float64 (a label of 1024 or more, or a sum of gains near 2^1024) is a
  ``ColumnValueError`` naming its largest label, never a NaN;
* ``unmapped`` (with a mapping): a label not in the mapping keeps its own value as gain
  (``"label"``, default, trec_eval and ir_measures) or gets 0 (``"zero"``). Negative labels
  not in the mapping and null labels give 0 either way; a negative label in the mapping gets
  its gain, in the run and in the ideal list (ir_measures maps labels before evaluating);
* ``gain_level``: when True, labels below ``relevance_level`` give no gain, in the run and in
  the ideal list (ranx); by default ``relevance_level`` does not touch DCG, as in trec_eval;
* ``log_base``: base of the logarithm in the discount (default 2);
* ``discount``: ``"log"`` (``1/log_b(i + 1)``) or ``"jarvelin"`` (Järvelin & Kekäläinen 2002:
  rank 1 undiscounted, then ``1/log_b(i)``);
* ``ideal``: ``"judged"`` (all judged rows) or ``"retrieved"`` (only the retrieved rows, the
  scikit-learn convention);
* ``ideal_cutoff`` (``ndcg@k`` only): ``"k"`` (default, trec_eval's ``ndcg_cut``) cuts the ideal
  list at ``k`` like the run; ``"none"`` divides by the DCG of the whole ideal list even with a
  cutoff, as LensKit did before lkpy #309 (fixed in PR #310) and as tools that normalise a
  top-k list by every relevant item do. Without a cutoff both read the whole ideal list, so the
  option changes nothing there and is not shown in the name.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Literal

import polars as pl

from polars_rankeval._engine.context import RankingContext
from polars_rankeval._engine.exact_sum import exact_sum
from polars_rankeval._engine.options import check_choice
from polars_rankeval.errors import ColumnValueError, InvalidOptionError
from polars_rankeval.metrics._base import (
    Lookup,
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
IdealCutoff = Literal["k", "none"]
Unmapped = Literal["label", "zero"]
# 2.0 ** 1024 is inf in Float64: gain="exp" holds labels below this.
_EXP_GAIN_LIMIT = 1024


def _check_options(
    gain: Gain, log_base: object, discount: object, ideal: object, unmapped: object
) -> tuple[Gain, Discount, Ideal, Unmapped]:
    """The options, checked, with string choices in their canonical spelling."""
    if not isinstance(gain, Mapping):
        gain = check_choice("gain", gain, ["linear", "exp", "binary"])
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
    return (
        gain,
        check_choice("discount", discount, ["log", "jarvelin"]),
        check_choice("ideal", ideal, ["judged", "retrieved"]),
        check_choice("unmapped", unmapped, ["label", "zero"]),
    )


def gain_expr(
    label: pl.Expr, gain: Gain, relevant: pl.Expr, unmapped: Unmapped = "label"
) -> pl.Expr:
    """Per-row gain from the Int64 label; unjudged (null) labels give 0.

    Negative labels give 0 unless a mapping names them.
    """
    positive = pl.when(label > 0).then(label).otherwise(0).cast(pl.Float64)
    if gain == "binary":
        return relevant.cast(pl.Float64)
    if isinstance(gain, Mapping):
        # trec_eval's gain_init.c starts from gain = label for every judged level 0..max and
        # lets the mapping override some; a negative label is "pooled but unjudged" there and
        # has no level, so it keeps gain 0 unless mapped. (trec_eval's own "-1"/"-2" keys
        # address its internal codes for unpooled and unjudged rows, not labels.)
        mapped: pl.Expr = positive if unmapped == "label" else pl.lit(0.0)
        # A when/then chain streams; replace_strict falls back to the in-memory engine.
        for key, value in sorted(gain.items(), reverse=True):
            mapped = pl.when(label == key).then(float(value)).otherwise(mapped)
        return mapped.fill_null(0.0)
    if gain == "exp":
        return pl.lit(2.0).pow(positive) - 1.0
    return positive


def _discount(position: pl.Expr, log_base: float, discount: Discount) -> pl.Expr:
    i = position.cast(pl.Float64)
    if discount == "jarvelin":
        return pl.when(i <= 1.0).then(1.0).otherwise(1.0 / i.log(log_base))
    return 1.0 / (i + 1.0).log(log_base)


def _options(
    gain: Gain,
    *,
    log_base: float,
    discount: Discount,
    ideal: Ideal,
    gain_level: bool,
    unmapped: Unmapped,
    ideal_cutoff: IdealCutoff,
) -> dict[str, object]:
    shown: dict[str, object] = {}
    if isinstance(gain, Mapping):
        shown["gain"] = "{" + ",".join(f"{key}:{value:g}" for key, value in gain.items()) + "}"
    elif gain != "linear":
        shown["gain"] = gain
    if unmapped != "label":
        shown["unmapped"] = unmapped
    if log_base != 2:
        shown["log_base"] = f"{log_base:g}"
    if discount != "log":
        shown["discount"] = discount
    if ideal != "judged":
        shown["ideal"] = ideal
    if gain_level:
        shown["gain_level"] = True
    if ideal_cutoff != "k":
        shown["ideal_cutoff"] = ideal_cutoff
    return shown


class _DcgFamily:
    """Shared builders of one (gain, log_base, discount, ideal) setting."""

    def __init__(
        self,
        gain: Gain,
        *,
        log_base: float,
        discount: Discount,
        ideal: Ideal,
        gain_level: bool,
        unmapped: Unmapped = "label",
        ideal_cutoff: IdealCutoff = "k",
    ) -> None:
        gain, discount, ideal, unmapped = _check_options(gain, log_base, discount, ideal, unmapped)
        if not isinstance(gain_level, bool):
            msg = f"option gain_level= must be True or False, got {gain_level!r}"
            raise InvalidOptionError(msg)
        self.ideal_cutoff: IdealCutoff = check_choice("ideal_cutoff", ideal_cutoff, ["k", "none"])
        self.gain = gain
        self.log_base = float(log_base)
        self.discount = discount
        self.ideal = ideal
        self.gain_level = gain_level
        self.unmapped = unmapped
        shown = _options(
            gain,
            log_base=log_base,
            discount=discount,
            ideal=ideal,
            gain_level=gain_level,
            unmapped=unmapped,
            ideal_cutoff=self.ideal_cutoff,
        )
        self.suffix = named("", shown)
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
            # Every labelled row: only a mapping gives a negative label a gain, and a
            # mapped negative label belongs to the ideal list (ir_measures relabels first).
            pool = ctx.retrieved if self.ideal == "retrieved" else ctx.has_label
            ranked = pl.when(pool & (gain > 0)).then(gain).rank("ordinal", descending=True)
            terms[self.key("ideal_rank", None)] = ctx.over(ranked)
        return terms

    def _shares_ideal_order(self) -> bool:
        return self.gain in ("linear", "exp") and not self.gain_level

    def _gain(self, ctx: RankingContext) -> pl.Expr:
        if self.trec_default:
            return ctx.gain
        gain = gain_expr(ctx.label, self.gain, ctx.relevant, self.unmapped)
        return pl.when(ctx.relevant).then(gain).otherwise(0.0) if self.gain_level else gain

    def dcg_partial(self, ctx: RankingContext, k: int | None) -> Partials:
        gain = ctx.extra[self.key("gain_mean", None)] if ctx.expected else self._gain(ctx)
        term = gain * _discount(ctx.rank, self.log_base, self.discount)
        return {self.key("dcg", k): exact_sum(term, ctx.within(k))}

    def overflow_partial(self, ctx: RankingContext) -> Partials:
        """The query's largest label, for the overflow message of ``gain="exp"`` (else none)."""
        return {self.key("max_label", None): ctx.label.max()} if self.gain == "exp" else {}

    def refuse_overflow(self, value: pl.Expr, sums: list[pl.Expr], p: Lookup, name: str) -> pl.Expr:
        """``value``, or a ColumnValueError where one of the DCG ``sums`` is not finite.

        ``2^label`` is inf from label 1024 on (and a sum of large gains can reach inf too):
        ndcg would be inf/inf = NaN and dcg inf. Only ``gain="exp"`` can get there; linear
        gains of Int64 labels stay far below Float64's range. The check runs on the
        one-row-per-query frame, so it costs one pass over the values.
        """
        if self.gain != "exp":
            return value
        finite = pl.all_horizontal(total.is_finite().fill_null(value=True) for total in sums)

        def check(packed: pl.Series) -> pl.Series:
            frame = packed.struct.unnest()
            overflowed = frame.filter(~frame["finite"])
            if overflowed.height:
                label = overflowed["max_label"].max()
                queries = f"{overflowed.height} quer{'y' if overflowed.height == 1 else 'ies'}"
                what = (
                    f"relevance label {label!r} overflows 2^label - 1 in Float64"
                    if isinstance(label, int) and label >= _EXP_GAIN_LIMIT
                    else f"the sum of gains 2^label - 1 (labels up to {label!r}) overflows Float64"
                )
                msg = (
                    f"{name}: {what} ({queries}); gain=exp holds labels up to "
                    f"{_EXP_GAIN_LIMIT - 1} and DCG sums below 2^1024: use gain=linear or a "
                    "gain= mapping"
                )
                raise ColumnValueError(msg)
            return frame["value"]

        packed = pl.struct(
            value.alias("value"),
            finite.alias("finite"),
            p(self.key("max_label", None)).alias("max_label"),
        )
        return packed.map_batches(check, return_dtype=pl.Float64, is_elementwise=True)

    def idcg_partial(self, ctx: RankingContext, k: int | None) -> Partials:
        ideal_rank = ctx.extra.get(self.key("ideal_rank", None), ctx.ideal_rank)
        gain = self._gain(ctx)
        in_ideal = ideal_rank.is_not_null()
        if k is not None and self.ideal_cutoff == "k":
            in_ideal = in_ideal & (ideal_rank <= k).fill_null(value=False)
        term = gain * _discount(ideal_rank, self.log_base, self.discount)
        return {self.key("idcg", k): exact_sum(term, in_ideal)}


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
    unmapped: Unmapped = "label",
) -> Metric:
    """``dcg@k = Σ_{i ≤ k} gain_i · discount(i)`` (uncut, defaults: trec_eval ``dcg``).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {"query": "q", "item": ["a", "b"], "score": [2.0, 1.0], "relevance": [2, 1]}
    ... )
    >>> # gain={1: 3}: label 1 earns 3; label 2 is not mapped and keeps its own value 2
    >>> # (trec_eval -m dcg.1=3), or earns 0 with unmapped="zero".
    >>> out = rke.evaluate(log, ["dcg(gain={1:3})", "dcg(gain={1:3},unmapped=zero)"])
    >>> [round(value, 4) for value in out.row(0)]  # 2 + 3/log2(3), then 0 + 3/log2(3)
    [3.8928, 1.8928]
    """
    k = check_cutoff(k, "dcg", required=False)
    family = _DcgFamily(
        gain,
        log_base=log_base,
        discount=discount,
        ideal="judged",
        gain_level=gain_level,
        unmapped=unmapped,
    )
    name = family.key("dcg", k)

    def value(p: Lookup) -> pl.Expr:
        return family.refuse_overflow(p(name), [p(name)], p, name)

    return Metric(
        name,
        lambda ctx: {**family.dcg_partial(ctx, k), **family.overflow_partial(ctx)},
        value,
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
    unmapped: Unmapped = "label",
    ideal_cutoff: IdealCutoff = "k",
) -> Metric:
    """``ndcg@k = dcg@k / idcg@k``; 0 when the ideal DCG is 0.

    With a ``gain`` mapping, ``unmapped="label"`` (default) keeps an unmapped label's own value
    as its gain and ``unmapped="zero"`` gives it 0 (see the module docstring).
    ``ideal_cutoff="none"`` divides ``dcg@k`` by the whole ideal list's DCG instead of its
    first ``k`` rows' (LensKit before lkpy #309).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> # lkpy #309: labels {1: 3, 2: 5, 3: 4}, items 1 then 2 recommended, Järvelin's discount
    >>> log = pl.DataFrame(
    ...     {"query": "u", "item": [1, 2, 3], "score": [2.0, 1.0, None], "relevance": [3, 5, 4]}
    ... )
    >>> out = rke.evaluate(
    ...     log,
    ...     ["ndcg@2(discount=jarvelin)", "ndcg@2(discount=jarvelin,ideal_cutoff=none)"],
    ... )
    >>> [round(value, 4) for value in out.row(0)]  # 8 / 9, then 8 / (9 + 3 / log2(3))
    [0.8889, 0.7344]
    """
    k = check_cutoff(k, "ndcg", required=False)
    ideal_cutoff = check_choice("ideal_cutoff", ideal_cutoff, ["k", "none"])
    family = _DcgFamily(
        gain,
        log_base=log_base,
        discount=discount,
        ideal=ideal,
        gain_level=gain_level,
        unmapped=unmapped,
        # Uncut, "k" and "none" both read the whole ideal list: one metric, one name.
        ideal_cutoff=ideal_cutoff if k is not None else "k",
    )
    name = family.key("ndcg", k)

    def value(p: Lookup) -> pl.Expr:
        dcg_sum, idcg_sum = p(family.key("dcg", k)), p(family.key("idcg", k))
        ratio = _at_most_one(ratio_or_zero(dcg_sum, idcg_sum))
        return family.refuse_overflow(ratio, [dcg_sum, idcg_sum], p, name)

    return Metric(
        name,
        lambda ctx: {
            **family.dcg_partial(ctx, k),
            **family.idcg_partial(ctx, k),
            **family.overflow_partial(ctx),
        },
        value,
        rows=family.rows,
    )
