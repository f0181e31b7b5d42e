"""Where the tensor handed to `Variable(...)` comes from, for TM002: fresh (a factory, `.data`,
`.detach()`), named, or computed (which may carry a graph `Variable` cut off); and the module's
names bound only to legacy tensor types, which make fresh tensors too."""

from __future__ import annotations

import libcst as cst

from codemods.gates.variable_removal import VARIABLE
from codemods.helpers import arguments
from codemods.base import MigrationCodemod
from codemods.helpers.names import dotted


# The legacy tensor types: calling one makes a new tensor (`Tensor = torch.cuda.FloatTensor if cuda
# else torch.FloatTensor` makes `Tensor` one too).
TENSOR_TYPES = frozenset(
    f"torch.{prefix}{kind}Tensor"
    for prefix in ("", "cuda.")
    for kind in "Float Double Half BFloat16 Long Int Short Char Byte Bool".split()
) | {"torch.Tensor"}
# Tensor constructors: a new tensor that requires no grad and that nothing else refers to.
FACTORIES = TENSOR_TYPES | frozenset(
    f"torch.{name}"
    for name in (
        "tensor zeros ones empty full rand randn randint randperm arange range linspace logspace eye"
        " from_numpy zeros_like ones_like empty_like full_like rand_like randn_like randint_like"
        " multinomial"  # indices: they never require grad
    ).split()
)
# Functions of tensors that are fresh when every tensor they are given is (`torch.bernoulli(p)`
# requires grad when `p` does; `torch.bernoulli(p.data)` does not).
OF_FRESH = frozenset({"torch.bernoulli", "torch.poisson", "torch.sigmoid", "torch.exp", "torch.log", "torch.abs"})
# Joins of tensors: fresh when every tensor joined is.
JOINS = frozenset({"torch.stack", "torch.cat"})
# Methods whose tensor arguments are indices or masks (which never carry a graph), with the
# position and keyword of the one argument that can (None: no such argument).
INDEXING_METHODS = {
    "masked_fill_": (1, "value"), "masked_fill": (1, "value"), "index_fill_": (2, "value"),
    "index_fill": (2, "value"), "scatter_": (2, "src"), "scatter": (2, "src"), "gather": None,
    "index_select": None, "masked_select": None, "take": None,
}  # fmt: skip
# Tensor methods that make a new tensor requiring no grad, whatever their receiver.
NEW_TENSOR_METHODS = frozenset("detach new new_zeros new_ones new_empty new_full new_tensor".split())
# Tensor methods after which a tensor that required no grad still requires none.
KEEPS_GRAD_FREE = frozenset(
    "cuda cpu to type type_as float double half long int short byte bool char view view_as reshape resize_"
    " unsqueeze squeeze contiguous uniform_ normal_ fill_ zero_ random_ bernoulli_ exponential_ t permute"
    " expand expand_as repeat transpose pin_memory narrow select resize_as_".split()
)


class _TensorTypeNames(cst.CSTVisitor):
    """Names and `self.` attributes assigned in the module, each with whether every value they
    are given is a legacy tensor type (`Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`)."""

    def __init__(self, codemod: MigrationCodemod) -> None:
        self.codemod = codemod
        self.names: dict[str, bool] = {}

    def _is_type(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.IfExp):
            return self._is_type(expr.body) and self._is_type(expr.orelse)
        return self.codemod.qualified_name(expr) in TENSOR_TYPES or dotted(expr) in self.names and self.names[dotted(expr)]

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            name = dotted(target.target)
            if name is not None:
                self.names[name] = self.names.get(name, True) and self._is_type(node.value)


class TensorOrigin:
    """How `VariableRemoval` tells a tensor's origin (a part of that codemod: `self` is the codemod)."""

    def _origin(self, data: cst.BaseExpression) -> str:
        """Where the tensor handed to `Variable` comes from:

        - "fresh": a new tensor that requires no grad and that nothing else refers to (a factory
          call, `.data`, `.detach()`, conversions and views of those);
        - "named": a tensor referred to by name (`images`, `self.weight`, `batch[0]`); legacy code
          hands `Variable` its input data this way, and 0.3 refused tensors that required grad;
        - "computed": anything else (`torch.clamp(x)`, `x + delta`, `model(x)`), which may carry a
          graph that `Variable` detached.
        """
        if isinstance(data, cst.Attribute):
            return "fresh" if data.attr.value == "data" else "named"
        if isinstance(data, cst.Name):
            return self._name_origin(data.value)
        if isinstance(data, cst.Subscript):
            return "named"
        if isinstance(data, (cst.Integer, cst.Float)):
            return "fresh"
        if isinstance(data, cst.BinaryOperation):  # arithmetic of fresh tensors and numbers
            fresh = self._origin(data.left) == "fresh" and self._origin(data.right) == "fresh"
            return "fresh" if fresh else "computed"
        if isinstance(data, cst.UnaryOperation):
            return self._origin(data.expression)
        if isinstance(data, cst.IfExp):
            branches = {self._origin(data.body), self._origin(data.orelse)}
            return next(o for o in ("computed", "named", "fresh") if o in branches)
        if not isinstance(data, cst.Call):
            return "computed"
        if self.qualified_name(data.func) in VARIABLE and data.args:  # `x = Variable(x)`: x's own
            return self._origin(data.args[0].value)
        if dotted(data.func) in self._tensor_types:
            return "fresh"
        name = self.qualified_name(data.func)
        if name in JOINS and data.args and self._all_fresh(data.args[0].value):
            return "fresh"  # `torch.stack([torch.Tensor([t]) for t in (0, 1)])`
        if name in OF_FRESH and self._adds_no_graph("", data):
            return "fresh"
        if name is not None:
            return "fresh" if name in FACTORIES else "computed"
        if isinstance(data.func, cst.Attribute):
            method, receiver = data.func.attr.value, data.func.value
            if method in NEW_TENSOR_METHODS:
                return "fresh"
            if method == "clone":
                return "computed" if self._origin(receiver) == "computed" else "fresh"
            if method in KEEPS_GRAD_FREE:
                return self._origin(receiver)
            if self._origin(receiver) == "fresh" and self._adds_no_graph(method, data):
                return "fresh"  # `torch.zeros(n, k).scatter_(1, index, 1)`, `Tensor(n).add_(0.5)`
        return "computed"

    def _name_origin(self, name: str) -> str:
        """A name is "computed" when its function binds it to a computed value anywhere
        (`h = w * 3; h = Variable(h)` cut `h`'s graph); else "named" — never "fresh": the tensor
        a name holds may be held elsewhere too, so it is never flagged in place."""
        values = self._bindings().get(name)
        if not values or name in self._resolving:
            return "named"  # a parameter, a loop variable, or `x = f(x)` seen from inside
        self._resolving.add(name)
        try:
            computed = any(value is None or self._origin(value) == "computed" for value in values)
        finally:
            self._resolving.discard(name)
        return "computed" if computed else "named"

    def _all_fresh(self, tensors: cst.BaseExpression) -> bool:
        """Whether a list/tuple display or comprehension holds only fresh tensors."""
        if isinstance(tensors, (cst.List, cst.Tuple)):
            return bool(tensors.elements) and all(
                isinstance(e, cst.Element) and self._origin(e.value) == "fresh" for e in tensors.elements
            )
        if isinstance(tensors, (cst.ListComp, cst.GeneratorExp)):
            return self._origin(tensors.elt) == "fresh"
        return False

    def _adds_no_graph(self, method: str, call: cst.Call) -> bool:
        """Whether `fresh.method(...)` can take a graph from its arguments: not when each argument
        that could carry one is a number or a fresh tensor (indices and masks never carry one)."""
        if arguments.has_star_args(call):
            return False
        args = list(call.args)
        if method in INDEXING_METHODS:
            where = INDEXING_METHODS[method]
            args = [] if where is None else [a for i, a in enumerate(args) if (a.keyword is None and i == where[0]) or (a.keyword is not None and a.keyword.value in where)]
        return all(arguments.is_literal(arguments.literal(a.value)) or self._origin(a.value) == "fresh" for a in args)
