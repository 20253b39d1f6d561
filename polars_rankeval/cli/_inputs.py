"""Reading and checking the inputs: logs, TREC runs and qrels, and ``-o``.

Logs are Parquet/CSV/TSV/NDJSON files, directories or globs; TREC runs and qrels are checked
to be the right way round; ``-o`` naming an input is refused; Polars errors that name no file
are given the input file behind them.
"""

from __future__ import annotations

import contextlib
import glob
import gzip
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import polars as pl

from polars_rankeval._engine.read_once import GLOB_CHARS, input_files, unreadable_parquet
from polars_rankeval.cli._constants import _COLUMN_ROLES, SYSTEM
from polars_rankeval.cli._errors import CliError
from polars_rankeval.io import (
    join_run_qrels,
    leading_lines,
    read_trec_qrels,
    read_trec_run,
    trec_file_kind,
)

# Runs read at once (Polars parallelises inside each file too; 4 measured best on 2 vCPUs).
_READ_THREADS = 4
# TREC's archives name each run input.<tag>(.gz).
_TREC_PREFIX = "input."
# The suffix of a text file, not a run tag: input.txt is a run named input.
_TEXT_SUFFIXES = frozenset({"txt", "run", "runs", "trec", "res", "tsv", "csv", "out"})


def _is_glob(path: str) -> bool:
    return bool(GLOB_CHARS & set(path))


def _check_exists(path: str, role: str) -> None:
    """A missing file, or a directory or glob with nothing to read, is named before Polars."""
    if _is_glob(path):
        if not glob.glob(path, recursive=True):
            msg = f"{role} {path!r} matches no file"
            raise CliError(msg)
        return
    target = Path(path)
    if not target.exists():
        msg = f"{role} {path!r}: no such file or directory"
        raise CliError(msg)
    if target.is_dir() and not any(entry.is_file() for entry in target.rglob("*")):
        msg = f"{role} directory {path!r} holds no files"
        raise CliError(msg)


def _check_output(output: str | None, inputs: Sequence[str | None], *, option: str = "-o") -> None:
    """Refuse ``-o`` naming an input (the run would replace the log it reads with its result).

    Real paths are compared, and file identities where the output exists, so a symlink, a
    hard link, ``./x`` or a glob match of the input is caught too. ``option`` names the
    output in the message (``$GITHUB_STEP_SUMMARY`` is checked the same way).
    """
    if output is None:
        return
    target = Path(output)
    real = os.path.realpath(target)
    for given in inputs:
        if given is None:
            continue
        for file in input_files(given):
            if os.path.realpath(file) == real or (
                target.is_file() and os.path.samefile(file, target)
            ):
                which = repr(given) if str(file) == given else f"{str(file)!r} (of input {given!r})"
                msg = (
                    f"{option} {output!r} is the input {which}: it would be overwritten by the "
                    "result; write the result to another file"
                )
                raise CliError(msg)


def _bad_parquet(inputs: Sequence[str]) -> CliError | None:
    """The first file of the inputs whose Parquet footer cannot be read, as an error naming it.

    Polars' "File out of specification" names no file; only on that error are the files read
    again, footer only, one by one (the normal path pays nothing). The library names the file
    the same way (:func:`polars_rankeval._engine.read_once.unreadable_parquet`).
    """
    message = unreadable_parquet(inputs)
    return None if message is None else CliError(message)


def _bad_utf8(paths: Sequence[str]) -> CliError | None:
    """The first line of the TREC files that is not UTF-8, as an error naming file and line."""
    for path in paths:
        opener = gzip.open if path.endswith(".gz") else open
        try:
            with opener(path, "rb") as file:
                for number, line in enumerate(file, start=1):
                    try:
                        line.decode("utf-8")
                    except UnicodeDecodeError as error:
                        msg = (
                            f"{path!r} line {number} is not UTF-8 text ({error.reason} at "
                            f"byte {error.start}): convert the file to UTF-8 "
                            "(e.g. iconv -f latin1 -t utf-8)"
                        )
                        return CliError(msg)
        except OSError:
            continue
    return None


@contextlib.contextmanager
def _input_errors_named(inputs: Sequence[str], trec_files: Sequence[str]) -> Iterator[None]:
    """Name the input file behind Polars errors that name none (corrupt Parquet, bad UTF-8)."""
    try:
        yield
    except pl.exceptions.PolarsError as error:
        text = str(error).lower()
        named: CliError | None = None
        if "parquet" in text and not trec_files:
            named = _bad_parquet(inputs)
        elif "utf-8" in text or "utf8" in text:
            named = _bad_utf8(trec_files)
        if named is None:
            raise
        raise named from error


def _check_text_file(path: str, role: str) -> None:
    if Path(path).is_dir():
        msg = f"{role} {path!r} is a directory, not a file"
        raise CliError(msg)
    if not leading_lines(path, 1):
        msg = f"{role} file {path!r} is empty"
        raise CliError(msg)


def _read_trec(run_path: str, qrels_path: str, *, subtopics: bool = False) -> pl.LazyFrame:
    """The run and the judgments joined, after checking they are the right way round.

    With ``subtopics`` the qrels are diversity qrels and each row carries its item's subtopic
    judgments.
    """
    _check_trec_files(run_path, qrels_path)
    qrels = read_trec_qrels(qrels_path, subtopics=subtopics)
    return join_run_qrels(read_trec_run(run_path), qrels)


def _check_trec_files(run_path: str, qrels_path: str) -> None:
    """Both files exist, hold lines, and are a run and a qrels file in that order."""
    _check_exists(run_path, "run")
    _check_exists(qrels_path, "qrels")
    _check_text_file(run_path, "run")
    _check_text_file(qrels_path, "qrels")
    run_kind, qrels_kind = trec_file_kind(run_path), trec_file_kind(qrels_path)
    swapped = "were the run and the qrels given the other way round? (rank-eval RUN --qrels QRELS)"
    if run_kind == "qrels":
        msg = (
            f"the run {run_path!r} has no scores (its lines have 4 fields, like a qrels file "
            f"'qid iter docno rel'): {swapped}"
        )
        raise CliError(msg)
    if qrels_kind == "run":
        msg = (
            f"the qrels {qrels_path!r} has lines like a run 'qid Q0 docno rank score tag', "
            f"not 'qid iter docno rel': {swapped}"
        )
        raise CliError(msg)
    if _is_parquet(run_path):
        msg = (
            f"the run {run_path!r} is a Parquet file; with --qrels, PATH must be a TREC run "
            "file 'qid Q0 docno rank score tag' (a Parquet log needs no --qrels)"
        )
        raise CliError(msg)


# Files read as tables (a log or a per-query table); anything else is a TREC run.
TABLE_SUFFIXES = frozenset(
    {".parquet", ".pq", ".csv", ".tsv", ".ndjson", ".jsonl", ".arrow", ".ipc"}
)


def is_table_path(path: str) -> bool:
    """Whether an input is a table (by suffix, a directory, a glob, or Parquet bytes).

    Anything else is taken for a TREC run by the commands that take both.
    """
    if Path(path.rstrip("*")).suffix.lower() in TABLE_SUFFIXES or _is_glob(path):
        return True
    target = Path(path)
    return target.is_dir() or (target.is_file() and _is_parquet(path))


def _is_parquet(path: str) -> bool:
    with Path(path).open("rb") as file:
        return file.read(4) == b"PAR1"


def _check_log_file(path: str, suffix: str) -> None:
    """Refuse, with the reason, a single file that Polars would misread or fail on obscurely."""
    if suffix in {".csv", ".tsv", ".ndjson", ".jsonl"}:
        lines = leading_lines(path, 2)
        if not lines:
            msg = f"{path!r} is empty"
            raise CliError(msg)
        if len(lines) == 1 and suffix in {".csv", ".tsv"}:
            # Polars would type the columns of a header-only file as strings.
            msg = f"{path!r} is empty: it has a header line and no rows"
            raise CliError(msg)
        return
    if Path(path).stat().st_size == 0:
        msg = f"{path!r} is empty"
        raise CliError(msg)
    if _is_parquet(path):
        return
    kind = trec_file_kind(path)
    if kind == "run":
        msg = (
            f"{path!r} looks like a TREC run file (qid Q0 docno rank score tag): "
            "pass the judgments with --qrels QRELS"
        )
    elif kind == "qrels":
        msg = (
            f"{path!r} looks like a TREC qrels file (qid iter docno rel): evaluate a run "
            f"against it with rank-eval RUN --qrels {path}"
        )
    else:
        msg = (
            f"{path!r} is not a Parquet file; CSV, TSV and NDJSON logs are read by their suffix "
            "(.csv, .tsv, .ndjson, .jsonl), TREC runs with --qrels QRELS"
        )
    raise CliError(msg)


def _scan(path: str) -> pl.LazyFrame:
    _check_exists(path, "input")
    suffix = Path(path.rstrip("*")).suffix.lower()
    if Path(path).is_file():
        _check_log_file(path, suffix)
    if suffix in {".csv", ".tsv"}:
        return pl.scan_csv(path, separator="\t" if suffix == ".tsv" else ",")
    if suffix in {".ndjson", ".jsonl"}:
        return pl.scan_ndjson(path)
    # Parquet files, directories and globs. Polars reads hive partitions (model=bm25/) of a
    # directory by default but not of a glob; the docs (guides/cli.md) promise both.
    return pl.scan_parquet(path, hive_partitioning=True if _is_glob(path) else None)


def run_stem(path: str) -> str:
    """A run's name from its file: its stem, after any compression suffix.

    TREC distributes its runs as ``input.<tag>.gz``: the ``input.`` prefix is dropped, or
    every such run would be named ``input``. This is the one place runs are named by file
    (``rank-eval``, ``compare``, ``similarity``).

    Examples
    --------
    >>> run_stem("runs/bm25.txt.gz"), run_stem("bm25.txt"), run_stem("dense.run.gz")
    ('bm25', 'bm25', 'dense')
    >>> run_stem("robust03/input.pircRBa1.gz"), run_stem("input.UAmsT03RDesc.txt")
    ('pircRBa1', 'UAmsT03RDesc')
    >>> run_stem("input.txt"), run_stem("input.gz")
    ('input', 'input')
    """
    name = Path(path)
    if name.suffix.lower() in {".gz", ".bz2", ".xz", ".zst"}:
        name = name.with_suffix("")
    rest = name.name.removeprefix(_TREC_PREFIX)
    if rest != name.name and rest and rest.lower() not in _TEXT_SUFFIXES:
        # input.pircRBa1 -> pircRBa1; input.pircRBa1.txt -> pircRBa1; input.txt stays input
        tag = Path(rest)
        return tag.stem if tag.suffix.lower().lstrip(".") in _TEXT_SUFFIXES else rest
    return name.stem


def _read_trec_runs(paths: Sequence[str], qrels_path: str, naming: str) -> pl.LazyFrame:
    """The TREC runs joined with the judgments, with a ``system`` column naming each run.

    A run is named by its file stem, or with ``naming="tag"`` by the run tag of its lines (one
    file may then hold several runs). The runs are joined with the qrels in one call with
    ``by=system``, so a judged item a run did not retrieve is its row with a null score, as for
    one run, and a query-coverage warning is one line for all the runs.
    """
    for path in paths:
        _check_trec_files(path, qrels_path)
    named = _named_runs(paths, naming)
    joined = join_run_qrels(named, read_trec_qrels(qrels_path), by=SYSTEM)
    return joined.select(SYSTEM, *_COLUMN_ROLES)


def read_unjudged_runs(paths: Sequence[str], naming: str) -> pl.LazyFrame:
    """TREC runs without judgments (``rank-eval similarity``): query, item, score, system."""
    for path in paths:
        _check_exists(path, "run")
        _check_text_file(path, "run")
        if trec_file_kind(path) != "run":
            msg = (
                f"{path!r} is neither a table file (.parquet, .csv, ...) nor a TREC run "
                "'qid Q0 docno rank score tag'"
            )
            raise CliError(msg)
    return _named_runs(paths, naming).select(SYSTEM, "query", "item", "score")


def _named_runs(paths: Sequence[str], naming: str) -> pl.LazyFrame:
    """The runs, one below the other, with a ``system`` column naming each (stem or tag)."""
    runs: list[tuple[str, str, pl.LazyFrame]] = []  # (name, file, run)
    read = _read_in_threads(paths, tag=naming == "tag")
    if naming == "tag":
        for path, run in zip(paths, read, strict=True):
            tags = run.select(pl.col("tag").unique(maintain_order=True)).collect()["tag"]
            runs.extend((tag, path, run.filter(pl.col("tag") == tag).drop("tag")) for tag in tags)
    else:
        runs = [(run_stem(path), path, run) for path, run in zip(paths, read, strict=True)]
    files: dict[str, str] = {}
    for name, path, _ in runs:
        if name in files and naming == "tag":
            msg = (
                f"the run tag {name!r} is in both {files[name]!r} and {path!r}: give each run "
                "its own tag, or name the runs by their files (--system-name stem)"
            )
            raise CliError(msg)
        if name in files:
            msg = (
                f"two runs are named {name!r} (a run is named by its file stem): "
                f"{files[name]!r} and {path!r}; rename one, or name the runs by the run tag "
                "of their lines (--system-name tag)"
            )
            raise CliError(msg)
        files[name] = path
    return pl.concat(
        [run.with_columns(pl.lit(name).alias(SYSTEM)) for name, _, run in runs], how="vertical"
    )


def _read_in_threads(paths: Sequence[str], *, tag: bool) -> list[pl.LazyFrame]:
    """Each run read by :func:`read_trec_run`, several files at once.

    Polars releases the GIL while it decompresses and splits a file, so the files overlap:
    17 gzipped runs of 100,000 lines took 0.33 s in 4 threads against 0.52 s one after the
    other (2 vCPUs). ``map`` gives the results in the order of ``paths`` and raises the first
    file's error in that order, so a bad file is named as when read one by one.
    """
    if len(paths) < 2:  # one file: no pool to start
        return [read_trec_run(path, tag=tag) for path in paths]
    with ThreadPoolExecutor(max_workers=min(_READ_THREADS, len(paths))) as pool:
        return list(pool.map(lambda path: read_trec_run(path, tag=tag), paths))
