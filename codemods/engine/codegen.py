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
"""

from __future__ import annotations

import libcst as cst
from libcst._nodes.internal import CodegenState

from codemods.engine.traverse import traverse

# What holds indented blocks, and what sits between a compound statement and its blocks (`else:`,
# `except:`, `finally:`, `case`): the shadow walk enters these and nothing else.
_HOLDERS = (
    cst.BaseCompoundStatement, cst.IndentedBlock, cst.Else, cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally,
    cst.MatchCase,
)  # fmt: skip


class ModuleCode:
    """`ModuleCode()(tree) == tree.code`, generating only the statements not seen before (at the
    indentation they are seen at)."""

    __slots__ = ("_parts", "_style")

    def __init__(self) -> None:
        # (id(node), indentation) -> (node, its code): the node is kept so its id stays its own
        self._parts: dict[tuple[int, tuple[str, ...]], tuple[cst.CSTNode, str]] = {}
        self._style: tuple[str, str] | None = None  # (default indent, default newline) of the parts

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
        default_indent, default_newline = self._style
        target = traverse(node, _Shadow(self)) if isinstance(node, cst.BaseCompoundStatement) else node
        state = CodegenState(default_indent=default_indent, default_newline=default_newline, indent_tokens=list(indent))
        target._codegen(state)
        code = "".join(state.tokens)
        self._parts[key] = (node, code)
        return code


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
