"""Adding imports after a codemod, as libcst's AddImportsVisitor decides it, at the cost of
reading only the module's leading import block (all it ever edits) and walking only import
statements.

What is added, where, in which order and with which blank lines is libcst 1.x's behaviour,
written again for the one context we run it in (no package name: a relative import is never
resolved); tests/test_engine_speed.py compares both on every fixture.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Sequence, Union

import libcst as cst
from libcst.helpers import get_absolute_module_from_package_for_import

from codemods.helpers.placement import holds_import, is_single_import

Statement = Union[cst.SimpleStatementLine, cst.BaseCompoundStatement]


@dataclass(frozen=True)
class ImportItem:
    """One import to add: `import module`, `import module as alias`, `from module import obj [as alias]`."""

    module_name: str
    obj_name: str | None = None
    alias: str | None = None
    relative: int = 0

    def __post_init__(self) -> None:
        if self.module_name is None:
            object.__setattr__(self, "module_name", "")
        elif self.module_name.startswith("."):
            bare = self.module_name.lstrip(".")
            object.__setattr__(self, "relative", self.relative + len(self.module_name) - len(bare))
            object.__setattr__(self, "module_name", bare)

    @property
    def module(self) -> str:
        return "." * self.relative + self.module_name

    def unpackaged(self) -> ImportItem:
        """What libcst makes of it without a package name: `import ..a` is `from .. import a`."""
        if self.relative and self.obj_name is None:
            return replace(self, module_name="", obj_name=self.module_name)
        return self


def skips_imports(node: cst.CSTNode) -> bool:
    """A statement line that holds no import statement: an import editor need not enter it."""
    return isinstance(node, cst.SimpleStatementLine) and not holds_import(node)


def _skip_first(module: cst.Module) -> bool:
    """A docstring or `__strict__ = ...` first: no import goes before it."""
    if not module.body or not isinstance(module.body[0], cst.SimpleStatementLine) or len(module.body[0].body) != 1:
        return False
    first = module.body[0].body[0]
    if isinstance(first, cst.Assign):
        return (
            len(first.targets) == 1
            and isinstance(first.targets[0].target, cst.Name)
            and first.targets[0].target.value == "__strict__"
        )
    return isinstance(first, cst.Expr) and isinstance(first.value, cst.SimpleString)


def absolute_module(node: cst.ImportFrom) -> str | None:
    """The absolute module of `from X import ...` (None for a relative one: no package is known)."""
    return get_absolute_module_from_package_for_import(None, node)


class _TopImports:
    """What the leading import block already imports (libcst's _GatherTopImportsBeforeStatements)."""

    def __init__(self, module: cst.Module) -> None:
        self.module_imports: set[str] = set()
        self.object_mapping: dict[str, set[str]] = {}
        self.module_aliases: dict[str, str] = {}
        self.alias_mapping: dict[str, list[tuple[str, str]]] = {}
        self.all_imports: list[cst.Import | cst.ImportFrom] = []
        for statement in module.body[1 if _skip_first(module) else 0 :]:
            if not is_single_import(statement):
                break
            self.all_imports.append(statement.body[0])
        for node in self.all_imports:
            if isinstance(node, cst.Import):
                self._import(node)
            else:
                self._import_from(node)

    def _import(self, node: cst.Import) -> None:
        for name in node.names:
            alias = name.evaluated_alias
            if alias is not None:
                self.module_aliases[name.evaluated_name] = alias
            else:
                self.module_imports.add(name.evaluated_name)

    def _import_from(self, node: cst.ImportFrom) -> None:
        module = absolute_module(node)
        if module is None:
            return
        if isinstance(node.names, cst.ImportStar):
            self.object_mapping[module] = set("*")
            return
        aliased = [(a.evaluated_name, a.evaluated_alias) for a in node.names if a.asname is not None]
        if aliased:
            self.alias_mapping.setdefault(module, []).extend(aliased)
        objects = {a.evaluated_name for a in node.names if a.asname is None}
        if objects:
            known = self.object_mapping.setdefault(module, set())
            if "*" in known:
                self.object_mapping[module] = set("*")
                return
            known.update(objects)


class TopImportsAdder(cst.CSTTransformer):
    """Adds the imports a module lacks to its leading import block, merging a `from X import`
    into an existing one of that block; reads that block only and walks import statements only."""

    def __init__(self, imports: Sequence[ImportItem]) -> None:
        super().__init__()
        for imp in imports:
            if imp.module == "__future__" and imp.obj_name is None:
                raise ValueError("Cannot import __future__ directly!")
            if imp.module == "__future__" and imp.alias is not None:
                raise ValueError("Cannot import __future__ objects with aliases!")
        imps = [imp.unpackaged() for imp in imports]
        self.module_imports: set[str] = {i.module for i in imps if i.obj_name is None and i.alias is None}
        from_imports = {i.module for i in imps if i.obj_name is not None and i.alias is None}
        self.module_mapping: dict[str, set[str]] = {
            module: {i.obj_name for i in imps if i.module == module and i.obj_name is not None and i.alias is None}
            for module in sorted(from_imports)
        }
        self.module_aliases: dict[str, str] = {i.module: i.alias for i in imps if i.obj_name is None and i.alias is not None}
        from_aliases = {i.module for i in imps if i.obj_name is not None and i.alias is not None}
        self.alias_mapping: dict[str, list[tuple[str, str]]] = {
            module: [
                (i.obj_name, i.alias) for i in imps if i.module == module and i.obj_name is not None and i.alias is not None
            ]
            for module in sorted(from_aliases)
        }
        self.all_imports: list[cst.Import | cst.ImportFrom] = []

    def visit_Module(self, node: cst.Module) -> None:
        have = _TopImports(node)
        self.all_imports = have.all_imports
        self.module_imports -= have.module_imports
        for module, alias in have.module_aliases.items():
            if module in self.module_aliases and self.module_aliases[module] == alias:
                del self.module_aliases[module]
        for module, aliases in have.alias_mapping.items():
            for pair in aliases:
                if module in self.alias_mapping and pair in self.alias_mapping[module]:
                    self.alias_mapping[module].remove(pair)
                    if not self.alias_mapping[module]:
                        del self.alias_mapping[module]
        for module, objects in have.object_mapping.items():
            if module not in self.module_mapping:
                continue
            if "*" in objects:
                del self.module_mapping[module]
            else:
                self.module_mapping[module] -= objects
                if not self.module_mapping[module]:
                    del self.module_mapping[module]

    def on_visit(self, node: cst.CSTNode) -> bool:
        # Only the module's own import lines are edited (leave_ImportFrom on `all_imports`).
        if isinstance(node, cst.BaseCompoundStatement) or skips_imports(node):
            return False
        return super().on_visit(node)

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom) -> cst.ImportFrom:
        if isinstance(updated_node.names, cst.ImportStar) or original_node not in self.all_imports:
            return updated_node
        module = absolute_module(updated_node)
        if module is None or (module not in self.module_mapping and module not in self.alias_mapping):
            return updated_node
        objects = self.module_mapping.pop(module, [])
        aliases = self.alias_mapping.pop(module, [])
        return updated_node.with_changes(
            names=[
                *(cst.ImportAlias(name=cst.Name(obj)) for obj in sorted(objects)),
                *(cst.ImportAlias(name=cst.Name(obj), asname=cst.AsName(name=cst.Name(alias))) for obj, alias in sorted(aliases)),
                *updated_node.names,
            ]
        )

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if not (self.module_imports or self.module_mapping or self.module_aliases or self.alias_mapping):
            return updated_node
        before, block, after = _split(original_node, updated_node)
        after = _blank_line_first(after)
        objects: dict[str, list] = defaultdict(list)
        for module, aliases in self.alias_mapping.items():
            objects[module].extend(aliases)
        for module, names in self.module_mapping.items():
            objects[module].extend((name, None) for name in names)
        objects = {module: sorted(pairs) for module, pairs in objects.items()}
        config = updated_node.config_for_parsing

        def line(code: str) -> Statement:
            return cst.parse_statement(code, config=config)

        def from_line(module: str, pairs) -> Statement:
            return line(f"from {module} import " + ", ".join(o if a is None else f"{o} as {a}" for o, a in pairs))

        return updated_node.with_changes(
            body=(
                *before,
                *[from_line(module, pairs) for module, pairs in objects.items() if module == "__future__"],
                *block,
                *[line(f"import {module}") for module in sorted(self.module_imports)],
                *[line(f"import {module} as {asname}") for module, asname in self.module_aliases.items()],
                *[from_line(module, pairs) for module, pairs in objects.items() if module != "__future__"],
                *after,
            )
        )


def _split(original: cst.Module, updated: cst.Module) -> tuple[list[Statement], list[Statement], list[Statement]]:
    """`updated`'s statements before the leading import block (a docstring), in it, and after it;
    the block is found in `original` (the walk changed statements, never their number)."""
    first = add_at = 1 if _skip_first(original) else 0
    for i, statement in enumerate(original.body[first:]):
        if not is_single_import(statement):
            break
        add_at = i + first + 1
    return list(updated.body[:first]), list(updated.body[first:add_at]), list(updated.body[add_at:])


def _blank_line_first(statements: list[Statement]) -> list[Statement]:
    """At least one empty line between the added imports and the first statement after them."""
    if not statements:
        return statements
    lines = statements[0].leading_lines
    if not lines:
        return [statements[0].with_changes(leading_lines=(cst.EmptyLine(),)), *statements[1:]]
    if lines[0].comment is None:
        return statements
    return [statements[0].with_changes(leading_lines=(cst.EmptyLine(), *lines)), *statements[1:]]
