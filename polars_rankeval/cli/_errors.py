"""Errors of the command line: exit statuses, :class:`CliError`, one-line errors and warnings.

Every mistake ends as exit status 2 and one line on stderr; a warning of polars_rankeval is
one line too.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator
from typing import Any

from polars_rankeval.errors import (
    EmptyQueriesWarning,
    PerSystemMetricWarning,
    QueryCoverageWarning,
    SubtopicWarning,
    TieWarning,
)

EXIT_ERROR = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report Ctrl-C


class CliError(Exception):
    """A mistake on the command line; the message is printed as one line."""


def _one_line(message: str) -> str:
    """The first paragraph of a message, on one line (Polars appends plans and hints)."""
    paragraph = message.strip().split("\n\n")[0]
    return " ".join(paragraph.split())


@contextlib.contextmanager
def _warnings_as_lines() -> Iterator[None]:
    """Warnings of polars_rankeval as one stderr line each, ``rank-eval: warning: ...``.

    Python's own format adds the file, line and source of the ``warn`` call, which mean
    nothing to a shell user. Other packages' warnings keep that format.
    """
    with warnings.catch_warnings():
        # shown once and the run goes on, even where warnings are errors (python -W error)
        warnings.simplefilter("default", QueryCoverageWarning)
        warnings.simplefilter("default", EmptyQueriesWarning)
        warnings.simplefilter("default", PerSystemMetricWarning)
        warnings.simplefilter("default", TieWarning)
        warnings.simplefilter("default", SubtopicWarning)
        shown = warnings.showwarning

        # warnings.showwarning's signature: six positional parameters
        def show(  # noqa: PLR0917
            message: Warning | str,
            category: type[Warning],
            filename: str,
            lineno: int,
            file: Any = None,
            line: str | None = None,
        ) -> None:
            if category.__module__.startswith("polars_rankeval"):
                print(f"rank-eval: warning: {_one_line(str(message))}", file=sys.stderr)
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        yield
