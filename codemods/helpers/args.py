"""Call-argument helpers that keep the call's layout and comments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import libcst as cst

_LITERAL_NAMES = {"True": True, "False": False, "None": None}
_MISSING = object()


@dataclass(frozen=True)
class Bound:
    index: int
    arg: cst.Arg
    positional: bool


def has_star_args(call: cst.Call) -> bool:
    return any(a.star for a in call.args)


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def bind(call: cst.Call, positional: Sequence[str]) -> dict[str, Bound]:
    """Map parameter names to the arguments that fill them (positional by `positional` order)."""
    bound: dict[str, Bound] = {}
    position = 0
    for index, arg in enumerate(call.args):
        if arg.star:
            continue
        if arg.keyword is None:
            if position < len(positional):
                bound[positional[position]] = Bound(index, arg, True)
            position += 1
        else:
            bound[arg.keyword.value] = Bound(index, arg, False)
    return bound


def literal(expr: cst.BaseExpression) -> object:
    """The Python value of a simple literal (True/False/None, int, str), else `MISSING`."""
    if isinstance(expr, cst.Name) and expr.value in _LITERAL_NAMES:
        return _LITERAL_NAMES[expr.value]
    if isinstance(expr, cst.Integer):
        return int(expr.value, 0)
    if isinstance(expr, cst.SimpleString):
        return expr.evaluated_value
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        inner = literal(expr.expression)
        return _MISSING if inner is _MISSING else not inner
    return _MISSING


def is_literal(value: object) -> bool:
    return value is not _MISSING


def as_keyword(arg: cst.Arg, name: str) -> cst.Arg:
    """A positional argument turned into `name=value`, keeping its comma and whitespace."""
    return arg.with_changes(
        keyword=cst.Name(name),
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        ),
    )


def _has_comment(node: cst.CSTNode | cst.MaybeSentinel) -> bool:
    if not isinstance(node, cst.Comma):
        return False
    return "#" in cst.Module(body=[]).code_for_node(node)


def _closing(prev: cst.Arg, removed: cst.Arg) -> cst.Arg:
    """`prev` made the last argument in place of `removed`: it takes over the removed argument's
    trailing comma (or its absence) and the whitespace before `)`, keeping its own comment."""
    comma = removed.comma
    if _has_comment(prev.comma):
        before = prev.comma.whitespace_after
        after = comma.whitespace_after if isinstance(comma, cst.Comma) else None
        if isinstance(before, cst.ParenthesizedWhitespace) and isinstance(after, cst.ParenthesizedWhitespace):
            comma = prev.comma.with_changes(
                whitespace_after=before.with_changes(indent=after.indent, last_line=after.last_line)
            )
        else:
            comma = prev.comma
    return prev.with_changes(comma=comma, whitespace_after_arg=removed.whitespace_after_arg)


def remove_args(args: Sequence[cst.Arg], indices: set[int]) -> list[cst.Arg]:
    """Drop the arguments at `indices`, keeping commas, trailing commas and comments sensible."""
    last_kept = max((i for i in range(len(args)) if i not in indices), default=None)
    kept: list[cst.Arg] = []
    for index, arg in enumerate(args):
        if index not in indices:
            kept.append(arg)
        elif last_kept is not None and index > last_kept and index == max(indices):
            kept[-1] = _closing(kept[-1], arg)
    return kept
