"""TM904 explicit-cuda-index, before parsing: its trigger regexes (no libcst; see gates/__init__.py)."""

from __future__ import annotations


def triggers() -> tuple[str, ...]:
    return (r"\.cuda\s*\(\s*[^)\s]",)
