"""The nodes of one function (or module) body, without those of nested functions, classes, lambdas.

Enough scope for codemods that reason about one function's local names; far cheaper than libcst's
ScopeProvider (DESIGN §9).
"""

from __future__ import annotations

import libcst as cst


class ScopeNodes(cst.CSTVisitor):
    """`nodes` in visiting order and each node's `parents` entry, for one body."""

    def __init__(self) -> None:
        self.nodes: list[cst.CSTNode] = []
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self._stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._stack:
            self.parents[node] = self._stack[-1]
        self.nodes.append(node)
        self._stack.append(node)
        return not (len(self._stack) > 1 and isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)))

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()

    @classmethod
    def of(cls, body: cst.CSTNode) -> ScopeNodes:
        """The scope of a function's body (pass `function.body`) or of a whole module."""
        scope = cls()
        body.visit(scope)
        return scope
