"""TM003: `loss.data[0]` on a provably 0-dim tensor -> `loss.item()`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst

from codemods.helpers import args as A
from codemods.helpers.codemod import MigrationCodemod
from codemods.transforms.loss_reduction import legacy_reduction, losses

# Reductions over every element: 0-dim when no dim is given.
REDUCTIONS = frozenset({"sum", "mean", "norm", "max", "min", "prod", "std", "var", "median", "nansum", "nanmean"})
# Of those, the ones whose first positional argument is not a dim (`x.norm(2)` is a 2-norm).
_FIRST_ARG_NOT_DIM = {"norm": "p"}
_DIM_KEYWORDS = frozenset({"dim", "axis", "dims"})
# Module methods that return the module itself: `nn.CrossEntropyLoss().cuda()` is still the loss.
_MODULE_SELF = frozenset({"cuda", "cpu", "to", "float", "double", "half", "train", "eval"})
# Tensor methods that keep the shape: a 0-dim tensor stays 0-dim.
_SAME_SHAPE = frozenset({"detach", "clone", "cpu", "cuda", "to", "float", "double", "half", "abs", "sqrt", "exp", "log"})
# Names whose `.data[0]` reads like a scalar (statistics), for findings only.
_SCALAR_LOOKING = re.compile(r"loss|acc|correct|err|prec|score|total|reward|dist", re.IGNORECASE)
_SCALAR_REDUCTIONS = frozenset({"mean", "sum", "batchmean"})
_MAX_DEPTH = 8


@dataclass
class _Scope:
    """Simple bindings of one function (or the module): name -> assigned values; None = opaque."""

    names: dict[str, list[cst.BaseExpression | None]] = field(default_factory=dict)

    def bind(self, name: str, value: cst.BaseExpression | None) -> None:
        self.names.setdefault(name, []).append(value)


class _Bindings(cst.CSTVisitor):
    """First pass: what each function, the module and each class's `self.x` are assigned."""

    def __init__(self) -> None:
        self.module = _Scope()
        self.functions: dict[int, _Scope] = {}
        self.classes: dict[int, _Scope] = {}  # class id -> `self.<attr>` assignments in its methods
        self._scopes: list[_Scope] = [self.module]
        self._classes: list[_Scope | None] = []

    @property
    def _here(self) -> _Scope:
        return self._scopes[-1]

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._here.bind(node.name.value, None)
        self.classes[id(node)] = _Scope()
        self._classes.append(self.classes[id(node)])
        self._scopes.append(_Scope())  # a class body's names are not visible from its methods

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._classes.pop()
        self._scopes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._here.bind(node.name.value, None)
        scope = self.functions[id(node)] = _Scope()
        self._scopes.append(scope)
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            scope.bind(param.name.value, None)
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                scope.bind(star.name.value, None)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._scopes.pop()

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False  # its parameters are its own; it assigns nothing outside

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._target(target.target, node.value if len(node.targets) == 1 else None)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._target(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        # `loss += other`: as scalar as `loss` and `other` both are.
        if isinstance(node.target, cst.Name):
            self._here.bind(node.target.value, cst.BinaryOperation(node.target, cst.Add(), node.value))
        else:
            self._target(node.target, None)

    def visit_For(self, node: cst.For) -> None:
        self._target(node.target, None)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._target(node.asname.name, None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._target(node.target, None)

    def visit_Global(self, node: cst.Global) -> None:
        for item in node.names:
            self._here.bind(item.name.value, None)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        for item in node.names:
            self._here.bind(item.name.value, None)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        bound = node.asname.name if node.asname is not None else node.name
        while isinstance(bound, cst.Attribute):
            bound = bound.value
        if isinstance(bound, cst.Name):
            self._here.bind(bound.value, None)

    def visit_Del(self, node: cst.Del) -> None:
        self._target(node.target, None)

    def _target(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if isinstance(target, cst.Name):
            self._here.bind(target.value, value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._target(element.value, None)
        elif isinstance(target, cst.StarredElement):
            self._target(target.value, None)
        elif (
            isinstance(target, cst.Attribute)
            and isinstance(target.value, cst.Name)
            and target.value.value == "self"
            and self._classes
            and self._classes[-1] is not None
        ):
            self._classes[-1].bind(target.attr.value, value)


class ScalarItem(MigrationCodemod):
    """Replace `.data[0]` on a provably 0-dim tensor with `.item()`.

    ## What it does
    Rewrites `x.data[0]` (and `x.data.cpu()[0]`, `x.cpu().data[0]`, `x.data.numpy()[0]`) into
    `x.item()` when `x` is provably a 0-dim tensor: the result of a `torch.nn` loss module or
    `torch.nn.functional` loss with a reducing `reduction`, a call of a name (or `self.<attr>`)
    bound to such a loss module, `.sum()`/`.mean()`/`.norm()`/`.max()`… with no dim, arithmetic of
    those, and names assigned only from those in the same scope. Anything else is left alone; a
    `.data[0]` that looks like a statistic (`total += x.data[0]`, `meter.update(loss.data[0])`) but
    cannot be proven 0-dim is a finding.

    ## Why is this bad?
    Before PyTorch 0.4 a loss was a 1-element tensor and `.data[0]` read its value. Losses and full
    reductions are 0-dim now, and indexing a 0-dim tensor raises `IndexError: invalid index of a
    0-dim tensor`.

    ## Example
    ```python
    loss = criterion(output, target)
    total_loss += loss.data[0]
    ```

    ## Use instead
    ```python
    loss = criterion(output, target)
    total_loss += loss.item()
    ```

    ## Fix safety
    Safe: only values proven 0-dim are rewritten, where the old code raises `IndexError` today and
    `.item()` returns the number `.data[0]` returned on 0.3 (as a Python number; through
    `.numpy()` it was a NumPy scalar). `.data[0]` on a batch, a weight or a Python list
    (`len(self.data[0])`) is never touched, and a loss passed in as a parameter cannot be proven:
    such a case that looks like a scalar is reported instead.

    ## References
    - https://pytorch.org/blog/pytorch-0_4_0-migration-guide/ (zero-dimensional tensors)
    """

    CODE = "TM003"
    PRUNE = True  # its sites are on trigger lines; the bindings it learns from come from its own full pass

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._bindings = _Bindings()
        self._scopes: list[_Scope] = []
        self._classes: list[_Scope] = []
        self._scalar_looking: set[int] = set()
        self._visiting: set[str] = set()

    def visit_Module(self, node: cst.Module) -> None:
        node.visit(self._bindings)
        self._scopes = [self._bindings.module]

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.append(self._bindings.classes[id(node)])

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        self._classes.pop()
        return updated_node

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.append(self._bindings.functions[id(node)])

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self._scopes.pop()
        return updated_node

    # -- where a `.data[0]` reads like a number --------------------------------------------

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._scalar_looking.add(id(node.value))
        if isinstance(node.value, cst.BinaryOperation):
            self._scalar_looking |= {id(node.value.left), id(node.value.right)}

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        named = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""
        if named in ("float", "update") and node.args:
            self._scalar_looking.add(id(node.args[0].value))

    # -- the rewrite ------------------------------------------------------------------------

    def leave_Subscript(self, original_node: cst.Subscript, updated_node: cst.Subscript) -> cst.BaseExpression:
        base = _scalar_read(original_node)
        if base is None:
            return updated_node
        if self._zero_dim(base, 0):
            new_base = _scalar_read(updated_node)
            item = cst.Call(func=cst.Attribute(value=new_base, attr=cst.Name("item")))
            return self.rewrite(original_node, updated_node, item)
        if self._looks_scalar(original_node, base):
            text = self.code_for(base)
            self.finding(
                original_node,
                f"`{self.code_for(original_node)}` reads like a number, but `{text}` cannot be proven 0-dim here:"
                f" if it is a loss or a full reduction, use `{text}.item()`",
                suggestion=f"{text}.item()",
            )
        return updated_node

    def _looks_scalar(self, node: cst.Subscript, base: cst.BaseExpression) -> bool:
        if isinstance(base, cst.Name) and base.value in ("self", "cls"):
            return False
        if id(node) in self._scalar_looking:
            return True
        if isinstance(base, cst.Call):  # `self._loss(model, guide).data[0]`
            base = base.func
        name = base.value if isinstance(base, cst.Name) else base.attr.value if isinstance(base, cst.Attribute) else ""
        return bool(_SCALAR_LOOKING.search(name))

    # -- what is provably 0-dim --------------------------------------------------------------

    def _zero_dim(self, expr: cst.BaseExpression, depth: int) -> bool:
        if depth > _MAX_DEPTH:
            return False
        if isinstance(expr, cst.Name):
            if expr.value in self._visiting:
                return True  # `loss += ...`: as 0-dim as its other assignments make it
            values = self._lookup(expr.value)
            self._visiting.add(expr.value)
            try:
                tensors = [v for v in values if not self._number(v)]
                return bool(tensors) and all(v is not None and self._zero_dim(v, depth + 1) for v in tensors)
            finally:
                self._visiting.discard(expr.value)
        if isinstance(expr, cst.BinaryOperation) and not isinstance(expr.operator, cst.MatrixMultiply):
            tensor_sides = [s for s in (expr.left, expr.right) if not self._number(s)]
            return bool(tensor_sides) and all(self._zero_dim(s, depth + 1) for s in tensor_sides)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
            return self._zero_dim(expr.expression, depth + 1)
        if not isinstance(expr, cst.Call):
            return False
        name = self.qualified_name(expr.func)
        entry = losses().get(name) if name else None
        if entry is not None and name.startswith("torch.nn.functional."):
            return _reduces(expr, entry)
        if name in _TORCH_REDUCTIONS:
            return _full_reduction(expr, _TORCH_REDUCTIONS[name], skip_first=True)
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in REDUCTIONS and name is None:
            return _full_reduction(expr, func.attr.value, skip_first=False)
        if isinstance(func, cst.Attribute) and func.attr.value in _SAME_SHAPE and name is None:
            return self._zero_dim(func.value, depth + 1)  # `loss.detach()`, `loss.cpu()`
        return self._is_loss_module(func, depth + 1)

    def _number(self, expr: cst.BaseExpression | None) -> bool:
        """A Python number: a numeric literal or `len(...)`/`int(...)`/`float(...)` (not shadowed)."""
        if isinstance(expr, (cst.Integer, cst.Float)):
            return True
        return (
            isinstance(expr, cst.Call)
            and isinstance(expr.func, cst.Name)
            and expr.func.value in ("len", "int", "float")
            and not self._lookup(expr.func.value)
        )

    def _is_loss_module(self, expr: cst.BaseExpression, depth: int) -> bool:
        """`expr` evaluates to a `torch.nn` loss module with a reducing `reduction`."""
        if depth > _MAX_DEPTH:
            return False
        if isinstance(expr, cst.Name):
            values = self._lookup(expr.value)
            return bool(values) and all(v is not None and self._is_loss_module(v, depth + 1) for v in values)
        if (
            isinstance(expr, cst.Attribute)
            and isinstance(expr.value, cst.Name)
            and expr.value.value == "self"
            and self._classes
        ):
            values = self._classes[-1].names.get(expr.attr.value, [])
            return bool(values) and all(v is not None and self._is_loss_module(v, depth + 1) for v in values)
        if not isinstance(expr, cst.Call):
            return False
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _MODULE_SELF:
            if self.qualified_name(expr.func) is None:  # `.cuda()` on something, not `torch.cuda`
                return self._is_loss_module(expr.func.value, depth + 1)
        name = self.qualified_name(expr.func)
        entry = losses().get(name) if name else None
        return entry is not None and not name.startswith("torch.nn.functional.") and _reduces(expr, entry)

    def _lookup(self, name: str) -> list[cst.BaseExpression | None]:
        for scope in reversed(self._scopes):
            if name in scope.names:
                return scope.names[name]
        return []


# `torch.sum(x)` & co.: qualified name -> method name.
_TORCH_REDUCTIONS = {f"torch.{r}": r for r in REDUCTIONS}


def _scalar_read(node: cst.Subscript) -> cst.BaseExpression | None:
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


def _reduces(call: cst.Call, entry: dict) -> bool:
    """A loss call whose reduction is literally 'mean'/'sum' (the default), legacy flags included."""
    if A.has_star_args(call):
        return False
    bound = A.bind(call, entry["positional"])
    values = {p: A.literal(bound[p].arg.value) for p in ("size_average", "reduce", "reduction") if p in bound}
    if not all(A.is_literal(v) for v in values.values()):
        return False
    if "size_average" in values or "reduce" in values:
        if values.get("size_average") is not None or values.get("reduce") is not None:
            return legacy_reduction(values.get("size_average"), values.get("reduce")) != "none"
    return values.get("reduction", "mean") in _SCALAR_REDUCTIONS


def _full_reduction(call: cst.Call, method: str, *, skip_first: bool) -> bool:
    """`x.sum()`, `torch.sum(x)`, `x.norm(2)`: no dim given (keyword or positional)."""
    if A.has_star_args(call):
        return False
    if any(a.keyword is not None and a.keyword.value in _DIM_KEYWORDS for a in call.args):
        return False
    positional = [a for a in call.args if a.keyword is None]
    allowed = (1 if skip_first else 0) + (1 if method in _FIRST_ARG_NOT_DIM else 0)
    return len(positional) <= allowed and (not skip_first or len(positional) >= 1)
