"""Add keyword arguments to a call in the call's own layout (one line, or one argument per line)."""

from __future__ import annotations

import libcst as cst

from codemods.helpers import args as A

_SPACE = cst.SimpleWhitespace(" ")


def keyword_arg(name: str, value: cst.BaseExpression) -> cst.Arg:
    return A.as_keyword(cst.Arg(value=value), name)


def append_args(call: cst.Call, new: list[cst.Arg]) -> cst.Call:
    """`call` with `new` arguments after its last one.

    In a call laid out one argument per line with a trailing comma, each new argument gets a
    line of its own; otherwise they follow on the same line.
    """
    if not new:
        return call
    args = list(call.args)
    if not args:
        return call.with_changes(args=_chain(new, cst.MaybeSentinel.DEFAULT))
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
        between = args[-2].comma  # newline + the arguments' indentation
        args[-1] = last.with_changes(comma=between)
        new = [a.with_changes(comma=between) for a in new[:-1]] + [new[-1].with_changes(comma=trailing)]
        return call.with_changes(args=[*args, *new])
    # The whitespace before `)` (a newline, in a call closed on its own line) moves to the end.
    args[-1] = last.with_changes(
        comma=cst.Comma(whitespace_after=_SPACE), whitespace_after_arg=cst.SimpleWhitespace("")
    )
    end = trailing if isinstance(trailing, cst.Comma) else cst.MaybeSentinel.DEFAULT
    chained = _chain(new, end)
    chained[-1] = chained[-1].with_changes(whitespace_after_arg=last.whitespace_after_arg)
    return call.with_changes(args=[*args, *chained])


def _chain(new: list[cst.Arg], end: cst.Comma | cst.MaybeSentinel) -> list[cst.Arg]:
    out = [a.with_changes(comma=cst.Comma(whitespace_after=_SPACE)) for a in new[:-1]]
    return [*out, new[-1].with_changes(comma=end)]
