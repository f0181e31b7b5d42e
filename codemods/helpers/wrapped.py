"""Is this a wrapped model? The one answer to "does this value hold a model wrapped in
`DataParallel`/`DistributedDataParallel`" (whose `state_dict()` keys carry `module.`), for the
codemods, their gates and the repository's facts.

A wrapper is a call of one of `WRAPPERS` (or, in a module that defines TM103's generated
`ddp_wrap`, of that), maybe followed by a move: `DataParallel(m).cuda()`, `DDP(m).to(device)`.
The same test is written twice, once on libcst's tree (`wraps_model`, for the codemods) and once
on CPython's `ast` (`ast_wraps`, for gates and facts, which run before or without libcst); both
take the move off the same way. No libcst import at module level: gates read this module.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    import libcst as cst

WRAPPERS = frozenset(
    {
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.nn.parallel.data_parallel.DataParallel",
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
    }
)
WRAPPER_NAMES = frozenset({"DataParallel", "DistributedDataParallel"})
"""The wrappers by their last name, for the repository's facts: a file's `apex` or vendored
`DistributedDataParallel` wraps just the same, and the facts decide only where to look."""
WRAP_HELPER = "ddp_wrap"  # TM103's generated wrapper (codemods/runtime/ddp_helpers.py)
MOVES = frozenset({"cuda", "to"})


def ast_unmoved(value: ast.AST) -> ast.AST:
    """`value` without a trailing `.cuda()`/`.to(...)` on a call: `DataParallel(m).cuda()` -> the call."""
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in MOVES
        and isinstance(value.func.value, ast.Call)
    ):
        return value.func.value
    return value


def ast_wraps(value: ast.AST, qualified: Callable[[ast.expr], set[str]]) -> bool:
    """Whether `value` (an ast expression) makes a wrapped model; `qualified` gives the names an
    expression may stand for (helpers/scan.Scan.qualified). TM103's `ddp_wrap` counts wherever
    it is called: a gate may say yes where the codemod says no, never the reverse."""
    value = ast_unmoved(value)
    if not isinstance(value, ast.Call):
        return False
    return bool(qualified(value.func) & WRAPPERS) or (isinstance(value.func, ast.Name) and value.func.id == WRAP_HELPER)


def wraps_model(value: cst.BaseExpression, resolve: Callable[[cst.BaseExpression], str | None], has_wrap_helper: bool) -> bool:
    """Whether assigning `value` (a libcst expression) stores a wrapped model; `resolve` gives
    an expression's qualified name, and `ddp_wrap(...)` counts when the module defines it."""
    import libcst as cst

    if (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value in MOVES
        and isinstance(value.func.value, cst.Call)
    ):
        value = value.func.value
    if not isinstance(value, cst.Call):
        return False
    return resolve(value.func) in WRAPPERS or (
        has_wrap_helper and isinstance(value.func, cst.Name) and value.func.value == WRAP_HELPER
    )
