"""The functions Spark runs on its executors: each hands Arrow data to the local engine.

They are module-level classes and functions, so Spark pickles them by reference: the executors
import ``polars_rankeval`` rather than receive its code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import polars as pl
import pyarrow as pa

from polars_rankeval.spark._common import _quiet_evaluate


@dataclass(frozen=True)
class _Lists:
    """The function ``mapInArrow`` runs on each partition (a class, so it pickles by reference).

    The partition's rows arrive sorted on ``partition`` (``*by, query``), so the rows of one
    ranked list are contiguous; a list may straddle two Arrow batches. Each batch is evaluated
    up to its last list, which is carried over to the next batch: memory holds about one batch
    (at least ``min_rows`` rows) plus the largest list.
    """

    metrics: Any
    options: dict[str, Any]
    partition: tuple[str, ...]
    schema: pa.Schema
    min_rows: int

    def _evaluated(self, frame: pl.DataFrame) -> Iterator[pa.RecordBatch]:
        if frame.height == 0:
            return
        result = _quiet_evaluate(frame, self.metrics, **self.options)
        if result.height:
            yield from result.to_arrow().cast(self.schema).to_batches()

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        pending: list[pl.DataFrame] = []
        rows = 0
        for batch in batches:
            frame = pl.from_arrow(batch, rechunk=False)
            assert isinstance(frame, pl.DataFrame)
            pending.append(frame)
            rows += frame.height
            if rows < self.min_rows or frame.height == 0:
                continue
            whole = pl.concat(pending, how="vertical", rechunk=False)
            # The last list may go on in the next batch: keep it for then.
            last = whole.row(whole.height - 1, named=True)
            is_last = pl.all_horizontal(pl.col(c).eq_missing(last[c]) for c in self.partition)
            tail = int(whole.select(is_last.sum()).item())
            yield from self._evaluated(whole.slice(0, whole.height - tail))
            pending = [whole.slice(whole.height - tail)]
            rows = tail
        if pending:
            yield from self._evaluated(pl.concat(pending, how="vertical", rechunk=False))


@dataclass(frozen=True)
class _Whole:
    """``mapInArrow``'s function for the ``"partitions"`` route: the whole partition at once.

    After the hash repartition on ``(*by, query)`` every ranked list is in one partition, and
    the local engine groups by those columns itself: it needs each list whole, not in any
    order, so the partition's batches are gathered and evaluated in one call (no sort in Spark,
    no carry-over). Memory holds the partition's rows and the evaluation's working set.
    """

    metrics: Any
    options: dict[str, Any]
    schema: pa.Schema

    def evaluated(self, frame: pl.DataFrame) -> pa.Table:
        """One frame of whole lists evaluated, as an Arrow table of the declared schema."""
        result = _quiet_evaluate(frame, self.metrics, **self.options)
        return result.to_arrow().cast(self.schema)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        frames = []
        for batch in batches:
            frame = pl.from_arrow(batch, rechunk=False)
            assert isinstance(frame, pl.DataFrame)
            frames.append(frame)
        whole = pl.concat(frames, how="vertical", rechunk=False) if frames else None
        if whole is not None and whole.height:
            yield from self.evaluated(whole).to_batches()


def bucket_function(lists: _Whole, bucket: str) -> Callable[[pa.Table], pa.Table]:
    """``applyInArrow``'s function for the ``"buckets"`` route: one hash bucket evaluated.

    A plain function of one table, type-hinted, so that Spark infers the table form (it cannot
    read the hints of a :func:`functools.partial`); Spark pickles it with ``lists`` by value.
    """

    def evaluate_bucket(table: pa.Table) -> pa.Table:
        frame = pl.from_arrow(table.drop_columns([bucket]), rechunk=False)
        assert isinstance(frame, pl.DataFrame)
        return lists.evaluated(frame)

    return evaluate_bucket


@dataclass(frozen=True)
class _Pairs(_Lists):
    """``mapInArrow``'s function for :func:`similarity`: each query's systems compared locally.

    The rows arrive sorted on the query, so every system's list of one query is in one chunk;
    ``options`` are the local :func:`~polars_rankeval.similarity` keywords (``by`` is the one
    system-name column made on the driver).
    """

    def _evaluated(self, frame: pl.DataFrame) -> Iterator[pa.RecordBatch]:
        from polars_rankeval.agreement._similarity import similarity as local_similarity

        if frame.height == 0:
            return
        baseline = self.options.get("baseline")
        if baseline is not None and baseline not in set(frame[self.options["by"]].to_list()):
            return  # no query of this chunk has the baseline: no pair to compare
        result = local_similarity(frame, self.metrics, per_query=True, **self.options)
        if result.height:
            yield from result.to_arrow().cast(self.schema).to_batches()
