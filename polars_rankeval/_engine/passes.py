"""Evaluation in passes: the per-query plan run over hash buckets of the query ids, one at a time.

``evaluate`` decides how many passes (``n_buckets``); this module runs them: up to
``RESCAN_PASSES`` passes re-read the input and keep their bucket, more first spill the input
into one Parquet directory per bucket. A pass's windows hold that bucket's rows only, so the
memory of one evaluation is bounded whatever the log's size.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable
from typing import Literal

import polars as pl

from polars_rankeval._engine.columns import Columns
from polars_rankeval._engine.progress import Progress
from polars_rankeval._engine.read_once import held_in_memory, input_errors_named, read_once
from polars_rankeval._engine.spill import cleanup_on_sigterm, guard_plan, spill_folder
from polars_rankeval._engine.validation import warn_if_empty
from polars_rankeval.errors import InvalidOptionError

ROWS_PER_PASS = 4_000_000
# A pass's memory grows with its rows times the width of the per-query plan (the metrics'
# columns, and with the tie check a range per metric, evaluated under two more orders): a plan
# at most this wide keeps ROWS_PER_PASS rows per pass (the standard suite with its tie ranges
# is 11 columns wide), a wider one fewer. Measured on 17 TREC runs (2.55M rows), trec_eval's
# 98 measures per query with the tie check (191 columns) peaked at 3.2 GB in one pass, 2.0 GB
# in 2, 1.45 GB in 3, 1.1 GB in 4 and 0.72 GB in 8 (rank-eval --buckets N). Its 8 auto passes
# cost time: 5.9-6.8 s against 4.8 s in one pass at 2.1 GB (quiet machine, few ties); the
# official measures (3 passes) ran in the same time as one pass, at 420-473 MB against 672-729.
STANDARD_WIDTH = 16
# ... but never fewer rows than this per pass: each pass also pays for planning (0.2 s for
# those 98 measures with the tie check), whatever its rows.
MIN_ROWS_PER_PASS = 250_000
_BUCKET_SEED = 0x5EED


def rows_per_pass(width: int | None) -> int:
    """How many rows one pass holds, for a per-query plan ``width`` columns wide.

    Examples
    --------
    >>> rows_per_pass(None), rows_per_pass(11), rows_per_pass(32), rows_per_pass(10_000)
    (4000000, 4000000, 2000000, 250000)
    """
    if width is None or width <= STANDARD_WIDTH:
        return ROWS_PER_PASS
    return min(ROWS_PER_PASS, max(MIN_ROWS_PER_PASS, ROWS_PER_PASS * STANDARD_WIDTH // width))


def check_buckets(n_buckets: object) -> int | Literal["auto"]:
    if n_buckets == "auto":
        return "auto"
    if isinstance(n_buckets, bool) or not isinstance(n_buckets, int) or n_buckets < 1:
        msg = f"option n_buckets= must be a positive int or 'auto', got {n_buckets!r}"
        raise InvalidOptionError(msg)
    return n_buckets


def in_passes(
    lf: pl.LazyFrame,
    columns: Columns,
    plan_for: Callable[[pl.LazyFrame], pl.LazyFrame],
    passes: int | Literal["auto"],
    *,
    progress: bool | None,
    spill_dir: str | os.PathLike[str] | None,
) -> pl.LazyFrame:
    """The per-query plan run as sequential passes over hash buckets of the query ids.

    It stays a LazyFrame (``pl.defer``): nothing runs before ``collect()``. See
    :func:`run_passes` for how the buckets are read.
    """
    schema = plan_for(lf).collect_schema()

    def run() -> pl.DataFrame:
        parts: list[pl.DataFrame] = []
        run_passes(
            lf,
            columns,
            lambda bucket: parts.append(plan_for(bucket).collect(engine="streaming")),
            passes,
            progress=progress,
            spill_dir=spill_dir,
            width=len(schema),
        )
        result = pl.concat(parts).sort(columns.partition) if parts else pl.DataFrame(schema=schema)
        warn_if_empty(result, lf, columns)
        return result

    return deferred(run, schema)


def deferred(run: Callable[[], pl.DataFrame], schema: pl.Schema) -> pl.LazyFrame:
    """``pl.defer(run)`` for passes that may spill: SIGTERM removes the spill (any thread).

    Polars calls ``run`` from one of its own threads at the caller's ``collect()``, where no
    signal handler can be installed; the SIGTERM guard is installed here instead, while the
    plan is built, and lasts as long as the plan (:func:`guard_plan`).
    """
    plan = pl.defer(run, schema=schema)
    guard_plan(run)
    return plan


def run_passes(
    lf: pl.LazyFrame,
    columns: Columns,
    each: Callable[[pl.LazyFrame], None],
    passes: int | Literal["auto"],
    *,
    progress: bool | None,
    spill_dir: str | os.PathLike[str] | None,
    width: int | None = None,
) -> None:
    """Call ``each`` on the rows of every hash bucket of the query ids, one bucket at a time.

    Up to ``RESCAN_PASSES`` passes each re-read the input and filter their bucket; with more,
    one streaming query first writes the input into one Parquet directory per hash bucket
    (under a temporary directory, removed whatever happens), then each pass reads its own
    bucket's files. With ``"auto"`` passes, an input held in memory (a DataFrame, or read once
    into memory) is not spilled: each pass filters its bucket from it (an explicit number of
    passes spills as asked, as ``--buckets N --spill-dir`` users expect). Either way a pass's
    windows hold that bucket's rows only. An input that is costly to read again (a join, CSV)
    and would be read more than once (counted for ``"auto"``, re-read per pass) is read once
    first (:func:`read_once`). Empty buckets of the spill are skipped. ``"auto"`` passes hold
    :func:`rows_per_pass` rows each for a per-query plan ``width`` columns wide.
    """
    with contextlib.ExitStack() as stack:
        # a truncated Parquet file of the input: an error naming it (first in, last out)
        stack.enter_context(input_errors_named(lf))
        if passes == "auto" or 1 < passes <= RESCAN_PASSES:
            lf = read_once(
                lf,
                stack,
                rows=ROWS_PER_PASS,
                spill_dir=spill_dir,
                compression=SPILL_COMPRESSION,
            )
        if passes == "auto":
            rows = lf.select(pl.len()).collect().item()
            total = max(1, -(-rows // rows_per_pass(width)))
        else:
            total = passes
        if total == 1:
            each(lf)
        elif total <= RESCAN_PASSES or (passes == "auto" and held_in_memory(lf)):
            _rescanned_passes(lf, columns, each, total, progress=progress)
        else:
            _spilled_passes(lf, columns, each, total, progress=progress, spill_dir=spill_dir)


# Up to this many passes each pass re-reads the input and keeps its own bucket's rows; more
# passes spill the input once. Re-reading costs a scan per pass, the spill about five (10M-row
# Parquet log, 3 passes: 2.02 s re-reading, 2.80 s spilling, 1.88 s in one pass), so few
# passes re-read; an input that is costly to read (CSV, a heavy plan) is read at most 3 times.
RESCAN_PASSES = 3
_BUCKET_KEY = "__rke_bucket"
# The spill files live for one evaluation; lz4 measured faster than writing them uncompressed
# and level with zstd (benchmarks/README.md).
SPILL_COMPRESSION: Literal["lz4", "uncompressed", "snappy", "zstd"] = "lz4"


def _bucket_of(columns: Columns, total: int) -> pl.Expr:
    return pl.col(columns.query).hash(_BUCKET_SEED) % total


def _rescanned_passes(
    lf: pl.LazyFrame,
    columns: Columns,
    each: Callable[[pl.LazyFrame], None],
    total: int,
    *,
    progress: bool | None,
) -> None:
    """Evaluate each hash bucket of the query ids in its own pass over the whole input."""
    bucket_of = _bucket_of(columns, total)
    with Progress(total, enabled=progress, spill=False) as bar:
        for bucket in range(total):
            each(lf.filter(bucket_of == bucket))
            bar.advance()


def _spilled_passes(
    lf: pl.LazyFrame,
    columns: Columns,
    each: Callable[[pl.LazyFrame], None],
    total: int,
    *,
    progress: bool | None,
    spill_dir: str | os.PathLike[str] | None,
) -> None:
    """Spill ``lf`` into ``total`` hash buckets of the query ids, then evaluate each bucket.

    Rescanning the whole input once per pass made the time grow with the number of passes;
    reading and writing it once makes every later pass read only its own share.
    """
    bucket_of = _bucket_of(columns, total)
    # spill_folder sweeps stale spills, marks and removes this one, and names it when the
    # disk fills up
    with (
        cleanup_on_sigterm(),
        spill_folder(spill_dir) as root,
        Progress(total, enabled=progress) as bar,
    ):
        lf.sink_parquet(
            pl.PartitionBy(root, key={_BUCKET_KEY: bucket_of}, include_key=False),
            compression=SPILL_COMPRESSION,
            mkdir=True,
            engine="streaming",
        )
        bar.spilled()
        for bucket in range(total):
            files = root / f"{_BUCKET_KEY}={bucket}"
            if files.is_dir():  # an empty bucket writes no directory
                # hive_partitioning=False: the bucket key is not a column of the input
                each(pl.scan_parquet(files, hive_partitioning=False))
                # free the disk as the passes go: the spill is about the input's size
                shutil.rmtree(files, ignore_errors=True)
            bar.advance()
