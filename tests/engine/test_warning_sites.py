"""Warnings given at the user's line work from a script read on stdin (no source to look up).

``warnings.warn_explicit(..., module_globals=...)`` asks the module's loader for the source,
which raises ``ImportError: '__main__' is not a built-in module`` for ``python - < script``.
Every warning that points at the user's line goes through ``_warn.warn_at``; this runs the three
kinds from stdin and reads them on stderr.
"""

from __future__ import annotations

import subprocess
import sys

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
    import inspect

    import polars_rankeval as rke
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
