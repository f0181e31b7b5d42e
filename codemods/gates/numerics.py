"""TM906 numerics: its declaration (SPEC) and trigger regexes and AST gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

import ast

from codemods.gates import Gate, Safety, Spec, Stage
from codemods.helpers.scan import Scan


def triggers() -> tuple[str, ...]:
    # every site has a call of `log` or `exp` (function or method) on a trigger line, or of a
    # name an import on a trigger line binds (`from torch import log as tlog`)
    return (r"\blog\s*\(", r"\bexp\s*\(", r"\bimport\s[^\n]*\b(?:log|exp)\b")


def _is_call_of(node: ast.AST, scan: Scan, function: str) -> bool:
    """`torch.<function>(...)` or a method call `x.<function>()`, read from the ast."""
    if not isinstance(node, ast.Call):
        return False
    if f"torch.{function}" in scan.qualified(node.func):
        return True
    return isinstance(node.func, ast.Attribute) and node.func.attr == function and not node.args and not node.keywords


def _may_report(node: ast.AST, scan: Scan) -> bool:
    """A superset of the codemod's reports: a log of a sum or a difference, or exp(...) - 1."""
    if isinstance(node, ast.BinOp):
        one = isinstance(node.right, ast.Constant) and node.right.value == 1
        return isinstance(node.op, ast.Sub) and one and _is_call_of(node.left, scan, "exp")
    if not _is_call_of(node, scan, "log"):
        return False
    inner = node.args[0] if node.args else node.func.value  # method form: its receiver
    return isinstance(inner, (ast.BinOp, ast.Call))


def may_act(scan: Scan, words, facts) -> bool:
    return any(_may_report(node, scan) for node in scan.nodes(words))


GATE = Gate(may_act=may_act)


SPEC = Spec(
    code="TM906",
    name="numerics",
    stage=Stage.CHECK,
    safety=Safety.SAFE,
    target="codemods.transforms.numerics:Numerics",
    triggers=triggers(),
    summary="torch.log(1 + x) -> log1p, torch.exp(x) - 1 -> expm1, log(sum(exp(x))) -> logsumexp",
    gate=GATE,
)
