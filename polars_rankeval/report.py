"""The paper table of a comparison: systems × metrics, means and significance marks.

``rke.report(rke.compare(...))`` renders Markdown, LaTeX or HTML. Each system gets a letter;
a superscript letter on a value marks a significant improvement over the system with that
letter on that metric (ranx's Report does the same). The best mean of each metric is bold. A
caption line names the test, the correction and the level.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Literal

import polars as pl

from polars_rankeval._columns import as_polars
from polars_rankeval._options import check_choice
from polars_rankeval.compare import CORRECTION_NAMES, TEST_NAMES
from polars_rankeval.errors import ColumnNotFoundError, InvalidOptionError

Format = Literal["markdown", "latex", "html"]
_NEEDED = (
    *("metric", "baseline", "system", "baseline_mean", "system_mean", "delta"),
    *("significant", "test", "correction", "alpha", "n_queries"),
)


@dataclass(frozen=True)
class Report:
    """A rendered table; ``str()`` gives the text, and notebooks display it."""

    text: str
    format: Format

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text

    def _repr_markdown_(self) -> str | None:
        return self.text if self.format == "markdown" else None

    def _repr_html_(self) -> str | None:
        return self.text if self.format == "html" else None

    def _repr_latex_(self) -> str | None:
        return self.text if self.format == "latex" else None


@dataclass(frozen=True)
class _Cell:
    value: float
    marks: str
    best: bool


def _letters(count: int) -> list[str]:
    alphabet = "abcdefghijklmnopqrstuvwxyz"
    return [alphabet[i % 26] * (1 + i // 26) for i in range(count)]


def _table(comparison: pl.DataFrame) -> tuple[list[str], list[str], dict[tuple[str, str], _Cell]]:
    metrics = comparison["metric"].unique(maintain_order=True).to_list()
    pairs = comparison.select("baseline", "system").rows()
    systems = list(dict.fromkeys(name for pair in pairs for name in pair))
    letter = dict(zip(systems, _letters(len(systems)), strict=True))
    means: dict[tuple[str, str], float] = {}
    marks: dict[tuple[str, str], set[str]] = {}
    for row in comparison.iter_rows(named=True):
        metric = row["metric"]
        means.setdefault((row["baseline"], metric), row["baseline_mean"])
        means.setdefault((row["system"], metric), row["system_mean"])
        if row["significant"] and row["delta"] != 0:
            winner, loser = (
                (row["system"], row["baseline"])
                if row["delta"] > 0
                else (row["baseline"], row["system"])
            )
            marks.setdefault((winner, metric), set()).add(letter[loser])
    cells = {}
    for metric in metrics:
        values = [means[(s, metric)] for s in systems if (s, metric) in means]
        finite = [v for v in values if v is not None and not math.isnan(v)]
        top = max(finite) if finite else math.nan
        for system in systems:
            if (system, metric) in means:
                value = means[(system, metric)]
                cells[(system, metric)] = _Cell(
                    value, "".join(sorted(marks.get((system, metric), set()))), value == top
                )
    named = [f"({letter[system]}) {system}" for system in systems]
    return named, metrics, {(named[systems.index(s)], m): c for (s, m), c in cells.items()}


def _caption(comparison: pl.DataFrame) -> str:
    first = comparison.row(0, named=True)
    test = TEST_NAMES.get(first["test"], first["test"])
    correction = CORRECTION_NAMES.get(first["correction"])
    adjusted = f", {correction}-adjusted p-values" if correction else ""
    fewest, most = int(comparison["n_queries"].min()), int(comparison["n_queries"].max())  # type: ignore[arg-type]
    n = f"{fewest} queries" if fewest == most else f"{fewest}-{most} queries"
    return (
        f"Means over {n}. A superscript letter marks a significant improvement over the "
        f"system with that letter ({test}{adjusted}, alpha = {first['alpha']:g}). "
        "Best mean in bold."
    )


@dataclass(frozen=True)
class _Grid:
    """The table to render: row labels, metric names and formatted cells per row."""

    systems: list[str]
    metrics: list[str]
    rows: list[list[str]]
    caption: str


def _grid(
    systems: list[str],
    metrics: list[str],
    cells: dict[tuple[str, str], _Cell],
    caption: str,
    *,
    digits: int,
    style: tuple[str, str],
) -> _Grid:
    """Format every cell: ``style`` wraps the best value and the marks (``{}`` placeholders)."""
    bold, marked = style
    rows = []
    for system in systems:
        shown = []
        for metric in metrics:
            cell = cells.get((system, metric))
            if cell is None:
                shown.append("")
                continue
            text = f"{cell.value:.{digits}f}"
            text = bold.format(text) if cell.best else text
            shown.append(text + (marked.format(cell.marks) if cell.marks else ""))
        rows.append(shown)
    return _Grid(systems, metrics, rows, caption)


def _markdown(grid: _Grid) -> str:
    lines = [
        "| system | " + " | ".join(grid.metrics) + " |",
        "| --- | " + " | ".join("---:" for _ in grid.metrics) + " |",
    ]
    lines += [
        f"| {system} | " + " | ".join(row) + " |"
        for system, row in zip(grid.systems, grid.rows, strict=True)
    ]
    return "\n".join([*lines, "", f"*{grid.caption}*"])


def _latex_escape(text: str) -> str:
    for char, escaped in (
        ("\\", r"\textbackslash{}"),
        ("_", r"\_"),
        ("&", r"\&"),
        ("%", r"\%"),
        ("#", r"\#"),
        ("$", r"\$"),
        ("{", r"\{"),
        ("}", r"\}"),
    ):
        text = text.replace(char, escaped)
    return text


def _latex(grid: _Grid) -> str:
    lines = [
        r"\begin{table}",
        r"\centering",
        r"\begin{tabular}{l" + "r" * len(grid.metrics) + "}",
        r"\toprule",
        "system & " + " & ".join(_latex_escape(m) for m in grid.metrics) + r" \\",
        r"\midrule",
    ]
    lines += [
        _latex_escape(system) + " & " + " & ".join(row) + r" \\"
        for system, row in zip(grid.systems, grid.rows, strict=True)
    ]
    lines += [
        r"\bottomrule",
        r"\end{tabular}",
        rf"\caption{{{_latex_escape(grid.caption)}}}",
        r"\end{table}",
    ]
    return "\n".join(lines)


def _html(grid: _Grid) -> str:
    head = "".join(f"<th>{html.escape(m)}</th>" for m in grid.metrics)
    rows = [
        '<tr><th style="text-align:left">'
        + html.escape(system)
        + "</th>"
        + "".join(f'<td style="text-align:right">{cell}</td>' for cell in row)
        + "</tr>"
        for system, row in zip(grid.systems, grid.rows, strict=True)
    ]
    return (
        f"<table><caption>{html.escape(grid.caption)}</caption>"
        f"<thead><tr><th>system</th>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


# How each format writes the best value (bold) and the significance letters (superscript).
_STYLES = {
    "markdown": ("**{}**", "<sup>{}</sup>"),
    "latex": (r"\textbf{{{}}}", "$^{{{}}}$"),
    "html": ("<b>{}</b>", "<sup>{}</sup>"),
}
_RENDERERS = {"markdown": _markdown, "latex": _latex, "html": _html}


def report(comparison: pl.DataFrame, format: Format = "markdown", *, digits: int = 4) -> Report:
    """Render the output of :func:`~polars_rankeval.compare` as a paper table.

    Parameters
    ----------
    comparison
        The frame ``compare`` or ``compare_per_query`` returned.
    format
        ``"markdown"`` (default), ``"latex"`` (booktabs) or ``"html"``.
    digits
        Decimals shown.

    Returns
    -------
    Report
        ``str(report)`` is the text; in a notebook it renders as a table.

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
    *Means over 4 queries. A superscript letter marks a significant improvement over the system with that letter (paired t-test, Holm-adjusted p-values, alpha = 0.05). Best mean in bold.*
    """  # noqa: E501
    frame = as_polars(comparison, "comparison")
    if isinstance(frame, pl.LazyFrame):
        frame = frame.collect()
    missing = [name for name in _NEEDED if name not in frame.columns]
    if missing:
        msg = f"report() needs the output of compare(); columns missing: {missing}"
        raise ColumnNotFoundError(msg)
    if frame.height == 0:
        msg = "report() got an empty comparison: nothing to render"
        raise InvalidOptionError(msg)
    chosen: Format = check_choice("format", format, ("markdown", "latex", "html"))
    if isinstance(digits, bool) or not isinstance(digits, int) or not 0 <= digits <= 12:
        msg = f"option digits= must be an int from 0 to 12, got {digits!r}"
        raise InvalidOptionError(msg)
    systems, metrics, cells = _table(frame)
    grid = _grid(systems, metrics, cells, _caption(frame), digits=digits, style=_STYLES[chosen])
    return Report(_RENDERERS[chosen](grid), chosen)
