"""The answer of ``explain``: the two numbers, each setting's share, the queries that move most."""

from __future__ import annotations

import math
from dataclasses import dataclass

import polars as pl

from polars_rankeval.attribution._setup import Setup, describe

# Columns of Explanation.causes.
SETTING, EFFECT, SHARE, ALONE, QUERIES = "setting", "effect", "share", "alone", "queries"


@dataclass(frozen=True)
class Explanation:
    """Why one metric's number differs between two setups (two tools, or two definitions).

    Attributes
    ----------
    metric
        The metric, as given.
    setup_a, setup_b
        Every setting's value on each side (``label`` names the side; for a side given as
        another tool's numbers, the setup found to reproduce them).
    value_a, value_b
        The metric under each setup: what ``evaluate`` gives with those settings.
    difference
        ``value_b - value_a``; the effects in ``causes`` sum to it.
    causes
        One row per setting that differs: ``setting``, its value under ``a`` and ``b``,
        ``effect`` (its share of the difference of the means: the Shapley value, the effect of
        switching it averaged over every order of switching the others), ``share`` (effect /
        difference), ``alone`` (the effect of switching only this setting from ``a``) and
        ``queries`` (how many queries it changes, in value or in being evaluated at all).
        Largest ``|effect|`` first.
    per_query
        One row per query evaluated on either side: ``value_a``, ``value_b``, ``difference``
        and each setting's effect on the query (null where the query is evaluated on one side
        only); largest ``|difference|`` first. None for a per-system metric (coverage ...).
    target_a, target_b
        For a side given as another tool's numbers: what was given (``"the mean 0.5371"``,
        ``"the table (50 queries)"``); else None.
    residual_a, residual_b
        For such a side, the largest distance between the given numbers and the setup found
        (0 when reproduced to the numbers' precision ``tolerance_a``/``tolerance_b``), and
        ``unmatched_a``/``unmatched_b``: how many queries (or the mean) it does not reproduce;
        ``also_a``/``also_b``: the other presets that reproduce it as well.
    """

    metric: str
    setup_a: Setup
    setup_b: Setup
    value_a: float
    value_b: float
    causes: pl.DataFrame
    per_query: pl.DataFrame | None
    target_a: str | None = None
    target_b: str | None = None
    residual_a: float | None = None
    residual_b: float | None = None
    unmatched_a: int | None = None
    unmatched_b: int | None = None
    tolerance_a: float | None = None
    tolerance_b: float | None = None
    also_a: tuple[str, ...] = ()
    also_b: tuple[str, ...] = ()
    top: int = 10

    @property
    def difference(self) -> float:
        """``value_b - value_a``."""
        return self.value_b - self.value_a

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return self.text()

    def text(self, top: int | None = None) -> str:
        """The report: the two numbers, the causes, the ``top`` queries that move most."""
        a, b = self.setup_a.label, self.setup_b.label
        lines = [
            f"{self.metric}: {_number(self.value_a)} under {a}, {_number(self.value_b)} under "
            f"{b}; difference {_signed(self.difference)}"
        ]
        for side, target, residual, unmatched, tol, also in (
            ("a", self.target_a, self.residual_a, self.unmatched_a, self.tolerance_a, self.also_a),
            ("b", self.target_b, self.residual_b, self.unmatched_b, self.tolerance_b, self.also_b),
        ):
            if target is None:
                continue
            label = self.setup_a.label if side == "a" else self.setup_b.label
            if unmatched == 0:
                others = f"; so do {', '.join(also)}" if also else ""
                lines.append(f"{side}: {target} is reproduced by {label} (to {tol:.0e}){others}")
            else:
                what = (
                    "the mean is"
                    if unmatched == 1 and "mean" in target
                    else (f"{unmatched} of its numbers are")
                )
                lines.append(
                    f"{side}: {target} is NOT reproduced: closest is {label}, where {what} off "
                    f"(largest gap {_gap(residual)}) or missing; the rest is unexplained"
                )
        if self.causes.height == 0:
            lines.append("No setting differs: the two setups are the same definition.")
            return "\n".join(lines)
        rows = [[SETTING, "a", "b", EFFECT, SHARE, ALONE, QUERIES]]
        for cause in self.causes.iter_rows(named=True):
            rows.append(
                [
                    cause[SETTING],
                    cause["a"],
                    cause["b"],
                    _signed(cause[EFFECT]),
                    "" if cause[SHARE] is None else f"{round(cause[SHARE], 2) + 0.0:.0%}",
                    _signed(cause[ALONE]),
                    str(cause[QUERIES]),
                ]
            )
        lines += ["", *_table(rows)]
        if all(moved == 0 for moved in self.causes.get_column(QUERIES)):
            lines.append("These settings differ, but none changes a number on this log.")
        shown_rows = self.top if top is None else top
        if self.per_query is not None and self.per_query.height and shown_rows:
            shown = self.per_query.head(shown_rows)
            names = list(self.causes.get_column(SETTING))
            head = [str(shown.columns[0]), "a", "b", "difference", *names]
            body = [
                [
                    str(row[shown.columns[0]]),
                    _number(row["value_a"]),
                    _number(row["value_b"]),
                    _signed(row["difference"]),
                    *(_signed(row[name]) for name in names),
                ]
                for row in shown.iter_rows(named=True)
            ]
            lines += [
                "",
                f"Queries that move most ({shown.height} of {self.per_query.height}):",
                *_table([head, *body]),
            ]
        return "\n".join(lines)


def causes_frame(
    groups: list[tuple[str, ...]],
    a: Setup,
    b: Setup,
    *,
    effects: dict[str, float],
    alone: dict[str, float],
    moved: dict[str, int],
    difference: float,
) -> pl.DataFrame:
    """The causes table, largest ``|effect|`` first (settings switched together: one row)."""
    names = ["+".join(group) for group in groups]
    share = [
        effects[name] / difference if difference and math.isfinite(difference) else None
        for name in names
    ]
    frame = pl.DataFrame(
        {
            SETTING: names,
            "a": [", ".join(describe(a.values[name]) for name in group) for group in groups],
            "b": [", ".join(describe(b.values[name]) for name in group) for group in groups],
            EFFECT: [effects[name] for name in names],
            SHARE: share,
            ALONE: [alone[name] for name in names],
            QUERIES: [moved[name] for name in names],
        },
        schema={
            SETTING: pl.String,
            "a": pl.String,
            "b": pl.String,
            EFFECT: pl.Float64,
            SHARE: pl.Float64,
            ALONE: pl.Float64,
            QUERIES: pl.Int64,
        },
        nan_to_null=True,
    )
    return frame.sort(pl.col(EFFECT).abs(), descending=True, nulls_last=True, maintain_order=True)


def _number(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.4f}"


def _gap(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:.3g}"


def _signed(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if 0 < abs(value) < 5e-5:  # not zero, and not shown as if it were
        return f"{value:+.0e}"
    return f"{value:+.4f}"


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
