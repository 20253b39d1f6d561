"""Warnings that point at the user's line, from any thread.

A LazyFrame's evaluation runs when it is collected, in a Polars thread whose stack does not
reach the user, so a fixed ``stacklevel`` cannot find the user's line. The caller records the
user's site (:func:`user_site`) when it is called, and :func:`warn_at` gives the warning there.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import polars as pl

#: (file name, line number, the module's globals) of the user's line
Site = tuple[str, int, dict[str, Any]]

# A site recorded earlier, for code that runs in a Polars thread and builds warnings there.
_RECORDED: ContextVar[Site | None] = ContextVar("polars_rankeval_site", default=None)


@contextmanager
def warnings_at(site: Site) -> Iterator[None]:
    """Inside the block, :func:`user_site` is ``site`` (recorded where the user called us).

    A metric's finishing step runs when a LazyFrame is collected, maybe in a Polars thread
    whose stack does not reach the user; the metric records the site when it is built (at the
    user's ``evaluate`` call) and builds its warnings inside this block.
    """
    token = _RECORDED.set(site)
    try:
        yield
    finally:
        _RECORDED.reset(token)


def user_site() -> Site:
    """The first frame outside this package and Polars: the user's line (file, line, globals).

    Examples
    --------
    >>> filename, lineno, _ = user_site()
    >>> lineno > 0
    True
    """
    recorded = _RECORDED.get()
    if recorded is not None:
        return recorded
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # polars_rankeval/
    library = os.path.dirname(os.path.abspath(pl.__file__))
    frame = sys._getframe(1)
    while frame.f_back is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not path.startswith((package + os.sep, library + os.sep)):
            break
        frame = frame.f_back
    return frame.f_code.co_filename, frame.f_lineno, frame.f_globals


def warn_at(message: str, category: type[Warning], site: Site | None = None) -> None:
    """Give ``message`` as a ``category`` warning at ``site`` (the user's line when omitted).

    The registry is the user's module's, so Python's default filter shows the warning once per
    line, as for a warning raised there. No ``module_globals`` is passed: it makes
    :func:`warnings.warn_explicit` look the source up through the module's loader, which fails
    for a script read from stdin (``'__main__' is not a built-in module``).
    """
    filename, lineno, module_globals = site if site is not None else user_site()
    warnings.warn_explicit(
        message,
        category,
        filename,
        lineno,
        module=module_globals.get("__name__", "__main__"),
        registry=module_globals.setdefault("__warningregistry__", {}),
    )
