"""What a check found, and its text, Markdown and JSON summaries."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from polars_rankeval._engine.vocabulary import BASELINE_VALUE, VALUE
from polars_rankeval.comparison._report import _markdown_escape
from polars_rankeval.comparison._ties import tie_notes


@dataclass
class CheckResult:
    """What :func:`check` found: ``passed``, a row per metric in ``table``, and ``reasons``.

    ``table`` columns: ``metric``, ``higher_is_better``, ``baseline`` and ``candidate`` (each
    side's value as :func:`polars_rankeval.evaluate` gives it, over its own queries),
    ``delta`` (paired, over the queries both have), ``ci_low``/``ci_high`` (its interval;
    for a geometric mean, the interval of the candidate/baseline ratio, ``interval_scale``
    ``"ratio"``), ``p_value``, ``p_adjusted``, ``significant``, ``wins``/``ties``/``losses``,
    ``queries``, ``verdict`` (``"pass"``/``"fail"``) and ``reasons``; ``tie_range`` (how far
    the order of tied scores can move Δ, from the sides that are logs; null for per-query
    tables) and ``tie_flip`` (Δ's sign or significance could change within it), which
    :attr:`notes` turns into sentences: notes, not failures.
    """

    passed: bool
    table: pl.DataFrame
    reasons: list[str]
    queries: dict[str, int]
    settings: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return self.text()

    def _repr_markdown_(self) -> str:
        """A notebook shows the Markdown summary."""
        return self.markdown()

    def text(self) -> str:
        """A short human summary: the verdict, one line per metric, the query counts."""
        failed = self.table.filter(pl.col("verdict") == "fail").height
        why = [f"{failed} of {self.table.height} metrics failed"] if failed else []
        why += ["missing queries"] if self.queries_failed else []
        head = "PASS" if self.passed else f"FAIL ({', '.join(why)})"
        rows = [self._header(), *self._cells()]
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = [f"rank-eval check: {head}"]
        lines += [
            "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
        ]
        lines.append(self._queries_line())
        lines += [f"- {reason}" for reason in self.reasons]
        lines += [f"- note: {note}" for note in self.notes]
        return "\n".join(lines) + "\n"

    def markdown(self) -> str:
        """The summary as Markdown (for ``$GITHUB_STEP_SUMMARY``)."""
        verdict = "passed" if self.passed else "failed"
        icon = "✅" if self.passed else "❌"
        lines = [f"### {icon} rank-eval check {verdict}", ""]
        lines.append("| " + " | ".join(self._header()) + " |")
        lines.append("|" + "|".join(" --- " for _ in self._header()) + "|")
        # Metric names come from the columns of the user's files: the report's escaping keeps
        # their HTML and line breaks from forging rows or markup.
        lines += [
            "| " + " | ".join(_markdown_escape(c) for c in row) + " |" for row in self._cells()
        ]
        lines += ["", self._queries_line()]
        if self.reasons:
            lines += ["", *(f"- {_markdown_escape(reason)}" for reason in self.reasons)]
        if self.notes:
            lines += ["", *(f"- note: {_markdown_escape(note)}" for note in self.notes)]
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        """Everything as plain Python values (``--format json``)."""
        return {
            "passed": self.passed,
            "reasons": list(self.reasons),
            "notes": self.notes,
            "queries": dict(self.queries),
            "settings": dict(self.settings),
            "metrics": self.table.to_dicts(),
        }

    def json(self) -> str:
        """:meth:`to_dict` as JSON (NaN written as null)."""
        return json.dumps(_no_nan(self.to_dict()), indent=2) + "\n"

    @property
    def notes(self) -> list[str]:
        """Remarks that break no rule: where the order of tied scores could flip a verdict."""
        return tie_notes(self.table, system=None)

    @property
    def queries_failed(self) -> bool:
        """Whether the candidate misses baseline queries that had to be there."""
        return any(reason.startswith("missing queries") for reason in self.reasons)

    def _queries_line(self) -> str:
        q = self.queries
        return (
            f"queries: {q['shared']} shared, {q['only_baseline']} only in the baseline, "
            f"{q['only_candidate']} only in the candidate (Δ, interval and p: over the shared ones)"
        )

    def _header(self) -> list[str]:
        level = 1 - float(self.settings.get("alpha", 0.05))
        correction = self.settings.get("correction")
        p = f"p ({correction})" if correction else "p"
        return ["metric", "baseline", "candidate", f"Δ [{level:.0%} CI]", p, "W/T/L", "verdict"]

    def _cells(self) -> list[list[str]]:
        out = []
        for row in self.table.iter_rows(named=True):
            if row["interval_scale"] == "ratio":
                interval = f"×[{_num(row['ci_low'])}, {_num(row['ci_high'])}]"
            else:
                interval = f"[{_num(row['ci_low'], sign=True)}, {_num(row['ci_high'], sign=True)}]"
            p = row["p_adjusted"] if row["p_adjusted"] is not None else row["p_value"]
            out.append(
                [
                    row["metric"] + ("" if row["higher_is_better"] else " (lower is better)"),
                    _num(row[BASELINE_VALUE]),
                    _num(row[VALUE]),
                    f"{_num(row['delta'], sign=True)} {interval}",
                    _p(p),
                    f"{row['wins']}/{row['ties']}/{row['losses']}",
                    row["verdict"].upper(),
                ]
            )
        return out


def _num(value: object, *, sign: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:+.4f}" if sign else f"{value:.4f}"


def _p(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    assert isinstance(value, float | int)
    return "<0.0001" if value < 1e-4 else f"{value:.4f}"


def _no_nan(value: Any) -> Any:
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_no_nan(v) for v in value]
    return value
