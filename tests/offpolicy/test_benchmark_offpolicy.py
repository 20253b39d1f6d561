"""The off-policy data and benchmark scripts: the committed logs, their truth, and smoke runs.

Nothing here is timed. The committed ``data/offpolicy/`` must be what
``data/make_offpolicy.py`` writes, its analytic truth must agree with the simulated logs where
a plain mean estimates it without any weighting (the logging policy's own value), and both
benchmark scripts must run end to end on tiny sizes.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import polars as pl
import pytest
from polars.testing import assert_frame_equal

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data" / "offpolicy"
# the scripts import the package of this checkout, wherever it is installed from
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def _simulator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "make_offpolicy", ROOT / "data" / "make_offpolicy.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_offpolicy"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def made() -> tuple[dict[str, pl.DataFrame], dict[str, object]]:
    return _simulator().make_offpolicy()


def test_committed_logs_are_what_the_script_writes(made) -> None:
    frames, truth = made
    for name, frame in frames.items():
        assert_frame_equal(pl.read_parquet(DATA / f"{name}.parquet"), frame)
    assert json.loads((DATA / "truth.json").read_text()) == json.loads(json.dumps(truth))
    size = sum(path.stat().st_size for path in DATA.iterdir())
    assert size < 2 * 2**20  # small enough to commit


def _close(mean: float, sd: float, n: int, truth: float) -> None:
    """``mean`` within 4.5 standard errors of ``truth`` (a false alarm ~ 1 in 150,000)."""
    assert abs(mean - truth) < 4.5 * sd / math.sqrt(n), (mean, truth, sd / math.sqrt(n))


def test_logging_policy_truth_matches_the_simulated_logs(made) -> None:
    """The analytic value of the logging policy against the plain mean of its own log."""
    frames, truth = made
    bandit = frames["bandit"]
    value = truth["bandit"]["policy_value"]["logging"]
    _close(bandit["reward"].mean(), bandit["reward"].std(), bandit.height, value)
    for device, values in truth["bandit"]["by_device"].items():
        rewards = bandit.filter(device=device)["reward"]
        _close(rewards.mean(), rewards.std(), rewards.len(), values["logging"])
    per_slate = frames["slates"].group_by("query").agg(pl.col("reward").sum())["reward"]
    value = truth["slates"]["policy_value"]["logging"]
    _close(per_slate.mean(), per_slate.std(), per_slate.len(), value)
    assert per_slate.max() <= 1  # a cascade stops at the first click


def test_candidate_form_is_the_event_log_with_every_action(made) -> None:
    frames, _ = made
    events, candidates = frames["bandit"], frames["bandit_candidates"]
    logged = candidates.filter("logged").sort("query")
    assert logged["action"].to_list() == events["action"].to_list()
    assert logged["reward"].to_list() == events["reward"].to_list()
    assert logged["propensity"].to_list() == events["propensity"].to_list()
    sums = candidates.group_by("query").agg(pl.col("propensity", "pi_new", "pi_greedy").sum())
    for column in ("propensity", "pi_new", "pi_greedy"):
        assert (sums[column] - 1).abs().max() < 1e-9


def test_interleaving_truth_is_a_distribution(made) -> None:
    _, truth = made
    pairs = truth["interleaving"]["pairs"]
    assert [(p["team"], p["baseline_team"]) for p in pairs] == [
        ("dense", "bm25"),
        ("hybrid", "bm25"),
        ("hybrid", "dense"),
    ]
    for pair in pairs:
        assert pair["p_win"] + pair["p_loss"] + pair["p_tie"] == pytest.approx(1.0)
        assert pair["delta"] == pytest.approx(pair["p_win"] + pair["p_tie"] / 2 - 0.5)


def test_team_draft_sampler_matches_mpkato_on_its_published_cases() -> None:
    """mpkato tests/test_team_draft.py::test_interleave: [[1, 2], [3, 4]] at length 3."""
    sim = _simulator()
    lists = [[1, 2], [3, 4]]
    shown = {tuple(sim._team_draft(lists, order, 3)[0]) for order in sim._round_orders(2, 3)}
    assert shown == {(1, 3, 2), (1, 3, 4), (3, 1, 2), (3, 1, 4)}
    lists = [[1, 2], [2, 3]]
    shown = {tuple(sim._team_draft(lists, order, 2)[0]) for order in sim._round_orders(2, 2)}
    assert shown == {(1, 2), (2, 1)}


def test_coverage_script_runs_every_family() -> None:
    script = ROOT / "benchmarks" / "offpolicy_coverage.py"
    done = subprocess.run(
        [sys.executable, str(script), "--logs", "2", "--rows", "400"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env=ENV,
    )
    assert done.returncode == 0, done.stderr
    for row in ("| bandit | dr | pi_new |", "| slates | cascade_dr | pi_top |"):
        assert row in done.stdout, done.stdout
    for row in ("| clicks | dcg@5 | score_new |", "| interleaving | team_draft |"):
        assert row in done.stdout, done.stdout


def test_speed_script_runs_and_agrees_with_vw_estimators(tmp_path: Path) -> None:
    script = ROOT / "benchmarks" / "offpolicy_bench.py"
    done = subprocess.run(
        [sys.executable, str(script), "--rows", "2000", "--repeat", "1", "--data", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env=ENV,
    )
    assert done.returncode == 0, done.stderr
    assert "error" not in done.stdout, done.stdout
    assert "| ours | off_policy ips,snips,dr x 2 targets |" in done.stdout, done.stdout
    assert "| ours | slate_off_policy" in done.stdout, done.stdout
    if importlib.util.find_spec("estimators") is not None:
        differences = [
            float(line.split("|")[3])
            for line in done.stdout.splitlines()
            if "ours vs vw relative difference" in line
        ]
        assert len(differences) == 3, done.stdout  # ips, snips, pi
        assert max(differences) < 1e-9, done.stdout
