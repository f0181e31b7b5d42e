"""TM202: `total += loss` into a Python number keeps every step's graph alive -> `loss.item()`."""

from __future__ import annotations

import libcst as cst

from codemods.helpers import arguments
from codemods.base import MigrationCodemod
from codemods.helpers.bindings import ScopeNodes
from codemods.base import traverse

# torch.nn.functional losses that return a scalar unless told `reduction="none"`.
FUNCTIONAL = frozenset(
    {
        "binary_cross_entropy",
        "binary_cross_entropy_with_logits",
        "cross_entropy",
        "kl_div",
        "nll_loss",
    }
)
# Rebinding a number with these keeps it a number: `total /= len(loader)`.
ARITHMETIC = (cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign, cst.DivideAssign, cst.FloorDivideAssign)


def _scalar_loss_call(call: cst.Call) -> bool:
    """A loss call that returns a 0-dim tensor: not `reduction="none"` / `reduce=False`."""
    if arguments.has_star_args(call):
        return False
    reduction = arguments.keyword(call, "reduction")
    if reduction is not None and arguments.literal(reduction.value) not in ("mean", "sum", "batchmean"):
        return False
    reduce = arguments.keyword(call, "reduce")
    return reduce is None or arguments.literal(reduce.value) is True


def _name(node: cst.CSTNode | None) -> str | None:
    return node.value if isinstance(node, cst.Name) else None


class LossAccumulation(MigrationCodemod):
    """Accumulate a loss into a Python number with `loss.item()`, not the loss tensor itself.

    ## What it does
    In one function (or at module level), where `total` starts as a number literal
    (`total = 0`, `running_loss = 0.0`) and `loss` is a loss tensor (the result of an `nn.*Loss`
    instance or a `torch.nn.functional` loss, or a name `.backward()` is called on), rewrites
    `total += loss` and `total = total + loss` to add `loss.item()`. Nothing changes when `total`
    is used as a tensor in that function (`total.backward()`, `total.item()`, an attribute or
    index of it, an argument of a `torch.*` call), or is rebound to anything but a number or
    arithmetic on itself. `total += loss * n` and the like are reported, not rewritten.

    ## Why is this bad?
    `total += loss` turns `total` into a tensor that references `loss`'s autograd graph; the next
    addition references that one, and so on: every step's graph (activations included) stays
    in memory until `total` goes away, so memory grows through the epoch until it runs out.

    ## Example
    ```python
    running_loss = 0.0
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        running_loss += loss
    ```

    ## Use instead
    ```python
    running_loss = 0.0
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        running_loss += loss.item()
    ```

    ## Fix safety
    Unsafe (only with `--unsafe`): `total` becomes a Python float instead of a 0-dim tensor. Code
    that prints it shows `1.5` instead of `tensor(1.5, grad_fn=...)`; code elsewhere that treats
    it as a tensor (a caller of a function that returns it, calling `.item()` on it) breaks, and
    a `total` that was meant to be backpropagated (a loss summed over sub-batches) must not be
    rewritten: this codemod only sees one function. `.item()` also synchronises with the GPU
    once per step.

    ## References
    - https://pytorch.org/docs/stable/notes/faq.html#my-model-reports-cuda-runtime-error-2-out-of-memory
    - https://pytorch.org/docs/stable/generated/torch.Tensor.item.html
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._criteria: set[str] = set()  # `criterion`, `self.criterion`: names bound to a scalar loss
        self._targets: set[int] = set()  # id() of the accumulations to rewrite

    # -- module-wide: which names hold a loss object ----------------------------------------------

    def visit_Module(self, node: cst.Module) -> None:
        criteria = self._criteria
        codemod = self

        class Criteria(cst.CSTVisitor):
            def visit_Assign(self, assign: cst.Assign) -> None:
                if isinstance(assign.value, cst.Call) and codemod._is_loss_class(assign.value):
                    for target in assign.targets:
                        criteria.add(codemod.code_for(target.target))

        traverse(node, Criteria())
        self._plan(ScopeNodes.of(node))

    def _is_loss_class(self, call: cst.Call) -> bool:
        name = self.qualified_name(call.func) or ""
        return name.startswith("torch.nn.") and name.endswith("Loss") and _scalar_loss_call(call)

    def _is_loss_call(self, expr: cst.BaseExpression) -> bool:
        if not isinstance(expr, cst.Call):
            return False
        name = self.qualified_name(expr.func) or ""
        if name.startswith("torch.nn.functional."):
            short = name.rsplit(".", 1)[-1]
            return (short in FUNCTIONAL or short.endswith("_loss")) and _scalar_loss_call(expr)
        return self.code_for(expr.func) in self._criteria

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._plan(ScopeNodes.of(node.body))

    # -- one scope ---------------------------------------------------------------------------------

    def _plan(self, scope: ScopeNodes) -> None:
        binds: dict[str, list[cst.CSTNode]] = {}
        for node in scope.nodes:
            for name in _bound_names(node):
                binds.setdefault(name, []).append(node)
        losses = self._losses(scope, binds)
        if not losses:
            return
        tensors = _tensor_uses(scope, self)
        for node in scope.nodes:
            total, added = _accumulation(node)
            if total is None or total in tensors or not self._numeric(total, binds):
                continue
            loss = _name(added)
            if loss in losses or (added is not None and self._is_loss_call(added)):
                self._targets.add(id(node))
            elif added is not None and (inside := _loss_names_in(added) & losses):
                self.finding(
                    node,
                    f"`{total}` (a Python number) accumulates `{sorted(inside)[0]}`, a loss tensor, and with it"
                    " every step's autograd graph",
                    suggestion=f"use `{sorted(inside)[0]}.item()` inside the expression",
                )

    def _losses(self, scope: ScopeNodes, binds: dict[str, list[cst.CSTNode]]) -> set[str]:
        """Names in this scope that hold a scalar loss tensor."""
        found: set[str] = set()
        for node in scope.nodes:
            if (
                isinstance(node, cst.Call)
                and not node.args
                and isinstance(node.func, cst.Attribute)
                and node.func.attr.value == "backward"
                and isinstance(node.func.value, cst.Name)
            ):
                found.add(node.func.value.value)
        for name, nodes in binds.items():
            if all(isinstance(n, cst.Assign) and self._is_loss_call(n.value) for n in nodes):
                found.add(name)
        return found

    def _numeric(self, total: str, binds: dict[str, list[cst.CSTNode]]) -> bool:
        """`total` starts as a number here and is only ever rebound by arithmetic on itself."""
        nodes = binds.get(total, [])
        started = False
        for node in nodes:
            if isinstance(node, cst.Assign) and _is_number(_assigned(node, total)):
                started = True
            elif isinstance(node, cst.AugAssign) and isinstance(node.operator, ARITHMETIC):
                continue
            elif isinstance(node, cst.Assign) and isinstance(node.value, cst.BinaryOperation) and _name(node.value.left) == total:
                continue
            else:
                return False
        return started

    # -- the rewrite -------------------------------------------------------------------------------

    def _item(self, loss: cst.BaseExpression) -> cst.Call:
        return cst.Call(func=cst.Attribute(value=loss, attr=cst.Name("item")))

    def leave_AugAssign(self, original_node: cst.AugAssign, updated_node: cst.AugAssign) -> cst.AugAssign:
        if id(original_node) not in self._targets:
            return updated_node
        value = self._item(updated_node.value)
        return self.rewrite(original_node, updated_node, updated_node.with_changes(value=value), review=_REVIEW)

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        if id(original_node) not in self._targets or not isinstance(updated_node.value, cst.BinaryOperation):
            return updated_node
        value = updated_node.value.with_changes(right=self._item(updated_node.value.right))
        return self.rewrite(original_node, updated_node, updated_node.with_changes(value=value), review=_REVIEW)


_REVIEW = "the running total is now a Python float, no longer a tensor holding every step's graph"


def _assigned(node: cst.Assign, name: str) -> cst.BaseExpression | None:
    """What `name = ...` / `a, name = ..., ...` gives `name` (None when not a plain pairing)."""
    if len(node.targets) != 1:
        return None
    target, value = node.targets[0].target, node.value
    if _name(target) == name:
        return value
    if isinstance(target, cst.Tuple) and isinstance(value, cst.Tuple) and len(target.elements) == len(value.elements):
        for t, v in zip(target.elements, value.elements):
            if _name(t.value) == name and not isinstance(v, cst.StarredElement):
                return v.value
    return None


def _is_number(expr: cst.BaseExpression | None) -> bool:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        expr = expr.expression
    return isinstance(expr, (cst.Integer, cst.Float))


def _bound_names(node: cst.CSTNode) -> list[str]:
    """Plain names `node` (re)binds: assignments, augmented assignments, loops, `with ... as`."""
    if isinstance(node, cst.Assign):
        return [n for t in node.targets for n in _target_names(t.target)]
    if isinstance(node, (cst.AugAssign, cst.AnnAssign)):
        return _target_names(node.target) if not isinstance(node, cst.AnnAssign) or node.value else []
    if isinstance(node, (cst.For, cst.CompFor)):
        return _target_names(node.target)
    if isinstance(node, cst.AsName):
        return _target_names(node.name)
    if isinstance(node, cst.NamedExpr):
        return _target_names(node.target)
    return []


def _target_names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _target_names(e.value)]
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return []


def _accumulation(node: cst.CSTNode) -> tuple[str | None, cst.BaseExpression | None]:
    """(`total`, what is added) for `total += x` and `total = total + x`."""
    if isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.AddAssign):
        return _name(node.target), node.value
    if isinstance(node, cst.Assign) and len(node.targets) == 1:
        total = _name(node.targets[0].target)
        value = node.value
        if total and isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
            if _name(value.left) == total:
                return total, value.right
    return None, None


def _loss_names_in(expr: cst.BaseExpression) -> set[str]:
    """Names in `expr` used as values themselves (not through `x.item()` or another attribute)."""
    names: set[str] = set()

    class Names(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> bool:
            return False  # `loss.item()`, `loss.data`: not the loss tensor itself

        def visit_Name(self, node: cst.Name) -> None:
            names.add(node.value)

    traverse(expr, Names())
    return names


def _tensor_uses(scope: ScopeNodes, codemod: MigrationCodemod) -> set[str]:
    """Names used as tensors in this scope: `x.anything`, `x[...]`, `torch.f(x)`."""
    used: set[str] = set()
    for node in scope.nodes:
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
            used.add(node.value.value)
        elif isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name):
            used.add(node.value.value)
        elif isinstance(node, cst.Call) and (codemod.qualified_name(node.func) or "").startswith("torch."):
            for arg in node.args:
                used |= _loss_names_in(arg.value)
    return used
