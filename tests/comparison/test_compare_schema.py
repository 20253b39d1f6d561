"""compare's output schema (issue 28): metric, the by columns, baseline_<by>, value, ...

And the renamed keywords of compare and compare_per_query, which keep working with a
deprecation warning.
"""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval.comparison import compare_columns
from polars_rankeval.errors import InvalidOptionError, RankEvalDeprecationWarning

_A = [0.2, 0.4, 0.1, 0.3, 0.5]
_B = [0.3, 0.6, 0.1, 0.5, 0.4]
_C = [0.1, 0.2, 0.3, 0.2, 0.1]


def _two_keys() -> pl.DataFrame:
    """Three systems named by (run, version): version is an int, not text."""
    rows = [
        (run, version, query, value)
        for run, version, values in (("bm25", 1, _A), ("bm25", 2, _B), ("dense", 1, _C))
        for query, value in enumerate(values)
    ]
    return pl.DataFrame(rows, schema=["run", "version", "query", "map"], orient="row")


def test_two_key_by_keeps_both_key_columns_and_the_baseline_keys() -> None:
    out = rke.compare_per_query(_two_keys(), by=["run", "version"], baseline=("bm25", 1))
    assert out.columns[:5] == ["metric", "run", "version", "baseline_run", "baseline_version"]
    # each key keeps its own type: no joined "bm25 / 1" string anywhere
    assert out.schema["version"] == pl.Int64
    assert out.schema["baseline_version"] == pl.Int64
    assert out.select("run", "version", "baseline_run", "baseline_version").rows() == [
        ("bm25", 2, "bm25", 1),
        ("dense", 1, "bm25", 1),
    ]
    # value and baseline_value are the two systems' means (numpy, not our code)
    assert out["value"].to_list() == pytest.approx([np.mean(_B), np.mean(_C)])
    assert out["baseline_value"].to_list() == pytest.approx([np.mean(_A)] * 2)
    assert out["delta"].to_list() == pytest.approx(
        [np.mean(_B) - np.mean(_A), np.mean(_C) - np.mean(_A)]
    )
    assert out.columns == compare_columns(["run", "version"])


def test_all_pairs_name_the_earlier_system_the_baseline() -> None:
    out = rke.compare_per_query(_two_keys(), by=["run", "version"])
    assert out.select("baseline_run", "baseline_version", "run", "version").rows() == [
        ("bm25", 1, "bm25", 2),
        ("bm25", 1, "dense", 1),
        ("bm25", 2, "dense", 1),
    ]


def test_segments_sit_right_after_metric() -> None:
    table = pl.concat(
        [_two_keys().with_columns(pl.lit(segment).alias("segment")) for segment in ("x", "y")]
    )
    out = rke.compare_per_query(
        table, by=["run", "version"], within="segment", baseline=("bm25", 1)
    )
    assert out.columns[:6] == [
        "metric",
        "segment",
        "run",
        "version",
        "baseline_run",
        "baseline_version",
    ]
    assert out.columns == compare_columns(["run", "version"], within=["segment"])


def test_a_compare_result_joins_a_bootstrap_result_without_renames() -> None:
    log = pl.read_parquet("data/sample.parquet")
    compared = rke.compare(log, ["map"], by="system", baseline="bm25")
    resampled = rke.bootstrap(log, ["map"], by="system", baseline="bm25", n_resamples=50)
    keys = ["metric", "system", "baseline_system"]
    joined = compared.join(resampled, on=keys, suffix="_bootstrap")
    assert joined.height == 1
    assert joined.select(keys).row(0) == ("map", "neural", "bm25")
    # the same two systems' values, by the same name in both results
    assert joined["value"][0] == pytest.approx(joined["value_bootstrap"][0], abs=1e-12)
    assert joined["baseline_value"][0] == pytest.approx(
        joined["baseline_value_bootstrap"][0], abs=1e-12
    )


def test_compare_on_a_lazy_frame_returns_a_data_frame() -> None:
    log = pl.read_parquet("data/sample.parquet")
    eager = rke.compare(log, ["map"], by="system", baseline="bm25")
    lazy = rke.compare(log.lazy(), ["map"], by="system", baseline="bm25")
    assert isinstance(lazy, pl.DataFrame)
    assert lazy.equals(eager)


@pytest.mark.parametrize("name", ["delta", "value", "overall", "metric"])
def test_a_by_column_named_like_an_output_column_is_refused(name: str) -> None:
    table = _two_keys().rename({"run": name})
    with pytest.raises(InvalidOptionError, match=f"by= column '{name}'"):
        rke.compare_per_query(table, by=[name, "version"])


def _quiet_compare_per_query(**keywords: object) -> pl.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return rke.compare_per_query(**keywords)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("old", "new", "value"),
    [("per_query", "data", None), ("missing", "unpaired_queries", "zero")],
)
def test_compare_per_query_old_keywords_warn_and_still_work(
    old: str, new: str, value: object
) -> None:
    table = _two_keys()
    given = {old: table if value is None else value}
    rest = {} if value is None else {"data": table}
    expected = _quiet_compare_per_query(
        **{new: table if value is None else value}, **rest, by=["run", "version"]
    )
    with pytest.warns(RankEvalDeprecationWarning, match=f"{old}= is renamed {new}="):
        out = rke.compare_per_query(**given, **rest, by=["run", "version"])  # type: ignore[arg-type]
    assert out.equals(expected)


@pytest.mark.parametrize(
    ("old", "new", "value"),
    [("log", "data", None), ("missing", "unpaired_queries", "zero")],
)
def test_compare_old_keywords_warn_and_still_work(old: str, new: str, value: object) -> None:
    log = pl.read_parquet("data/sample.parquet")
    given = {old: log if value is None else value}
    rest = {} if value is None else {"data": log}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        expected = rke.compare(  # type: ignore[misc]
            **{new: log if value is None else value}, **rest, metrics=["map"], by="system"
        )
    with pytest.warns(RankEvalDeprecationWarning, match=f"{old}= is renamed {new}="):
        out = rke.compare(**given, **rest, metrics=["map"], by="system")  # type: ignore[misc]
    assert out.equals(expected)


def test_missing_queries_is_evaluates_and_unpaired_queries_the_pairings() -> None:
    """Two options, two ideas: ``missing_queries="zero"`` (evaluate's, forwarded) scores a judged
    query a system retrieved nothing for as 0; ``unpaired_queries="zero"`` pairs a query one
    system has no value for as 0. The old ``missing=`` is ``unpaired_queries=``."""
    # q3: judged, retrieved by neither system (both have its judgment rows)
    judged = pl.DataFrame(
        {
            "system": ["a", "a", "b", "b", "a", "b"],
            "query": ["q1", "q2", "q1", "q2", "q3", "q3"],
            "item": ["x", "y", "x", "y", "z", "z"],
            "score": [1.0, 1.0, 1.0, 2.0, None, None],
            "relevance": [1, 0, 0, 1, 1, 1],
        }
    )
    columns = ["n_queries", "value", "baseline_value", "wins", "ties", "losses", "missing"]
    # by hand: P@1 of a is 1 on q1, 0 on q2; of b 0 on q1, 1 on q2; q3 scores 0 for both
    zero = rke.compare(judged, ["p@1"], by="system", baseline="a", missing_queries="zero")
    assert zero.select(columns).row(0) == (
        3,
        pytest.approx(1 / 3),
        pytest.approx(1 / 3),
        1,
        1,
        1,
        "drop",
    )
    default = rke.compare(judged, ["p@1"], by="system", baseline="a")
    assert default.select(columns).row(0) == (2, 0.5, 0.5, 1, 0, 1, "drop")
    # q3 has no value for either system, so there is nothing to pair as 0
    unpaired = rke.compare(judged, ["p@1"], by="system", baseline="a", unpaired_queries="zero")
    assert unpaired.select(columns).row(0) == (2, 0.5, 0.5, 1, 0, 1, "zero")

    # q2: system b has no row at all (no judgment either): only the pairing can score it
    lacking = pl.DataFrame(
        {
            "system": ["a", "a", "b"],
            "query": ["q1", "q2", "q1"],
            "item": ["x", "y", "x"],
            "score": [1.0, 1.0, 1.0],
            "relevance": [1, 1, 1],
        }
    )
    dropped = rke.compare(lacking, ["p@1"], by="system", baseline="a")
    assert dropped.select(columns).row(0) == (1, 1.0, 1.0, 0, 1, 0, "drop")
    assert dropped["n_dropped"].item() == 1
    evaluated = rke.compare(lacking, ["p@1"], by="system", baseline="a", missing_queries="zero")
    assert evaluated.select(columns).equals(dropped.select(columns))
    paired = rke.compare(lacking, ["p@1"], by="system", baseline="a", unpaired_queries="zero")
    assert paired.select(columns).row(0) == (2, 0.5, 1.0, 0, 1, 1, "zero")
    with pytest.warns(RankEvalDeprecationWarning, match="missing= is renamed unpaired_queries="):
        old = rke.compare(lacking, ["p@1"], by="system", baseline="a", missing="zero")
    assert old.equals(paired)
