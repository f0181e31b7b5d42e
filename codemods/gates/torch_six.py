"""TM007 torch-six, before parsing: its trigger regexes (no libcst; see gates/__init__.py)."""

from __future__ import annotations


def triggers() -> tuple[str, ...]:
    return (r"_six\b",)  # a literal first: `re` scans for it fast
