"""The gate's rules: ``"ndcg@10 < -0.005"`` strings, bounds, and one metric's verdict."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from polars_rankeval._engine.vocabulary import (
    BASELINE_VALUE,
    CI_HIGH,
    CI_LOW,
    DELTA,
    N_QUERIES,
    VALUE,
)
from polars_rankeval._names.registry import split_metric_list
from polars_rankeval.comparison import readable_interval
from polars_rankeval.errors import ColumnNotFoundError, InvalidOptionError
from polars_rankeval.gate._result import _num, _p

Operator = Literal["<", "<=", ">", ">="]
_RULE = re.compile(
    r"^\s*(?P<metric>\S+?)\s*(?P<op><=|>=|<|>)\s*(?P<value>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
    r"\s*(?P<percent>%?)\s*$"
)


#: How the library spells each option of :func:`polars_rankeval.check` in its messages; the
#: command line spells them through its own table (``--fail-if`` for ``fail_if=``).
PYTHON_OPTIONS: dict[str, str] = {
    "fail_if": "fail_if=",
    "fail_if_significant": "fail_if_significant=True",
    "floors": "floors=",
    "ceilings": "ceilings=",
    "fail_on_missing_queries": "fail_on_missing_queries=True",
    "metrics": "metrics=",
    "query": "query=",
    "by": "by=",
    "candidate_system": "system=",
    "baseline_system": "baseline=",
    "direction": "direction=",
}


def _literal(value: object) -> str:
    """A value shown in a :class:`CheckOptionError` template (its braces kept as text)."""
    return str(value).replace("{", "{{").replace("}", "}}")


class CheckOptionError(InvalidOptionError):
    """An option of :func:`~polars_rankeval.check` at fault, named however the caller spells it.

    The message is a template whose ``{fail_if}``-style fields are option names: ``str()``
    spells them as Python keywords (``fail_if=``), and :meth:`spelled` as another table says
    (the command line's ``--fail-if``), so no message is rewritten by string replacement.
    """

    def __init__(self, template: str) -> None:
        self.template = template
        super().__init__(self.spelled(PYTHON_OPTIONS))

    def spelled(self, names: Mapping[str, str]) -> str:
        """The message with each option written as ``names`` spells it."""
        return self.template.format_map({**PYTHON_OPTIONS, **names})


class CheckColumnError(CheckOptionError, ColumnNotFoundError):
    """A column an option of :func:`~polars_rankeval.check` names is not in a side."""


def relative_change(delta: float, baseline_mean: float) -> float:
    """``delta`` relative to the baseline's mean; from a zero mean, any change is infinite.

    Examples
    --------
    >>> relative_change(-0.05, 0.5), relative_change(0.1, 0.0), relative_change(0.0, 0.0)
    (-0.1, inf, 0.0)
    """
    if baseline_mean == 0:
        return 0.0 if delta == 0 else math.copysign(math.inf, delta)
    return delta / abs(baseline_mean)


@dataclass(frozen=True)
class Rule:
    """``metric op threshold``: fail when the paired change ``Δ op threshold`` holds.

    ``relative`` rules compare ``Δ / baseline mean`` (written with ``%``: ``-1%`` is -0.01).

    Examples
    --------
    >>> Rule.parse("ndcg@10 < -0.005")
    Rule(metric='ndcg@10', op='<', threshold=-0.005, relative=False, text='ndcg@10 < -0.005')
    >>> Rule.parse("map <= -2%").threshold
    -0.02
    """

    metric: str
    op: Operator
    threshold: float
    relative: bool
    text: str

    @classmethod
    def parse(cls, text: object) -> Rule:
        """Read a rule string such as ``"ndcg@10 < -0.005"`` or ``"map < -1%"``."""
        found = _RULE.match(text) if isinstance(text, str) else None
        if found is None:
            msg = (
                f"option {{fail_if}}: {_literal(repr(text))} is not a rule; write 'METRIC OP "
                "NUMBER' with OP one of < <= > >=, e.g. 'ndcg@10 < -0.005' (fail if ndcg@10 "
                "drops by more than 0.005) or 'map < -1%' (relative to the baseline)"
            )
            raise CheckOptionError(msg)
        value = float(found["value"])
        if not math.isfinite(value):
            # 1e400 reads as inf: a rule against an infinite margin can never fire
            msg = (
                f"option {{fail_if}}: {_literal(repr(text))} has a threshold beyond the range "
                "of a float (it reads as infinite, so the rule could never fire); write a "
                "finite number"
            )
            raise CheckOptionError(msg)
        relative = bool(found["percent"])
        op: Operator = found["op"]  # type: ignore[assignment]
        return cls(
            metric=found["metric"],
            op=op,
            threshold=value / 100 if relative else value,
            relative=relative,
            text=" ".join(str(text).split()),
        )

    def broken(self, delta: float, baseline_mean: float) -> bool:
        """Whether the change breaks the rule (an unknown change always does)."""
        change = relative_change(delta, baseline_mean) if self.relative else delta
        if math.isnan(change):
            return True
        return {
            "<": change < self.threshold,
            "<=": change <= self.threshold,
            ">": change > self.threshold,
            ">=": change >= self.threshold,
        }[self.op]


def _bounds(option: str, values: Mapping[str, float] | None) -> dict[str, float]:
    if values is None:
        return {}
    if not isinstance(values, Mapping):
        msg = (
            f"option {{{option}}} must map metric names to numbers, e.g. {{{{'recall@100': 0.8}}}}"
        )
        raise CheckOptionError(msg)
    out = {}
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            msg = (
                f"option {{{option}}}: the bound of {_literal(repr(name))} must be a number, "
                f"got {_literal(repr(value))}"
            )
            raise CheckOptionError(msg)
        out[str(name)] = float(value)
    return out


@dataclass(frozen=True)
class _Gate:
    """The rules of one check, validated, and how a compared metric fares against them."""

    rules: list[Rule]
    floors: dict[str, float]
    ceilings: dict[str, float]
    significant: bool
    test: str
    correction: str | None
    alpha: float

    @classmethod
    def build(
        cls,
        fail_if: str | Sequence[str],
        *,
        fail_if_significant: bool,
        floors: Mapping[str, float] | None,
        ceilings: Mapping[str, float] | None,
        fail_on_missing_queries: bool,
        test: str,
        correction: str | None,
        alpha: float,
    ) -> _Gate:
        texts = [fail_if] if isinstance(fail_if, str) else list(fail_if)
        flags = (fail_if_significant, fail_on_missing_queries)
        if not all(isinstance(flag, bool) for flag in flags):
            msg = "options fail_if_significant= and fail_on_missing_queries= are True or False"
            raise InvalidOptionError(msg)  # Python only: the command line's flags are switches
        gate = cls(
            rules=[Rule.parse(text) for text in texts],
            floors=_bounds("floors", floors),
            ceilings=_bounds("ceilings", ceilings),
            significant=fail_if_significant,
            test=test,
            correction=correction,
            alpha=alpha,
        )
        if not (gate.rules or gate.floors or gate.ceilings or any(flags)):
            msg = (
                "no rule to check: give {fail_if}, {fail_if_significant}, {floors}, {ceilings} "
                "or {fail_on_missing_queries} (a gate without rules always passes)"
            )
            raise CheckOptionError(msg)
        return gate

    def metric_specs(self, metrics: str | Sequence[str] | None) -> list[str] | None:
        """The metric strings given (a comma-separated string is split), else the rules' own."""
        if metrics is None:
            return list(dict.fromkeys(name for _, name in self._named())) or None
        listed = [metrics] if isinstance(metrics, str) else list(metrics)
        if not all(isinstance(text, str) for text in listed):
            msg = f"option metrics= takes metric strings, got {metrics!r}"
            raise InvalidOptionError(msg)
        specs = [part.strip() for text in listed for part in split_metric_list(text)]
        return list(dict.fromkeys(part for part in specs if part)) or None

    def check_named(self, names: list[str]) -> None:
        """Every metric a rule names is among the columns compared."""
        for option, name in self._named():
            if name not in names:
                msg = (
                    f"option {{{option}}} names {_literal(repr(name))}, which is not among the "
                    f"metrics {_literal(names)}"
                )
                raise CheckOptionError(msg)

    def _named(self) -> list[tuple[str, str]]:
        return [
            *(("fail_if", rule.metric) for rule in self.rules),
            *(("floors", name) for name in self.floors),
            *(("ceilings", name) for name in self.ceilings),
        ]

    def judge(self, row: dict[str, Any], *, shared: int) -> dict[str, Any]:
        """One output row: the compared metric, its interval on a readable scale, its verdict."""
        metric, higher = row["metric"], bool(row["higher_is_better"])
        delta, base_mean = _float(row[DELTA]), _float(row[BASELINE_VALUE])
        reasons: list[str] = []
        if shared == 0 or math.isnan(delta):
            reasons.append(f"{metric}: no query has a value on both sides, so Δ is unknown")
        for rule in self.rules:
            if rule.metric == metric and rule.broken(delta, base_mean):
                change = relative_change(delta, base_mean) if rule.relative else delta
                shown = f"{change:+.2%}" if rule.relative else f"{change:+.4f}"
                reasons.append(f"{metric}: Δ {shown} breaks the rule {rule.text}")
        worse = delta < 0 if higher else delta > 0
        if self.significant and worse and bool(row["significant"]):
            p = row["p_adjusted"] if row["p_adjusted"] is not None else row["p_value"]
            label = f"p ({self.correction})" if self.correction else "p"
            shown = "< 0.0001" if _p(p).startswith("<") else f"= {_p(p)}"
            test = f"{self.test} test, {label} {shown}, alpha {self.alpha}"
            reasons.append(f"{metric}: significantly worse ({test})")
        value = _float(row["system_overall"])
        if metric in self.floors and not value >= self.floors[metric]:
            reasons.append(
                f"{metric}: candidate {_num(value)} is below the floor {self.floors[metric]}"
            )
        if metric in self.ceilings and not value <= self.ceilings[metric]:
            reasons.append(
                f"{metric}: candidate {_num(value)} is above the ceiling {self.ceilings[metric]}"
            )
        # A geometric mean is tested on logs: its interval is one of the ratio candidate/baseline.
        low, high, scale = readable_interval(row["ci_low"], row["ci_high"], row["test_scale"])
        return {
            "metric": metric,
            "higher_is_better": higher,
            # the values as evaluate gives them (each side's summary over all its queries)
            VALUE: row["system_overall"],
            BASELINE_VALUE: row["baseline_overall"],
            DELTA: row[DELTA],
            CI_LOW: low,
            CI_HIGH: high,
            "interval_scale": scale,
            "p_value": row["p_value"],
            "p_adjusted": row["p_adjusted"],
            "significant": row["significant"],
            "wins": row["wins"],
            "ties": row["ties"],
            "losses": row["losses"],
            N_QUERIES: row[N_QUERIES],
            "verdict": "fail" if reasons else "pass",
            "reasons": reasons,
        }


def _float(value: object) -> float:
    return math.nan if value is None else float(value)  # type: ignore[arg-type]
