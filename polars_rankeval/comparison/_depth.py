"""The depth warning: systems compared on a depth-sensitive metric have different list depths.

Uncut ``frp`` and ``mean_rank`` score a relevant row that was not retrieved as ``n + 1`` (``n``
= rows retrieved), so a run of 10 rows per query can beat a run of 1,000 only because it is
shorter. The metric declares it (``Metric.depth_sensitive``, read through
:mod:`polars_rankeval._engine.meaning`); here the systems' depths are read and compared.

A system's depth is the most rows it retrieved for one query (``num_ret``, as the metric
counts them, after any cutoff of the evaluation). :func:`~polars_rankeval.compare` evaluates
it beside the metrics; :func:`~polars_rankeval.compare_per_query` reads a ``num_ret`` column
of the table when it has one (``rank-eval --per-query`` writes it), and cannot know the depths
otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import polars as pl

from polars_rankeval._engine.meaning import Meaning, recognise
from polars_rankeval._engine.warn import warn_at
from polars_rankeval.comparison._pairing import system_names
from polars_rankeval.errors import DepthWarning
from polars_rankeval.metrics._base import Metric

#: The hidden column compare evaluates the depths into (dropped before the comparison).
DEPTH_COLUMN = "__list_depth"


def depth_metric() -> Metric:
    """``num_ret`` under the hidden column name: the rows each list retrieved."""
    from polars_rankeval.metrics.counts import num_ret

    return replace(num_ret(), name=DEPTH_COLUMN)


def with_depth(metrics: Sequence[str]) -> list[str | Metric]:
    """``metrics`` and, when one of them depends on the list depth, the hidden depth metric.

    For a caller that evaluates logs itself (the gate): the depth column travels beside the
    metrics to :func:`~polars_rankeval.compare_per_query`, which reads it.
    """
    sensitive = [recognise(name) for name in metrics]
    if any(metric is not None and metric.depth_sensitive for metric in sensitive):
        return [*metrics, depth_metric()]
    return list(metrics)


def needs_depths(found: Mapping[str, Meaning]) -> bool:
    """Whether any compared metric depends on the list depth."""
    return any(meaning.depth_sensitive for meaning in found.values())


def depth_column(columns: Sequence[str], compared: Sequence[str]) -> str | None:
    """The column holding each list's depth: compare's hidden one, or a ``num_ret`` column."""
    if DEPTH_COLUMN in columns:
        return DEPTH_COLUMN
    for name in columns:
        if name in compared:
            continue
        metric = recognise(name)
        if metric is not None and metric.name == "num_ret":
            return name
    return None


def warn_if_depths_differ(
    frame: pl.DataFrame,
    keys: list[str],
    column: str | None,
    found: Mapping[str, Meaning],
) -> dict[str, int]:
    """Warn (:class:`DepthWarning`) when depth-sensitive metrics meet systems of other depths.

    Returns each system's depth (empty when no metric is depth-sensitive or no depth is known).
    """
    sensitive = [name for name, meaning in found.items() if meaning.depth_sensitive]
    if not sensitive or column is None or column not in frame.columns:
        return {}
    depths = (
        frame.group_by(system_names(keys).alias("__system"))
        .agg(pl.col(column).cast(pl.Float64).max().alias("__depth"))
        .drop_nulls()
        .sort("__depth", "__system")
    )
    found_depths = {str(s): int(d) for s, d in depths.iter_rows()}
    if len(set(found_depths.values())) > 1:
        shown = [f"{system!r} {depth}" for system, depth in found_depths.items()]
        listed = ", ".join(shown[:10]) + (f" and {len(shown) - 10} more" if len(shown) > 10 else "")
        msg = (
            f"{', '.join(map(repr, sensitive))} {'counts' if len(sensitive) == 1 else 'count'} "
            "a relevant row that was not retrieved as "
            "n + 1 (n = rows retrieved), so a shorter list scores better; the systems' list "
            f"depths differ (most rows retrieved for a query: {listed}). Compare runs cut to "
            "the same depth, use a cutoff (e.g. frp@10), or leave these metrics out"
        )
        warn_at(msg, DepthWarning)
    return found_depths
