"""TM003 scalar-item, before parsing: its trigger regexes (no libcst; see gates/__init__.py)."""

from __future__ import annotations


def triggers() -> tuple[str, ...]:
    return (r"\.data\s*(?:\[\s*0\s*\]|\.(?:cpu|numpy)\s*\()", r"\.cpu\s*\(\s*\)\s*\.data\s*[\[.]")
