"""Bounded-memory passes (``n_buckets``), many-file inputs and the progress bar.

Each result is compared with the plain one-pass evaluation of the same data. Speed and memory
are measured in ``benchmarks/``, not here.
"""

from __future__ import annotations

import importlib
import tempfile

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from polars_rankeval.cli import main as cli_main
from tests.properties.test_differential import logs

# the module, not the function of the same name that the package exports
evaluate_module = importlib.import_module("polars_rankeval._engine.evaluate")
# the passes (ROWS_PER_PASS, RESCAN_PASSES) live in their own module
passes_module = importlib.import_module("polars_rankeval._engine.passes")
progress_module = importlib.import_module("polars_rankeval._engine.progress")

METRICS = ["ndcg@10", "map", "mrr", "p@10", "recall@100", "bpref", "num_q", "num_rel"]


def _log(n_queries: int = 300, seed: int = 3) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    rows = n_queries * 20
    frame = pl.DataFrame(
        {
            "system": rng.choice(["bm25", "dense"], size=rows),
            "query": [f"q{q}" for q in np.repeat(np.arange(n_queries), 20)],
            "item": np.tile(np.arange(20), n_queries),
            "score": np.round(rng.random(rows), 1),  # one decimal: many ties
            "relevance": rng.choice([0, 1, 2, -1], size=rows, p=[0.6, 0.2, 0.1, 0.1]),
        }
    )
    # some unjudged rows and some judged rows that were not retrieved
    return frame.with_columns(
        pl.when(pl.int_range(pl.len()) % 7 == 0)
        .then(None)
        .otherwise(pl.col("relevance"))
        .alias("relevance"),
        pl.when(pl.int_range(pl.len()) % 11 == 0)
        .then(None)
        .otherwise(pl.col("score"))
        .alias("score"),
    )


def _same(left: pl.DataFrame, right: pl.DataFrame) -> None:
    # Polars' parallel float sums may differ in the last bit between plans
    assert_frame_equal(left, right, rel_tol=1e-12, abs_tol=1e-15)


@pytest.mark.parametrize("n_buckets", [2, 3, 7])
@pytest.mark.parametrize("per_query", [True, False])
def test_passes_equal_one_pass(n_buckets, per_query):
    log = _log()
    plain = rke.evaluate(log, METRICS, by="system", per_query=per_query)
    lazy = rke.evaluate(log.lazy(), METRICS, by="system", per_query=per_query, n_buckets=n_buckets)
    assert isinstance(lazy, pl.LazyFrame)
    _same(lazy.collect(), plain)
    eager = rke.evaluate(log, METRICS, by="system", per_query=per_query, n_buckets=n_buckets)
    _same(eager, plain)


def test_auto_makes_one_pass_per_rows_per_pass(monkeypatch, capsys):
    log = _log()
    monkeypatch.setattr(passes_module, "ROWS_PER_PASS", 1_000)  # 6,000 rows -> 6 passes
    auto = rke.evaluate(log.lazy(), METRICS, per_query=True, by="system", progress=True)
    _same(auto.collect(), rke.evaluate(log, METRICS, per_query=True, by="system"))
    assert "pass 6/6" in capsys.readouterr().err


def test_progress_is_silent_when_stderr_is_not_a_terminal(capsys):
    log = _log()
    rke.evaluate(log.lazy(), ["map"], n_buckets=3).collect()  # progress=None, no tty
    rke.evaluate(log.lazy(), ["map"], n_buckets=3, progress=False).collect()
    assert capsys.readouterr().err == ""


def test_duplicates_still_raise_in_passes():
    log = _log()
    with pytest.raises(rke.DuplicateItemError):
        rke.evaluate(pl.concat([log, log.head(1)]).lazy(), ["map"], n_buckets=4).collect()


@pytest.mark.parametrize("bad", [0, -1, 1.5, "many", True])
def test_bad_n_buckets(bad):
    with pytest.raises(rke.InvalidOptionError, match="n_buckets"):
        rke.evaluate(_log(10), ["map"], n_buckets=bad)


def test_glob_of_files_and_hive_directory_with_partition_as_by_key(tmp_path):
    log = _log()
    plain = rke.evaluate(log, METRICS, by="system", per_query=True)
    # several files, split by rows (one query may span files)
    for index, part in enumerate(log.iter_slices(n_rows=1_000)):
        part.write_parquet(tmp_path / f"part-{index}.parquet")
    from_glob = rke.evaluate(
        pl.scan_parquet(tmp_path / "part-*.parquet"), METRICS, by="system", per_query=True
    )
    _same(from_glob.collect(), plain)
    # a hive-partitioned directory: system=bm25/..., system=dense/...
    hive = tmp_path / "hive"
    log.write_parquet(hive, partition_by="system")
    scanned = pl.scan_parquet(hive, hive_partitioning=True)
    assert "system" in scanned.collect_schema()
    from_hive = rke.evaluate(scanned, METRICS, by="system", per_query=True, n_buckets=3)
    _same(from_hive.collect().select(plain.columns), plain)


def test_cli_reads_a_hive_directory(tmp_path, capsys):
    log = _log()
    hive = tmp_path / "hive"
    log.write_parquet(hive, partition_by="system")
    assert cli_main([str(hive), "--by", "system", "-m", "map,num_q", "--csv"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    expected = rke.evaluate(log, ["map", "num_q"], by="system")
    assert lines[0] == "system,map,num_q"
    assert [line.split(",")[0] for line in lines[1:]] == expected["system"].to_list()


@settings(max_examples=40, deadline=None)
@given(log=logs(), n_buckets=st.sampled_from([2, 3, 5]))
def test_bucket_count_never_changes_results(log, n_buckets):
    frame = log.frame()
    metrics = ["ndcg@3", "map", "mrr", "p@2", "bpref", "num_q"]
    plain = rke.evaluate(frame, metrics, per_query=True)
    passes = rke.evaluate(frame.lazy(), metrics, per_query=True, n_buckets=n_buckets).collect()
    assert_frame_equal(passes, plain, rel_tol=1e-12, abs_tol=1e-15)


# ---- the spill: each pass reads only its own bucket's files ----------------------------------


def _watch_passes(monkeypatch, spill_dir, interrupt=None):
    """Record, at each pass's plan, the spill files that exist; optionally raise there."""
    seen = []
    plan = evaluate_module.per_query_plan

    def watched(*args, **kwargs):
        files = sorted(p for p in spill_dir.rglob("*.parquet"))
        if files:  # a pass over a bucket (not the plan built for the schema)
            seen.append(files)
            if interrupt is not None:
                raise interrupt
        return plan(*args, **kwargs)

    monkeypatch.setattr(evaluate_module, "per_query_plan", watched)
    return seen


def test_passes_read_spilled_buckets_which_are_removed(tmp_path, monkeypatch):
    log = _log()
    seen = _watch_passes(monkeypatch, tmp_path)
    out = rke.evaluate(
        log.lazy(), METRICS, by="system", per_query=True, n_buckets=4, spill_dir=tmp_path
    )
    _same(out.collect(), rke.evaluate(log, METRICS, by="system", per_query=True))
    assert len(seen) == 4  # one pass per bucket, each while the bucket files existed
    assert {f.parent.name for f in seen[0]} == {f"__rke_bucket={b}" for b in range(4)}
    # each bucket's files are removed once its pass is done
    assert [{f.parent.name for f in files} for files in seen[1:]] == [
        {"__rke_bucket=1", "__rke_bucket=2", "__rke_bucket=3"},
        {"__rke_bucket=2", "__rke_bucket=3"},
        {"__rke_bucket=3"},
    ]
    assert list(tmp_path.iterdir()) == []  # removed on success


def test_one_pass_writes_no_spill(tmp_path, monkeypatch):
    log = _log()
    monkeypatch.setattr(tempfile, "mkdtemp", None)  # would raise if the spill were made
    out = rke.evaluate(log.lazy(), ["map"], spill_dir=tmp_path).collect()  # 6,000 rows: 1 pass
    _same(out, rke.evaluate(log, ["map"]))


@pytest.mark.parametrize("n_buckets", [2, passes_module.RESCAN_PASSES])
def test_few_passes_reread_the_input_instead_of_spilling(tmp_path, monkeypatch, n_buckets):
    log = _log()
    monkeypatch.setattr(tempfile, "mkdtemp", None)  # would raise if the spill were made
    out = rke.evaluate(log.lazy(), METRICS, by="system", n_buckets=n_buckets).collect()
    _same(out, rke.evaluate(log, METRICS, by="system"))


def test_more_passes_than_rereads_spill(tmp_path):
    log = _log()
    made = []
    real = tempfile.mkdtemp

    def mkdtemp(*args, **kwargs):
        made.append(real(*args, **kwargs))
        return made[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tempfile, "mkdtemp", mkdtemp)
        passes = passes_module.RESCAN_PASSES + 1
        out = rke.evaluate(log.lazy(), ["map"], n_buckets=passes, spill_dir=tmp_path).collect()
    _same(out, rke.evaluate(log, ["map"]))
    assert len(made) == 1


def test_spill_is_removed_on_error(tmp_path):
    log = _log()
    with pytest.raises(rke.DuplicateItemError):
        rke.evaluate(
            pl.concat([log, log.head(1)]).lazy(), ["map"], n_buckets=4, spill_dir=tmp_path
        ).collect()
    assert list(tmp_path.iterdir()) == []


def test_spill_is_removed_on_ctrl_c(tmp_path, monkeypatch):
    seen = _watch_passes(monkeypatch, tmp_path, interrupt=KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        rke.evaluate(_log().lazy(), ["map"], n_buckets=4, spill_dir=tmp_path).collect()
    assert len(seen) == 1  # interrupted in the first pass, with the buckets on disk
    assert list(tmp_path.iterdir()) == []


def test_empty_buckets_and_empty_input():
    log = _log(2)  # 2 queries in 7 buckets: at least 5 buckets are empty
    _same(
        rke.evaluate(log.lazy(), METRICS, per_query=True, n_buckets=7).collect(),
        rke.evaluate(log, METRICS, per_query=True),
    )
    with pytest.warns(rke.EmptyEvaluationWarning, match="no rows"):
        empty = rke.evaluate(log.lazy().head(0), METRICS, per_query=True, n_buckets=3).collect()
    assert empty.is_empty()
    assert empty.schema == rke.evaluate(log, METRICS, per_query=True).schema


def test_progress_shows_the_spill_then_the_passes(monkeypatch, capsys):
    log = _log()
    monkeypatch.setattr(progress_module, "_tqdm_class", lambda: None)
    rke.evaluate(log.lazy(), ["map"], n_buckets=4, progress=True).collect()
    err = capsys.readouterr().err
    assert "rank_eval: spill" in err
    assert err.index("spill") < err.index("pass 1/4") < err.index("pass 4/4")
    assert "100%" in err


def test_progress_uses_tqdm_where_stderr_is_not_a_terminal(monkeypatch, capsys):
    calls = []
    real = progress_module._tqdm_class()
    assert real is not None  # tqdm is a test dependency (via ranx)

    def recording(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(progress_module, "_tqdm_class", lambda: recording)
    rke.evaluate(_log().lazy(), ["map"], n_buckets=4, progress=True).collect()
    assert calls == [{"total": 5, "desc": "rank_eval: spill", "unit": "step"}]
    assert "pass 4/4" in capsys.readouterr().err


def test_cli_spill_dir(tmp_path, capsys):
    path = tmp_path / "log.parquet"
    _log().write_parquet(path)
    spill = tmp_path / "spill"
    spill.mkdir()
    argv = [str(path), "-m", "map", "--csv", "--buckets", "4", "--spill-dir", str(spill)]
    assert cli_main(argv) == 0
    assert capsys.readouterr().out.splitlines()[0] == "map"
    assert list(spill.iterdir()) == []


@pytest.mark.parametrize("duplicates", ["first", "last", "max_score"])
def test_spill_keeps_input_order_for_duplicates(duplicates):
    log = _log()
    # the same pairs again with other scores and labels, later in the input
    again = log.sample(fraction=0.3, seed=1).with_columns(
        pl.col("score").reverse(), pl.col("relevance").reverse()
    )
    both = pl.concat([log, again])
    plain = rke.evaluate(both, METRICS, per_query=True, by="system", duplicates=duplicates)
    passes = rke.evaluate(
        both.lazy(), METRICS, per_query=True, by="system", duplicates=duplicates, n_buckets=3
    )
    _same(passes.collect(), plain)


# ---- "auto" passes: rows per pass by the plan's width; an input in memory is not spilled ---


WIDE = [f"{family}@{k}" for family in ("ndcg", "p", "recall", "map") for k in range(1, 11)]


@pytest.mark.parametrize("per_query", [True, False])
@pytest.mark.parametrize(("metrics", "passes"), [(["map"], 2), (WIDE, 11)])
def test_auto_passes_hold_fewer_rows_for_a_wider_plan(monkeypatch, metrics, passes, per_query):
    # 6,000 rows, ROWS_PER_PASS 3,000: the narrow plan (query, map, its tie range) takes 2
    # passes; the 40 metrics (81 columns with the query and their tie ranges) hold
    # 3,000 * 16 // 81 = 592 rows a pass, so 11 passes, all filtered from the frame in memory
    monkeypatch.setattr(passes_module, "ROWS_PER_PASS", 3_000)
    monkeypatch.setattr(passes_module, "MIN_ROWS_PER_PASS", 100)
    monkeypatch.setattr(tempfile, "mkdtemp", None)  # would raise if the log were spilled
    seen: list[int] = []
    rescanned = passes_module._rescanned_passes

    def count(lf, columns, each, total, **kwargs):
        seen.append(total)
        return rescanned(lf, columns, each, total, **kwargs)

    monkeypatch.setattr(passes_module, "_rescanned_passes", count)
    log = _log()
    out = rke.evaluate(log.lazy(), metrics, per_query=per_query).collect()
    assert seen == [passes]
    _same(out, rke.evaluate(log, metrics, per_query=per_query))
