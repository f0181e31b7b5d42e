"""Retiring the imports a rewrite left unused, for the name guard (engine/name_guard.py).

A rewrite that removes the last use of an import (`np.float` -> `float`, where `np` was used
nowhere else) leaves the import unused. Rather than dropping the codemod's every rewrite of the
file, the guard removes such an import with the codemods' own remover (helpers/import_remover.py:
only while nothing in the module spells the name), unless it is a relative import: the
project's own module may be imported for what importing it does (registering classes, setting
up logging), which the program would lose. An absolute import's module is still imported by
whatever else imports it; importing a library (numpy, collections, torch) for no name is not
what old code meant, and the design's rule is that no rewrite leaves an import unused.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterable

import libcst as cst

from codemods.helpers.import_remover import UsedNamesRemover
from codemods.engine.name_guard import Breakage, Profile, untolerated, profile, tolerated

if TYPE_CHECKING:
    from codemods.engine.name_guard import Replay


def import_at(tree: ast.Module, breakage: Breakage) -> tuple[str, str | None, str | None] | None:
    """How the import statement an unused-import `breakage` is about imports its name, as
    helpers/import_remover.py takes it: (module, name or None, alias or None); None for a relative
    import (the project's own module, which may be imported for what it does when imported)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and node.lineno <= breakage.line <= (node.end_lineno or node.lineno):
            if isinstance(node, ast.ImportFrom) and (node.level or not node.module):
                return None
            for alias in node.names:
                if isinstance(node, ast.Import) and (alias.asname or alias.name.partition(".")[0]) == breakage.name:
                    return (alias.name, None, alias.asname)
                if isinstance(node, ast.ImportFrom) and (alias.asname or alias.name) == breakage.name:
                    return (node.module, alias.name, alias.asname)
    return None


def retirable(breakage: Breakage, tree: ast.Module) -> bool:
    """Whether `breakage` is an import left unused that can go (helpers/import_remover.py)."""
    return breakage.kind == "unused-import" and import_at(tree, breakage) is not None


def retirable_all(after: Profile, base: Profile, rewrote: Iterable[str]) -> bool:
    """Whether every new breakage of `after` is an import its rewrites left unused that can go."""
    codes = list(rewrote)
    return all(retirable(b, after.tree) for b in after.new_against(base) if not tolerated(b, codes))


def retired(code: str, after: Profile, base: Profile, rewrote: Iterable[str], replay: Replay) -> str | None:
    """`code` without the imports that its rewrites left unused (an import is retired, as a
    codemod's `remove_unused_import` would, not its module's whole migration dropped); None when
    one of them stays (the remover sees a use pyflakes does not)."""
    codes = list(rewrote)
    unused = [b for b in after.new_against(base) if b.kind == "unused-import" and not tolerated(b, codes)]
    if not unused:
        return code
    forms = [form for form in (import_at(after.tree, b) for b in unused) if form is not None]
    text = UsedNamesRemover(forms).transform(cst.parse_module(code)).code
    now = profile(text, replay.file.path, target=replay.file.target_torch, facts=replay.file.facts)
    if untolerated(now, base, codes) is not False or replay.compile_error(text, replay.file.path) is not None:
        return None
    return text
