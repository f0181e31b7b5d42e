"""TM003 scalar-item: its declaration (SPEC) and, before parsing, its trigger regexes and gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

import ast

from codemods.gates import Gate, Safety, Spec, Stage
from codemods.helpers.scan import Scan


def triggers() -> tuple[str, ...]:
    return (r"\.data\s*(?:\[\s*0\s*\]|\.(?:cpu|numpy)\s*\()", r"\.cpu\s*\(\s*\)\s*\.data\s*[\[.]")


def _scalar_read(node: ast.Subscript) -> bool:
    """The ast side of the codemod's `_scalar_read`: `x.data[0]`, `x.data.cpu()[0]`,
    `x.cpu().data[0]`, `x.data.numpy()[0]` (a chain of `.data` and argument-less `.cpu()`/
    `.numpy()` with at least one `.data`, read at index 0)."""
    index = node.slice
    if not (isinstance(index, ast.Constant) and type(index.value) is int and index.value == 0):
        return False
    expr, seen_data = node.value, False
    while True:
        if isinstance(expr, ast.Attribute) and expr.attr == "data":
            seen_data, expr = True, expr.value
        elif (
            isinstance(expr, ast.Call)
            and not expr.args
            and not expr.keywords
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in ("cpu", "numpy")
        ):
            expr = expr.func.value
        else:
            return seen_data


def may_act(scan: Scan, words, facts) -> bool:
    """A superset of the codemod's sites (and findings): a `.data[0]`-shaped read on its lines."""
    return any(isinstance(node, ast.Subscript) and _scalar_read(node) for node in scan.nodes(words))


GATE = Gate(may_act=may_act)


SPEC = Spec(
    code="TM003",
    name="scalar-item",
    stage=Stage.REWRITE,
    safety=Safety.SAFE,
    target="codemods.transforms.scalar_item:ScalarItem",
    triggers=triggers(),
    summary="loss.data[0] -> loss.item() (only on provably 0-dim values)",
    gate=GATE,
)
