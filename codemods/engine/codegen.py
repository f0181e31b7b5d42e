"""A module's code, each statement's (at any depth) generated once per file.

The trees one file passes through (the parsed input, each rewriting codemod's output, the final
tree) share every statement no codemod changed: engine/traverse.py returns an unchanged node as
it is. The input's code is generated for the round-trip check and the statement map, and each
later tree's then costs only the statements that are new in it. A rewrite deep inside a class
makes a new class, a new method and a new statement: only the statement is generated again, and
the class and the method only for their own lines (their headers and the lines around their
bodies), the other statements of their bodies being copied as they were.

How: libcst generates a statement on a `CodegenState` whose indentation is that of the block the
statement sits in, and nothing else of the state changes what it writes (the module's default
indent and newline aside, which are fixed per file). So a statement's code is keyed by the
statement and the indentation it is generated at. A compound statement is generated from a
shadow of itself whose block statements are `_Known` nodes, which write their code as the cache
holds it for the indentation reached (generating it first if needed, recursively).

`Module.code` is the module's header, statements and footer, each generated on its own state at
indent zero (a statement ends with its newline); `ModuleCode` joins the same pieces. A module
without a trailing newline (libcst drops the last token) is generated whole.

Seeded (`seed`), a ModuleCode does not generate the input at all: each statement's code is its
own lines of the source, cut where CPython's ast and the statement's leading and trailing
comment lines say it begins and ends (engine/statement_map.py lays the statements out), and every
statement the output keeps is copied from the source, byte for byte. Those cuts must meet end to
end in every block, or nothing is seeded. What libcst still generates is only what the codemods
rebuilt; `reproduces` then checks that each statement they replaced or removed generates as its
source lines, from its own parts (its kept statements standing for themselves): the round trip
that matters, at the cost of the changed statements alone.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterator

import libcst as cst
from libcst._nodes.internal import CodegenState

from codemods.engine.lazy import unread
from codemods.engine.traverse import traverse

if TYPE_CHECKING:
    from codemods.engine.statement_map import StatementMap

_NEWLINE = re.compile(r"\r\n?|\n")  # the line ends CPython's tokenizer counts (and libcst keeps)

# What holds indented blocks, and what sits between a compound statement and its blocks (`else:`,
# `except:`, `finally:`, `case`): the shadow walk enters these and nothing else.
_HOLDERS = (
    cst.BaseCompoundStatement, cst.IndentedBlock, cst.Else, cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally,
    cst.MatchCase,
)  # fmt: skip


class ModuleCode:
    """`ModuleCode()(tree) == tree.code`, generating only the statements not seen before (at the
    indentation they are seen at)."""

    __slots__ = ("_parts", "_style", "_seeds")

    def __init__(self) -> None:
        # (id(node), indentation) -> (node, its code): the node is kept so its id stays its own
        self._parts: dict[tuple[int, tuple[str, ...]], tuple[cst.CSTNode, str]] = {}
        self._style: tuple[str, str] | None = None  # (default indent, default newline) of the parts
        self._seeds: set[tuple[int, tuple[str, ...]]] = set()  # the keys of _parts cut from the source

    def __call__(self, tree: cst.Module) -> str:
        if not tree.has_trailing_newline:
            return tree.code
        style = (tree.default_indent, tree.default_newline)
        if style != self._style:
            self._parts.clear()
            self._style = style
        pieces = [self._code(node, ()) for node in (*tree.header, *tree.body, *tree.footer)]
        return "".join(pieces) or tree.default_newline

    def _code(self, node: cst.CSTNode, indent: tuple[str, ...]) -> str:
        """`node`'s code generated inside blocks whose indentation tokens are `indent`."""
        key = (id(node), indent)
        known = self._parts.get(key)
        if known is not None and known[0] is node:
            return known[1]
        code = self._parts[key] = (node, self._generate(node, indent))
        return code[1]

    def _generate(self, node: cst.CSTNode, indent: tuple[str, ...]) -> str:
        default_indent, default_newline = self._style
        target = traverse(node, _Shadow(self)) if isinstance(node, cst.BaseCompoundStatement) else node
        state = CodegenState(default_indent=default_indent, default_newline=default_newline, indent_tokens=list(indent))
        target._codegen(state)
        return "".join(state.tokens)

    # -- seeded from the source ------------------------------------------------------------------

    def seed(self, source: str, tree: cst.Module, statement_map: StatementMap | None) -> bool:
        """Take the code of `tree`'s statements (parsed from `source`; `statement_map`, their
        lines) from `source`. False, with nothing seeded, where the cuts do not meet end to end
        (or there is no map): then this ModuleCode generates everything, as unseeded."""
        if statement_map is None or not tree.has_trailing_newline or not tree.body:
            return False
        self._style = (tree.default_indent, tree.default_newline)
        starts = [0, *(m.end() for m in _NEWLINE.finditer(source))]  # line n begins at starts[n - 1]
        if starts[-1] != len(source):
            return False
        cuts: list[tuple[cst.BaseStatement, tuple[str, ...], int, int]] = []
        if not _cut(tree.body, (), statement_map.spans, cuts, tree.default_indent):
            return False
        first, last = cuts[0][2], max(end for _, indent, _, end in cuts if not indent)
        header = "".join(self._generate(line, ()) for line in tree.header)
        footer = "".join(self._generate(line, ()) for line in tree.footer)
        if source[: starts[first - 1]] != header or source[starts[last] :] != footer:
            return False
        for statement, indent, begin, end in cuts:
            key = (id(statement), indent)
            self._parts[key] = (statement, source[starts[begin - 1] : starts[end]])
            self._seeds.add(key)
        return True

    def reproduces(self, tree: cst.Module, output: cst.Module) -> bool:
        """For a seeded ModuleCode (`tree`, the seeded input; `output`, a tree made from it):
        whether every statement of `tree` that `output` does not keep as it is (at its
        indentation) generates as its source lines. A statement the output keeps is copied from
        the source; one it rebuilt or dropped is checked here, with its own kept statements
        standing for themselves."""
        kept: set[tuple[int, tuple[str, ...]]] = set()
        self._kept(output.body, (), kept)
        return self._replaced_reproduce(tree.body, (), kept)

    def _kept(self, statements, indent: tuple[str, ...], kept: set) -> None:
        for statement in statements:
            key = (id(statement), indent)
            if key in self._seeds and self._parts[key][0] is statement:
                kept.add(key)
            else:
                for block, token in _blocks(statement, self._style[0]):
                    self._kept(block.body, (*indent, token), kept)

    def _replaced_reproduce(self, statements, indent: tuple[str, ...], kept: set) -> bool:
        for statement in statements:
            key = (id(statement), indent)
            if key in kept or key not in self._seeds:
                continue  # kept as it is; or not seeded, and then generated whole in its parent's check
            if self._generate(statement, indent) != self._parts[key][1]:
                return False
            for block, token in _blocks(statement, self._style[0]):
                if not self._replaced_reproduce(block.body, (*indent, token), kept):
                    return False
        return True


def _cut(
    statements, indent: tuple[str, ...], spans: dict, cuts: list, default_indent: str
) -> bool:
    """Append (statement, indentation, first line, last line) for `statements` (one block) and
    the blocks inside them, each statement's lines running from its leading comment lines to the
    footers of the blocks it ends with; False where two neighbours' lines do not meet."""
    end = None
    for statement in statements:
        span = spans.get(id(statement))
        if span is None or span[0] is not statement:
            return False
        begin = span[1] - len(statement.leading_lines)
        if end is not None and begin != end + 1:
            return False
        end = span[2] + _trailing(statement)
        cuts.append((statement, indent, begin, end))
        for block, token in _blocks(statement, default_indent):
            if unread(block):
                continue  # a body nothing read (engine/lazy.py): copied with its statement
            if block.body and id(block.body[0]) in spans and not _cut(block.body, (*indent, token), spans, cuts, default_indent):
                return False
    return True


def _trailing(statement: cst.BaseStatement) -> int:
    """The lines of `statement`'s code after the line of its last token: the footers (comment
    lines kept with a block) of the blocks it ends with, innermost last."""
    count = 0
    while isinstance(statement, cst.BaseCompoundStatement):
        suite = _last_suite(statement)
        if not isinstance(suite, cst.IndentedBlock):
            break
        count += len(suite.footer)
        if unread(suite) or not suite.body:
            break  # a lazy body is followed by blank lines only: no block inside it has a footer
        statement = suite.body[-1]
    return count


def _last_suite(statement) -> cst.BaseSuite:
    """The suite a compound statement's code ends with (`finally`, `else`/`elif`, the last
    `except` or `case`, or its body)."""
    finalbody = getattr(statement, "finalbody", None)
    if finalbody is not None:
        return finalbody.body
    orelse = getattr(statement, "orelse", None)
    if isinstance(orelse, cst.If):
        return _last_suite(orelse)
    if orelse is not None:
        return orelse.body
    handlers = getattr(statement, "handlers", None) or getattr(statement, "cases", None)
    if handlers:
        return handlers[-1].body
    return statement.body


def _blocks(statement, default_indent: str) -> Iterator[tuple[cst.IndentedBlock, str]]:
    """The indented blocks of a compound statement whose statements sit one level in, with that
    level's indentation token (not `match`: its cases add a level of their own)."""
    if not isinstance(statement, cst.BaseCompoundStatement) or isinstance(statement, cst.Match):
        return
    clauses = [statement]
    orelse = getattr(statement, "orelse", None)
    while isinstance(orelse, cst.If):
        clauses.append(orelse)
        orelse = orelse.orelse
    suites = [clause.body for clause in clauses]
    suites += [handler.body for handler in getattr(statement, "handlers", ())]
    if orelse is not None:
        suites.append(orelse.body)
    finalbody = getattr(statement, "finalbody", None)
    if finalbody is not None:
        suites.append(finalbody.body)
    for suite in suites:
        if isinstance(suite, cst.IndentedBlock):
            yield suite, default_indent if suite.indent is None else suite.indent


class _Known(cst.BaseStatement):
    """Stands, in a shadow, for a block statement: writes the ModuleCode's code for it at the
    indentation the shadow's generation has reached (a `match` indents its cases, a block its
    statements: whatever the node types do, the state knows)."""

    __slots__ = ("_owner", "_node")

    def __init__(self, owner: ModuleCode, node: cst.BaseStatement) -> None:
        object.__setattr__(self, "_owner", owner)
        object.__setattr__(self, "_node", node)

    def _visit_and_replace_children(self, visitor):
        return self

    def _codegen_impl(self, state: CodegenState) -> None:
        state.add_token(self._owner._code(self._node, tuple(state.indent_tokens)))


class _Shadow(cst.CSTTransformer):
    """A compound statement with each statement of its blocks replaced by a `_Known`."""

    def __init__(self, owner: ModuleCode) -> None:
        super().__init__()
        self._owner = owner
        self._open: list[cst.CSTNode] = []  # the holders entered, innermost last

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._open and (isinstance(self._open[-1], cst.IndentedBlock) or not isinstance(node, _HOLDERS)):
            return False  # a block's statement (replaced on leaving it), or a header's parts
        self._open.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):
        if self._open and self._open[-1] is original_node:
            self._open.pop()
        elif self._open and isinstance(self._open[-1], cst.IndentedBlock):
            return _Known(self._owner, original_node)
        return updated_node
