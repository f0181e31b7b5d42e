"""verify's child processes: bounded by --timeout, stopped when verify ends or is stopped, in their own copy.

Each test builds a tiny project in tmp_path (one TM001 rewrite, a test file that does not import
torch) whose test records the processes it starts in a folder outside the copies, so the test
can check afterwards that none of them is still running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")  # verify asks the interpreter about its torch

from codemods.verify import VerifyOptions, execute, render, verify  # noqa: E402
from codemods.verify.device import detect  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = '[tool.pytest.ini_options]\naddopts = "-p no:hypothesispytest {}"\ntestpaths = ["tests"]\n'
MODEL = "import torch.nn as nn\n\n\ndef criterion():\n    return nn.SmoothL1Loss(size_average=False)\n"


def tiny_project(tmp_path: Path, test_body: str, addopts: str = "") -> tuple[Path, Path]:
    """A project that TM001 changes, whose one test runs `test_body` with `PIDS` (a folder) at hand."""
    root, pids = tmp_path / "project", tmp_path / "pids"
    (root / "tests").mkdir(parents=True)
    pids.mkdir()
    (root / "pyproject.toml").write_text(PYPROJECT.format(addopts))
    (root / "model.py").write_text(MODEL)
    body = "\n".join("    " + line for line in test_body.strip().splitlines())
    header = f"import os, subprocess, time\nfrom pathlib import Path\n\nPIDS = Path({str(pids)!r})\n\n\n"
    (root / "tests" / "test_children.py").write_text(header + f"def test_children():\n{body}\n")
    return root, pids


def alive(pid: int) -> bool:
    """Running: neither gone nor a zombie nobody reaped yet."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def recorded(pids: Path) -> list[int]:
    return [int(p.read_text()) for p in pids.iterdir() if p.read_text().strip()]


# Processes that were just sent SIGKILL, or whose death init has not reaped yet, may still show
# for a moment on a loaded machine: every check for survivors allows for it.
SETTLE = 30.0


def survivors(pids: Path, within: float = SETTLE) -> list[int]:
    deadline = time.monotonic() + within
    while True:
        left = [pid for pid in recorded(pids) if alive(pid)]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.1)


def options(**kwargs) -> VerifyOptions:
    return VerifyOptions(python=sys.executable, rerun=0, **kwargs)


# A background child that inherits the suite's stdout and keeps it open, and a daemon that left the group.
HOLDS_STDOUT = """
os.system(f"sleep 1000 & echo $! > {PIDS}/held-{os.getpid()}")
os.system(f"setsid sleep 1000 > /dev/null 2>&1 < /dev/null & echo $! > {PIDS}/daemon-{os.getpid()}")
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_child_holding_stdout_neither_holds_verify_nor_outlives_it(tmp_path: Path) -> None:
    root, pids = tiny_project(tmp_path, HOLDS_STDOUT, addopts="-s")  # -s: the child gets pytest's own stdout
    detect(sys.executable, timeout=300)  # importing torch on a busy machine must not eat the short timeout
    # it used to wait for the pipe until the timeout: a timed-out side is no exit 0
    report = verify(root, options(timeout=120))
    assert report.exit_code == 0, render.text(report)
    assert [side.seconds < 120 for side in report.sides] == [True, True]
    assert len(recorded(pids)) == 4  # before and after, each a held child and a daemon
    assert survivors(pids) == []


def test_tests_see_their_copy_as_pwd_and_cannot_write_into_the_project(tmp_path: Path, monkeypatch) -> None:
    root, _ = tiny_project(tmp_path, """
Path(os.environ["PWD"], "written-by-a-test.txt").write_text("x")
assert os.path.samefile(os.environ["PWD"], os.getcwd())
""")  # fmt: skip
    monkeypatch.setenv("PWD", str(root))  # the user ran `torch-migrate verify .` in the project
    report = verify(root, options(timeout=60))
    assert report.exit_code == 0, render.text(report)
    assert not (root / "written-by-a-test.txt").exists()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_run_leaves_no_process_of_its_group_or_tag(tmp_path: Path) -> None:
    """Both hold the output open; the daemon left the group, so only its tag finds it."""
    pids = tmp_path / "pids"
    pids.mkdir()
    processes = execute.Processes()
    script = f"sleep 1000 & echo $! > {pids}/group; setsid sleep 1000 & echo $! > {pids}/daemon; echo done"
    done = processes.run(script, tmp_path, dict(os.environ), timeout=120)
    try:
        assert (done.returncode, done.stdout) == (0, "done\n")  # not held until the timeout (None)
        assert len(recorded(pids)) == 2 and survivors(pids) == []
    finally:
        processes.close()
    assert processes.watchdog.returncode is not None  # closed with the verification


# The suite blocks: verify is stopped while both sides run it.
BLOCKS = """
(PIDS / f"pytest-{os.getpid()}").write_text(str(os.getpid()))
os.system(f"sleep 1000 & echo $! > {PIDS}/child-{os.getpid()}")
time.sleep(1000)
"""


def start_verify(root: Path, tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "codemods", "verify", str(root), "--python", sys.executable, "--rerun", "0", "--timeout", "600"]
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    return proc, temp


def wait_for_suites(proc: subprocess.Popen, pids: Path) -> None:
    """Until both sides' suites have started their child (or, run one after the other, one has
    for a while). Generous: on a busy machine verify's start, its torch probes and two pytest
    starts take long; the suites themselves block until stopped."""
    deadline = time.monotonic() + 300
    first: float | None = None
    while time.monotonic() < deadline and proc.poll() is None:
        children = len(list(pids.glob("child-*")))
        first = first if first is not None or not children else time.monotonic()
        if children >= 2 or (first is not None and time.monotonic() - first > 30):
            time.sleep(0.3)  # its pid is written
            return
        time.sleep(0.1)
    proc.kill()
    pytest.fail(f"the suites did not start: {proc.communicate()[0].decode()[-2000:]}")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signal_stops_the_suites_and_exits_128_plus_it(signum, tmp_path: Path) -> None:
    root, pids = tiny_project(tmp_path, BLOCKS)
    proc, temp = start_verify(root, tmp_path)
    wait_for_suites(proc, pids)
    proc.send_signal(signum)
    try:
        output = proc.communicate(timeout=120)[0].decode()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signum, output
    assert "interrupted" in output
    assert survivors(pids) == []
    assert [p.name for p in temp.iterdir() if p.name.startswith("torch-migrate-verify-")] == []  # copies removed


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_the_suites_die_with_a_killed_verify(tmp_path: Path) -> None:
    root, pids = tiny_project(tmp_path, BLOCKS)
    proc, _ = start_verify(root, tmp_path)
    wait_for_suites(proc, pids)
    proc.kill()  # SIGKILL: verify cleans nothing up; its watchdog does
    proc.communicate()
    assert survivors(pids) == []


def test_a_signal_during_the_clean_up_is_raised_after_it() -> None:
    """SIGTERM while a finished verification stops its commands and removes its copies: it waits
    for the clean-up, and is not dropped (verify returned, and the CLI exited 0, not 143)."""
    from codemods.verify.core import _Signals

    signals = _Signals()
    try:
        if signal.SIGTERM not in signals.previous:
            pytest.skip("SIGTERM is someone else's here")
        signals.closing = True
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.2)  # the handler runs in this thread, between two bytecodes
        assert signals.pending == signal.SIGTERM
    finally:
        signals.restore()
