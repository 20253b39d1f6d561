"""The tie check's plan: which lists it bounds, and an in-memory frame evaluated in passes.

``mixed_lists`` counts each list's distinct scores once per bound preference instead of grouping
by (list, score); the lists it selects are held equal to a plain-Python brute force over the
rows. A large DataFrame now runs in passes by default (``_frame_passes``); its per-query values,
means, tie ranges and warning are held equal, to the last bit, to the same call in one pass.
"""

from __future__ import annotations

import random
import tempfile
import warnings
from collections.abc import Callable
from typing import Any

import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval._engine import evaluate as evaluate_module
from polars_rankeval._engine import passes as passes_module
from polars_rankeval._engine.columns import make_columns
from polars_rankeval._engine.evaluate import _frame_passes, evaluate_frame
from polars_rankeval._engine.passes import ROWS_PER_PASS
from polars_rankeval._engine.tie_bounds import mixed_lists
from polars_rankeval.conventions import NegativeLabels

# ties on purpose (few distinct scores, both zeros), NaN and unretrieved (null) rows
_SCORES: list[float | None] = [None, -0.0, 0.0, 0.5, 0.5, 1.0, 2.0, float("nan")]
_LABELS: list[int | None] = [None, -1, 0, 0, 1, 2, 3]


def _generated_log(seed: int, n_queries: int = 120, *, nan: bool = True) -> pl.DataFrame:
    """Two systems of lists of 0-9 rows: ties, graded and negative labels, unjudged and
    unretrieved rows, lists without a relevant row, lists with no retrieved row."""
    rng = random.Random(seed)
    scores = _SCORES if nan else [s for s in _SCORES if s is None or s == s]
    rows: list[dict[str, Any]] = []
    for system in ("a", "b"):
        for q in range(n_queries):
            size = rng.randrange(10)
            kind = rng.random()
            for i in range(size):
                if kind < 0.1:  # a list whose judged rows are all unretrieved
                    score = None
                elif kind < 0.3:  # distinct scores: no tie at all
                    score = float(i)
                else:
                    score = rng.choice(scores)
                label = 0 if kind > 0.9 else rng.choice(_LABELS)  # some with nothing relevant
                rows.append(
                    {
                        "system": system,
                        "query": f"q{q:03d}",
                        "item": f"d{rng.randrange(1000):03d}-{i}",
                        "score": score,
                        "relevance": label,
                    }
                )
    return pl.DataFrame(
        rows,
        schema={
            "system": pl.String,
            "query": pl.String,
            "item": pl.String,
            "score": pl.Float64,
            "relevance": pl.Int64,
        },
    )


def _brute_mixed(
    log: pl.DataFrame, negative_labels: NegativeLabels
) -> set[tuple[str | None, str | None]]:
    """The (system, query) lists with a group of tied retrieved scores that mixes preferences.

    The bounds order a tie group by label: positive labels by size, then unjudged rows (no
    label, or a negative one where negative labels mean unjudged), then judged zeros (and
    negative labels read as non-relevant). -0.0 ties 0.0 and NaN ties NaN, as in the order.
    """

    def preference(label: int | None) -> float:
        if label is None or (label < 0 and negative_labels == "unjudged"):
            return 0.5
        return float(label) if label > 0 else 0.0

    groups: dict[tuple[str | None, str | None], dict[object, set[float]]] = {}
    for row in log.iter_rows(named=True):
        if row["score"] is None:
            continue
        score = row["score"] + 0.0
        key: object = "nan" if score != score else score
        lists = groups.setdefault((row["system"], row["query"]), {})
        lists.setdefault(key, set()).add(preference(row["relevance"]))
    return {key for key, ties in groups.items() if any(len(p) > 1 for p in ties.values())}


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("negative_labels", ["unjudged", "nonrelevant"])
def test_mixed_lists_are_the_lists_with_a_mixed_tie_group(
    seed: int, negative_labels: NegativeLabels
) -> None:
    log = _generated_log(seed)
    columns = make_columns(
        query="query", item="item", score="score", relevance="relevance", by="system"
    )
    found = mixed_lists(log.lazy(), columns, negative_labels).collect()
    assert found.columns == ["system", "query"]
    flagged = set(found.iter_rows())
    assert len(flagged) == found.height  # each list once
    expected = _brute_mixed(log, negative_labels)
    assert flagged == expected
    assert 0 < len(expected) < log.select("system", "query").n_unique()


def test_mixed_lists_with_a_null_key_and_float_labels() -> None:
    """A null query id is one list (keys compared with nulls equal); whole float labels."""
    log = pl.DataFrame(
        {
            "query": [None, None, None, "q", "q"],
            "item": ["a", "b", "c", "a", "b"],
            "score": [1.0, 1.0, 0.5, 2.0, 2.0],
            "relevance": [1.0, 0.0, None, 2.0, 2.0],
        }
    )
    columns = make_columns(
        query="query", item="item", score="score", relevance="relevance", by=None
    )
    found = mixed_lists(log.lazy(), columns, "unjudged").collect()
    assert found["query"].to_list() == [None]


def test_the_default_passes_of_an_in_memory_frame() -> None:
    assert _frame_passes(None, "auto") == 1
    assert _frame_passes(ROWS_PER_PASS, "auto") == 1
    assert _frame_passes(ROWS_PER_PASS + 1, "auto") == "auto"
    assert _frame_passes(ROWS_PER_PASS + 1, "streaming") == "auto"
    assert _frame_passes(ROWS_PER_PASS + 1, "in-memory") == 1  # one pass: the engine asked


_METRICS = ["p@3", "mrr", "map", "ndcg@5", "recall@5", "gm_map", "num_rel_ret", "coverage@3"]


def _spied(monkeypatch: pytest.MonkeyPatch, passes: list[object], totals: list[int]) -> None:
    """Record the passes every evaluation asks for (both routes into them), and how many ran."""
    for name in ("run_passes", "in_passes"):
        original: Callable[..., Any] = getattr(evaluate_module, name)

        def spy(*args: Any, __original: Callable[..., Any] = original, **kwargs: Any) -> Any:
            passes.append(args[3])
            return __original(*args, **kwargs)

        monkeypatch.setattr(evaluate_module, name, spy)
    rescanned: Callable[..., Any] = passes_module._rescanned_passes

    def count(lf: pl.LazyFrame, columns: Any, each: Any, total: int, **kwargs: Any) -> Any:
        totals.append(total)
        return rescanned(lf, columns, each, total, **kwargs)

    monkeypatch.setattr(passes_module, "_rescanned_passes", count)
    monkeypatch.setattr(tempfile, "mkdtemp", None)  # would raise if the frame were spilled


def _evaluated(
    log: pl.DataFrame, **options: Any
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, list[str]]:
    """Means, per-query rows, per-query rows with their tie ranges, and the warnings."""
    options = {"catalog": 5000, **options}  # coverage's item universe
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        means = rke.evaluate(log, _METRICS, by="system", tie_warning=0.0, **options)
        rows = rke.evaluate(log, _METRICS, by="system", per_query=True, tie_warning=0.0, **options)
        ranges = evaluate_frame(
            log, _METRICS, by="system", per_query=True, keep_tie_ranges=True, **options
        )
    return means, rows, ranges, sorted(str(w.message) for w in caught)


@pytest.mark.parametrize(("seed", "nan"), [(3, False), (4, True)])
def test_a_large_frame_in_passes_gives_the_one_pass_numbers(
    seed: int, nan: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every value to the last bit, the tie ranges and the warnings, as in one pass."""
    log = _generated_log(seed, n_queries=200, nan=nan)
    options: dict[str, Any] = {"nan_scores": "last"} if nan else {}
    one_pass = _evaluated(log, n_buckets=1, **options)
    passes: list[object] = []
    totals: list[int] = []
    _spied(monkeypatch, passes, totals)
    # a "large" frame: more rows than a pass holds, so the default is several passes, each
    # filtered out of the frame in memory
    for module in (evaluate_module, passes_module):
        monkeypatch.setattr(module, "ROWS_PER_PASS", log.height // 4)
    monkeypatch.setattr(passes_module, "MIN_ROWS_PER_PASS", 10)
    in_passes = _evaluated(log, **options)
    assert passes == ["auto"] * 3  # means, per-query rows, tie ranges: all in passes
    assert len(totals) == 3
    assert all(total >= 4 for total in totals)
    for got, expected in zip(in_passes[:3], one_pass[:3], strict=True):
        assert got.equals(expected), (got, expected)
    assert any(name.startswith("__rke_tie_range") for name in in_passes[2].columns)
    assert in_passes[3] == one_pass[3]
    assert any("tied scores" in message for message in one_pass[3])
