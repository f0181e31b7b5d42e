"""TM012 scalar-first-overloads: its declaration (SPEC) and, before parsing, its trigger regexes and gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

import ast

from codemods.gates import Gate, Safety, Spec, Stage
from codemods.helpers.scan import Scan

# method -> (positional arguments of the legacy overload, the keyword its scalar becomes)
METHODS = {
    "add_": (2, "alpha"), "add": (2, "alpha"), "sub_": (2, "alpha"), "sub": (2, "alpha"),
    "addcmul_": (3, "value"), "addcmul": (3, "value"), "addcdiv_": (3, "value"), "addcdiv": (3, "value"),
}  # fmt: skip
# torch function -> (positional arguments of the legacy overload, the keyword its scalar becomes)
FUNCTIONS = {
    "torch.add": (3, "alpha"), "torch.sub": (3, "alpha"), "torch.addcmul": (4, "value"), "torch.addcdiv": (4, "value"),
}  # fmt: skip


def triggers() -> tuple[str, ...]:
    return (r"\.(?:add|sub|addcmul|addcdiv)_?\(", r"\b(?:add|sub|addcmul|addcdiv)\(")


def _legacy_arity(call: ast.Call, scan: Scan) -> bool:
    """A superset of the codemod's sites: a call of the legacy overload's arity, all positional."""
    if call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
        return False
    if isinstance(call.func, ast.Attribute) and call.func.attr in METHODS and len(call.args) == METHODS[call.func.attr][0]:
        return True
    return any(len(call.args) == FUNCTIONS[name][0] for name in scan.qualified(call.func) & FUNCTIONS.keys())


def may_act(scan: Scan, words, facts) -> bool:
    return any(isinstance(node, ast.Call) and _legacy_arity(node, scan) for node in scan.nodes(words))


GATE = Gate(may_act=may_act)


SPEC = Spec(
    code="TM012",
    name="scalar-first-overloads",
    stage=Stage.REWRITE,
    safety=Safety.SAFE,
    target="codemods.transforms.scalar_first:ScalarFirst",
    triggers=triggers(),
    summary="p.data.add_(-lr, grad) -> add_(grad, alpha=-lr); addcmul_(v, a, b) -> addcmul_(a, b, value=v)",
    gate=GATE,
)
