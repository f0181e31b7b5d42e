"""TM002 variable-removal: its declaration (SPEC) and, before parsing, its trigger regexes and gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from codemods.gates import Gate, Safety, Spec, Stage
from codemods.helpers.scan import Scan


VARIABLE = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})


def triggers() -> tuple[str, ...]:
    return (r"\bVariable\b",)


def may_act(scan: Scan, words, facts) -> bool:
    return scan.calls(words, VARIABLE)  # every change starts at a call (tf.Variable is none)


GATE = Gate(may_act=may_act)


SPEC = Spec(
    code="TM002",
    name="variable-removal",
    stage=Stage.REWRITE,
    safety=Safety.SAFE,
    target="codemods.transforms.variable_removal:VariableRemoval",
    triggers=triggers(),
    summary="Variable(x) -> x; Variable(x, requires_grad=True) -> x.requires_grad_()",
    gate=GATE,
)
