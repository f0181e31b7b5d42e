"""Reading and editing a call's arguments, keeping the call's layout and comments: the one place
codemods bind arguments to parameters, read literals, and build `name=value` and new arguments.

Reading: `keyword`, `bind` (arguments to a signature's parameters), `literal`, `has_star_args`.
Editing: `as_keyword`, `remove_args`; `keyword_arg` makes `name=value` (no spaces around `=`, as
written by hand); `append_args` adds arguments after a call's last one in the call's own layout
(one line, or one argument per line), `append_as_listed` as its arguments are separated, neither
repeating the comment or trailing whitespace of the line a copied separator ends; `on_one_line` lays out a list of arguments as `a, b, c`
when a codemod builds the whole list.
"""


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

_SPACE = cst.SimpleWhitespace(" ")
ARG_SEPARATOR = cst.Comma(whitespace_after=_SPACE)
"""`, `: what separates arguments on one line."""


def keyword_arg(name: str, value: cst.BaseExpression) -> cst.Arg:
    """`name=value`, without a comma."""
    return as_keyword(cst.Arg(value=value), name)


def on_one_line(args: list[cst.Arg], end: cst.Comma | cst.MaybeSentinel = cst.MaybeSentinel.DEFAULT) -> list[cst.Arg]:
    """`args` separated by `, `; the last one ends with `end` (no comma by default, or the
    trailing comma of the argument list it replaces). Each keeps its whitespace before `)`."""
    out = [a.with_changes(comma=cst.Comma(whitespace_after=_SPACE)) for a in args[:-1]]
    return [*out, args[-1].with_changes(comma=end)]


def append_args(call: cst.Call, new: list[cst.Arg]) -> cst.Call:
    """`call` with `new` arguments after its last one.

    In a call laid out one argument per line with a trailing comma, each new argument gets a
    line of its own; in a call whose arguments are wrapped (a line break after `(` or between
    two of them) each goes on a line of its own, indented as the wrapped ones are, instead of
    lengthening the last line (after `(` and a line break, only when one line of them would pass
    LINE_LENGTH); otherwise they follow on the same line.
    """
    if not new:
        return call
    args = list(call.args)
    if not args:
        return call.with_changes(args=on_one_line(new))
    last = args[-1]
    trailing = last.comma
    multiline = (
        isinstance(trailing, cst.Comma)
        and isinstance(trailing.whitespace_after, cst.ParenthesizedWhitespace)
        and len(args) >= 2
        and isinstance(args[-2].comma, cst.Comma)
        and isinstance(args[-2].comma.whitespace_after, cst.ParenthesizedWhitespace)
    )
    if multiline:
        return _appended(call, new, separator(args[-2].comma))  # newline + the arguments' indentation
    wrapped = next((a.comma for a in reversed(args[:-1]) if _breaks(a.comma)), None)
    if wrapped is not None:  # `f(a,\n  b)`: the new ones go under b
        return _appended(call, new, separator(wrapped))
    opening = call.whitespace_before_args
    if isinstance(opening, cst.ParenthesizedWhitespace) and _too_long(opening, [*args, *new]):
        return _appended(call, new, separator(cst.Comma(whitespace_after=opening)))  # `f(\n    a\n)`: under a
    # The whitespace before `)` (a newline, in a call closed on its own line) moves to the end.
    args[-1] = last.with_changes(
        comma=cst.Comma(whitespace_after=_SPACE), whitespace_after_arg=cst.SimpleWhitespace("")
    )
    end = trailing if isinstance(trailing, cst.Comma) else cst.MaybeSentinel.DEFAULT
    chained = on_one_line(new, end)
    chained[-1] = chained[-1].with_changes(whitespace_after_arg=last.whitespace_after_arg)
    return call.with_changes(args=[*args, *chained])


def append_as_listed(call: cst.Call, new: list[cst.Arg]) -> cst.Call:
    """`call` with `new` arguments after its last one, separated as its arguments already are (one
    per line when they are, else `, `); the call ends as it did (trailing comma, `)` on its own
    line)."""
    if not new:
        return call
    args = list(call.args)
    if not args:
        return call.with_changes(args=on_one_line(new))
    between = args[-2].comma if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) else None
    return _appended(call, new, ARG_SEPARATOR if between is None else separator(between))


def with_args(call: cst.Call, new: list[cst.Arg]) -> cst.Call:
    """`call` with the arguments `new` in place of its own, in its layout: separated as its
    arguments were (one per line when they were, else `, `), and ending as its last one did (the
    trailing comma, `)` on a line of its own); an argument whose comma has a comment after it
    keeps it."""
    old = list(call.args)
    if not old or not new:
        return call.with_changes(args=on_one_line(new) if new else [])
    between = old[-2].comma if len(old) > 1 and isinstance(old[-2].comma, cst.Comma) else None
    between = ARG_SEPARATOR if between is None else separator(between)
    laid = [a.with_changes(comma=a.comma if _has_comment(a.comma) else between) for a in new[:-1]]
    laid.append(new[-1].with_changes(comma=old[-1].comma, whitespace_after_arg=old[-1].whitespace_after_arg))
    return call.with_changes(args=laid)


LINE_LENGTH = 88  # black's: where a line of arguments after `(` + newline would be wrapped


def _too_long(opening: cst.ParenthesizedWhitespace, args: list[cst.Arg]) -> bool:
    """Whether `args` on one line, indented as `opening` indents them, pass LINE_LENGTH."""
    module = cst.Module([])
    text = ", ".join(module.code_for_node(a.with_changes(comma=cst.MaybeSentinel.DEFAULT)).strip() for a in args)
    return len(opening.last_line.value) + len(text) > LINE_LENGTH or "\n" in text


def _breaks(comma: cst.Comma | cst.MaybeSentinel) -> bool:
    return isinstance(comma, cst.Comma) and isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace)


def separator(comma: cst.Comma) -> cst.Comma:
    """`comma`, to repeat between new arguments: its line break and the next line's indentation,
    without the trailing whitespace, comment or blank lines of the line it ends (copied, those
    would appear again on each new line)."""
    after = comma.whitespace_after
    if isinstance(after, cst.ParenthesizedWhitespace):
        return comma.with_changes(
            whitespace_before=cst.SimpleWhitespace(""),
            whitespace_after=after.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[]),
        )
    return ARG_SEPARATOR


def _ending(arg: cst.Arg) -> tuple[cst.Comma | cst.MaybeSentinel, cst.BaseParenthesizableWhitespace]:
    """How `arg`, the last argument, ends the call (its trailing comma, the whitespace before `)`),
    for a new last argument: without the comment of `arg`'s own line, which stays with `arg`."""
    comma, after = arg.comma, arg.whitespace_after_arg
    if isinstance(comma, cst.Comma) and isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace):
        comma = comma.with_changes(whitespace_after=comma.whitespace_after.with_changes(first_line=cst.TrailingWhitespace()))
    if isinstance(after, cst.ParenthesizedWhitespace):
        after = after.with_changes(first_line=cst.TrailingWhitespace())
    return comma, after


def _appended(call: cst.Call, new: list[cst.Arg], between: cst.Comma) -> cst.Call:
    """`call` with `new` after its last argument, `between` separating them; the comment ending
    the last argument's line stays on that line, and the call's end moves to the new last one."""
    args = list(call.args)
    last = args[-1]
    line_end = last.comma.whitespace_after if isinstance(last.comma, cst.Comma) else last.whitespace_after_arg
    joined = between
    if isinstance(line_end, cst.ParenthesizedWhitespace) and isinstance(between.whitespace_after, cst.ParenthesizedWhitespace):
        if line_end.first_line.comment is not None:  # `x,  # the input`: the comment stays after x
            joined = between.with_changes(whitespace_after=between.whitespace_after.with_changes(first_line=line_end.first_line))
    args[-1] = last.with_changes(comma=joined, whitespace_after_arg=cst.SimpleWhitespace(""))
    comma, after = _ending(last)
    new = [a.with_changes(comma=between) for a in new[:-1]] + [new[-1].with_changes(comma=comma, whitespace_after_arg=after)]
    return call.with_changes(args=[*args, *new])
