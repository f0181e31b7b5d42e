"""Torch versions as the tool reasons about them: a release is (major, minor), `"1.13"`.

A migration has a *target*: the torch release its output must run on (`--target-torch`). Every
symbol a codemod can emit has a minimum torch (codemods/data/torch_minimums.json); a rewrite whose
output needs a newer torch than the target is held back with a finding (codemods/base.py).
Plain data and no libcst import: the CLI and the config read this before anything is parsed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache

Version = tuple[int, int]

NEWEST: Version = (2, 13)
"""The newest torch the tables know; the target when nothing says otherwise."""

OLDEST: Version = (1, 0)
"""The oldest target accepted (the tables are checked against torch 1.13.1; older targets hold
back more, by the same minimums)."""

# Every torch release line (major, minor) from 0.1 to NEWEST: what a requirement such as
# `torch>=1.8,<2` can resolve to.
RELEASES: tuple[Version, ...] = (
    *((0, minor) for minor in range(1, 5)),
    *((1, minor) for minor in range(0, 14)),
    *((2, minor) for minor in range(0, NEWEST[1] + 1)),
)

_VERSION = re.compile(r"\s*(\d+)\.(\d+)(?:\.\d+)?(?:[.+\-a-z0-9]*)?\s*", re.IGNORECASE)


def parse_version(text: str) -> Version:
    """`"1.13"`, `"1.13.1"` or `"2.0.0+cu117"` as (1, 13); a ValueError that says what is accepted."""
    match = _VERSION.fullmatch(str(text))
    if match is None:
        raise ValueError(f"{text!r} is not a torch version (expected MAJOR.MINOR, e.g. 1.13)")
    return int(match.group(1)), int(match.group(2))


def target_version(text: str) -> Version:
    """A `--target-torch` value: a version between OLDEST and NEWEST, else a ValueError."""
    version = parse_version(text)
    if not OLDEST <= version <= NEWEST:
        raise ValueError(
            f"torch {format_version(version)} is outside the releases this tool knows"
            f" ({format_version(OLDEST)} to {format_version(NEWEST)})"
        )
    return version


def format_version(version: Version) -> str:
    return f"{version[0]}.{version[1]}"


@dataclass(frozen=True)
class Target:
    """The torch a migration's output must run on, and where that came from (for the summary)."""

    version: Version = NEWEST
    source: str = "the newest release the tables know"

    def __str__(self) -> str:
        return f"torch {format_version(self.version)} ({self.source})"


@lru_cache(maxsize=None)
def minimums() -> dict[str, Version]:
    """Symbol -> the first torch release that has it, for everything a codemod can emit.

    A key is a qualified name (`torch.amp.GradScaler`), or a callable with one keyword argument
    (`torch.load(weights_only)`) for a keyword a rewrite adds.
    """
    from codemods.gates import data_table  # the one reader of codemods/data/ (no importlib.resources at start-up)

    raw = data_table("torch_minimums.json")
    return {symbol: parse_version(version) for symbol, version in raw["minimums"].items()}


def needed(symbol: str) -> Version | None:
    """The torch `symbol` needs, by the table: its own entry, else that of the longest prefix
    that has one (`torch.linalg.solve` needs at least what `torch.linalg` needs, `f(kw)` what `f`
    needs)."""
    table = minimums()
    found = table.get(symbol)
    if found is not None:
        return found
    head, _, keyword = symbol.partition("(")
    parts = head.split(".")
    # a keyword without an entry of its own needs what its callable needs
    for end in range(len(parts) if keyword else len(parts) - 1, 0, -1):
        found = table.get(".".join(parts[:end]))
        if found is not None:
            return found
    return None
