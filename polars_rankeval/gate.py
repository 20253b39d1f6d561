"""A regression gate: is a candidate ranker worse than a stored baseline, by your rules.

:func:`check` evaluates a candidate and a baseline (logs, or per-query tables such as the
Parquet file ``rank-eval LOG --per-query -o baseline.parquet`` writes), compares them query by
query with :func:`polars_rankeval.compare_per_query`, and applies rules:

* ``fail_if=["ndcg@10 < -0.005"]``: the paired change Δ = candidate - baseline (or, with ``%``,
  Δ relative to the baseline's mean) compared with a threshold;
* ``fail_if_significant=True``: a change in the metric's worse direction that the paired test
  (after the correction chosen) finds significant;
* ``floors={"recall@100": 0.8}`` / ``ceilings={...}``: bounds on the candidate's value as
  :func:`polars_rankeval.evaluate` reports it;
* ``fail_on_missing_queries=True``: every query of the baseline must be in the candidate.

Directions come from the metrics' declarations: "worse" is a drop for ndcg and a rise for a
lower-is-better metric. A metric with no shared query fails (its Δ is unknown), never passes.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import polars as pl

from polars_rankeval._columns import as_polars
from polars_rankeval.compare import Test, compare_per_query
from polars_rankeval.compare._corrections import Correction
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    ColumnValueError,
    InvalidOptionError,
)
from polars_rankeval.evaluate import evaluate
from polars_rankeval.meaning import LowerIsBetter
from polars_rankeval.registry import split_metric_list

Operator = Literal["<", "<=", ">", ">="]
_RULE = re.compile(
    r"^\s*(?P<metric>\S+?)\s*(?P<op><=|>=|<|>)\s*(?P<value>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
    r"\s*(?P<percent>%?)\s*$"
)
_SIDE = "__check_side"
_BASELINE, _CANDIDATE = "baseline", "candidate"
# The CLI's per-query output ends each system with a summary row under this query id.
_SUMMARY_QUERY = "all"


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
                f"option fail_if=: {text!r} is not a rule; write 'METRIC OP NUMBER' with OP one "
                "of < <= > >=, e.g. 'ndcg@10 < -0.005' (fail if ndcg@10 drops by more than 0.005) "
                "or 'map < -1%' (relative to the baseline)"
            )
            raise InvalidOptionError(msg)
        value = float(found["value"])
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
        change = delta / abs(baseline_mean) if self.relative else delta
        if math.isnan(change) or math.isinf(change):
            return True
        return {
            "<": change < self.threshold,
            "<=": change <= self.threshold,
            ">": change > self.threshold,
            ">=": change >= self.threshold,
        }[self.op]


@dataclass
class CheckResult:
    """What :func:`check` found: ``passed``, a row per metric in ``table``, and ``reasons``.

    ``table`` columns: ``metric``, ``higher_is_better``, ``baseline`` and ``candidate`` (each
    side's value as :func:`polars_rankeval.evaluate` gives it, over its own queries),
    ``delta`` (paired, over the queries both have), ``ci_low``/``ci_high`` (its interval;
    for a geometric mean, the interval of the candidate/baseline ratio, ``interval_scale``
    ``"ratio"``), ``p_value``, ``p_adjusted``, ``significant``, ``wins``/``ties``/``losses``,
    ``queries``, ``verdict`` (``"pass"``/``"fail"``) and ``reasons``.
    """

    passed: bool
    table: pl.DataFrame
    reasons: list[str]
    queries: dict[str, int]
    settings: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return self.text()

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
        return "\n".join(lines) + "\n"

    def markdown(self) -> str:
        """The summary as Markdown (for ``$GITHUB_STEP_SUMMARY``)."""
        verdict = "passed" if self.passed else "failed"
        icon = "✅" if self.passed else "❌"
        lines = [f"### {icon} rank-eval check {verdict}", ""]
        lines.append("| " + " | ".join(self._header()) + " |")
        lines.append("|" + "|".join(" --- " for _ in self._header()) + "|")
        lines += [
            "| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in self._cells()
        ]
        lines += ["", self._queries_line()]
        if self.reasons:
            lines += ["", *(f"- {reason}" for reason in self.reasons)]
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        """Everything as plain Python values (``--format json``)."""
        return {
            "passed": self.passed,
            "reasons": list(self.reasons),
            "queries": dict(self.queries),
            "settings": dict(self.settings),
            "metrics": self.table.to_dicts(),
        }

    def json(self) -> str:
        """:meth:`to_dict` as JSON (NaN written as null)."""
        return json.dumps(_no_nan(self.to_dict()), indent=2) + "\n"

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
                    _num(row["baseline"]),
                    _num(row["candidate"]),
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


def _bounds(option: str, values: Mapping[str, float] | None) -> dict[str, float]:
    if values is None:
        return {}
    if not isinstance(values, Mapping):
        msg = f"option {option}= must map metric names to numbers, e.g. {{'recall@100': 0.8}}"
        raise InvalidOptionError(msg)
    out = {}
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            msg = f"option {option}=: the bound of {name!r} must be a number, got {value!r}"
            raise InvalidOptionError(msg)
        out[str(name)] = float(value)
    return out


def _side(
    data: object,
    role: str,
    metrics: list[str] | None,
    *,
    by: str | None,
    system: object,
    query: str,
    keywords: dict[str, Any],
) -> pl.DataFrame:
    """One side as a per-query table: ``query`` and a column per metric."""
    frame = as_polars(data, role)
    columns = frame.collect_schema().names()
    if query not in columns:
        msg = f"the {role} has no column {query!r} (option query=); columns present: {columns}"
        raise ColumnNotFoundError(msg)
    if by is not None and by in columns:
        frame = _one_system(frame, role, by, system)
    elif system is not None:
        msg = f"option {role}_system= picks a system of column by={by!r}, which the {role} lacks"
        raise InvalidOptionError(msg)
    score = keywords.get("score", "score")
    if score in columns:  # a log: evaluate it
        if not metrics:
            msg = (
                f"the {role} is a log: name the metrics to check (metrics=, or the rules' "
                "metrics), e.g. metrics=['ndcg@10', 'map']"
            )
            raise InvalidOptionError(msg)
        scored = evaluate(frame.lazy(), metrics, per_query=True, query=query, **keywords)
        return scored.collect()
    table = frame.lazy().collect() if isinstance(frame, pl.LazyFrame) else frame
    table = table.drop([c for c in (by,) if c is not None and c in table.columns])
    if table.schema[query] == pl.String:
        # The CLI's --per-query output carries each system's summary under query "all".
        table = table.filter(pl.col(query) != _SUMMARY_QUERY)
    wanted = metrics or [c for c in table.columns if c != query and table.schema[c].is_numeric()]
    absent = [name for name in wanted if name not in table.columns]
    if absent:
        msg = (
            f"the {role}'s per-query table has no column for {absent}; it has "
            f"{[c for c in table.columns if c != query]}. Evaluate those metrics for the {role}, "
            "or check only the metrics it has"
        )
        raise ColumnNotFoundError(msg)
    if not wanted:
        msg = f"the {role}'s per-query table has no numeric metric column"
        raise ColumnValueError(msg)
    text = [name for name in wanted if not table.schema[name].is_numeric()]
    if text:
        msg = f"the {role}'s column(s) {text} must be numeric per-query values, got " + ", ".join(
            str(table.schema[name]) for name in text
        )
        raise ColumnTypeError(msg)
    return table.select(query, *wanted)


def _one_system(
    frame: pl.DataFrame | pl.LazyFrame, role: str, by: str, system: object
) -> pl.DataFrame | pl.LazyFrame:
    names = frame.lazy().select(pl.col(by).unique().sort()).collect().to_series().to_list()
    if system is None:
        if len(names) == 1:
            return frame.drop(by)
        msg = (
            f"the {role} holds {len(names)} systems in column {by!r} ({names[:5]}): choose one "
            f"with {role}_system= (--{role}-system on the command line)"
        )
        raise InvalidOptionError(msg)
    if system not in names:
        msg = f"option {role}_system={system!r} is not in column {by!r}; its values: {names[:10]}"
        raise InvalidOptionError(msg)
    return frame.filter(pl.col(by) == system).drop(by)


def check(
    candidate: object,
    baseline: object,
    metrics: str | Sequence[str] | None = None,
    *,
    fail_if: str | Sequence[str] = (),
    fail_if_significant: bool = False,
    floors: Mapping[str, float] | None = None,
    ceilings: Mapping[str, float] | None = None,
    fail_on_missing_queries: bool = False,
    test: Test = "t",
    correction: Correction | None = "holm",
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int = 0,
    by: str | None = "system",
    candidate_system: object = None,
    baseline_system: object = None,
    query: str = "query",
    lower_is_better: LowerIsBetter = None,
    **evaluate_keywords: Any,
) -> CheckResult:
    """Check a candidate against a baseline with regression rules; ``.passed`` says the verdict.

    Parameters
    ----------
    candidate, baseline
        Each a log (rows of query, item, score, relevance: evaluated here) or a per-query table
        (a query column and a column per metric, e.g. ``evaluate(..., per_query=True)`` or the
        Parquet file ``rank-eval ... --per-query -o`` writes). DataFrame, LazyFrame, pandas or
        Arrow.
    metrics
        The metrics to check (a list, or one comma-separated string). Default: those the rules
        name; else every metric column of a per-query table.
    fail_if
        Rules ``"METRIC OP NUMBER"`` on the paired change Δ = candidate - baseline, OP one of
        ``< <= > >=``: ``"ndcg@10 < -0.005"`` fails when ndcg@10 drops by more than 0.005;
        ``"map < -1%"`` is relative to the baseline's mean.
    fail_if_significant
        Fail when a metric changes in its worse direction (by its declaration) and the paired
        ``test`` finds it significant at ``alpha`` after ``correction`` across the metrics.
    floors, ceilings
        ``{"recall@100": 0.8}``: the candidate's value (as evaluate gives it) must be at least
        (floors) or at most (ceilings) the bound.
    fail_on_missing_queries
        Fail when a baseline query is absent from the candidate. Otherwise Δ, its interval and
        p are over the queries both have, and the counts are reported.
    test, correction, alpha, n_resamples, seed, lower_is_better
        As in :func:`polars_rankeval.compare_per_query`.
    by, candidate_system, baseline_system
        A side with a ``by`` column holding several systems needs ``*_system=`` to pick one;
        with a single system the column is dropped.
    query
        The query id column of both sides.
    **evaluate_keywords
        For sides that are logs: options of :func:`polars_rankeval.evaluate` (``item=``,
        ``score=``, ``relevance=``, ``convention=``...).

    Returns
    -------
    CheckResult
        ``passed``, ``table`` (a row per metric), ``reasons`` (one sentence per broken rule),
        ``queries`` (counts), ``text()``, ``markdown()`` and ``json()``.

    Examples
    --------
    >>> import polars as pl
    >>> base = pl.DataFrame({"query": ["q1", "q2", "q3"], "ndcg@10": [0.5, 0.6, 0.7]})
    >>> cand = pl.DataFrame({"query": ["q1", "q2", "q3"], "ndcg@10": [0.5, 0.5, 0.6]})
    >>> result = check(cand, base, fail_if="ndcg@10 < -0.05")
    >>> result.passed
    False
    >>> result.reasons
    ['ndcg@10: Δ -0.0667 breaks the rule ndcg@10 < -0.05']
    """
    gate = _Gate.build(
        fail_if,
        fail_if_significant=fail_if_significant,
        floors=floors,
        ceilings=ceilings,
        fail_on_missing_queries=fail_on_missing_queries,
        test=test,
        correction=correction,
        alpha=alpha,
    )
    specs = gate.metric_specs(metrics)
    options: dict[str, Any] = {"by": by, "query": query, "keywords": evaluate_keywords}
    base = _side(baseline, _BASELINE, specs, system=baseline_system, **options)
    # The baseline's columns name the metrics (a sweep ndcg@5,10 is two): the candidate is
    # evaluated on, or must hold, the same.
    names = [name for name in base.columns if name != query]
    gate.check_named(names)
    cand = _side(candidate, _CANDIDATE, names, system=candidate_system, **options)
    base, cand = _same_types(base, cand, query, names)
    base_queries, cand_queries = set(base[query].to_list()), set(cand[query].to_list())
    counts = {
        "baseline": len(base_queries),
        "candidate": len(cand_queries),
        "shared": len(base_queries & cand_queries),
        "only_baseline": len(base_queries - cand_queries),
        "only_candidate": len(cand_queries - base_queries),
    }
    both = pl.concat(
        [
            base.with_columns(pl.lit(_BASELINE).alias(_SIDE)),
            cand.with_columns(pl.lit(_CANDIDATE).alias(_SIDE)),
        ]
    )
    compared = compare_per_query(
        both,
        by=_SIDE,
        query=query,
        metrics=names,
        baseline=_BASELINE,
        test=test,
        correction=correction,
        alpha=alpha,
        n_resamples=n_resamples,
        seed=seed,
        missing="drop",
        lower_is_better=lower_is_better,
    )
    rows = [gate.judge(row, shared=counts["shared"]) for row in compared.iter_rows(named=True)]
    reasons = [reason for row in rows for reason in row["reasons"]]
    if fail_on_missing_queries and counts["only_baseline"]:
        missing = sorted(base_queries - cand_queries, key=str)
        shown = ", ".join(map(repr, missing[:5])) + (" ..." if len(missing) > 5 else "")
        many = counts["only_baseline"] != 1
        reasons.append(
            f"missing queries: {counts['only_baseline']} baseline "
            f"{'queries are' if many else 'query is'} not in the candidate ({shown})"
        )
    table = pl.DataFrame(rows, schema_overrides={"reasons": pl.List(pl.String)})
    settings = {
        "test": test,
        "correction": correction,
        "alpha": alpha,
        "rules": [rule.text for rule in gate.rules],
    }
    return CheckResult(
        passed=not reasons, table=table, reasons=reasons, queries=counts, settings=settings
    )


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
            raise InvalidOptionError(msg)
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
                "no rule to check: give fail_if=, fail_if_significant=True, floors=, ceilings= "
                "or fail_on_missing_queries=True (a gate without rules always passes)"
            )
            raise InvalidOptionError(msg)
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
                msg = f"option {option}= names {name!r}, which is not among the metrics {names}"
                raise InvalidOptionError(msg)

    def _named(self) -> list[tuple[str, str]]:
        return [
            *(("fail_if", rule.metric) for rule in self.rules),
            *(("floors", name) for name in self.floors),
            *(("ceilings", name) for name in self.ceilings),
        ]

    def judge(self, row: dict[str, Any], *, shared: int) -> dict[str, Any]:
        """One output row: the compared metric, its interval on a readable scale, its verdict."""
        metric, higher = row["metric"], bool(row["higher_is_better"])
        delta, base_mean = _float(row["delta"]), _float(row["baseline_mean"])
        reasons: list[str] = []
        if shared == 0 or math.isnan(delta):
            reasons.append(f"{metric}: no query has a value on both sides, so Δ is unknown")
        for rule in self.rules:
            if rule.metric == metric and rule.broken(delta, base_mean):
                change = delta / abs(base_mean) if rule.relative else delta
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
        ratio = row["test_scale"] == "log"
        low, high = row["ci_low"], row["ci_high"]
        return {
            "metric": metric,
            "higher_is_better": higher,
            "baseline": row["baseline_overall"],
            "candidate": row["system_overall"],
            "delta": row["delta"],
            "ci_low": math.exp(low) if ratio and low is not None else low,
            "ci_high": math.exp(high) if ratio and high is not None else high,
            "interval_scale": "ratio" if ratio else "delta",
            "p_value": row["p_value"],
            "p_adjusted": row["p_adjusted"],
            "significant": row["significant"],
            "wins": row["wins"],
            "ties": row["ties"],
            "losses": row["losses"],
            "queries": row["n_queries"],
            "verdict": "fail" if reasons else "pass",
            "reasons": reasons,
        }


def _float(value: object) -> float:
    return math.nan if value is None else float(value)  # type: ignore[arg-type]


def _same_types(
    base: pl.DataFrame, cand: pl.DataFrame, query: str, metrics: list[str]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Query ids of one type on both sides (a stored file may read "7" where a log has 7)."""
    casts = [pl.col(name).cast(pl.Float64) for name in metrics]
    if base.schema[query] != cand.schema[query]:
        casts.append(pl.col(query).cast(pl.String))
    return base.with_columns(casts), cand.with_columns(casts)
