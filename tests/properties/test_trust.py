"""Errors that point at the cause, with the same numbers on every run, and foreign inputs.

* ``DuplicateItemError`` gives the true number of duplicated pairs and rows, whatever the
  thread count, engine or number of passes; it suggests ``by=<column>`` before
  ``duplicates=`` when a column beyond the contract tells the runs apart.
* Errors raised inside a plan reach the user as our exception with our message only.
* pandas DataFrames and pyarrow Tables are accepted and give a Polars DataFrame.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import polars_rankeval as rke


def _two_runs(n_queries: int = 4000, seed: int = 1) -> pl.DataFrame:
    """Two systems over the same queries and items (so the pairs repeat across systems)."""
    rng = np.random.default_rng(seed)
    frames = []
    for system in ("bm25", "neural"):
        query = np.repeat(np.arange(n_queries), 5)
        item = np.tile(np.arange(5), n_queries)
        frames.append(
            pl.DataFrame(
                {
                    "system": system,
                    "query": query,
                    "item": item,
                    "score": rng.random(query.size),
                    "relevance": rng.integers(0, 2, query.size),
                }
            )
        )
    return pl.concat(frames)


def _run(data: object, **options: object) -> pl.DataFrame:
    """Evaluate map and collect, whatever the input type."""
    result = rke.evaluate(data, ["map"], **options)  # type: ignore[call-overload]
    return result.collect() if isinstance(result, pl.LazyFrame) else result


def _error(error: type[Exception], data: object, **options: object) -> str:
    with pytest.raises(error) as info:
        _run(data, **options)
    return str(info.value)


def _true_counts(log: pl.DataFrame) -> tuple[int, int, int]:
    """Duplicated (query, item) pairs, their rows, and the extra rows: counted in Python."""
    counts = Counter(zip(log["query"].to_list(), log["item"].to_list(), strict=True))
    repeated = [n for n in counts.values() if n > 1]
    return len(repeated), sum(repeated), sum(repeated) - len(repeated)


def test_duplicate_count_is_exact_on_every_path() -> None:
    log = _two_runs()
    pairs, rows, extra = _true_counts(log)
    assert (pairs, rows, extra) == (20_000, 40_000, 20_000)
    want = (
        f"{extra} duplicate ('query', 'item') row(s): {pairs} pair(s) occur more than once "
        f"({rows} rows in all)"
    )
    messages = set()
    for data, buckets in ((log, 1), (log.lazy(), 1), (log.lazy(), 3), (log.lazy(), "auto")):
        for _ in range(3):
            messages.add(_error(rke.DuplicateItemError, data, n_buckets=buckets))
    assert len(messages) == 1, messages
    assert want in messages.pop()


def test_duplicate_count_does_not_depend_on_threads() -> None:
    script = (
        "import polars as pl, polars_rankeval as rke\n"
        "import sys; sys.path.insert(0, '.')\n"
        "from tests.properties.test_trust import _two_runs\n"
        "try:\n"
        "    rke.evaluate(_two_runs().lazy(), ['map'], n_buckets=1).collect()\n"
        "except rke.DuplicateItemError as error:\n"
        "    print(error)\n"
    )
    outputs = set()
    for threads in ("1", "2", "4"):
        env = {**os.environ, "POLARS_MAX_THREADS": threads}
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1
    assert "20000 duplicate" in outputs.pop()


def test_forgotten_by_is_suggested_before_duplicates() -> None:
    message = _error(rke.DuplicateItemError, _two_runs(50))
    assert "by='system'" in message
    assert "--by system" in message
    assert message.index("by='system'") < message.index("duplicates=")
    # the examples name real pairs, in a fixed order
    assert "e.g. (query, item) (0, 0) (2 rows), (0, 1) (2 rows), (0, 2) (2 rows)" in message


def test_other_columns_are_named_when_none_explains_the_duplicates() -> None:
    log = _two_runs(50).with_columns(pl.lit("x").alias("note"))
    log = pl.concat([log, log.filter(pl.col("system") == "bm25")])  # real repeats within a run
    message = _error(rke.DuplicateItemError, log)
    assert "['system', 'note']" in message
    assert "by='system'" not in message
    assert "duplicates='first'" in message


def test_no_by_hint_without_extra_columns() -> None:
    log = _two_runs(50).drop("system")
    message = _error(rke.DuplicateItemError, log)
    assert "by=" not in message
    assert "duplicates='first'" in message


@pytest.mark.parametrize("lazy", [False, True])
def test_errors_from_inside_the_plan_carry_only_our_message(lazy: bool) -> None:
    log = _two_runs(50).drop("system")
    bad = log.with_columns(
        pl.when(pl.col("item") == 2).then(float("nan")).otherwise("score").alias("score")
    )
    for frame, error in (
        (log, rke.DuplicateItemError),
        (bad.unique(["query", "item"]), rke.ColumnValueError),
    ):
        text = _error(error, frame.lazy() if lazy else frame, n_buckets=1)
        assert "python_udf" not in text
        assert "This error occurred" not in text
        assert "\n" not in text


def test_nan_count_is_exact() -> None:
    log = _two_runs(3000).filter(pl.col("system") == "bm25")
    bad = log.with_columns(
        pl.when(pl.col("item") == 2).then(float("nan")).otherwise("score").alias("score")
    )
    message = _error(rke.ColumnValueError, bad.lazy(), n_buckets=1)
    assert message.startswith(
        "3000 NaN value(s) in 'score' (score) in 3000 ranked list(s), e.g. query 0, 1, 2;"
    )


EXAMPLE = {
    "query": ["q1", "q1", "q1", "q2", "q2"],
    "item": ["a", "b", "c", "a", "d"],
    "score": [0.9, 0.8, None, 0.5, 0.7],
    "relevance": [1, 0, 2, 1, None],
}


def test_pandas_input_gives_a_polars_frame() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(EXAMPLE)  # labels with a gap become float64 with NaN in pandas
    assert frame["relevance"].dtype == "float64"
    out = rke.evaluate(frame, ["p@1", "mrr", "map"])
    assert isinstance(out, pl.DataFrame)
    assert out.row(0) == (0.5, 0.75, 0.5)  # the hand-worked values of evaluate's docstring
    indexed = pd.DataFrame(EXAMPLE).set_index("query")
    assert rke.evaluate(indexed, ["mrr"]).item() == 0.75  # a named index is a column


def test_pyarrow_table_input_is_wrapped() -> None:
    pd = pytest.importorskip("pandas")
    table = pa.table(EXAMPLE)
    out = rke.evaluate(table, ["p@1", "mrr", "map"], per_query=True)
    assert isinstance(out, pl.DataFrame)
    assert out["mrr"].to_list() == [1.0, 0.5]
    batch = table.to_batches()[0]
    assert rke.evaluate(batch, ["mrr"]).item() == 0.75
    joined = rke.join_run_qrels(
        pa.table({"query": ["q"], "item": ["a"], "score": [1.0]}),
        pd.DataFrame({"query": ["q"], "item": ["a"], "relevance": [1]}),
    )
    assert joined.collect().height == 1


def test_unknown_input_type_names_the_accepted_ones() -> None:
    with pytest.raises(
        rke.InvalidOptionError, match=r"pandas DataFrame or a pyarrow Table, got builtins\.dict"
    ):
        rke.evaluate(EXAMPLE, ["map"])


# ---- option values are case-insensitive, and the canonical value is the one used ------------

_CASE_LOG = pl.DataFrame(
    {
        "query": ["q1"] * 5 + ["q2"] * 2 + ["q3"],
        "item": ["a", "b", "c", "d", "e", "a", "b", "a"],
        "score": [0.9, 0.8, 0.7, 0.6, None, 0.5, 0.4, None],
        "relevance": [0, 2, None, 1, 3, 0, 1, 1],
    }
)


@pytest.mark.parametrize(
    ("spelled", "canonical"),
    [
        ("map@2(denominator=min_k_R)", "map@2(denominator=min_k_R)"),
        ("map@2(denominator=MIN_K_R)", "map@2(denominator=min_k_R)"),
        ("judged@3(denominator=MIN_K_N)", "judged@3(denominator=min_k_n)"),
        ("ndcg@3(gain=EXP)", "ndcg@3(gain=exp)"),
        ("ndcg@3(discount=JARVELIN)", "ndcg@3(discount=jarvelin)"),
        ("err@3(transform=SIGMOID)", "err@3(transform=sigmoid)"),
        ("rbp(gain=BINARY)", "rbp(gain=binary)"),
    ],
)
def test_metric_option_spelling_never_changes_the_value(spelled: str, canonical: str) -> None:
    # a value accepted case-insensitively must act as its canonical spelling, never silently
    # fall back to the default (map@2(denominator=min_k_R) once did)
    got = rke.evaluate(_CASE_LOG, [spelled], per_query=True)[spelled].to_list()
    want = rke.evaluate(_CASE_LOG, [canonical], per_query=True)[canonical].to_list()
    plain = canonical.partition("(")[0]
    default = rke.evaluate(_CASE_LOG, [plain], per_query=True)[plain].to_list()
    assert got == want
    assert want != default, "the option must matter here"


def test_min_k_r_denominator_by_hand() -> None:
    # q1: R = 3 (b, d, e), relevant b at rank 2: AP@2 = (1/2) / min(2, 3) = 0.25
    row = rke.evaluate(_CASE_LOG.filter(query="q1"), ["map@2(denominator=min_k_R)"]).row(0)
    assert row == (0.25,)


@pytest.mark.parametrize(
    ("keyword", "spelled", "canonical"),
    [
        ("missing_queries", "ZERO", "zero"),
        ("unretrieved", "Drop", "drop"),
        ("negative_labels", "NonRelevant", "nonrelevant"),
    ],
)
def test_setting_spelling_never_changes_the_value(
    keyword: str, spelled: str, canonical: str
) -> None:
    log = _CASE_LOG.with_columns(pl.col("relevance").replace(0, -1))
    metrics = ["map", "ndcg", "bpref", "judged@3", "num_q"]
    got = rke.evaluate(log, metrics, **{keyword: spelled})
    want = rke.evaluate(log, metrics, **{keyword: canonical})
    default = rke.evaluate(log, metrics)
    assert got.rows() == want.rows()
    assert want.rows() != default.rows(), "the setting must matter here"
