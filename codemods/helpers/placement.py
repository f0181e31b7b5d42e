"""Where generated code goes in a module: after its imports, and only once.

Three questions a codemod that writes new top-level code asks, one function each:

- what counts as an import line. `is_import_line` (every statement on the line is an import) is
  what placement reads; `holds_import` (at least one is) is what an import editor must not skip;
  `is_single_import` (exactly one import, nothing else) is the leading block libcst's
  AddImportsVisitor reads and extends;
- where "after the imports" is. `after_import_block` runs on through the import block of a real
  script (simple statements such as `sys.path.insert(...)`, notebook cell boundaries, `try: import
  x` guards) to the first def, class or other compound statement, and is what new code that the
  module's code will call goes after (so it sees every import, and is defined before the code
  that uses it). `after_leading_imports` is where libcst's adder puts new imports;
- whether the module already has it. `defines` and `insert_once` keep a generated helper from
  being written twice.

And one about its text: `in_module_newlines` gives generated source the module's line ending
before it is parsed (libcst writes its newline tokens with the module's, but a token that spans
lines, such as a helper's docstring, keeps the line ends it was parsed with).
"""

from __future__ import annotations

from typing import Sequence

import libcst as cst

from codemods.helpers.statements import is_docstring

_IMPORTS = (cst.Import, cst.ImportFrom)


def is_import_line(statement: cst.CSTNode) -> bool:
    """A line of imports and nothing else (`import os, sys` or `import os; import sys`)."""
    return isinstance(statement, cst.SimpleStatementLine) and all(isinstance(s, _IMPORTS) for s in statement.body)


def holds_import(statement: cst.CSTNode) -> bool:
    """A line with an import on it, maybe among other statements (`import x; x.setup()`)."""
    return isinstance(statement, cst.SimpleStatementLine) and any(isinstance(s, _IMPORTS) for s in statement.body)


def is_single_import(statement: cst.CSTNode) -> bool:
    """A line that is one import statement and nothing else (what libcst's adder counts as the
    leading import block)."""
    return isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and isinstance(statement.body[0], _IMPORTS)


def is_import_guard(statement: cst.BaseStatement) -> bool:
    """`try: import x` / `if cond: import x` at the top of a module: part of its import block."""
    if not isinstance(statement, (cst.Try, cst.If)):
        return False
    body = statement.body.body if isinstance(statement.body, cst.IndentedBlock) else [statement.body]
    return any(is_import_line(s) or is_import_guard(s) for s in body)


def binds(statement: cst.BaseStatement, name: str) -> bool:
    """Whether `statement` is an import line that binds `name` (`import torch.nn` binds `torch`)."""
    if not is_import_line(statement):
        return False
    for small in statement.body:
        names = small.names if isinstance(small, _IMPORTS) else ()
        if isinstance(names, cst.ImportStar):
            continue
        for alias in names:
            bound = alias.evaluated_alias or alias.evaluated_name.split(".")[0]
            if bound == name:
                return True
    return False


def _ends_import_block(statement: cst.BaseStatement) -> bool:
    """A def, a class or a compound statement other than an import guard: code from here on may
    call what is generated, so it goes before it."""
    return not isinstance(statement, cst.SimpleStatementLine) and not is_import_guard(statement)


def after_import_block(body: Sequence[cst.BaseStatement], first_use: int | None = None, needs: str | None = None) -> int:
    """Index after the last import of the import block: after a docstring and any `from
    __future__`; the block runs on through simple statements such as `sys.path.insert(...)`,
    notebook cell boundaries and `try: import x` guards, up to the first def, class or other
    compound statement. With `needs`, also after the later import that binds that name (how the
    generated code spells a module); never after `first_use`, the first statement that uses
    what is generated."""
    limit = len(body) if first_use is None else first_use
    start = 1 if body and is_docstring(body[0]) else 0
    index = start
    for position in range(start, limit):
        statement = body[position]
        if _ends_import_block(statement):
            break
        if is_import_line(statement) or is_import_guard(statement):
            index = position + 1
    if needs is not None:
        for i, statement in enumerate(body[:limit]):
            if binds(statement, needs):
                index = max(index, i + 1)
                break
    return min(index, limit)


def after_leading_imports(body: Sequence[cst.BaseStatement]) -> int:
    """Index after the docstring and the single-import lines that follow it: where libcst's
    AddImportsVisitor adds imports."""
    at = 1 if body and is_docstring(body[0]) else 0
    while at < len(body) and is_single_import(body[at]):
        at += 1
    return at


def defines(module: cst.Module, name: str) -> bool:
    """Whether the module has a top-level `def name` or `class name`."""
    return any(isinstance(s, (cst.FunctionDef, cst.ClassDef)) and s.name.value == name for s in module.body)


def insert_once(module: cst.Module, name: str, statement: cst.BaseStatement, at: int) -> cst.Module:
    """`module` with `statement` (the generated `def name` or `class name`) inserted at index
    `at` of its body; unchanged when it already defines `name` at top level (a second run)."""
    if defines(module, name):
        return module
    body = list(module.body)
    body.insert(at, statement)
    return module.with_changes(body=body)


def in_module_newlines(code: str, module: cst.Module) -> str:
    """Generated source (written with `\\n`) with `module`'s line ending, to be parsed and inserted
    into it: in a CRLF file every line it adds ends in CRLF, its docstrings' lines too."""
    newline = module.default_newline
    return code if newline == "\n" else code.replace("\n", newline)
