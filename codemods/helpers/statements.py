"""Predicates on statements, and the pruning of blocks a rewrite emptied, shared by the codemods."""

from __future__ import annotations

from typing import Container

import libcst as cst
from codemods.engine.traverse import traverse


def is_docstring(statement: cst.CSTNode) -> bool:
    """A statement that is only a string literal (a module, class or function docstring)."""
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


# -- statements a rewrite left doing nothing, and the blocks around them ----------------------
#
# Shared by TM002 (its own removals) and TM004 (the imports it retires): a statement that goes
# keeps its comments on lines of their own; a block left with nothing goes with it when what
# holds it has no effect (see prune_if), and otherwise stays `pass` for the codemod to report.

# Builtins a test may call without effects: `if not isinstance(x, Variable): x = Variable(x)` goes whole.
PURE_BUILTINS = frozenset({"isinstance", "issubclass", "callable"})


def reference(expr: cst.BaseExpression) -> str | None:
    """A key for `a`, `a.b`, `a[0]`, `a['k']`, `a[i]` or a tuple of them (evaluating one has no
    effect that assigning it back would repeat); None for anything else."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        inner = reference(expr.value)
        return None if inner is None else f"{inner}.{expr.attr.value}"
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
        inner, index = reference(expr.value), expr.slice[0].slice.value
        if inner is None:
            return None
        if isinstance(index, (cst.Integer, cst.SimpleString)):
            return f"{inner}[{index.value}]"
        return None if reference(index) is None else f"{inner}[{reference(index)}]"
    if isinstance(expr, (cst.Tuple, cst.List)) and expr.elements:
        parts = [reference(e.value) if isinstance(e, cst.Element) else None for e in expr.elements]
        return None if None in parts else "(" + ", ".join(parts) + ")"
    return None


def pure(test: cst.BaseExpression) -> bool:
    """A condition whose evaluation has no effect: names, attributes, literals, `isinstance(...)`,
    and `not`/`and`/`or`/comparisons of those."""
    if isinstance(test, (cst.Name, cst.Integer, cst.Float, cst.SimpleString)) or reference(test) is not None:
        return True
    if isinstance(test, cst.UnaryOperation):
        return pure(test.expression)
    if isinstance(test, cst.BooleanOperation):
        return pure(test.left) and pure(test.right)
    if isinstance(test, cst.Comparison):
        return pure(test.left) and all(pure(c.comparator) for c in test.comparisons)
    if isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and test.func.value in PURE_BUILTINS:
        return not any(a.star for a in test.args) and all(a.keyword is None and pure(a.value) for a in test.args)
    return False


class _Comments(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: list[cst.Comment] = []

    def visit_Comment(self, node: cst.Comment) -> None:
        self.found.append(node)


def comment_lines(statement: cst.BaseStatement) -> list[cst.EmptyLine]:
    """What must stay of a statement that goes: its leading lines, then each comment in it on a line of its own."""
    leading = list(statement.leading_lines)
    finder = _Comments()
    traverse(statement, finder)
    own = {id(line.comment) for line in leading if line.comment is not None}
    return leading + [cst.EmptyLine(comment=c) for c in finder.found if id(c) not in own]


def drop_vanished(statements, vanish: Container[int]) -> tuple[list[cst.BaseStatement], list[cst.EmptyLine]]:
    """`statements` without those whose ids are in `vanish`, whose comments move onto the next
    statement; the comments with no statement after them are returned."""
    body: list[cst.BaseStatement] = []
    pending: list[cst.EmptyLine] = []
    for statement in statements:
        if id(statement) in vanish:
            pending += comment_lines(statement)
            continue
        if pending:
            own = list(statement.leading_lines)
            if own and own[0].comment is None:  # one blank line, not two
                while pending and pending[-1].comment is None:
                    pending.pop()
            statement = statement.with_changes(leading_lines=[*pending, *own])
            pending = []
        body.append(statement)
    return body, pending


def prune_if(updated: cst.If, test: cst.BaseExpression, emptied: Container[int], vanish: Container[int]) -> cst.If | None:
    """An `if` (or `elif`) after its blocks were emptied: None when it goes whole (its body has
    nothing left, any `else`/`elif` went, and its test has no effect), else the `if` without an
    `else`/`elif` that went. `emptied` holds the ids of emptied blocks, `vanish` of clauses gone."""
    orelse = updated.orelse
    if orelse is not None and id(orelse) in vanish:
        if id(updated.body) in emptied and pure(test):
            return None  # every branch is empty and the tests do nothing
        return updated.with_changes(orelse=None)
    if orelse is None and id(updated.body) in emptied and pure(test):
        return None
    return updated
