"""How much can ties move a number: ``tie_report`` and evaluate's tie warning.

A run whose scores tie (rounded scores, a BM25 run with few distinct values, a classifier's
0/1 output) has no single ranking: trec_eval breaks ties by item id, which is arbitrary.
Each metric then has a range over the orders of its tied rows (Yang et al., "Reliable
Evaluation Protocol for Low-Precision Retrieval", ACL 2026, and their tie-aware-retrieval-metrics
package): its best case (``ties="optimistic"``: higher labels first inside each tie group), its
worst case (``ties="pessimistic"``) and, where a closed form exists, its expectation over all
orders (``ties="expected"``).

:func:`tie_report` puts those side by side with the trec value, per system (and per query), with
the share of the top-k positions that sit in a tie group. ``evaluate`` warns (a
:class:`~polars_rankeval.TieWarning`) when the best and worst orders move a reported mean by more
than ``tie_warning`` (:mod:`polars_rankeval._engine.tie_bounds`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import polars as pl

from polars_rankeval._engine.context import RankingContext
from polars_rankeval._engine.evaluate import evaluate
from polars_rankeval._engine.settings import settings_for
from polars_rankeval._engine.tie_bounds import MODES, bound_refusal, in_bound
from polars_rankeval._engine.vocabulary import METRIC
from polars_rankeval._names.registry import resolve_metrics
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.metrics._base import Metric, Partials

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from polars_rankeval._engine.vocabulary import EvaluateOptions

# The engine's canonical name of a metric with a cutoff: ``family@k``, then its options
# (``ndcg@10(gain=exp)``); trec_eval spellings (``P_10``, ``ndcg_cut_10``) resolve to it.
_CUTOFF = re.compile(r"^[^@(]*@(\d+)(?:\(|$)")


def tied_share(k: int | None) -> Metric:
    """Share of the top-``k`` positions (all retrieved rows if None) that sit in a tie group."""
    name = "tied_share" if k is None else f"tied_share@{k}"
    key_tied, key_all = f"{name}:tied", f"{name}:n"

    def rows(ctx: RankingContext) -> dict[str, pl.Expr]:
        # -0.0 + 0.0 is +0.0: the two zeros tie, as they do in the order
        shared = ctx.over(pl.when(ctx.retrieved).then(ctx.score + 0.0).is_duplicated())
        return {name: shared & ctx.retrieved}

    def partials(ctx: RankingContext) -> Partials:
        inside = ctx.within(k)
        return {
            key_tied: ctx.extra[name].filter(inside).sum(),
            key_all: inside.sum(),
        }

    def value(p: Any) -> pl.Expr:
        return pl.when(p(key_all) > 0).then(p(key_tied) / p(key_all))

    return Metric(name, partials, value, rows=rows, direction="none", summary="nanmean")


def metric_cutoff(metric: Metric) -> int | None:
    """The rank cutoff of a resolved metric (None: the whole list), read from its canonical name.

    The registry resolves every spelling (``P_10``, ``p@10``, ``P@10``, ``ndcg_cut_10``) to one
    canonical name, so the cutoff never depends on how the user wrote the metric.
    """
    found = _CUTOFF.match(metric.name)
    return int(found.group(1)) if found else None


def _has_expectation(label: str, metric: Metric, evaluate_keywords: dict[str, Any]) -> bool:
    """Whether ``ties="expected"`` has a closed form for ``metric`` (tried on one row)."""
    names = {
        column: evaluate_keywords.get(column, column)
        for column in ("query", "item", "score", "relevance")
    }
    probe = pl.DataFrame(
        {
            names["query"]: ["q"],
            names["item"]: ["a"],
            names["score"]: [1.0],
            names["relevance"]: [1],
        }
    )
    try:
        evaluate(probe, [replace(metric, ties="expected")], tie_warning=None, **evaluate_keywords)
    except InvalidOptionError:  # no closed form, or a table it needs is missing
        return False
    return True


def tie_report(
    data: Any,
    metrics: Sequence[str | Metric] | str | Metric,
    *,
    by: str | Sequence[str] | None = None,
    per_query: bool = False,
    **options: Unpack[EvaluateOptions],
) -> pl.DataFrame:
    """How much the order of tied scores can move each metric, per system (or per query).

    One evaluation computes every metric four ways: trec_eval's tie rule (``trec``), its
    expectation over all orders of the ties (``expected``, null where no closed form exists),
    its best case (``optimistic``) and worst case (``pessimistic``); ``range`` is the distance
    between the last two and ``tied_share`` the share of the metric's top-k positions (all
    retrieved positions without a cutoff) that sit in a group of tied scores. ``note`` says
    why a value is missing: no closed form for the expectation, or no bounds (the metric
    measures the judgments, reads no label, or is per system).

    Parameters
    ----------
    data
        The log, as for :func:`~polars_rankeval.evaluate` (DataFrame, LazyFrame, path-read
        frame ...).
    metrics
        Metric strings or objects.
    by
        Columns naming the systems.
    per_query
        One row per (system, query, metric) instead of the means.
    **options
        Any other keyword of :func:`~polars_rankeval.evaluate` (``relevance_level``,
        ``convention``, column names ...), except ``ties``.

    Returns
    -------
    DataFrame
        ``metric, *by, [query,] trec, expected, optimistic, pessimistic, range, tied_share,
        note``: ``metric`` first, as in every long result, one block of rows per metric.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": ["q"] * 5,
    ...         "item": ["a", "b", "c", "d", "e"],
    ...         "score": [0.99, 0.97, 0.97, 0.97, 0.95],
    ...         "relevance": [0, 1, 0, 1, 0],
    ...     }
    ... )
    >>> rke.tie_report(log, ["recall@3"]).select("metric", "trec", "optimistic", "pessimistic")
    shape: (1, 4)
    ┌──────────┬──────┬────────────┬─────────────┐
    │ metric   ┆ trec ┆ optimistic ┆ pessimistic │
    │ ---      ┆ ---  ┆ ---        ┆ ---         │
    │ str      ┆ f64  ┆ f64        ┆ f64         │
    ╞══════════╪══════╪════════════╪═════════════╡
    │ recall@3 ┆ 0.5  ┆ 1.0        ┆ 0.5         │
    └──────────┴──────┴────────────┴─────────────┘
    """
    keywords: dict[str, Any] = dict(options)
    if "ties" in keywords:
        msg = "tie_report evaluates every tie mode itself; leave out ties="
        raise InvalidOptionError(msg)
    preset, _ = settings_for(keywords.get("convention", "trec_eval"), keywords)
    resolved = resolve_metrics(metrics, preset)
    labels = [label for label, _ in resolved]
    query = keywords.get("query", "query")
    plain = {key: value for key, value in keywords.items() if key not in {"train", "items"}}
    objects: list[Metric] = []
    plan: list[tuple[str, dict[str, str | None], str | None, str]] = []
    shares: dict[int | None, Metric] = {}
    for label, metric in resolved:
        refusal = bound_refusal(label, metric)
        notes = [] if refusal is None else [f"no bounds: {refusal}"]
        modes: dict[str, str | None] = dict.fromkeys(MODES)
        if metric.level == "query":
            wanted = ["trec"]
            if _has_expectation(label, metric, plain):
                wanted.append("expected")
            else:
                notes.insert(0, "no closed form for the expectation")
            if refusal is None:
                wanted += ["optimistic", "pessimistic"]
            for mode in wanted:
                built = in_bound(label, metric, mode)
                objects.append(built)
                modes[mode] = built.name
        k = metric_cutoff(metric)
        share = shares.setdefault(k, tied_share(k))
        plan.append((label, modes, "; ".join(notes) or None, share.name))
    objects.extend(shares.values())
    evaluated = evaluate(data, objects, by=by, per_query=per_query, tie_warning=None, **keywords)
    result: pl.DataFrame = evaluated.collect() if isinstance(evaluated, pl.LazyFrame) else evaluated
    keys = [name for name in result.columns if name not in {m.name for m in objects}]
    if per_query and query not in keys:
        keys.append(query)
    frames = []
    for label, modes, note, share_column in plan:
        values = {
            mode: (pl.col(column) if column else pl.lit(None, dtype=pl.Float64)).alias(mode)
            for mode, column in modes.items()
        }
        frames.append(
            result.select(
                pl.lit(label).alias(METRIC),
                *keys,
                *values.values(),
                (values["optimistic"] - values["pessimistic"]).abs().alias("range"),
                pl.col(share_column).alias("tied_share"),
                pl.lit(note or "", dtype=pl.String).alias("note"),
            )
        )
    report = pl.concat(frames)
    order = {label: index for index, label in enumerate(labels)}
    return report.sort(
        [pl.col(METRIC).replace_strict(order, return_dtype=pl.Int64), *keys],
        maintain_order=True,
    )
