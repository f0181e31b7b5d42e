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
    """Line of the text being walked -> the codes a `# noqa` there silences (helpers/noqa.py).
    The engine reads them from the original file and moves them to the lines they are on in
    each codemod's input, after earlier codemods added or removed lines (engine/positions.py)."""
    origin: str | None = field(default=None, repr=False, compare=False)
    """The engine's: the file's text as read, whose lines every reported position and every
    `# noqa` refers to. A codemod reads its own input (`source`), never this."""
    target_torch: Version = NEWEST
    """The torch the output must run on (codemods/versions.py): a rewrite that needs a newer
    one is held back with a finding."""
    era: Era | None = None
    """The torch the repository's code was written for (codemods/era.py: `detect_era`), for the
    codemods whose rewrite depends on a default of that era (TM015); None: not detected (TM015
    then reads the file's own idioms)."""
