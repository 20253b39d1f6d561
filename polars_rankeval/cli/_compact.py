"""``rank-eval compare``'s terminal table: one block per pair of systems, 100 columns wide.

Each block names the pair (and the segment, with ``--within``) and the paired queries; each
row is a metric: both systems' values as ``evaluate`` reports them (each over its own
queries: ``baseline_overall``, ``system_overall``), ``Δ`` (system − baseline, over the paired
queries) with
its interval, the p-value (adjusted when a correction is used), the paired effect size, the
per-query wins/ties/losses and a verdict. The verdict reads the metric's declared direction:
a significant drop of a lower-is-better metric is ``better``. A caption under the blocks says
which test, correction and alpha gave the p-values.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

import polars as pl

from polars_rankeval._engine.vocabulary import METRIC
from polars_rankeval.comparison import CORRECTION_NAMES, TEST_NAMES, readable_interval
from polars_rankeval.comparison._pairing import system_columns, with_pair_names

WIDTH = 100
_GAP = "  "
# the joined names of a row's two systems (a segment column may be called "system")
_SYSTEM, _BASELINE = "__rke_system", "__rke_baseline"
_NAME_MIN = 6  # a mean's column is never narrower than this, whatever the names
_LOWER = " ↓"  # after a lower-is-better metric's name
_LOG = " *"  # after a geometric-mean metric's name: a ratio interval, d on the log scale


def verdict(row: dict[str, object]) -> str:
    """``better``/``worse`` (by the metric's direction) when significant, else ``n.s.``.

    Examples
    --------
    >>> verdict({"significant": True, "delta": -0.5, "higher_is_better": False, "p_value": 0.01})
    'better'
    >>> verdict({"significant": False, "delta": 0.2, "higher_is_better": True, "p_value": 0.3})
    'n.s.'
    """
    p, delta = row["p_value"], row["delta"]
    if not isinstance(p, float) or math.isnan(p):
        return "n/a"
    if not row["significant"]:
        return "n.s."
    assert isinstance(delta, float)
    oriented = delta if row["higher_is_better"] else -delta
    if oriented > 0:
        return "better"
    # A significant test with no difference of the summaries (the Wilcoxon or sign test can
    # find one): different, but neither better nor worse.
    return "worse" if oriented < 0 else "differs"


def _number(value: object, digits: int, *, signed: bool = False) -> str:
    if not isinstance(value, (int, float)) or math.isnan(value):
        return "–"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _p(value: object, digits: int) -> str:
    digits = max(digits, 2)  # a p-value with fewer decimals says nothing
    if not isinstance(value, float) or math.isnan(value):
        return "–"
    floor = 10.0**-digits
    return f"<{floor:.{digits}f}" if value < floor else f"{value:.{digits}f}"


def _cut(name: str, width: int) -> str:
    return name if len(name) <= width else name[: max(width - 1, 1)] + "…"


def _cells(row: dict[str, object], digits: int) -> list[str]:
    """A row's cells after the metric and the two means."""
    # A geometric mean's interval as the ratio system/baseline, as rank-eval check shows it.
    low, high, scale = readable_interval(row["ci_low"], row["ci_high"], str(row["test_scale"]))  # type: ignore[arg-type]
    interval = (
        f"{_number(row['delta'], digits, signed=True)} "
        f"{'×' if scale == 'ratio' else ''}[{_number(low, digits)}, {_number(high, digits)}]"
    )
    shown_p = row["p_adjusted"] if row["correction"] != "none" else row["p_value"]
    return [
        interval,
        _p(shown_p, digits),
        _number(row["effect_size"], 2, signed=True),
        f"{row['wins']}/{row['ties']}/{row['losses']}",
        verdict(row),
    ]


def _label(row: dict[str, object]) -> str:
    marks = (_LOWER if not row["higher_is_better"] else "") + (
        _LOG if row["test_scale"] == "log" else ""
    )
    return f"{row['metric']}{marks}"


def _queries(rows: Sequence[dict[str, object]]) -> str:
    counts = sorted({int(row["n_queries"]) for row in rows})  # type: ignore[call-overload]
    shown = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    plural = "y" if counts == [1] else "ies"
    return f"{shown} paired quer{plural}"


def _caption(frame: pl.DataFrame, lines: list[str]) -> list[str]:
    first = frame.row(0, named=True)
    test, correction, alpha = first["test"], first["correction"], first["alpha"]
    text = f"{TEST_NAMES.get(test, test)}"
    if correction != "none":
        family = int(frame["p_value"].is_not_nan().sum())
        text += (
            f"; p {CORRECTION_NAMES.get(correction, correction)}-adjusted over {family} "
            f"comparison{'' if family == 1 else 's'}"
        )
    elif test in ("tukey", "tukey_hsd"):
        text += " (p family-wise over all systems)"
    text += (
        f"; significant: p < {alpha:g}; the systems' columns: each one's value over its own "
        "queries, as evaluate reports it; Δ = system − baseline over the paired "
        f"queries, interval at {1 - alpha:.0%}; d = effect size (mean/sd of the per-query "
        "differences); W/T/L = queries the system wins/ties/loses"
    )
    if any(_LOWER in line for line in lines):
        text += "; ↓ lower is better"
    if any(_LOG in line for line in lines):
        text += (
            "; * geometric mean: ×[…] is the interval of the ratio system/baseline of the "
            "geometric means, d is on the log scale"
        )
    return textwrap.wrap(text + ".", WIDTH)


def compact(frame: pl.DataFrame, digits: int = 4) -> str:
    """The comparison as blocks of aligned text, one per (segment, baseline, system).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> per_query = pl.DataFrame(
    ...     {
    ...         "system": ["a"] * 4 + ["b"] * 4,
    ...         "query": [1, 2, 3, 4] * 2,
    ...         "map": [0.2, 0.4, 0.1, 0.3, 0.3, 0.6, 0.1, 0.5],
    ...     }
    ... )
    >>> text = compact(rke.compare_per_query(per_query, by="system", baseline="a"))
    >>> for line in text.splitlines()[:3]:
    ...     print(line)
    b vs a (baseline), 4 paired queries
    metric       a       b  Δ [95% CI]                 p (holm)      d  W/T/L  verdict
    map     0.2500  0.3750  +0.1250 [-0.0273, 0.2773]    0.0796  +1.31  3/1/0  n.s.
    >>> print(text.splitlines()[4][:48])
    paired t-test; p Holm-adjusted over 1 comparison
    """
    if frame.is_empty():
        return "no comparison\n"
    # compare's columns: metric, the segments, the systems' by columns, ... (compare_columns)
    keys = system_columns(frame.columns)
    segments = frame.columns[frame.columns.index(METRIC) + 1 : frame.columns.index(keys[0])]
    frame = with_pair_names(frame, system=_SYSTEM, baseline=_BASELINE)
    rows = list(frame.iter_rows(named=True))
    blocks: dict[tuple[object, ...], list[dict[str, object]]] = {}
    for row in rows:
        key = (*(row[name] for name in segments), row[_BASELINE], row[_SYSTEM])
        blocks.setdefault(key, []).append(row)
    alpha = float(rows[0]["alpha"])
    p_header = "p" if rows[0]["correction"] == "none" else f"p ({rows[0]['correction']})"
    headers = [f"Δ [{1 - alpha:.0%} CI]", p_header, "d", "W/T/L", "verdict"]
    cells = {id(row): _cells(row, digits) for row in rows}
    widths = [
        max(len(header), *(len(cells[id(row)][i]) for row in rows))
        for i, header in enumerate(headers)
    ]
    metric_width = max(len("metric"), *(len(_label(row)) for row in rows))
    value_width = max(
        _NAME_MIN,
        *(
            len(_number(row[c], digits))
            for row in rows
            for c in ("baseline_overall", "system_overall")
        ),
    )
    # What is left of the width goes to the two means, whose headers are the system names.
    left = WIDTH - metric_width - sum(widths) - len(_GAP) * (len(headers) + 2)
    names = [name for key in blocks for name in key[-2:]]
    mean_width = max(value_width, min(max(len(str(n)) for n in names), left // 2))
    lines: list[str] = []
    for key, block in blocks.items():
        baseline, system = str(key[-2]), str(key[-1])
        where = ", ".join(f"{name}={value}" for name, value in zip(segments, key, strict=False))
        title = f"{system} vs {baseline}" + (" (baseline)" if _has_baseline(frame) else "")
        title = f"{where}: {title}" if where else title
        lines.extend(textwrap.wrap(f"{title}, {_queries(block)}", WIDTH))
        header = [
            "metric".ljust(metric_width),
            _cut(baseline, mean_width).rjust(mean_width),
            _cut(system, mean_width).rjust(mean_width),
            *(
                h.ljust(w) if i in (0, 3, 4) else h.rjust(w)
                for i, (h, w) in enumerate(zip(headers, widths, strict=True))
            ),
        ]
        lines.append(_GAP.join(header).rstrip())
        for row in block:
            shown = [
                _label(row).ljust(metric_width),
                # what evaluate gives under the metric's name; Δ pairs the shared queries
                _number(row["baseline_overall"], digits).rjust(mean_width),
                _number(row["system_overall"], digits).rjust(mean_width),
                *(
                    c.ljust(w) if i in (0, 3, 4) else c.rjust(w)
                    for i, (c, w) in enumerate(zip(cells[id(row)], widths, strict=True))
                ),
            ]
            lines.append(_GAP.join(shown).rstrip())
        lines.append("")
    lines.extend(_caption(frame, lines))
    return "\n".join(lines) + "\n"


def _has_baseline(frame: pl.DataFrame) -> bool:
    """One baseline against every other system (not every pair)."""
    baselines = set(frame[_BASELINE].unique().to_list())
    return len(baselines) == 1 and not baselines & set(frame[_SYSTEM].unique().to_list())
