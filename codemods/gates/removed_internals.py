"""TM008 removed-internals, before parsing: its trigger regexes (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from functools import lru_cache

from codemods.gates import data_table
from codemods.gates.python_compat import _attribute_or_import


@lru_cache(maxsize=None)
def table() -> dict:
    return data_table("removed_internals.json")


def triggers() -> tuple[str, ...]:
    t = table()
    names = {k.rsplit(".", 1)[1] for part in ("renames", "helpers", "removed") for k in t[part]}
    return (
        *_attribute_or_import("|".join(sorted(names))),
        # Type-name tests: only a comparison of the name can be one.
        r"__class__\s*\.\s*__name__\s*(?:[!=]=|(?:not\s+)?in\b)",
        r"type\([^()]*\)\s*\.\s*__name__\s*(?:[!=]=|(?:not\s+)?in\b)",
        r"\.type\(\)",
    )
