"""Rank correlation per query between score and relevance: ``spearman`` and ``kendall_tau``.

Both are computed over the query's retrieved rows only (non-null score). The label ``y`` of a
row is its relevance label, with an unjudged row (null label) and a negative label read as 0;
``x`` is its score. With ``n`` retrieved rows:

* ``spearman``: Spearman's rho, the Pearson correlation of the average ranks of ``x`` and of
  ``y`` (``scipy.stats.spearmanr``)::

      rho = Σ (rx − m)(ry − m) / sqrt(Σ (rx − m)² · Σ (ry − m)²),   m = (n + 1) / 2

  where ``rx``/``ry`` are the ranks with ties given their average rank (``m`` is the mean of
  both, so every term is a multiple of 1/4 and the sums are exact).
* ``kendall_tau``: Kendall's tau-b (``scipy.stats.kendalltau``, ``variant="b"``)::

      tau_b = (n_c − n_d) / sqrt((n_0 − n_1) · (n_0 − n_2))

  with ``n_c``/``n_d`` the concordant/discordant pairs, ``n_0 = n(n − 1)/2``, and
  ``n_1``/``n_2`` the pairs tied in ``x``/in ``y`` (``Σ t(t − 1)/2`` over tie groups).

A query whose value is undefined gets NaN, as in SciPy: fewer than two retrieved rows, all
retrieved scores equal, all retrieved labels equal, or a NaN score among the retrieved rows.
The mean over queries leaves NaN values out (``summary="nanmean"``); a query with no
retrieved row is not evaluated at all (unless ``missing_queries="zero"``, where it is NaN).
Tied scores are part of both definitions (average ranks, tau-b), so ``ties="expected"``
gives the same values as ``ties="trec"``.

Both are sums of per-row terms built from window ranks over the list, so they stream:

* Spearman sums the products and squares of the centred average ranks ``rx − m``, ``ry − m``.
* Kendall counts pairs through ranks. For any key, ``Σ_i (rank_min_i − 1)`` over a list is the
  number of pairs not tied on that key: ``n_0 − n_1`` for ``x``, ``n_0 − n_2`` for ``y`` and
  ``n_0 − n_3`` for ``(x, y)`` (``n_3``: pairs tied on both). With ``A_i = #{j : y_j < y_i,
  x_j < x_i}``, ``n_c − n_d = Σ_i Σ_{j : y_j < y_i} sign(x_i − x_j) = 2 Σ_i A_i − (n_0 − n_2)
  + (n_1 − n_3)``. The 2-D count ``A_i`` comes from the bits of the label (``0 ≤ y < 2^63``):
  ``y_j < y_i`` exactly when the highest bit ``b`` where they differ is 1 in ``y_i``. With
  ``K_b(i) = #{j : (y_j >> b, x_j) < (y_i >> b, x_i)}`` (lexicographic order, one window rank
  per bit), ``K_{b+1}(i) − K_b(i)`` is, for a row whose bit ``b`` is 1, the rows whose highest
  bit differing from ``y_i`` is ``b`` and whose ``x`` is smaller, minus all rows whose highest
  differing bit is ``b``. Summed over rows and bits, ``S = Σ_i Σ_b bit_b(y_i) (K_{b+1}(i) −
  K_b(i)) = Σ_i A_i − (n_0 − n_2)``, hence::

      n_c − n_d = 2 S + (n_0 − n_2) + (n_1 − n_3)

  in exact integer arithmetic. ``K_63`` orders by ``x`` alone, and so does every ``K_b`` with
  ``2^b`` above the list's largest label, which is therefore not sorted again.
"""

from __future__ import annotations

import polars as pl

from polars_rankeval._engine.context import RankingContext
from polars_rankeval.metrics._base import Lookup, Metric, Partials

# kendall_tau's per-row terms: over all retrieved rows, and over the positive-label rows only
_X_RANKS = "kendall_x_ranks"
_P_X_BELOW, _P_Y_BELOW, _P_X_AVERAGE2 = "kendall_p_x_below", "kendall_p_y_below", "kendall_p_x_avg2"
_P_BELOW, _P_XY_BELOW = "kendall_p_below_", "kendall_p_xy_below"
_CHUNK = 8


def _retrieved_pair(ctx: RankingContext, metric: str) -> tuple[pl.Expr, pl.Expr]:
    """``x`` (score) and ``y`` (label, null/negative as 0) on retrieved rows, null elsewhere."""
    retrieved = ctx.retrieved
    x = pl.when(retrieved).then(ctx.score)
    y = pl.when(retrieved).then(ctx.label.fill_null(0).clip(lower_bound=0))
    return x, y


def _nan_score(ctx: RankingContext, metric: str) -> pl.Expr:
    """Partial: how many retrieved rows have a NaN score (the value is then NaN, as SciPy)."""
    x, _ = _retrieved_pair(ctx, metric)
    return x.cast(pl.Float64).is_nan().sum().cast(pl.Int64)


def _undefined_to_nan(value: pl.Expr, defined: pl.Expr) -> pl.Expr:
    return pl.when(defined).then(value.clip(-1.0, 1.0)).otherwise(float("nan"))


def spearman() -> Metric:
    """Spearman's rho between score and label over each query's retrieved rows."""
    name = "spearman"
    dx_key, dy_key = "spearman_dx", "spearman_dy"

    def rows(ctx: RankingContext) -> dict[str, pl.Expr]:
        x, y = _retrieved_pair(ctx, name)
        centre = (ctx.over(ctx.retrieved.sum()).cast(pl.Float64) + 1.0) / 2.0
        return {
            dx_key: ctx.over(x.rank("average")) - centre,
            dy_key: ctx.over(y.rank("average")) - centre,
        }

    def partials(ctx: RankingContext) -> Partials:
        dx, dy = ctx.extra[dx_key], ctx.extra[dy_key]
        return {
            "spearman_sxy": (dx * dy).sum(),
            "spearman_sxx": (dx * dx).sum(),
            "spearman_syy": (dy * dy).sum(),
            "corr_nan_scores": _nan_score(ctx, name),
        }

    def value(p: Lookup) -> pl.Expr:
        sxx, syy = p("spearman_sxx"), p("spearman_syy")
        # sums of multiples of 1/4: exact, so a perfect (anti-)correlation gives exactly ±1
        rho = p("spearman_sxy") / (sxx * syy).sqrt()
        defined = (sxx > 0) & (syy > 0) & (p("corr_nan_scores") == 0)
        return _undefined_to_nan(rho, defined)

    return Metric(name, partials, value, summary="nanmean", rows=rows)


def kendall_tau() -> Metric:
    """Kendall's tau-b between score and label over each query's retrieved rows.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": ["q1"] * 4 + ["q2"] * 2,
    ...         "item": ["a", "b", "c", "d", "a", "b"],
    ...         "score": [0.9, 0.5, 0.5, 0.1, 0.3, 0.2],
    ...         "relevance": [2, 1, None, 0, 1, 1],
    ...     }
    ... )
    >>> # q2's labels are all equal: its tau is NaN and the mean leaves it out
    >>> rke.evaluate(log, ["kendall_tau", "spearman"], per_query=True)
    shape: (2, 3)
    ┌───────┬─────────────┬──────────┐
    │ query ┆ kendall_tau ┆ spearman │
    │ ---   ┆ ---         ┆ ---      │
    │ str   ┆ f64         ┆ f64      │
    ╞═══════╪═════════════╪══════════╡
    │ q1    ┆ 0.8         ┆ 0.833333 │
    │ q2    ┆ NaN         ┆ NaN      │
    └───────┴─────────────┴──────────┘
    """
    name = "kendall_tau"

    def rows(ctx: RankingContext) -> dict[str, pl.Expr]:
        x, _ = _retrieved_pair(ctx, name)
        x = x + 0  # -0.0 + 0 is +0.0: the two zeros stay one value
        # over all retrieved rows; one window gives both ranks (measured faster than two)
        ranks = pl.struct(x.rank("min").alias("min"), x.rank("average").alias("average"))
        return {_X_RANKS: ctx.over(ranks)}

    def sparse_rows(ctx: RankingContext) -> dict[str, tuple[pl.Expr, pl.Expr]]:
        x, y = _retrieved_pair(ctx, name)
        x = x + 0
        positive = (y > 0).fill_null(value=False)
        x, y = pl.when(positive).then(x), pl.when(positive).then(y)

        def below(key: pl.Expr) -> pl.Expr:
            return ctx.over(key.rank("min")).cast(pl.Int64) - 1

        bits = ctx.label_bits
        # labels of the list's positive retrieved rows lie in [1, bound]; a window over those
        # rows only (the list's max_label would be one more full-size window)
        bound = ctx.over(y.max()).fill_null(0)
        actives = [bound >= 2**bit for bit in range(bits)]
        levels = [
            # a struct of nulls is not null: mask it too, or other rows would be ranked
            below(pl.when(active & positive).then(pl.struct((y // 2**bit).alias("y"), x)))
            for bit, active in enumerate(actives)
        ]

        def bit_of_y(bit: int) -> pl.Expr:
            return (y // 2**bit) % 2 if 0 <= bit < bits else pl.lit(0)

        # S_i = Σ_b bit_b (K_{b+1} − K_b) = Σ_b (bit_{b−1} − bit_b) K_b over the positive rows
        weights = [bit_of_y(bit - 1) - bit_of_y(bit) for bit in range(bits + 1)]
        terms = [w * level.fill_null(0) for w, level in zip(weights, levels, strict=False)]
        # a level above every label of the list orders by x alone: folded into x's weight
        x_weight = pl.sum_horizontal(
            weights[-1],
            *(
                pl.when(active).then(0).otherwise(w)
                for w, active in zip(weights, actives, strict=False)
            ),
        )
        x_below = below(x)
        terms.append(x_weight * x_below)
        # S in chunks of a few levels: one expression of 63 windows breaks Polars' plan graph
        chunks = {
            f"{_P_BELOW}{start}": (positive, pl.sum_horizontal(terms[start : start + _CHUNK]))
            for start in range(0, len(terms), _CHUNK)
        }
        return {
            **chunks,
            _P_XY_BELOW: (positive, levels[0]),
            _P_X_BELOW: (positive, x_below),
            _P_Y_BELOW: (positive, below(y)),
            _P_X_AVERAGE2: (positive, 2 * ctx.over(x.rank("average"))),
        }

    def partials(ctx: RankingContext) -> Partials:
        _, y = _retrieved_pair(ctx, name)
        positive = (y > 0).fill_null(value=False)
        extra = ctx.extra
        x_ranks = extra[_X_RANKS].struct
        # pairs not tied in x: Σ (rank_min − 1); 2 × the average rank is an integer
        x_below = x_ranks.field("min").cast(pl.Int64) - 1
        zero_vs_positive = (2 * x_ranks.field("average") - extra[_P_X_AVERAGE2]).cast(pl.Int64)
        sums = {
            f"kendall_{key}": extra[column].sum().cast(pl.Int64)
            for key, column in (
                ("p_x_free", _P_X_BELOW),
                ("p_y_free", _P_Y_BELOW),
                ("p_xy_free", _P_XY_BELOW),
            )
        }
        chunks = [column for column in extra if column.startswith(_P_BELOW)]
        return {
            **sums,
            "kendall_p_below": pl.sum_horizontal(extra[c] for c in chunks).sum().cast(pl.Int64),
            "kendall_x_free": x_below.sum(),
            "kendall_n": ctx.retrieved.sum().cast(pl.Int64),
            "kendall_p": positive.sum().cast(pl.Int64),
            "kendall_zp": zero_vs_positive.filter(positive).sum(),
            "corr_nan_scores": _nan_score(ctx, name),
        }

    def value(p: Lookup) -> pl.Expr:
        n, positive = p("kendall_n"), p("kendall_p")
        mixed = positive * (n - positive)  # pairs of a zero and a positive label
        x_free, y_free = p("kendall_x_free"), mixed + p("kendall_p_y_free")
        # pairs (zero label, positive label): sign of the x difference, summed
        zero_vs_positive = p("kendall_zp") - mixed
        # pairs of two positive labels: the dominance count over those rows alone
        among_positive = (
            2 * p("kendall_p_below")
            + p("kendall_p_y_free")
            + (p("kendall_p_xy_free") - p("kendall_p_x_free"))
        )
        tau = (
            (zero_vs_positive + among_positive).cast(pl.Float64)
            / x_free.cast(pl.Float64).sqrt()
            / y_free.cast(pl.Float64).sqrt()
        )
        defined = (x_free > 0) & (y_free > 0) & (p("corr_nan_scores") == 0)
        return _undefined_to_nan(tau, defined)

    return Metric(name, partials, value, summary="nanmean", rows=rows, sparse_rows=sparse_rows)
