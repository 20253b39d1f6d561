"""The spill folder of the out-of-core passes: made, marked, removed, and swept when stale.

A spill holds about the input's size on disk, so none may outlive its run:

* it is removed when the evaluation ends, fails or is interrupted (Ctrl-C unwinds through a
  ``finally``);
* :func:`cleanup_on_sigterm` turns SIGTERM (what ``timeout``, ``kill`` and job schedulers send)
  into the same unwinding, then ends the process by SIGTERM as it would have ended;
* SIGKILL and power loss cannot be caught: each spill folder holds a marker naming its owner
  (host, process id, process start time), and every spill sweeps the folders whose owner is
  gone. A folder without our marker, of another host, or of a live process is never touched.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from polars_rankeval.errors import ResourceError

PREFIX = "rke-spill-"
MARKER = ".rke-owner"
# What to do when the spill cannot be written; each message ends with it.
_WHAT_TO_DO = (
    "pass spill_dir= (command line: --spill-dir) naming a folder on a disk with room "
    "(the spill needs about the input's size), or evaluate without spilling: n_buckets=1 "
    "(one pass) or 2 to 3 (each pass re-reads the input)"
)


def _start_time(pid: int) -> str | None:
    """The start time of process ``pid`` (Linux clock ticks since boot), None where unknown.

    With the pid it identifies a process: a pid reused by a later process has a later start.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: count from its last ')'
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None


def _owner() -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid(), "start": _start_time(os.getpid())}


def _read_marker(folder: Path) -> dict[str, Any] | None:
    try:
        owner = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(owner, dict) or not isinstance(owner.get("pid"), int):
        return None
    return owner


def _alive(pid: int, start: object) -> bool:
    """Whether the process that wrote a marker may still run (when unsure: yes)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: a live process of another user
        return True
    if start is None:
        return True
    now = _start_time(pid)
    return now is None or now == start


def sweep(folder: str | os.PathLike[str]) -> list[Path]:
    """Remove the stale spill folders directly under ``folder``; return those removed.

    Stale: our marker names this host and a process that is gone. Errors are ignored: the
    sweep is housekeeping and must never fail the run that does it.
    """
    host = socket.gethostname()
    removed: list[Path] = []
    try:
        names = [name for name in os.listdir(folder) if name.startswith(PREFIX)]
    except OSError:
        return removed
    for name in names:
        path = Path(folder, name)
        if path.is_symlink() or not path.is_dir():
            continue
        owner = _read_marker(path)
        if owner is None or owner.get("host") != host or _alive(owner["pid"], owner.get("start")):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _is_disk_full(error: BaseException) -> bool:
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    # Polars reports a failed write as "parquet: File out of specification: underlying IO
    # error: No space left on device (os error 28)".
    text = str(error)
    return isinstance(error, pl.exceptions.PolarsError) and (
        "No space left on device" in text or "Disk quota exceeded" in text
    )


@contextlib.contextmanager
def spill_folder(spill_dir: str | os.PathLike[str] | None) -> Iterator[Path]:
    """A new, marked spill folder under ``spill_dir`` (the system temp dir by default).

    Stale spill folders are swept first, both there and in the system temp dir. The folder is
    removed when the block ends, however it ends; running out of disk space in the block, or
    a folder that cannot be made, is a :class:`ResourceError` naming the folder.
    """
    where = tempfile.gettempdir() if spill_dir is None else os.fspath(spill_dir)
    for folder in dict.fromkeys([tempfile.gettempdir(), where]):
        sweep(folder)
    try:
        root = Path(tempfile.mkdtemp(prefix=PREFIX, dir=spill_dir))
    except OSError as error:
        reason = error.strerror or str(error)
        msg = f"cannot make a spill folder in {where!r} ({reason}): {_WHAT_TO_DO}"
        raise ResourceError(msg) from error
    try:
        (root / MARKER).write_text(json.dumps(_owner()), encoding="utf-8")
        yield root
    except (OSError, pl.exceptions.PolarsError) as error:
        if isinstance(error, ResourceError) or not _is_disk_full(error):
            raise
        msg = f"the spill folder {str(root)!r} ran out of disk space: free space there, or "
        raise ResourceError(msg + _WHAT_TO_DO) from error
    finally:
        # also on errors raised in a pass, on KeyboardInterrupt and on SIGTERM (see below)
        remove_spill(root, interrupted=sys.exc_info()[0] is not None)


# How long an interrupted run waits for Polars' writer threads to let go of its spill, and how
# long the folder must stay gone before they count as stopped.
_REMOVAL_WAIT_S = 10.0
_GONE_FOR_S = 0.2


def remove_spill(root: Path, *, interrupted: bool = False) -> None:
    """Remove a spill folder; after an interruption, wait for writers still finishing in it.

    After Ctrl-C or SIGTERM, Python unwinds while Polars' sink threads may still write a
    bucket file for a moment, creating its folder (and the spill folder) again: a single
    ``rmtree`` then left the folder behind (seen once in CI). When ``interrupted``, the
    contents are removed again until the folder has stayed gone for a moment. The owner marker
    goes last and is written back while the folder exists, so a folder that still cannot be
    removed keeps it, and the next spill's sweep removes it once this process has ended.
    """
    deadline = time.monotonic() + (_REMOVAL_WAIT_S if interrupted else 0.5)
    marker = root / MARKER
    gone_since: float | None = None
    while True:
        # a folder seen here was (re)made since the last look: it has not stayed gone
        existed = root.exists()
        _remove_contents(root)
        if not any(child.name != MARKER for child in _listing(root)):
            with contextlib.suppress(OSError):
                marker.unlink(missing_ok=True)
                root.rmdir()
        now = time.monotonic()
        if existed:
            gone_since = None
        if root.exists():
            if not marker.exists():  # a writer made it again: mark it for the sweep
                with contextlib.suppress(OSError):
                    marker.write_text(json.dumps(_owner()), encoding="utf-8")
        elif not interrupted:
            return
        elif gone_since is None:
            gone_since = now
        elif now - gone_since >= _GONE_FOR_S:
            return
        if now > deadline:
            # Writers still at work: leave the folder there and marked, so that whatever they
            # add is swept by the next spill once this process has ended.
            with contextlib.suppress(OSError):
                root.mkdir(exist_ok=True)
                marker.write_text(json.dumps(_owner()), encoding="utf-8")
            return
        time.sleep(0.02)


def _remove_contents(root: Path) -> None:
    """Everything in ``root`` but the owner marker."""
    for child in _listing(root):
        if child.name == MARKER:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                child.unlink(missing_ok=True)


def _listing(root: Path) -> list[Path]:
    try:
        return list(root.iterdir())
    except OSError:
        return []


# ---- SIGTERM ---------------------------------------------------------------------------------

_guarding = threading.Lock()


@contextlib.contextmanager
def cleanup_on_sigterm() -> Iterator[None]:
    """Within the block, SIGTERM unwinds like Ctrl-C, then ends the process by SIGTERM.

    Python runs signal handlers in the main thread between bytecodes, never while that thread
    waits inside a Polars query, so a handler alone would act only once the query is done. A
    watcher thread hears the signal through the wakeup fd instead and raises SIGINT, which
    Polars turns into a KeyboardInterrupt in every running query (the spill's ``finally``
    then removes its folder). Once unwound, the previous handler is restored and SIGTERM
    delivered again, so the exit status is the one a job scheduler expects (143, -15).

    Installed only from the main thread (Python allows no other), only where SIGTERM is not
    ignored and no other wakeup fd is in use (an event loop's), and not twice when nested;
    elsewhere the block runs unguarded and the sweep of the next spill is the answer.
    """
    if (
        sys.platform == "win32"
        or threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
        or not _guarding.acquire(blocking=False)
    ):
        yield
        return
    try:
        with _sigterm_unwinds():
            yield
    finally:
        _guarding.release()


@contextlib.contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    terminated = threading.Event()
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    previous = signal.signal(signal.SIGTERM, lambda _signum, _frame: terminated.set())
    old_fd = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    if old_fd != -1:  # someone else's wakeup fd (an event loop): leave it and the signal alone
        signal.set_wakeup_fd(old_fd)
        signal.signal(signal.SIGTERM, previous)
        os.close(read_end)
        os.close(write_end)
        yield
        return

    def watch() -> None:
        while True:
            received = os.read(read_end, 64)
            # SIGTERM before the end mark: both may come in one read
            if signal.SIGTERM in received and not terminated.is_set():
                terminated.set()
                signal.raise_signal(signal.SIGINT)
            if not received or 0 in received:  # 0: the block is over
                return

    watcher = threading.Thread(target=watch, name="rke-sigterm", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(-1)
        os.write(write_end, b"\0")
        watcher.join()
        os.close(read_end)
        os.close(write_end)
        if terminated.is_set():
            # The SIGINT raised by the watcher may still wait for the main thread: let it
            # fire here, not in the middle of the lines below.
            with contextlib.suppress(KeyboardInterrupt):
                for _ in range(3):
                    pass
        signal.signal(signal.SIGTERM, previous)
        if terminated.is_set():
            # Unwound, spill removed: end as SIGTERM would have ended us (or as the previous
            # handler decides).
            signal.raise_signal(signal.SIGTERM)
