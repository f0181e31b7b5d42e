"""TM004 amp-namespace, before parsing: its trigger regexes (no libcst; see gates/__init__.py)."""

from __future__ import annotations


def triggers() -> tuple[str, ...]:
    return (
        r"\b(?:cuda|cpu)\.amp\b",
        r"\bfrom\s+torch\.(?:cuda|cpu)\s+import\b",
        r"\bimport\s+torch\.(?:cuda|cpu)\s+as\b",
    )
