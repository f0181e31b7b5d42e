"""The cycle collector, paused while one file is processed.

Parsing a file allocates hundreds of thousands of objects that live until the file is done (its
libcst tree, its `ast`s), and CPython's cycle collector runs every few hundred allocations: as
the heap grows it re-examines every live object again and again, the trees and the modules
imported at start-up alike. On legacy-dense code that was a fifth of the run. The objects of one
file are freed by reference counting once it is done (the engine keeps no reference cycles:
engine/walk.py dispatches through unbound functions, name_guard releases pyflakes' cycles), so
the collector is paused for the file and run once at its end, over what the file allocated and
still holds (generation 0), which frees whatever cycles it left.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause automatic cycle collection for the block; collect its young objects at the end.
    Nested or already-disabled: leaves the collector as it found it."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(0)
