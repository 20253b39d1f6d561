"""Warnings given at the user's line work from a script read on stdin (no source to look up).

``warnings.warn_explicit(..., module_globals=...)`` asks the module's loader for the source,
which raises ``ImportError: '__main__' is not a built-in module`` for ``python - < script``.
Every warning that points at the user's line goes through ``_warn.warn_at``; this runs the three
kinds from stdin and reads them on stderr.
"""

from __future__ import annotations

import inspect
import subprocess
import sys
import warnings
from collections.abc import Callable

import polars as pl
import pytest

import polars_rankeval as rke
from tests.engine.test_tables import distinct_items

SCRIPT = """
import polars as pl, polars_rankeval as rke
lists = pl.DataFrame({"user": [1, 2], "recommended": [[10, 11], []], "relevant": [[11], [12]]})
log = rke.from_lists(lists, relevant="relevant")
rke.evaluate(log, ["p@2"], query="user", train=pl.DataFrame({"user": [1], "item": [10]}))
tied = pl.DataFrame({"query": ["q"] * 4, "item": ["a", "b", "c", "d"],
                     "score": [1.0, 1.0, 1.0, 1.0], "relevance": [1, 0, 0, 0]})
rke.evaluate(tied.lazy(), ["mrr"]).collect()
print("done")
"""


def test_warnings_at_the_users_line_work_from_stdin() -> None:
    done = subprocess.run(
        [sys.executable, "-W", "always", "-"],
        input=SCRIPT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    assert "ImportError" not in done.stderr
    expected = [("QueryCoverageWarning", 4), ("UnusedTableWarning", 5), ("TieWarning", 8)]
    for category, line in expected:
        assert f"<stdin>:{line}: {category}" in done.stderr, done.stderr


def test_every_warning_shares_one_base() -> None:
    from polars_rankeval import errors

    found = [
        cls
        for _, cls in inspect.getmembers(errors, inspect.isclass)
        if issubclass(cls, Warning) and cls is not rke.RankEvalWarning
    ]
    assert len(found) >= 10
    for cls in found:
        assert issubclass(cls, rke.RankEvalWarning), cls
        assert issubclass(cls, UserWarning), cls  # filters written for UserWarning still apply
        assert getattr(rke, cls.__name__) is cls  # exported


def test_one_filter_silences_every_warning() -> None:
    # the stdin script gives three kinds; with the base ignored it prints none
    done = subprocess.run(
        [
            sys.executable,
            "-W",
            "always",
            "-c",
            "import warnings, polars_rankeval as rke; "
            "warnings.filterwarnings('ignore', category=rke.RankEvalWarning)\n" + SCRIPT,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr, done.stderr


# --- the summary's warnings point at the line that called evaluate, whatever the route --------
def _empty_list_log() -> pl.DataFrame:
    # q2 has judgments but nothing relevant: empty_queries="drop" leaves it out, and says so
    return pl.DataFrame(
        {
            "query": ["q1", "q1", "q2"],
            "item": ["a", "b", "c"],
            "score": [2.0, 1.0, 1.0],
            "relevance": [1, 0, 0],
        }
    )


def _sites(call: Callable[[], object], category: type[Warning]) -> list[tuple[str, int]]:
    """Where ``call`` gave its ``category`` warnings: (file, line) each."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        result = call()
        if isinstance(result, pl.LazyFrame):
            result.collect()
    return [(w.filename, w.lineno) for w in record if issubclass(w.category, category)]


def _line() -> int:
    """The caller's line number."""
    return inspect.stack()[1].lineno


@pytest.mark.parametrize(
    ("lazy", "n_buckets"),
    [
        (False, None),  # a DataFrame, finished in evaluate
        (True, 1),  # a LazyFrame: the rows finished when collected, in a Polars thread
        (True, 4),  # a LazyFrame in passes: partial sums per pass
    ],
)
def test_dropped_lists_warning_is_at_the_evaluate_line(lazy: bool, n_buckets: int | None) -> None:
    data = _empty_list_log().lazy() if lazy else _empty_list_log()
    keywords = {"empty_queries": "drop", "n_buckets": n_buckets}
    line, call = _line(), lambda: rke.evaluate(data, ["p@1"], **keywords)  # type: ignore[arg-type]
    assert _sites(call, rke.EmptyQueriesWarning) == [(__file__, line)]


def test_per_system_and_empty_warnings_are_at_the_evaluate_line() -> None:
    log = _empty_list_log().lazy()
    metrics = [distinct_items(2)]
    line, call = _line(), lambda: rke.evaluate(log, metrics, per_query=True, catalog=8)
    assert _sites(call, rke.PerSystemMetricWarning) == [(__file__, line)]
    unjudged = log.with_columns(pl.lit(None, dtype=pl.Int64).alias("relevance"))
    line, call = _line(), lambda: rke.evaluate(unjudged, ["p@1"], n_buckets=4)
    assert _sites(call, rke.EmptyEvaluationWarning) == [(__file__, line)]
