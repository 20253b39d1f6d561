"""The spill folder of the out-of-core passes: made, marked, removed, and swept when stale.

A spill holds about the input's size on disk, so none may outlive its run:

* it is removed when the evaluation ends, fails or is interrupted (Ctrl-C unwinds through a
  ``finally``);
* SIGTERM (what ``timeout``, ``kill`` and job schedulers send) is turned into the same
  unwinding, then ends the process by SIGTERM as it would have ended (or runs the handler it
  replaced). One process-wide guard does it, installed from the main thread (Python allows no
  other) by :func:`cleanup_on_sigterm` around a block, or by :func:`guard_plan` for as long as
  a deferred plan lives, whose passes Polars runs in its own threads; it knows the spill
  folders in use in every thread;
* SIGKILL and an out-of-memory kill cannot be caught: each spill starts a watchdog process
  that removes the folder when its owner dies (POSIX);
* where no watchdog runs, and after a power loss: each spill folder holds a marker naming its
  owner (host, process id, process start time), and every spill sweeps the folders whose
  owner is gone. A folder without our marker, of another host, or of a live process is never
  touched.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
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
    watchdog = None
    try:
        (root / MARKER).write_text(json.dumps(_owner()), encoding="utf-8")
        _register(root)
        watchdog = _start_watchdog(root)
        yield root
    except (OSError, pl.exceptions.PolarsError) as error:
        if isinstance(error, ResourceError) or not _is_disk_full(error):
            raise
        msg = f"the spill folder {str(root)!r} ran out of disk space: free space there, or "
        raise ResourceError(msg + _WHAT_TO_DO) from error
    finally:
        # also on errors raised in a pass, on KeyboardInterrupt and on SIGTERM (see below)
        try:
            remove_spill(root, interrupted=sys.exc_info()[0] is not None)
            if watchdog is not None:
                _stop_watchdog(watchdog, removed=not root.exists())
        finally:
            _unregister(root)


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
    removed keeps it: its watchdog, or the next spill's sweep, removes it once this process
    has ended.
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


# ---- the watchdog: SIGKILL and out-of-memory kills -------------------------------------------

# The watchdog's whole program (run by this Python with -I -S: no site, no environment, about
# 15 ms to start). It ignores the signals a terminal or job control sends to a process group
# (its owner handles those), and waits on a pipe from its owner: a byte means the owner removed
# the folder ("done"); the end of the pipe without one means the owner died (the kernel closed
# its end), as does no longer being the owner's child (a forked process may hold a copy of the
# pipe). It then removes the folder, unless the marker there names another process.
_WATCHDOG = """\
import json, os, select, shutil, signal, sys
for name in ("SIGINT", "SIGTERM", "SIGHUP"):
    signal.signal(getattr(signal, name), signal.SIG_IGN)
root, owner = sys.argv[1], int(sys.argv[2])
while True:
    if select.select([0], [], [], 0.5)[0]:
        if os.read(0, 16):
            os._exit(0)
        break
    if os.getppid() != owner:
        break
try:
    with open(os.path.join(root, sys.argv[3]), encoding="utf-8") as marker:
        mine = json.load(marker).get("pid") == owner
except (OSError, ValueError, AttributeError):
    mine = True
if mine and not os.path.islink(root):
    shutil.rmtree(root, ignore_errors=True)
"""
# watchdogs of folders that could not be removed: each removes its folder when we end
_lingering: list[subprocess.Popen[bytes]] = []


def _start_watchdog(root: Path) -> subprocess.Popen[bytes] | None:
    """A process that removes ``root`` if this one dies holding it; None where there is none.

    POSIX only (it waits on the pipe with ``select``); a frozen application has no Python to
    run it. Without one, the sweep of the next spill removes what a killed run leaves.
    """
    if os.name != "posix" or not sys.executable or getattr(sys, "frozen", False):
        return None
    # absolute: a relative spill_dir= names a folder under our working directory, not its
    where = os.path.abspath(root)
    command = [sys.executable, "-I", "-S", "-c", _WATCHDOG, where, str(os.getpid())]
    try:
        return subprocess.Popen(
            [*command, MARKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=True,
            # out of our process group: Ctrl-C and job control reach the owner only
            start_new_session=True,
        )
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


def _stop_watchdog(watchdog: subprocess.Popen[bytes], *, removed: bool) -> None:
    """Tell the watchdog the folder is gone and reap it; a folder still there stays watched."""
    if not removed:  # kept for the sweep: the watchdog removes it once this process ends
        _lingering.append(watchdog)
        return
    with contextlib.suppress(OSError):  # a watchdog killed by someone: nothing to tell
        assert watchdog.stdin is not None
        watchdog.stdin.write(b"done")
        watchdog.stdin.close()
    try:
        watchdog.wait(timeout=2.0)
    except subprocess.TimeoutExpired:
        _lingering.append(watchdog)


# ---- SIGTERM ---------------------------------------------------------------------------------

# How long SIGTERM waits for other threads' spills to be removed before ending the process.
_SIGTERM_WAIT_S = _REMOVAL_WAIT_S + 5.0


class _Guard:
    """The installed SIGTERM handler's state: the handler it replaced, its pipe and watcher."""

    def __init__(self, previous: Any) -> None:
        self.previous = previous
        self.heard = threading.Event()  # a SIGTERM not yet delivered to ``previous``
        self.pending = False  # the handler ran inside a block that delivers it at its end
        self.interrupted = False  # the watcher raised SIGINT
        self.read_end, self.write_end = os.pipe()
        os.set_blocking(self.write_end, False)
        self.watcher = threading.Thread(target=self._watch, name="rke-sigterm", daemon=True)

    def _watch(self) -> None:
        while True:
            received = os.read(self.read_end, 64)
            # SIGTERM before the end mark: both may come in one read
            if signal.SIGTERM in received and not self.heard.is_set():
                if _interrupts(self.previous):
                    # Polars turns SIGINT into a KeyboardInterrupt in every running query,
                    # whatever its thread: the spills' ``finally`` blocks remove them
                    self.interrupted = True
                    signal.raise_signal(signal.SIGINT)
                # after the SIGINT: the handler, waiting for this, then knows of it
                self.heard.set()
            if not received or 0 in received:  # 0: uninstalled
                return

    def close(self) -> None:
        os.close(self.read_end)
        os.close(self.write_end)


class _State:
    """The process's spill folders in use and its one SIGTERM guard."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.lock = threading.RLock()
        self.live_changed = threading.Condition(self.lock)
        self.live: dict[Path, int] = {}  # spill folder -> the thread that made it
        self.guard: _Guard | None = None
        self.scopes = 0  # cleanup_on_sigterm blocks open in the main thread
        self.plans = 0  # deferred plans that may spill, alive (guard_plan)


_state = _State()


def _interrupts(previous: Any) -> bool:
    """Whether a SIGTERM now interrupts the running queries (like Ctrl-C).

    Yes in a guarded block, or when SIGTERM would end the process (the default handler): a
    main thread waiting in a query runs no handler till the query ends. A handler of yours
    outside a guarded block (a LazyFrame's collect) runs as Python runs it, in the main thread
    once its query returns: the spill is removed as the evaluation ends, or by the watchdog.
    """
    return _state.scopes > 0 or not callable(previous)


def _install() -> _Guard | None:
    """The guard, installed now if needed; None where it cannot be (see cleanup_on_sigterm)."""
    if _state.guard is not None:
        return _state.guard
    if sys.platform == "win32" or threading.current_thread() is not threading.main_thread():
        return None
    previous = signal.getsignal(signal.SIGTERM)
    # ignored: SIGTERM ends nothing; None: a handler set outside Python, which we cannot chain
    if previous is None or previous is signal.SIG_IGN:
        return None
    guard = _Guard(previous)
    signal.signal(signal.SIGTERM, _on_sigterm)
    old_fd = signal.set_wakeup_fd(guard.write_end, warn_on_full_buffer=False)
    if old_fd != -1:  # someone else's wakeup fd (an event loop): leave it and the signal alone
        signal.set_wakeup_fd(old_fd)
        signal.signal(signal.SIGTERM, previous)
        guard.close()
        return None
    guard.watcher.start()
    _state.guard = guard
    return guard


def _uninstall(guard: _Guard) -> None:
    """Put back the handler we replaced (unless replaced since) and stop the watcher."""
    _state.guard = None
    # the handler first: a SIGTERM until then still reaches the wakeup fd, and the watcher
    if signal.getsignal(signal.SIGTERM) is _on_sigterm:
        signal.signal(signal.SIGTERM, guard.previous)
    fd = signal.set_wakeup_fd(-1)
    if fd not in {-1, guard.write_end}:  # set by someone else since: theirs
        signal.set_wakeup_fd(fd)
    os.write(guard.write_end, b"\0")
    guard.watcher.join()
    guard.close()


def _release() -> None:
    """Uninstall the guard once nothing holds it (from the main thread; elsewhere, later)."""
    guard = _state.guard
    if (
        guard is not None
        and threading.current_thread() is threading.main_thread()
        and _state.scopes == 0
        and _state.plans == 0
        and not guard.pending
        and not guard.heard.is_set()
    ):
        _uninstall(guard)


def _main_thread_spills() -> bool:
    main = threading.main_thread().ident
    return any(thread == main for thread in _state.live.values())


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    """The SIGTERM handler (main thread): deliver it once the spills are removed."""
    guard = _state.guard
    if guard is None:
        return
    guard.heard.wait(0.2)  # the watcher hears it too (and interrupts the queries)
    guard.pending = True
    if _state.scopes > 0 or _main_thread_spills():
        return  # unwinding: the block's end, or the spill's, delivers it
    _deliver(guard, signum, frame)


def _deliver(guard: _Guard, signum: int, frame: FrameType | None) -> None:
    """Do what SIGTERM did before us; if we interrupted the queries, once their spills are gone.

    Not interrupted (your handler, outside a guarded block), the spills of other threads are
    still in use: the handler does not wait for them.
    """
    if guard.interrupted:
        guard.interrupted = False
        main = threading.main_thread().ident
        deadline = time.monotonic() + _SIGTERM_WAIT_S
        with _state.live_changed:
            while any(thread != main for thread in _state.live.values()):
                left = deadline - time.monotonic()
                if left <= 0:  # writers still at work: the watchdogs remove what is left
                    break
                _state.live_changed.wait(left)
        # The SIGINT the watcher raised may still wait for the main thread: let it fire here
        # (swallowed), not in your handler or in the middle of the lines below.
        with contextlib.suppress(KeyboardInterrupt):
            for _ in range(3):
                pass
    guard.pending = False
    guard.heard.clear()
    if callable(guard.previous):
        guard.previous(signum, frame)  # your handler: it decides
        _release()
        return
    # the default: end the process by SIGTERM (exit status 143, -15), as it would have ended
    _uninstall(guard)
    signal.raise_signal(signum)


def _deliver_if_due() -> None:
    """At the end of a main-thread block or spill: deliver a SIGTERM that came during it."""
    guard = _state.guard
    if (
        guard is None
        or threading.current_thread() is not threading.main_thread()
        or _state.scopes > 0
        or _main_thread_spills()
    ):
        return
    if guard.pending or guard.heard.is_set():
        # Our handler may still wait for the main thread: let it run here (and deliver).
        with contextlib.suppress(KeyboardInterrupt):
            for _ in range(3):
                pass
    if _state.guard is guard and (guard.pending or guard.heard.is_set()):
        _deliver(guard, signal.SIGTERM, None)
    else:
        _release()


@contextlib.contextmanager
def cleanup_on_sigterm() -> Iterator[None]:
    """Within the block, SIGTERM unwinds like Ctrl-C, then ends the process by SIGTERM.

    Python runs signal handlers in the main thread between bytecodes, never while that thread
    waits inside a Polars query, so a handler alone would act only once the query is done. A
    watcher thread hears the signal through the wakeup fd instead and raises SIGINT, which
    Polars turns into a KeyboardInterrupt in every running query (the spill's ``finally``
    then removes its folder). Once unwound, the previous handler runs (yours), or SIGTERM is
    delivered again with the default handler back, so the exit status is the one a job
    scheduler expects (143, -15).

    Installed only from the main thread (Python allows no other), only where SIGTERM is not
    ignored and no other wakeup fd is in use (an event loop's); elsewhere the block runs
    unguarded, and the spill's watchdog (or the sweep of the next spill) removes a spill the
    signal leaves. Blocks nest; :func:`guard_plan` keeps the same guard for a deferred plan.
    """
    with _state.lock:
        # another thread's block (a pass in a Polars thread) is guarded by the plan, if at all
        guarded = threading.current_thread() is threading.main_thread() and _install() is not None
        _state.scopes += guarded
    try:
        yield
    finally:
        if guarded:
            with _state.lock:
                _state.scopes -= 1
            _deliver_if_due()


def guard_plan(body: Callable[..., Any]) -> None:
    """Guard SIGTERM as :func:`cleanup_on_sigterm` does while ``body`` may still run.

    ``body`` is the function of a ``pl.defer`` plan that may spill. Polars runs it in one of its
    own threads at the caller's ``collect()``, where no handler can be installed, so the guard
    is installed now (the caller builds the plan: the main thread, typically) and removed when
    ``body`` is freed with the last plan holding it (from the main thread; freed elsewhere, at
    the next guarded block's end in the main thread).
    """
    with _state.lock:
        if _install() is None:
            return
        _state.plans += 1
    weakref.finalize(body, _plan_dropped)


def _plan_dropped() -> None:
    with _state.lock:
        _state.plans -= 1
    _release()


def _forget_in_child() -> None:
    """In a forked child: the spills and the guard are the parent's; put its handler back.

    The child shares the guard's pipe: left alone, a SIGTERM sent to the child (as
    ``multiprocessing.Pool.terminate`` sends) would reach the parent's watcher.
    """
    guard = _state.guard
    _state.reset()  # its lock may be held by a thread the child does not have
    if guard is None:
        return
    with contextlib.suppress(OSError, ValueError):  # ValueError: not the main thread
        if signal.getsignal(signal.SIGTERM) is _on_sigterm:
            signal.signal(signal.SIGTERM, guard.previous)
        fd = signal.set_wakeup_fd(-1)
        if fd not in {-1, guard.write_end}:
            signal.set_wakeup_fd(fd)
    guard.close()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


def _register(root: Path) -> None:
    with _state.lock:
        _state.live[root] = threading.get_ident()


def _unregister(root: Path) -> None:
    with _state.live_changed:
        _state.live.pop(root, None)
        _state.live_changed.notify_all()
    _deliver_if_due()
