"""TM902 empty-cache-without-del, before parsing: its trigger regexes and gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from codemods.gates import Gate


def triggers() -> tuple[str, ...]:
    return (r"\bempty_cache\b",)


GATE = Gate(sites=(r"\bdel\b",))
