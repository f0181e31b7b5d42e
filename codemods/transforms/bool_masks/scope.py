"""One scope of a module for TM011: its local names, their `name = value` bindings, the names bound
some other way or read where the scope cannot see, and every read."""

from __future__ import annotations

import libcst as cst

from codemods.helpers.names import dotted
from codemods.helpers.bindings import ScopeNodes
from codemods.base import traverse


class _Scope:
    """One function body (or the module): its local names, their bindings and their reads."""

    def __init__(self, nodes: ScopeNodes, params: cst.Parameters | None) -> None:
        self.nodes = nodes
        self.parents = nodes.parents
        self.module = params is None
        self.values: dict[str, list[cst.BaseExpression]] = {}  # `name = value` bindings
        self.opaque: set[str] = set()  # names bound some other way (a parameter, a loop, `+=`)
        self.escaped: set[str] = set()  # read by a nested function, or global/nonlocal
        self.loads: dict[str, list[cst.Name]] = {}
        self.annotated: set[str] = set()  # parameters annotated as torch tensors
        self.assigned_in_place: set[int] = set()  # ids of AugAssign target Names (a read too)
        skip: set[int] = set()
        if params is not None:
            for param in (*params.params, *params.posonly_params, *params.kwonly_params):
                self.opaque.add(param.name.value)
                if param.annotation is not None and "Tensor" in (dotted(param.annotation.annotation) or ""):
                    self.annotated.add(param.name.value)
            for star in (params.star_arg, params.star_kwarg):
                if isinstance(star, cst.Param):
                    self.opaque.add(star.name.value)
        root = nodes.nodes[0] if nodes.nodes else None
        for node in nodes.nodes:
            if node is not root and isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                self._nested(node, skip)
            elif isinstance(node, (cst.Import, cst.ImportFrom)):
                for alias in node.names if not isinstance(node.names, cst.ImportStar) else ():
                    bound = alias.asname.name if alias.asname is not None else alias.name
                    if isinstance(bound, cst.Name):
                        self.opaque.add(bound.value)
                self._skip_all(node, skip)
            elif isinstance(node, (cst.Global, cst.Nonlocal)):
                for item in node.names:
                    self.escaped.add(item.name.value)
                    skip.add(id(item.name))
            elif isinstance(node, cst.Assign):
                plain = len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name)
                for target in node.targets:
                    for name in self._targets(target.target, skip):
                        if plain:
                            self.values.setdefault(name, []).append(node.value)
                        else:
                            self.opaque.add(name)
            elif isinstance(node, cst.AnnAssign):
                for name in self._targets(node.target, skip):
                    if node.value is not None and isinstance(node.target, cst.Name):
                        self.values.setdefault(name, []).append(node.value)
            elif isinstance(node, cst.AugAssign):
                if isinstance(node.target, cst.Name):
                    self.opaque.add(node.target.value)
                    self.assigned_in_place.add(id(node.target))
            elif isinstance(node, (cst.For, cst.CompFor)):
                self.opaque.update(self._targets(node.target, skip))
            elif isinstance(node, cst.AsName):
                self.opaque.update(self._targets(node.name, skip))
            elif isinstance(node, cst.NamedExpr):
                self.opaque.update(self._targets(node.target, skip))
            elif isinstance(node, cst.Attribute):
                skip.add(id(node.attr))
            elif isinstance(node, cst.Arg) and node.keyword is not None:
                skip.add(id(node.keyword))
            elif isinstance(node, cst.Name) and id(node) not in skip:
                self.loads.setdefault(node.value, []).append(node)

    def _nested(self, node: cst.CSTNode, skip: set[int]) -> None:
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            self.opaque.add(node.name.value)
            skip.add(id(node.name))
        scope = self

        class Reads(cst.CSTVisitor):
            def visit_Name(self, name: cst.Name) -> None:
                scope.escaped.add(name.value)

        traverse(node, Reads())

    @staticmethod
    def _skip_all(node: cst.CSTNode, skip: set[int]) -> None:
        class All(cst.CSTVisitor):
            def on_visit(self, inner: cst.CSTNode) -> bool:
                skip.add(id(inner))
                return True

        traverse(node, All())

    @staticmethod
    def _targets(target: cst.BaseExpression, skip: set[int]) -> list[str]:
        """Names a target binds (marked as no reads); a subscript or attribute target binds none."""
        if isinstance(target, cst.Name):
            skip.add(id(target))
            return [target.value]
        if isinstance(target, (cst.Tuple, cst.List)):
            return [n for e in target.elements for n in _Scope._targets(e.value, skip)]
        if isinstance(target, cst.StarredElement):
            return _Scope._targets(target.value, skip)
        return []

    def local(self, name: str) -> bool:
        """A name whose every read this scope sees (not the module's, which other code can read)."""
        return not self.module and name not in self.escaped
