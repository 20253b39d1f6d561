"""Interleaving credit against mpkato/interleaving, brute force, and an exact binomial.

References, none of them our code:

* mpkato/interleaving ``tests/test_team_draft.py::test_evaluate`` (its expected ``(winner,
  loser)`` pairs transcribed below) and its ``InterleavingMethod.evaluate`` /
  ``TeamDraft.compute_scores`` (``interleaving/interleaving_method.py``,
  ``interleaving/team_draft.py``) transcribed as :func:`mpkato_evaluate`, run per impression on
  generated logs and aggregated in plain Python;
* the two-sided sign test from ``math.comb`` (:func:`sign_p`);
* Chapelle et al. (TOIS 2012)'s ``Δ_AB = (wins + ties/2) / n - 1/2`` in plain Python.
"""

from __future__ import annotations

import itertools
import math
import random
import re
import statistics
from pathlib import Path

import pandas as pd
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    ColumnValueError,
    EmptyEvaluationWarning,
    InvalidOptionError,
)
from polars_rankeval.offpolicy._interleaving import impression_outcomes, interleaving


# --- the references ------------------------------------------------------------------------
def mpkato_compute_scores(ranking: list[int], teams: dict[int, set[int]], clicks: list[int]):
    """``TeamDraft.compute_scores``: per team, the clicked positions holding its documents."""
    return {i: len([c for c in clicks if ranking[c] in teams[i]]) for i in teams}


def mpkato_evaluate(ranking: list[int], teams: dict[int, set[int]], clicks: list[int]):
    """``InterleavingMethod.evaluate``: ``(i, j)`` means ranker i won against ranker j."""
    scores = mpkato_compute_scores(ranking, teams, clicks)
    result = []
    for i in range(len(scores)):
        for j in range(i + 1, len(scores)):
            if scores[i] > scores[j]:
                result.append((i, j))
            elif scores[i] < scores[j]:
                result.append((j, i))
    return result


def sign_p(wins: int, losses: int) -> float:
    """Exact two-sided sign test: twice the smaller binomial tail at p = 1/2, at most 1."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2**n
    return min(1.0, 2 * tail)


def as_log(ranking: list[int], teams: dict[int, set[int]], clicks: list[int], query: int = 1):
    """mpkato's (ranking, teams, clicked positions) as log rows: one per shown document."""
    owner = {doc: team for team, docs in teams.items() for doc in docs}
    return [
        {"query": query, "item": doc, "team": owner[doc], "click": int(pos in clicks)}
        for pos, doc in enumerate(ranking)
    ]


def winners(per_query: pl.DataFrame) -> set[tuple[int, int]]:
    """Our per-impression outcomes as mpkato's ``(winner, loser)`` pairs (ties give none)."""
    found = set()
    for row in per_query.iter_rows(named=True):
        if row["outcome"] == "win":
            found.add((row["team"], row["baseline_team"]))
        elif row["outcome"] == "loss":
            found.add((row["baseline_team"], row["team"]))
    return found


# --- mpkato's test_evaluate, transcribed ---------------------------------------------------
TEST_EVALUATE = [
    # tests/test_team_draft.py::test_evaluate: contents, teams, clicks, expected pairs
    ([1, 2], {0: {1}, 1: {2}}, [0, 1], []),
    ([1, 2], {0: {1}, 1: {2}}, [0], [(0, 1)]),
    ([1, 2], {0: {1}, 1: {2}}, [1], [(1, 0)]),
    ([1, 2], {0: {1}, 1: {2}}, [], []),
    ([1, 3, 4], {0: {1}, 1: {3, 4}}, [0, 1, 2], [(1, 0)]),
    ([1, 3, 4], {0: {1}, 1: {3, 4}}, [0, 1], []),
    ([1, 3, 4], {0: {1}, 1: {3, 4}}, [0, 2], []),
    ([1, 3, 4], {0: {1}, 1: {3, 4}}, [1, 2], [(1, 0)]),
    ([1, 3, 4], {0: {1}, 1: {3, 4}}, [0], [(0, 1)]),
    ([1, 3, 4], {0: {1}, 1: {3, 4}}, [1], [(1, 0)]),
    ([1, 3, 4], {0: {1}, 1: {3, 4}}, [2], [(1, 0)]),
    ([1, 3, 4], {0: {1}, 1: {3, 4}}, [], []),
]


@pytest.mark.parametrize(("ranking", "teams", "clicks", "expected"), TEST_EVALUATE)
def test_mpkato_team_draft_evaluate_cases(ranking, teams, clicks, expected) -> None:
    log = pl.DataFrame(as_log(ranking, teams, clicks))
    per_query = interleaving(log, per_query=True)
    assert per_query.height == 1  # one pair of teams, one impression
    assert winners(per_query) == set(expected)
    # the transcribed reference agrees with its own published expectations
    assert set(mpkato_evaluate(ranking, teams, clicks)) == set(expected)


def test_research_note_cases_as_one_log() -> None:
    """research.md Q1's four cases as impressions of one log: (1,0), tie, (0,1), (1,0)."""
    teams = {0: {1}, 1: {3, 4}}
    rows = []
    for query, clicks in enumerate([[0, 1, 2], [0, 1], [0], [2]]):
        rows += as_log([1, 3, 4], teams, clicks, query=query)
    result = interleaving(pl.DataFrame(rows))
    row = result.row(0, named=True)
    assert (row["team"], row["baseline_team"]) == (1, 0)
    assert (row["wins"], row["losses"], row["ties"], row["n_queries"]) == (2, 1, 1, 4)
    assert row["value"] == pytest.approx((2 + 1 / 2) / 4)
    assert row["delta"] == pytest.approx((2 + 1 / 2) / 4 - 0.5)
    assert row["p_value"] == pytest.approx(sign_p(2, 1))


def test_multileave_three_teams_every_pair() -> None:
    # positions 0..4; team 0 owns docs 10, 13; team 1 owns 11; team 2 owns 12, 14
    ranking, teams = [10, 11, 12, 13, 14], {0: {10, 13}, 1: {11}, 2: {12, 14}}
    clicks = [1, 2, 4]  # scores: team 0 -> 0, team 1 -> 1, team 2 -> 2
    per_query = interleaving(pl.DataFrame(as_log(ranking, teams, clicks)), per_query=True)
    assert per_query.height == 3
    assert winners(per_query) == set(mpkato_evaluate(ranking, teams, clicks))
    assert winners(per_query) == {(1, 0), (2, 0), (2, 1)}


# --- brute force on generated logs ---------------------------------------------------------
def generated_log(seed: int, n_impressions: int = 120, segments: bool = True):
    """Impressions of 2-4 teams (a team may contribute nothing), clicks, a segment column."""
    rng = random.Random(seed)
    rows, impressions = [], []
    names = ["bm25", "dense", "hybrid", "rerank"]
    for query in range(n_impressions):
        n_teams = rng.choice([2, 3, 4]) if query % 7 else 2
        length = rng.randint(1, 6)
        ranking = list(range(100 * query, 100 * query + length))
        teams: dict[int, set[int]] = {i: set() for i in range(n_teams)}
        for doc in ranking:
            teams[rng.randrange(n_teams)].add(doc)
        clicks = [pos for pos in range(length) if rng.random() < 0.3]
        segment = rng.choice(["mobile", "desktop", None]) if segments else None
        impressions.append((query, ranking, teams, clicks, segment))
        owner = {doc: team for team, docs in teams.items() for doc in docs}
        rows += [
            {
                "query": f"q{query:04d}",
                "item": doc,
                "team": names[owner[doc]],
                "click": int(pos in clicks),
                "device": segment,
            }
            for pos, doc in enumerate(ranking)
        ]
    rng.shuffle(rows)  # our results never depend on row order
    return pl.DataFrame(rows, schema_overrides={"device": pl.String}), impressions, names


def brute_force(impressions, names, *, segmented: bool):
    """Plain-Python summary per (segment, team, baseline_team) from mpkato's evaluate."""
    outcomes: dict[tuple, list[float]] = {}
    for _query, ranking, teams, clicks, segment in impressions:
        # a team that contributed nothing left no row: it is not in the impression
        present = {i: docs for i, docs in teams.items() if docs}
        index = sorted(present)  # mpkato numbers rankers 0..n-1
        renumbered = {k: present[i] for k, i in enumerate(index)}
        won = set(mpkato_evaluate(ranking, renumbered, clicks))
        for a, b in itertools.combinations(range(len(index)), 2):
            first, second = names[index[a]], names[index[b]]
            # our orientation: the larger name is `team`, the smaller `baseline_team`
            big, small = (a, b) if first > second else (b, a)
            outcome = 1.0 if (big, small) in won else 0.0 if (small, big) in won else 0.5
            key = (segment if segmented else None, names[index[big]], names[index[small]])
            outcomes.setdefault(key, []).append(outcome)
    return outcomes


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_summary_equals_brute_force_per_segment(seed: int) -> None:
    log, impressions, names = generated_log(seed)
    expected = brute_force(impressions, names, segmented=True)
    result = interleaving(log, by="device", alpha=0.1)
    assert result.columns[:4] == ["metric", "device", "team", "baseline_team"]
    assert result.height == len(expected)
    z = statistics.NormalDist().inv_cdf(0.95)
    for row in result.iter_rows(named=True):
        values = expected[(row["device"], row["team"], row["baseline_team"])]
        wins, losses = values.count(1.0), values.count(0.0)
        assert (row["wins"], row["losses"], row["ties"]) == (wins, losses, values.count(0.5))
        assert row["n_queries"] == len(values)
        assert row["delta"] == pytest.approx((wins + values.count(0.5) / 2) / len(values) - 0.5)
        assert row["p_value"] == pytest.approx(sign_p(wins, losses), rel=1e-12)
        if len(values) > 1:
            half = z * statistics.stdev(values) / math.sqrt(len(values))
            assert row["ci_low"] == pytest.approx(row["delta"] - half)
            assert row["ci_high"] == pytest.approx(row["delta"] + half)
        else:
            assert row["ci_low"] is None


def test_per_query_outcomes_equal_brute_force() -> None:
    log, impressions, names = generated_log(5, segments=False)
    expected = brute_force(impressions, names, segmented=False)
    per_query = interleaving(log, per_query=True)
    assert per_query.columns == [
        "metric",
        "team",
        "baseline_team",
        "query",
        "clicks",
        "baseline_clicks",
        "outcome",
        "value",
    ]
    for (_, team, base), values in expected.items():
        found = per_query.filter(team=team, baseline_team=base)
        assert sorted(found["value"].to_list()) == sorted(values)
    assert per_query.height == sum(map(len, expected.values()))


def test_baseline_compares_every_other_team_with_it() -> None:
    log, impressions, names = generated_log(3, segments=False)
    expected = brute_force(impressions, names, segmented=False)
    result = interleaving(log, baseline="dense")
    assert set(result["baseline_team"]) == {"dense"}
    assert set(result["team"]) == {"bm25", "hybrid", "rerank"}
    for row in result.iter_rows(named=True):
        key = (None, *sorted([row["team"], "dense"], reverse=True))
        values = expected[key]
        flipped = row["team"] < "dense"  # the brute force put the larger name first
        wins, losses = values.count(1.0), values.count(0.0)
        if flipped:
            wins, losses = losses, wins
        assert (row["wins"], row["losses"]) == (wins, losses)
        assert row["p_value"] == pytest.approx(sign_p(wins, losses), rel=1e-12)


def test_sign_test_equals_compare_per_query_on_credit() -> None:
    """The same test through the project's paired machinery on each team's clicks."""
    log, _, _ = generated_log(4, segments=False)
    credit = log.group_by("query", "team").agg(pl.col("click").sum().alias("clicks"))
    compared = rke.compare_per_query(
        credit, by="team", metrics=["clicks"], test="sign", correction=None
    ).sort("baseline_team", "team")
    ours = interleaving(log)
    assert (
        ours.select("team", "baseline_team").rows()
        == compared.select("team", "baseline_team").rows()
    )
    assert ours["wins"].to_list() == compared["wins"].to_list()
    assert ours["losses"].to_list() == compared["losses"].to_list()
    assert ours["p_value"].to_list() == pytest.approx(compared["p_value"].to_list(), rel=1e-12)


def test_sign_test_is_exact_for_a_lopsided_log() -> None:
    # 30 impressions: 22 wins for b, 3 for a, 5 without clicks
    rows = []
    for query, (a_click, b_click) in enumerate([(0, 1)] * 22 + [(1, 0)] * 3 + [(0, 0)] * 5):
        rows += [
            {"query": query, "team": "a", "click": a_click},
            {"query": query, "team": "b", "click": b_click},
        ]
    row = interleaving(pl.DataFrame(rows)).row(0, named=True)
    assert (row["team"], row["wins"], row["losses"], row["ties"]) == ("b", 22, 3, 5)
    assert row["p_value"] == pytest.approx(sign_p(22, 3), rel=1e-12)
    assert row["p_value"] < 1e-3
    assert row["delta"] == pytest.approx((22 + 2.5) / 30 - 0.5)


# --- invariance: order, laziness, input type ------------------------------------------------
def test_same_result_for_every_input_form(tmp_path: Path) -> None:
    log, _, _ = generated_log(7)
    expected = interleaving(log, by="device")
    path = tmp_path / "log.parquet"
    log.write_parquet(path)
    forms = [
        log.sample(fraction=1.0, shuffle=True, seed=1),
        log.lazy(),
        log.to_pandas(),
        log.to_arrow(),
        path,
        str(path),
        log.with_columns(pl.col("team").cast(pl.Categorical), pl.col("click").cast(pl.Boolean)),
    ]
    for form in forms:
        found = interleaving(form, by="device")
        assert_frame_equal(found, expected, check_dtypes=not isinstance(form, pd.DataFrame))


def test_outcome_plan_streams_from_parquet(tmp_path: Path) -> None:
    log, _, _ = generated_log(8)
    path = tmp_path / "log.parquet"
    log.write_parquet(path)
    plan = impression_outcomes(
        pl.scan_parquet(path),
        team="team",
        click="click",
        query="query",
        segments=["device"],
        baseline=None,
    )
    dot = plan.show_graph(engine="streaming", plan_stage="physical", raw_output=True, show=False)
    assert isinstance(dot, str)
    assert "in-memory-map" not in dot
    legend = re.search(r'COLOR="([^"]+)">⬤</FONT> in-memory engine fallback', dot)
    assert legend is not None, dot
    assert f'fillcolor="{legend[1]}"' not in dot, dot  # no node in the fallback colour


def test_segment_without_a_pair_is_named_in_a_warning() -> None:
    rows = [
        {"query": 1, "team": "a", "click": 1, "market": "us"},
        {"query": 1, "team": "b", "click": 0, "market": "us"},
        {"query": 2, "team": "a", "click": 1, "market": "fr"},  # one team only
    ]
    with pytest.warns(EmptyEvaluationWarning, match=r"1 segment.*'fr'"):
        result = interleaving(pl.DataFrame(rows), by="market")
    assert result["market"].to_list() == ["us"]


def test_no_pair_at_all_warns_and_gives_an_empty_frame() -> None:
    rows = [{"query": 1, "team": "a", "click": 1}, {"query": 2, "team": "b", "click": 0}]
    with pytest.warns(EmptyEvaluationWarning, match="no impression shows two teams"):
        result = interleaving(pl.DataFrame(rows))
    assert result.is_empty()
    assert result.columns[-1] == "p_value"


# --- bad input names the rows ---------------------------------------------------------------
LOG = pl.DataFrame(
    {"query": [1, 1, 2, 2, 3, 3], "team": ["a", "b"] * 3, "click": [1, 0, 0, 1, 0, 0]}
)


def test_clicked_row_without_a_team_is_named() -> None:
    bad = LOG.with_columns(team=pl.when(pl.col("query") == 2).then(None).otherwise("team"))
    with pytest.raises(ColumnValueError, match=r"'team'.*null on 2 row\(s\).*row 2 \(query=2"):
        interleaving(bad)


@pytest.mark.parametrize(("click", "shown"), [(2, "click=2"), (None, "click=None")])
def test_click_outside_zero_one_is_named(click, shown) -> None:
    bad = LOG.with_columns(click=pl.when(pl.col("query") == 3).then(click).otherwise("click"))
    with pytest.raises(ColumnValueError, match=rf"'click'.*2 row\(s\).*row 4 \(query=3.*{shown}"):
        interleaving(bad)


def test_nan_click_and_null_impression_are_named() -> None:
    with pytest.raises(ColumnValueError, match=r"'click'.*click=nan"):
        interleaving(LOG.with_columns(pl.col("click").cast(pl.Float64).replace(1.0, math.nan)))
    with pytest.raises(ColumnValueError, match=r"'query'.*null on 1 row\(s\).*row 5"):
        interleaving(LOG.with_columns(query=pl.Series([1, 1, 2, 2, 3, None])))


def test_missing_and_mistyped_columns() -> None:
    with pytest.raises(ColumnNotFoundError, match=r"'ranker'.*columns present"):
        interleaving(LOG, team="ranker")
    with pytest.raises(ColumnNotFoundError, match="'device'"):
        interleaving(LOG, by="device")
    with pytest.raises(ColumnTypeError, match=r"'click'.*dtype String"):
        interleaving(LOG.with_columns(pl.col("click").cast(pl.String)))


def test_bad_options() -> None:
    with pytest.raises(InvalidOptionError, match=r"baseline= must be one of \['a', 'b'\]"):
        interleaving(LOG, baseline="c")
    with pytest.raises(InvalidOptionError, match="alpha="):
        interleaving(LOG, alpha=1.5)
    with pytest.raises(InvalidOptionError, match="both team= and query="):
        interleaving(LOG, team="query")
    with pytest.raises(InvalidOptionError, match="output column"):
        interleaving(LOG.rename({"query": "wins"}), query="wins")
    with pytest.raises(InvalidOptionError, match="data must be"):
        interleaving([1, 2, 3])
