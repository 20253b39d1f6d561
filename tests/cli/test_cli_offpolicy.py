"""``rank-eval off-policy`` and ``rank-eval interleaving``: the Python functions from the shell.

The printed numbers are checked against values computed in the test by the estimators'
definitions (IPS = mean(w * r), SNIPS = sum(w * r) / sum(w)), and the mistakes a user makes
end as one ``rank-eval: error:`` line naming the option or column.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import polars as pl
import pytest

from polars_rankeval.cli import main

# The reference logs are a few rows: their weights' effective sample size is tiny, rightly.
pytestmark = pytest.mark.filterwarnings("ignore::polars_rankeval.errors.WeightWarning")


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def bandit_log(tmp_path: Path) -> Path:
    # research.md Q1's 4-row log (vw-estimators: IPS 1.22375, SNIPS 0.6570469798657719),
    # repeated with a second segment and a second target policy.
    frame = pl.DataFrame(
        {
            "ctx": list(range(8)),
            "segment": ["a"] * 4 + ["b"] * 4,
            "pscore": [0.8, 0.25, 0.5, 0.2] * 2,
            "click": [0.1, 0.2, 0.0, 1.0] * 2,
            "pi_new": [0.6, 0.4, 0.3, 0.9] * 2,
            "pi_old": [0.8, 0.25, 0.5, 0.2] * 2,
        }
    )
    path = tmp_path / "log.parquet"
    frame.write_parquet(path)
    return path


def test_off_policy_prints_the_estimates(bandit_log: Path) -> None:
    status, out, err = _cli(
        "off-policy",
        str(bandit_log),
        "--target",
        "new=pi_new",
        "--propensity",
        "pscore",
        "--reward",
        "click",
        "-e",
        "ips,snips",
        "--format",
        "json",
    )
    assert status == 0, err
    rows = json.loads(out)
    values = {(row["metric"], row["policy"]): row["value"] for row in rows}
    weights = [0.6 / 0.8, 0.4 / 0.25, 0.3 / 0.5, 0.9 / 0.2]
    rewards = [0.1, 0.2, 0.0, 1.0]
    ips = sum(w * r for w, r in zip(weights, rewards, strict=True)) / 4
    snips = sum(w * r for w, r in zip(weights, rewards, strict=True)) / sum(weights)
    assert values[("ips", "new")] == pytest.approx(ips, rel=1e-12)
    assert values[("snips", "new")] == pytest.approx(snips, rel=1e-12)
    assert ips == pytest.approx(1.22375)


def test_off_policy_table_has_one_row_per_estimator_policy_and_segment(bandit_log: Path) -> None:
    status, out, err = _cli(
        "off-policy",
        str(bandit_log),
        "--target",
        "new=pi_new,old=pi_old",
        "--propensity",
        "pscore",
        "--reward",
        "click",
        "--by",
        "segment",
    )
    assert status == 0, err
    lines = [line for line in out.splitlines() if line.startswith("│")]
    assert lines[0].split("┆")[0].strip("│ ") == "metric"
    # ips and snips (the default) x 2 policies x 2 segments
    assert len(lines) == 1 + 8


def test_off_policy_writes_csv_and_refuses_to_overwrite_its_input(
    bandit_log: Path, tmp_path: Path
) -> None:
    target = tmp_path / "out.csv"
    status, _, err = _cli(
        "off-policy", str(bandit_log), "--target", "pi_new", "--propensity", "pscore",
        "--reward", "click", "-o", str(target),
    )  # fmt: skip
    assert status == 0, err
    assert pl.read_csv(target)["metric"].to_list() == ["ips", "snips"]
    status, _, err = _cli(
        "off-policy", str(bandit_log), "--target", "pi_new", "--propensity", "pscore",
        "--reward", "click", "-o", str(bandit_log), "--format", "csv",
    )  # fmt: skip
    assert status == 2
    assert err.startswith("rank-eval: error:")


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        ([], "--target"),
        (["--target", "missing"], "missing"),
        (["--target", "pi_new", "--propensity", "nope"], "nope"),
        (["--target", "pi_new", "-e", "ipss"], "ipss"),
        (["--target", "new=pi_new,new=pi_old"], "twice"),
        (["--target", "pi_new", "--slate", "--clip", "3"], "--clip"),
        (["--target", "pi_new", "--per-query"], "--query"),
        (["--target", "pi_new,pi_old", "--baseline", "pi_old"], "--query"),
    ],
)
def test_off_policy_mistakes_are_one_line(bandit_log: Path, argv: list[str], named: str) -> None:
    status, out, err = _cli(
        "off-policy", str(bandit_log), "--propensity", "pscore", "--reward", "click", *argv
    )
    assert status == 2, out
    assert err.startswith("rank-eval: error:")
    assert err.count("\n") == 1
    assert named in err


def test_off_policy_bad_values_name_the_rows(tmp_path: Path) -> None:
    path = tmp_path / "bad.parquet"
    pl.DataFrame(
        {"propensity": [0.5, 0.0], "target": [0.5, 0.5], "reward": [1.0, 0.0]}
    ).write_parquet(path)
    status, _, err = _cli("off-policy", str(path), "--target", "target")
    assert status == 2
    assert "propensity" in err
    assert err.count("\n") == 1


def test_interleaving_prints_wins_losses_and_ties(tmp_path: Path) -> None:
    # mpkato/interleaving tests/test_team_draft.py: ranking [1, 3, 4], team A = {1}, team B =
    # {3, 4}; clicks on ranks [0, 1, 2] -> B wins, [0, 1] -> tie, [0] -> A wins, [2] -> B wins.
    rows = []
    for impression, clicked in enumerate([[0, 1, 2], [0, 1], [0], [2]]):
        for rank, (item, team) in enumerate([(1, "A"), (3, "B"), (4, "B")]):
            rows.append(
                {
                    "impression": impression,
                    "item": item,
                    "team": team,
                    "click": int(rank in clicked),
                }
            )
    path = tmp_path / "interleaved.parquet"
    pl.DataFrame(rows).write_parquet(path)
    status, out, err = _cli(
        "interleaving", str(path), "--query", "impression", "--baseline", "A", "--format", "json"
    )
    assert status == 0, err
    (row,) = json.loads(out)
    assert (row["wins"], row["losses"], row["ties"], row["n_queries"]) == (2, 1, 1, 4)
