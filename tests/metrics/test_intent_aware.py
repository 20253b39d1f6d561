"""Intent-aware (diversity) measures against ndeval: published values, pyndeval, the ndeval binary.

References:

* the pyndeval README example and ir_measures' ``tests/test_pyndeval.py`` (values below);
* ir_measures issue #61 (maintainer's answer, 2024-10): alpha_nDCG@10 of [d0] and [d1];
* pyndeval 0.0.8 (ndeval.c 4.5 compiled as a Python extension) live, per query, on generated
  diversity logs with ties, graded and zero judgments, unjudged and unretrieved items and a
  query with no relevant subtopic; pyndeval orders ties by item ascending
  (``tie_order="item_asc"`` here);
* the ndeval command-line program itself, compiled from the C source in the pyndeval sdist,
  whose CSV output ``rank-eval --format ndeval`` reproduces byte for byte (``-traditional``:
  trec_eval's tie order).
"""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from polars_rankeval.errors import ColumnNotFoundError

NDEVAL_DEFAULT = [
    "err_ia@5", "err_ia@10", "err_ia@20", "nerr_ia@5", "nerr_ia@10", "nerr_ia@20",
    "alpha_dcg@5", "alpha_dcg@10", "alpha_dcg@20", "alpha_ndcg@5", "alpha_ndcg@10",
    "alpha_ndcg@20", "nrbp", "nnrbp", "map_ia", "p_ia@5", "p_ia@10", "p_ia@20", "strec@5",
    "strec@10", "strec@20",
]  # fmt: skip


def _diversity_log(qrels: list[tuple[str, str, str, int]], run: list[tuple[str, str, float]]):
    judged = pl.DataFrame(qrels, schema=["query", "subtopic", "item", "relevance"], orient="row")
    ranked = pl.DataFrame(run, schema=["query", "item", "score"], orient="row")
    return rke.join_run_qrels(ranked, judged).collect()


def test_pyndeval_readme_example() -> None:
    """qrels a:A, b:B, b:D, c:C; run A 9.3, D 8.4, E 8.1 (unjudged), B 7.6."""
    log = _diversity_log(
        [("0", "a", "A", 1), ("0", "b", "B", 1), ("0", "b", "D", 1), ("0", "c", "C", 1)],
        [("0", "A", 9.3), ("0", "D", 8.4), ("0", "E", 8.1), ("0", "B", 7.6)],
    )
    published = {
        "err_ia@5": 0.393343, "err_ia@10": 0.390776, "err_ia@20": 0.390730,
        "nerr_ia@5": 0.829787, "nerr_ia@20": 0.829787,
        "alpha_dcg@5": 0.405289, "alpha_dcg@10": 0.399879, "alpha_dcg@20": 0.399741,
        "alpha_ndcg@5": 0.786896, "alpha_ndcg@20": 0.786896,
        "p_ia@5": 0.2, "p_ia@10": 0.1, "p_ia@20": 0.05,
        "strec@5": 0.666667, "strec@20": 0.666667,
        "nrbp": 0.390625, "nnrbp": 0.862069, "map_ia": 0.5,
    }  # fmt: skip
    row = rke.evaluate(log, list(published)).row(0, named=True)
    for name, value in published.items():
        assert row[name] == pytest.approx(value, abs=5e-7), name
    other = rke.evaluate(
        log, ["alpha_ndcg@5(alpha=0.8)", "err_ia@5(alpha=0.8)", "nrbp(alpha=0.8,beta=0.9)",
              "nnrbp(alpha=0.8,beta=0.9)"],
    ).row(0)  # fmt: skip
    assert other == pytest.approx((0.774477, 0.463107, 0.559185, 0.716367), abs=5e-7)


def test_ir_measures_test_values() -> None:
    """ir_measures tests/test_pyndeval.py: ERR_IA@20 0.4659 (q0), 0.1803 (q1)."""
    qrels = [
        ("0", "0", "D0", 0), ("0", "0", "D1", 1), ("0", "0", "D2", 1), ("0", "1", "D2", 1),
        ("0", "1", "D3", 2), ("0", "0", "D4", 0), ("1", "0", "D0", 1), ("1", "0", "D3", 2),
        ("1", "1", "D5", 2),
    ]  # fmt: skip
    run = [
        ("0", "D0", 0.8), ("0", "D2", 0.7), ("0", "D1", 0.3), ("0", "D3", 0.4), ("0", "D4", 0.1),
        ("1", "D1", 0.8), ("1", "D3", 0.7), ("1", "D4", 0.3), ("1", "D2", 0.4),
    ]  # fmt: skip
    per_query = rke.evaluate(
        _diversity_log(qrels, run),
        ["err_ia@20", "alpha_ndcg@5", "nerr_ia@5", "nnrbp", "map_ia", "alpha_ndcg@5(rel=2)"],
        per_query=True,
    ).sort("query")
    assert per_query["err_ia@20"].to_list() == pytest.approx([0.4659, 0.1803], abs=5e-5)
    assert per_query["alpha_ndcg@5"].to_list() == pytest.approx([0.673249, 0.335435], abs=5e-7)
    assert per_query["nerr_ia@5"].to_list() == pytest.approx([0.534483, 0.3], abs=5e-7)
    assert per_query["nnrbp"].to_list() == pytest.approx([0.5, 0.307692], abs=5e-7)
    assert per_query["map_ia"].to_list() == pytest.approx([0.541667, 0.125], abs=5e-7)
    assert per_query["alpha_ndcg@5(rel=2)"].to_list() == pytest.approx([0.5, 0.386853], abs=5e-7)


def test_ir_measures_issue_61_example() -> None:
    qrels = [("0", "0", "d0", 1), ("0", "1", "d0", 1), ("0", "0", "d1", 1)]
    first = rke.evaluate(_diversity_log(qrels, [("0", "d0", 1.0)]), ["alpha_ndcg@10"])
    second = rke.evaluate(_diversity_log(qrels, [("0", "d1", 1.0)]), ["alpha_ndcg@10"])
    assert first.item() == pytest.approx(0.8637574337885664, abs=1e-12)
    assert second.item() == pytest.approx(0.4318787168942832, abs=1e-12)


def generated(
    seed: int, n_queries: int = 25
) -> tuple[list[tuple[str, str, str, int]], pl.DataFrame]:
    """Diversity qrels and a run: numeric query ids, ties, graded/zero judgments, gaps."""
    rng = np.random.default_rng(seed)
    qrels: list[tuple[str, str, str, int]] = []
    run: list[tuple[str, str, float]] = []
    for q in range(1, n_queries + 1):
        n_docs = int(rng.integers(5, 40))
        n_sub = int(rng.integers(1, 6))
        docs = [f"d{d:03d}" for d in rng.choice(400, size=n_docs, replace=False)]
        for doc in docs:
            if rng.random() < 0.6:
                for s in range(1, n_sub + 1):
                    if rng.random() < 0.4:
                        grade = 0 if q == 3 else int(rng.choice([0, 1, 1, 2, 3]))
                        qrels.append((str(q), str(s), doc, grade))
        if not any(row[0] == str(q) for row in qrels):  # every query has judgments
            qrels.append((str(q), "1", docs[0], 0))
        retrieved = [d for d in docs if rng.random() < 0.8]
        scores = np.round(rng.random(len(retrieved)), 1)  # ties
        run.extend((str(q), d, float(s)) for d, s in zip(retrieved, scores, strict=True))
    frame = pl.DataFrame(run, schema=["query", "item", "score"], orient="row")
    return qrels, frame


def _pyndeval_measures(names: list[str]) -> list[str]:
    spelled = {
        "err_ia": "ERR-IA", "nerr_ia": "nERR-IA", "alpha_dcg": "alpha-DCG",
        "alpha_ndcg": "alpha-nDCG", "p_ia": "P-IA", "strec": "strec", "nrbp": "NRBP",
        "nnrbp": "nNRBP", "map_ia": "MAP-IA",
    }  # fmt: skip
    out = []
    for name in names:
        base, _, k = name.partition("@")
        out.append(spelled[base] + (f"@{k}" if k else ""))
    return out


def _with_options(name: str, rel: int, alpha: float, beta: float) -> str:
    """The metric string with the options its family takes (pyndeval's tie order)."""
    family = name.split("@", maxsplit=1)[0]
    options = [f"rel={rel}", "tie_order=item_asc"]
    if family not in {"map_ia", "p_ia", "strec"}:
        options.append(f"alpha={alpha}")
    if family in {"nrbp", "nnrbp"}:
        options.append(f"beta={beta}")
    return f"{name}({','.join(options)})"


@pytest.mark.parametrize(
    ("seed", "rel", "alpha", "beta"), [(0, 1, 0.5, 0.5), (1, 2, 0.5, 0.5), (2, 1, 0.3, 0.8)]
)
def test_live_against_pyndeval(seed: int, rel: int, alpha: float, beta: float) -> None:
    pyndeval = pytest.importorskip("pyndeval", reason="pyndeval is not installed")
    qrels, run = generated(seed)
    names = [
        f"{m}@{k}" for m in ("err_ia", "nerr_ia", "alpha_dcg", "alpha_ndcg", "p_ia", "strec")
        for k in (1, 2, 3, 5, 10, 20)
    ] + ["nrbp", "nnrbp", "map_ia"]  # fmt: skip
    evaluator = pyndeval.RelevanceEvaluator(
        qrels, _pyndeval_measures(names), relevance_level=rel, alpha=alpha, beta=beta
    )
    ordered = run.sort("query", "item")
    theirs = evaluator.evaluate(list(ordered.iter_rows()))
    ours_names = [_with_options(name, rel, alpha, beta) for name in names]
    log = _diversity_log(qrels, list(run.iter_rows()))
    ours = rke.evaluate(log, ours_names, per_query=True)
    assert set(ours["query"]) == set(theirs)
    checked = 0
    for row in ours.iter_rows(named=True):
        expected = theirs[row["query"]]
        for name, spelled, column in zip(names, _pyndeval_measures(names), ours_names, strict=True):
            want, got = expected[spelled], row[column]
            if math.isnan(want):
                assert math.isnan(got), (row["query"], name)
            else:
                assert got == pytest.approx(want, abs=1e-9), (row["query"], name)
            checked += 1
    assert checked == len(names) * len(theirs)


def test_query_without_relevant_subtopic_scores_zero_and_nnrbp_nan() -> None:
    log = _diversity_log([("1", "1", "a", 0)], [("1", "a", 1.0)])
    row = rke.evaluate(log, ["alpha_ndcg@5", "err_ia@5", "nnrbp", "map_ia"]).row(0)
    assert row[:2] == (0.0, 0.0)
    assert math.isnan(row[2])
    assert row[3] == 0.0


def test_missing_subtopics_column_is_explained() -> None:
    log = pl.DataFrame({"query": ["q"], "item": ["a"], "score": [1.0], "relevance": [1]})
    with pytest.raises(ColumnNotFoundError, match="subtopics=True"):
        rke.evaluate(log, ["alpha_ndcg@10"])


def test_intent_aware_options_are_checked() -> None:
    log = _diversity_log([("1", "1", "a", 1)], [("1", "a", 1.0)])
    for bad, option in [
        ("alpha_ndcg@10(alpha=2)", "alpha="),
        ("nrbp(beta=-1)", "beta="),
        ("map_ia(rel=0)", "rel="),
        ("alpha_ndcg", "cutoff"),
        ("nrbp@10", "no cutoff"),
    ]:
        with pytest.raises(rke.InvalidOptionError, match=option):
            rke.evaluate(log, [bad])


def test_lazy_by_and_dataframe_agree() -> None:
    qrels, run = generated(5, n_queries=10)
    both = pl.concat(
        [run.with_columns(pl.lit(name).alias("system")) for name in ("a", "b")]
    ).with_columns(
        pl.when(pl.col("system") == "b").then(-pl.col("score")).otherwise(pl.col("score"))
    )
    judged = pl.DataFrame(qrels, schema=["query", "subtopic", "item", "relevance"], orient="row")
    log = rke.join_run_qrels(both, judged, by="system").collect()
    names = ["alpha_ndcg@10", "err_ia@20", "nnrbp", "map_ia", "strec@5"]
    eager = rke.evaluate(log, names, by="system")
    lazy = rke.evaluate(log.lazy(), names, by="system").collect()
    assert_frame_equal(eager.sort("system"), lazy.sort("system"), abs_tol=1e-12)
    for system in ("a", "b"):
        alone = rke.evaluate(log.filter(pl.col("system") == system).drop("system"), names)
        mine = eager.filter(pl.col("system") == system).drop("system")
        for name in names:
            assert mine[name].item() == pytest.approx(alone[name].item(), abs=1e-12, nan_ok=True)


@pytest.fixture(scope="session")
def ndeval_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ndeval compiled from ndeval.c (version 4.5) in the pyndeval 0.0.8 sdist."""
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler to build ndeval")
    folder = tmp_path_factory.mktemp("ndeval")
    download = [
        sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps",
        "pyndeval==0.0.8", "-d", str(folder),
    ]  # fmt: skip
    fetched = subprocess.run(download, capture_output=True, text=True, timeout=300, check=False)
    archives = list(folder.glob("pyndeval-*.tar.gz"))
    if fetched.returncode or not archives:
        pytest.skip(f"could not download the pyndeval sdist: {fetched.stderr.strip()[-200:]}")
    with tarfile.open(archives[0]) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith("src/ndeval.c"))
        source = folder / "ndeval.c"
        extracted = archive.extractfile(member)
        assert extracted is not None
        source.write_bytes(extracted.read())
    program = folder / "ndeval"
    subprocess.run(
        [compiler, "-O2", "-w", "-o", str(program), str(source), "-lm"], check=True, timeout=120
    )
    return program


def _write_trec(
    folder: Path, qrels: list[tuple[str, str, str, int]], run: pl.DataFrame
) -> tuple[Path, Path]:
    qrels_path, run_path = folder / "qrels.txt", folder / "run.txt"
    qrels_path.write_text("".join(f"{q} {s} {d} {j}\n" for q, s, d, j in qrels))
    lines = []
    for (query,), rows in run.group_by("query", maintain_order=True):
        ranked = rows.sort(["score", "item"], descending=[True, True])
        lines.extend(
            f"{query} Q0 {item} {rank} {score} tag{len(lines) % 1}\n"
            for rank, (item, score) in enumerate(
                zip(ranked["item"], ranked["score"], strict=True), 1
            )
        )
    run_path.write_text("".join(lines))
    return qrels_path, run_path


@pytest.mark.parametrize("seed", [0, 3, 4])
def test_ndeval_csv_byte_for_byte(ndeval_program: Path, tmp_path: Path, seed: int) -> None:
    qrels, run = generated(seed)
    # ndeval reads judgments as 0/1 and counts a topic without any run line as absent
    qrels_path, run_path = _write_trec(tmp_path, qrels, run)
    theirs = subprocess.run(
        [str(ndeval_program), "-traditional", str(qrels_path), str(run_path)],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    ours = subprocess.run(
        [sys.executable, "-m", "polars_rankeval", str(run_path), "--qrels", str(qrels_path),
         "--subtopics", "--format", "ndeval"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == theirs


def test_ndeval_csv_of_the_readme_example(ndeval_program: Path, tmp_path: Path) -> None:
    """A topic with no relevant subtopic prints -nan for nNRBP, and so does the mean."""
    qrels = [("1", "1", "A", 1), ("1", "2", "B", 1), ("1", "2", "D", 1), ("1", "3", "C", 1),
             ("2", "1", "X", 0)]  # fmt: skip
    run = pl.DataFrame(
        [("1", "A", 9.3), ("1", "D", 8.4), ("1", "E", 8.1), ("1", "B", 7.6), ("2", "X", 1.0)],
        schema=["query", "item", "score"],
        orient="row",
    )
    qrels_path, run_path = _write_trec(tmp_path, qrels, run)
    theirs = subprocess.run(
        [str(ndeval_program), str(qrels_path), str(run_path)],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    ours = subprocess.run(
        [sys.executable, "-m", "polars_rankeval", str(run_path), "--qrels", str(qrels_path),
         "--subtopics", "-f", "ndeval"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == theirs
    assert "-nan" in theirs


def test_expression_path_points_to_evaluate() -> None:
    log = _diversity_log([("1", "1", "a", 1)], [("1", "a", 1.0)])
    with pytest.raises(rke.InvalidOptionError, match=r"rke\.evaluate"):
        log.group_by("query").agg(pl.col("relevance").rank_eval.metric("alpha_ndcg@5"))


def test_diversity_qrels_read_as_plain_ones_are_named(tmp_path: Path) -> None:
    path = tmp_path / "qrels.txt"
    path.write_text("1 1 a 1\n1 2 a 0\n1 1 b 1\n")
    with pytest.raises(rke.TrecFormatError, match=r"qrels.txt:1: .*subtopics=True"):
        rke.read_trec_qrels(path)
    run = tmp_path / "run.txt"
    run.write_text("1 Q0 a 1 2.0 tag\n1 Q0 b 2 1.0 tag\n")
    from polars_rankeval.cli import main

    assert main([str(run), "--qrels", str(path)]) == 2
    assert main([str(run), "--qrels", str(path), "--subtopics", "-m", "alpha_ndcg@5"]) == 0
    # the same pair twice under one value is left to evaluate's duplicate rule
    same = tmp_path / "same.txt"
    same.write_text("1 0 a 1\n1 0 a 1\n")
    assert rke.read_trec_qrels(same).collect().height == 2


def test_single_subtopic_qrels_warn(tmp_path: Path) -> None:
    path = tmp_path / "qrels.txt"
    path.write_text("1 0 a 1\n1 0 b 0\n2 0 c 1\n")
    with pytest.warns(rke.SubtopicWarning, match="single subtopic"):
        rke.read_trec_qrels(path, subtopics=True)
