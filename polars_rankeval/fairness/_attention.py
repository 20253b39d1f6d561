"""Attention models: how much of a reader's attention each rank receives.

* ``"trec"``: ``1 / log2(max(rank, 2))``, TREC Fair Ranking's discount (trec_eval's nDCG
  discount: ranks 1 and 2 both get 1);
* ``"log2"``: ``1 / log2(rank + 1)``, Singh & Joachims' position bias and FairRankTune's EXP;
* ``"geometric"``: ``p · (1 − p)^(rank − 1)``, the share of attention of a reader who stops
  after each item with probability ``p`` (RBP's user with persistence ``1 − p``;
  FairRankTune's AWRF attention without its factor 100, which no share depends on);
* a mapping ``{rank: attention}``: the given ranks, 0 elsewhere (e.g. eye-tracking data);
* a Polars expression over ``pl.col("rank")``: any other model.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.fairness._frame import RANK

ATTENTION_MODELS = ("trec", "log2", "geometric")


def attention_weight(attention: object, p: float | None) -> pl.Expr:
    """The attention of each row as an expression over ``RANK`` (checked options)."""
    rank = pl.col(RANK).cast(pl.Float64)
    if isinstance(attention, pl.Expr):  # first: == on an expression builds an expression
        return attention
    if attention == "trec":
        return 1.0 / pl.max_horizontal(rank, pl.lit(2.0)).log(2)
    if attention == "log2":
        return 1.0 / (rank + 1.0).log(2)
    if attention == "geometric":
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p < 1:
            msg = (
                "option p= (attention='geometric') must be the first rank's share of "
                f"attention, 0 < p < 1, got {p!r}"
            )
            raise InvalidOptionError(msg)
        return float(p) * (1.0 - float(p)) ** (rank - 1.0)
    if isinstance(attention, Mapping):
        pairs = list(attention.items())
        if not pairs or not all(
            isinstance(r, int) and not isinstance(r, bool) and r >= 1 for r, _ in pairs
        ):
            msg = "option attention= as a mapping must map ranks (ints >= 1) to attention"
            raise InvalidOptionError(msg)
        if not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for _, v in pairs
        ):
            msg = "option attention= as a mapping must give each rank an attention >= 0"
            raise InvalidOptionError(msg)
        table = {int(r): float(v) for r, v in pairs}
        return pl.col(RANK).replace_strict(table, default=0.0, return_dtype=pl.Float64)
    msg = (
        f"option attention= must be one of {list(ATTENTION_MODELS)}, a mapping "
        f"{{rank: attention}} or a Polars expression over pl.col('rank'), got {attention!r}"
    )
    raise InvalidOptionError(msg)


def with_attention(
    frame: pl.LazyFrame, attention: object, p: float | None, alias: str
) -> pl.LazyFrame:
    """``frame`` with the attention of each row in ``alias``.

    A user's expression reads ``pl.col("rank")``: the rank is shown under that name while it
    is evaluated.
    """
    weight = attention_weight(attention, p)
    if isinstance(attention, pl.Expr):
        shown = frame.with_columns(pl.col(RANK).alias("rank"))
        return shown.with_columns(weight.cast(pl.Float64).alias(alias)).drop("rank")
    return frame.with_columns(weight.alias(alias))
