"""Binary preference, ``bpref`` (Buckley & Voorhees 2004), exactly as trec_eval ``m_bpref.c``.

``bpref = (1/R) Σ_{relevant retrieved r} [1 − min(n_r, R) / min(N, R)]`` where ``n_r`` counts
judged non-relevant rows (``0 <= label < relevance_level``) ranked above ``r`` and ``N`` all
judged non-relevant rows of the query. A term is 1 when ``n_r = 0``. Unjudged rows (null or
negative label) are skipped. 0 when ``R = 0``.
"""

from __future__ import annotations

import polars as pl

from polars_rankeval._engine.context import RankingContext
from polars_rankeval._engine.exact_sum import exact_sum
from polars_rankeval.metrics._base import (
    Metric,
    Partials,
    no_closed_form,
    num_rel_partial,
    ratio_or_zero,
)


def bpref() -> Metric:
    """trec_eval ``bpref``."""

    def partials(ctx: RankingContext) -> Partials:
        no_closed_form(ctx, "bpref")
        nonrel_above = (ctx.judged_rank.cast(pl.Int64) - ctx.relevant_rank.cast(pl.Int64)).cast(
            pl.Float64
        )
        r = ctx.num_rel.cast(pl.Float64)
        n = ctx.num_judged_nonrel.cast(pl.Float64)
        term = (
            pl.when(nonrel_above > 0)
            .then(1.0 - pl.min_horizontal(nonrel_above, r) / pl.min_horizontal(n, r))
            .otherwise(1.0)
        )
        is_hit = ctx.relevant & ctx.retrieved
        return {"bpref_sum": exact_sum(term, is_hit), **num_rel_partial(ctx)}

    return Metric("bpref", partials, lambda p: ratio_or_zero(p("bpref_sum"), p("num_rel")))
