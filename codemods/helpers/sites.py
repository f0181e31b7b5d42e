"""Which statements of a module can hold a codemod's sites: the walk skips the others.

A libcst transformer rebuilds every node it visits, so one codemod's walk costs about as much as
parsing the file, and a pipeline of twenty codemods costs twenty parses. Yet a codemod's sites sit
on the few lines its words appear on (`cuda`, `Variable`, `size_average`...). `Sites` maps each
statement of the tree to the lines it spans, read from CPython's `ast` of the same text (a C
parse, a fraction of libcst's cost), so a codemod can skip, unvisited and unrebuilt, every
statement none of whose lines holds one of its words.

Statements are keyed by identity. A statement an earlier codemod rebuilt is not in the map, and
is visited: pruning only ever skips statements this text is known to lay out.
"""

from __future__ import annotations

import ast
import bisect
import re
import warnings
from collections import deque
from typing import Callable, Collection, Iterable, Iterator, Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from codemods.helpers.names import _BLOCKS
from codemods.helpers.patterns import Words

_NEWLINE = re.compile(r"\r\n|\n")


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


class Scan:
    """What CPython's `ast` of a text says before libcst parses it (a C parse, a fraction of
    libcst's cost): the lines a pattern matches, the statements on those lines, and what the
    imports bind. A codemod's `may_act` reads it to decline a file whose words are there but
    whose sites are not (`x.float()` is no `np.float`); `Sites` builds on it."""

    def __init__(self, source: str, module: ast.Module) -> None:
        self.source = source
        self.module = module
        self._starts = [0] + [m.end() for m in _NEWLINE.finditer(source)]
        self.imports = [n for n in ast_statements(module) if isinstance(n, (ast.Import, ast.ImportFrom))]
        # import spans and the names they bind
        self.aliases = [(node.lineno, node.end_lineno or node.lineno, bound) for node in self.imports if (bound := _bound(node))]
        self._hits: dict[str, list[int]] = {}
        self._targets: dict[str, set[str]] | None = None

    @classmethod
    def of(cls, source: str) -> Scan | None:
        """None when CPython cannot parse the text, or its lines could be counted differently."""
        if "\r" in source.replace("\r\n", ""):
            return None  # a lone CR: CPython and our line count could disagree
        parsed = _ast(source)
        return None if parsed is None else cls(source, parsed)

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self._starts, offset)

    def hits(self, patterns: Iterable[Words]) -> list[int]:
        """Sorted line numbers a match of any pattern starts on, plus the lines that use a name
        an import on one of those lines bound (`from torch.cuda.amp import custom_fwd` makes every
        line with `custom_fwd` a site; so does `import torch.autograd.Variable as V` for `V`)."""
        lines: set[int] = set()
        for pattern in patterns:
            key = pattern.pattern
            found = self._hits.get(key)
            if found is None:
                found = self._hits[key] = sorted({self.line_of(start) for start in pattern.starts(self.source)})
            lines.update(found)
        names = {name for first, last, bound in self.aliases if _any_between(lines, first, last) for name in bound}
        if names:
            words = Words(r"\b(?:%s)\b" % "|".join(map(re.escape, sorted(names))))
            lines.update(self.line_of(start) for start in words.starts(self.source))
        return sorted(lines)

    def nodes(self, patterns: Iterable[Words]) -> Iterator[ast.AST]:
        """Every ast node of the statements a hit line of `patterns` is in (the innermost
        statement holding the line; a compound one whole when the line is its header's)."""
        lines = self.hits(patterns)
        stack = list(reversed(self.module.body)) if lines else []
        while stack:
            statement = stack.pop()
            held = _between(lines, *_lines(statement))
            if not held:
                continue
            children = [child for field in _BLOCKS for child in _statement_list(statement, field)]
            inside = {line for child in children for line in _between(held, *_lines(child))}
            if len(inside) < len(held):
                yield from ast.walk(statement)  # a line outside every child: the header's, or a simple statement
            else:
                stack.extend(reversed(children))

    def calls(self, patterns: Iterable[Words], names: Collection[str]) -> bool:
        """Whether a call on the lines of `patterns` may be a call of one of `names`."""
        return any(isinstance(n, ast.Call) and not self.qualified(n.func).isdisjoint(names) for n in self.nodes(patterns))

    def qualified(self, expr: ast.AST) -> set[str]:
        """Every dotted name `expr` (`np.float`, `F.softmax`, `Mapping`) may stand for through the
        file's imports, wherever they are (a superset of what libcst's resolution finds)."""
        dotted = ast_dotted(expr)
        if dotted is None:
            return set()
        if self._targets is None:
            self._targets = {}
            for node in self.imports:
                if isinstance(node, ast.Import):
                    for a in node.names:
                        local = a.asname or a.name.split(".")[0]
                        self._targets.setdefault(local, set()).add(a.name if a.asname else local)
                elif node.module and not node.level:
                    for a in node.names:
                        self._targets.setdefault(a.asname or a.name, set()).add(f"{node.module}.{a.name}")
        head, _, rest = dotted.partition(".")
        return {f"{target}.{rest}" if rest else target for target in self._targets.get(head, ())}


def ast_dotted(expr: ast.AST) -> str | None:
    """`a.b.c` of an ast expression, or None when it is not a plain dotted name."""
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    parts.append(expr.id)
    return ".".join(reversed(parts))


def _lines(statement: ast.AST) -> tuple[int, int]:
    first = min([statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", ()))])
    return first, statement.end_lineno or statement.lineno


def _between(lines: list[int], first: int, last: int) -> list[int]:
    return lines[bisect.bisect_left(lines, first) : bisect.bisect_right(lines, last)]


def _statement_list(node: ast.AST, field: str) -> list[ast.AST]:
    children = getattr(node, field, None)
    if not isinstance(children, list):
        return []
    out = []
    for child in children:
        if isinstance(child, (ast.ExceptHandler, getattr(ast, "match_case", ast.ExceptHandler))):
            out.extend(c for f in _BLOCKS for c in _statement_list(child, f))  # their bodies
        else:
            out.append(child)
    return out


class Sites:
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
    def of(cls, source: str, tree: cst.Module, scan: Scan | None = None) -> Sites | None:
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
        if isinstance(body, cst.IndentedBlock):
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

def ast_statements(module: ast.Module) -> list[ast.AST]:
    """Every statement (and except handler, match case) of the module, in `ast.walk`'s
    breadth-first order, without going through expressions: no class or import is inside one,
    and expressions are most of a tree's nodes."""
    found: list[ast.AST] = []
    queue = deque(module.body)
    while queue:
        node = queue.popleft()
        found.append(node)
        for name in _BLOCKS:  # in _fields order for every node type that has them
            children = getattr(node, name, None)
            if isinstance(children, list):
                queue.extend(children)
    return found


def _bound(node: ast.Import | ast.ImportFrom) -> tuple[str, ...]:
    """The names an import binds that its uses may not spell out: every name of `from M import`,
    the `as` names of `import` (`import torch.cuda` binds `torch`, and its uses say `torch.cuda`)."""
    if isinstance(node, ast.ImportFrom):
        return tuple(a.asname or a.name for a in node.names if a.name != "*")
    return tuple(a.asname for a in node.names if a.asname)


def _any_between(lines: set[int], first: int, last: int) -> bool:
    return any(line in lines for line in range(first, last + 1))


def _ast(source: str) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


class Pruner:
    """For one codemod's walk: is this statement one to skip?"""

    __slots__ = ("sites", "lines")

    def __init__(self, sites: Sites, lines: list[int]) -> None:
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
        node.visit(visitor)
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
        node.visit(visitor)
    finally:
        del visitor.on_visit, visitor.on_leave
