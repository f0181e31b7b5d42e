"""Stopping a run: Ctrl-C or SIGTERM ends it between files and says which were rewritten; the
pool's workers stop with it, and die with it when it is killed.

A file is only ever replaced whole (engine/writer.py), so stopping between files leaves every
file either as it was or fully migrated; what a caller also needs is the exact list of the
rewritten ones, which a KeyboardInterrupt raised anywhere would lose.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

from codemods.results import FileResult

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


class Interrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C or SIGTERM (`signum`); `results` are the files it finished
    (written, in write mode)."""

    def __init__(self, results: Sequence[FileResult], signum: int = signal.SIGINT) -> None:
        super().__init__("interrupted")
        self.results = list(results)
        self.signum = signum


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the run has no file boundary to wait for (discovery, the facts pass)."""

    signum = signal.SIGTERM


class Halted(BaseException):
    """A pool worker stops in the middle of its chunk: the run was stopped, or its main process is
    gone. Not an `Exception`: no handler of a file's own failures may take it for one."""


class StopFlag:
    """Whether a signal asked the run to stop (`signum`: which); `when_requested` callbacks run
    from the handler."""

    def __init__(self) -> None:
        self.requested = False
        self.signum = signal.SIGINT
        self._callbacks: list[Callable[[], None]] = []

    def when_requested(self, callback: Callable[[], None]) -> None:
        self._callbacks.append(callback)

    def request(self, signum: int = signal.SIGINT) -> None:
        self.requested, self.signum = True, signum
        for callback in self._callbacks:
            callback()


def _raise_terminated(signum, frame) -> None:
    raise Terminated


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM ends the work as Ctrl-C does (`Terminated`, a KeyboardInterrupt)
    instead of killing the process where it stands: `finally` blocks run, a run lists what it
    wrote. Only in the main thread and over the default action."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


# The handlers `deferred_interrupt` may stand in for: Python's own, and the ones above.
_DEFAULTS = {signal.SIGINT: (signal.default_int_handler,), signal.SIGTERM: (signal.SIG_DFL, _raise_terminated)}


@contextmanager
def deferred_interrupt() -> Iterator[StopFlag]:
    """While inside, a first Ctrl-C or SIGTERM only sets the flag (work stops at the next file
    boundary); a second one raises KeyboardInterrupt (`Terminated` for SIGTERM) at once.

    Only in the main thread and only over the default handlers: an application that handles
    the signal itself keeps doing so (and one that ignores SIGINT, as `nohup` asks, too).
    """
    flag = StopFlag()
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return
    previous = {signum: signal.getsignal(signum) for signum in _DEFAULTS}
    taken = [signum for signum, handler in previous.items() if handler in _DEFAULTS[signum]]

    def restore() -> None:
        for signum in taken:
            signal.signal(signum, previous[signum])

    def on_signal(signum, frame) -> None:
        if flag.requested:
            restore()
            raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt
        flag.request(signum)

    for signum in taken:
        signal.signal(signum, on_signal)
    try:
        yield flag
    finally:
        restore()


def ignore_sigint() -> None:
    """A terminal's Ctrl-C reaches the whole process group, and the main process alone decides
    when to stop (a worker would otherwise die mid-item)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class _Worker:
    """This process's part in a pool: set by `start_worker`, None elsewhere."""

    parent: int | None = None
    halt = None  # a shared flag the main process sets when the run stops
    busy = False  # inside a file: SIGTERM from the main process stops it there
    wrote = False  # the file in progress has been written


def start_worker(parent: int, halt=None) -> None:
    """A pool worker's initializer: leave Ctrl-C to the main process `parent`, and die with it.

    With `halt` (the pipeline's workers): `before_write` refuses once it is set, and SIGTERM from
    the main process stops the file in progress (`Halted`) instead of killing the worker."""
    ignore_sigint()
    _Worker.parent, _Worker.halt = parent, halt
    # (not the handler forked with it from the main process, which would raise in an idle worker)
    signal.signal(signal.SIGTERM, _on_sigterm if halt is not None else signal.SIG_DFL)
    die_with_parent(parent)


def die_with_parent(parent: int) -> None:
    """Linux: have the kernel send this process SIGTERM when `parent` dies (a run killed with
    SIGKILL leaves no worker writing files); elsewhere `before_write` checks before each write."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # it died before the line above took effect
        os._exit(1)


def _on_sigterm(signum, frame) -> None:
    if os.getppid() != _Worker.parent:
        os._exit(1)  # the run is gone: no one to report to, and what was written is whole
    if not halted():
        # not the run's stop: the pool ends its workers so when one died (a broken pool), and
        # nothing would read a result. SIGTERM's own action (held while a file is replaced).
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
    if _Worker.busy:
        raise Halted
    # idle after the run's stop: the main process ends the pool itself


def halted() -> bool:
    """In a pool worker: whether the run stopped (or its main process is gone)."""
    if _Worker.parent is None:
        return False
    return os.getppid() != _Worker.parent or bool(_Worker.halt is not None and _Worker.halt.value)


def before_write() -> None:
    """Called just before a file is replaced: in a pool worker of a run that stopped, `Halted`."""
    if halted():
        raise Halted


def wrote() -> None:
    """Called once a file is replaced (with SIGTERM held): the worker reports it even if halted."""
    _Worker.wrote = True


@contextmanager
def working() -> Iterator[None]:
    """Around one file in a pool worker: SIGTERM from the main process raises `Halted` inside;
    `written()` then says whether the file had been written."""
    _Worker.busy, _Worker.wrote = True, False
    try:
        yield
    finally:
        _Worker.busy = False


def written() -> bool:
    """Whether the last file `working` was around had been written."""
    return _Worker.wrote


def leave_if_orphaned() -> None:
    """After `Halted`: a worker whose main process is gone ends at once (nothing reads its results)."""
    if _Worker.parent is not None and os.getppid() != _Worker.parent:
        os._exit(1)
