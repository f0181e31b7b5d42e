"""TM010's tables: what `ctx` offers, the decorators kept on a staticmethod, the builtins an
`__init__` may apply to its arguments, and the methods whose result may be a tuple."""

from __future__ import annotations


# What `self` offers in a legacy Function and `ctx` offers alike (`saved_variables` is the
# deprecated spelling of `saved_tensors` since torch 0.4, and is written as that).
CTX_API = frozenset(
    {"save_for_backward", "saved_tensors", "saved_variables", "needs_input_grad", "mark_dirty", "mark_non_differentiable"}
)
# Decorators that work the same on a staticmethod (`@staticmethod` is put above them).
DECORATORS = frozenset(
    {
        "torch.cuda.amp.custom_fwd",
        "torch.cuda.amp.custom_bwd",
        "torch.amp.custom_fwd",
        "torch.amp.custom_bwd",
        "torch.autograd.function.once_differentiable",
    }
)
# Builtins an `__init__` may apply to its arguments: the value is recomputed in `forward`, on
# every call. For an instance built once and called many times (the wrapper), only those that
# build no mutable object, so that recomputing gives what the instance kept.
PURE_CALLS = frozenset({"int", "float", "bool", "str", "abs", "min", "max", "round", "tuple", "list", "len", "dict", "set"})
PURE_CALLS_REUSED = frozenset({"int", "float", "bool", "str", "abs", "min", "max", "round"})
# Methods whose result may be a tuple: a `backward` returning one is not known to return one gradient.
TUPLE_METHODS = frozenset(
    {
        "split", "chunk", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit", "max", "min", "sort", "topk",
        "kthvalue", "median", "nanmedian", "mode", "aminmax", "unique", "unique_consecutive", "svd", "qr", "eig",
        "symeig", "slogdet", "lu", "frexp", "var_mean", "std_mean", "histogram", "cummax", "cummin", "nonzero",
        "split_with_sizes", "unflatten", "get", "pop", "items", "values", "keys",
    }
)  # fmt: skip
