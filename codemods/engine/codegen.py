"""A module's code from its top-level statements' code, each statement's generated once per file.

The trees one file passes through (the parsed input, each rewriting codemod's output, the final
tree) share every top-level statement no codemod changed: engine/traverse.py returns an unchanged
node as it is. The input's code is generated for the round-trip check and the statement map, and
each later tree's then costs only the statements that are new in it.

`Module.code` is the module's header, statements and footer, each generated on its own state
at indent zero (a statement ends with its newline); `ModuleCode` joins the same pieces. A module
without a trailing newline (libcst drops the last token) is generated whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import libcst as cst


class ModuleCode:
    """`ModuleCode()(tree) == tree.code`, generating only the top-level nodes not seen before."""

    __slots__ = ("_parts",)

    def __init__(self) -> None:
        # id(node) -> (node, its code, (indent, newline)): the node is kept so its id stays its own
        self._parts: dict[int, tuple[cst.CSTNode, str, tuple[str, str]]] = {}

    def __call__(self, tree: cst.Module) -> str:
        if not tree.has_trailing_newline:
            return tree.code
        style = (tree.default_indent, tree.default_newline)
        parts = self._parts
        pieces: list[str] = []
        for node in (*tree.header, *tree.body, *tree.footer):
            known = parts.get(id(node))
            if known is None or known[0] is not node or known[2] != style:
                known = parts[id(node)] = (node, tree.code_for_node(node), style)
            pieces.append(known[1])
        return "".join(pieces) or tree.default_newline
