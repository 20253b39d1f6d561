"""Read once: an input that is costly to scan is materialised before the passes read it.

Evaluating in passes reads the input more than once: ``n_buckets="auto"`` counts its rows
first, and two or three passes each re-read it. That is free for Parquet (the count is in the
metadata, a pass reads its columns), but a plan that joins (``join_run_qrels`` over gzipped
TREC runs), parses text (CSV, NDJSON) or runs Python would do all that work again each time:
on 17 gzipped TREC runs the lazy path took 4.4 s against 2.4 s for collect-then-evaluate.

Such an input is read once, into memory when it is small (no larger than one pass holds: its
in-memory leaves are in memory already, and a file's estimated rows are at most
``ROWS_PER_PASS``), else into one Parquet file in the spill folder, which later reads scan.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import re
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal

import polars as pl

from polars_rankeval._engine.spill import cleanup_on_sigterm, spill_folder
from polars_rankeval.errors import ResourceError

# Plan nodes whose work a re-read repeats (as Polars' explain() names them): joins, text and
# Python scans, aggregations, sorts, windows. Parquet, IPC and in-memory scans with their
# filters and projections are cheap to read again.
_COSTLY = re.compile(
    r"JOIN|Csv SCAN|NDJson SCAN|PYTHON SCAN|AGGREGATE|SORT BY|UNIQUE|EXPLODE|PIVOT|\.over\(",
    re.IGNORECASE,
)
_FILE_SCAN = re.compile(r"^\s*(\w+) SCAN \[", re.MULTILINE)
_ESTIMATED = re.compile(r"ESTIMATED ROWS: (\d+)")


def is_costly(lf: pl.LazyFrame) -> bool:
    """Whether reading ``lf`` again repeats real work (a join, a text parse ...).

    Examples
    --------
    >>> frame = pl.DataFrame({"query": ["q"], "item": ["a"], "score": [1.0]})
    >>> is_costly(frame.lazy().filter(pl.col("score") > 0))
    False
    >>> is_costly(frame.lazy().join(frame.lazy(), on=["query", "item"]))
    True
    """
    return bool(_COSTLY.search(lf.explain()))


# The costly nodes a pass's bucket filter does not make dearer: Polars pushes a filter on the
# query id below a join on it, to each side, so each pass joins its own share.
_JOIN = re.compile(r"(CROSS |FULL |LEFT |INNER |SEMI |ANTI )?JOIN|UNIQUE", re.IGNORECASE)


def joins_in_memory(lf: pl.LazyFrame) -> bool:
    """Whether ``lf`` only joins frames held in memory (``join_run_qrels`` of read TREC files).

    Such an input is not read once before the passes: each pass's bucket filter on the query
    ids reaches the frames below the joins, so each pass joins its own share, and the joined
    whole is never held. On 17 TREC runs (2.55M joined rows, trec_eval's official measures with
    the tie check, 3 passes) the peak fell from 610 to 435 MB.

    Examples
    --------
    >>> frame = pl.LazyFrame({"query": ["q"], "item": ["a"]})
    >>> joins_in_memory(frame.join(frame, on=["query", "item"]))
    True
    >>> joins_in_memory(frame.join(frame, on="item").with_columns(pl.len().over("query")))
    False
    """
    plan = lf.explain()
    return not _FILE_SCAN.search(plan) and not _COSTLY.search(_JOIN.sub("", plan))


def held_in_memory(lf: pl.LazyFrame) -> bool:
    """Whether every leaf of ``lf`` is a frame in memory (no file or Python scan to re-read).

    Filtering a bucket out of it again costs a hash of the query ids, not a read: the passes
    never spill such an input, whatever their number.

    Examples
    --------
    >>> frame = pl.LazyFrame({"query": ["q"], "item": ["a"]})
    >>> held_in_memory(frame.join(frame, on=["query", "item"]))
    True
    """
    return not _FILE_SCAN.search(lf.explain())


def fits_in_memory(lf: pl.LazyFrame, rows: int) -> bool:
    """Whether ``lf`` may be collected: its files' estimated rows are at most ``rows``.

    In-memory leaves (frames) count as fitting: their rows are held already. A file scan
    without an estimate (NDJSON, Python scans) does not fit, so it is spilled.
    """
    plan = lf.explain()
    files = len(_FILE_SCAN.findall(plan))  # "PYTHON SCAN []" too
    estimates = [int(n) for n in _ESTIMATED.findall(plan)]
    return len(estimates) >= files and sum(estimates) <= rows


def read_once(
    lf: pl.LazyFrame,
    stack: contextlib.ExitStack,
    *,
    rows: int,
    spill_dir: str | os.PathLike[str] | None,
    compression: Literal["lz4", "uncompressed", "snappy", "zstd"],
) -> pl.LazyFrame:
    """``lf`` read once: collected, or spilled to Parquet in a folder that ``stack`` removes.

    Inputs that are cheap to read again come back as they are. Collecting (streaming) keeps
    the input's row order, as the Parquet file does, so ``duplicates="first"`` still sees it.
    """
    if not is_costly(lf) or joins_in_memory(lf):
        return lf
    if fits_in_memory(lf, rows):
        return lf.collect(engine="streaming").lazy()
    stack.enter_context(cleanup_on_sigterm())
    root: Path = stack.enter_context(spill_folder(spill_dir))
    path = root / "input.parquet"
    lf.sink_parquet(path, compression=compression, engine="streaming")
    return pl.scan_parquet(path)


# -- naming the file behind a Parquet read error ---------------------------------------------
# Polars' errors for a truncated or corrupt Parquet file ("File out of specification", "expected
# parquet magic bytes ... got ...") name no file, and for a glob not even which one. Only when
# such an error happens are the input's Parquet files read again, footer only, one by one.
GLOB_CHARS = frozenset("*?[")


def parquet_sources(lf: pl.LazyFrame) -> list[str]:
    """The local paths, globs and folders that the Parquet scans of ``lf`` read, as given.

    The plan's description (Polars' serialised plan) holds them; ``explain()`` cannot be
    used, as it reads the first file's footer and fails on the very file to be named.

    Examples
    --------
    >>> parquet_sources(pl.scan_parquet(["a.parquet", "parts/*.parquet"]).head(3))
    ['a.parquet', 'parts/*.parquet']
    >>> parquet_sources(pl.LazyFrame({"a": [1]}))
    []
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the JSON form is deprecated; read it while there
            plan = json.loads(lf.serialize(format="json"))
    except Exception:  # a plan Polars cannot describe: nothing to name
        return []
    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            scan = node.get("Scan")
            if isinstance(scan, dict) and "Parquet" in (scan.get("scan_type") or {}):
                paths = (scan.get("sources") or {}).get("Paths") or []
                for path in paths:
                    text = path.get("inner") if isinstance(path, dict) else path
                    if isinstance(text, str) and "://" not in text and text not in found:
                        found.append(text)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(plan)
    return found


def input_files(source: str) -> list[Path]:
    """The files an input stands for: itself, a glob's matches, a folder's members (sorted).

    Examples
    --------
    >>> input_files("no/such/file.parquet")
    []
    """
    matches = sorted(glob.glob(source, recursive=True)) if GLOB_CHARS & set(source) else [source]
    files: list[Path] = []
    for match in matches:
        target = Path(match)
        if target.is_dir():
            files.extend(sorted(entry for entry in target.rglob("*") if entry.is_file()))
        elif target.is_file():
            files.append(target)
    return files


def unreadable_parquet(sources: Sequence[str]) -> str | None:
    """Why the first file of ``sources`` whose Parquet footer cannot be read is refused.

    ``None`` when every footer reads: the error lies elsewhere. The command line and the
    library both name the file this way.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> pl.DataFrame({"a": [1]}).write_parquet(folder / "good.parquet")
    >>> _ = (folder / "cut.parquet").write_bytes(b"PAR1 cut here")
    >>> message = unreadable_parquet([str(folder / "*.parquet")])
    >>> message.startswith(repr(str(folder / "cut.parquet")))
    True
    >>> unreadable_parquet([str(folder / "good.parquet")]) is None
    True
    """
    for given in sources:
        for file in input_files(given):
            if file.name.startswith((".", "_")):  # hidden or _SUCCESS: Polars skips them
                continue
            try:
                pl.read_parquet_schema(file)
            except (pl.exceptions.PolarsError, OSError) as error:
                reason = str(error).split("\n")[0].removeprefix("parquet: ")
                reason = reason.removeprefix("File out of specification: ")
                reason = re.sub(r",? got .* instead$", "", reason)  # raw bytes, unreadable
                where = "" if str(file) == given else f" (in input {given!r})"
                return (
                    f"{str(file)!r}{where} is not a readable Parquet file ({reason}): it is "
                    "truncated, corrupt or not Parquet; replace or remove it, or leave it out "
                    "of the input (a glob such as 'dir/**/*.parquet')"
                )
    return None


@contextlib.contextmanager
def input_errors_named(lf: pl.LazyFrame) -> Iterator[None]:
    """Turn Polars' unnamed Parquet read errors from reading ``lf`` into a ResourceError.

    The one place the library translates them: around the schema check and around every
    collect of the input (the passes, the deferred plans). Other errors pass unchanged, and so
    does a Parquet error for which no input file's footer fails (a spill file, a bad page).
    """
    try:
        yield
    except pl.exceptions.PolarsError as error:
        if "parquet" not in str(error).lower():
            raise
        message = unreadable_parquet(parquet_sources(lf))
        if message is None:
            raise
        raise ResourceError(message) from error


def readable(lf: pl.LazyFrame) -> pl.LazyFrame:
    """``lf`` once its schema reads: a Parquet file whose footer does not read is named."""
    with input_errors_named(lf):
        lf.collect_schema()
    return lf
