"""Where the tensor handed to `Variable(...)` comes from, for TM002: fresh (a factory, `.data`,
`.detach()`), a name that provably holds a tensor requiring no grad (a data loader's batch), or
computed (which may carry a graph `Variable` cut off, as a parameter's tensor may); and the
module's names bound only to legacy tensor types, which make fresh tensors too."""

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
# Values that are no tensor (a name given one is made a tensor later, by a factory).
NOT_TENSORS = (
    cst.List, cst.Tuple, cst.Set, cst.Dict, cst.ListComp, cst.SetComp, cst.DictComp,
    cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.Integer, cst.Float,
)  # fmt: skip
# Builtins whose result is a Python number, never a tensor with a graph.
NUMBERS = frozenset({"len", "int", "float", "round"})
# What a loop over a data loader may wrap it in, and the loader classes.
LOOP_WRAPPERS = frozenset({"enumerate", "tqdm", "iter"})
DATA_LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
# Tensor methods that make a new tensor requiring no grad, whatever their receiver.
NEW_TENSOR_METHODS = frozenset("detach new new_zeros new_ones new_empty new_full new_tensor".split())
# Tensor methods after which a tensor that required no grad still requires none.
KEEPS_GRAD_FREE = frozenset(
    "cuda cpu to type type_as float double half long int short byte bool char view view_as reshape resize_"
    " unsqueeze squeeze contiguous uniform_ normal_ fill_ zero_ random_ bernoulli_ exponential_ t permute"
    " expand expand_as repeat transpose pin_memory narrow select resize_as_".split()
)


def _asks_for_grad(call: cst.Call) -> bool:
    """Whether the tensor `call` makes may require grad by its own request."""
    if isinstance(call.func, cst.Attribute) and call.func.attr.value == "requires_grad_":
        return not (call.args and arguments.literal(call.args[0].value) is False)
    wanted = arguments.keyword(call, "requires_grad")
    return wanted is not None and arguments.literal(wanted.value) is not False


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
        - "grad_free": a tensor referred to by name that provably requires no grad: every value
          its function gives the name is fresh, or a batch of a data loader (`for x, y in loader`);
        - "computed": anything else (`torch.clamp(x)`, `x + delta`, `model(x)`, a parameter of the
          function, an attribute, a name bound elsewhere), which may carry a graph that `Variable`
          detached.
        """
        if isinstance(data, cst.Attribute) and data.attr.value == "data":
            return "fresh"
        if isinstance(data, cst.Name):
            return self._name_origin(data.value)
        if isinstance(data, (cst.Attribute, cst.Subscript)):  # a part of a batch is as free of grad as the batch
            return "grad_free" if self._origin(data.value) != "computed" else "computed"
        if isinstance(data, (cst.Integer, cst.Float)):
            return "fresh"
        if isinstance(data, cst.BinaryOperation):  # arithmetic makes a new tensor: of ones free of grad, fresh
            fresh = self._origin(data.left) != "computed" and self._origin(data.right) != "computed"
            return "fresh" if fresh else "computed"
        if isinstance(data, cst.UnaryOperation):
            return self._origin(data.expression)
        if isinstance(data, cst.IfExp):
            branches = {self._origin(data.body), self._origin(data.orelse)}
            return next(o for o in ("computed", "grad_free", "fresh") if o in branches)
        if not isinstance(data, cst.Call):
            return "computed"
        if _asks_for_grad(data):
            return "computed"  # `torch.ones(1, requires_grad=True)`, `x.requires_grad_()`: a leaf that requires grad
        if dotted(data.func) in NUMBERS:
            return "fresh"  # `len(corpus.dictionary)`: a Python number
        if dotted(data.func) == "next" and data.args and self._is_loader(data.args[0].value):
            return "grad_free"  # `imgs = next(iter(val_loader))`: a batch, like a loop's
        if self.qualified_name(data.func) in VARIABLE and data.args:  # `x = Variable(x)`: x's own
            return self._origin(data.args[0].value)
        if dotted(data.func) in self._tensor_types:
            return "fresh"
        if isinstance(data.func, cst.Name) and self._is_transform(data.func.value):
            return "fresh"  # `transform(Image.open(path))`: a torchvision transform makes a new tensor
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
        """A name is "grad_free" when its function gives it only fresh values or data loader
        batches, and "computed" otherwise: a parameter (the caller's tensor may require grad:
        `Variable(w)` cut it off), a name the function never binds, one bound to a computed value
        (`h = w * 3; h = Variable(h)` cut `h`'s graph). Never "fresh": the tensor a name holds may
        be held elsewhere too, so it is never flagged in place."""
        if name in self._parameters():
            return "computed"
        values = self._bindings().get(name)
        if name in self._resolving:
            self._resolving[name] = True
            return "grad_free"  # `x = x.cuda()` seen from inside: x's other values decide
        if not values:
            return "computed"
        anchored = False  # whether some value is free of grad by itself, not only through x
        try:
            for value in values:
                self._resolving[name] = False
                if value is None or self._value_origin(value) == "computed":
                    return "computed"
                anchored = anchored or not self._resolving[name]
        finally:
            del self._resolving[name]
        return "grad_free" if anchored else "computed"  # `image = Variable(image)` alone: bound elsewhere

    def _value_origin(self, value: cst.CSTNode) -> str:
        if isinstance(value, cst.For):  # a loop variable: a batch of a data loader, a row of one, or unknown
            return "grad_free" if self._is_loader(value.iter) or self._rows_of_batch(value.iter) else "computed"
        if isinstance(value, NOT_TENSORS):  # `t = [ord(c) for c in s]; t = torch.LongTensor(t)`
            return "grad_free"
        return self._origin(value)

    def _is_transform(self, name: str) -> bool:
        """Whether `name` is only ever bound to a torchvision transform (`transforms.Compose([...])`),
        in the function or the module."""
        values = self._bindings().get(name) or self._global_bindings().get(name) or ()
        return bool(values) and all(
            isinstance(v, cst.Call) and (self.qualified_name(v.func) or "").startswith("torchvision.transforms.") for v in values
        )

    def _rows_of_batch(self, iterable: cst.BaseExpression) -> bool:
        """Whether a loop walks the rows of parts of a batch (`for a, b in zip(imgs["A"], imgs["B"])`
        with `imgs` a loader's batch): each row is as free of grad as the batch. Only parts
        (`imgs["A"]`, `batch.x`): a name may hold a list of tensors that require grad."""
        parts = [a.value for a in iterable.args] if isinstance(iterable, cst.Call) and dotted(iterable.func) == "zip" else [iterable]
        return bool(parts) and all(isinstance(p, (cst.Subscript, cst.Attribute)) and self._origin(p) == "grad_free" for p in parts)

    def _is_loader(self, iterable: cst.BaseExpression) -> bool:
        """Whether a loop walks a data loader's batches (through `enumerate`/`tqdm`/`iter`, or a
        `zip` of loaders): a `DataLoader(...)`, a name bound to one, or a name that says it is one
        (`train_loader`, `self.val_loader`): the batches it collates are new tensors that require
        no grad."""
        while isinstance(iterable, cst.Call) and (dotted(iterable.func) or "").split(".")[-1] in LOOP_WRAPPERS:
            if not iterable.args:
                return False
            iterable = iterable.args[0].value
        if isinstance(iterable, cst.Call) and dotted(iterable.func) == "zip":  # batches of several loaders
            return bool(iterable.args) and all(a.keyword is None and not a.star and self._is_loader(a.value) for a in iterable.args)
        if isinstance(iterable, cst.Call):
            return self.qualified_name(iterable.func) in DATA_LOADERS
        spelled = dotted(iterable)
        if spelled is None:
            return False
        if "loader" in spelled.split(".")[-1].lower():
            return True
        values = self._bindings().get(spelled) or self._global_bindings().get(spelled) or ()
        return bool(values) and all(isinstance(v, cst.Call) and self.qualified_name(v.func) in DATA_LOADERS for v in values)

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
        return all(arguments.is_literal(arguments.literal(a.value)) or self._origin(a.value) != "computed" for a in args)
