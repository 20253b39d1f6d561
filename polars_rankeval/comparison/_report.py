"""The paper table of a comparison: systems × metrics, summaries and significance marks.

``rke.report(rke.compare(...))`` renders Markdown, LaTeX or HTML. Each system gets a letter
(a number past 26 systems); a superscript letter on a value marks a significant improvement
over the system with that letter on that metric (ranx's Report does the same). "Improvement"
and "best" follow each metric's direction: for ``frp`` or ``mean_rank`` the lower value is
bold and marked. Every value is the system's own summary over all the queries it has a value
for (``baseline_overall`` / ``system_overall`` of the comparison: what ``evaluate`` prints),
never a mean restricted to one pair's shared queries. A caption names the summary, the query
count, the test, the correction and the level.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Literal

import polars as pl

from polars_rankeval._engine.columns import as_polars
from polars_rankeval._engine.options import check_choice
from polars_rankeval._engine.vocabulary import DELTA, METRIC, N_QUERIES, renamed
from polars_rankeval.comparison._compare import CORRECTION_NAMES, TEST_NAMES
from polars_rankeval.comparison._pairing import display_order, system_columns, with_pair_names
from polars_rankeval.comparison._ties import tie_caption
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    ColumnValueError,
    InvalidOptionError,
)
from polars_rankeval.io import write_atomically

Format = Literal["markdown", "latex", "html"]
_NEEDED = (
    *(METRIC, DELTA, "significant"),
    *("higher_is_better", "summary", "baseline_overall", "system_overall"),
    *("baseline_queries", "system_queries", N_QUERIES, "test", "correction", "alpha"),
)
#: Past this many systems the marks are numbers separated by commas: letters would need
#: ``aa``, and ``aab`` could be ``a`` + ``ab`` or ``aa`` + ``b``.
_LETTERS = 26
_SUMMARY_NAMES = {"gm": "geometric mean", "nanmean": "mean over the queries where it is defined"}


class Report(str):
    """A rendered table: a ``str`` (write it, print it), displayed as a table in notebooks.

    Attributes
    ----------
    text
        The table as a plain ``str``.
    format
        ``"markdown"``, ``"latex"`` or ``"html"``.

    Examples
    --------
    >>> table = Report("| a |", "markdown")
    >>> table == "| a |", table.format, table._repr_html_() is None
    (True, 'markdown', True)
    """

    _format: Format

    def __new__(cls, text: str, format: Format) -> Report:
        """A report of ``text`` in ``format``."""
        made = super().__new__(cls, text)
        made._format = format
        return made

    @property
    def text(self) -> str:
        """The table as a plain ``str``."""
        return str.__str__(self)

    @property  # str.format is a method; on a Report the name says which format it is
    def format(self) -> Format:  # type: ignore[override]
        """``"markdown"``, ``"latex"`` or ``"html"``."""
        return self._format

    def __repr__(self) -> str:
        return self.text

    def __reduce__(self) -> tuple[type[Report], tuple[str, Format]]:
        return (Report, (self.text, self._format))

    def _repr_markdown_(self) -> str | None:
        return self.text if self._format == "markdown" else None

    def _repr_html_(self) -> str | None:
        return self.text if self._format == "html" else None

    def _repr_latex_(self) -> str | None:
        return self.text if self._format == "latex" else None

    def document(self) -> str:
        """An HTML table as a complete, minimal page (the table itself is a fragment).

        ``text`` stays the bare ``<table>`` to embed; this page, with a character set and a
        little style, is what :meth:`save` writes to an ``.html`` file, so the file opened on
        its own shows a readable table.

        Examples
        --------
        >>> page = Report("<table></table>", "html").document()
        >>> page.startswith("<!DOCTYPE html>"), "<table></table>" in page
        (True, True)
        """
        if self._format != "html":
            msg = f"Report.document() makes an HTML page; this report is {self._format}"
            raise InvalidOptionError(msg)
        return (
            '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            "<title>Comparison</title>\n"
            f"<style>{_PAGE_STYLE}</style>\n</head>\n<body>\n{self.text}\n</body>\n</html>\n"
        )

    def text_for(self, path: str | PathLike[str]) -> str:
        """What a file at ``path`` holds: the page for an HTML table in ``.html``/``.htm``."""
        if self._format == "html" and Path(path).suffix.lower() in (".html", ".htm"):
            return self.document()
        return self.text if self.text.endswith("\n") else self.text + "\n"

    def save(self, path: str | PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the table to ``path`` (UTF-8, ending with a newline) and return the path.

        An existing file is kept unless ``overwrite=True``: a table is often written next to
        the log or the paper it came from. An HTML table saved as ``.html`` or ``.htm`` is
        written as a complete page (:meth:`document`); any other suffix gets the fragment.
        """
        text = self.text_for(path)
        # whole or not at all: a full disk leaves no empty or half-written table
        return write_atomically(
            path,
            lambda out: out.write_text(text, encoding="utf-8"),
            overwrite=overwrite,
            who="report.save()",
        )


# The page around a saved HTML table: readable on its own, nothing fetched.
_PAGE_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2em}"
    "table{border-collapse:collapse}"
    "th,td{padding:.3em .7em;border-bottom:1px solid #ddd}"
    "thead th{border-bottom:2px solid #333}"
    "caption{caption-side:bottom;text-align:left;font-size:.9em;color:#444;max-width:50em;"
    "padding-top:.6em}"
)


@dataclass(frozen=True)
class _Cell:
    value: float | None
    marks: list[str]
    best: bool


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _labels(count: int) -> list[str]:
    """``a``, ``b``, ... for up to 26 systems; ``1``, ``2``, ... past that."""
    if count <= _LETTERS:
        return list("abcdefghijklmnopqrstuvwxyz"[:count])
    return [str(i) for i in range(1, count + 1)]


def _check_types(frame: pl.DataFrame) -> None:
    """Refuse columns whose dtype would make the table wrong (a String "True" is truthy)."""
    checks = (
        (("higher_is_better", "significant"), lambda d: d in (pl.Boolean, pl.Null), "Boolean"),
        (
            ("delta", "baseline_overall", "system_overall", "baseline_queries", "system_queries"),
            lambda d: d.is_numeric() or d == pl.Null,
            "numeric",
        ),
    )
    for columns, fits, wanted in checks:
        for column in columns:
            dtype = frame.schema[column]
            if not fits(dtype):
                msg = f"report(): column {column!r} must be {wanted}, got {dtype}"
                raise ColumnTypeError(msg)


@dataclass(frozen=True)
class _Table:
    """What the table shows, format-free: systems in order, metrics, cells and caption parts."""

    systems: list[str]
    labels: list[str]
    metrics: list[str]
    cells: dict[tuple[str, str], _Cell]
    lower: list[str]
    caption: str


def _directions(frame: pl.DataFrame, metrics: list[str]) -> dict[str, bool]:
    found = dict(frame.group_by("metric").agg(pl.col("higher_is_better").unique()).iter_rows())
    directions: dict[str, bool] = {}
    for metric in metrics:
        values = found[metric]
        if None in values or not values:
            msg = (
                f"report(): metric {metric!r} has no direction (higher_is_better is null); "
                "bold and marks need to know which way is better"
            )
            raise ColumnValueError(msg)
        if len(values) > 1:
            msg = f"report(): metric {metric!r} has both directions in column 'higher_is_better'"
            raise ColumnValueError(msg)
        directions[metric] = bool(values[0])
    return directions


def _same(a: object, b: object) -> bool:
    if a is None or b is None:
        return a is None and b is None
    assert isinstance(a, (int, float))
    assert isinstance(b, (int, float))
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)


def _overall(frame: pl.DataFrame) -> tuple[dict[tuple[str, str], float | None], list[int]]:
    """Each (system, metric) value from ``*_overall``, checked equal in every row it appears."""
    values: dict[tuple[str, str], float | None] = {}
    counts: list[int] = []
    for row in frame.iter_rows(named=True):
        for side in ("baseline", "system"):
            key = (row[side], row["metric"])
            value = row[f"{side}_overall"]
            if key in values and not _same(values[key], value):
                msg = (
                    f"report(): system {key[0]!r} has two values of {f'{side}_overall'!r} for "
                    f"metric {key[1]!r} ({values[key]} and {value}); a comparison gives each "
                    "system one summary over all its queries: are two comparisons concatenated?"
                )
                raise ColumnValueError(msg)
            values[key] = value
            if row[f"{side}_queries"] is not None:
                counts.append(int(row[f"{side}_queries"]))
    return values, counts


def _order(
    systems: list[str],
    first: str,
    *,
    sort: str | Sequence[str] | None,
    metrics: list[str],
    values: dict[tuple[str, str], float | None],
    directions: dict[str, bool],
) -> list[str]:
    if sort is None:
        # The first baseline, then the others in the order the charts use too (case-folded).
        return [first, *display_order(s for s in systems if s != first)]
    if isinstance(sort, str):
        if sort not in metrics:
            msg = (
                f"option sort= must be None, a metric of the comparison (best first) or a list "
                f"of its systems; got {sort!r}; metrics: {metrics}"
            )
            raise InvalidOptionError(msg)
        sign = -1.0 if directions[sort] else 1.0

        def key(system: str) -> tuple[bool, float, str, str]:
            value = values.get((system, sort))
            missing = not _is_number(value)
            shown = 0.0 if missing else sign * float(value)  # type: ignore[arg-type]
            return (missing, shown, system.casefold(), system)

        return sorted(systems, key=key)
    given = list(sort)
    if any(not isinstance(s, str) for s in given):
        msg = f"option sort= as a list must hold system names (str), got {given!r}"
        raise InvalidOptionError(msg)
    unknown = [s for s in given if s not in systems]
    left_out = [s for s in systems if s not in given]
    repeated = sorted({s for s in given if given.count(s) > 1})
    if unknown or left_out or repeated:
        problems = [
            *([f"unknown {unknown}"] if unknown else []),
            *([f"missing {left_out}"] if left_out else []),
            *([f"repeated {repeated}"] if repeated else []),
        ]
        msg = (
            f"option sort= must list every system of the comparison once ({'; '.join(problems)}); "
            f"systems: {sorted(systems)}"
        )
        raise InvalidOptionError(msg)
    return given


def _table(frame: pl.DataFrame, sort: str | Sequence[str] | None) -> _Table:
    metrics = frame["metric"].cast(pl.String).unique(maintain_order=True).to_list()
    directions = _directions(frame, metrics)
    values, counts = _overall(frame)
    seen = [name for pair in frame.select("baseline", "system").rows() for name in pair]
    systems = _order(
        list(dict.fromkeys(seen)),
        seen[0],
        sort=sort,
        metrics=metrics,
        values=values,
        directions=directions,
    )
    labels = _labels(len(systems))
    label = dict(zip(systems, labels, strict=True))
    marks: dict[tuple[str, str], set[str]] = {}
    for row in frame.iter_rows(named=True):
        delta = row["delta"]
        # A null significant (a hand-built frame) is not significant; a zero delta names no
        # winner.
        if not row["significant"] or not _is_number(delta) or delta == 0:
            continue
        system_better = (delta > 0) == directions[row["metric"]]
        winner, loser = (
            (row["system"], row["baseline"]) if system_better else (row["baseline"], row["system"])
        )
        marks.setdefault((winner, row["metric"]), set()).add(label[loser])
    cells: dict[tuple[str, str], _Cell] = {}
    for metric in metrics:
        finite = [float(v) for (s, m), v in values.items() if m == metric and _is_number(v)]  # type: ignore[arg-type]
        top = (max if directions[metric] else min)(finite) if finite else math.nan
        for system in systems:
            if (system, metric) not in values:
                continue
            value = values[(system, metric)]
            shown = float(value) if _is_number(value) else None  # type: ignore[arg-type]
            found = sorted(marks.get((system, metric), set()), key=labels.index)
            cells[(system, metric)] = _Cell(shown, found, shown is not None and shown == top)
    lower = [metric for metric in metrics if not directions[metric]]
    return _Table(systems, labels, metrics, cells, lower, _caption(frame, metrics, lower, counts))


def _range(counts: Sequence[int], unit: str) -> str:
    if not counts:
        return f"no {unit}"
    fewest, most = min(counts), max(counts)
    if fewest == most:
        return f"{most} {unit if most != 1 else unit.rstrip('s')}"
    return f"{fewest} to {most} {unit}"


def _caption(frame: pl.DataFrame, metrics: list[str], lower: list[str], counts: list[int]) -> str:
    summaries = dict(frame.select("metric", "summary").unique(keep="first").iter_rows())
    special = {
        name: [m for m in metrics if summaries.get(m) == kind]
        for kind, name in _SUMMARY_NAMES.items()
    }
    notes = [f"{name} for {', '.join(ms)}" for name, ms in special.items() if ms]
    summary = "mean" + (f" ({'; '.join(notes)})" if notes else "")
    first = frame.row(0, named=True)
    test = TEST_NAMES.get(first["test"], str(first["test"]))
    correction = CORRECTION_NAMES.get(first["correction"])
    adjusted = f", {correction}-adjusted p-values" if correction else ""
    alpha = f", alpha = {first['alpha']:g}" if _is_number(first["alpha"]) else ""
    paired = [int(n) for n in frame["n_queries"].drop_nulls().to_list()]
    n_systems = len(set(frame["baseline"].to_list()) | set(frame["system"].to_list()))
    mark = "number" if n_systems > _LETTERS else "letter"
    direction = f" Lower is better for {', '.join(lower)}." if lower else ""
    assumed = ""
    if "direction_source" in frame.columns:
        guessed = (
            frame.filter(pl.col("direction_source") == "assumed")["metric"]
            .unique(maintain_order=True)
            .to_list()
        )
        if guessed:
            assumed = f" Assumed higher-is-better (not a known metric): {', '.join(guessed)}."
    return (
        f"Each system's {summary} over all the queries it has a value for "
        f"({_range(counts, 'queries')}). A superscript {mark} marks a significant improvement "
        f"over the system with that {mark} ({test} on the paired queries, "
        f"{_range(paired, 'queries')}{adjusted}{alpha}). Best value in bold.{direction}{assumed}"
        f"{tie_caption(frame)}"
    )


# ---------------------------------------------------------------------------------------------
# Escaping: every name from the data is text in its format, never markup.
# ---------------------------------------------------------------------------------------------

# Markdown: HTML entities for < > & (renderers pass raw HTML through), a backslash for the
# characters that start markup anywhere (*, `, [, ], |, \), and for _ only where it can open
# or close emphasis (next to a non-word character): "r_precision" stays readable as it is.
_MARKDOWN = re.compile(r"[\\`*\[\]|]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def _markdown_escape(text: str) -> str:
    r"""Text as a Markdown table cell.

    >>> print(_markdown_escape("<b>a|b</b> _x_ r_precision"))
    &lt;b&gt;a\|b&lt;/b&gt; \_x\_ r_precision
    """
    text = html.escape(" ".join(text.splitlines()), quote=False)
    return _MARKDOWN.sub(lambda found: "\\" + found.group(0), text)


_LATEX = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "_": r"\_",
    "&": r"\&",
    "%": r"\%",
    "#": r"\#",
    "$": r"\$",
    "^": r"\textasciicircum{}",
    "~": r"\textasciitilde{}",
    # OT1 fonts print < > | as other glyphs outside math mode.
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
}
_LATEX_CHARS = re.compile("|".join(re.escape(char) for char in _LATEX))


def _latex_escape(text: str) -> str:
    r"""Text for LaTeX: one pass, so a replacement is never escaped again.

    >>> print(_latex_escape(r"\input{x} 5% a^b~c"))
    \textbackslash{}input\{x\} 5\% a\textasciicircum{}b\textasciitilde{}c
    """
    return _LATEX_CHARS.sub(lambda found: _LATEX[found.group(0)], " ".join(text.splitlines()))


def _html_escape(text: str) -> str:
    return html.escape(text, quote=True)


_STYLES = {
    "markdown": ("**{}**", "<sup>{}</sup>", "–"),
    "latex": (r"\textbf{{{}}}", "$^{{{}}}$", "--"),
    "html": ("<b>{}</b>", "<sup>{}</sup>", "–"),
}
_ESCAPES = {"markdown": _markdown_escape, "latex": _latex_escape, "html": _html_escape}


def _cells(table: _Table, chosen: Format, digits: int) -> list[list[str]]:
    """Format every cell: the value, bold when best, then the marks."""
    bold, marked, missing = _STYLES[chosen]
    separator = "," if len(table.systems) > _LETTERS else ""
    rows = []
    for system in table.systems:
        shown = []
        for metric in table.metrics:
            cell = table.cells.get((system, metric))
            if cell is None:
                shown.append("")
                continue
            if cell.value is None:
                # Null or NaN (a hand-built frame): a dash, never "nan" in a paper.
                text = missing
            else:
                text = f"{cell.value:.{digits}f}"
                text = bold.format(text) if cell.best else text
            shown.append(text + (marked.format(separator.join(cell.marks)) if cell.marks else ""))
        rows.append(shown)
    return rows


def _names(table: _Table, escape: object) -> list[str]:
    assert callable(escape)
    return [
        f"({label}) {escape(system)}"
        for label, system in zip(table.labels, table.systems, strict=True)
    ]


def _markdown(table: _Table, rows: list[list[str]]) -> str:
    names = _names(table, _markdown_escape)
    lines = [
        "| system | " + " | ".join(_markdown_escape(m) for m in table.metrics) + " |",
        "| --- | " + " | ".join("---:" for _ in table.metrics) + " |",
    ]
    lines += [
        f"| {name} | " + " | ".join(row) + " |" for name, row in zip(names, rows, strict=True)
    ]
    return "\n".join([*lines, "", f"*{_markdown_escape(table.caption)}*"])


def _latex(table: _Table, rows: list[list[str]]) -> str:
    names = _names(table, _latex_escape)
    lines = [
        r"% needs \usepackage{booktabs} (\toprule, \midrule, \bottomrule)",
        r"\begin{table}",
        r"\centering",
        r"\begin{tabular}{l" + "r" * len(table.metrics) + "}",
        r"\toprule",
        "system & " + " & ".join(_latex_escape(m) for m in table.metrics) + r" \\",
        r"\midrule",
    ]
    lines += [
        name + " & " + " & ".join(row) + r" \\" for name, row in zip(names, rows, strict=True)
    ]
    lines += [
        r"\bottomrule",
        r"\end{tabular}",
        rf"\caption{{{_latex_escape(table.caption)}}}",
        r"\end{table}",
    ]
    return "\n".join(lines)


def _html(table: _Table, rows: list[list[str]]) -> str:
    names = _names(table, _html_escape)
    head = "".join(f"<th>{_html_escape(m)}</th>" for m in table.metrics)
    body = [
        f'<tr><th style="text-align:left">{name}</th>'
        + "".join(f'<td style="text-align:right">{cell}</td>' for cell in row)
        + "</tr>"
        for name, row in zip(names, rows, strict=True)
    ]
    return (
        f"<table><caption>{_html_escape(table.caption)}</caption>"
        f"<thead><tr><th>system</th>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>"
    )


_RENDERERS = {"markdown": _markdown, "latex": _latex, "html": _html}


@renamed(comparison="data")
def report(
    data: pl.DataFrame,
    format: Format = "markdown",
    *,
    digits: int = 4,
    sort: str | Sequence[str] | None = None,
) -> Report:
    r"""Render the output of :func:`~polars_rankeval.compare` as a paper table.

    Each cell is the system's summary of the metric over all the queries it has a value for
    (the comparison's ``baseline_overall`` / ``system_overall``: the mean, or the geometric
    mean for ``gm_*`` metrics, as :func:`~polars_rankeval.evaluate` gives it). The best value
    of each metric is bold, and a superscript letter marks a significant improvement over the
    system with that letter; both follow the metric's direction (``higher_is_better``), so for
    ``frp`` the lowest value is bold. Past 26 systems the marks are numbers separated by
    commas. Names are escaped for the format: a system name is always text, never markup.

    Parameters
    ----------
    data
        The frame ``compare`` or ``compare_per_query`` returned (systems named by their
        ``by`` and ``baseline_<by>`` columns; several ``by`` columns are shown joined with
        ``" / "``).
    format
        ``"markdown"`` (default), ``"latex"`` (needs ``\usepackage{booktabs}``; the output's
        first line is a comment saying so) or ``"html"``.
    digits
        Decimals shown.
    sort
        The order of the rows. None (default): the baseline (the first row's) first, then the
        other systems by name, ignoring case. A metric name, e.g. ``"map"``: best first by
        that metric's direction (systems without a value last). A list of every system's name:
        that order. Letters follow the rows' order.

    Returns
    -------
    Report
        A ``str`` (``open(path, "w").write(report)`` works; ``report.save(path)`` refuses to
        overwrite) that notebooks display as a table.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> per_query = pl.DataFrame(
    ...     {
    ...         "system": ["a"] * 4 + ["b"] * 4,
    ...         "query": [1, 2, 3, 4] * 2,
    ...         "map": [0.2, 0.4, 0.1, 0.3, 0.4, 0.5, 0.3, 0.6],
    ...     }
    ... )
    >>> print(rke.report(rke.compare_per_query(per_query, by="system", baseline="a")))
    | system | map |
    | --- | ---: |
    | (a) a | 0.2500 |
    | (b) b | **0.4500**<sup>a</sup> |
    <BLANKLINE>
    *Each system's mean over all the queries it has a value for (4 queries). A superscript letter marks a significant improvement over the system with that letter (paired t-test on the paired queries, 4 queries, Holm-adjusted p-values, alpha = 0.05). Best value in bold.*
    """  # noqa: E501
    frame = as_polars(data, "data")
    if isinstance(frame, pl.LazyFrame):
        frame = frame.collect()
    missing = [name for name in _NEEDED if name not in frame.columns]
    if not system_columns(frame.columns):
        missing.append("the systems' by columns and their baseline_<by> columns")
    if missing:
        msg = (
            f"report() needs the output of compare(); columns missing: {missing} "
            f"(columns present: {frame.columns})"
        )
        raise ColumnNotFoundError(msg)
    if frame.height == 0:
        msg = "report() got an empty comparison: nothing to render"
        raise InvalidOptionError(msg)
    chosen: Format = check_choice("format", format, ("markdown", "latex", "html"))
    if isinstance(digits, bool) or not isinstance(digits, int) or not 0 <= digits <= 12:
        msg = f"option digits= must be an int from 0 to 12, got {digits!r}"
        raise InvalidOptionError(msg)
    _check_types(frame)
    # each row's two systems by name (their by values, joined for display), under the names
    # the table code reads
    frame = with_pair_names(frame)
    table = _table(frame, sort)
    return Report(_RENDERERS[chosen](table, _cells(table, chosen, digits)), chosen)
