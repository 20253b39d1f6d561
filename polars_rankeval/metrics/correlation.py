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

from polars_rankeval.context import RankingContext
from polars_rankeval.metrics._base import Lookup, Metric, Partials


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
    below_key, x_key, y_key, xy_key = (
        "kendall_below",
        "kendall_x_below",
        "kendall_y_below",
        "kendall_xy_below",
    )

    x_rank_key, y_value_key = "kendall_x_rank", "kendall_y"

    def rows(ctx: RankingContext) -> dict[str, pl.Expr]:
        x, y = _retrieved_pair(ctx, name)
        x = x + 0  # -0.0 + 0 is +0.0: the two zeros stay one value
        return {
            # integers that order like the scores: the per-bit ranks below sort ints only
            x_rank_key: ctx.over(x.rank("dense")).cast(pl.Int64),
            y_value_key: y,
            x_key: ctx.over(x.rank("min")).cast(pl.Int64) - 1,
            y_key: ctx.over(y.rank("min")).cast(pl.Int64) - 1,
        }

    def later_rows(ctx: RankingContext) -> dict[str, pl.Expr]:
        x, y = ctx.extra[x_rank_key], ctx.extra[y_value_key]
        x_below = ctx.extra[x_key]
        # one window per bit a label of the column's dtype can have (Int8: 7, Int64: 63)
        label_bits = ctx.label_bits
        # labels of the list's retrieved rows lie in [0, bound]
        bound = ctx.max_label.fill_null(0).clip(lower_bound=0)

        def bit_of_y(bit: int) -> pl.Expr:
            return (y // 2**bit) % 2 if 0 <= bit < label_bits else pl.lit(0)

        # S_i = Σ_b bit_b (K_{b+1} − K_b) = Σ_b (bit_{b−1} − bit_b) K_b, b = 0..label_bits
        weights = [bit_of_y(bit - 1) - bit_of_y(bit) for bit in range(label_bits + 1)]
        actives = [ctx.retrieved & (bound >= 2**bit) for bit in range(label_bits)]
        levels = [
            ctx.over(
                pl.when(active).then(pl.struct((y // 2**bit).alias("y"), x.alias("x"))).rank("min")
            ).cast(pl.Int64)
            - 1
            for bit, active in enumerate(actives)
        ]
        # a level above every label of the list orders by x alone (K_b = K_63): it is not
        # sorted again (null above) but folded into the weight of x_below
        dominated = pl.sum_horizontal(
            weight * level.fill_null(0) for weight, level in zip(weights, levels, strict=False)
        )
        x_weight = pl.sum_horizontal(
            weights[-1],
            *(
                pl.when(active).then(0).otherwise(w)
                for w, active in zip(weights, actives, strict=False)
            ),
        )
        return {
            below_key: pl.when(ctx.retrieved).then(dominated + x_weight * x_below),
            # K_0 = lexicographic (y, x); null when all labels are 0 (tau is NaN then anyway)
            xy_key: levels[0],
        }

    def partials(ctx: RankingContext) -> Partials:
        keys = (below_key, x_key, y_key, xy_key)
        sums = {key: ctx.extra[key].sum().cast(pl.Int64) for key in keys}
        return {**sums, "corr_nan_scores": _nan_score(ctx, name)}

    def value(p: Lookup) -> pl.Expr:
        # Σ (rank_min − 1) over a list = pairs not tied: n_0 − n_1 (x), n_0 − n_2 (y),
        # n_0 − n_3 (x and y)
        x_free, y_free = p(x_key), p(y_key)
        difference = 2 * p(below_key) + y_free + (p(xy_key) - x_free)
        tau = (
            difference.cast(pl.Float64)
            / x_free.cast(pl.Float64).sqrt()
            / y_free.cast(pl.Float64).sqrt()
        )
        defined = (x_free > 0) & (y_free > 0) & (p("corr_nan_scores") == 0)
        return _undefined_to_nan(tau, defined)

    return Metric(name, partials, value, summary="nanmean", rows=rows, later_rows=later_rows)
