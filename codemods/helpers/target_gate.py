"""The per-rewrite half of the target torch (codemods/versions.py): what a replacement asks of torch.

`MigrationCodemod.rewrite()` holds a rewrite back, with a finding, when its replacement uses a
torch symbol (helpers/emitted.py's sense: a qualified dotted name, a name an import binds, or a
keyword of a torch callable) that its original did not and that the file's target torch lacks.
Imports queued for a held-back rewrite are dropped the same way. Only consulted when the target is
older than the newest release, so a default run never pays for it.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Iterable

import libcst as cst

from codemods.helpers.import_edits import ImportItem
from codemods.helpers.names import dotted
from codemods.versions import Version, minimums, needed
from codemods.engine.traverse import traverse

Resolve = Callable[[cst.BaseExpression], "str | None"]


class _Symbols(cst.CSTVisitor):
    def __init__(self, resolve: Resolve) -> None:
        self.resolve = resolve
        self.found: set[str] = set()

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if dotted(node) is None:
            return True  # `f(x).y`: the chain starts in a call, whose parts are visited
        qualified = self.resolve(node)
        if qualified is not None:
            self.found.add(qualified)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        qualified = self.resolve(node)
        if qualified is not None:
            self.found.add(qualified)

    def visit_Arg(self, node: cst.Arg) -> bool:
        traverse(node.value, self)  # not the keyword's own Name
        return False

    def visit_Call(self, node: cst.Call) -> None:
        callee = self.resolve(node.func)
        if callee is not None:
            self.found.update(f"{callee}({arg.keyword.value})" for arg in node.args if arg.keyword is not None)

    def visit_Import(self, node: cst.Import) -> bool:
        self.found.update(name for alias in node.names if (name := dotted(alias.name)) is not None)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        module = dotted(node.module) if node.module is not None and not node.relative else None
        if module is not None and not isinstance(node.names, cst.ImportStar):
            self.found.update(f"{module}.{name}" for alias in node.names if (name := dotted(alias.name)) is not None)
        return False

    def visit_Param(self, node: cst.Param) -> bool:
        if node.default is not None:
            traverse(node.default, self)
        if node.annotation is not None:
            traverse(node.annotation, self)
        return False


def _nodes(node: cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel) -> Iterable[cst.CSTNode]:
    if isinstance(node, cst.FlattenSentinel):
        return node.nodes
    if isinstance(node, cst.CSTNode):
        return (node,)
    return ()


def symbols(node, resolve: Resolve) -> set[str]:
    visitor = _Symbols(resolve)
    for part in _nodes(node):
        traverse(part, visitor)
    return visitor.found


def newest_need(original: cst.CSTNode, replacement, resolve: Resolve, target: Version) -> tuple[str, Version] | None:
    """The symbol `replacement` uses and `original` did not that needs the newest torch above
    `target`, with that torch; None when the target has everything the replacement uses."""
    worst: tuple[str, Version] | None = None
    for symbol in sorted(symbols(replacement, resolve) - symbols(original, resolve)):
        version = needed(symbol)
        if version is not None and version > target and (worst is None or version > worst[1]):
            worst = (symbol, version)
    return worst


def queued_symbol(item: ImportItem) -> str | None:
    """The torch symbol an import the codemod queued would bind (None for a relative import)."""
    if item.relative:
        return None
    return f"{item.module_name}.{item.obj_name}" if item.obj_name else item.module_name


def resolver(imports_resolve: Resolve, queued: Iterable[ImportItem]) -> Resolve:
    """`imports_resolve` (the module's import table), then the imports the codemod queued so far,
    then a bare `torch.…` chain (a codemod that emits `torch.x` makes sure `torch` is imported)."""
    bound: dict[str, str] = {}
    for item in queued:
        if item.relative:
            continue
        if item.obj_name:
            bound[item.alias or item.obj_name] = f"{item.module_name}.{item.obj_name}"
        elif item.alias:
            bound[item.alias] = item.module_name
        else:
            bound.setdefault(item.module_name.partition(".")[0], item.module_name.partition(".")[0])

    def resolve(expr: cst.BaseExpression) -> str | None:
        found = imports_resolve(expr)
        if found is not None:
            return found
        name = dotted(expr)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        base = bound.get(head, "torch" if head == "torch" else None)
        if base is None:
            # a bare name whose import the codemod queues after this rewrite: the one table
            # entry it can be (`consume_prefix_in_state_dict_if_present`), if only one
            return None if rest else _by_last_name().get(head)
        return f"{base}.{rest}" if rest else base

    return resolve


@lru_cache(maxsize=1)
def _by_last_name() -> dict[str, str]:
    """The table's symbols by their last name, where that name is the last of only one."""
    seen: dict[str, list[str]] = {}
    for symbol in minimums():
        if "(" not in symbol:
            seen.setdefault(symbol.rpartition(".")[2], []).append(symbol)
    return {name: symbols[0] for name, symbols in seen.items() if len(symbols) == 1}
