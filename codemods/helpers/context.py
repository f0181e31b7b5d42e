"""What a codemod may know beyond the tree; plain data, with no libcst import (the engine builds
one for every file, parsed or not)."""

from __future__ import annotations

from dataclasses import dataclass, field

from codemods.helpers.facts import RepoFacts
from codemods.versions import NEWEST, Version


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
