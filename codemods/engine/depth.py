"""A second try, on a deep stack, for a file nested deeper than the default recursion limit allows.

libcst's trees, and the engine's and codemods' walks over them, take a few Python frames per
level of nesting; CPython compiles code nested deeper than its default limit of 1000 frames lets
those walks go (99 nested blocks; an operator chain or call nest hundreds deep). Such a file is
migrated, not failed with a RecursionError: the pipeline runs it again in a thread with a large
stack and a high recursion limit. Not in the main thread: CPython's compiler and parser bound
their C recursion by the same limit, and the main thread's stack is too small for a high one.
Other files never pay for it.
"""

from __future__ import annotations

import sys
import threading
from typing import Callable, TypeVar

from codemods.results import Problem

T = TypeVar("T")

FRAMES = 50_000
STACK = 512 * 2**20  # address space only: pages are used as the recursion reaches them


def overflowed(problem: Problem | None) -> bool:
    """Whether a file failed because a walk ran out of recursion."""
    return problem is not None and "RecursionError" in problem.reason


def on_deep_stack(function: Callable[..., T], *args, **kwargs) -> T:
    """`function(*args, **kwargs)` in a thread with a STACK-byte stack and a recursion limit of
    FRAMES: its result, or the exception it raised."""
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = function(*args, **kwargs)
        except BaseException as exc:  # handed to the caller as it is
            outcome["error"] = exc

    limit = sys.getrecursionlimit()
    previous = threading.stack_size(STACK)
    try:
        sys.setrecursionlimit(max(limit, FRAMES))
        thread = threading.Thread(target=run, name="torch-migrate-deep-file", daemon=True)
        thread.start()
        thread.join()
    finally:
        threading.stack_size(previous)
        sys.setrecursionlimit(limit)
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]
