"""Faults on the out-of-core path and in the CLI: signals, stale spills, full disks, bad files.

Each case comes from the reliability audit (section 3, fault injection; section 4, the CLI rows
on ``-o`` and the trec format). The signal tests run the command line in a child process over
a log large enough to still be spilling when the signal arrives.
"""

from __future__ import annotations

import copy
import errno
import gc
import importlib
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval._engine import spill as _spill
from polars_rankeval.cli import main as cli_main
from polars_rankeval.errors import QueryCoverageWarning, ResourceError

cli_module = importlib.import_module("polars_rankeval.cli")

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and /proc")

DATA = Path(__file__).parents[1] / "data"


def _log(rows: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "query": rng.integers(0, max(rows // 50, 1), rows),
            "item": np.arange(rows),
            "score": rng.random(rows),
            "relevance": rng.integers(0, 3, rows),
        }
    )


@pytest.fixture(scope="module")
def big_log(tmp_path_factory) -> Path:
    """About 1.5 s of spilling and passes: time to signal a run while its spill exists."""
    path = tmp_path_factory.mktemp("big") / "log.parquet"
    _log(4_000_000).write_parquet(path)
    return path


def _spill_of(spill: Path, child: subprocess.Popen[bytes], limit: float = 20.0) -> list[Path]:
    """Wait until the child's spill folder holds a bucket (the spill is being written)."""
    end = time.monotonic() + limit
    while time.monotonic() < end and child.poll() is None:
        buckets = list(spill.glob("rke-spill-*/__rke_bucket=*"))
        if buckets:
            return buckets
        time.sleep(0.01)
    pytest.fail("the child never spilled")


def _cli_child(log: Path, spill: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "polars_rankeval", str(log), "-m", "map"]
    command += ["--buckets", "8", "--spill-dir", str(spill), "--no-progress"]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.parametrize(
    ("sent", "status", "stderr"),
    [
        # SIGTERM: spill removed, then the process ends by SIGTERM, as a scheduler expects
        (signal.SIGTERM, -signal.SIGTERM, ""),
        (signal.SIGINT, 130, "rank-eval: interrupted\n"),
    ],
)
def test_signal_during_the_spill_leaves_nothing(tmp_path, big_log, sent, status, stderr):
    spill = tmp_path / "spill"
    spill.mkdir()
    child = _cli_child(big_log, spill)
    _spill_of(spill, child)
    child.send_signal(sent)
    _, err = child.communicate(timeout=30)
    assert child.returncode == status, err.decode()
    assert err.decode() == stderr  # one line, no traceback
    assert list(spill.iterdir()) == []


def _late_writer(root: Path, seconds: float) -> threading.Thread:
    """A writer that keeps adding bucket files for ``seconds``, making folders as Polars'
    partitioned sink does (``mkdir=True``: the spill folder too, once it is gone)."""

    def write() -> None:
        end = time.monotonic() + seconds
        index = 0
        while time.monotonic() < end:
            bucket = root / f"__rke_bucket={index % 3}"
            try:
                bucket.mkdir(parents=True, exist_ok=True)
                (bucket / f"{index}.parquet").write_bytes(b"x" * 1000)
            except OSError:  # removed between the two: write the next one
                pass
            index += 1
            time.sleep(0.005)

    thread = threading.Thread(target=write)
    thread.start()
    return thread


def test_an_interrupted_spill_waits_for_late_writers(tmp_path):
    """After Ctrl-C, Polars' sink threads may still write: the folder must not come back."""
    root = tmp_path / f"{_spill.PREFIX}late"
    root.mkdir()
    (root / _spill.MARKER).write_text(json.dumps(_spill._owner()), encoding="utf-8")
    writer = _late_writer(root, 0.3)
    _spill.remove_spill(root, interrupted=True)
    writer.join()
    assert not root.exists()
    assert list(tmp_path.iterdir()) == []


def test_a_spill_that_cannot_be_removed_keeps_its_marker_for_the_sweep(tmp_path, monkeypatch):
    root = tmp_path / f"{_spill.PREFIX}stuck"
    root.mkdir()
    monkeypatch.setattr(_spill, "_REMOVAL_WAIT_S", 0.2)
    writer = _late_writer(root, 0.6)  # outlives the wait
    _spill.remove_spill(root, interrupted=True)
    writer.join()
    # still there, but marked: the next spill's sweep removes it once this process is gone
    assert root.exists()
    assert (root / _spill.MARKER).exists()
    owner = json.loads((root / _spill.MARKER).read_text(encoding="utf-8"))
    assert owner["pid"] == os.getpid()


def test_sigterm_during_a_library_spill_leaves_nothing(tmp_path, big_log):
    # evaluate() on a DataFrame collects itself, so it guards its own passes
    spill = tmp_path / "spill"
    spill.mkdir()
    code = (
        "import sys, polars as pl, polars_rankeval as rke; "
        f"rke.evaluate(pl.read_parquet({str(big_log)!r}), ['map'], n_buckets=8, "
        f"spill_dir={str(spill)!r})"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE)
    _spill_of(spill, child)
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=30)
    assert child.returncode == -signal.SIGTERM, err.decode()
    assert list(spill.iterdir()) == []


# A child that spills a small LazyFrame log and stays in its first pass, running queries (where
# Polars notices an interruption), until it is signalled: no race with the spill's timing.
_CHILD = """
import os, sys, signal, time
import numpy as np, polars as pl, polars_rankeval as rke
from polars_rankeval._engine import spill as _spill

spill, watchdog, handler = sys.argv[1], sys.argv[2] == "watchdog", sys.argv[3]
if not watchdog:
    _spill._start_watchdog = lambda root: None
if handler != "none":
    def own(signum, frame):
        with open(handler, "w") as done:
            done.write(str(len(os.listdir(spill))))  # the spill is gone before it runs
        raise SystemExit(7)
    signal.signal(signal.SIGTERM, own)
real = pl.scan_parquet

def scan(source, *args, **kwargs):
    if "__rke_bucket" in str(source) and not os.path.exists(spill + ".go"):
        print("spilled", flush=True)
        while not os.path.exists(spill + ".go"):
            pl.LazyFrame({"a": [1]}).collect()
            time.sleep(0.005)
    return real(source, *args, **kwargs)

pl.scan_parquet = scan
rng = np.random.default_rng(0)
log = pl.LazyFrame({"query": rng.integers(0, 200, 10_000), "item": np.arange(10_000),
                    "score": rng.random(10_000), "relevance": rng.integers(0, 3, 10_000)})
per_query = sys.argv[4] == "per_query"
result = rke.evaluate(log, ["map", "ndcg@10"], n_buckets=8, spill_dir=spill, per_query=per_query)
result.collect()
print("not ended", flush=True)
"""


def _lazy_child(
    spill: Path, *, watchdog: bool = False, handler: Path | None = None, per_query: bool = False
) -> subprocess.Popen[str]:
    """A child in the middle of a spilled LazyFrame evaluation (its spill written)."""
    command = [sys.executable, "-c", _CHILD, str(spill), "watchdog" if watchdog else "no"]
    command += [str(handler or "none"), "per_query" if per_query else "summary"]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None
    line = child.stdout.readline()
    if line != "spilled\n":
        child.kill()
        pytest.fail(f"the child never spilled: {child.communicate()[1]}")
    assert list(spill.glob("rke-spill-*/__rke_bucket=*"))
    return child


@pytest.mark.parametrize("per_query", [False, True])
def test_sigterm_during_a_lazy_spill_leaves_nothing(tmp_path, per_query):
    """F7: a LazyFrame's passes run in a Polars thread at collect(); SIGTERM removes the spill
    there too (the watchdog is off: the process removes it before it ends), then ends it."""
    spill = tmp_path / "spill"
    spill.mkdir()
    child = _lazy_child(spill, per_query=per_query)
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=30)
    assert child.returncode == -signal.SIGTERM, err
    assert list(spill.iterdir()) == []
    assert "Traceback" not in err


def test_sigterm_runs_your_own_handler(tmp_path):
    """Your handler runs as Python runs it: in the main thread, once the query returns (here it
    goes on to the end: the passes remove their spill as they end)."""
    spill = tmp_path / "spill"
    spill.mkdir()
    ran = tmp_path / "handler-ran"
    child = _lazy_child(spill, handler=ran)
    child.send_signal(signal.SIGTERM)
    time.sleep(0.3)  # long enough for the SIGTERM to interrupt the evaluation, if it did
    (tmp_path / "spill.go").touch()
    try:
        out, err = child.communicate(timeout=30)
    finally:
        child.kill()
    assert child.returncode == 7, err  # your handler decided
    assert out == ""  # before the next line of Python ran
    assert ran.read_text() == "0"  # after the spill was removed
    assert list(spill.iterdir()) == []


# The guard is process-wide and lives as long as any lazy plan: a LazyFrame another test keeps
# (a docs page's namespace, a failed test's traceback) keeps it. The two tests below check its
# life in a fresh interpreter, where theirs is the only plan.
_GUARD_PRELUDE = """
import gc, signal, sys
sys.path.insert(0, ".")
from pathlib import Path
import polars_rankeval as rke
from polars_rankeval._engine import spill as _spill
from tests.properties.test_faults import _log

def _mine(signum, frame):
    raise AssertionError("not called here")

tmp_path = Path(sys.argv[1])
assert _spill._state.guard is None
"""


def _in_a_fresh_interpreter(body: str, tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", _GUARD_PRELUDE + body, str(tmp_path)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_the_guard_lives_as_long_as_the_plan(tmp_path):
    body = """
before = signal.signal(signal.SIGTERM, _mine)
plan = rke.evaluate(_log(6_000).lazy(), ["map"], n_buckets=4, spill_dir=tmp_path)
assert signal.getsignal(signal.SIGTERM) is _spill._on_sigterm  # built: guarded
assert _spill._state.guard is not None
assert _spill._state.guard.previous is _mine  # chained to
plan.collect()
assert signal.getsignal(signal.SIGTERM) is _spill._on_sigterm  # may be collected again
del plan
gc.collect()
assert signal.getsignal(signal.SIGTERM) is _mine  # put back
assert signal.set_wakeup_fd(-1) == -1  # and the wakeup fd
assert _spill._state.guard is None
assert list(tmp_path.iterdir()) == []
"""
    _in_a_fresh_interpreter(body, tmp_path)


def test_a_handler_set_after_the_guard_is_left_alone(tmp_path):
    body = """
plan = rke.evaluate(_log(6_000).lazy(), ["map"], n_buckets=4, spill_dir=tmp_path)
signal.signal(signal.SIGTERM, _mine)  # yours, set while the plan lives
del plan
gc.collect()
assert signal.getsignal(signal.SIGTERM) is _mine
assert _spill._state.guard is None
"""
    _in_a_fresh_interpreter(body, tmp_path)


def _sleep_long() -> None:
    time.sleep(30)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_terminated_does_not_reach_the_guard(tmp_path):
    # a forked child shares the guard's pipe: Pool.terminate() SIGTERMs it
    plan = rke.evaluate(_log(6_000).lazy(), ["map"], n_buckets=4, spill_dir=tmp_path)
    guard = _spill._state.guard
    assert guard is not None
    with warnings.catch_warnings():  # fork with threads: Python 3.12 warns; the child sleeps
        warnings.simplefilter("ignore", DeprecationWarning)
        child = multiprocessing.get_context("fork").Process(target=_sleep_long)
        child.start()
    time.sleep(0.5)
    child.terminate()
    child.join(10)
    assert child.exitcode == -signal.SIGTERM
    time.sleep(0.2)
    assert not guard.heard.is_set()
    del plan
    gc.collect()


def _watchdogs_of(spill: Path) -> list[int]:
    """The watchdog processes watching a folder under ``spill`` (Linux: read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(part.startswith(os.fsencode(spill / _spill.PREFIX)) for part in command):
                found.append(int(entry.name))
    return found


def _gone_within(spill: Path, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not list(spill.iterdir()):
            return True
        time.sleep(0.01)
    return False


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="/proc")
def test_sigkill_leaves_nothing_after_a_moment(tmp_path):
    """SIGKILL cannot be caught: the spill's watchdog removes it once its owner is gone."""
    spill = tmp_path / "spill"
    spill.mkdir()
    child = _lazy_child(spill, watchdog=True)
    watchdogs = _watchdogs_of(spill)
    child.kill()
    child.communicate(timeout=30)
    assert _gone_within(spill, 5.0)
    assert len(watchdogs) == 1
    end = time.monotonic() + 5.0
    while _proc_state(watchdogs[0]) not in {"gone", "Z"} and time.monotonic() < end:
        time.sleep(0.01)
    assert _proc_state(watchdogs[0]) in {"gone", "Z"}  # it does not outlive its owner


def _proc_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return "gone"


def test_sigkill_without_a_watchdog_leaves_a_spill_that_the_next_run_sweeps(tmp_path):
    # where no watchdog can run (Windows, a frozen application), the sweep is the answer
    spill = tmp_path / "spill"
    spill.mkdir()
    child = _lazy_child(spill)
    child.kill()
    child.communicate(timeout=30)
    (left,) = spill.iterdir()
    owner = json.loads((left / _spill.MARKER).read_text())
    assert owner["pid"] == child.pid
    assert owner["host"] == socket.gethostname()
    # the next spilled run sweeps it
    rke.evaluate(_log(6_000).lazy(), ["map"], n_buckets=4, spill_dir=spill).collect()
    assert list(spill.iterdir()) == []


def _owned_folder(tmp_path: Path, pid: int) -> Path:
    root = tmp_path / f"{_spill.PREFIX}watched"
    (root / "__rke_bucket=0").mkdir(parents=True)
    owner = {"host": socket.gethostname(), "pid": pid, "start": None}
    (root / _spill.MARKER).write_text(json.dumps(owner), encoding="utf-8")
    return root


def test_the_watchdog_leaves_a_folder_in_use_alone(tmp_path):
    root = _owned_folder(tmp_path, os.getpid())
    watchdog = _spill._start_watchdog(root)
    assert watchdog is not None
    time.sleep(1.2)  # two of its checks of the owner
    assert watchdog.poll() is None
    assert (root / "__rke_bucket=0").exists()
    # "done": the owner removes its folder itself (here it does not): the watchdog just ends
    _spill._stop_watchdog(watchdog, removed=True)
    assert watchdog.returncode == 0
    assert (root / "__rke_bucket=0").exists()


@pytest.mark.parametrize("marker", ["owner", "another process"])
def test_the_watchdog_removes_only_its_dead_owners_folder(tmp_path, marker):
    # an owner that starts a watchdog once its folder is there, then dies without a word
    code = (
        "import os, sys; from pathlib import Path; "
        "from polars_rankeval._engine import spill as _spill; "
        "print(os.getpid(), flush=True); sys.stdin.readline(); "
        "w = _spill._start_watchdog(Path(sys.argv[1])); print(w.pid, flush=True); os._exit(0)"
    )
    root = tmp_path / f"{_spill.PREFIX}watched"
    owner = subprocess.Popen(
        [sys.executable, "-c", code, str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert owner.stdin is not None
    assert owner.stdout is not None
    pid = int(owner.stdout.readline())
    _owned_folder(tmp_path, pid if marker == "owner" else os.getpid())
    owner.stdin.write("go\n")
    owner.stdin.flush()
    watchdog = int(owner.stdout.readline())
    owner.communicate(timeout=30)
    end = time.monotonic() + 5.0
    while _proc_state(watchdog) not in {"gone", "Z"} and time.monotonic() < end:
        time.sleep(0.01)
    assert _proc_state(watchdog) in {"gone", "Z"}  # it ended with its owner
    assert root.exists() == (marker != "owner")


def _marked(folder: Path, **owner: object) -> Path:
    folder.mkdir()
    (folder / "__rke_bucket=0").mkdir()
    (folder / _spill.MARKER).write_text(json.dumps(owner))
    return folder


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_sweep_removes_only_stale_spills_of_this_host(tmp_path):
    host = socket.gethostname()
    me = {"host": host, "pid": os.getpid(), "start": _spill._start_time(os.getpid())}
    parent = {"host": host, "pid": os.getppid(), "start": _spill._start_time(os.getppid())}
    dead = _marked(tmp_path / "rke-spill-dead", host=host, pid=_dead_pid(), start="1")
    # this pid, but another start time: the pid was reused, the owner is gone
    reused = _marked(tmp_path / "rke-spill-reused", **{**me, "start": "-1"})
    kept = [
        _marked(tmp_path / "rke-spill-live", **me),
        _marked(tmp_path / "rke-spill-parent", **parent),
        _marked(tmp_path / "rke-spill-other-host", host=f"not-{host}", pid=_dead_pid()),
        tmp_path / "rke-spill-no-marker",  # not ours: never touched
        tmp_path / "other-folder",
    ]
    kept[3].mkdir()
    kept[4].mkdir()
    bad_marker = tmp_path / "rke-spill-bad-marker"
    bad_marker.mkdir()
    (bad_marker / _spill.MARKER).write_text("not json")
    kept.append(bad_marker)
    assert sorted(_spill.sweep(tmp_path)) == sorted([dead, reused])
    assert sorted(tmp_path.iterdir()) == sorted(kept)


def test_a_live_runs_spill_survives_another_runs_sweep(tmp_path, monkeypatch):
    seen = []
    real = pl.scan_parquet

    def scan(source, *args, **kwargs):
        if "__rke_bucket" in str(source) and not seen:
            # mid-run: another run sweeps the same folder
            seen.append(_spill.sweep(tmp_path))
            seen.append(sorted(p.name for p in tmp_path.iterdir()))
        return real(source, *args, **kwargs)

    monkeypatch.setattr(pl, "scan_parquet", scan)
    rke.evaluate(_log(6_000).lazy(), ["map"], n_buckets=4, spill_dir=tmp_path).collect()
    assert seen[0] == []
    assert len(seen[1]) == 1
    assert seen[1][0].startswith("rke-spill-")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "failure",
    [
        OSError(errno.ENOSPC, "No space left on device"),
        pl.exceptions.ComputeError(
            "parquet: File out of specification: underlying IO error: No space left on device "
            "(os error 28)"
        ),
    ],
)
def test_disk_full_names_the_spill_folder(tmp_path, monkeypatch, failure):
    def sink_parquet(self, path, *args, **kwargs):
        # a copy: the parametrized instance lives all session, and a raised one keeps its
        # traceback, whose frames hold the plan and so its SIGTERM guard (the guard tests
        # below then found it alive)
        raise copy.copy(failure)

    monkeypatch.setattr(pl.LazyFrame, "sink_parquet", sink_parquet)
    with pytest.raises(ResourceError, match="ran out of disk space") as caught:
        rke.evaluate(_log(6_000).lazy(), ["map"], n_buckets=4, spill_dir=tmp_path).collect()
    message = str(caught.value)
    assert f"{tmp_path}{os.sep}rke-spill-" in message
    assert "spill_dir=" in message
    assert "n_buckets=1" in message
    assert list(tmp_path.iterdir()) == []


def test_other_errors_of_the_spill_are_left_alone(tmp_path, monkeypatch):
    def sink_parquet(self, path, *args, **kwargs):
        raise pl.exceptions.ComputeError("something else")

    monkeypatch.setattr(pl.LazyFrame, "sink_parquet", sink_parquet)
    with pytest.raises(pl.exceptions.ComputeError, match="something else"):
        rke.evaluate(_log(6_000).lazy(), ["map"], n_buckets=4, spill_dir=tmp_path).collect()


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_unusable_spill_dir_is_a_resource_error(tmp_path, kind):
    where = tmp_path / "spill"
    if kind == "file":
        where.write_text("x")
    with pytest.raises(ResourceError, match="cannot make a spill folder") as caught:
        rke.evaluate(_log(6_000).lazy(), ["map"], n_buckets=4, spill_dir=where).collect()
    assert repr(str(where)) in str(caught.value)
    assert "--spill-dir" in str(caught.value)


def test_read_only_spill_dir_is_a_resource_error(tmp_path, monkeypatch):
    # chmod does not stop root, so the read-only file system is simulated
    def mkdtemp(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system", str(tmp_path))

    monkeypatch.setattr(_spill.tempfile, "mkdtemp", mkdtemp)
    with pytest.raises(ResourceError, match="Read-only file system"):
        rke.evaluate(_log(6_000).lazy(), ["map"], n_buckets=4, spill_dir=tmp_path).collect()


def test_cli_spill_dir_that_is_missing(tmp_path, capsys):
    path = tmp_path / "log.parquet"
    _log(6_000).write_parquet(path)
    code = cli_main([str(path), "--buckets", "4", "--spill-dir", str(tmp_path / "nowhere")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert "cannot make a spill folder" in err
    assert "nowhere" in err


# ---- bad input files --------------------------------------------------------------------------


@pytest.fixture
def parts(tmp_path) -> Path:
    folder = tmp_path / "parts"
    folder.mkdir()
    log = _log(4_000)
    for part in range(4):
        log.slice(part * 1_000, 1_000).write_parquet(folder / f"p{part}.parquet")
    data = (folder / "p2.parquet").read_bytes()
    (folder / "p2.parquet").write_bytes(data[: len(data) // 2])  # truncated
    return folder


@pytest.mark.parametrize("form", ["glob", "directory"])
@pytest.mark.parametrize("buckets", ["1", "5"])
def test_truncated_parquet_file_is_named(capsys, parts, form, buckets):
    given = str(parts / "*.parquet") if form == "glob" else str(parts)
    code = cli_main([given, "-m", "map", "--buckets", buckets])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert repr(str(parts / "p2.parquet")) in err
    assert "not a readable Parquet file" in err
    assert "PAR1" in err  # what Polars expected, without the raw bytes it found
    assert "instead" not in err


def test_text_file_in_a_directory_is_named(capsys, tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    _log(1_000).write_parquet(folder / "a.parquet")
    (folder / "notes.txt").write_text("not a log\n")
    code = cli_main([str(folder), "-m", "map"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert "notes.txt" in err


def test_non_utf8_trec_file_is_named(capsys, tmp_path):
    run = tmp_path / "run.txt"
    lines = (DATA / "results.test").read_bytes().splitlines(keepends=True)
    run.write_bytes(b"".join(lines[:5]) + b"301 Q0 caf\xe9 6 0.5 tag\n" + b"".join(lines[5:50]))
    code = cli_main([str(run), "--qrels", str(DATA / "qrels.test"), "-m", "map"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert "run.txt" in err


# ---- -o, Ctrl-C, MemoryError, trec names, warnings ---------------------------------------------


@pytest.mark.parametrize("how", ["same", "dot", "symlink", "hardlink", "glob", "directory"])
def test_output_onto_an_input_is_refused(capsys, tmp_path, monkeypatch, how):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "logs"
    folder.mkdir()
    log = folder / "log.parquet"
    _log(1_000).write_parquet(log)
    before = log.read_bytes()
    given, output = {
        "same": (str(log), str(log)),
        "dot": ("logs/log.parquet", "./logs/../logs/log.parquet"),
        "symlink": (str(log), str(tmp_path / "link.parquet")),
        "hardlink": (str(log), str(tmp_path / "hard.parquet")),
        "glob": (str(folder / "*.parquet"), str(log)),
        "directory": (str(folder), str(log)),
    }[how]
    if how == "symlink":
        (tmp_path / "link.parquet").symlink_to(log)
    if how == "hardlink":
        os.link(log, tmp_path / "hard.parquet")
    code = cli_main([given, "-m", "map", "-o", output])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert "would be overwritten" in err
    assert log.read_bytes() == before


def test_output_onto_the_qrels_is_refused(capsys, tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_bytes((DATA / "qrels.test").read_bytes())
    before = qrels.read_bytes()
    code = cli_main([str(DATA / "results.test"), "--qrels", str(qrels), "-o", str(qrels)])
    assert code == 2
    assert "would be overwritten" in capsys.readouterr().err
    assert qrels.read_bytes() == before


def test_output_onto_an_input_of_compare_is_refused(capsys, tmp_path):
    pytest.importorskip("scipy")
    run = tmp_path / "a.txt"
    run.write_bytes((DATA / "results.test").read_bytes())
    argv = ["compare", str(run), str(DATA / "results-302.test"), "--qrels"]
    code = cli_main([*argv, str(DATA / "qrels.test"), "--format", "csv", "-o", str(run)])
    assert code == 2
    assert "would be overwritten" in capsys.readouterr().err


def test_output_elsewhere_is_written(capsys, tmp_path):
    log = tmp_path / "log.parquet"
    _log(1_000).write_parquet(log)
    assert cli_main([str(log), "-m", "map", "-o", str(tmp_path / "out.csv")]) == 0
    assert (tmp_path / "out.csv").read_text().splitlines()[0] == "map"


@pytest.mark.parametrize(
    ("raised", "code", "line"),
    [
        (KeyboardInterrupt(), 130, "rank-eval: interrupted\n"),
        (MemoryError(), 2, "rank-eval: error: out of memory: "),
    ],
)
def test_interrupt_and_memory_error_print_one_line(capsys, monkeypatch, raised, code, line):
    def run(argv):
        raise raised

    monkeypatch.setattr(cli_module, "_run", run)
    monkeypatch.setattr(cli_module, "_run_compare", run)
    for argv in (["x.parquet"], ["compare", "x.parquet"]):
        assert cli_main(argv) == code
        err = capsys.readouterr().err
        assert err.startswith(line)
        assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("system", "bm25\nmap                   \tall\t0.9999"),
        ("system", "two words"),
        ("system", "bell\x07"),
        ("query", "q 1"),
    ],
)
def test_trec_format_refuses_names_that_would_forge_lines(capsys, tmp_path, column, value):
    log = _log(1_000).with_columns(pl.lit("bm25").alias("system"), pl.col("query").cast(pl.String))
    log = log.with_columns(
        pl.when(pl.col("query") == pl.col("query").first())
        .then(pl.lit(value))
        .otherwise(pl.col(column))
        .alias(column)
    )
    path = tmp_path / "log.parquet"
    log.write_parquet(path)
    code = cli_main([str(path), "--by", "system", "-m", "map", "--per-query", "--format", "trec"])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert "whitespace or a control character" in err
    assert "--format csv" in err


def test_trec_format_takes_plain_names(capsys, tmp_path):
    log = _log(1_000).with_columns(pl.lit("bm25-v2_x").alias("system"))
    path = tmp_path / "log.parquet"
    log.write_parquet(path)
    code = cli_main([str(path), "--by", "system", "-m", "map", "--format", "trec"])
    assert code == 0
    assert "system=bm25-v2_x" in capsys.readouterr().out


def test_package_warnings_are_one_line_and_the_run_goes_on(capsys, monkeypatch):
    evaluate = cli_module._evaluate

    def warned(*args, **kwargs):
        warnings.warn("49 run queries have no judgments\n(and more)", QueryCoverageWarning, 1)
        return evaluate(*args, **kwargs)

    monkeypatch.setattr(cli_module, "_evaluate", warned)
    code = cli_main([str(DATA / "results.test"), "--qrels", str(DATA / "qrels.test"), "-m", "map"])
    out, err = capsys.readouterr()
    assert code == 0
    assert err == "rank-eval: warning: 49 run queries have no judgments (and more)\n"
    assert "map" in out


def test_half_matching_query_ids_warn_with_both_counts(capsys, tmp_path):
    qrels = pl.read_csv(
        DATA / "qrels.test", separator=" ", has_header=False, new_columns=["q", "i", "d", "r"]
    )
    queries = sorted(qrels["q"].unique().to_list())
    renamed = set(queries[: len(queries) // 2])
    qrels = qrels.with_columns(
        pl.when(pl.col("q").is_in(renamed))
        .then(pl.col("q").cast(pl.String) + "x")
        .otherwise(pl.col("q").cast(pl.String))
        .alias("q")
    )
    path = tmp_path / "qrels.txt"
    qrels.write_csv(path, separator=" ", include_header=False)
    code = cli_main([str(DATA / "results.test"), "--qrels", str(path), "-m", "map,num_q"])
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert code == 0
    assert "num_q" in out
    assert len(lines) == 1
    assert lines[0].startswith("rank-eval: warning: ")
    assert str(len(renamed)) in lines[0]  # the judged queries without run rows
