"""Expression helpers for TM006: integer literals and their arithmetic (`shifted`: `n - 1` ->
`n`), whether a value is provably an int, and small builders (attributes, `not`, tuples, calls)."""

from __future__ import annotations

import libcst as cst

from codemods.helpers import arguments
from codemods.helpers.arguments import keyword_arg


_INT_FUNCS = frozenset({"len", "int"})
_INT_OPS = (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide)
_ATOMIC = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)


def int_value(expr: cst.BaseExpression) -> int | None:
    if isinstance(expr, cst.Integer):
        return int(expr.value, 0)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = int_value(expr.expression)
        return None if inner is None else -inner
    return None


def number(expr: cst.BaseExpression) -> float | None:
    if isinstance(expr, cst.Float):
        return float(expr.value)
    value = int_value(expr)
    return None if value is None else float(value)


def int_literal(value: int) -> cst.BaseExpression:
    if value < 0:
        return cst.UnaryOperation(operator=cst.Minus(), expression=cst.Integer(str(-value)))
    return cst.Integer(str(value))


def provably_int(expr: cst.BaseExpression) -> bool:
    """An expression that is a Python int whatever the program's data: literals, len(), int(), sums."""
    if int_value(expr) is not None:
        return True
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in _INT_FUNCS:
        return True
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _INT_OPS):
        return provably_int(expr.left) and provably_int(expr.right)
    return False


def shifted(expr: cst.BaseExpression, delta: int) -> cst.BaseExpression:
    """`expr + delta`, folded where it reads better: `10` -> `11`, `n - 1` -> `n`."""
    value = int_value(expr)
    if value is not None:
        return int_literal(value + delta)
    if (
        isinstance(expr, cst.BinaryOperation)
        and isinstance(expr.operator, (cst.Add, cst.Subtract))
        and isinstance(expr.right, cst.Integer)
        and not expr.lpar
    ):
        k = int(expr.right.value, 0) * (1 if isinstance(expr.operator, cst.Add) else -1) + delta
        if k == 0:
            return expr.left
        op = cst.Add() if k > 0 else cst.Subtract()
        return expr.with_changes(operator=op, right=cst.Integer(str(abs(k))))
    atomic = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float)
    additive = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.Power)
    if not isinstance(expr, atomic) and not (
        isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, additive)
    ):
        expr = expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    op = cst.Add() if delta > 0 else cst.Subtract()
    return cst.BinaryOperation(left=expr, operator=op, right=cst.Integer(str(abs(delta))))


def _atomic(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`expr`, parenthesized unless it is a name, attribute, call or subscript (for `expr.mT`)."""
    if isinstance(expr, _ATOMIC) or expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _attr(expr: cst.BaseExpression, *names: str) -> cst.BaseExpression:
    for name in names:
        expr = cst.Attribute(value=_atomic(expr), attr=cst.Name(name))
    return expr


def _negated(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`not expr`, folded for a literal bool."""
    value = arguments.literal(expr)
    if value in (True, False) and isinstance(expr, cst.Name):
        return cst.Name(str(not value))
    return cst.UnaryOperation(operator=cst.Not(), expression=_atomic(expr))


def _tuple(values: list[cst.BaseExpression]) -> cst.BaseExpression:
    """`a, b` (no parentheses) for two or more values; the value itself for one."""
    if len(values) == 1:
        return values[0]
    elements = [cst.Element(v, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for v in values[:-1]]
    return cst.Tuple(elements=[*elements, cst.Element(values[-1])], lpar=[], rpar=[])


def _arg(value: cst.BaseExpression, keyword: str | None = None) -> cst.Arg:
    return keyword_arg(keyword, value) if keyword else cst.Arg(value=value)


def _call(func: cst.BaseExpression, args: list[cst.Arg]) -> cst.Call:
    """A fresh call `func(args...)` with `, ` between the arguments."""
    spaced = [a.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for a in args[:-1]]
    return cst.Call(func=func, args=[*spaced, *[a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in args[-1:]]])
