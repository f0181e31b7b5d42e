"""TM903 softmax-without-dim: its declaration (SPEC) and, before parsing, its trigger regexes and gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

import ast

from codemods.gates import Gate, Safety, Spec, Stage
from codemods.helpers.scan import Scan, ast_star_args


# qualified name -> index of `dim` among the positional parameters
DIM_POSITION = {
    "torch.nn.functional.softmax": 1,
    "torch.nn.functional.log_softmax": 1,
    "torch.nn.functional.softmin": 1,
    "torch.nn.Softmax": 0,
    "torch.nn.LogSoftmax": 0,
    "torch.nn.Softmin": 0,
}


def triggers() -> tuple[str, ...]:
    return (r"\b(?:softmax|log_softmax|softmin|Softmax|LogSoftmax|Softmin)\b",)


def _may_lack_dim(call: ast.Call, scan: Scan) -> bool:
    """A superset of visit_Call's reports, from the ast: a call of one of DIM_POSITION's names,
    without star arguments, whose `dim` is absent or the literal None."""
    if ast_star_args(call):
        return False
    for name in scan.qualified(call.func) & DIM_POSITION.keys():
        position = DIM_POSITION[name]
        keyword = [k.value for k in call.keywords if k.arg == "dim"]
        dim = keyword[0] if keyword else call.args[position] if len(call.args) > position else None
        if dim is None or (isinstance(dim, ast.Constant) and dim.value is None):
            return True
    return False


def may_act(scan: Scan, words, facts) -> bool:
    return any(isinstance(node, ast.Call) and _may_lack_dim(node, scan) for node in scan.nodes(words))


GATE = Gate(may_act=may_act)


SPEC = Spec(
    code="TM903",
    name="softmax-without-dim",
    stage=Stage.CHECK,
    safety=Safety.SAFE,
    target="codemods.transforms.softmax_without_dim:SoftmaxWithoutDim",
    triggers=triggers(),
    summary="F.softmax(x) / nn.Softmax() without dim (the implicit choice is deprecated)",
    gate=GATE,
)
