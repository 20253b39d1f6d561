"""``rank-eval explain``: the report of ``rke.explain`` from the shell, every side's spelling, and
mistakes as one line with exit status 2.

The command line only reads its inputs and hands them to ``rke.explain``: the numbers are checked
equal to the Python call (whose own numbers are checked against ``evaluate`` in
tests/attribution), and the TREC files' values against trec_eval's own output.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample.parquet"
RUN = ROOT / "tests" / "data" / "results.test"
GRADED = ROOT / "tests" / "data" / "qrels.rel_level"  # graded qrels


def run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = cli_main(["explain", *(str(arg) for arg in args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def bm25() -> pl.DataFrame:
    return pl.read_parquet(SAMPLE).filter(pl.col("system") == "bm25").drop("system")


def test_the_report_is_explains(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, SAMPLE, "-m", "ndcg@10", "--a", "trec_eval", "--b", "gdeval", "--by", "system",
        "--system", "bm25", "--top", "4",
    )  # fmt: skip
    assert code == 0
    # gdeval leaves out the queries with nothing relevant, and says so once
    assert err.count("\n") == 1
    assert "warning: empty_queries='drop': left out 3 of 3000" in err
    with pytest.warns(rke.EmptyQueriesWarning):
        expected = rke.explain(bm25(), "ndcg@10", "trec_eval", "gdeval", top=4)
    assert out == str(expected) + "\n"
    assert "gain" in out
    assert "Queries that move most (4 of 3000)" in out


def test_a_trec_run_with_its_qrels(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, RUN, "--qrels", GRADED, "-m", "map", "--a", "trec_eval",
                       "--b", "trec_eval,relevance_level=2")  # fmt: skip
    assert code == 0
    first = out.splitlines()[0]
    # trec_eval's own output on these files: map 0.1667 with -l2 (expected_v10/out.test.aql)
    assert re.match(r"map: 0\.\d{4} under trec_eval, 0\.1667 under trec_eval \+ ", first), first
    assert re.search(r"^relevance_level\s+1\s+2\s", out, flags=re.MULTILINE), out


def test_settings_numbers_and_files_as_sides(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = bm25()
    theirs = rke.evaluate(log, "ndcg@10(gain=exp)", per_query=True).rename(
        {"ndcg@10(gain=exp)": "ndcg@10"}
    )
    table = tmp_path / "theirs.csv"
    theirs.write_csv(table)
    trec_q = tmp_path / "theirs.txt"
    lines = [f"ndcg_cut_10\t{q}\t{v:.4f}" for q, v in theirs.iter_rows()]
    trec_q.write_text("\n".join([*lines, "ndcg_cut_10\tall\t0.5000"]) + "\n", encoding="utf-8")
    for side in (table, trec_q):
        code, out, _ = run(capsys, SAMPLE, "-m", "ndcg@10", "--a", "trec_eval", "--b", side,
                           "--by", "system", "--system", "bm25")  # fmt: skip
        assert code == 0
        assert "b: the table (3000 queries) is reproduced by" in out, out
        assert re.search(r"^gain\s+linear\s+exp", out, flags=re.MULTILINE), out
    code, out, _ = run(capsys, SAMPLE, "-m", "ndcg@10", "--a", "trec_eval", "--b",
                       "gain=exp,ties=expected", "--by", "system", "--system", "bm25",
                       "--format", "csv")  # fmt: skip
    causes = pl.read_csv(out.encode())
    expected = rke.explain(log, "ndcg@10", "trec_eval", {"gain": "exp", "ties": "expected"})
    assert causes.get_column("setting").to_list() == expected.causes["setting"].to_list()
    assert causes["effect"].to_list() == pytest.approx(expected.causes["effect"].to_list())
    code, out, _ = run(capsys, SAMPLE, "-m", "ndcg@10", "--a", "trec_eval", "--b", "0.5309",
                       "--by", "system", "--system", "bm25", "--format", "json",
                       "--per-query")  # fmt: skip
    rows = json.loads(out)
    assert len(rows) == 3000
    assert set(rows[0]) >= {"query", "value_a", "value_b", "difference"}


def test_an_output_file_never_replaces_an_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "log.parquet"
    bm25().write_parquet(log)
    before = log.read_bytes()
    code, _, err = run(capsys, log, "-m", "p@5", "--a", "trec_eval", "--b", "gdeval", "-o", log)
    assert code == 2
    assert err.startswith("rank-eval: error: ")
    assert log.read_bytes() == before
    binary = tmp_path / "theirs.txt"
    binary.write_bytes(b"\xff\xfe\x00ndcg")
    code, _, err = run(capsys, log, "-m", "ndcg@5", "--a", "trec_eval", "--b", binary)
    assert code == 2
    assert "not UTF-8" in err
    out = tmp_path / "why.txt"
    code, _, _ = run(capsys, log, "-m", "ndcg@5", "--a", "trec_eval", "--b", "gdeval", "-o", out)
    assert code == 0
    assert out.read_text(encoding="utf-8").startswith("ndcg@5: ")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--a", "trec_eval", "--b", "gdeval", "--by", "system"], "--by and --system"),
        (["--a", "trec_eval", "--b", "gdeval", "--by", "system", "--system", "x"], "no row"),
        (["--a", "trec_eval", "--b", "gdeval", "--by", "nope", "--system", "x"], "--by nope"),
        (["--a", "trec_eval", "--b", "gian=exp"], "'gian' is not a setting"),
        (["--a", "trec_eval", "--b", "trec_eval,gdeval"], "one convention per side"),
        (["--a", "trec_eval", "--b", " , "], "--b is empty"),
        (["--a", "trec_eval", "--b", "gdeval", "--top", "-1"], "--top"),
    ],
)
def test_mistakes_end_in_one_line(
    capsys: pytest.CaptureFixture[str], args: list[str], words: str
) -> None:
    code, out, err = run(capsys, SAMPLE, "-m", "ndcg@10", *args)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("rank-eval: error: ")
    assert words in err
