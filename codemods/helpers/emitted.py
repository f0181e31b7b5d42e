"""Which torch symbols a text uses, and which of them its target torch lacks (CPython `ast`).

A symbol is a qualified name the module reaches through its imports — the longest dotted chain
(`torch.amp.GradScaler`, whatever `torch` or `amp` is imported as), a name an import statement
binds (`from torch.amp import GradScaler` fails on import where the name is missing), or a
keyword argument of a torch callable (`torch.load(weights_only)`). Comparing a rewrite's output
with its input this way tells what the rewrite asked of torch: the output guard
(engine/name_guard.py) drops a codemod's change that uses a symbol newer than the target, and the
tests hold every fixture and corpus output to the same rule. No libcst import.
"""

from __future__ import annotations

import ast
from collections import Counter
from typing import Iterable

from codemods.helpers.facts import import_aliases
from codemods.helpers.scan import ast_dotted
from codemods.versions import NEWEST, Version, needed

ROOTS = frozenset({"torch", "torchvision", "functorch"})


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> the torch module or object it was imported as, from every import of the
    module (also those inside functions: lazy imports are common in old code)."""
    aliases = import_aliases(ast.walk(tree))
    return {local: full for local, full in aliases.items() if local != "*" and full.partition(".")[0] in ROOTS}


def symbols(tree: ast.Module) -> Counter[str]:
    """Every torch symbol `tree` uses, with how often."""
    return Counter(symbol for symbol, _ in occurrences(tree))


def occurrences(tree: ast.Module) -> Iterable[tuple[str, int]]:
    """(symbol, line) for each use of a torch symbol in `tree`, in no particular order."""
    aliases = _aliases(tree)
    if not aliases:
        return
    inner: set[int] = set()  # Attribute nodes that are the `.value` of a longer chain
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.partition(".")[0] in ROOTS:
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.module and not node.level and node.module.partition(".")[0] in ROOTS:
                for alias in node.names:
                    yield (node.module if alias.name == "*" else f"{node.module}.{alias.name}"), node.lineno
        elif isinstance(node, ast.Attribute):
            inner.add(id(node.value))
            if id(node) in inner:
                continue
            qualified = _qualified(node, aliases)
            if qualified is not None:
                yield qualified, node.lineno
        elif isinstance(node, ast.Name) and id(node) not in inner and isinstance(node.ctx, ast.Load):
            qualified = aliases.get(node.id)
            if qualified is not None:
                yield qualified, node.lineno
        if isinstance(node, ast.Call):
            callee = _qualified(node.func, aliases)
            if callee is not None:
                for keyword in node.keywords:
                    if keyword.arg is not None:
                        yield f"{callee}({keyword.arg})", node.lineno


def _qualified(expr: ast.AST, aliases: dict[str, str]) -> str | None:
    name = ast_dotted(expr)
    if name is None:
        return None
    head, _, rest = name.partition(".")
    target = aliases.get(head)
    if target is None:
        return None
    return f"{target}.{rest}" if rest else target


def too_new(tree: ast.Module, target: Version) -> list[tuple[str, Version, int]]:
    """(symbol, the torch it needs, line) for each use in `tree` of a symbol newer than `target`."""
    if target >= NEWEST:
        return []
    found = []
    for symbol, line in occurrences(tree):
        version = needed(symbol)
        if version is not None and version > target:
            found.append((symbol, version, line))
    return sorted(found, key=lambda item: item[2])
