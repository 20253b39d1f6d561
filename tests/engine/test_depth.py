"""``depth=`` and ``judged_only=``: trec_eval's ``-M`` and ``-J`` as engine options.

Checked against trec_eval's own output (``expected_v10/out.test.aqcM``: ``-M100``), a
brute-force cut written on :mod:`tests.support.reference`, hand-worked values, and the design
review's snippet 10 (integer item ids 9 and 10 tied, ``-M 1``), from Python and the command line.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval.cli import main as cli_main
from polars_rankeval.errors import InvalidOptionError
from tests.support import reference as ref

DATA = Path(__file__).parents[1] / "data"
# trec_eval's names in out.test.aqcM -> ours (per query; "all" is the mean)
AQCM = {
    "num_ret": "num_ret",
    "num_rel": "num_rel",
    "num_rel_ret": "num_rel_ret",
    "map": "map",
    "P_10": "p@10",
    "P_100": "p@100",
    "P_200": "p@200",
    "recall_100": "recall@100",
    "recall_1000": "recall@1000",
    "ndcg": "ndcg",
    "Rprec": "r_precision",
    "bpref": "bpref",
}


def _expected(name: str) -> dict[str, dict[str, float]]:
    """``{trec measure: {query: value}}`` of a trec_eval ``-q`` output file."""
    out: dict[str, dict[str, float]] = {}
    for line in (DATA / "expected_v10" / name).read_text().splitlines():
        measure, query, value = line.split()
        if measure in AQCM:
            out.setdefault(measure, {})[query] = float(value)
    return out


def _trunc_log() -> pl.DataFrame:
    run = rke.read_trec_run(DATA / "results.trunc")
    qrels = rke.read_trec_qrels(DATA / "qrels.test")
    with pytest.warns(rke.QueryCoverageWarning):  # topic 302: judged, not in the run
        return rke.join_run_qrels(run, qrels).collect()


def test_depth_matches_trec_eval_minus_M():
    """``depth=100, missing_queries="zero"`` is ``trec_eval -q -c -M100`` (published output)."""
    log = _trunc_log()
    wanted = _expected("out.test.aqcM")
    got = rke.evaluate(log, list(AQCM.values()), per_query=True, depth=100, missing_queries="zero")
    values = {str(row["query"]): row for row in got.iter_rows(named=True)}
    for measure, ours in AQCM.items():
        for query, value in wanted[measure].items():
            if query == "all":
                continue
            assert values[query][ours] == pytest.approx(value, abs=5e-5), (measure, query)
    # the cut matters on this data: without it, the run holds more than 100 per topic
    full = rke.evaluate(log, ["num_ret"], missing_queries="zero")
    assert full["num_ret"][0] > wanted["num_ret"]["all"]


def _brute_rows(
    rows: list[tuple[str, Any, float | None, int | None]], depth: int | None, judged_only: bool
) -> list[tuple[str, Any, float | None, int | None]]:
    """trec_eval's -M then -J, written on the reference's sort key (not the engine's)."""
    out = []
    for query in sorted({row[0] for row in rows}):
        mine = [row for row in rows if row[0] == query]
        retrieved = sorted(
            (row for row in mine if row[2] is not None),
            key=lambda row: ref.trec_sort_key(row[1], row[2]),
            reverse=True,
        )
        kept = retrieved if depth is None else retrieved[:depth]
        cut = [] if depth is None else retrieved[depth:]
        # past the cut: a judged item stays, not retrieved; an unjudged one leaves
        rest = [row for row in mine if row[2] is None]
        rest += [(q, item, None, label) for q, item, _, label in cut if label is not None]
        if judged_only:
            kept = [row for row in kept if row[3] is not None and row[3] >= 0]
        out += kept + rest
    return out


def _random_log(seed: int) -> list[tuple[str, Any, float | None, int | None]]:
    rng = random.Random(seed)
    rows = []
    for q in range(6):
        items = rng.sample(range(1, 40), rng.randint(1, 12))
        for item in items:
            retrieved = rng.random() < 0.8
            score = float(rng.choice([1, 2, 3, 4])) if retrieved else None  # many ties
            label = rng.choice([None, None, 0, 1, 2, -1]) if retrieved else rng.choice([0, 1, 2])
            rows.append((f"s{seed}q{q}", item, score, label))
    return rows


METRICS = ["p@3", "recall@5", "map", "ndcg@5", "mrr", "num_ret", "num_rel", "num_rel_ret"]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize(
    ("depth", "judged_only"), [(1, False), (3, False), (2, True), (None, True)]
)
def test_depth_and_judged_only_match_a_brute_force(seed, depth, judged_only):
    rows = _random_log(seed)
    log = pl.DataFrame(
        rows,
        schema={"query": pl.String, "item": pl.Int64, "score": pl.Float64, "relevance": pl.Int64},
        orient="row",
    )
    got = rke.evaluate(
        log, METRICS, per_query=True, depth=depth, judged_only=judged_only, tie_warning=None
    )
    want = ref.per_query(_brute_rows(rows, depth, judged_only), METRICS)
    values = {row["query"]: row for row in got.iter_rows(named=True)}
    assert set(values) == set(want)
    for query, metrics in want.items():
        for metric, value in metrics.items():
            assert values[query][metric] == pytest.approx(value), (query, metric)


def _snippet_10() -> pl.DataFrame:
    # items 9 and 10 tied: the engine ranks by the item's string form descending, "9" > "10"
    return pl.DataFrame(
        {"query": ["q", "q"], "item": [9, 10], "score": [1.0, 1.0], "relevance": [1, 0]}
    )


def test_snippet_10_depth_keeps_the_item_the_metrics_rank_first():
    log = _snippet_10()
    full = rke.evaluate(log, ["p@1"], tie_warning=None)["p@1"][0]
    assert full == 1.0
    assert rke.evaluate(log, ["p@1"], depth=1, tie_warning=None)["p@1"][0] == full


def test_snippet_10_from_the_command_line(tmp_path, capsys):
    path = tmp_path / "m.parquet"
    _snippet_10().write_parquet(path)
    cli_main([str(path), "-M", "1", "-m", "p@1", "--format", "csv", "--tie-warning", "off"])
    assert capsys.readouterr().out.splitlines() == ["p@1", "1.0"]


def test_judged_only_hand_worked():
    # ranking e (unjudged), d (1), c (-1: pooled, unjudged), b (0), a (1); f judged, not retrieved
    log = pl.DataFrame(
        {
            "query": ["1"] * 6,
            "item": ["a", "b", "c", "d", "e", "f"],
            "score": [1.0, 2.0, 3.0, 4.0, 5.0, None],
            "relevance": [1, 0, -1, 1, None, 1],
        }
    )
    # -J: e and c leave; d, b, a are ranks 1..3: P_2 = 1/2, num_ret 3
    got = rke.evaluate(log, ["p@2", "num_ret"], judged_only=True)
    assert got.row(0) == (0.5, 3)
    # -M 2 keeps e and d; a (judged) still counts toward R = 3: recall@5 = 1/3
    got = rke.evaluate(log, ["recall@5", "num_ret", "num_rel"], depth=2)
    assert got.row(0) == (pytest.approx(1 / 3), 2, 3)
    # -M 2 then -J (trec_eval's order): d alone is left, P_1 = 1
    assert rke.evaluate(log, ["p@1", "num_ret"], depth=2, judged_only=True).row(0) == (1.0, 1)


def test_depth_cuts_each_system_s_lists():
    log = pl.DataFrame(
        {
            "system": ["A", "A", "B", "B"],
            "query": ["q"] * 4,
            "item": ["x", "y", "x", "y"],
            "score": [2.0, 1.0, 1.0, 2.0],
            "relevance": [1, 0, 1, 0],
        }
    )
    got = rke.evaluate(log, ["num_ret", "recall@5"], by="system", depth=1).sort("system")
    assert got.rows() == [("A", 1, 1.0), ("B", 1, 0.0)]


def test_depth_on_a_lazy_frame_in_passes(tmp_path):
    rows = [row for seed in range(4) for row in _random_log(seed)]
    log = pl.DataFrame(
        rows,
        schema={"query": pl.String, "item": pl.Int64, "score": pl.Float64, "relevance": pl.Int64},
        orient="row",
    )
    one = rke.evaluate(log, METRICS, depth=2, judged_only=True, tie_warning=None)
    lazy = rke.evaluate(
        log.lazy(),
        METRICS,
        depth=2,
        judged_only=True,
        n_buckets=5,
        spill_dir=tmp_path,
        tie_warning=None,
    ).collect()
    assert lazy.columns == one.columns
    # one row (no by): pytest.approx takes a flat sequence (9.x refuses nested ones)
    assert lazy.row(0) == pytest.approx(one.row(0))
    assert lazy.height == one.height == 1


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"depth": 0}, "depth="),
        ({"depth": True}, "depth="),
        ({"depth": 2.5}, "depth="),
        ({"judged_only": "yes"}, "judged_only="),
    ],
)
def test_bad_depth_or_judged_only_is_refused(options, named):
    with pytest.raises(InvalidOptionError, match=named):
        rke.evaluate(_snippet_10(), ["p@1"], **options)


def test_depth_counts_each_item_once_after_duplicates_are_resolved():
    # a twice (3.0 and 2.5), then b: max_score keeps a at 3.0, so depth=2 keeps a and b
    log = pl.DataFrame(
        {
            "query": ["q"] * 3,
            "item": ["a", "a", "b"],
            "score": [3.0, 2.5, 2.0],
            "relevance": [1, 1, 1],
        }
    )
    got = rke.evaluate(log, ["num_ret", "num_rel_ret"], depth=2, duplicates="max_score")
    assert got.row(0) == (2, 2)


def test_depth_does_not_hide_a_duplicate_past_the_cut():
    # b (unjudged) twice, both past depth=1: still a repeated pair, refused as without depth
    log = pl.DataFrame(
        {
            "query": ["q"] * 3,
            "item": ["a", "b", "b"],
            "score": [2.0, 1.0, 0.5],
            "relevance": [1, None, None],
        }
    )
    with pytest.raises(rke.DuplicateItemError, match="1 duplicate"):
        rke.evaluate(log, ["p@1"], depth=1)
