"""Resolve expressions to the qualified names their imports give them, without scope analysis.

`QualifiedNameProvider` (scope analysis) costs several parses' worth on real code. Nearly all
of that buys precision for names shadowed inside functions, which legacy PyTorch code does not do
with `torch`, `nn` or `F`. So this resolver reads the module's import statements once and maps each
local name to the dotted name it was imported as. A name that the module *also* binds with `def` or
`class` at the top level is treated as user code (a look-alike) and never resolved.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

import libcst as cst

from codemods.helpers.scan import _BLOCKS, FileNames
from codemods.engine.lazy import import_free
from codemods.engine.traverse import traverse

if TYPE_CHECKING:
    from codemods.helpers.context import FileContext


def dotted(expr: cst.BaseExpression) -> str | None:
    """`a.b.c` as a string, or None when the expression is not a plain dotted name."""
    parts: list[str] = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        expr = expr.value
    if not isinstance(expr, cst.Name):
        return None
    parts.append(expr.value)
    return ".".join(reversed(parts))


def every_name(tree: cst.CSTNode) -> set[str]:
    """Every `Name` spelled in `tree` (bindings, reads, attributes' names alike): what a new name
    must not be to clash with nothing."""
    names: set[str] = set()

    class _Names(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            names.add(node.value)

    traverse(tree, _Names())
    return names


def attribute_chain(name: str) -> cst.BaseExpression:
    """Build `a.b.c` from a dotted string."""
    head, *rest = name.split(".")
    node: cst.BaseExpression = cst.Name(head)
    for part in rest:
        node = cst.Attribute(value=node, attr=cst.Name(part))
    return node


@dataclass
class Imports:
    """Local name -> imported dotted name, for one module."""

    aliases: dict[str, str] = field(default_factory=dict)
    shadowed: set[str] = field(default_factory=set)
    names: FileNames = field(default_factory=FileNames)
    """Star imports and re-exports of this file (helpers/scan.py), followed by `resolve`."""
    own: dict[str, str] | None = None
    """What this file's own import statements bind (without the star imports' names); None:
    the same as `aliases`."""

    def imported_here(self, local: str) -> str | None:
        """What this file's own import statement of `local` names, as spelled there (None for a
        name that only a star import binds)."""
        return (self.aliases if self.own is None else self.own).get(local)

    @classmethod
    def of(cls, module: cst.Module, file: FileContext | None = None) -> Imports:
        """The module's imports; with its `file`, also the names its star imports of torch and
        of repository modules bind and torch's names that repository modules re-export."""
        # Imports and defs are statements: walking statement bodies only (never into
        # expressions) gives what a full visit with _ImportCollector gives, at a fraction of
        # the cost; tests/test_engine_speed.py checks the two agree on real code. A function
        # body not parsed yet whose lines do not say `import` holds none (engine/lazy.py).
        collector = _ImportCollector()
        walk_statements(module.body, collector, import_free)
        names = FileNames.of(collector.stars, file.facts if file else None, file.path if file else None)
        if not collector.stars:
            return cls(collector.aliases, collector.defined, names)
        return cls({**names.star_names(), **collector.aliases}, collector.defined, names, collector.aliases)

    def resolve(self, expr: cst.BaseExpression) -> str | None:
        """The qualified name `expr` refers to, if its head is an import of this module (a name
        a repository module re-exports resolves to what it re-exports)."""
        name = dotted(expr)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        if head in self.shadowed:
            return None
        target = self.aliases.get(head)
        if target is None:
            return None
        return self.names.reexported(f"{target}.{rest}" if rest else target)

    def local_name_for(self, qualified: str) -> str | None:
        """How this module can spell `qualified` with its existing imports (None if it cannot)."""
        best: str | None = None
        for local, target in self.aliases.items():
            if local in self.shadowed:
                continue
            if qualified == target:
                return local
            if qualified.startswith(target + "."):
                candidate = local + qualified[len(target) :]
                if best is None or len(candidate) < len(best):
                    best = candidate
        return best


class _ImportCollector(cst.CSTVisitor):
    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        self.defined: set[str] = set()
        self.stars: list[tuple[int, str]] = []  # (level, module) of each `from module import *`
        self._depth = 0

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.aliases[alias.asname.name.value] = full
            else:
                head = full.split(".")[0]
                # `import torch.nn` binds `torch`; keep an earlier, more specific mapping.
                self.aliases.setdefault(head, head)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        module = dotted(node.module) if node.module is not None else ""
        if module is None:
            return
        if isinstance(node.names, cst.ImportStar):
            self.stars.append((len(node.relative), module))
            return
        # A relative import is spelled with its dots (`.utils.Variable`): only the repository's
        # facts can say what it is (FileNames.reexported).
        prefix = "." * len(node.relative) + module
        for alias in node.names:
            name = dotted(alias.name)
            if name is None:
                continue
            local = (
                alias.asname.name.value
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name)
                else name
            )
            self.aliases[local] = f"{prefix}.{name}" if module else prefix + name

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        if self._depth == 0:
            self.defined.add(node.name.value)
        self._depth += 1
        return True

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._depth -= 1

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if self._depth == 0:
            self.defined.add(node.name.value)
        self._depth += 1
        return True

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._depth -= 1


def walk_statements(
    body: Sequence[cst.CSTNode], visitor: cst.CSTVisitor, skip: Callable[[cst.IndentedBlock], bool] | None = None
) -> None:
    """Call `visitor`'s `visit_X` for every small statement (Import, Assign, ...) and its
    `visit_`/`leave_` ClassDef and FunctionDef, in source order, reading statements only: the
    expressions, most of a tree, are never walked. For collectors whose every fact is a statement.
    `skip`: the indented blocks that cannot hold one of the visitor's facts (not entered)."""
    for stmt in body:
        if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in stmt.body:
                visit = getattr(visitor, f"visit_{type(small).__name__}", None)
                if visit is not None:
                    visit(small)
            continue
        if isinstance(stmt, cst.ClassDef):
            visitor.visit_ClassDef(stmt)
        elif isinstance(stmt, cst.FunctionDef):
            visitor.visit_FunctionDef(stmt)
        _walk_blocks(stmt, visitor, skip)
        if isinstance(stmt, cst.ClassDef):
            visitor.leave_ClassDef(stmt)
        elif isinstance(stmt, cst.FunctionDef):
            visitor.leave_FunctionDef(stmt)


def _walk_blocks(node: cst.CSTNode, visitor: cst.CSTVisitor, skip: Callable[[cst.IndentedBlock], bool] | None) -> None:
    """Statements under a compound statement (or an else/except/finally/case clause)."""
    for name in _BLOCKS:
        block = getattr(node, name, None)
        if block is None:
            continue
        if isinstance(block, cst.IndentedBlock):
            if skip is None or not skip(block):
                walk_statements(block.body, visitor, skip)
        elif isinstance(block, cst.SimpleStatementSuite):  # `if x: import y`
            walk_statements([block], visitor, skip)
        elif isinstance(block, (list, tuple)):  # except handlers, match cases
            for clause in block:
                _walk_blocks(clause, visitor, skip)
        elif isinstance(block, cst.CSTNode):  # else/finally clause, or `elif` (an If)
            _walk_blocks(block, visitor, skip)
