"""Which statements of a module can hold a codemod's sites: the walk skips the others.

A libcst transformer rebuilds every node it visits, so one codemod's walk costs about as much as
parsing the file, and a pipeline of twenty codemods costs twenty parses. Yet a codemod's sites sit
on the few lines its words appear on (`cuda`, `Variable`, `size_average`...). `StatementMap` maps each
statement of the tree to the lines it spans, read from CPython's `ast` of the same text (a C
parse, a fraction of libcst's cost), so a codemod can skip, unvisited and unrebuilt, every
statement none of whose lines holds one of its words.

Statements are keyed by identity. A statement an earlier codemod rebuilt is not in the map, and
is visited: pruning only ever skips statements this text is known to lay out.
"""

from __future__ import annotations

import ast
import bisect
from typing import Callable, Iterable, Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from codemods.helpers.patterns import Words
from codemods.helpers.scan import Scan
from codemods.engine.lazy import unread
from codemods.engine.traverse import traverse


class _Mismatch(Exception):
    """The ast and libcst statement lists do not line up; no pruning for this file."""


# libcst compound statement -> the ast types it parses as.
_COMPOUND: dict[type, tuple[type, ...]] = {
    cst.FunctionDef: (ast.FunctionDef, ast.AsyncFunctionDef),
    cst.ClassDef: (ast.ClassDef,),
    cst.If: (ast.If,),
    cst.For: (ast.For, ast.AsyncFor),
    cst.While: (ast.While,),
    cst.With: (ast.With, ast.AsyncWith),
    cst.Try: (ast.Try,),
}


class StatementMap:
    """Statement -> (first line, last line), and the lines a pattern matches, for one text."""

    def __init__(self, scan: Scan, tree: cst.Module) -> None:
        self.scan = scan
        self.source = scan.source
        self.spans: dict[int, tuple[cst.CSTNode, int, int]] = {}
        self._positions: dict[int, tuple] = {}
        self.elifs: set[int] = set()  # `elif` clauses: laid out only as part of their `if`
        try:
            self._block(tree.body, scan.module.body)
        except _Mismatch:
            self.spans = {}

    @classmethod
    def of(cls, source: str, tree: cst.Module, scan: Scan | None = None) -> StatementMap | None:
        """The index, or None when pruning cannot be trusted for this text (`scan`: the text's
        Scan, when already made)."""
        scan = scan if scan is not None else Scan.of(source)
        if scan is None:
            return None
        sites = cls(scan, tree)
        return sites if sites.spans else None

    def hits(self, patterns: Iterable[Words]) -> list[int]:
        return self.scan.hits(patterns)

    # -- the statement map ---------------------------------------------------------------------

    def _block(self, statements: Sequence[cst.BaseStatement], nodes: list[ast.stmt]) -> None:
        if not statements and len(nodes) == 1 and isinstance(nodes[0], ast.Pass):
            return  # a block a codemod emptied: libcst writes it as `pass`
        i = 0
        for statement in statements:
            if isinstance(statement, cst.SimpleStatementLine):
                group = nodes[i : i + len(statement.body)]
                i += len(statement.body)
                if len(group) != len(statement.body):
                    raise _Mismatch
                first, last = group[0].lineno, max(n.end_lineno or n.lineno for n in group)
            else:
                if i >= len(nodes):
                    raise _Mismatch
                node = nodes[i]
                i += 1
                kinds = _COMPOUND.get(type(statement))
                if kinds is None:
                    first, last = node.lineno, node.end_lineno or node.lineno  # match, try*: one unit
                else:
                    if not isinstance(node, kinds):
                        raise _Mismatch
                    decorators = getattr(node, "decorator_list", ())
                    first = min([node.lineno, *(d.lineno for d in decorators)])
                    last = node.end_lineno or node.lineno
                    self._children(statement, node)
            self.spans[id(statement)] = (statement, first, last)
        if i != len(nodes):
            raise _Mismatch

    def _children(self, statement: cst.BaseCompoundStatement, node: ast.stmt) -> None:
        self._body(statement.body, node.body)
        if isinstance(statement, cst.Try):
            if len(statement.handlers) != len(node.handlers):
                raise _Mismatch
            for handler, ast_handler in zip(statement.handlers, node.handlers):
                self._body(handler.body, ast_handler.body)
            if statement.finalbody is not None:
                self._body(statement.finalbody.body, node.finalbody)
        orelse = getattr(statement, "orelse", None)
        if isinstance(orelse, cst.If):  # elif: the ast holds it as the one statement of orelse
            if len(node.orelse) != 1 or not isinstance(node.orelse[0], ast.If):
                raise _Mismatch
            first = node.orelse[0].lineno
            self._children(orelse, node.orelse[0])
            self.spans[id(orelse)] = (orelse, first, node.orelse[0].end_lineno or first)
            self.elifs.add(id(orelse))
        elif orelse is not None:
            self._body(orelse.body, node.orelse)

    def _body(self, body: cst.BaseSuite, nodes: list[ast.stmt]) -> None:
        if isinstance(body, cst.IndentedBlock) and not unread(body):  # a body nothing read is its statement's
            self._block(body.body, nodes)
        # a one-line suite (`if x: y`) stays part of its statement

    def span(self, statement: cst.CSTNode) -> tuple[int, int] | None:
        """(first line, last line) of one of this text's statements; None for any other node."""
        found = self.spans.get(id(statement))
        return None if found is None or found[0] is not statement else (found[1], found[2])

    # -- positions -------------------------------------------------------------------------------

    def position(
        self, statement: cst.CSTNode, blocks: Sequence[cst.IndentedBlock], indent: str, node: cst.CSTNode
    ) -> tuple[int, int, int] | None:
        """(first line, last line, column) of `node` inside `statement`, in this text's lines; None
        when `statement` is not one of this text's statements or `node` is not in it.

        libcst's PositionProvider lays out the whole module, about two parses' worth, for every
        codemod that reports anything. Laying out just `statement`, nested in stand-in `if`s with
        the indented blocks (`blocks`) it sits in, gives the same columns, and lines off by a
        constant that the ast's first line of the statement fixes."""
        span = self.span(statement)
        if span is None or id(statement) in self.elifs:
            return None
        cached = self._positions.get(id(statement))
        if cached is None:
            inner: cst.BaseStatement = statement
            for block in reversed(blocks):
                inner = cst.If(test=cst.Name("_"), body=block.with_changes(body=[inner], footer=[]))
            module = cst.Module(body=[inner], default_indent=indent)
            positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
            decorators = getattr(statement, "decorators", ())
            anchor = positions[decorators[0]] if decorators else positions[statement]
            cached = self._positions[id(statement)] = (positions, span[0] - anchor.start.line)
        positions, offset = cached
        found = positions.get(node)
        if found is None:
            return None
        return (found.start.line + offset, found.end.line + offset, found.start.column)


class Pruner:
    """For one codemod's walk: is this statement one to skip?"""

    __slots__ = ("sites", "lines")

    def __init__(self, sites: StatementMap, lines: list[int]) -> None:
        self.sites = sites
        self.lines = lines

    def skips(self, node: cst.CSTNode) -> bool:
        span = self.sites.span(node)
        if span is None:
            return False
        first, last = span
        i = bisect.bisect_left(self.lines, first)
        return i == len(self.lines) or self.lines[i] > last


def prune_visit(
    node: cst.CSTNode,
    visitor: cst.CSTVisitor,
    pruner: Pruner | None,
    enter: Callable[[cst.CSTNode], None] | None = None,
    leave: Callable[[cst.CSTNode], None] | None = None,
) -> None:
    """`node.visit(visitor)`, skipping the statements `pruner` skips (their visit_ and leave_
    alike, so scope stacks stay balanced), and telling `enter`/`leave` of every node visited (a
    codemod keeps its path for positions that way)."""
    if pruner is None and enter is None:
        traverse(node, visitor)
        return
    visit, leave_node = visitor.on_visit, visitor.on_leave
    skipped: list[cst.CSTNode] = []

    def on_visit(n: cst.CSTNode) -> bool:
        if pruner is not None and pruner.skips(n):
            skipped.append(n)
            return False
        if enter is not None:
            enter(n)
        return visit(n)

    def on_leave(n: cst.CSTNode) -> None:
        if skipped and skipped[-1] is n:
            skipped.pop()
            return
        leave_node(n)
        if leave is not None:
            leave(n)

    visitor.on_visit, visitor.on_leave = on_visit, on_leave  # type: ignore[method-assign]
    try:
        traverse(node, visitor)
    finally:
        del visitor.on_visit, visitor.on_leave
