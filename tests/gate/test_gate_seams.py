"""Where the gate, the command line and the file readers meet (issue 27).

gzip runs sniffed by their text, TREC's ``input.<tag>.gz`` names, ``similarity`` on TREC runs,
gzip errors naming the file, the check's option names, ``-o`` formats and atomic writes,
``$GITHUB_STEP_SUMMARY``, the summary query id ``all``, and the check's Markdown escaping.
Expected values come from plain Python over the files written here (or from trec_eval's rules
written out by hand), never from the code under test.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from pathlib import Path

import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval.cli import main
from polars_rankeval.errors import TrecFormatError


def _run_cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = main([str(arg) for arg in args])
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_error(code: int, err: str, *fragments: str) -> None:
    assert code == 2, err
    assert err.startswith("rank-eval: error: "), err
    assert err.count("\n") == 1, err
    for fragment in fragments:
        assert fragment in err, err


def _run_lines(tag: str, salt: int) -> bytes:
    """A 2-query run; ``salt`` changes the scores' digits (and so the compressed bytes)."""
    lines = [f"{q} Q0 d{r} {r} {4 - r}.{salt} {tag}" for q in ("1", "2") for r in range(1, 4)]
    return ("\n".join(lines) + "\n").encode()


def _three_field_gzip() -> tuple[bytes, bytes]:
    """A run whose gzip bytes before the first 0x0A split into 3 fields (found by search)."""
    for salt in range(200_000):
        text = _run_lines("r", salt)
        packed = gzip.compress(text, mtime=0)
        head, newline, _ = packed.partition(b"\n")
        if newline and len(head.split()) == 3:
            return text, packed
    pytest.skip("no salt gives a 3-field compressed first line with this zlib")
    raise AssertionError  # unreachable


QRELS = "1 0 d1 1\n1 0 d3 1\n2 0 d2 1\n"


def test_check_reads_a_gzip_run_whose_compressed_bytes_look_like_trec_eval_output(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text, packed = _three_field_gzip()
    assert len(packed.partition(b"\n")[0].split()) == 3  # the trap the old sniff fell into
    (tmp_path / "input.r.gz").write_bytes(packed)
    (tmp_path / "plain.txt").write_bytes(text)
    (tmp_path / "qrels.txt").write_text(QRELS)
    qrels = tmp_path / "qrels.txt"
    for candidate, baseline in [("input.r.gz", "plain.txt"), ("plain.txt", "input.r.gz")]:
        code, out, err = _run_cli(
            capsys,
            "check",
            tmp_path / candidate,
            "--baseline",
            tmp_path / baseline,
            "--qrels",
            qrels,
            "--fail-if",
            "map < -0.005",
        )
        assert code == 0, err
        assert "PASS" in out
    # the sniff reads the text, gz or not: a real trec_eval output is still refused
    (tmp_path / "eval.txt.gz").write_bytes(gzip.compress(b"map\tall\t0.1785\n"))
    code, _, err = _run_cli(
        capsys,
        "check",
        tmp_path / "plain.txt",
        "--baseline",
        tmp_path / "eval.txt.gz",
        "--qrels",
        qrels,
        "--fail-if",
        "map < 0",
    )
    _one_line_error(code, err, "trec_eval's output")


def test_leading_lines_reads_gzip_text() -> None:
    from polars_rankeval.io import leading_lines, trec_file_kind

    text, packed = _three_field_gzip()
    path = Path(pytest.importorskip("tempfile").mkdtemp()) / "run.gz"
    path.write_bytes(packed)
    assert leading_lines(path, 2) == [line.decode() for line in text.splitlines()[:2]]
    assert trec_file_kind(path) == "run"


def _gzip_runs(folder: Path, tags: list[str]) -> list[Path]:
    paths = []
    for index, tag in enumerate(tags):
        lines = [
            f"{q} Q0 d{(r + index) % 7} {r} {10 - r}.0 {tag}"
            for q in ("1", "2")
            for r in range(1, 6)
        ]
        path = folder / f"input.{tag}.gz"
        path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
        paths.append(path)
    return paths


TAGS = [f"run{chr(ord('A') + i)}{i}" for i in range(17)]


def test_trec_input_prefix_is_dropped_from_run_names(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """17 runs named the TREC way evaluate, compare and gate in one call each."""
    paths = _gzip_runs(tmp_path, TAGS)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 d1 1\n1 0 d3 2\n2 0 d2 1\n2 0 d4 0\n")
    code, out, err = _run_cli(capsys, *paths, "--qrels", qrels, "-m", "map", "-f", "csv")
    assert code == 0, err
    systems = pl.read_csv(out.encode())["system"].to_list()
    assert sorted(systems) == sorted(TAGS)
    code, out, err = _run_cli(
        capsys,
        "compare",
        *paths,
        "--qrels",
        qrels,
        "-m",
        "map",
        "--baseline",
        TAGS[0],
        "--format",
        "csv",
    )
    assert code == 0, err
    assert set(pl.read_csv(out.encode())["system"].to_list()) == set(TAGS[1:])  # vs baseline
    code, out, err = _run_cli(
        capsys,
        "check",
        paths[1],
        "--baseline",
        paths[0],
        "--qrels",
        qrels,
        "--fail-if",
        "map < -1",
    )
    assert code == 0, err
    assert "PASS" in out


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("input.pircRBa1.gz", "pircRBa1"),
        ("input.UAmsT03RDesc", "UAmsT03RDesc"),
        ("input.bm25.txt", "bm25"),
        ("input.txt", "input"),
        ("bm25.run.gz", "bm25"),
        ("inputs.x.txt", "inputs.x"),
    ],
)
def test_run_names(name: str, expected: str) -> None:
    from polars_rankeval.cli._inputs import run_stem

    assert run_stem(f"runs/{name}") == expected


def test_similarity_takes_trec_runs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    paths = _gzip_runs(tmp_path, ["a1", "b2"])
    code, out, err = _run_cli(capsys, "similarity", *paths, "-m", "jaccard@5", "--format", "csv")
    assert code == 0, err
    row = pl.read_csv(out.encode()).row(0, named=True)
    # long: metric, the system, the one it is compared with (the earlier of the pair)
    assert (row["metric"], row["system"], row["baseline_system"]) == ("jaccard@5", "b2", "a1")

    # by hand: each run's top 5 documents of each query, Jaccard averaged over the queries
    def tops(path: Path) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for line in gzip.decompress(path.read_bytes()).decode().splitlines():
            q, _, doc, _, _, _ = line.split()
            found.setdefault(q, set()).add(doc)
        return found

    a, b = tops(paths[0]), tops(paths[1])
    expected = sum(len(a[q] & b[q]) / len(a[q] | b[q]) for q in a) / len(a)
    assert row["value"] == pytest.approx(expected, abs=1e-12)
    assert row["n_queries"] == 2
    # a log still needs --by; several logs are refused with the reason
    log = tmp_path / "log.parquet"
    pl.DataFrame({"query": ["1"], "item": ["d"], "score": [1.0]}).write_parquet(log)
    code, _, err = _run_cli(capsys, "similarity", log)
    _one_line_error(code, err, "--by")
    code, _, err = _run_cli(capsys, "similarity", log, log, "--by", "system")
    _one_line_error(code, err, "TREC run files")


def _broken_gzips(folder: Path) -> list[Path]:
    text = b"".join(
        f"{q} Q0 d{r} {r} {500 - r}.25 tag\n".encode() for q in range(1, 60) for r in range(1, 40)
    )
    packed = gzip.compress(text, mtime=0)
    truncated = folder / "trunc.txt.gz"
    truncated.write_bytes(packed[: len(packed) // 2])
    corrupt = bytearray(packed)
    for index in range(40, 200):
        corrupt[index] ^= 0x55
    damaged = folder / "corrupt.txt.gz"
    damaged.write_bytes(bytes(corrupt))
    return [truncated, damaged]


def test_gzip_errors_name_the_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    good = tmp_path / "good.txt"
    good.write_text("1 Q0 d1 1 2.0 t\n1 Q0 d2 2 1.0 t\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 d1 1\n")
    for broken in _broken_gzips(tmp_path):
        with pytest.raises(TrecFormatError, match=f"{broken.name}.*gzip"):
            rke.read_trec_run(broken).collect()
        for args in (
            [broken, "--qrels", qrels],
            [good, broken, "--qrels", qrels],
            ["check", good, "--baseline", broken, "--qrels", qrels, "--fail-if", "map < 0"],
        ):
            code, _, err = _run_cli(capsys, *args, "-m", "map")
            _one_line_error(code, err, broken.name, "gzip")


@pytest.fixture
def runs(tmp_path: Path) -> dict[str, Path]:
    """A candidate and a baseline TREC run (the candidate loses map on query 2) and qrels."""
    base = tmp_path / "base.txt"
    base.write_text("1 Q0 d1 1 3.0 b\n1 Q0 d2 2 2.0 b\n2 Q0 d3 1 3.0 b\n2 Q0 d4 2 2.0 b\n")
    cand = tmp_path / "cand.txt"
    cand.write_text("1 Q0 d1 1 3.0 c\n1 Q0 d2 2 2.0 c\n2 Q0 d4 1 3.0 c\n2 Q0 d3 2 2.0 c\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 d1 1\n2 0 d3 1\n")
    return {"cand": cand, "base": base, "qrels": qrels}


def _check_args(runs: dict[str, Path], *rules: str) -> list[object]:
    return ["check", runs["cand"], "--baseline", runs["base"], "--qrels", runs["qrels"], *rules]


@pytest.mark.parametrize(
    ("rules", "flags", "python_names"),
    [
        ([], ["--fail-if,", "--fail-if-significant,", "--min,", "--max or"], ["fail_if="]),
        (["--fail-if", "map -0.005"], ["option --fail-if:"], ["fail_if="]),
        (["--min", "ndcg=0.1", "-m", "map"], ["option --min names 'ndcg'"], ["floors="]),
        (["--max", "ndcg=0.1", "-m", "map"], ["option --max names 'ndcg'"], ["ceilings="]),
        (["--fail-if", "map < -1e400"], ["option --fail-if:", "infinite"], ["fail_if="]),
    ],
)
def test_check_errors_name_the_command_line_flags(
    capsys: pytest.CaptureFixture[str],
    runs: dict[str, Path],
    rules: list[str],
    flags: list[str],
    python_names: list[str],
) -> None:
    code, _, err = _run_cli(capsys, *_check_args(runs, *rules))
    _one_line_error(code, err, *flags)
    for name in python_names:
        assert name not in err


def test_check_library_errors_keep_python_names() -> None:
    table = pl.DataFrame({"query": ["1", "2"], "map": [0.5, 0.6]})
    with pytest.raises(rke.errors.InvalidOptionError, match=r"give fail_if=, fail_if_sig"):
        rke.check(table, table)
    with pytest.raises(rke.errors.InvalidOptionError, match=r"option fail_if=: 'map < -1e400'"):
        rke.check(table, table, fail_if="map < -1e400")  # reads as -inf: could never fire
    with pytest.raises(rke.errors.InvalidOptionError, match="option floors= names 'ndcg'"):
        rke.check(table, table, "map", floors={"ndcg": 0.1})


@pytest.mark.parametrize("suffix", [".json", ".md", ".txt"])
def test_check_output_suffix_picks_the_format(
    capsys: pytest.CaptureFixture[str], runs: dict[str, Path], tmp_path: Path, suffix: str
) -> None:
    out = tmp_path / f"verdict{suffix}"
    code, _, err = _run_cli(capsys, *_check_args(runs, "--fail-if", "map < -0.9"), "-o", out)
    assert code == 0, err
    text = out.read_text()
    if suffix == ".json":
        assert json.loads(text)["passed"] is True
    elif suffix == ".md":
        assert text.startswith("### ✅ rank-eval check passed")
    else:
        assert text.startswith("rank-eval check: PASS")
    odd = tmp_path / "v.log"
    code, _, err = _run_cli(capsys, *_check_args(runs, "--fail-if", "map < 0"), "-o", odd)
    _one_line_error(code, err, "cannot tell the output format from", "v.log")
    assert not odd.exists()


def test_step_summary_naming_an_input_or_the_output_is_refused(
    capsys: pytest.CaptureFixture[str],
    runs: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = runs["base"].read_bytes()
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(runs["base"]))
    code, _, err = _run_cli(capsys, *_check_args(runs, "--fail-if", "map < 0"))
    _one_line_error(code, err, "$GITHUB_STEP_SUMMARY", "base.txt")
    assert runs["base"].read_bytes() == before
    out = tmp_path / "verdict.json"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(out))
    code, _, err = _run_cli(capsys, *_check_args(runs, "--fail-if", "map < 0"), "-o", out)
    _one_line_error(code, err, "$GITHUB_STEP_SUMMARY", "-o")
    assert not out.exists()


@pytest.mark.parametrize(("rule", "status"), [("map < -0.9", 0), ("map < 0", 1)])
def test_unwritable_step_summary_keeps_the_verdicts_exit_status(
    capsys: pytest.CaptureFixture[str],
    runs: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    rule: str,
    status: int,
) -> None:
    summary = tmp_path / "no_such_folder" / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, out, err = _run_cli(capsys, *_check_args(runs, "--fail-if", rule))
    assert code == status, err
    assert ("PASS" if status == 0 else "FAIL") in out
    assert err.count("\n") == 1, err
    assert err.startswith("rank-eval: warning: "), err
    assert "$GITHUB_STEP_SUMMARY" in err
    assert str(summary) in err


def _disk_full(*args: object, **kwargs: object) -> None:
    raise OSError(28, "No space left on device")


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_full_disk_leaves_no_output_file(
    capsys: pytest.CaptureFixture[str],
    runs: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    suffix: str,
) -> None:
    out = tmp_path / "out" / f"result{suffix}"
    out.parent.mkdir()
    monkeypatch.setattr(Path, "write_text", _disk_full)
    monkeypatch.setattr(pl.DataFrame, "write_parquet", _disk_full)
    code, _, err = _run_cli(capsys, runs["cand"], "--qrels", runs["qrels"], "-m", "map", "-o", out)
    _one_line_error(code, err, str(out), "No space left on device")
    assert list(out.parent.iterdir()) == []  # neither the output nor a temporary file
    # an existing output is left as it was
    out.write_bytes(b"old\n")
    code, _, err = _run_cli(capsys, runs["cand"], "--qrels", runs["qrels"], "-m", "map", "-o", out)
    assert code == 2
    assert out.read_bytes() == b"old\n"
    assert [path.name for path in out.parent.iterdir()] == [out.name]


def test_report_save_and_check_output_are_whole_or_nothing(
    capsys: pytest.CaptureFixture[str],
    runs: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    per_query = pl.DataFrame(
        {"system": ["a", "a", "b", "b"], "query": ["1", "2", "1", "2"], "map": [0.1, 0.2, 0.3, 0.5]}
    )
    report = rke.report(
        rke.compare_per_query(per_query, by="system", metrics=["map"], baseline="a")
    )
    monkeypatch.setattr(Path, "write_text", _disk_full)
    with pytest.raises(rke.errors.ResourceError, match=r"table.md.*No space left"):
        report.save(tmp_path / "table.md")
    code, _, err = _run_cli(
        capsys, *_check_args(runs, "--fail-if", "map < 0"), "-o", tmp_path / "v.json"
    )
    _one_line_error(code, err, "v.json", "No space left on device")
    assert list(tmp_path.glob("*.md")) == []
    assert list(tmp_path.glob("*.json")) == []
    assert list(tmp_path.glob(".*")) == []
    monkeypatch.undo()
    saved = report.save(tmp_path / "table.md")
    assert saved.read_text(encoding="utf-8").startswith(str(report)[:20])
    umask = os.umask(0)
    os.umask(umask)
    assert saved.stat().st_mode & 0o777 == 0o666 & ~umask  # as open() makes it, not mkstemp's


def _per_query(queries: list[object], values: list[float]) -> pl.DataFrame:
    return pl.DataFrame({"query": queries, "map": values})


def test_a_real_query_named_all_is_refused_on_writing_and_reading(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "log.parquet"
    pl.DataFrame(
        {
            "query": ["all", "all", "q1", "q1"],
            "item": ["a", "b", "a", "b"],
            "score": [2.0, 1.0, 2.0, 1.0],
            "relevance": [1, 0, 0, 1],
        }
    ).write_parquet(log)
    out = tmp_path / "pq.csv"
    code, _, err = _run_cli(capsys, log, "-m", "map", "--per-query", "-o", out)
    _one_line_error(code, err, "'all'", "rename that query")
    assert not out.exists()
    # a table written before (the real query and the summary row both 'all') is refused too
    stored = _per_query(["all", "q1", "all"], [1.0, 0.5, 0.75])
    with pytest.raises(rke.errors.ColumnValueError, match="2 rows with query 'all'"):
        rke.check(stored, stored, fail_if="map < 0")
    # one 'all' row is the summary: left out of the queries
    result = rke.check(stored.tail(2), stored.tail(2), fail_if="map < 0")
    assert result.queries["baseline"] == 1


def test_baseline_without_query_rows_says_so() -> None:
    cand = _per_query(["q1", "q2"], [0.5, 0.6])
    for empty in (_per_query(["all"], [0.55]), cand.clear()):
        with pytest.raises(rke.errors.ColumnValueError, match="the baseline has no query rows"):
            rke.check(cand, empty, fail_if="map < 0")
        with pytest.raises(rke.errors.ColumnValueError, match="the candidate has no query rows"):
            rke.check(empty, cand, fail_if="map < 0")


def test_null_query_id_in_a_stored_table_is_refused() -> None:
    cand = _per_query(["q1", "q2", "q3"], [0.5, 0.6, 0.7])
    base = _per_query(["q1", None, "q3"], [0.5, 0.6, 0.7])
    with pytest.raises(rke.errors.ColumnValueError, match=r"baseline.*null query id.*'query'"):
        rke.check(cand, base, fail_if="map < 0")


def test_check_markdown_escapes_html_and_line_breaks() -> None:
    bad = "m<img src=x onerror=alert(1)>\n| forged | 1 | 1 | 0 | 1 | 0/0/0 | PASS |"
    base = pl.DataFrame({"query": ["q1", "q2", "q3"], bad: [0.5, 0.6, 0.7]})
    cand = pl.DataFrame({"query": ["q1", "q2", "q3"], bad: [0.1, 0.2, 0.3]})
    markdown = rke.check(cand, base, [bad], fail_if_significant=True).markdown()
    assert "<img" not in markdown
    lines = markdown.splitlines()
    rows = [line for line in lines if line.startswith("|")]
    assert len(rows) == 3  # header, rule, one metric: no forged row
    assert len(re.findall(r"(?<!\\)\|", rows[2])) == 8  # 7 cells, their | escaped
    reasons = [line for line in lines if line.startswith("- ")]
    assert len(reasons) == 1
    assert "\\| forged \\|" in reasons[0]


def test_ndeval_csv_quotes_the_topic(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import csv

    topic = '=HYPERLINK("http://x",,"y")'
    run = tmp_path / "run.txt"
    run.write_text(f"{topic} Q0 d1 1 2.0 r\n{topic} Q0 d2 2 1.0 r\n")
    qrels = tmp_path / "sqrels.txt"
    qrels.write_text(f"{topic} 1 d1 1\n{topic} 2 d2 1\n")
    code, out, err = _run_cli(capsys, run, "--qrels", qrels, "--subtopics", "-f", "ndeval")
    assert code == 0, err
    rows = list(csv.reader(out.splitlines()))
    assert {len(row) for row in rows} == {23}
    assert rows[1][:2] == ["r", topic]
    assert rows[-1][:2] == ["r", "amean"]


@pytest.mark.parametrize(("second", "kind"), [("1", "the same label"), ("0", "another label")])
def test_repeated_subtopic_judgments_are_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, second: str, kind: str
) -> None:
    run = tmp_path / "run.txt"
    run.write_text("1 Q0 d1 1 2.0 r\n1 Q0 d2 2 1.0 r\n")
    qrels = tmp_path / "qrels_dup.txt"
    qrels.write_text(f"1 1 d1 1\n1 2 d2 1\n1 1 d1 {second}\n")
    with pytest.raises(rke.errors.DuplicateItemError, match=f"qrels_dup.txt:3: .*{kind}.*line 1"):
        rke.read_trec_qrels(qrels, subtopics=True)
    code, _, err = _run_cli(capsys, run, "--qrels", qrels, "--subtopics", "-f", "ndeval")
    _one_line_error(code, err, "qrels_dup.txt:3", "again")


def _brute_truncated(rows: list[tuple[str, object, float, int]], depth: int) -> dict[str, float]:
    """trec_eval -M by hand: score descending, ties by the item's text descending; AP and P@1."""
    out: dict[str, float] = {}
    for query in sorted({row[0] for row in rows}):
        mine = [row for row in rows if row[0] == query]
        ranked = sorted(mine, key=lambda row: (row[2], str(row[1])), reverse=True)[:depth]
        relevant = sum(1 for row in mine if row[3] >= 1)
        hits, total = 0, 0.0
        for position, row in enumerate(ranked, start=1):
            if row[3] >= 1:
                hits += 1
                total += hits / position
        out[f"{query}:map"] = total / relevant
        out[f"{query}:p@1"] = float(ranked[0][3] >= 1)
    return out


@pytest.mark.parametrize("integer_items", [True, False])
def test_max_docs_cuts_in_the_engines_tie_order(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, integer_items: bool
) -> None:
    # ties between 9 and 10 (as text "9" > "10"; as numbers 10 > 9), and between "b" and "a"
    items: list[object] = [9, 10, 3, 7] if integer_items else ["b9", "b10", "a3", "a7"]
    rows = [
        ("q1", items[0], 1.0, 1),
        ("q1", items[1], 1.0, 0),
        ("q1", items[2], 0.5, 1),
        ("q2", items[2], 2.0, 0),
        ("q2", items[3], 2.0, 1),
        ("q2", items[0], 1.0, 1),
    ]
    log = pl.DataFrame(rows, schema=["query", "item", "score", "relevance"], orient="row")
    path = tmp_path / "log.parquet"
    log.write_parquet(path)
    expected = _brute_truncated(rows, 1)
    code, out, err = _run_cli(
        capsys, path, "-M", "1", "-m", "map,p@1", "--per-query", "-f", "csv", "--tie-warning", "off"
    )
    assert code == 0, err
    table = pl.read_csv(out.encode()).filter(pl.col("query") != "all")
    for row in table.iter_rows(named=True):
        assert row["map"] == pytest.approx(expected[f"{row['query']}:map"], abs=1e-12)
        assert row["p@1"] == expected[f"{row['query']}:p@1"]
    # evaluate ranks the same way: its p@1 on the whole log equals the cut log's
    engine = rke.evaluate(log, ["p@1"], per_query=True)
    assert dict(zip(engine["query"], engine["p@1"], strict=True)) == {
        q: expected[f"{q}:p@1"] for q in ("q1", "q2")
    }


def test_unknown_metric_is_named_before_the_files_are_read(
    capsys: pytest.CaptureFixture[str], runs: dict[str, Path], tmp_path: Path
) -> None:
    qrels = tmp_path / "other_queries.txt"
    qrels.write_text("1 0 d1 1\n7 0 d9 1\n")  # query 2 unjudged, 7 unretrieved: a warning
    code, _, err = _run_cli(capsys, runs["cand"], "--qrels", qrels, "-m", "mapp")
    _one_line_error(code, err, "unknown metric 'mapp'")
    code, _, err = _run_cli(
        capsys, "compare", runs["cand"], runs["base"], "--qrels", qrels, "-m", "mapp"
    )
    _one_line_error(code, err, "unknown metric 'mapp'")
    code, _, err = _run_cli(capsys, runs["cand"], "--qrels", qrels, "-m", "map")
    assert code == 0
    assert "warning" in err  # the same files do warn once the metric is right


def test_similarity_of_one_trec_run_is_a_mistake(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # it printed an empty table and exited 0
    paths = _gzip_runs(tmp_path, ["a1"])
    code, out, err = _run_cli(capsys, "similarity", *paths, "-m", "jaccard@5")
    assert code == 2
    assert out == ""
    assert "two or more TREC run files" in err
