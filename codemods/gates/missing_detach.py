"""TM901 missing-detach: its declaration (SPEC) and, before parsing, its trigger regexes and gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

import ast

from codemods.gates import Gate, Safety, Spec, Stage
from codemods.helpers.patterns import Words
from codemods.helpers.scan import Scan


def triggers() -> tuple[str, ...]:
    return (r"\.backward\s*\(",)


_STEP = Words(r"\bstep\b")
_OPTIM = Words(r"optim")  # torch.optim, `from torch import optim`, and (Scan.hits) what they import


def may_act(scan: Scan, words, facts) -> bool:
    """A report needs a `.backward()`, a `.step()` and an optimizer built from torch.optim
    in this file (most files that call backward() receive their optimizer from elsewhere)."""

    def called(patterns, method: str) -> bool:
        return any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == method
            for n in scan.nodes(patterns)
        )

    def optimizer(node: ast.AST) -> bool:
        return isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and any(
            q.startswith("torch.optim.") and not q.startswith("torch.optim.lr_scheduler.")
            for q in scan.qualified(node.value.func)
        )

    return (
        called(words, "backward")
        and called([_STEP], "step")
        and any(optimizer(node) for node in scan.nodes([_OPTIM]))
    )


GATE = Gate(may_act=may_act)


SPEC = Spec(
    code="TM901",
    name="missing-detach",
    stage=Stage.CHECK,
    safety=Safety.SAFE,
    target="codemods.transforms.missing_detach:MissingDetach",
    triggers=triggers(),
    facts=("module_classes",),
    summary="a model's output feeds another model's loss without .detach() (GAN, teacher-student)",
    gate=GATE,
)
