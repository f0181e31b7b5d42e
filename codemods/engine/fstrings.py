"""A string literal a rewrite puts inside an f-string gets a quote that does not end the f-string.

Before Python 3.12 (PEP 701) the expressions of an f-string may not hold the quote character
that delimits it: `f"{F.nll_loss(x, y, reduction="sum")}"` does not compile on 3.11, and every
codemod writes its literals with double quotes. The walk hands each f-string a rewrite changed to
`requote`, which gives every literal that was not in the original a quote character that no
f-string around it uses. Where none is free (an f-string inside another of the other quote),
`requote` answers None: the walk keeps that f-string as it was and reports why.
"""

from __future__ import annotations

import libcst as cst

_QUOTES = ('"', "'")


def requote(original: cst.FormattedString, updated: cst.FormattedString) -> cst.FormattedString | None:
    """`updated` with each new literal in its expressions quoted so that it compiles before 3.12,
    or None where some new literal can have no such quote."""
    kept: set[int] = set()
    original.visit(_Collect(kept))
    requoted = _Requote(kept)
    result = updated.visit(requoted)
    return None if requoted.stuck else result


class _Collect(cst.CSTVisitor):
    def __init__(self, kept: set[int]) -> None:
        super().__init__()
        self.kept = kept

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self.kept.add(id(node))


class _Requote(cst.CSTTransformer):
    def __init__(self, kept: set[int]) -> None:
        super().__init__()
        self.kept = kept
        self.around: list[str] = []  # the quote of each f-string the walk is in, outermost first
        self.stuck = False

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        self.around.append(node.quote)

    def leave_FormattedString(self, original_node: cst.FormattedString, updated_node: cst.FormattedString) -> cst.FormattedString:
        self.around.pop()
        return updated_node

    def leave_SimpleString(self, original_node: cst.SimpleString, updated_node: cst.SimpleString) -> cst.SimpleString:
        if id(original_node) in self.kept or not self.around:
            return updated_node
        quote = updated_node.quote
        # A single-quote f-string ends at its quote; a triple-quoted one only at three of them,
        # so its quote character in a literal is a last resort.
        taken = {q for q in self.around if len(q) == 1}
        tripled = {q[0] for q in self.around if len(q) == 3}
        if quote[0] not in taken and quote[0] not in tripled:
            return updated_node
        body = updated_node.value[len(updated_node.prefix) + len(quote) : -len(quote)]
        free = [q for q in _QUOTES if q not in taken and q not in tripled] or [q for q in _QUOTES if q not in taken]
        if free and free[0] == quote[0]:
            return updated_node
        if not free or "\\" in body or any(q in body for q in _QUOTES):
            self.stuck = True
            return updated_node
        new = free[0] * len(quote)
        return updated_node.with_changes(value=f"{updated_node.prefix}{new}{body}{new}")
