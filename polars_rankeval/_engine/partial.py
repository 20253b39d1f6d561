"""Partial sums: the summary of a log evaluated in passes, without keeping its per-query rows.

When ``evaluate(per_query=False)`` runs in several passes, each pass's per-query rows are
reduced to per-``by`` partial sums (a sum and a count per metric) before the passes are
combined, so the end holds one row per system and pass, not one per query: at a billion rows
the per-query rows (10M) were what set the peak memory.

Each summary rule of :func:`polars_rankeval._engine.meaning.summary_expr` splits into sums that add
up over passes:

* ``"mean"``: the sum of the non-null values and their count;
* ``"nanmean"``: the same over the values that are not NaN;
* ``"gm"``: the sum of the logs of the values floored at ``MIN_GEO_MEAN``, and their count;
* ``"sum"``: the sum.

A per-system metric's ``reduce`` needs its per-query values, so those (the partition keys and
that metric's hidden value only) are kept for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl

from polars_rankeval._engine.exact_sum import fixed_sum, settle
from polars_rankeval._engine.plan import own_lists
from polars_rankeval._engine.tables import Tables
from polars_rankeval.metrics._base import Metric, Summary
from polars_rankeval.metrics.geometric import MIN_GEO_MEAN

_SUM = "__rke_sum:"
_COUNT = "__rke_count:"
_FIXED = "__rke_fixed:"
# the number of per-query rows of a group: keeps groups whose metrics are all per-system
_ROWS = "__rke_rows"


def _terms(label: str, summary: Summary) -> tuple[pl.Expr, pl.Expr | None]:
    """The values whose sum (and count) a summary rule adds up, as in ``summary_expr``."""
    values = pl.col(label)
    if summary == "nanmean":
        values = pl.when(values.is_not_nan()).then(values)
    elif summary == "gm":
        values = values.clip(lower_bound=MIN_GEO_MEAN).log()
    return values, (None if summary == "sum" else values)


def partial_sums(
    per_query: pl.DataFrame, resolved: Sequence[tuple[str, Metric]], by: Sequence[str]
) -> pl.DataFrame:
    """One row per ``by`` group of ``per_query``: each per-query metric's sum and count.

    Examples
    --------
    >>> from polars_rankeval._names.registry import resolve_metrics
    >>> rows = pl.DataFrame({"system": ["a", "a", "b"], "map": [0.5, None, 0.25]})
    >>> # per system: its rows, the sum of map's values and how many there are (nulls left out)
    >>> sums = partial_sums(rows, resolve_metrics(["map"]), ["system"]).sort("system")
    >>> sums.select(pl.exclude("^__rke_fixed:.*$")).rows()  # the sum's fixed point left out
    [('a', 2, 0.5, 1), ('b', 1, 0.25, 1)]
    """
    sums: list[pl.Expr] = [pl.len().alias(_ROWS)]
    for label, metric in resolved:
        if metric.level != "query":
            continue
        values, counted = _terms(label, metric.summary)
        # both forms of the sum travel, so the passes add up to the one-pass summary exactly
        sums.append(values.sum().alias(_SUM + label))
        if counted is not None:  # a mean: its float sum's fixed point too (counts are exact)
            sums.append(fixed_sum(values).alias(_FIXED + label))
            sums.append(counted.count().alias(_COUNT + label))
    if not by:
        return per_query.select(sums)
    return per_query.group_by(list(by)).agg(sums)


def combined(
    parts: pl.DataFrame, resolved: Sequence[tuple[str, Metric]], by: Sequence[str]
) -> pl.DataFrame:
    """Each group's summary from the partial sums of all passes (one row per group)."""
    added = [pl.col(name).sum() for name in parts.columns if name not in by]
    total = parts.group_by(list(by)).agg(added) if by else parts.select(added)
    values: list[pl.Expr] = []
    for label, metric in resolved:
        if metric.level != "query":
            continue
        if metric.summary == "sum":
            values.append(pl.col(_SUM + label).alias(label))
            continue
        summed = settle(pl.col(_FIXED + label), pl.col(_SUM + label))
        count = pl.col(_COUNT + label)
        # no value in any pass: null, as the mean of an empty column
        mean = pl.when(count > 0).then(summed / count)
        values.append((mean.exp() if metric.summary == "gm" else mean).alias(label))
    return total.select(*by, _ROWS, *values)


@dataclass
class PassSums:
    """What the passes of a summary keep: partial sums, and per-system metrics' rows.

    ``add`` takes one pass's finished per-query rows; ``result`` gives the summary, one row
    per ``by`` group, in the dtypes of ``schema`` (those of the one-pass summary).
    """

    resolved: list[tuple[str, Metric]]
    by: list[str]
    partition: list[str]
    parts: list[pl.DataFrame] = field(default_factory=list)
    system_rows: list[pl.DataFrame] = field(default_factory=list)

    @property
    def system_labels(self) -> list[str]:
        return [label for label, metric in self.resolved if metric.level == "system"]

    def add(self, per_query: pl.DataFrame) -> None:
        """Reduce one pass's per-query rows (finished, empty lists dropped) to its sums."""
        self.parts.append(partial_sums(per_query, self.resolved, self.by))
        if self.system_labels:
            labels = self.system_labels
            rows = per_query.select(*self.partition, *labels)
            # only the lists some per-system metric evaluates (a mixed call has the others too)
            self.system_rows.append(rows.filter(pl.any_horizontal(pl.col(labels).is_not_null())))

    def result(self, empty: pl.DataFrame, tables: Tables, schema: pl.Schema) -> pl.DataFrame:
        """The summary over every pass; ``empty`` is a per-query frame with no rows."""
        parts = self.parts or [partial_sums(empty, self.resolved, self.by)]
        result = combined(pl.concat(parts, how="vertical_relaxed"), self.resolved, self.by)
        if self.system_labels:
            kept = self.system_rows or [empty.select(*self.partition, *self.system_labels)]
            rows = pl.concat(kept)
            for label, metric in self.resolved:
                if metric.level != "system":
                    continue
                assert metric.reduce is not None, f"per-system metric {label!r} has no reduce"
                own = own_lists(rows.lazy(), label)  # not the other metrics' lists
                reduced = metric.reduce(own, self.by, label, tables).collect()
                if self.by:
                    result = result.join(reduced, on=self.by, how="left", nulls_equal=True)
                else:  # one row each
                    result = result.join(reduced.select(label), how="cross")
        labels = [label for label, _ in self.resolved]
        result = result.select(*self.by, *labels).cast(dict(schema))  # type: ignore[arg-type]
        return result.sort(self.by) if self.by else result
