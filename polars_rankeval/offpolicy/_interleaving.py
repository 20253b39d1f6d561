"""Interleaving analysis: team-draft (multileaving) credit from a click log, and a paired test.

An interleaving experiment shows each user one list merged from several rankers' lists, and
records which ranker (its *team*) contributed each shown item. The log has one row per
(impression, shown item): the impression id (``query``), the contributing ``team`` and the
``click`` (0 or 1).

**Credit** (team draft, Radlinski, Kurup and Joachims 2008; multileaving, Schuth et al. 2014),
exactly as mpkato/interleaving ``InterleavingMethod.evaluate`` with ``TeamDraft.compute_scores``
(``interleaving/interleaving_method.py``, ``interleaving/team_draft.py``): a team's credit in an
impression is the number of clicked items it contributed; for every pair of teams shown in the
impression the one with more credit *wins*, the other *loses*, equal credit (no click included)
is a *tie*. With two teams this is team-draft interleaving, with more it is team-draft
multileaving (every pair of rankers compared in every impression).

**Summary per pair** (``team`` against ``baseline_<team>``) over the impressions in which both
teams have a row: ``wins``, ``losses``, ``ties``, ``n_queries`` (those impressions),
``value = (wins + ties / 2) / n_queries`` (the share of the credit, the mean of the
per-impression outcome 1 / 0.5 / 0) and ``delta = value - 0.5``, the preference
``Δ_AB = P(A wins) + P(tie) / 2 - 1/2`` of Chapelle, Joachims, Radlinski and Yue, "Large-scale
validation and analysis of interleaved search evaluation", ACM TOIS 30(1), 2012 (> 0: ``team``
is preferred). ``p_value`` is the exact two-sided sign test (binomial, p = 1/2) of wins against
losses, ties left out: the test those papers use, and exact at any number of impressions.
``ci_low``/``ci_high`` bound ``delta`` by the normal interval of the mean outcome.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import polars as pl

from polars_rankeval._engine.options import check_choice
from polars_rankeval._engine.vocabulary import (
    CI_HIGH,
    CI_LOW,
    DELTA,
    METRIC,
    N_QUERIES,
    VALUE,
    baseline_column,
)
from polars_rankeval._engine.warn import warn_at
from polars_rankeval.comparison._stats import _scipy_stats, sign_p
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    ColumnValueError,
    EmptyEvaluationWarning,
    InvalidOptionError,
)
from polars_rankeval.offpolicy._options import read_log

#: The ``metric`` of every row: team-draft credit (interleaving and multileaving alike).
TEAM_DRAFT = "team_draft"
#: The columns of the summary after ``metric``, the segments and the two teams' columns.
SUMMARY = [N_QUERIES, "wins", "losses", "ties", VALUE, DELTA, CI_LOW, CI_HIGH, "p_value"]
#: The per-impression columns after the impression id (``per_query=True``).
PER_QUERY = ["clicks", "baseline_clicks", "outcome", VALUE]
_EXAMPLES = 5  # offending rows named in an error
_ROW = "__rke_row"
_CLICK = "__rke_click"
_OTHER = "__rke_other_team"
_OTHER_CLICKS = "__rke_other_clicks"


def _names(team: str, click: str, query: str, by: str | Sequence[str] | None) -> tuple[str, ...]:
    """The segment columns, after checking every column option names a distinct column."""
    segments: tuple[str, ...] = () if by is None else (by,) if isinstance(by, str) else tuple(by)
    for option, name in (("team", team), ("click", click), ("query", query)):
        if not isinstance(name, str) or not name:
            msg = f"option {option}= must be a column name (a non-empty string), got {name!r}"
            raise InvalidOptionError(msg)
    if not all(isinstance(name, str) for name in segments):
        msg = f"option by= must be a column name or a list of them, got {by!r}"
        raise InvalidOptionError(msg)
    roles = [("team", team), ("click", click), ("query", query), *(("by", s) for s in segments)]
    seen: dict[str, str] = {}
    for option, name in roles:
        if name in seen:
            msg = f"column {name!r} is named by both {seen[name]}= and {option}=; give each its own"
            raise InvalidOptionError(msg)
        seen[name] = option
    taken = {METRIC, baseline_column(team), *SUMMARY, *PER_QUERY}
    clash = [name for name in (team, query, *segments) if name in taken]
    if clash:
        msg = (
            f"column {clash[0]!r} would take the name of an output column of interleaving "
            f"(its output has {sorted(taken)}); rename the column"
        )
        raise InvalidOptionError(msg)
    return segments


def _check_schema(lf: pl.LazyFrame, team: str, click: str, needed: Sequence[str]) -> pl.LazyFrame:
    """Refuse missing columns and a click column that is not numbers; categorical teams as text."""
    schema = lf.collect_schema()
    for name in needed:
        if name not in schema:
            msg = (
                f"column {name!r} is not in data; columns present: {list(schema.names())} "
                f"(interleaving reads one row per (impression, shown item) with its team and click)"
            )
            raise ColumnNotFoundError(msg)
    dtype = schema[click]
    if not (dtype.is_numeric() or dtype == pl.Boolean):
        msg = f"column {click!r} (click) must be 0/1 numbers or booleans, got dtype {dtype}"
        raise ColumnTypeError(msg)
    if isinstance(schema[team], (pl.Categorical, pl.Enum)):
        # Pairs are oriented by comparing team values; categories compare as their text.
        lf = lf.with_columns(pl.col(team).cast(pl.String))
    return lf


def _check_values(lf: pl.LazyFrame, team: str, click: str, query: str) -> None:
    """One pass counting bad rows; a second, only on failure, to name the first few."""
    value = pl.col(click).cast(pl.Float64)
    problems = {
        f"column {query!r} (the impression id) is null": pl.col(query).is_null(),
        f"column {team!r} (the team that contributed the item) is null": pl.col(team).is_null(),
        f"column {click!r} (click) is null or not 0 or 1": value.is_null()
        | ~value.is_in([0.0, 1.0]),
    }
    counts = lf.select(
        *(mask.sum().alias(str(i)) for i, mask in enumerate(problems.values()))
    ).collect()
    for i, (problem, mask) in enumerate(problems.items()):
        count = int(counts[str(i)][0])
        if count == 0:
            continue
        rows = lf.with_row_index(_ROW).filter(mask).head(_EXAMPLES).collect()
        shown = ", ".join(
            f"row {row[_ROW]} ({query}={row[query]!r}, {team}={row[team]!r}, "
            f"{click}={row[click]!r})"
            for row in rows.iter_rows(named=True)
        )
        msg = (
            f"{problem} on {count} row(s), e.g. {shown} (rows counted from 0); every shown "
            "item needs its impression, the team (ranker) that contributed it, and a click 0 or 1"
        )
        raise ColumnValueError(msg)


def impression_outcomes(
    lf: pl.LazyFrame,
    *,
    team: str,
    click: str,
    query: str,
    segments: Sequence[str],
    baseline: object = None,
) -> pl.LazyFrame:
    """One row per (segment, pair of teams, impression) in which both teams have a row.

    A lazy, frame-level plan (group-by, self-join, filter), so it streams over a Parquet scan.
    The pair is ``(team, baseline_<team>)``: the baseline against every other team, or every
    pair with the larger team value as ``team`` (compare's order: ``baseline_<team>`` is the
    earlier system).
    """
    keys = [*segments, query]
    credit = lf.group_by([*keys, team]).agg(pl.col(click).cast(pl.Int64).sum().alias("clicks"))
    other = credit.rename({team: _OTHER, "clicks": _OTHER_CLICKS})
    paired = credit.join(other, on=keys, how="inner", nulls_equal=True)
    if baseline is None:
        paired = paired.filter(pl.col(team) > pl.col(_OTHER))
    else:
        paired = paired.filter(
            (pl.col(_OTHER) == pl.lit(baseline)) & (pl.col(team) != pl.lit(baseline))
        )
    mine, theirs = pl.col("clicks"), pl.col(_OTHER_CLICKS)
    return paired.select(
        pl.lit(TEAM_DRAFT).alias(METRIC),
        *segments,
        team,
        pl.col(_OTHER).alias(baseline_column(team)),
        query,
        "clicks",
        theirs.alias("baseline_clicks"),
        pl.when(mine > theirs)
        .then(pl.lit("win"))
        .when(mine < theirs)
        .then(pl.lit("loss"))
        .otherwise(pl.lit("tie"))
        .alias("outcome"),
        pl.when(mine > theirs).then(1.0).when(mine < theirs).then(0.0).otherwise(0.5).alias(VALUE),
    )


def _summarise(
    outcomes: pl.LazyFrame, team: str, segments: Sequence[str], alpha: float
) -> pl.DataFrame:
    pair = [*segments, team, baseline_column(team)]
    outcome = pl.col("outcome")
    counts = (
        outcomes.group_by(pair)
        .agg(
            pl.len().cast(pl.Int64).alias(N_QUERIES),
            (outcome == "win").sum().cast(pl.Int64).alias("wins"),
            (outcome == "loss").sum().cast(pl.Int64).alias("losses"),
            (outcome == "tie").sum().cast(pl.Int64).alias("ties"),
            pl.col(VALUE).mean().alias(VALUE),
            pl.col(VALUE).std(ddof=1).alias("__rke_sd"),
        )
        .collect()
    )
    z = statistics.NormalDist().inv_cdf(1 - alpha / 2)
    half = z * pl.col("__rke_sd") / pl.col(N_QUERIES).cast(pl.Float64).sqrt()
    delta = pl.col(VALUE) - 0.5
    p_values = _sign_test(counts["wins"].to_list(), counts["losses"].to_list())
    return (
        counts.with_columns(
            pl.lit(TEAM_DRAFT).alias(METRIC),
            delta.alias(DELTA),
            (delta - half).alias(CI_LOW),
            (delta + half).alias(CI_HIGH),
            pl.Series("p_value", p_values, dtype=pl.Float64),
        )
        .select(METRIC, *pair, *SUMMARY)
        .sort([*segments, baseline_column(team), team], nulls_last=True)
    )


def _sign_test(wins: list[int], losses: list[int]) -> list[float]:
    """Exact two-sided binomial (p = 1/2) p-value of wins among the non-tied impressions."""
    if not wins:
        return []
    stats = _scipy_stats("interleaving()")
    return [sign_p(w, lo, stats) for w, lo in zip(wins, losses, strict=True)]


def _warn_empty(lf: pl.LazyFrame, found: pl.DataFrame, segments: Sequence[str]) -> None:
    """Name the segments with rows but no pair of teams (one team only, or no baseline)."""
    if not segments:
        if found.is_empty():
            msg = "interleaving: no impression shows two teams, so no pair of teams is compared"
            warn_at(msg, EmptyEvaluationWarning)
        return
    present = lf.select(segments).unique().collect()
    missing = present.join(
        found.select(segments).unique(), on=list(segments), how="anti", nulls_equal=True
    )
    if missing.height:
        shown = ", ".join(map(repr, missing.sort(segments).head(_EXAMPLES).rows()))
        msg = (
            f"interleaving: {missing.height} segment(s) of by={list(segments)} have no "
            f"impression showing two teams (or the baseline) and are left out, e.g. {shown}"
        )
        warn_at(msg, EmptyEvaluationWarning)


def interleaving(
    data: object,
    *,
    team: str = "team",
    click: str = "click",
    query: str = "query",
    by: str | Sequence[str] | None = None,
    baseline: object = None,
    alpha: float = 0.05,
    per_query: bool = False,
) -> pl.DataFrame:
    """Team-draft interleaving and multileaving: wins, losses, ties and a sign test per pair.

    Parameters
    ----------
    data
        The interleaving log, one row per (impression, shown item): a DataFrame, LazyFrame,
        pandas or pyarrow table, or a path (Parquet, CSV, NDJSON; read lazily).
    team
        The column naming the ranker (team) that contributed the shown item; never null.
    click
        The click column: 0/1 numbers or booleans, never null.
    query
        The impression id column: the rows of one shown list.
    by
        Segment column(s): every pair is compared inside each segment (null is a segment).
    baseline
        A team value: every other team is compared with it. None compares every pair, the
        larger team value as ``team`` and the smaller as ``baseline_<team>``.
    alpha
        The intervals are at ``1 - alpha``.
    per_query
        True: one row per (segment, pair, impression) with both teams' credit (``clicks``,
        ``baseline_clicks``), the ``outcome`` ("win", "loss", "tie", for ``team``) and its
        ``value`` (1, 0.5, 0), instead of the summary.

    Returns
    -------
    polars.DataFrame
        ``metric`` ("team_draft"), the ``by`` columns, the team's column, ``baseline_<team>``,
        then ``n_queries`` (impressions showing both teams), ``wins``, ``losses``, ``ties``,
        ``value`` (``(wins + ties/2) / n_queries``), ``delta`` (``value - 0.5``: Chapelle et al.
        2012's preference, > 0 when ``team`` is preferred), ``ci_low``/``ci_high`` (normal
        interval of ``delta``) and ``p_value`` (exact sign test of wins against losses). It runs
        at the call: the test needs the counts.

    Notes
    -----
    A pair is compared on the impressions in which both teams have a row: a team that
    contributed nothing to an impression left no trace in its log. An impression without
    clicks is a tie (as in mpkato/interleaving); it moves ``delta`` towards 0 but not the sign
    test. To count only clicked impressions, filter them first, e.g.
    ``log.filter(pl.col("click").sum().over("query") > 0)``. The same sign test comes from
    ``rke.compare_per_query(credit, by="team", test="sign")`` on a table of each team's clicks
    per impression.

    Examples
    --------
    >>> import polars as pl
    >>> log = pl.DataFrame(
    ...     {
    ...         "query": [1, 1, 2, 2, 3, 3, 4, 4],
    ...         "team": ["a", "b"] * 4,
    ...         "click": [1, 0, 1, 0, 0, 1, 0, 0],
    ...     }
    ... )
    >>> result = interleaving(log, baseline="b")
    >>> result.select("team", "baseline_team", "wins", "losses", "ties", "delta", "p_value")
    shape: (1, 7)
    ┌──────┬───────────────┬──────┬────────┬──────┬───────┬─────────┐
    │ team ┆ baseline_team ┆ wins ┆ losses ┆ ties ┆ delta ┆ p_value │
    │ ---  ┆ ---           ┆ ---  ┆ ---    ┆ ---  ┆ ---   ┆ ---     │
    │ str  ┆ str           ┆ i64  ┆ i64    ┆ i64  ┆ f64   ┆ f64     │
    ╞══════╪═══════════════╪══════╪════════╪══════╪═══════╪═════════╡
    │ a    ┆ b             ┆ 2    ┆ 1      ┆ 1    ┆ 0.125 ┆ 1.0     │
    └──────┴───────────────┴──────┴────────┴──────┴───────┴─────────┘
    """
    segments = _names(team, click, query, by)
    if not (isinstance(alpha, (int, float)) and not isinstance(alpha, bool) and 0 < alpha < 1):
        msg = f"option alpha= must be a number in (0, 1), got {alpha!r}"
        raise InvalidOptionError(msg)
    if not isinstance(per_query, bool):
        msg = f"option per_query= must be True or False, got {per_query!r}"
        raise InvalidOptionError(msg)
    lf = _check_schema(read_log(data), team, click, [query, team, click, *segments])
    _check_values(lf, team, click, query)
    if baseline is not None:
        teams = lf.select(pl.col(team).unique().sort()).collect().to_series().to_list()
        baseline = check_choice("baseline", baseline, teams)
    outcomes = impression_outcomes(
        lf, team=team, click=click, query=query, segments=segments, baseline=baseline
    )
    if per_query:
        found = outcomes.sort([*segments, baseline_column(team), team, query], nulls_last=True)
        result = found.collect()
    else:
        result = _summarise(outcomes, team, segments, float(alpha))
    _warn_empty(lf, result, segments)
    return result
