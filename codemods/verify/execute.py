"""Run one command in one copy: its own session, a timeout on all of it, and nothing left behind.

Each command runs in a session (and process group) of its own, with its output going to a
temporary file, not a pipe: a child that keeps the output open (`sleep 1000 &`) cannot make a
run wait past its timeout. When the command ends, times out or is interrupted, its whole group
and everything tagged with its run (`reaper`) is stopped. `Processes` holds what one
verification started, so that a signal (Ctrl-C, SIGTERM, SIGHUP) in the main thread stops it
all while worker threads wait, and so that its watchdog stops it all when verify itself is
killed.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from codemods.verify import reaper

TAIL = 4000  # characters of output kept for messages
GRACE = 3.0  # seconds between SIGTERM and SIGKILL


class StartError(Exception):
    """The command itself could not be started (missing executable, not executable, bad cwd)."""


class Stopped(Exception):
    """The verification is being stopped: no new command starts."""


class Interrupted(KeyboardInterrupt):
    """A signal asked verify to stop; the CLI exits 128 + `signum`."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


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


class Processes:
    """The commands one verification runs, and its watchdog (started with the first of them)."""

    def __init__(self, watch: bool = True) -> None:
        self.session = uuid.uuid4().hex
        self.counter = itertools.count(1)
        self.live: set[subprocess.Popen] = set()
        self.lock = threading.Lock()
        self.stopping = False
        self.watch = watch
        self.watchdog: subprocess.Popen | None = None

    def run(
        self, args: Sequence[str] | str, cwd: Path, env: dict[str, str], timeout: float | None, merge_output: bool = True
    ) -> Completed:
        """Run `args` (a list, or a shell string) in `cwd`; never raises for the command's own failure."""
        shell = isinstance(args, str)
        argv = ["/bin/sh", "-c", args] if shell else list(args)
        tag = f"{self.session}/{next(self.counter)}"
        # The child's PWD is its own folder: the user's one points at the original project.
        env = {**env, "PWD": os.path.abspath(cwd), reaper.TAG: tag}
        self._start_watchdog()
        started = time.monotonic()
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            proc = self._spawn(argv, cwd, env, out, subprocess.STDOUT if merge_output else err)
            code: int | None = None
            try:
                code = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
            finally:
                self._end(proc, tag)
            out.seek(0)
            err.seek(0)
            decode = lambda b: b.decode("utf-8", "replace")  # noqa: E731
            done = Completed(code, decode(out.read()), decode(err.read()), time.monotonic() - started)
        if shell and code in (126, 127) and re.search(r"not found|Permission denied|cannot execute", done.tail):
            raise StartError(f"cannot start `{args}`: {done.tail.splitlines()[-1] if done.tail else code}")
        return done

    def _spawn(self, argv: list[str], cwd: Path, env: dict[str, str], out, err) -> subprocess.Popen:
        with self.lock:  # a stop from another thread either sees this process or prevents it
            if self.stopping:
                raise Stopped("verification stopped")
            try:
                proc = subprocess.Popen(
                    argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                    start_new_session=True,  # our Ctrl-C is not theirs; we stop the whole group ourselves
                )  # fmt: skip
            except OSError as exc:
                raise StartError(f"cannot start {argv[0]!r}: {exc.strerror or exc}") from None
            self.live.add(proc)
        return proc

    def _end(self, proc: subprocess.Popen, tag: str) -> None:
        """Stop what is left of the run: the command when it timed out or we were interrupted, and
        whatever it started that is still running (the test suite is over: nothing may outlive it)."""
        reaper.stop({proc.pid}, tag, GRACE)
        proc.wait()
        with self.lock:
            self.live.discard(proc)

    def stop(self) -> None:
        """Stop every running command and start no other (Ctrl-C, SIGTERM, a failure in a worker)."""
        with self.lock:
            self.stopping = True
            running = set(self.live)
        if running:
            reaper.stop({p.pid for p in running}, self.session, GRACE)

    def close(self) -> None:
        """At the end of the verification: nothing it started survives it, the watchdog included."""
        self.stop()
        reaper.stop(set(), self.session, GRACE)  # anything tagged that left its group
        if self.watchdog is not None:
            self.watchdog.stdin.close()  # it sweeps (nothing is left) and goes
            try:
                self.watchdog.wait(timeout=1)
            except subprocess.TimeoutExpired:  # a process forked from ours holds its stdin open
                self.watchdog.terminate()
                self.watchdog.wait()

    def _start_watchdog(self) -> None:
        with self.lock:
            if not self.watch or self.watchdog is not None or self.stopping:
                return
            try:
                self.watchdog = subprocess.Popen(
                    [sys.executable, "-I", reaper.__file__, self.session], stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                )  # fmt: skip
            except OSError:  # no interpreter to run it (an embedded Python): the rest still holds
                self.watch = False


def run(
    args: Sequence[str] | str, cwd: Path, env: dict[str, str], timeout: float | None, merge_output: bool = True
) -> Completed:
    """One command outside a verification's `Processes` (no watchdog)."""
    return Processes(watch=False).run(args, cwd, env, timeout, merge_output)


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
