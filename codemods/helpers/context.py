"""What a codemod may know beyond the tree; plain data, with no libcst import (the engine builds
one for every file, parsed or not)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from codemods.helpers.facts import RepoFacts
from codemods.versions import NEWEST, Version

if TYPE_CHECKING:
    from codemods.era import Era


@dataclass(frozen=True)
class FileContext:
    """What a codemod may know beyond the tree: the file, the options, whole-repo facts."""

    path: str = "<string>"
    device_name: str = "device"
    facts: RepoFacts = field(default_factory=RepoFacts)
    noqa: dict[int, frozenset[str]] = field(default_factory=dict)
    target_torch: Version = NEWEST
    """The torch the output must run on (codemods/versions.py): a rewrite that needs a newer
    one is held back with a finding."""
    era: Era | None = None
    """The torch the repository's code was written for (codemods/era.py: `detect_era`), for the
    codemods whose rewrite depends on a default of that era (TM015); None: not detected (TM015
    then reads the file's own idioms)."""
