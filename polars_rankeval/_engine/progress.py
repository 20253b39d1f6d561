"""A minimal progress bar on stderr for evaluations that run in several passes."""

from __future__ import annotations

import importlib
import os
import sys
import time
from types import TracebackType
from typing import Any


def _in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel that draws widgets (tqdm.autonotebook's test).

    Notebook, JupyterLab, VS Code, Colab and JupyterLite do; the Qt console and Spyder do not.
    """
    if "ipykernel.zmqshell" in sys.modules:
        if any(key == "QT_API" or key.startswith("SPYDER") for key in os.environ):
            return False
        ipython = sys.modules.get("IPython")
        shell = getattr(ipython, "get_ipython", lambda: None)()
        return shell is not None and not any(
            console in type(shell).__name__.lower() for console in ("qt", "spyder")
        )
    return "IPython.utils._process_emscripten" in sys.modules


def _widget_class() -> Any:
    """``tqdm.notebook.tqdm`` when ipywidgets imports, else None.

    Asked before tqdm is: ``tqdm.auto`` would warn "IProgress not found" (a TqdmWarning) and
    fall back to text when ipywidgets is missing, and ``tqdm.notebook`` raise.
    """
    try:
        importlib.import_module("ipywidgets")
        notebook = importlib.import_module("tqdm.notebook")
    except ImportError:
        return None
    # tqdm.notebook looked for the widget when it was first imported
    return notebook.tqdm if getattr(notebook, "IProgress", None) is not None else None


def _tqdm_class() -> Any:
    """The bar for a stderr that is not a terminal, or None for our own line.

    In a notebook with ipywidgets, tqdm's widget; elsewhere (a notebook without ipywidgets, a
    log file) tqdm's text bar; None when tqdm is not installed. Never ``tqdm.auto``, whose
    guess warns.
    """
    widget = _widget_class() if _in_notebook() else None
    if widget is not None:
        return widget
    try:
        from tqdm.std import tqdm  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        return None
    return tqdm


class Progress:
    """``rank_eval: pass 3/25 [######              ] 12%  4.1s`` on one stderr line.

    With ``spill=True`` the first step is the spill (the input written into its hash buckets),
    shown as ``spill``; then one step per pass. ``enabled=None`` shows the bar only when stderr is a
    terminal (so logs, CI and notebooks stay clean); True forces it and False silences it. A
    forced bar where stderr is not a terminal is tqdm's when tqdm is installed: its widget in a
    Jupyter notebook with ipywidgets, else its text bar (never a TqdmWarning).
    """

    def __init__(
        self, total: int, *, enabled: bool | None, label: str = "rank_eval", spill: bool = True
    ) -> None:
        self.total = total
        self.done = 0
        self.spilling = spill
        self.spill_steps = 1 if spill else 0
        self.label = label
        terminal = sys.stderr.isatty()
        self.enabled = terminal if enabled is None else enabled
        self.started = time.perf_counter()
        tqdm = _tqdm_class() if self.enabled and not terminal else None
        # one step for the spill, then one per pass
        desc = f"{label}: spill" if spill else f"{label}: passes"
        self._tqdm = (
            None if tqdm is None else tqdm(total=total + self.spill_steps, desc=desc, unit="step")
        )

    def __enter__(self) -> Progress:
        self._draw()
        return self

    def spilled(self) -> None:
        """Mark the spill pass (the input written into its buckets) as finished."""
        self.spilling = False
        if self._tqdm is not None:
            self._tqdm.set_description(f"{self.label}: passes")
            self._tqdm.update(1)
        self._draw()

    def advance(self) -> None:
        """Mark one more pass as finished."""
        self.done += 1
        if self._tqdm is not None:
            self._tqdm.set_postfix_str(f"pass {self.done}/{self.total}")
            self._tqdm.update(1)
        self._draw()

    def _draw(self) -> None:
        if not self.enabled or self._tqdm is not None:
            return
        width = 20
        steps = self.total + self.spill_steps  # the spill counts as one step
        finished = self.done + (0 if self.spilling else self.spill_steps)
        filled = width * finished // steps
        percent = 100 * finished // steps
        elapsed = time.perf_counter() - self.started
        bar = "#" * filled + " " * (width - filled)
        stage = "spill" if self.spilling else f"pass {self.done}/{self.total}"
        sys.stderr.write(f"\r{self.label}: {stage:<12} [{bar}] {percent:3d}% {elapsed:5.1f}s")
        sys.stderr.flush()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._tqdm is not None:
            self._tqdm.close()
        elif self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()
