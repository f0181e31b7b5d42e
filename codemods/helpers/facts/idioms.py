"""The collector of the era-telling idioms each file uses (codemods/era.py), so that the era a
run reports comes from the facts pass (and its cache), not from reading every file again."""

from __future__ import annotations

from codemods.helpers.facts.collector import Collector, ParsedFile, Part


def _reads(text: str) -> bool:
    """The files the other facts read: one that imports and names torch or star-imports, or
    defines a class, or names a DataParallel or a DataLoader (era detection was measured on
    exactly these files; a file outside them adds no idiom)."""
    return (
        "import" in text and ("torch" in text or "import *" in text)
        or "class " in text
        or "DataParallel" in text
        or "DataLoader" in text
    )


def _idiom_lines(file: ParsedFile) -> Part:
    from codemods.era import idiom_lines  # era reads pins' tables: only once a file is read

    return [[name, line] for name, line in idiom_lines(file.text)]


IDIOMS = Collector(
    name="idioms",
    summary="`idiom\\tpath\\tline` for the first use of each era-telling idiom in each file (codemods/era.py).",
    reads=_reads,
    collect=_idiom_lines,
    merge=lambda parts: frozenset(f"{name}\t{path}\t{line}" for path, lines in parts for name, line in lines),
)
