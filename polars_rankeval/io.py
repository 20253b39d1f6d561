"""Building the long-format table: TREC file readers and the run/judgments join."""

from __future__ import annotations

import errno
import gzip
import os
import tempfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from os import PathLike
from pathlib import Path
from typing import Literal

import polars as pl

from polars_rankeval._engine.columns import as_polars, check_schema, make_columns
from polars_rankeval._engine.warn import warn_at
from polars_rankeval.errors import (
    ColumnTypeError,
    DuplicateItemError,
    InvalidOptionError,
    QueryCoverageWarning,
    ResourceError,
    SubtopicWarning,
    TrecFormatError,
)

TrecKind = Literal["run", "qrels", "empty", "other"]

# Enough of a line to tell a TREC line from anything else, without reading a binary file whole.
_SNIFF_BYTES = 1 << 16


_GZIP_MAGIC = b"\x1f\x8b"


def leading_lines(path: str | Path, count: int) -> list[str]:
    """The first ``count`` non-blank lines of a text file, stripped (fewer if it has fewer).

    A gzip file (told by its magic bytes, whatever its name) is read decompressed, as the
    readers read it: the compressed bytes say nothing about the lines. Each line is read up to
    64 KiB, so a binary file with no newline is not read whole. A gzip stream that cannot be
    decompressed is a :class:`~polars_rankeval.errors.TrecFormatError` naming the file.
    """
    lines: list[str] = []
    with Path(path).open("rb") as raw_file:
        compressed = raw_file.read(2) == _GZIP_MAGIC
        raw_file.seek(0)
        file = gzip.GzipFile(fileobj=raw_file, mode="rb") if compressed else raw_file
        try:
            while len(lines) < count:
                raw = file.readline(_SNIFF_BYTES)
                if not raw:
                    break
                if raw.strip():
                    lines.append(raw.decode("utf-8", errors="replace").strip())
        except (EOFError, zlib.error, gzip.BadGzipFile) as error:
            raise _bad_gzip(str(path), error) from error
    return lines


def _bad_gzip(shown: str, error: BaseException) -> TrecFormatError:
    """A gzip file that cannot be decompressed, named (zlib's own message names no file)."""
    reason = str(error) or type(error).__name__
    msg = (
        f"{shown}: cannot be decompressed as gzip ({reason}): the file is truncated or "
        "corrupt; download or compress it again"
    )
    return TrecFormatError(msg, path=shown)


def write_atomically(
    path: str | PathLike[str], write: Callable[[Path], object], *, overwrite: bool = True, who: str
) -> Path:
    """Write a file whole or not at all: ``write`` fills a temporary file beside ``path``.

    The temporary file (hidden, in the same folder, so the rename stays on one file system) is
    renamed over ``path`` only once ``write`` has returned; on any error it is removed and the
    target is left as it was, so a full disk never leaves a 0-byte or half-written output. A
    symlink is written through (its target is replaced); a path that exists but is not a
    regular file (``/dev/stdout``, a FIFO) is written directly, as there is nothing to replace.

    Parameters
    ----------
    path
        The file to write.
    write
        Writes the content to the path it is given.
    overwrite
        Replace an existing file (else a :class:`~polars_rankeval.errors.ResourceError`).
    who
        What writes (``"rank-eval"``, ``"report.save()"``), for the messages.

    Returns
    -------
    Path
        ``path``.
    """
    target = Path(path)
    real = Path(os.path.realpath(target))
    if real.exists() and not overwrite:
        msg = f"{who}: {str(target)!r} exists; pass overwrite=True to replace it"
        raise ResourceError(msg)
    if real.is_dir():
        msg = f"{who}: cannot write {str(target)!r}: it is a directory"
        raise ResourceError(msg)
    if real.exists() and not real.is_file():
        try:
            write(real)
        except OSError as error:
            raise _unwritable(who, target, error) from error
        return target
    try:
        # hidden, and with the target's suffix, which writers such as Altair read the format from
        handle, temporary = tempfile.mkstemp(
            prefix=f".{real.stem}.tmp-", suffix=real.suffix, dir=real.parent
        )
    except OSError as error:
        raise _unwritable(who, target, error) from error
    os.close(handle)
    scratch = Path(temporary)
    try:
        write(scratch)
        # mkstemp makes the file private (0600): give it the mode a plain open() would
        mode = real.stat().st_mode & 0o7777 if real.exists() else 0o666 & ~_umask()
        scratch.chmod(mode)
        os.replace(scratch, real)
    except BaseException as error:
        scratch.unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise _unwritable(who, target, error) from error
        raise
    return target


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def _unwritable(who: str, target: Path, error: OSError) -> ResourceError:
    reason = error.strerror or str(error)
    msg = f"{who}: cannot write {str(target)!r}: {reason}; nothing was written"
    return ResourceError(msg)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def trec_line_kind(line: str) -> TrecKind:
    r"""Tell a TREC run line from a qrels line by its fields (whitespace-separated).

    A run line is ``qid Q0 docno rank score tag`` (trec_eval needs the 6 fields; more are
    ignored) with a numeric rank and score; a qrels line is ``qid iter docno rel`` with an
    integer label.

    Examples
    --------
    >>> trec_line_kind("301\tQ0\tFR940202-2-00150\t104\t  2.129133\tSTANDARD")
    'run'
    >>> trec_line_kind("301 0 CR93E-10279 0")
    'qrels'
    >>> trec_line_kind("query,item,score,relevance")
    'other'
    """
    fields = line.split()
    if not fields:
        return "empty"
    if len(fields) >= 6 and _is_number(fields[3]) and _is_number(fields[4]):
        return "run"
    if len(fields) == 4 and fields[3].lstrip("+-").isdigit():
        return "qrels"
    return "other"


def trec_file_kind(path: str | Path) -> TrecKind:
    """What the first non-blank line of a file looks like: see :func:`trec_line_kind`.

    ``"empty"`` when the file holds nothing but whitespace.
    """
    lines = leading_lines(path, 1)
    return trec_line_kind(lines[0]) if lines else "empty"


# What each TREC file's lines hold, for messages.
_RUN_FIELDS = "query Q0 item rank score tag"
_QRELS_FIELDS = "query iter item label"
_DIVERSITY_FIELDS = "query subtopic item judgment"
# Diversity qrels: the subtopic column, and the per-(query, item) list join_run_qrels makes.
SUBTOPIC = "subtopic"
SUBTOPICS = "subtopics"
_LINE = "__rke_line"
_FIELDS = "__rke_fields"
# A line of printable ASCII words separated by single spaces (no tab, no leading space).
_SIMPLE_LINE = r"^[\x21-\x7E]+( [\x21-\x7E]+)*$"
# How many ids a coverage warning shows per side.
_COVERAGE_EXAMPLES = 3


def _read_lines(path: str | Path) -> pl.DataFrame:
    """Every line of a text file (gzip, CRLF and a UTF-8 BOM allowed) with its 1-based number.

    Blank lines are kept (as null or whitespace), so the numbers are the file's own. A byte
    sequence that is not UTF-8 is a :class:`TrecFormatError` naming the first line holding one.
    """

    def scan(encoding: Literal["utf8", "utf8-lossy"]) -> pl.DataFrame:
        return (
            pl.scan_csv(
                path,
                has_header=False,
                separator="\x1f",  # a byte TREC files never hold: one column per line
                quote_char=None,
                new_columns=["line"],
                schema_overrides={"line": pl.String},
                encoding=encoding,
            )
            .with_row_index(_LINE, offset=1)
            .collect()
        )

    shown = str(path)
    local = "://" not in shown  # cloud paths are Polars' to open
    if local and Path(path).is_dir():
        msg = f"{shown}: is a directory, not a TREC file"
        raise ResourceError(msg)
    if local and not Path(path).exists():
        # Polars would raise its own error at collect; this is the usual OSError, named.
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", shown)
    try:
        return scan("utf8")
    except pl.exceptions.NoDataError:
        return pl.DataFrame(schema={_LINE: pl.UInt32, "line": pl.String})
    except pl.exceptions.ComputeError as error:
        if "utf-8" not in str(error).lower() and "utf8" not in str(error).lower():
            raise _unreadable(shown, error) from error
        # Only on this error path: re-read with bad bytes replaced, to find the first such line.
        lossy = scan("utf8-lossy")
        first = lossy.filter(pl.col("line").str.contains("\ufffd", literal=True)).head(1)
        line = int(first[_LINE].item()) if first.height else None
        where = f"{shown}:{line}" if line is not None else shown
        msg = (
            f"{where}: a byte sequence that is not UTF-8; TREC files are read as UTF-8 text "
            "(re-encode the file, e.g. iconv -f latin1 -t utf-8)"
        )
        raise TrecFormatError(msg, path=shown, line=line) from error
    except pl.exceptions.PolarsError as error:
        raise _unreadable(shown, error) from error
    except OSError as error:
        # Polars' gzip decoder raises a bare OSError ("corrupt deflate stream", "unexpected
        # end of file") that names no file.
        if error.filename is not None:
            raise
        raise _bad_gzip(shown, error) from error


def _unreadable(shown: str, error: Exception) -> TrecFormatError:
    first = str(error).split("\n", 1)[0]
    if "new_columns" in first:  # the reader's one-column trick met its separator byte
        first = "a line holds the byte 0x1F, which TREC text never holds"
    msg = (
        f"{shown}: cannot be read as a TREC text file ({first}); a TREC file holds "
        "whitespace-separated fields, one record per line"
    )
    return TrecFormatError(msg, path=shown)


def _fields(path: str | Path, role: str, layout: str) -> pl.DataFrame:
    """The non-blank, non-comment lines of a TREC file as ``(line number, list of fields)``.

    Comment lines are skipped as trec_eval skips them: a run line whose first non-blank
    character is ``#`` (get_trec_results.c), a qrels line that starts with ``#``
    (get_qrels.c). An empty file (nothing but whitespace) is a :class:`TrecFormatError`.
    """
    lines = _read_lines(path)
    text = pl.col("line").fill_null("")
    start = text.str.strip_chars_start() if role == "run" else text
    # Most files are printable ASCII words between single spaces: splitting at the space then
    # gives exactly the whitespace-separated fields: reading 17 gzipped runs of 100,000 lines
    # took 0.62 s against 0.97 s through the regex (best of 5, alternated). Any other line (a tab,
    # two spaces, a blank line, a non-ASCII byte) sends the whole file through the regex.
    simple = lines.select(text.str.contains(_SIMPLE_LINE).all()).item()
    split = text.str.split(" ") if simple else text.str.extract_all(r"\S+")
    fields = (
        lines.filter(~start.str.starts_with("#"))
        .select(_LINE, split.alias(_FIELDS))
        .filter(pl.col(_FIELDS).list.len() > 0)
    )
    if fields.height == 0:
        shown = str(path)
        msg = f"{shown}: the {role} file is empty; each line of it must be '{layout}'"
        raise TrecFormatError(msg, path=shown)
    return fields


def _first_bad(
    fields: pl.DataFrame,
    path: str | Path,
    problems: list[tuple[pl.Expr, pl.Expr]],
) -> None:
    """Raise for the first line where one of ``problems`` (bad mask, message) holds.

    The masks are evaluated over the whole file at once (no Python loop over lines); only the
    first bad line's message is built, the problems being tried in order on that line.
    """
    masks = [mask.fill_null(value=True) for mask, _ in problems]
    bad = fields.filter(pl.any_horizontal(masks)).head(1)
    if bad.height == 0:
        return
    row = bad.select(
        _LINE,
        *(mask.alias(f"m{i}") for i, mask in enumerate(masks)),
        *(text.alias(f"t{i}") for i, (_, text) in enumerate(problems)),
    ).row(0, named=True)
    line = int(row[_LINE])
    shown = str(path)
    failed = next(i for i in range(len(problems)) if row[f"m{i}"])
    text = row[f"t{failed}"]
    if line == 1 and failed > 0:  # a non-numeric value on line 1 is usually a header
        text += " (a header line? TREC files have none)"
    raise TrecFormatError(f"{shown}:{line}: {text}", path=shown, line=line)


def _field(index: int) -> pl.Expr:
    return pl.col(_FIELDS).list.get(index, null_on_oob=True)


def _count_message(expected: str, layout: str) -> pl.Expr:
    count = pl.col(_FIELDS).list.len().cast(pl.String)
    return pl.concat_str(pl.lit(f"expected {expected} fields ({layout}), got "), count)


def _value_message(name: str, index: int, what: str) -> pl.Expr:
    return pl.concat_str(pl.lit(f"{name} '"), _field(index), pl.lit(f"' is not {what}"))


def read_trec_run(path: str | Path, *, tag: bool = False) -> pl.LazyFrame:
    """Read a TREC run file ``qid Q0 docno rank score tag`` into ``(query, item, score)``.

    Every line is checked when this is called (one pass over the file, in Polars): it must
    have at least the 6 fields trec_eval needs (fields after the tag are ignored, as in
    trec_eval) and a score that is a number. A line with 5 fields is refused too: it could
    lack its tag or its ``Q0``, and reading the wrong field as the score would give wrong
    numbers silently. The first bad line is a :class:`~polars_rankeval.errors.TrecFormatError`
    naming the file and its 1-based line, e.g. ``run.txt:7: expected 6 fields (query Q0 item
    rank score tag), got 3``; so are an empty file and bytes that are not UTF-8. Blank lines
    and comment lines (first non-blank character ``#``, as trec_eval) are skipped; gzip
    files, CRLF line ends and a UTF-8 byte order mark are read as they are.

    The rank field is not read (trec_eval ignores it too); ids stay strings; scores are
    64-bit floats (trec_eval 10; ``nan`` parses, and ``evaluate`` refuses it by default).

    Parameters
    ----------
    path
        The run file (``.gz`` read transparently).
    tag
        Also return the run tag (6th field) as a ``tag`` column, e.g. to tell several runs of
        one file apart with ``join_run_qrels(..., by="tag")``.

    Returns
    -------
    LazyFrame
        ``query``, ``item``, ``score`` (and ``tag``); the file's rows are held in memory.
    """
    fields = _fields(path, "run", _RUN_FIELDS)
    score = _field(4).cast(pl.Float64, strict=False)
    _first_bad(
        fields,
        path,
        [
            (pl.col(_FIELDS).list.len() < 6, _count_message("6", _RUN_FIELDS)),
            (score.is_null(), _value_message("score", 4, "a number")),
        ],
    )
    columns = [_field(0).alias("query"), _field(2).alias("item"), score.alias("score")]
    if tag:
        columns.append(_field(5).alias("tag"))
    return fields.select(columns).lazy()


def read_trec_qrels(path: str | Path, *, subtopics: bool = False) -> pl.LazyFrame:
    """Read a TREC qrels file ``qid iter docno rel`` into ``(query, item, relevance)``.

    With ``subtopics=True`` the file is a diversity qrels file (TREC Web track, ndeval's input):
    ``topic subtopic docno judgment``, read into ``(query, subtopic, item, relevance)`` with
    one row per (query, subtopic, item); :func:`join_run_qrels` turns it into one row per
    (query, item) carrying the item's subtopic judgments.

    Every line is checked when this is called: it must have exactly 4 fields (as trec_eval
    requires) and an integer label (Int64). A fractional label such as ``1.5`` is refused:
    trec_eval reads labels with C's ``atol`` and would silently take 1, which is rarely what
    a file with fractions means. The first bad line is a
    :class:`~polars_rankeval.errors.TrecFormatError` naming the file and its 1-based line,
    e.g. ``qrels.txt:12: expected 4 fields (query iter item label), got 3``; so are an empty
    file and bytes that are not UTF-8. Blank lines and lines starting with ``#`` (trec_eval's
    comments) are skipped; gzip files, CRLF line ends and a UTF-8 byte order mark are read as
    they are.

    Returns
    -------
    LazyFrame
        ``query``, ``item``, ``relevance`` (Int64), or ``query``, ``subtopic`` (String),
        ``item``, ``relevance`` with ``subtopics=True``; the file's rows are held in memory.
    """
    fields = _fields(path, "qrels", _DIVERSITY_FIELDS if subtopics else _QRELS_FIELDS)
    label = _field(3).cast(pl.Int64, strict=False)
    _first_bad(
        fields,
        path,
        [
            (
                pl.col(_FIELDS).list.len() != 4,
                _count_message("4", _DIVERSITY_FIELDS if subtopics else _QRELS_FIELDS),
            ),
            (
                label.is_null(),
                _value_message(
                    "label", 3, "an integer (labels are whole numbers, as in trec_eval)"
                ),
            ),
        ],
    )
    if subtopics:
        _refuse_repeated_judgments(fields, path)
        judged = fields.select(
            _field(0).alias("query"),
            _field(1).alias(SUBTOPIC),
            _field(2).alias("item"),
            label.alias("relevance"),
        )
        _warn_single_subtopic(judged, path)
        return judged.lazy()
    # Diversity qrels read as plain ones would judge an item once per subtopic: say so at the
    # line, rather than let evaluate refuse the repeated (query, item) rows without the reason.
    repeat = (pl.len().over(_field(0), _field(2)) > 1) & (
        _field(1).n_unique().over(_field(0), _field(2)) > 1
    )
    _first_bad(
        fields.with_columns(repeat.alias("__rke_repeat")),  # a window: computed over every line
        path,
        [
            (
                pl.col("__rke_repeat"),
                pl.format(
                    "query {} judges item {} under several values of the second column: "
                    "diversity qrels 'topic subtopic docno judgment'? read them with "
                    "read_trec_qrels(path, subtopics=True) (command line: --subtopics)",
                    _field(0),
                    _field(2),
                ),
            )
        ],
    )
    return fields.select(
        _field(0).alias("query"), _field(2).alias("item"), label.alias("relevance")
    ).lazy()


def _refuse_repeated_judgments(fields: pl.DataFrame, path: str | Path) -> None:
    """A (topic, subtopic, docno) on two lines is refused, whether the labels agree or not.

    Kept, the item would be judged twice: alpha-nDCG rose to 1.5 (round-4 audit F2). ndeval
    gives repeats no meaning of its own (a repeated line sets the item's judgment again, the
    survivor of a conflicting pair being whichever its unstable sort puts last, and adds to the
    subtopic's count of relevant documents that MAP-IA divides by), and plain qrels refuse
    repeated (query, item) rows, identical or not: so do these, naming both lines.
    """
    key = [_field(0), _field(1), _field(2)]
    marked = fields.with_columns(pl.col(_LINE).min().over(key).alias("__rke_first"))
    repeat = marked.filter(pl.col(_LINE) > pl.col("__rke_first")).head(1)
    if repeat.height == 0:
        return
    row = repeat.select(
        _LINE,
        pl.col("__rke_first").alias("first"),
        *(field.alias(f"f{index}") for index, field in enumerate(key)),
        _field(3).alias("label"),
    )
    again = row.row(0, named=True)
    earlier = fields.filter(pl.col(_LINE) == again["first"]).select(_field(3)).item()
    same = "the same label" if earlier == again["label"] else "another label"
    msg = (
        f"{path}:{again[_LINE]}: query {again['f0']!r} judges item {again['f2']!r} for subtopic "
        f"{again['f1']!r} again ({same}; first at line {again['first']}): each (topic, "
        "subtopic, docno) is judged once; remove the repeated line"
    )
    raise DuplicateItemError(msg)


def _warn_single_subtopic(judged: pl.DataFrame, path: str | Path) -> None:
    """ir_measures' check: diversity qrels where no query has two subtopics are suspect."""
    most = judged.group_by("query").agg(pl.col(SUBTOPIC).n_unique())[SUBTOPIC].max()
    if most is not None and int(most) <= 1:  # type: ignore[arg-type]
        warn_at(
            f"{path}: every query has a single subtopic, so the intent-aware metrics equal "
            "their plain forms; are these diversity qrels ('topic subtopic docno judgment')?",
            SubtopicWarning,
        )


def _key_dtypes(
    run: pl.LazyFrame, qrels: pl.LazyFrame, keys: list[str]
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """Make the join keys' dtypes equal where that is lossless, or raise naming both.

    Categorical or Enum ids meet String ids as strings (the same ids); integer ids of two
    widths meet as Int64. Anything else (e.g. Int64 query ids in the run, String in the
    qrels) is a :class:`ColumnTypeError`: casting ``"0301"`` to 301 or 301 to ``"301"`` would
    guess, and a wrong guess silently loses every judgment.
    """
    run_schema, qrels_schema = run.collect_schema(), qrels.collect_schema()
    textual = (pl.String, pl.Categorical, pl.Enum)
    for key in keys:
        left, right = run_schema[key], qrels_schema[key]
        if left == right:
            continue
        if isinstance(left, textual) and isinstance(right, textual):
            common: pl.DataType = pl.String()
        elif left.is_integer() and right.is_integer() and pl.UInt64 not in (left, right):
            common = pl.Int64()
        else:
            msg = (
                f"column {key!r} has dtype {left} in the run but {right} in the qrels; the "
                f"ids must have the same type to match. Cast one side, e.g. "
                f"pl.col({key!r}).cast(pl.String) on both"
            )
            raise ColumnTypeError(msg)
        run = run.with_columns(pl.col(key).cast(common))
        qrels = qrels.with_columns(pl.col(key).cast(common))
    return run, qrels


def _shown_ids(ids: pl.Series) -> str:
    shown = ", ".join(repr(value) for value in ids.head(_COVERAGE_EXAMPLES).to_list())
    return f"e.g. {shown}" + (", ..." if ids.len() > _COVERAGE_EXAMPLES else "")


def _warn_coverage(run: pl.LazyFrame, qrels: pl.LazyFrame, query: str) -> None:
    """Warn once when some run queries have no judgments or some judged queries no run rows.

    Only queries with both are evaluated (as trec_eval does); a partial match is usually ids
    written differently on the two sides (``301`` vs ``q301``), so it is said, not silent.
    """
    run_ids, judged_ids = pl.collect_all(
        [
            run.select(pl.col(query).unique().sort()).drop_nulls(),
            qrels.select(pl.col(query).unique().sort()).drop_nulls(),
        ]
    )
    run_q, judged_q = run_ids[query], judged_ids[query]
    unjudged = run_q.filter(~run_q.is_in(judged_q.implode()))
    unretrieved = judged_q.filter(~judged_q.is_in(run_q.implode()))
    if unjudged.len() == 0 and unretrieved.len() == 0:
        return
    if unjudged.len() == run_q.len():
        # No query in common: evaluate says so itself (EmptyEvaluationWarning, or the
        # command line's error); a second message would only repeat it.
        return
    parts = []
    if unjudged.len():
        parts.append(
            f"{unjudged.len()} of {run_q.len()} run queries have no judgments "
            f"({_shown_ids(unjudged)}) and are not evaluated"
        )
    if unretrieved.len():
        parts.append(
            f"{unretrieved.len()} of {judged_q.len()} judged queries have no run rows "
            f"({_shown_ids(unretrieved)}) and are skipped (missing_queries='zero' scores them 0)"
        )
    msg = (
        f"query ids of the run and the qrels differ in {query!r}: "
        + "; ".join(parts)
        + "; check that both use the same query ids"
    )
    warn_at(msg, QueryCoverageWarning)


def join_run_qrels(
    run: pl.DataFrame | pl.LazyFrame,
    qrels: pl.DataFrame | pl.LazyFrame,
    *,
    by: str | Sequence[str] | None = None,
    query: str = "query",
    item: str = "item",
    score: str = "score",
    relevance: str = "relevance",
) -> pl.LazyFrame:
    """Full outer join of a run ``(query, item, score)`` and judgments ``(query, item, relevance)``.

    Judged rows missing from the run get a null score (judged, not retrieved); retrieved rows
    missing from the judgments get a null relevance (unjudged). Every column of the run is
    kept (null on judged-but-unretrieved rows); of the qrels only ``relevance`` is added.

    Parameters
    ----------
    run
        The run(s): query, item, score and any other columns (pandas and Arrow tables too).
    qrels
        The judgments: query, item, relevance (other columns are dropped).
    by
        The run's system column(s) when it holds several runs (e.g. ``"system"``). The qrels
        are shared: each system is joined with all of them, exactly as if each system were
        joined on its own, so each system's judged-but-unretrieved rows carry its name.
    query, item, score, relevance
        Column names.

    Returns
    -------
    LazyFrame
        The run's columns, then ``relevance``; with diversity qrels (a ``subtopic`` column, see
        :func:`read_trec_qrels`) still one row per (query, item), ``relevance`` the item's
        largest judgment and ``subtopics`` its positive subtopic judgments (a list of
        ``{subtopic, relevance}``), which the intent-aware metrics (``alpha_ndcg@k`` ...) read.

    Raises
    ------
    ColumnNotFoundError, ColumnTypeError
        A column is missing, or the query or item ids have different dtypes in the run and the
        qrels. Categorical/Enum and String ids are matched as strings, integers of different
        widths as Int64; other pairs (Int64 vs String) are refused, not cast.
    InvalidOptionError
        The run already has a relevance column.

    Warns
    -----
    QueryCoverageWarning
        Once, when some run queries have no judgments or some judged queries have no run rows,
        with both counts and a few example ids; the queries that have both are evaluated.
        Checking this reads the query ids of both inputs once, when this is called. When no
        query is in common, ``evaluate`` says so instead (nothing can be evaluated).

    Examples
    --------
    >>> import polars as pl
    >>> run = pl.DataFrame({"query": ["q"], "item": ["a"], "score": [1.0]})
    >>> qrels = pl.DataFrame({"query": ["q", "q"], "item": ["a", "b"], "relevance": [1, 2]})
    >>> join_run_qrels(run, qrels).collect().sort("item")
    shape: (2, 4)
    ┌───────┬──────┬───────┬───────────┐
    │ query ┆ item ┆ score ┆ relevance │
    │ ---   ┆ ---  ┆ ---   ┆ ---       │
    │ str   ┆ str  ┆ f64   ┆ i64       │
    ╞═══════╪══════╪═══════╪═══════════╡
    │ q     ┆ a    ┆ 1.0   ┆ 1         │
    │ q     ┆ b    ┆ null  ┆ 2         │
    └───────┴──────┴───────┴───────────┘
    """
    columns = make_columns(query=query, item=item, score=score, relevance=relevance, by=by)
    run_lf, qrels_lf = as_polars(run, "run").lazy(), as_polars(qrels, "qrels").lazy()
    run_schema = run_lf.collect_schema()
    check_schema(run_schema, columns, need_relevance=False)
    check_schema(qrels_lf.collect_schema(), replace(columns, by=()), need_score=False)
    if relevance in run_schema:
        msg = (
            f"the run already has a column {relevance!r} (option relevance=); the judgments "
            "come from the qrels: drop or rename it in the run"
        )
        raise InvalidOptionError(msg)
    run_lf, qrels_lf = _key_dtypes(run_lf, qrels_lf, [query, item])
    added = [relevance]
    if SUBTOPIC in qrels_lf.collect_schema():
        qrels_lf = subtopic_judgments(qrels_lf, query, item, relevance)
        added.append(SUBTOPICS)
    else:
        qrels_lf = qrels_lf.select(query, item, relevance)
    _warn_coverage(run_lf, qrels_lf, query)
    keys = [query, item]
    if columns.by:
        # Every system meets every judgment, as if each were joined on its own.
        systems = run_lf.select(columns.by).unique()
        qrels_lf = systems.join(qrels_lf, how="cross")
        keys = [*columns.by, *keys]
    joined = run_lf.join(qrels_lf, on=keys, how="full", coalesce=True, nulls_equal=False)
    return joined.select(*run_schema.names(), *added)


def subtopic_judgments(
    qrels: pl.LazyFrame, query: str = "query", item: str = "item", relevance: str = "relevance"
) -> pl.LazyFrame:
    """Diversity qrels ``(query, subtopic, item, relevance)`` as one row per (query, item).

    ``relevance`` becomes the item's largest judgment over its subtopics (a document relevant
    to any subtopic is relevant to the query, as ndeval's own MAP reads it) and ``subtopics``
    the list of its positive judgments ``{subtopic, relevance}``, sorted by subtopic.
    """
    positive = pl.struct(
        pl.col(SUBTOPIC).cast(pl.String).alias("subtopic"),
        pl.col(relevance).cast(pl.Int64).alias("relevance"),
    ).filter(pl.col(relevance) > 0)
    return qrels.group_by(query, item).agg(
        pl.col(relevance).max().cast(pl.Int64).alias(relevance),
        positive.sort_by(pl.col(SUBTOPIC).filter(pl.col(relevance) > 0)).alias(SUBTOPICS),
    )
