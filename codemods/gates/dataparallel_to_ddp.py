"""TM103 dataparallel-to-ddp, before parsing: its trigger regexes and gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from codemods.gates import Gate


def triggers() -> tuple[str, ...]:
    return (r"\bDataParallel\b",)


GATE = Gate(uses_repo_facts=True)
