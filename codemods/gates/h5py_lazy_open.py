"""TM201 h5py-lazy-open, before parsing: its trigger regexes and gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from codemods.gates import Gate
from codemods.helpers.scan import Scan


H5_FILE = "h5py.File"


def triggers() -> tuple[str, ...]:
    # A bare literal: `re` finds it with a fast substring search (a leading `\b` is ~100x slower).
    return (r"h5py",)


def may_act(scan: Scan, words, facts) -> bool:
    return scan.calls(words, {H5_FILE})  # every change and finding is about an opened file


GATE = Gate(uses_repo_facts=True, may_act=may_act)
