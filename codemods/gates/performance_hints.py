"""TM907 performance-hints: its declaration (SPEC) and, before parsing, its trigger regexes and gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

import ast

from codemods.gates import Gate, Safety, Spec, Stage
from codemods.helpers.scan import Scan, ast_star_args

DATALOADERS = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
# DataLoader's positional parameters up to num_workers
LOADER_POSITIONAL = ("dataset", "batch_size", "shuffle", "sampler", "batch_sampler", "num_workers")


def triggers() -> tuple[str, ...]:
    return (r"\bDataLoader\b", r"\bset_to_none\s*=\s*False\b", r"\bzero_grad\s*\(\s*False\b")


def _passed(call: ast.Call, position: int, name: str) -> list[ast.expr]:
    """What a call may pass for the parameter at `position` named `name`."""
    passed = [k.value for k in call.keywords if k.arg == name]
    return passed + call.args[position : position + 1]


def _literal_may_be(value: ast.expr, wanted: object) -> bool:
    """Whether helpers.arguments.literal of this argument may equal `wanted`: a constant that is
    (an int or a bool, the literals that compare equal to 0 or False), or a `not ...`."""
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
        return True
    return isinstance(value, ast.Constant) and isinstance(value.value, int) and value.value == wanted


def _may_report(node: ast.AST, scan: Scan) -> bool:
    """The codemod's decision, from the ast: a DataLoader call without a num_workers that is not a
    literal other than 0, or a `zero_grad` given a literal False; never a call with `*`/`**`."""
    if not isinstance(node, ast.Call):
        return False
    if ast_star_args(node):
        return False
    if not scan.qualified(node.func).isdisjoint(DATALOADERS):
        workers = _passed(node, LOADER_POSITIONAL.index("num_workers"), "num_workers")
        return not workers or any(_literal_may_be(value, 0) for value in workers)
    if isinstance(node.func, ast.Attribute) and node.func.attr == "zero_grad":
        flag = _passed(node, 0, "set_to_none")
        # `is False`: a 0 is not the literal False the codemod asks for
        return any(
            (isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not))
            or (isinstance(value, ast.Constant) and value.value is False)
            for value in flag
        )
    return False


def may_act(scan: Scan, words, facts) -> bool:
    """A superset of the codemod's reports: most files that name DataLoader pass num_workers."""
    return any(_may_report(node, scan) for node in scan.nodes(words))


GATE = Gate(may_act=may_act)


SPEC = Spec(
    code="TM907",
    name="performance-hints",
    stage=Stage.CHECK,
    safety=Safety.SAFE,
    target="codemods.transforms.performance_hints:PerformanceHints",
    triggers=triggers(),
    summary="DataLoader without num_workers; zero_grad(set_to_none=False)",
    gate=GATE,
)
