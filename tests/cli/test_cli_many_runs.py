"""``rank-eval RUN RUN ... --qrels QRELS``: many TREC runs evaluated in one call.

The trec layout is checked against trec_eval's own output file (``out.test.aq``: ``trec_eval
-q -m all_trec qrels.test results.test``), repeated once per run with each run's name on its
``runid`` line, as consecutive trec_eval calls print them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from polars_rankeval.cli import main

DATA = Path(__file__).parents[1] / "data"
EXPECTED = DATA / "expected_v10"
_RUNID = "runid                 \tall\t"


def _two_runs(tmp_path: Path) -> tuple[str, str, str]:
    first, second = tmp_path / "bm25.txt", tmp_path / "dense.txt"
    shutil.copy(DATA / "results.test", first)
    # A second, different run: every score negated reverses each topic's order.
    lines = []
    for line in (DATA / "results.test").read_text().splitlines():
        fields = line.split()
        fields[4] = str(-float(fields[4]))
        fields[5] = "DENSE"
        lines.append(" ".join(fields))
    second.write_text("\n".join(lines) + "\n")
    return str(first), str(second), str(DATA / "qrels.test")


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    status = main(list(argv))
    captured = capsys.readouterr()
    assert status == 0, captured.err
    return captured.out


def test_each_run_prints_as_trec_eval_would(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, _, qrels = _two_runs(tmp_path)
    copy = tmp_path / "again.txt"
    shutil.copy(first, copy)
    out = _cli(capsys, first, str(copy), "--qrels", qrels, "-m", "all_trec", "-q", "-f", "trec")
    expected = (EXPECTED / "out.test.aq").read_text()
    per_run = [
        expected.replace(f"{_RUNID}STANDARD", f"{_RUNID}{name}") for name in ("bm25", "again")
    ]
    # The runs print in the order given (bm25 first although "again" sorts first).
    assert out == "".join(per_run)


def test_outputs_name_every_run_and_equal_single_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second, qrels = _two_runs(tmp_path)
    single = [
        _cli(capsys, path, "--qrels", qrels, "-m", "map,p@10", "-f", "trec")
        for path in (second, first)
    ]
    together = _cli(capsys, second, first, "--qrels", qrels, "-m", "map,p@10", "-f", "trec")
    # With -m trec_eval prints no runid line; several runs always do, so the blocks differ.
    assert together == f"{_RUNID}dense\n{single[0]}{_RUNID}bm25\n{single[1]}"
    assert single[0] != single[1]
    tags = _cli(capsys, first, second, "--qrels", qrels, "-f", "trec", "--system-name", "tag")
    assert [line for line in tags.splitlines() if line.startswith("runid")] == [
        f"{_RUNID}STANDARD",
        f"{_RUNID}DENSE",
    ]
    # The table: one row per run, its values those of the single calls.
    table = tmp_path / "table.csv"
    _cli(capsys, first, second, "--qrels", qrels, "-m", "map,p@10", "-o", str(table))
    frame = pl.read_csv(table)
    assert frame["system"].to_list() == ["bm25", "dense"]
    for row, text in zip(frame.iter_rows(named=True), reversed(single), strict=True):
        values = dict(line.split("\t")[::2] for line in text.splitlines())
        assert f"{row['map']:.4f}" == values["map                   "]


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ([], "without --qrels"),
        (["--qrels", "Q", "--by", "query"], "told apart by 'system'"),
        (["--qrels", "Q", "--format", "ndeval"], "one run at a time"),
    ],
)
def test_mistakes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], words: str
) -> None:
    first, second, qrels = _two_runs(tmp_path)
    argv = [first, second, *(qrels if value == "Q" else value for value in extra)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("rank-eval: error:")
    assert words in err
    assert err.count("\n") == 1


def test_system_name_needs_runs(capsys: pytest.CaptureFixture[str]) -> None:
    sample = str(Path(__file__).parents[2] / "data" / "sample.parquet")
    assert main([sample, "--system-name", "tag"]) == 2
    assert "--system-name names TREC runs" in capsys.readouterr().err
