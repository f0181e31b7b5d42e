"""TM011 bool-masks: its declaration (SPEC) and trigger regexes and the names both halves share (no libcst;
see gates/__init__.py)."""

from __future__ import annotations

import ast

from codemods.gates import Gate, Safety, Spec, Stage
from codemods.helpers.scan import Scan

# The uint8 spellings a mask is made with, and their bool counterparts (qualified names).
BOOL_OF = {
    "torch.uint8": "torch.bool",
    "torch.ByteTensor": "torch.BoolTensor",
    "torch.cuda.ByteTensor": "torch.cuda.BoolTensor",
}


def triggers() -> tuple[str, ...]:
    # A mask can only be made uint8 with one of these words; the sinks (`masked_fill`, `x[m]`,
    # `torch.where`) are too common to be triggers. Each starts with a literal character (a
    # leading `\b` makes `re` try every position).
    return (r"\.byte\(", r"ByteTensor", r"uint8\b")


def _makes_uint8(call: ast.Call, scan: Scan) -> bool:
    """A superset of the transform's makers, from the ast: `.byte()`, a `ByteTensor` call, a
    `dtype=` or `.type`/`.to` argument that is torch's uint8 (not NumPy's)."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "byte" and not call.args:
        return True
    if scan.qualified(func) & {"torch.ByteTensor", "torch.cuda.ByteTensor"}:
        return True
    values = [k.value for k in call.keywords if k.arg == "dtype"]
    if isinstance(func, ast.Attribute) and func.attr in ("type", "to"):
        values += call.args[:2]
    for value in values:
        if isinstance(value, ast.Constant) and value.value in ("torch.ByteTensor", "torch.cuda.ByteTensor"):
            return True
        if scan.qualified(value) & BOOL_OF.keys():
            return True
    return False


def may_act(scan: Scan, words, facts) -> bool:
    return any(isinstance(node, ast.Call) and _makes_uint8(node, scan) for node in scan.nodes(words))


GATE = Gate(may_act=may_act)


SPEC = Spec(
    code="TM011",
    name="bool-masks",
    stage=Stage.REWRITE,
    safety=Safety.SAFE,
    target="codemods.transforms.bool_masks:BoolMasks",
    triggers=triggers(),
    summary="(x == pad).byte() / torch.ByteTensor / dtype=torch.uint8 used as a mask -> .bool() / BoolTensor / torch.bool",
    gate=GATE,
    emits=(
        "torch.bool",
        "torch.BoolTensor",
        "torch.cuda.BoolTensor",
    ),
)
