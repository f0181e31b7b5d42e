"""Read-only walks over libcst trees for TM010: parents, names read and bound, a class's methods
and class-level names, and where a node sits."""

from __future__ import annotations

import libcst as cst
from codemods.base import traverse


class _Parents(cst.CSTVisitor):
    """Every node's parent, and every class, in one walk."""

    def __init__(self) -> None:
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self.classes: list[cst.ClassDef] = []
        self._stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._stack:
            self.parents[node] = self._stack[-1]
        if isinstance(node, cst.ClassDef):
            self.classes.append(node)
        self._stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()


class _Walk(cst.CSTVisitor):
    def __init__(self) -> None:
        self.nodes: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.nodes.append(node)
        return True


def _walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    walker = _Walk()
    traverse(node, walker)
    return walker.nodes


class _Names(cst.CSTVisitor):
    """The names a node reads or binds (not `.attr` parts, not keywords of calls)."""

    def __init__(self) -> None:
        self.found: set[str] = set()

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        traverse(node.value, self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        traverse(node.value, self)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.found.add(node.value)


def _name_values(node: cst.CSTNode) -> set[str]:
    names = _Names()
    traverse(node, names)
    return names.found


class _Bound(cst.CSTVisitor):
    """The names a function binds: its parameters, assignment and loop targets, imports, defs."""

    def __init__(self) -> None:
        self.found: set[str] = set()

    def _add(self, target: cst.CSTNode | None) -> None:
        if isinstance(target, cst.Name):
            self.found.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._add(element.value)
        elif isinstance(target, cst.StarredElement):
            self._add(target.value)

    def visit_Param(self, node: cst.Param) -> None:
        self._add(node.name)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._add(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._add(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._add(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._add(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._add(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._add(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._add(node.name)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is None:
            self._add(cst.Name(_dotted_head(node.name)))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._add(node.name)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._add(node.name)

    def visit_Global(self, node: cst.Global) -> None:
        self.found.update(n.name.value for n in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.found.update(n.name.value for n in node.names)


def _dotted_head(expr: cst.BaseExpression) -> str:
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else ""


def _bound_names(function: cst.FunctionDef) -> set[str]:
    bound = _Bound()
    traverse(function.params, bound)
    traverse(function.body, bound)
    return bound.found


def _binds(module: cst.Module, name: str) -> bool:
    return name in _name_values(module)


def _statements(block: cst.BaseSuite) -> list[cst.BaseStatement]:
    """A block's statements; a one-line suite (`def f(self): return x`) as one statement line."""
    if isinstance(block, cst.IndentedBlock):
        return list(block.body)
    return [cst.SimpleStatementLine(body=block.body)]


def _methods(cls: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    return {s.name.value: s for s in body if isinstance(s, cst.FunctionDef)}


def _class_level_names(cls: cst.ClassDef) -> set[str]:
    names = set()
    for statement in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [getattr(small, "target", None)]
                names |= {t.value for t in targets if isinstance(t, cst.Name)}
        elif isinstance(statement, cst.ClassDef):
            names.add(statement.name.value)
    return names


def _is_static(method: cst.FunctionDef) -> bool:
    return any(isinstance(d.decorator, cst.Name) and d.decorator.value in ("staticmethod", "classmethod") for d in method.decorators)


def _inside(node, ancestor, parents) -> bool:
    while node is not None:
        if node is ancestor:
            return True
        node = parents.get(node)
    return False


def _enclosing(node, parents, kind):
    node = parents.get(node)
    while node is not None and not isinstance(node, kind):
        node = parents.get(node)
    return node


def _module_of(node, parents):
    while parents.get(node) is not None:
        node = parents[node]
    return node
