"""Ctrl-C during a run: finish the files in progress, then stop and say which were rewritten.

A file is only ever replaced whole (engine/writer.py), so stopping between files leaves every
file either as it was or fully migrated; what a caller also needs is the exact list of the
rewritten ones, which a KeyboardInterrupt raised anywhere would lose.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

from codemods.results import FileResult


class Interrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C; `results` are the files it finished (written, in write mode)."""

    def __init__(self, results: Sequence[FileResult]) -> None:
        super().__init__("interrupted")
        self.results = list(results)


class StopFlag:
    """Whether Ctrl-C asked the run to stop; `when_requested` callbacks run from the handler."""

    def __init__(self) -> None:
        self.requested = False
        self._callbacks: list[Callable[[], None]] = []

    def when_requested(self, callback: Callable[[], None]) -> None:
        self._callbacks.append(callback)

    def request(self) -> None:
        self.requested = True
        for callback in self._callbacks:
            callback()


@contextmanager
def deferred_interrupt() -> Iterator[StopFlag]:
    """While inside, a first Ctrl-C only sets the flag (work stops at the next file boundary);
    a second one raises KeyboardInterrupt at once.

    Only in the main thread and only over Python's default handler: an application that
    handles SIGINT itself keeps doing so.
    """
    flag = StopFlag()
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.default_int_handler:
        yield flag
        return

    def on_sigint(signum, frame) -> None:
        if flag.requested:
            signal.signal(signal.SIGINT, previous)
            raise KeyboardInterrupt
        flag.request()

    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield flag
    finally:
        signal.signal(signal.SIGINT, previous)


def ignore_sigint() -> None:
    """Pool workers' initializer: a terminal's Ctrl-C reaches the whole process group, and the
    main process alone decides when to stop (a worker would otherwise die mid-chunk)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
