"""Read once: a lazy input that is costly to scan is read once when evaluated in passes.

A counter inside the input (a Python scan, ``pl.defer``) says how often the input was read;
the results are compared with the evaluation of the collected input.
"""

from __future__ import annotations

import contextlib
import importlib
import tempfile
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from polars_rankeval._engine.read_once import fits_in_memory, is_costly

# the passes (ROWS_PER_PASS, RESCAN_PASSES) live in their own module
passes_module = importlib.import_module("polars_rankeval._engine.passes")
METRICS = ["ndcg@10", "map", "mrr", "p@5", "num_q"]


def _log(n_queries: int = 200, seed: int = 11) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    rows = n_queries * 15
    return pl.DataFrame(
        {
            "query": [f"q{q}" for q in np.repeat(np.arange(n_queries), 15)],
            "item": np.tile(np.arange(15), n_queries),
            "score": np.round(rng.random(rows), 1),  # ties
            "relevance": rng.choice([None, -1, 0, 1, 2], size=rows).tolist(),
        },
        schema_overrides={"relevance": pl.Int64},
    )


def _counted(frame: pl.DataFrame) -> tuple[pl.LazyFrame, list[int]]:
    """``frame`` behind a Python scan that counts its reads."""
    reads: list[int] = []

    def read() -> pl.DataFrame:
        reads.append(1)
        return frame

    return pl.defer(read, schema=frame.schema), reads


def _same(left: pl.DataFrame, right: pl.DataFrame) -> None:
    assert_frame_equal(left, right, rel_tol=1e-12, abs_tol=1e-15)


def test_plans_that_repeat_work_are_costly(tmp_path: Path) -> None:
    log = _log(5)
    log.write_parquet(tmp_path / "log.parquet")
    log.write_csv(tmp_path / "log.csv")
    parquet = pl.scan_parquet(tmp_path / "log.parquet")
    assert not is_costly(parquet.filter(pl.col("score") > 0).select("query", "item", "score"))
    assert not is_costly(log.lazy().with_columns(pl.col("score") * 2))
    assert is_costly(pl.scan_csv(tmp_path / "log.csv"))
    assert is_costly(parquet.join(log.lazy(), on=["query", "item"]))
    assert is_costly(_counted(log)[0])
    # a small CSV fits in memory; a Python scan has no row estimate, so it never counts as fitting
    assert fits_in_memory(pl.scan_csv(tmp_path / "log.csv"), rows=1_000)
    assert not fits_in_memory(pl.scan_csv(tmp_path / "log.csv"), rows=10)
    assert not fits_in_memory(_counted(log)[0], rows=10**9)
    assert fits_in_memory(log.lazy().join(log.lazy(), on=["query", "item"]), rows=10)


@pytest.mark.parametrize("n_buckets", ["auto", 2, 3, 5])
@pytest.mark.parametrize("per_query", [False, True])
def test_a_costly_input_is_read_once(n_buckets, per_query: bool) -> None:
    log = _log()
    lazy, reads = _counted(log)
    out = rke.evaluate(lazy, METRICS, per_query=per_query, n_buckets=n_buckets)
    assert reads == []  # nothing read before collect
    _same(out.collect(), rke.evaluate(log, METRICS, per_query=per_query))
    # "auto" counted the rows and 2, 3 re-read the input per pass before
    assert len(reads) == 1


def test_auto_over_many_passes_reads_once(monkeypatch) -> None:
    log = _log()
    monkeypatch.setattr(passes_module, "ROWS_PER_PASS", 500)  # 3,000 rows: 6 passes
    lazy, reads = _counted(log)
    _same(rke.evaluate(lazy, METRICS, by=None).collect(), rke.evaluate(log, METRICS))
    assert len(reads) == 1


def _spills(monkeypatch) -> list[str]:
    made: list[str] = []
    real = tempfile.mkdtemp

    def mkdtemp(*args, **kwargs):
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    return made


def test_a_small_join_is_collected_not_spilled(monkeypatch) -> None:
    log = _log()
    run = log.select("query", "item", "score")
    qrels = log.filter(pl.col("relevance").is_not_null()).select("query", "item", "relevance")
    joined = rke.join_run_qrels(run, qrels)
    made = _spills(monkeypatch)
    out = rke.evaluate(joined, METRICS, n_buckets=2).collect()
    _same(out, rke.evaluate(joined.collect(), METRICS))
    assert made == []


def test_a_large_csv_is_spilled_to_parquet_and_removed(tmp_path: Path, monkeypatch) -> None:
    log = _log()
    path = tmp_path / "log.csv"
    log.write_csv(path)
    spill = tmp_path / "spill"
    spill.mkdir()
    monkeypatch.setattr(passes_module, "ROWS_PER_PASS", 1_000)  # 3,000 rows: 3 passes
    made = _spills(monkeypatch)
    out = rke.evaluate(pl.scan_csv(path), METRICS, spill_dir=spill).collect()
    _same(out, rke.evaluate(log, METRICS))
    assert len(made) == 1  # the input's copy; 3 passes re-read it
    assert list(spill.iterdir()) == []


def test_the_copy_keeps_the_input_order_for_duplicates(tmp_path: Path, monkeypatch) -> None:
    log = _log()
    again = log.sample(fraction=0.3, seed=1).with_columns(pl.col("score").reverse())
    both = pl.concat([log, again])
    path = tmp_path / "both.csv"
    both.write_csv(path)
    monkeypatch.setattr(passes_module, "ROWS_PER_PASS", 1_000)  # spilled, then 4 passes
    for duplicates in ("first", "last"):
        plain = rke.evaluate(both, METRICS, per_query=True, duplicates=duplicates)
        lazy = rke.evaluate(pl.scan_csv(path), METRICS, per_query=True, duplicates=duplicates)
        _same(lazy.collect(), plain)


def test_errors_in_a_costly_input_still_name_the_problem(tmp_path: Path) -> None:
    log = _log()
    lazy, _ = _counted(pl.concat([log, log.head(1)]))
    with pytest.raises(rke.DuplicateItemError):
        rke.evaluate(lazy, METRICS, n_buckets=2, spill_dir=tmp_path).collect()
    assert list(tmp_path.iterdir()) == []


# -- a truncated or corrupt Parquet input is named, not a raw Polars error -------------------


def _parts(folder: Path, cut: str | None = "p1.parquet") -> Path:
    """Three Parquet parts of a log; ``cut`` is truncated to half its bytes."""
    log = _log(30)
    parts = folder / "parts"
    parts.mkdir()
    for index, query in enumerate(log.partition_by("query", as_dict=False)[:3]):
        query.write_parquet(parts / f"p{index}.parquet")
    if cut is not None:
        data = (parts / cut).read_bytes()
        (parts / cut).write_bytes(data[: len(data) // 2])
    return parts


@pytest.mark.parametrize("n_buckets", ["auto", 1, 2, 8])
@pytest.mark.parametrize("per_query", [False, True])
def test_a_cut_file_of_a_glob_is_named(tmp_path: Path, n_buckets, per_query: bool) -> None:
    parts = _parts(tmp_path)
    source = str(parts / "*.parquet")
    with pytest.raises(rke.ResourceError) as caught:
        rke.evaluate(
            pl.scan_parquet(source), ["map", "gm_map"], n_buckets=n_buckets, per_query=per_query
        ).collect()
    message = str(caught.value)
    assert message.startswith(f"{str(parts / 'p1.parquet')!r} (in input {source!r})"), message
    assert "is not a readable Parquet file" in message
    assert isinstance(caught.value.__cause__, pl.exceptions.ComputeError)  # Polars' own, kept


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda data: data[: len(data) // 2],  # truncated: no footer
        lambda data: data[:4] + b"\0" * (len(data) - 12) + data[-8:],  # footer zeroed
        lambda data: b"not parquet at all, just text\n",
    ],
)
def test_a_single_corrupt_file_is_named_when_evaluate_is_called(tmp_path: Path, corrupt) -> None:
    path = tmp_path / "log.parquet"
    _log(5).write_parquet(path)
    path.write_bytes(corrupt(path.read_bytes()))
    # its footer is read for the schema: the error comes from evaluate, before any collect
    with pytest.raises(rke.ResourceError, match=r"log\.parquet' is not a readable Parquet file"):
        rke.evaluate(pl.scan_parquet(path), ["map"])
    with pytest.raises(rke.ResourceError, match=r"log\.parquet' is not a readable Parquet file"):
        rke.evaluate(pl.scan_parquet(path), ["map"], n_buckets=8)


def test_other_errors_and_readable_files_pass_unchanged(tmp_path: Path) -> None:
    parts = _parts(tmp_path, cut=None)
    source = pl.scan_parquet(str(parts / "*.parquet"))
    want = rke.evaluate(pl.read_parquet(str(parts / "*.parquet")), ["map"])
    assert_frame_equal(rke.evaluate(source, ["map"], n_buckets=2).collect(), want)
    # a Polars error that is not a Parquet one is not touched
    bad = source.with_columns(pl.col("score").cast(pl.String) + "x")
    with pytest.raises(rke.ColumnTypeError):
        rke.evaluate(bad, ["map"]).collect()


def test_a_join_of_frames_in_memory_is_joined_per_pass(monkeypatch) -> None:
    # Each pass's bucket filter reaches both sides of join_run_qrels' join (Polars pushes it
    # down), so the joined whole is never collected: read_once hands the plan back unchanged.
    log = _log()
    run = log.select("query", "item", "score")
    qrels = log.filter(pl.col("relevance").is_not_null()).select("query", "item", "relevance")
    joined = rke.join_run_qrels(run, qrels)
    read_once = importlib.import_module("polars_rankeval._engine.read_once").read_once
    with contextlib.ExitStack() as stack:
        assert read_once(joined, stack, rows=10, spill_dir=None, compression="lz4") is joined
    made = _spills(monkeypatch)
    monkeypatch.setattr(passes_module, "ROWS_PER_PASS", 500)  # 6 passes, each joining its share
    out = rke.evaluate(joined, METRICS, per_query=True).collect()
    _same(out, rke.evaluate(joined.collect(), METRICS, per_query=True))
    assert made == []
