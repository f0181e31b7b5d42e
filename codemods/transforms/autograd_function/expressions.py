"""Pure judgements on expressions for TM010: which statements of `__init__` store an attribute,
whether a value is recomputed the same from the arguments, a literal default, one gradient."""

from __future__ import annotations

import libcst as cst

from codemods.transforms.autograd_function.tables import TUPLE_METHODS
from codemods.transforms.autograd_function.tree import _dotted_head


def _self_assign(statement: cst.CSTNode, me: str) -> list[str] | None:
    """The attributes a statement `self.x = <expr>` or `self.x, self.y = <a>, <b>` sets (one
    target, one small statement), else None."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
        return None
    small = statement.body[0]
    if not (isinstance(small, cst.Assign) and len(small.targets) == 1):
        return None
    target = small.targets[0].target
    if isinstance(target, cst.Tuple) and isinstance(small.value, cst.Tuple) and len(target.elements) == len(small.value.elements):
        attrs = [_self_attr(e.value, me) if isinstance(e, cst.Element) else None for e in target.elements]
        if all(isinstance(e, cst.Element) for e in small.value.elements) and None not in attrs:
            return attrs
        return None
    attr = _self_attr(target, me)
    return None if attr is None else [attr]


def _self_attr(target: cst.BaseExpression, me: str) -> str | None:
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == me:
        return target.attr.value
    return None


def _pure(expr, params, attrs, me, calls, free, reused) -> bool:
    """Whether `expr` computes a value from `params`, earlier attributes, literals and pure builtins."""
    recurse = lambda e: _pure(e, params, attrs, me, calls, free, reused)  # noqa: E731
    if isinstance(expr, cst.Name):
        if expr.value == me:
            return False
        free.add(expr.value)
        return True
    if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)):
        return True
    if isinstance(expr, cst.Attribute):
        if isinstance(expr.value, cst.Name) and expr.value.value == me:
            return expr.attr.value in attrs
        return recurse(expr.value)
    if isinstance(expr, cst.UnaryOperation):
        return recurse(expr.expression)
    if isinstance(expr, (cst.BinaryOperation, cst.BooleanOperation)):
        return recurse(expr.left) and recurse(expr.right)
    if isinstance(expr, cst.Comparison):
        return recurse(expr.left) and all(recurse(c.comparator) for c in expr.comparisons)
    if isinstance(expr, cst.IfExp):
        return recurse(expr.test) and recurse(expr.body) and recurse(expr.orelse)
    if isinstance(expr, cst.Tuple) or (isinstance(expr, (cst.List, cst.Set)) and not reused):
        return all(isinstance(e, cst.Element) and recurse(e.value) for e in expr.elements)
    if isinstance(expr, cst.Subscript):
        return recurse(expr.value) and all(
            isinstance(s.slice, cst.Index) and recurse(s.slice.value) for s in expr.slice
        )
    if isinstance(expr, cst.Call) and calls(expr.func):
        if isinstance(expr.func, cst.Name) and expr.func.value in params:
            return False
        free.add(_dotted_head(expr.func))
        return all(not a.star and a.keyword is None and recurse(a.value) for a in expr.args)
    return False


def _literal(expr: cst.BaseExpression) -> bool:
    """A default that means the same wherever it is written."""
    if isinstance(expr, cst.Name):
        return expr.value in ("None", "True", "False")
    if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return isinstance(expr.expression, (cst.Integer, cst.Float))
    return False


def _note_assigned(target, value, assigned) -> None:
    if isinstance(target, cst.Name):
        assigned.setdefault(target.value, []).append(value)
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            _note_assigned(element.value, cst.Name("None") if isinstance(element, cst.Element) else cst.Tuple([]), assigned)


def _single(expr, assigned, seen) -> bool:
    """Whether `expr` is one gradient (a tensor or None), not a tuple of them."""
    if isinstance(expr, cst.Name):
        if expr.value == "None":
            return True
        if expr.value in seen:
            return False
        values = assigned.get(expr.value, [])  # a parameter (a grad_output) when never assigned
        return all(v is None or _single(v, assigned, seen | {expr.value}) for v in values)
    if isinstance(expr, (cst.BinaryOperation, cst.Subscript)):
        return True
    if isinstance(expr, cst.UnaryOperation):
        return not isinstance(expr.operator, cst.Not)
    if isinstance(expr, cst.IfExp):
        return _single(expr.body, assigned, seen) and _single(expr.orelse, assigned, seen)
    if isinstance(expr, cst.Call):
        func = expr.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        return name is not None and name not in TUPLE_METHODS and name not in ("tuple", "list", "zip", "map")
    return False
