"""TM201's rewrite of one Dataset class: lazy opens, descriptors, closes, and a close before `__init__` returns."""

from __future__ import annotations

import libcst as cst

from codemods.helpers.statements import is_docstring
from codemods.transforms.h5py_lazy_open.plan import ClassPlan
from codemods.transforms.h5py_lazy_open.runtime import DESCRIPTOR, LAZY
from codemods.transforms.h5py_lazy_open.syntax import first_param
from codemods.base import traverse


def _close_call(self_name: str, *names: str) -> cst.Expr:
    args = ", ".join([self_name, *(repr(n).replace("'", '"') for n in names)])
    return cst.Expr(cst.parse_expression(f"{DESCRIPTOR}.close({args})"))


class ClassRewriter(cst.CSTTransformer):
    """Apply a `ClassPlan` to its class: lazy opens, descriptors, closes, and the close at the end of __init__."""

    def __init__(self, plan: ClassPlan, init: cst.FunctionDef | None) -> None:
        super().__init__()
        self.plan = plan
        self.init = init
        self.opens = set(map(id, plan.opens))
        self.closes = {id(statement): self_name for statement, self_name in plan.closes}
        self._functions: list[cst.FunctionDef] = []

    def rewrite(self, node: cst.ClassDef) -> cst.ClassDef:
        new = traverse(node, self)
        assert isinstance(new, cst.ClassDef)
        return self._with_descriptors(new)

    def _in_init(self) -> bool:
        return bool(self._functions) and self._functions[-1] is self.init

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._functions.append(node)
        return True

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        if id(original_node) in self.opens:
            return updated_node.with_changes(func=cst.Name(LAZY))
        return updated_node

    def leave_Expr(self, original_node: cst.Expr, updated_node: cst.Expr) -> cst.Expr:
        name = self.closes.get(id(original_node))
        if name is None:
            return updated_node
        attribute = original_node.value.func.value.attr.value  # type: ignore[union-attr]
        return updated_node.with_changes(value=_close_call(name, attribute).value)

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.FlattenSentinel:
        if not self._in_init() or not any(isinstance(s, cst.Return) for s in updated_node.body):
            return updated_node
        if len(updated_node.body) == 1:  # a `return` on its own line: the close goes on the line before
            close = cst.SimpleStatementLine(body=[_close_call(first_param(self.init))], leading_lines=updated_node.leading_lines)
            return cst.FlattenSentinel([close, updated_node.with_changes(leading_lines=())])
        return updated_node.with_changes(body=self._before_returns(updated_node.body))

    def leave_SimpleStatementSuite(
        self, original_node: cst.SimpleStatementSuite, updated_node: cst.SimpleStatementSuite
    ) -> cst.SimpleStatementSuite:
        if not self._in_init() or not any(isinstance(s, cst.Return) for s in updated_node.body):
            return updated_node
        return updated_node.with_changes(body=self._before_returns(updated_node.body))

    def _before_returns(self, body):
        name = first_param(self.init)
        out = []
        for small in body:
            if isinstance(small, cst.Return):
                out.append(_close_call(name).with_changes(semicolon=cst.Semicolon(whitespace_after=cst.SimpleWhitespace(" "))))
            out.append(small)
        return out

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self._functions.pop()
        if original_node is not self.init:
            return updated_node
        close = _close_call(first_param(original_node))
        body = updated_node.body
        if isinstance(body, cst.SimpleStatementSuite):
            if isinstance(body.body[-1], (cst.Return, cst.Raise)):
                return updated_node
            last = body.body[-1].with_changes(semicolon=cst.Semicolon(whitespace_after=cst.SimpleWhitespace(" ")))
            return updated_node.with_changes(body=body.with_changes(body=[*body.body[:-1], last, close]))
        last = body.body[-1]
        if isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], (cst.Return, cst.Raise)):
            return updated_node
        return updated_node.with_changes(
            body=body.with_changes(body=[*body.body, cst.SimpleStatementLine(body=[close])])
        )

    def _with_descriptors(self, node: cst.ClassDef) -> cst.ClassDef:
        body = list(node.body.body)
        at = 1 if body and is_docstring(body[0]) else 0
        lines = [
            cst.SimpleStatementLine(
                body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(a))], value=cst.parse_expression(f"{DESCRIPTOR}()"))]
            )
            for a in self.plan.attributes
        ]
        if not lines:
            return node
        if at:
            lines[0] = lines[0].with_changes(leading_lines=(cst.EmptyLine(indent=False),))
        if at < len(body) and not any(line.comment is None for line in body[at].leading_lines):
            body[at] = body[at].with_changes(leading_lines=(cst.EmptyLine(indent=False), *body[at].leading_lines))
        return node.with_changes(body=node.body.with_changes(body=[*body[:at], *lines, *body[at:]]))
