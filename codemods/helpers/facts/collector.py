"""What one repository fact is made of: a `Collector`, and the `ParsedFile` it reads.

A collector says which files it needs (`reads`, a test on the text that spares the parse), what
it takes from one file (`collect`: a part, plain JSON data) and how the files' parts make the
repository's value (`merge`: a frozenset of strings, like every fact). The parts are what the
cache keeps per file, so a run after an edit re-reads only the edited files.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable, Iterable, Sequence

from codemods.helpers.scan import ast_dotted, ast_statements

Part = Any
"""One file's part of a fact: JSON data only (None, bools, ints, strings, lists, dicts with
string keys), so that what `collect` returns is exactly what the cache gives back."""


@dataclass(frozen=True)
class Collector:
    """One cross-file fact: `RepoFacts.<name>` is `merge` of the `collect` parts of the files
    that `reads` lets through (and that parse)."""

    name: str
    """The `RepoFacts` attribute it fills, and its key in the cache."""
    summary: str
    """What the fact holds, in a sentence (RepoFacts' docstring lists them)."""
    reads: Callable[[str], bool]
    """Whether a file's text may hold anything for it; a file no collector reads is not parsed."""
    collect: Callable[[ParsedFile], Part]
    """One file's part (None: it adds nothing)."""
    merge: Callable[[Sequence[tuple[str, Part]]], frozenset[str]]
    """The repository's value from `(path, part)` of every file with a part, in the files' order."""


def mentions(*words: str) -> Callable[[str], bool]:
    """A `reads` test: the text holds one of `words` (a plain `in`: most files lack them)."""

    def reads(text: str) -> bool:
        return any(word in text for word in words)

    reads.__qualname__ = f"mentions{words!r}"
    return reads


class ParsedFile:
    """One file as the collectors read it: its path (as the engine names it), its text and its
    `ast`, with what several collectors need worked out once."""

    def __init__(self, path: str, text: str, tree: ast.Module) -> None:
        self.path = path
        self.text = text
        self.tree = tree

    @cached_property
    def statements(self) -> list[ast.AST]:
        return ast_statements(self.tree)

    @cached_property
    def aliases(self) -> dict[str, str]:
        """Local name -> the dotted name its import binds (`import_aliases` of the file)."""
        return import_aliases(self.statements)

    def resolve(self, name: str) -> str:
        """A dotted name as the file's imports spell it out (`nn.Module` -> `torch.nn.Module`)."""
        return resolve(name, self.aliases)

    def qualified(self, expr: ast.AST) -> str | None:
        """The resolved dotted name of a plain `a.b.c` expression; None for anything else."""
        dotted = ast_dotted(expr)
        return None if dotted is None else self.resolve(dotted)

    @cached_property
    def class_bases(self) -> list[list]:
        """`[name, [resolved base, ...]]` of each class the file defines, anywhere in it, in the
        order `ast_statements` finds them (bases sorted: a part is plain data)."""
        found = []
        for node in self.statements:
            if isinstance(node, ast.ClassDef):
                named = (ast_dotted(base) for base in node.bases)
                found.append([node.name, sorted({self.resolve(d) for d in named if d is not None})])
        return found


def import_aliases(statements: Iterable[ast.AST]) -> dict[str, str]:
    """Local name -> the dotted name its import binds, over the import statements among
    `statements` (relative imports left out; a star import under the key `*`)."""
    aliases: dict[str, str] = {}
    for node in statements:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    aliases.setdefault(alias.name.split(".")[0], alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def resolve(name: str, aliases: dict[str, str]) -> str:
    head, _, rest = name.partition(".")
    target = aliases.get(head)
    if target is None:
        return name
    return f"{target}.{rest}" if rest else target


def bases_by_class(parts: Sequence[tuple[str, Part]]) -> dict[str, set[str]]:
    """Class name (bare, repository-wide) -> every base any class of that name names, from
    parts that are `ParsedFile.class_bases`."""
    bases: dict[str, set[str]] = {}
    for _, classes in parts:
        for name, named in classes:
            bases.setdefault(name, set()).update(named)
    return bases


def closure(bases: dict[str, set[str]], is_root: Callable[[str], bool]) -> set[str]:
    """Classes whose bases reach a root, through any chain of repo classes (by bare name)."""
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, parents in bases.items():
            if name in found:
                continue
            if any(is_root(p) or p.rsplit(".", 1)[-1] in found for p in parents):
                found.add(name)
                changed = True
    return found
