"""A minimal progress bar on stderr for evaluations that run in several passes."""

from __future__ import annotations

import sys
import time
from types import TracebackType


class Progress:
    """``rank_eval: pass 3/25 [######              ] 12%  4.1s`` on one stderr line.

    ``enabled=None`` shows the bar only when stderr is a terminal (so logs and CI stay clean);
    True forces it and False silences it.
    """

    def __init__(self, total: int, *, enabled: bool | None, label: str = "rank_eval") -> None:
        self.total = total
        self.done = 0
        self.label = label
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.started = time.perf_counter()

    def __enter__(self) -> Progress:
        self._draw()
        return self

    def advance(self) -> None:
        """Mark one more pass as finished."""
        self.done += 1
        self._draw()

    def _draw(self) -> None:
        if not self.enabled:
            return
        width = 20
        filled = width * self.done // max(self.total, 1)
        percent = 100 * self.done // max(self.total, 1)
        elapsed = time.perf_counter() - self.started
        bar = "#" * filled + " " * (width - filled)
        sys.stderr.write(
            f"\r{self.label}: pass {self.done}/{self.total} [{bar}] {percent:3d}% {elapsed:5.1f}s"
        )
        sys.stderr.flush()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()
