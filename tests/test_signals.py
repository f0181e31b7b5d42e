"""Signals to the main process of a run: SIGINT or SIGTERM (to it alone, as a supervisor or an IDE
sends them) ends the run within seconds, exit 130/143, naming the files already rewritten, with
no worker left behind; SIGKILL takes the workers with it, and the next run removes what it left
half-written. Real processes on generated trees, plus the pool's stop path on its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from codemods import api
from codemods.api import Options
from codemods.engine import interrupt, pool
from codemods.engine.interrupt import Halted, StopFlag
from codemods.engine.writer import Identity, Original, write_atomic
from codemods.results import FileResult, Status
from tests.test_cli_edges import _legacy_module, _session_processes

ROOT = Path(__file__).resolve().parents[1]
LINUX = pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads the process tree from Linux's /proc")
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _project(tmp_path: Path, count: int) -> dict[Path, str]:
    project = tmp_path / "proj"
    project.mkdir()
    originals = {project / f"m{i:03d}.py": _legacy_module(i) for i in range(count)}
    for path, text in originals.items():
        path.write_text(text)
    return originals


@pytest.fixture
def start(tmp_path: Path):
    """Start a run in `tmp_path` in a session of its own (what it leaves behind is found by its
    session); whatever of it is still there when the test ends is killed."""
    started = []

    def start(*arguments: str) -> subprocess.Popen:
        proc = subprocess.Popen(
            [sys.executable, *arguments], cwd=tmp_path, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True, start_new_session=True,
        )  # fmt: skip
        started.append(proc)
        return proc

    yield start
    for proc in started:
        for pid in _session_processes(proc.pid):
            os.kill(pid, signal.SIGKILL)


RUN = ("-m", "codemods", "run", "proj", "--no-cache", "-j", "2")


def _when(condition, proc: subprocess.Popen, limit: float = 120) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.005)


def _left_behind(session: int, wait: float = 3.0) -> list[int]:
    deadline = time.monotonic() + wait
    while _session_processes(session) and time.monotonic() < deadline:
        time.sleep(0.05)
    return _session_processes(session)


def _each_file_whole(originals: dict[Path, str]) -> set[Path]:
    """The files rewritten; each file is as it was or fully migrated (and compiles)."""
    from codemods.api import transform_source

    migrated = {i: transform_source(_legacy_module(i)).code for i in range(3)}  # three variants
    for index, path in enumerate(sorted(originals)):
        text = path.read_text()
        assert text in (originals[path], migrated[index % 3]), path
        compile(text, str(path), "exec")
    return {path for path, text in originals.items() if path.read_text() != text}


def _temps(folder: Path) -> list[Path]:
    return sorted(folder.glob(".*.tm-tmp"))


@LINUX
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_a_signal_to_the_main_process_alone_ends_the_run_mid_way(tmp_path: Path, start, signum: int, code: int) -> None:
    originals = _project(tmp_path, 300)
    stamps = {path: path.stat().st_mtime_ns for path in originals}
    proc = start(*RUN)
    _when(lambda: any(path.stat().st_mtime_ns != stamps[path] for path in originals), proc)  # mid-run
    os.kill(proc.pid, signum)
    sent = time.monotonic()
    _, err = proc.communicate(timeout=60)
    took = time.monotonic() - sent

    assert proc.returncode == code, err
    assert took < 15, took
    assert _left_behind(proc.pid) == []
    assert "Traceback" not in err
    changed = _each_file_whole(originals)
    listed = {line.strip() for line in err.splitlines() if line.startswith("  ")}
    assert listed == {path.relative_to(tmp_path).as_posix() for path in changed}, err
    assert 0 < len(changed) < len(originals)
    assert _temps(tmp_path / "proj") == []


# The facts pass made slow (each file's part takes 50 ms), so that it is surely under way
SLOW_FACTS = """
import sys, time
from codemods import api
from codemods.cli import main
parts = api._file_parts
def slow_parts(job):
    time.sleep(0.05 * len(job[1]))
    return parts(job)
api._file_parts = slow_parts
main(sys.argv[1:])
"""


@LINUX
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_the_facts_pass_leaves_no_process_behind(tmp_path: Path, start, signum: int, code: int) -> None:
    # the facts of a large repository are gathered in a child process with its own pool: the
    # main process alone is told to stop, and the child and its workers must go with it at once
    _project(tmp_path, 400)
    proc = start("-c", SLOW_FACTS, *RUN[2:], "--diff")
    _when(lambda: len(_session_processes(proc.pid)) >= 4, proc)  # this one, the child, its two workers
    os.kill(proc.pid, signum)
    sent = time.monotonic()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert time.monotonic() - sent < 4
    assert "Traceback" not in err and "interrupted; nothing was written" in err, err
    assert _left_behind(proc.pid) == []


@LINUX
def test_sigkill_of_the_main_process_takes_its_workers_and_the_next_run_cleans_up(tmp_path: Path, start) -> None:
    originals = _project(tmp_path, 300)
    stamps = {path: path.stat().st_mtime_ns for path in originals}
    proc = start(*RUN)
    _when(lambda: any(path.stat().st_mtime_ns != stamps[path] for path in originals), proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert _left_behind(proc.pid) == []  # no worker goes on writing files
    written = _each_file_whole(originals)
    assert 0 < len(written) < len(originals)

    # the next run (one that parses nothing here, to be quick) removes what the killed one left
    again = subprocess.run([sys.executable, "-m", "codemods", "run", "proj", "--select", "TM005"], cwd=tmp_path,
                           env=ENV, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert _temps(tmp_path / "proj") == []
    assert _each_file_whole(originals) == written


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_the_next_run_removes_only_the_temp_files_of_dead_runs(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    dead = tmp_path / f".a.py.{_dead_pid()}.0123abcd.tm-tmp"
    kept = [
        tmp_path / f".a.py.{os.getpid()}.0123abcd.tm-tmp",  # a run still at work
        tmp_path / ".a.py.k3x_9qzw.tm-tmp",  # no pid: not known to be dead
        tmp_path / "notes.tm-tmp",  # not a name of ours
    ]
    for path in (dead, *kept):
        path.write_text("half")
    api.migrate([tmp_path], Options(mode="diff", cache=False, use_config=False))
    assert dead.exists()  # a run that writes nothing removes nothing
    api.migrate([tmp_path], Options(cache=False, use_config=False))
    assert not dead.exists() and all(path.exists() for path in kept)


def _stuck_after_writing(job) -> FileResult:
    """A file that takes forever once written (`w*`), or before (`s*`); the others are quick."""
    path, display, _ = job
    if display.startswith("w"):
        write_atomic(path, b"migrated\n", Original(Identity.of(path), path.read_bytes()))
    if display.startswith(("w", "s")):
        time.sleep(120)
    return FileResult(display, Status.UNCHANGED)


def test_a_stop_stops_a_worker_stuck_in_its_file_and_reports_what_it_wrote(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(pool, "GRACE", 0.5)
    names = ["w0", "s1"] + [f"q{i}" for i in range(2, 12)]
    for name in names:  # the stuck ones largest: each worker takes one first
        (tmp_path / name).write_text("x\n" * (100 if name[0] in "ws" else 1))
    work = [(index, (tmp_path / name, name, None)) for index, name in enumerate(names)]
    stop = StopFlag()

    def stop_once_written() -> None:
        while (tmp_path / "w0").read_text() != "migrated\n":
            time.sleep(0.01)
        stop.request(signal.SIGTERM)

    threading.Thread(target=stop_once_written, daemon=True).start()
    started = time.monotonic()
    results = dict(pool.pooled(work, 2, stop, _stuck_after_writing))
    assert time.monotonic() - started < 20
    assert results.get(0) == FileResult("w0", Status.CHANGED)  # written, then stopped: reported
    assert 1 not in results and (tmp_path / "s1").read_text() == "x\n" * 100  # stopped before writing
    assert _temps(tmp_path) == []


def test_a_worker_whose_run_is_gone_writes_nothing_more(monkeypatch) -> None:
    # the portable check (no signal from the kernel where there is no PR_SET_PDEATHSIG)
    monkeypatch.setattr(interrupt._Worker, "parent", os.getppid() + 1)
    with pytest.raises(Halted):
        interrupt.before_write()
    monkeypatch.setattr(interrupt._Worker, "parent", os.getppid())
    interrupt.before_write()
