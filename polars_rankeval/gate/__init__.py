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

A query whose two values differ by no more than ``1e-12`` (relative) counts as unchanged. The
same ranking evaluated twice gives identical values, but a stored baseline may come from another
tool or an older version whose sums differ in the last bit, and that noise must not break a
``< 0`` margin or look significant.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import polars as pl

from polars_rankeval._engine.columns import as_polars
from polars_rankeval._engine.evaluate import evaluate_frame
from polars_rankeval._engine.meaning import Directions, LowerIsBetter
from polars_rankeval._engine.vocabulary import METRIC, EvaluateOptions, renamed
from polars_rankeval._engine.warn import warn_at
from polars_rankeval.comparison import Test, compare_per_query
from polars_rankeval.comparison._corrections import Correction
from polars_rankeval.comparison._depth import DEPTH_COLUMN, with_depth
from polars_rankeval.comparison._ties import split_tie_ranges, with_tie_flags
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    ColumnValueError,
    DuplicateItemError,
    RankEvalDeprecationWarning,
)
from polars_rankeval.gate._result import CheckResult
from polars_rankeval.gate._rules import (
    PYTHON_OPTIONS,
    CheckColumnError,
    CheckOptionError,
    Rule,
    _Gate,
    _literal,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["PYTHON_OPTIONS", "CheckColumnError", "CheckOptionError", "CheckResult", "Rule", "check"]

_CheckT = TypeVar("_CheckT", bound=Callable[..., Any])
_SIDE = "__check_side"
_BASELINE, _CANDIDATE = "baseline", "candidate"
# The CLI's per-query output ends each system with a summary row under this query id.
_SUMMARY_QUERY = "all"


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
        msg = (
            f"the {role} has no column {_literal(repr(query))} (option {{query}}); columns "
            f"present: {_literal(columns)}"
        )
        raise CheckColumnError(msg)
    if by is not None and by in columns:
        frame = _one_system(frame, role, by, system)
    elif system is not None:
        msg = (
            f"option {{{role}_system}} picks a system of column {_literal(repr(by))} "
            f"(option {{by}}), which the {role} lacks"
        )
        raise CheckOptionError(msg)
    score = keywords.get("score", "score")
    if score in columns:  # a log: evaluate it
        if not metrics:
            msg = (
                f"the {role} is a log: name the metrics to check ({{metrics}}, or the rules' "
                "metrics), e.g. ndcg@10,map"
            )
            raise CheckOptionError(msg)
        # each list's tie range, in the same pass (tie_warning=None turns it off)
        ranges = keywords.get("tie_warning", 0.01) is not None
        scored = evaluate_frame(
            frame.lazy(),
            with_depth(metrics),  # and each list's depth when a metric depends on it
            per_query=True,
            query=query,
            keep_tie_ranges=ranges,
            **keywords,
        )
        return scored.collect()  # evaluate refuses a repeated (query, item) itself
    table = frame.lazy().collect() if isinstance(frame, pl.LazyFrame) else frame
    table = table.drop([c for c in (by,) if c is not None and c in table.columns])
    nulls = table[query].null_count()
    if nulls:
        msg = (
            f"the {role}'s per-query table has {nulls} row(s) with a null query id in column "
            f"{query!r}: every row must name its query"
        )
        raise ColumnValueError(msg)
    if table.schema[query] == pl.String:
        # The CLI's --per-query output carries each system's summary under query "all"; a
        # real query of that name would be dropped with it (the writer refuses one), so two
        # such rows are a collision, not a summary.
        summaries = table.filter(pl.col(query) == _SUMMARY_QUERY).height
        if summaries > 1:
            msg = (
                f"the {role}'s per-query table has {summaries} rows with query "
                f"{_SUMMARY_QUERY!r}, the id of the summary row rank-eval --per-query writes: "
                f"a real query of that name cannot be told from the summary; rename that query "
                "and write the table again"
            )
            raise ColumnValueError(msg)
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
    repeated = table.group_by(query).len().filter(pl.col("len") > 1)
    if repeated.height:
        msg = (
            f"the {role}'s per-query table has {repeated.height} quer"
            f"{'y' if repeated.height == 1 else 'ies'} on more than one row (e.g. "
            f"{repeated[query][0]!r}, {repeated['len'][0]} rows): it needs one row per query; "
            f"filter it to one system or segment first"
        )
        raise DuplicateItemError(msg)
    return table.select(query, *wanted)


def _one_system(
    frame: pl.DataFrame | pl.LazyFrame, role: str, by: str, system: object
) -> pl.DataFrame | pl.LazyFrame:
    names = frame.lazy().select(pl.col(by).unique().sort()).collect().to_series().to_list()
    if system is None:
        if len(names) == 1:
            return frame.drop(by)
        msg = (
            f"the {role} holds {len(names)} systems in column {_literal(repr(by))} "
            f"({_literal(names[:5])}): choose one with {{{role}_system}}"
        )
        raise CheckOptionError(msg)
    if system not in names:
        msg = (
            f"option {{{role}_system}} {_literal(repr(system))} is not in column "
            f"{_literal(repr(by))}; its values: {_literal(names[:10])}"
        )
        raise CheckOptionError(msg)
    return frame.filter(pl.col(by) == system).drop(by)


def _is_table(value: object) -> bool:
    """A table (Polars, pandas, Arrow), not a system value: the old ``baseline=`` of check."""
    if isinstance(value, (pl.DataFrame, pl.LazyFrame)):
        return True
    # pandas and pyarrow tables, without importing either: both have columns and a row count
    return hasattr(value, "columns") and (hasattr(value, "shape") or hasattr(value, "num_rows"))


def _table_as_reference(function: _CheckT) -> _CheckT:
    """``baseline=TABLE``, the old name of ``reference=``, kept working with a warning.

    ``baseline`` now names a system value (as everywhere), so a table given as ``baseline=``
    is the old second argument; a system value is passed on untouched.
    """

    @functools.wraps(function)
    def forward(*args: Any, **keywords: Any) -> Any:
        if _is_table(keywords.get("baseline")):
            if len(args) > 1 or "reference" in keywords:
                msg = (
                    "check() got a table as baseline= and a reference: the table to check "
                    "against is reference= (baseline= names its system)"
                )
                raise CheckOptionError(msg)
            warn_at(
                "check(): the table to check against is now reference= (baseline= names a "
                "system, a value of by=); baseline=TABLE is removed in 0.3.0",
                RankEvalDeprecationWarning,
            )
            keywords["reference"] = keywords.pop("baseline")
        return function(*args, **keywords)

    return forward  # type: ignore[return-value]


@_table_as_reference
@renamed(candidate="data", candidate_system="system", baseline_system="baseline")
def check(  # type: ignore[misc]  # query= names both sides' column; evaluate gets it too
    data: object,
    reference: object,
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
    system: object = None,
    baseline: object = None,
    query: str = "query",
    lower_is_better: LowerIsBetter = None,
    direction: Directions = None,
    **options: Unpack[EvaluateOptions],
) -> CheckResult:
    """Check a candidate (``data``) against a ``reference`` with regression rules.

    ``.passed`` says the verdict. The reference's system is the baseline: Δ = candidate −
    baseline.

    Parameters
    ----------
    data, reference
        The candidate and the table it is checked against. Each a log (rows of query, item,
        score, relevance: evaluated here) or a per-query table (a query column and a column per
        metric, e.g. ``evaluate(..., per_query=True)`` or the Parquet file ``rank-eval ...
        --per-query -o`` writes). DataFrame, LazyFrame, pandas or Arrow. (The old names
        ``candidate=`` and a table as ``baseline=`` still work, with a deprecation warning.)
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
    test, correction, alpha, n_resamples, seed, lower_is_better, direction
        As in :func:`polars_rankeval.compare_per_query`: ``direction={"arp@10": "lower"}``
        overrides a metric's direction, and "worse" follows it.
    by, system, baseline
        A side with a ``by`` column holding several systems needs a value of it to pick one:
        ``system=`` in ``data`` (the candidate), ``baseline=`` in ``reference``; with a single
        system the column is dropped. (Their old names ``candidate_system=`` and
        ``baseline_system=`` still work, with a deprecation warning.)
    query
        The query id column of both sides.
    **options
        For sides that are logs: options of :func:`polars_rankeval.evaluate` (``item=``,
        ``score=``, ``relevance=``, ``convention=``...).

    Returns
    -------
    CheckResult
        ``passed``, ``table`` (a row per metric: ``metric, higher_is_better, value,
        baseline_value`` (the candidate's and the baseline's values as evaluate gives them),
        ``delta, ci_low, ci_high, interval_scale, p_value, p_adjusted, significant, wins,
        ties, losses, n_queries, verdict, reasons``, then ``tie_range, tie_flip``),
        ``reasons`` (one sentence per broken rule), ``queries`` (counts), ``text()``, ``markdown()``
        and ``json()``.

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
    evaluate_keywords: dict[str, Any] = dict(options)
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
    reading: dict[str, Any] = {"by": by, "query": query, "keywords": evaluate_keywords}
    base = _side(reference, _BASELINE, specs, system=baseline, **reading)
    base, base_ranges = split_tie_ranges(base, [query])  # a log's tie ranges (ties.py)
    # The baseline's columns name the metrics (a sweep ndcg@5,10 is two): the candidate is
    # evaluated on, or must hold, the same.
    names = [name for name in base.columns if name not in (query, DEPTH_COLUMN)]
    gate.check_named(names)
    unknown = sorted(set(direction or {}) - set(names))
    if unknown:  # before the candidate is read, in the caller's spelling (CheckOptionError)
        msg = (
            f"option {{direction}} names {_literal(unknown)}, which are not among the metrics "
            f"{_literal(names)}"
        )
        raise CheckOptionError(msg)
    cand = _side(data, _CANDIDATE, names, system=system, **reading)
    cand, cand_ranges = split_tie_ranges(cand, [query])
    for role, side in ((_BASELINE, base), (_CANDIDATE, cand)):
        if side.height == 0:
            msg = (
                f"the {role} has no query rows (an empty table, or only the summary row "
                f"{_SUMMARY_QUERY!r}): store its per-query values (--per-query)"
            )
            raise ColumnValueError(msg)
    base, cand = _same_types(base, cand, query, names)
    cand = _unchanged_as_equal(base, cand, query, names)
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
        ],
        how="diagonal",  # a side that is a log also has its lists' depths (DepthWarning)
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
        unpaired_queries="drop",
        lower_is_better=lower_is_better,
        direction=direction,
    )
    sides = [
        ranges.with_columns(pl.lit(role).alias(_SIDE))
        for role, ranges in ((_BASELINE, base_ranges), (_CANDIDATE, cand_ranges))
        if ranges is not None
    ]
    ranged = pl.concat(sides, how="diagonal") if sides else None
    compared = with_tie_flags(compared, ranged, keys=[_SIDE], query=query)
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
    # where the order of tied scores could change a metric's verdict (not a rule: a note)
    table = table.join(
        compared.select(METRIC, "tie_range", "tie_flip"),
        on=METRIC,
        how="left",
        maintain_order="left",
    )
    settings = {
        "test": test,
        "correction": correction,
        "alpha": alpha,
        "rules": [rule.text for rule in gate.rules],
    }
    return CheckResult(
        passed=not reasons, table=table, reasons=reasons, queries=counts, settings=settings
    )


# Below this relative difference a query's two values are the same value computed twice.
_NOISE = 1e-12


def _unchanged_as_equal(
    base: pl.DataFrame, cand: pl.DataFrame, query: str, metrics: list[str]
) -> pl.DataFrame:
    """The candidate's values, with those equal to the baseline's up to ``_NOISE`` set equal."""
    paired = cand.join(base, on=query, how="left", suffix="__base", nulls_equal=True)
    snapped = []
    for name in metrics:
        mine, theirs = pl.col(name), pl.col(f"{name}__base")
        close = (mine - theirs).abs() <= _NOISE * pl.max_horizontal(theirs.abs(), pl.lit(1.0))
        snapped.append(pl.when(close).then(theirs).otherwise(mine).alias(name))
    return paired.with_columns(snapped).select(cand.columns)


def _same_types(
    base: pl.DataFrame, cand: pl.DataFrame, query: str, metrics: list[str]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Query ids of one type on both sides (a stored file may read "7" where a log has 7)."""
    casts = [pl.col(name).cast(pl.Float64) for name in metrics]
    if base.schema[query] != cand.schema[query]:
        casts.append(pl.col(query).cast(pl.String))
    return base.with_columns(casts), cand.with_columns(casts)
