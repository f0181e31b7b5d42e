"""TM013 removed-keywords, before parsing: its trigger regexes (no libcst; see gates/__init__.py)."""

from __future__ import annotations


def triggers() -> tuple[str, ...]:
    # The old keywords themselves: a file without one has nothing to rename.
    return (r"\bretain_variables\b", r"\bgrad_variables\b", r"\bonly_inputs\b", r"\bvariables\s*=")
