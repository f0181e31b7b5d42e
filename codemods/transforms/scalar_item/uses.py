"""How TM003 tells a `.data[0]` it may leave alone from one it must report: what the code does
with the value read (a part of `ScalarItem`: its visit hooks note the uses before the read is left).

Before torch 0.4 no tensor had 0 dims: `x.data[0]` read a Python number from a 1-d `x` and a row
from a larger one. Today it raises on a 0-dim `x` (a loss, a full reduction) and reads a 0-dim
tensor from a 1-d one. So a read is unchanged only where the old code provably got a tensor: the
value is indexed again by a slice, or a method only tensors have is called on it (directly, or on
its comparison with a number), or it is written to (old code wrote into tensors it made, which had
a dim).
"""

from __future__ import annotations

import libcst as cst

# Methods a torch tensor has and a Python number lacks: called on the value read, they show that
# torch 0.3 read a tensor there (a NumPy scalar has many of them: not used after `.numpy()`).
TENSOR_ONLY = frozenset(
    {
        "item", "cpu", "cuda", "numpy", "float", "double", "long", "int", "half", "byte", "bool", "size",
        "view", "view_as", "unsqueeze", "squeeze", "clone", "detach", "to", "type", "tolist", "dim", "numel",
        "nonzero", "sum", "mean", "max", "min", "argmax", "argmin", "permute", "transpose", "t", "eq", "ne",
        "gt", "lt", "ge", "le", "masked_fill", "masked_fill_", "expand", "expand_as", "contiguous", "abs",
    }
)  # fmt: skip


def _integer_index(node: cst.Subscript) -> bool:
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return False
    value = node.slice[0].slice.value
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        value = value.expression
    return isinstance(value, cst.Integer)


def _numbers_only(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.UnaryOperation):
        return _numbers_only(expr.expression)
    return isinstance(expr, (cst.Integer, cst.Float))


class ReadUses:
    """Notes, for every expression, whether its value is used as a tensor, indexed by an integer
    (a chain `x.data[0][0]`, read as one), or written to."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._tensor_used: set[int] = set()  # by a tensor-only method
        self._sliced: set[int] = set()  # indexed by something other than an integer
        self._stored: set[int] = set()  # an assignment's target
        self._indexed: dict[int, cst.Subscript] = {}  # id(value) -> the subscript reading `value[i]`

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if _integer_index(node):
            self._indexed[id(node.value)] = node
        else:
            self._sliced.add(id(node.value))

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._stored.add(id(node.target))

    def _note_tensor_method(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in TENSOR_ONLY):
            return
        pending = [func.value]
        while pending:
            expr = pending.pop()
            self._tensor_used.add(id(expr))
            # `(x.data[0] > 0.5).nonzero()`: a number compared with a number is a bool
            if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1:
                left, right = expr.left, expr.comparisons[0].comparator
            elif isinstance(expr, cst.BinaryOperation):
                left, right = expr.left, expr.right
            else:
                continue
            if _numbers_only(right):
                pending.append(left)
            elif _numbers_only(left):
                pending.append(right)

    def _chain(self, read: cst.Subscript) -> list[cst.Subscript]:
        """`[x.data[0], x.data[0][0]]` for the read `x.data[0]`: it and the integer indexing that follows it."""
        chain = [read]
        while id(chain[-1]) in self._indexed:
            chain.append(self._indexed[id(chain[-1])])
        return chain

    def _unchanged(self, read: cst.Subscript, through_numpy: bool) -> bool:
        """Whether torch 0.3 provably read a tensor (or wrote into one) where the chain ends."""
        outer = self._chain(read)[-1]
        if id(outer) in self._stored or id(outer) in self._sliced:
            return True
        return not through_numpy and id(outer) in self._tensor_used
