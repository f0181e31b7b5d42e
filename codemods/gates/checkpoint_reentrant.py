"""TM005 checkpoint-reentrant, before parsing: its trigger regexes (no libcst; see gates/__init__.py)."""

from __future__ import annotations


def triggers() -> tuple[str, ...]:
    # Only a file that imports torch's checkpoint module can call it; the bare word "checkpoint"
    # is in most training scripts (saving one), which made this fire on 165 corpus files.
    return (r"utils\.checkpoint", r"utils\s+import\s+\(?[^)\n]*\bcheckpoint")
