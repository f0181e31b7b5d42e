"""TM011's tables: where a mask is an argument, which methods keep a mask (reshapes, moves),
which make 0/1 or bool values, which only a torch tensor has, and the factories taking a dtype."""

from __future__ import annotations

import libcst as cst

from codemods.gates.bool_masks import (  # noqa: F401  (re-exported: flow.py, values.py)
    NEUTRAL_METHODS,
    SHAPE_FUNCTIONS,
    SHAPE_METHODS,
    SINK_FUNCTIONS,
    SINK_METHODS,
)


# Uses that read nothing a bool mask gives differently from a 0/1 uint8 one (NEUTRAL_METHODS:
# with the sinks and the shape keepers, in the gate module, which its AST gate reads too).
NEUTRAL_ATTRIBUTES = frozenset({"shape", "device", "is_cuda"})
# Values that are 0/1 whatever their input (or bool by construction).
BOOL_METHODS = frozenset(
    {
        "eq", "ne", "gt", "lt", "ge", "le", "logical_not", "logical_and", "logical_or", "logical_xor",
        "isnan", "isinf", "isfinite", "isclose", "isneginf", "isposinf", "signbit", "bool",
    }
)  # fmt: skip
ZERO_ONE_METHODS = frozenset({"new_ones", "new_zeros", "bernoulli", "bernoulli_"})
ZERO_ONE_FUNCTIONS = frozenset({"torch.ones", "torch.zeros", "torch.ones_like", "torch.zeros_like", "torch.bernoulli"})
# Keep 0/1 values 0/1 (a dtype or device change, a reshape).
VALUE_METHODS = SHAPE_METHODS | {"byte", "float", "long", "int", "double", "half", "short", "char", "to", "type"}
# Methods only a torch tensor has: a receiver of one is a tensor (NumPy arrays read a uint8
# tensor index as integer indices, a bool one as a mask).
TENSOR_METHODS = frozenset(
    {
        "size", "dim", "unsqueeze", "clone", "masked_fill", "masked_fill_", "masked_select", "masked_scatter",
        "float", "long", "byte", "cuda", "cpu", "contiguous", "detach", "numel", "new_zeros", "new_ones",
        "new_full", "new_empty", "expand", "expand_as", "view_as", "type_as", "permute", "to",
    }
)  # fmt: skip  # (not `eq`, `bool`, `where`: pandas objects have those)
# Factories that take `dtype=torch.uint8`: name -> how their values are known.
FACTORIES = {
    "zeros": "fixed", "ones": "fixed", "empty": "fixed", "zeros_like": "fixed", "ones_like": "fixed",
    "empty_like": "fixed", "full": "fill", "full_like": "fill", "tensor": "data", "as_tensor": "data",
}  # fmt: skip
FACTORY_METHODS = {"new_zeros": "fixed", "new_ones": "fixed", "new_empty": "fixed", "new_full": "fill", "new_tensor": "data"}
COMPARISONS = (cst.LessThan, cst.GreaterThan, cst.LessThanEqual, cst.GreaterThanEqual, cst.Equal, cst.NotEqual)
