"""TM000 legacy-syntax, before parsing: its trigger regexes and gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from codemods.gates import Gate


def triggers() -> tuple[str, ...]:
    return (r"\basync\b",)


GATE = Gate(pre_parse=True)
