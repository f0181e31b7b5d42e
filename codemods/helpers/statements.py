"""Predicates on module-level statements shared by the codemods that insert code after imports."""

from __future__ import annotations

import libcst as cst


def is_docstring(statement: cst.CSTNode) -> bool:
    """A statement that is only a string literal (a module, class or function docstring)."""
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )
