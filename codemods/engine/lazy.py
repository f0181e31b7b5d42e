"""Function bodies that libcst parses only when something reads them.

On legacy-dense code the libcst parse is a third of a run, yet most of a file's functions hold
none of the words of the codemods that fire on it: their pruned walks never enter those bodies,
and the code generator copies them from the source. `parse` hands libcst a skeleton of the text
in which each such body is one `pass` line, and puts a `LazyBlock` in the tree where that body
goes. A `LazyBlock` is an `IndentedBlock` whose `body` is parsed from the body's own lines the
first time anything reads it (a survey that walks the whole module, a layout, `Module.code`), so
every reader sees exactly the statements a parse of the whole text gives: the tree is the same
tree, only built later or never. tests/test_lazy.py holds lazy trees, read whole, against
libcst's parse of the text on the shapes that stress the skeleton, and runs every fixture with
and without lazy bodies; the corpus digests (tests/test_real_corpus.py) did not change.

A body stays whole (is parsed with its file) unless all of this holds: it is an indented block
of a `def`; no line of the `def` holds a word of a firing codemod; the lines after it up to the
next statement are blank (a comment there may belong to a block inside the body); and the text
has no carriage return. A body libcst could not parse is reported only where something reads it:
a function no codemod reads is copied as it is, and the output guard compiles the whole output.
"""

from __future__ import annotations

import ast
import re
from typing import Sequence

import libcst as cst

from codemods.helpers.scan import _lines

_BODY = cst.IndentedBlock.__dict__["body"]  # the slot the parsed statements live in


class LazyBlock(cst.IndentedBlock):
    """An `IndentedBlock` whose statements are parsed on first read (see the module's docstring)."""

    __slots__ = ("_lines", "_levels", "_default", "_lead", "_imports")

    def _read(self) -> Sequence[cst.BaseStatement]:
        try:
            return _BODY.__get__(self, cst.IndentedBlock)
        except AttributeError:
            pass
        statements = _parse_body(self._lines, self._levels, self._default, self._lead)
        _BODY.__set__(self, statements)
        return statements

    def _write(self, value: Sequence[cst.BaseStatement]) -> None:
        _BODY.__set__(self, value)

    body = property(_read, _write)  # type: ignore[assignment]

    @property
    def parsed(self) -> bool:
        try:
            _BODY.__get__(self, cst.IndentedBlock)
        except AttributeError:
            return False
        return True


LazyBlock.__name__ = LazyBlock.__qualname__ = "IndentedBlock"  # visitors dispatch on the name


def unread(node: cst.CSTNode) -> bool:
    """Whether `node` is a lazy block nothing has read yet (engine code that only lays out
    statements treats it as part of its statement, instead of parsing it)."""
    return isinstance(node, LazyBlock) and not node.parsed


def spells_none(node: cst.CSTNode, words: re.Pattern[str]) -> bool:
    """Whether `node` is a lazy block nothing has read yet whose lines hold no match of `words`
    (a pattern of whole names): no name in it is one of them, and a walk after those names only
    skips it."""
    return unread(node) and words.search(node._lines) is None


def import_free(node: cst.CSTNode) -> bool:
    """Whether `node` is a lazy block nothing has read yet whose lines do not even say `import`:
    a walk that looks for import statements only (helpers/names.py, helpers/spelling.py) skips
    it, and finds what it would have found."""
    return unread(node) and not node._imports


def _parse_body(lines: str, levels: tuple[str, ...], default: str, lead: Sequence[cst.EmptyLine]) -> tuple[cst.BaseStatement, ...]:
    """The statements of `lines` (a block's statements, indented by `levels`: each enclosing
    block's indentation relative to its parent's) as libcst's parse of the whole text gives them.

    The lines are parsed inside one `if 1:` per level, each at the indentation its block has in
    the file, after a first block indented by the module's `default` indentation: libcst takes
    the first indentation of a text for its default, and writes each block's own indentation
    (`IndentedBlock.indent`) relative to it, as it did for the whole text. `lead`: the comment
    lines before the first statement (in the skeleton, its stub's)."""
    text = [f"if 1:\n{default}pass\n"]
    text.extend("".join(levels[:depth]) + "if 1:\n" for depth in range(len(levels)))
    module = cst.parse_module("".join(text) + lines)
    wrapper = module.body[1]
    for _ in range(len(levels) - 1):
        wrapper = wrapper.body.body[0]
    statements = tuple(wrapper.body.body)
    first = statements[0]
    return (first.with_changes(leading_lines=(*lead, *first.leading_lines)), *statements[1:])


# -- the skeleton --------------------------------------------------------------------------------


def skeleton(source: str, module: ast.Module, hits: Sequence[int]) -> tuple[str, dict[str, str]] | None:
    """(the text with each body that can wait stubbed, marker -> the body's lines), or None when
    no body can wait. `module`: CPython's ast of `source`; `hits`: the sorted lines holding a
    word of a firing codemod."""
    if "\r" in source:
        return None
    lines = source.splitlines(keepends=True)
    hit = set(hits)
    ranges: list[tuple[int, int]] = []
    _bodies(module.body, lines, hit, ranges)
    if not ranges:
        return None
    nonce = 0
    while f"# torch-migrate:lazy:{nonce}:" in source:
        nonce += 1
    bodies: dict[str, str] = {}
    out: list[str] = []
    at = 0
    for number, (first, last) in enumerate(ranges):
        indent = lines[first][: len(lines[first]) - len(lines[first].lstrip(" \t"))]
        marker = f"# torch-migrate:lazy:{nonce}:{number}"
        out.extend(lines[at:first])
        out.append(f"{indent}pass  {marker}\n")
        bodies[marker] = "".join(lines[first : last + 1])
        at = last + 1
    out.extend(lines[at:])
    return "".join(out), bodies


def _bodies(statements: list[ast.stmt], lines: list[str], hit: set[int], ranges: list) -> None:
    """Append the (first, last) 0-based line ranges of the bodies under `statements` that can wait."""
    for statement in statements:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and _waits(statement, lines, hit):
            ranges.append((_lines(statement.body[0])[0] - 1, _lines(statement.body[-1])[1] - 1))
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list):
                _bodies(inner, lines, hit, ranges)
        for handler in getattr(statement, "handlers", ()):
            _bodies(handler.body, lines, hit, ranges)
        # not a `match`'s cases: they add a level of indentation that is no block's (codegen._blocks)


_BLANK = re.compile(r"[ \t\f]*\n?\Z")


def _waits(function: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str], hit: set[int]) -> bool:
    first, last = _lines(function)
    if any(first <= line <= last for line in hit):
        return False
    body = function.body
    start = _lines(body[0])[0]
    if start <= function.lineno:
        return False
    head = lines[start - 1]
    column = len(head) - len(head.lstrip(" \t"))
    if len(head.encode("utf-8")[: body[0].col_offset]) != column or head[:column].strip(" \t"):
        return False  # the body is not an indented block of its own lines (`def f(a,\n b): pass`)
    if not lines[last - 1].endswith("\n"):
        return False
    following = last
    while following < len(lines) and _BLANK.match(lines[following]):
        following += 1
    # a comment line after the body may belong to a block inside it: keep such a body whole
    return following == len(lines) or not lines[following].lstrip(" \t").startswith("#")


# -- the tree ------------------------------------------------------------------------------------


def parse(source: str, module: ast.Module, hits: Sequence[int]) -> cst.Module | None:
    """libcst's tree of `source`, with the bodies that can wait as `LazyBlock`s; None when none
    can, or the skeleton does not come out as planned (then the caller parses the whole text).
    Raises what `cst.parse_module` raises for the skeleton."""
    planned = skeleton(source, module, hits)
    if planned is None:
        return None
    text, bodies = planned
    tree = cst.parse_module(text)
    found = _install(tree.body, (), tree.default_indent, bodies)
    return tree if found == len(bodies) else None


def _install(statements, levels: tuple[str, ...], default: str, bodies: dict[str, str]) -> int:
    """Put a LazyBlock in place of each stub under `statements` (fresh from the parser, so seen
    by nothing yet: set in place); how many."""
    from codemods.engine.codegen import _blocks  # the blocks one level in, each with its indentation

    found = 0
    for statement in statements:
        for block, indent in _blocks(statement, default):
            inner = (*levels, indent)
            stub = _stub(block) if isinstance(statement, cst.FunctionDef) and block is statement.body else None
            if stub is not None and stub[0] in bodies:
                lazy = LazyBlock.__new__(LazyBlock)
                for name in ("header", "indent", "footer"):
                    object.__setattr__(lazy, name, getattr(block, name))
                object.__setattr__(lazy, "_lines", bodies[stub[0]])
                object.__setattr__(lazy, "_levels", inner)
                object.__setattr__(lazy, "_default", default)
                object.__setattr__(lazy, "_lead", stub[1])
                object.__setattr__(lazy, "_imports", "import" in bodies[stub[0]])  # may hold an import
                object.__setattr__(statement, "body", lazy)
                found += 1
            else:
                found += _install(block.body, inner, default, bodies)
    return found


def _stub(block: cst.IndentedBlock) -> tuple[str, tuple[cst.EmptyLine, ...]] | None:
    """(marker, the comment lines before it) of a stub block, else None."""
    if len(block.body) != 1:
        return None
    line = block.body[0]
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1 or not isinstance(line.body[0], cst.Pass):
        return None
    comment = line.trailing_whitespace.comment
    return (comment.value, tuple(line.leading_lines)) if comment is not None else None

