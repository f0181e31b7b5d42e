"""Removing the imports a codemod no longer needs, as libcst's RemoveImportsVisitor does, without
its scope analysis.

libcst's remover deep-copies the tree, walks and rebuilds all of it and runs scope analysis to
learn whether a name is still used: for one changed import line, several times the cost of the
whole codemod. Here "unused" means the bound name is no longer spelled anywhere in the module
outside import statements (a Name that is not an `.attr` or a `kw=`, or a word in an `__all__`
string or a string annotation). That is coarser than scope analysis in one direction only: a
name used in a place scope analysis would call a different binding keeps its import. Imports are
kept a little more often, never removed while in use.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Callable, Iterable, Sequence

import libcst as cst
from libcst.helpers import get_full_name_for_node

from codemods.helpers.import_adder import absolute_module, skips_imports
from codemods.helpers.names import _BLOCKS
from codemods.helpers.patterns import any_name
from codemods.engine.lazy import import_free, spells_none
from codemods.engine.traverse import traverse

_IMPORT = (cst.Import, cst.ImportFrom)
_CLAUSES = (cst.BaseCompoundStatement, cst.ExceptHandler, cst.ExceptStarHandler, cst.Else, cst.Finally, cst.MatchCase)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_REFERENCE = re.compile(r"(?<![.\w])[A-Za-z_][A-Za-z0-9_]*")  # not the `attr` of `x.attr`


def _relative_spelling(node: cst.ImportFrom) -> str | None:
    """`..utils` for `from ..utils import x`: how a removal asks for a relative import."""
    if not node.relative:
        return None
    module = get_full_name_for_node(node.module) if node.module is not None else ""
    return "." * len(node.relative) + (module or "")


class UsedNamesRemover(cst.CSTTransformer):
    """Removes the imports asked for whose bound name the module no longer uses (see the module
    docstring); a statement left without names goes, a kept name loses a trailing comma."""

    def __init__(
        self, unused: Sequence[tuple[str, str | None, str | None]], code: Callable[[cst.Module], str] | None = None
    ) -> None:
        super().__init__()
        self._code = code  # the module's code, from the engine's per-file ModuleCode when given
        self.unused_module_imports: dict[str, str | None] = {module: alias for module, obj, alias in unused if obj is None}
        self.unused_obj_imports: dict[str, set[tuple[str, str | None]]] = {}
        for module, obj, alias in unused:
            if obj is not None:
                self.unused_obj_imports.setdefault(module, set()).add((obj, alias))
        self._unused_imports: dict[cst.ImportAlias, cst.Import | cst.ImportFrom] = {}
        self._enter: set[int] = set()
        self._orphans: dict[int, list[cst.EmptyLine]] = {}  # removed line -> its comment lines
        self._gone: set[int] = set()  # removed lines

    def plan(self, tree: cst.Module) -> tuple[set[int], set[int]]:
        """What `transform(tree)` will remove, without editing: the ids of the import aliases that
        go, and of the compound statements and clauses around them (empty when all are at module
        level). A codemod that must tidy what a removal leaves (TM004's emptied guards) reads it."""
        self.visit_Module(tree)
        return {id(alias) for alias in self._unused_imports}, set(self._enter)

    def unused_imports(self) -> list[tuple[cst.ImportAlias, cst.Import | cst.ImportFrom]]:
        """After `plan`: each import alias that goes, with its statement, in source order."""
        return list(self._unused_imports.items())

    def transform(self, tree: cst.Module) -> cst.Module:
        self.visit_Module(tree)
        if not self._unused_imports:
            return tree  # nothing to remove: no walk
        return traverse(tree, self)

    def visit_Module(self, node: cst.Module) -> None:
        lister = _ImportLister(node.body)
        wanted = {m.split(".")[0] if a is None else a for m, a in self.unused_module_imports.items()}
        wanted |= {a or obj for pairs in self.unused_obj_imports.values() for obj, a in pairs}
        # Fast path: a name the module's text spells no more often than its import lines do is
        # unused. Only a name spelled elsewhere (maybe only in a comment) needs the full walk.
        code = self._code(node) if self._code is not None else node.code
        in_imports = Counter(w for s in lister.statements for w in _REFERENCE.findall(node.code_for_node(s)))
        spelled = Counter(w for w in _REFERENCE.findall(code) if w in wanted)
        used: set[str] = {name for name in wanted if spelled[name] > in_imports[name]}
        if used:
            collector = _Uses(re.compile(any_name(used)))
            traverse(node, collector)
            used &= collector.used
        self._unused_imports = {
            alias: statement for statement, alias in lister.aliases if _bound(alias) in wanted - used
        }
        # An import inside a function binds a name of that function: a use elsewhere in the module
        # does not keep it (`from torch.cuda import amp` in eval(), while train() still reads amp).
        for statement, alias in lister.aliases:
            if _bound(alias) in used and alias not in self._unused_imports:
                function = next((a for a in reversed(lister.around[id(statement)]) if isinstance(a, cst.FunctionDef)), None)
                if function is not None:
                    local = _Uses()
                    traverse(function.body, local)
                    if _bound(alias) not in local.used:
                        self._unused_imports[alias] = statement
        # The walk that edits them enters only the compound statements around them.
        self._enter = {id(a) for s in self._unused_imports.values() for a in lister.around[id(s)]}

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Module):
            return True  # visit_Module already ran
        if skips_imports(node) or (isinstance(node, _CLAUSES) and id(node) not in self._enter):
            return False
        return super().on_visit(node)

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        if not updated_node.body:  # the line goes: its comments must not (user text, notebook magics)
            self._gone.add(id(original_node))
            comments = [line for line in original_node.leading_lines if line.comment is not None]
            if comments:
                self._orphans[id(original_node)] = comments
        return updated_node

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        updated_node = self._adopt(original_node, updated_node)
        if original_node.body and id(original_node.body[0]) in self._gone and updated_node.body:
            # the block's first line went: the blank lines that followed it do not open the block
            first = updated_node.body[0]
            lines = list(first.leading_lines)
            while lines and lines[0].comment is None:
                lines.pop(0)
            if len(lines) != len(first.leading_lines):
                updated_node = updated_node.with_changes(body=[first.with_changes(leading_lines=lines), *updated_node.body[1:]])
        return updated_node

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        return self._adopt(original_node, updated_node)

    def _adopt(self, original_node, updated_node):
        """The comments above a removed import move to the statement that followed it (or to the
        block's footer): removing an import never removes a comment."""
        if not any(id(s) in self._orphans for s in original_node.body):
            return updated_node
        kept = iter(updated_node.body)
        body, pending = [], []
        for statement in original_node.body:
            if id(statement) in self._orphans:
                pending += self._orphans[id(statement)]
                continue
            new = next(kept)
            if pending:
                new = new.with_changes(leading_lines=(*pending, *new.leading_lines))
                pending = []
            body.append(new)
        body += list(kept)
        return updated_node.with_changes(body=body, footer=(*pending, *updated_node.footer))

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import) -> cst.Import | cst.RemovalSentinel:
        keep = []
        for alias in original_node.names:
            if (
                alias.evaluated_name not in self.unused_module_imports
                or alias.evaluated_alias != self.unused_module_imports[alias.evaluated_name]
                or alias not in self._unused_imports
            ):
                keep.append(alias)
        if keep == original_node.names:
            return updated_node
        if not keep:
            return cst.RemoveFromParent()
        if keep[-1] != original_node.names[-1]:  # no trailing comma on what is now the last name
            keep = [*keep[:-1], keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)]
        return updated_node.with_changes(names=keep)

    def leave_ImportFrom(
        self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom
    ) -> cst.ImportFrom | cst.RemovalSentinel:
        names = original_node.names
        if isinstance(names, cst.ImportStar):
            return updated_node
        module = absolute_module(updated_node) or _relative_spelling(updated_node)
        if module is None or module not in self.unused_obj_imports:
            return updated_node
        updates = self._from_names(updated_node, names, module)
        keep = updates["names"]
        if keep == names:
            return updated_node
        if not keep:
            return cst.RemoveFromParent()
        if keep[-1] != names[-1]:
            keep = [*keep[:-1], keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)]
        updates["names"] = keep
        return updated_node.with_changes(**updates)

    def _from_names(self, updated_node: cst.ImportFrom, names: Iterable[cst.ImportAlias], module: str) -> dict[str, Any]:
        """The names kept; a comment after a removed name's comma moves to the name (or the
        parenthesis) before it."""
        updates: dict[str, Any] = {}
        keep: list[cst.ImportAlias] = []
        remove = self.unused_obj_imports[module]
        for alias in names:
            if (alias.evaluated_name, alias.evaluated_alias) not in remove or alias not in self._unused_imports:
                keep.append(alias)
                continue
            comma = alias.comma
            if not isinstance(comma, cst.Comma):
                continue
            if keep:
                previous = keep[-1]
                if isinstance(previous.comma, cst.Comma):
                    merged = _merge_whitespace_after(previous.comma.whitespace_after, comma.whitespace_after)
                    previous = previous.with_deep_changes(previous.comma, whitespace_after=merged)
                else:  # a name made by a codemod, not parsed: no comma of its own
                    previous = previous.with_changes(comma=comma)
                keep[-1] = previous
            elif isinstance(updated_node.lpar, cst.LeftParen):
                lpar = updated_node.lpar
                updates["lpar"] = lpar.with_changes(
                    whitespace_after=_merge_whitespace_after(lpar.whitespace_after, comma.whitespace_after)
                )
        updates["names"] = keep
        return updates


def _merge_whitespace_after(
    left: cst.BaseParenthesizableWhitespace, right: cst.BaseParenthesizableWhitespace
) -> cst.BaseParenthesizableWhitespace:
    if not isinstance(right, cst.ParenthesizedWhitespace):
        return left
    if not isinstance(left, cst.ParenthesizedWhitespace):
        return right
    return left.with_changes(empty_lines=tuple(line for line in right.empty_lines if line.comment is not None))


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
                if not import_free(block):  # a function body not parsed yet that holds no import
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

    def __init__(self, wanted: re.Pattern[str] | None = None) -> None:
        self.used: set[str] = set()
        self._strings = 0  # > 0 inside `__all__ = ...` or an annotation
        self._wanted = wanted  # the names asked about: a function body not parsed yet that spells none is skipped

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._wanted is not None and spells_none(node, self._wanted):
            return False
        return super().on_visit(node)

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.used.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        traverse(node.value, self)
        return False  # `.attr` names an attribute, not a binding of this module

    def visit_Arg(self, node: cst.Arg) -> bool:
        traverse(node.value, self)
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
