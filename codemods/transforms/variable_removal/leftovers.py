"""What TM002's rewrite leaves doing nothing: `x = Variable(x)` became `x = x`, which goes, and the
blocks left empty (`with torch.no_grad(): pass` goes; an `if`, `for` or `while` is `pass`, reported)."""

from __future__ import annotations

from typing import Sequence

import libcst as cst

from codemods.helpers.statements import drop_vanished, prune_if, reference


# `with` contexts that only set the grad mode: with nothing left inside, the block does nothing.
GRAD_MODES = frozenset(
    {"torch.no_grad", "torch.enable_grad", "torch.set_grad_enabled", "torch.inference_mode",
     "torch.autograd.no_grad", "torch.autograd.enable_grad", "torch.autograd.set_grad_enabled",
     "torch.autograd.grad_mode.no_grad"}
)  # fmt: skip
NO_GRAD = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad"})


def _is_no_op(statement: cst.BaseSmallStatement) -> bool:
    """`x = x`, `self.h = self.h`, `a, b = a, b`."""
    if not isinstance(statement, cst.Assign) or len(statement.targets) != 1:
        return False
    key = reference(statement.targets[0].target)
    return key is not None and key == reference(statement.value)


def _without_no_ops(original: Sequence[cst.BaseSmallStatement], updated: Sequence[cst.BaseSmallStatement]):
    """The small statements of a line without those this walk made no-ops (None: there are none).
    A `x = x` the user wrote is theirs."""
    kept = [u for o, u in zip(original, updated) if not _is_no_op(u) or _is_no_op(o)]
    if len(kept) == len(updated):
        return None
    if kept:
        kept[-1] = kept[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
    return kept


class Leftovers:
    """The leftovers `VariableRemoval` cleans up (a part of that codemod: `self` is the codemod,
    with the `_vanish`/`_emptied` nodes and the `_no_grad` depth it keeps)."""

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        """`x = Variable(x)` became `x = x`: the statement goes (its block drops the line, and keeps
        its comments)."""
        kept = _without_no_ops(original_node.body, updated_node.body)
        if kept is None:
            return updated_node
        if not kept:
            self._vanish[id(updated_node)] = updated_node
            return updated_node
        return updated_node.with_changes(body=kept)

    def leave_SimpleStatementSuite(
        self, original_node: cst.SimpleStatementSuite, updated_node: cst.SimpleStatementSuite
    ) -> cst.SimpleStatementSuite:
        kept = _without_no_ops(original_node.body, updated_node.body)
        if kept is None:
            return updated_node
        if kept:
            return updated_node.with_changes(body=kept)
        emptied = updated_node.with_changes(body=[cst.Pass()])
        self._emptied[id(emptied)] = emptied
        return emptied

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        if not any(id(s) in self._vanish for s in updated_node.body):
            return updated_node
        body, left = self._drop_vanished(updated_node.body)
        if body:
            return updated_node.with_changes(body=body, footer=[*left, *updated_node.footer])
        emptied = updated_node.with_changes(body=[cst.SimpleStatementLine([cst.Pass()], leading_lines=left)])
        self._emptied[id(emptied)] = emptied
        return emptied

    def _drop_vanished(self, statements) -> tuple[list[cst.BaseStatement], list[cst.EmptyLine]]:
        """`statements` without the vanished ones, whose comments move onto the next statement;
        the comments with no statement after them are returned."""
        return drop_vanished(statements, self._vanish)

    def visit_With(self, node: cst.With) -> None:
        self._no_grad += self._grad_mode(node, NO_GRAD)

    def leave_With(self, original_node: cst.With, updated_node: cst.With) -> cst.With:
        self._no_grad -= self._grad_mode(original_node, NO_GRAD)
        if id(updated_node.body) in self._emptied and self._grad_mode(original_node, GRAD_MODES):
            self._vanish[id(updated_node)] = updated_node  # `with torch.no_grad(): pass`
        return updated_node

    def _grad_mode(self, node: cst.With, modes: frozenset[str]) -> bool:
        return all(
            isinstance(item.item, cst.Call) and item.asname is None and self.qualified_name(item.item.func) in modes
            for item in node.items
        )

    def leave_Else(self, original_node: cst.Else, updated_node: cst.Else) -> cst.Else:
        if id(updated_node.body) in self._emptied:
            self._vanish[id(updated_node)] = updated_node
        return updated_node

    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> cst.If:
        pruned = prune_if(updated_node, original_node.test, self._emptied, self._vanish)
        if pruned is None:
            self._vanish[id(updated_node)] = updated_node
            return updated_node
        return self._left_empty(original_node, pruned, "its condition")

    def leave_For(self, original_node: cst.For, updated_node: cst.For) -> cst.For:
        return self._left_empty(original_node, updated_node, "the loop itself")

    def leave_While(self, original_node: cst.While, updated_node: cst.While) -> cst.While:
        return self._left_empty(original_node, updated_node, "the loop itself")

    def _left_empty(self, original_node, updated_node, effects: str):
        """A block that only wrapped tensors is `pass` now; what holds it may have effects, so it stays, reported."""
        if id(updated_node.body) in self._emptied and not self.suppressed(original_node):
            self.finding(
                original_node,
                f"this block only wrapped tensors in `Variable`, which does nothing today: it is `pass` now;"
                f" delete it ({effects} may have effects, so it is not removed)",
            )
        return updated_node
