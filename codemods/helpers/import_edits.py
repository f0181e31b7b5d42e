"""libcst's AddImportsVisitor and RemoveImportsVisitor, made to cost what their job costs.

A codemod that calls `add_needed_import`/`remove_unused_import` gets these two run after it. As
libcst ships them, each deep-copies the tree, walks and rebuilds all of it, and the remover also
runs scope analysis (about nine parses' worth, DESIGN §9) to learn whether a name is still used:
for one changed import line, several times the cost of the whole codemod.

Here the adder reads only the module's leading import block (all it ever edits) and walks only
import statements; the remover decides "unused" by whether the bound name is still spelled
anywhere in the module outside import statements (a Name that is not an `.attr` or a `kw=`, or a
word in an `__all__` string or a string annotation). That is coarser than scope analysis in one direction only: a name used
in a place scope analysis would call a different binding keeps its import. Imports are kept a
little more often, never removed while in use.
"""

from __future__ import annotations

import re
from collections import Counter

import libcst as cst
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor

from codemods.helpers.names import _BLOCKS

_IMPORT = (cst.Import, cst.ImportFrom)
_CLAUSES = (cst.BaseCompoundStatement, cst.ExceptHandler, cst.ExceptStarHandler, cst.Else, cst.Finally, cst.MatchCase)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_REFERENCE = re.compile(r"(?<![.\w])[A-Za-z_][A-Za-z0-9_]*")  # not the `attr` of `x.attr`


def _is_import_line(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and any(isinstance(s, _IMPORT) for s in statement.body)


def _skip(node: cst.CSTNode) -> bool:
    """A statement line that holds no import statement."""
    return isinstance(node, cst.SimpleStatementLine) and not _is_import_line(node)


class TopImportsAdder(AddImportsVisitor):
    """AddImportsVisitor that reads the leading import block only and walks import statements only."""

    def visit_Module(self, node: cst.Module) -> None:
        # The gatherer stops at the first statement after the leading imports (a docstring or
        # `__strict__` first is skipped): hand it that prefix instead of the whole tree.
        prefix = list(node.body[:1])
        for statement in node.body[1:]:
            prefix.append(statement)
            if not _is_import_line(statement):
                break
        super().visit_Module(node.with_changes(body=prefix))

    def on_visit(self, node: cst.CSTNode) -> bool:
        # Only the module's own import lines are edited (leave_ImportFrom on `all_imports`).
        if isinstance(node, cst.BaseCompoundStatement) or _skip(node):
            return False
        return super().on_visit(node)


class UsedNamesRemover(RemoveImportsVisitor):
    """RemoveImportsVisitor deciding "unused" without scope analysis (see the module docstring)."""

    METADATA_DEPENDENCIES = ()

    @classmethod
    def get_inherited_dependencies(cls):
        return frozenset()  # libcst unions the bases' (scope + qualified names); none needed here

    def visit_Module(self, node: cst.Module) -> None:
        lister = _ImportLister(node.body)
        wanted = {m.split(".")[0] if a is None else a for m, a in self.unused_module_imports.items()}
        wanted |= {a or obj for pairs in self.unused_obj_imports.values() for obj, a in pairs}
        # Fast path: a name the module's text spells no more often than its import lines do is
        # unused. Only a name spelled elsewhere (maybe only in a comment) needs the full walk.
        code = node.code
        in_imports = Counter(w for s in lister.statements for w in _REFERENCE.findall(node.code_for_node(s)))
        spelled = Counter(w for w in _REFERENCE.findall(code) if w in wanted)
        used: set[str] = {name for name in wanted if spelled[name] > in_imports[name]}
        if used:
            collector = _Uses()
            node.visit(collector)
            used &= collector.used
        self._unused_imports = {
            alias: statement for statement, alias in lister.aliases if _bound(alias) in wanted - used
        }
        # The walk that edits them enters only the compound statements around them.
        self._enter = {id(a) for s in self._unused_imports.values() for a in lister.around[id(s)]}

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        self.visit_Module(tree)
        if not self._unused_imports:
            return tree  # nothing to remove: no walk
        return super().transform_module_impl(tree)

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Module):
            return True  # visit_Module already ran
        if _skip(node) or (isinstance(node, _CLAUSES) and id(node) not in self._enter):
            return False
        return super().on_visit(node)


def _bound(alias: cst.ImportAlias) -> str | None:
    """The local name an import alias binds (`import a.b` binds `a`)."""
    try:
        name = alias.evaluated_alias or alias.evaluated_name
    except Exception:
        return None
    return name.split(".")[0]


class _ImportLister:
    """Every import statement and alias, with the compound statements around it, found by
    walking statements only (never expressions)."""

    def __init__(self, body) -> None:
        self.statements: list[cst.Import | cst.ImportFrom] = []
        self.aliases: list[tuple[cst.Import | cst.ImportFrom, cst.ImportAlias]] = []
        self.around: dict[int, tuple[cst.CSTNode, ...]] = {}  # id(import statement) -> its ancestors
        self._walk(body, ())

    def _walk(self, body, ancestors: tuple[cst.CSTNode, ...]) -> None:
        for statement in body:
            if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                for small in statement.body:
                    if isinstance(small, _IMPORT):
                        self.statements.append(small)
                        self.around[id(small)] = ancestors
                        if not isinstance(small.names, cst.ImportStar):
                            self.aliases.extend((small, alias) for alias in small.names)
            else:
                self._blocks(statement, (*ancestors, statement))

    def _blocks(self, node: cst.CSTNode, ancestors: tuple[cst.CSTNode, ...]) -> None:
        for name in _BLOCKS:
            block = getattr(node, name, None)
            if isinstance(block, cst.IndentedBlock):
                self._walk(block.body, ancestors)
            elif isinstance(block, cst.SimpleStatementSuite):
                self._walk([block], ancestors)
            elif isinstance(block, (list, tuple)):
                for clause in block:
                    self._blocks(clause, (*ancestors, clause))
            elif isinstance(block, cst.CSTNode):
                self._blocks(block, (*ancestors, block))


class _Uses(cst.CSTVisitor):
    """Every name read outside import statements (not `.attr`, not `kw=`), and the words of the
    strings that can name one: `__all__` entries and string annotations."""

    def __init__(self) -> None:
        self.used: set[str] = set()
        self._strings = 0  # > 0 inside `__all__ = ...` or an annotation

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.used.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False  # `.attr` names an attribute, not a binding of this module

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False  # `kw=` names a parameter

    def visit_Annotation(self, node: cst.Annotation) -> None:
        self._strings += 1

    def leave_Annotation(self, original_node: cst.Annotation) -> None:
        self._strings -= 1

    def visit_Assign(self, node: cst.Assign) -> None:
        self._strings += _names_all(t.target for t in node.targets)

    def leave_Assign(self, original_node: cst.Assign) -> None:
        self._strings -= _names_all(t.target for t in original_node.targets)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._strings += _names_all([node.target])

    def leave_AugAssign(self, original_node: cst.AugAssign) -> None:
        self._strings -= _names_all([original_node.target])

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if self._strings:
            self.used.update(_WORD.findall(node.value))


def _names_all(targets) -> int:
    return int(any(isinstance(t, cst.Name) and t.value == "__all__" for t in targets))
