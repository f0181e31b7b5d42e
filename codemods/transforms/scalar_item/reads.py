"""What a `.data[0]` read and a full reduction look like, for TM003: `scalar_read` finds the
tensor read, `reduces`/`full_reduction` say whether a call reduces every element."""

from __future__ import annotations

import libcst as cst

from codemods.helpers import arguments
from codemods.helpers.losses import legacy_reduction
from codemods.transforms.scalar_item.environments import Param

# Reductions over every element: 0-dim when no dim is given.
REDUCTIONS = frozenset({"sum", "mean", "norm", "max", "min", "prod", "std", "var", "median", "nansum", "nanmean"})
# Of those, the ones whose first positional argument is not a dim (`x.norm(2)` is a 2-norm).
FIRST_ARG_NOT_DIM = {"norm": "p"}
DIM_KEYWORDS = frozenset({"dim", "axis", "dims"})
SCALAR_REDUCTIONS = frozenset({"mean", "sum", "batchmean"})


def is_super(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "super"


def argument_for(call: cst.Call, param: Param, shift: int) -> cst.BaseExpression | None:
    """The expression `call` passes for `param`; None when it passes none, or stars may hide it."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == param.name:
            return arg.value  # a star could not pass it too: that is a TypeError
    if arguments.has_star_args(call):
        return None
    positional = [a for a in call.args if a.keyword is None]
    if param.index is None or param.index < shift:
        return None
    index = param.index - shift
    return positional[index].value if index < len(positional) else None


# `torch.sum(x)` & co.: qualified name -> method name.
TORCH_REDUCTIONS = {f"torch.{r}": r for r in REDUCTIONS}


def scalar_read(node: cst.Subscript) -> cst.BaseExpression | None:
    """The tensor `x` of `x.data[0]`, `x.data.cpu()[0]`, `x.cpu().data[0]`, `x.data.numpy()[0]`…"""
    if len(node.slice) != 1:
        return None
    index = node.slice[0].slice
    if not (isinstance(index, cst.Index) and isinstance(index.value, cst.Integer) and index.value.value == "0"):
        return None
    expr = node.value
    seen_data = False
    while True:
        if isinstance(expr, cst.Attribute) and expr.attr.value == "data":
            seen_data = True
            expr = expr.value
        elif (
            isinstance(expr, cst.Call)
            and not expr.args
            and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value in ("cpu", "numpy")
        ):
            expr = expr.func.value
        else:
            break
    return expr if seen_data and expr is not node.value else None


def reduces(call: cst.Call, entry: dict) -> bool:
    """A loss call whose reduction is literally 'mean'/'sum' (the default), legacy flags included."""
    if arguments.has_star_args(call):
        return False
    bound = arguments.bind(call, entry["positional"])
    values = {p: arguments.literal(bound[p].arg.value) for p in ("size_average", "reduce", "reduction") if p in bound}
    if not all(arguments.is_literal(v) for v in values.values()):
        return False
    if "size_average" in values or "reduce" in values:
        if values.get("size_average") is not None or values.get("reduce") is not None:
            return legacy_reduction(values.get("size_average"), values.get("reduce")) != "none"
    return values.get("reduction", "mean") in SCALAR_REDUCTIONS


def full_reduction(call: cst.Call, method: str, *, skip_first: bool) -> bool:
    """`x.sum()`, `torch.sum(x)`, `x.norm(2)`: no dim given (keyword or positional)."""
    if arguments.has_star_args(call):
        return False
    if any(a.keyword is not None and a.keyword.value in DIM_KEYWORDS for a in call.args):
        return False
    positional = [a for a in call.args if a.keyword is None]
    allowed = (1 if skip_first else 0) + (1 if method in FIRST_ARG_NOT_DIM else 0)
    return len(positional) <= allowed and (not skip_first or len(positional) >= 1)


def through_numpy(node: cst.Subscript) -> bool:
    """`x.data.numpy()[0]`: the read indexes a NumPy array, whose elements have tensor-like methods."""
    expr = node.value
    while True:
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            if expr.func.attr.value == "numpy":
                return True
            expr = expr.func.value
        elif isinstance(expr, cst.Attribute):
            expr = expr.value
        else:
            return False


def element(code_for, chain: list[cst.Subscript]) -> str:
    """`x[0][1]` for the chain `x.data[0][1]` (a read `x.data[0]` and the indexing after it): the
    same element without `.data`."""
    indices = "".join(f"[{code_for(node.slice[0].slice.value)}]" for node in chain[1:])
    return f"{code_for(scalar_read(chain[0]))}[0]{indices}"
