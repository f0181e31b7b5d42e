"""Run one command in one copy: its own process group, a timeout, and a kill that reaches children.

Every process started here is registered so that `kill_all()` can stop it from the main thread
(Ctrl-C, SIGTERM) while worker threads are blocked waiting on it.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

TAIL = 4000  # characters of output kept for messages

_live: set[subprocess.Popen] = set()
_lock = threading.Lock()


class StartError(Exception):
    """The command itself could not be started (missing executable, not executable, bad cwd)."""


@dataclass(frozen=True)
class Completed:
    returncode: int | None  # None: timed out and killed
    stdout: str
    stderr: str
    seconds: float

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    @property
    def tail(self) -> str:
        text = (self.stdout + ("\n" if self.stdout and self.stderr else "") + self.stderr).strip()
        return text[-TAIL:]


def _kill(proc: subprocess.Popen) -> None:
    """SIGTERM the whole group, then SIGKILL what is left after a short grace period."""
    for sig, grace in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 0.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return
            time.sleep(0.05)


def kill_all() -> None:
    with _lock:
        procs = list(_live)
    for proc in procs:
        _kill(proc)


def run(
    args: Sequence[str] | str, cwd: Path, env: dict[str, str], timeout: float | None, merge_output: bool = True
) -> Completed:
    """Run `args` (a list, or a shell string) in `cwd`; never raises for the command's own failure."""
    shell = isinstance(args, str)
    argv = ["/bin/sh", "-c", args] if shell else list(args)
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merge_output else subprocess.PIPE,
            start_new_session=True,  # our Ctrl-C is not theirs; we stop the whole group ourselves
        )
    except OSError as exc:
        raise StartError(f"cannot start {argv[0]!r}: {exc.strerror or exc}") from None
    with _lock:
        _live.add(proc)
    try:
        try:
            out, err = proc.communicate(timeout=timeout)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            _kill(proc)
            out, err = proc.communicate()
            code = None
    finally:
        with _lock:
            _live.discard(proc)
        if proc.poll() is None:  # interrupted while waiting: leave nothing behind
            _kill(proc)
    decode = lambda b: (b or b"").decode("utf-8", "replace")  # noqa: E731
    done = Completed(code, decode(out), decode(err), time.monotonic() - started)
    if shell and code in (126, 127) and re.search(r"not found|Permission denied|cannot execute", done.tail):
        raise StartError(f"cannot start `{args}`: {done.tail.splitlines()[-1] if done.tail else code}")
    return done


SHELL_SYNTAX = re.compile(r"&&|\|\||[;|<>`]|\$\(")


def pytest_argv(command: str) -> list[str] | None:
    """`command` as an argument list when it is a plain pytest invocation, else None."""
    if SHELL_SYNTAX.search(command):
        return None
    try:
        tokens = shlex.split(command)
    except ValueError:
        return None
    if not tokens:
        return None
    first = os.path.basename(tokens[0])
    if first in ("pytest", "py.test"):
        return tokens
    if first.startswith("python") and tokens[1:3] == ["-m", "pytest"]:
        return tokens
    return None
