"""Where the gate, the command line and the file readers meet (issue 27).

gzip runs sniffed by their text, TREC's ``input.<tag>.gz`` names, ``similarity`` on TREC runs,
gzip errors naming the file, the check's option names, ``-o`` formats and atomic writes,
``$GITHUB_STEP_SUMMARY``, the summary query id ``all``, and the check's Markdown escaping.
Expected values come from plain Python over the files written here (or from trec_eval's rules
written out by hand), never from the code under test.
"""

from __future__ import annotations

import gzip
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
    assert (row["system"], row["other"]) == ("a1", "b2")

    # by hand: each run's top 5 documents of each query, Jaccard averaged over the queries
    def tops(path: Path) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for line in gzip.decompress(path.read_bytes()).decode().splitlines():
            q, _, doc, _, _, _ = line.split()
            found.setdefault(q, set()).add(doc)
        return found

    a, b = tops(paths[0]), tops(paths[1])
    expected = sum(len(a[q] & b[q]) / len(a[q] | b[q]) for q in a) / len(a)
    assert row["jaccard@5"] == pytest.approx(expected, abs=1e-12)
    assert row["queries"] == 2
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
