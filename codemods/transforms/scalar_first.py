"""TM012: the scalar-first overloads (`p.add_(-lr, grad)`, `addcmul_(v, a, b)`) -> keyword forms."""

from __future__ import annotations

import libcst as cst

from codemods.gates.scalar_first import FUNCTIONS, GROUP_ENTRY, METHODS, TENSOR_METHODS, UNKNOWN
from codemods.gates.scalar_first import DEPTH as _DEPTH
from codemods.gates.scalar_first import MATH as _MATH
from codemods.gates.scalar_first import NUMBER_CALLS as _NUMBER_CALLS
from codemods.helpers.bindings import BodyBindings
from codemods.base import MigrationCodemod
from codemods.helpers.arguments import keyword_arg
from codemods.base import traverse

# TENSOR_METHODS, _DEPTH, _MATH, _NUMBER_CALLS: shared with the AST gate, which mirrors `_number`
# and `_tensor` (gates/scalar_first.py): a change to what they read is a change to both.


class ScalarFirst(MigrationCodemod):
    """Write the scalar of `add_`/`sub_`/`addcmul_`/`addcdiv_` as a keyword, not first.

    ## What it does
    Rewrites the deprecated overloads that take the scalar first — hand-written optimizers' shape —
    to the current ones: `p.data.add_(-group["lr"], d_p)` -> `p.data.add_(d_p, alpha=-group["lr"])`,
    `exp_avg_sq.mul_(beta2).addcmul_(1 - beta2, grad, grad)` -> `addcmul_(grad, grad, value=1 - beta2)`,
    `addcdiv_(-step_size, exp_avg, denom)` -> `addcdiv_(exp_avg, denom, value=-step_size)`, their
    out-of-place forms, and `torch.add(t, alpha, other)`, `torch.addcmul(t, v, a, b)` & co.

    ## Why is this bad?
    Each call warns (`This overload of add_ is deprecated: add_(Number alpha, Tensor other)`), the
    overloads are slated for removal, and `x.add_(a, b)` reads as "add a, then b" to anyone who
    does not know the old signature.

    ## Example
    ```python
    import torch


    def sgd_step(optimizer):
        for group in optimizer.param_groups:
            for p in group["params"]:
                p.data.add_(-group["lr"], p.grad.data)
    ```

    ## Use instead
    ```python
    import torch


    def sgd_step(optimizer):
        for group in optimizer.param_groups:
            for p in group["params"]:
                p.data.add_(p.grad.data, alpha=-group["lr"])
    ```

    ## Fix safety
    Safe: the new call computes the same thing (`self + alpha * other`, `self + value * a * b`).
    Only calls whose first argument is provably a number are rewritten — a literal, arithmetic of
    numbers, `math.*` of numbers, an entry of an optimizer's param group (`group["lr"]`), a name
    the same function binds only to such values (`beta1, beta2 = group["betas"]`, an entry
    `state["step"]` it sets to `0` and increments) — and, for the
    methods, whose receiver or tensor argument is visibly a tensor (`p.data`, `p.grad`, a chain of
    tensor methods, a name bound to one); `x.add_(t, u)` between tensors is not this overload.
    `addcmul_`/`addcdiv_` with the legacy arity and a first argument that is not provably a number
    are reported instead.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.Tensor.add_.html
    - https://pytorch.org/docs/stable/generated/torch.addcmul.html
    """

    PRUNE = False  # the names it reads (`beta1 = ...`, `for group in ...`) are bound off its lines;
    # its AST gate declines every file without a call it may take: it mirrors `leave_Call`,
    # `_number` and `_tensor` on the ast (gates/scalar_first.py), so a change here is one there

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._scopes: list[_Scope] = [_Scope()]

    # -- what each function binds -----------------------------------------------------------------

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        scope = _Scope()
        traverse(node.body, _Binder(scope))
        self._scopes.append(scope)

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self._scopes.pop()
        return updated_node

    # -- the calls ----------------------------------------------------------------------------------

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        args = updated_node.args
        if any(a.keyword is not None or a.star for a in args):
            return updated_node
        name = self.qualified_name(original_node.func)
        if name in FUNCTIONS:
            count, keyword = FUNCTIONS[name]
            if len(args) != count:
                return updated_node
            scalar_at = 1
        elif isinstance(original_node.func, cst.Attribute) and original_node.func.attr.value in METHODS and name is None:
            count, keyword = METHODS[original_node.func.attr.value]
            if len(args) != count:
                return updated_node
            scalar_at = 0
            tensors = (original_node.func.value, *(a.value for a in original_node.args[1:]))
            if not any(self._tensor(t) for t in tensors):
                if count == 3:
                    self.finding(original_node, f"`{original_node.func.attr.value}` with three arguments is the deprecated scalar-first overload only if its first is a number: check it", suggestion=f"{original_node.func.attr.value}(a, b, value=v)")
                return updated_node
        else:
            return updated_node
        if not self._number(original_node.args[scalar_at].value):
            if count - scalar_at == 3:  # addcmul/addcdiv: the overload is unmistakable, its scalar is not
                self.finding(
                    original_node,
                    "the first argument may be the deprecated overload's scalar, but it is not provably a number: write it as value=",
                    suggestion="addcmul_(a, b, value=v)",
                )
            return updated_node
        scalar = args[scalar_at]
        rest = [*args[:scalar_at], *args[scalar_at + 1 :]]
        last = rest[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        new_arg = keyword_arg(keyword, scalar.value).with_changes(comma=args[-1].comma)
        return self.rewrite(original_node, updated_node, updated_node.with_changes(args=[*rest[:-1], last, new_arg]))

    # -- what is a number, what is a tensor -------------------------------------------------------

    def _number(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        if depth > _DEPTH:
            return False
        if isinstance(expr, (cst.Integer, cst.Float)):
            return True
        if isinstance(expr, cst.UnaryOperation):
            return self._number(expr.expression, depth + 1)
        if isinstance(expr, cst.BinaryOperation):
            return self._number(expr.left, depth + 1) and self._number(expr.right, depth + 1)
        if isinstance(expr, cst.Subscript):
            if _group_entry(expr, self._scopes[-1]):
                return True
            values = self._scopes[-1].values.get(_key(expr) or "")  # `state["step"] = 0` in this function
            return bool(values) and all(self._number(v, depth + 1) for v in values)
        if isinstance(expr, cst.Attribute):
            return self.qualified_name(expr) in _MATH
        if isinstance(expr, cst.Call):
            callee = self.qualified_name(expr.func) or (expr.func.value if isinstance(expr.func, cst.Name) else None)
            return (callee in _MATH or callee in _NUMBER_CALLS) and all(self._number(a.value, depth + 1) for a in expr.args)
        if isinstance(expr, cst.Name):
            values = self._scopes[-1].values.get(expr.value)
            return bool(values) and all(v is _GROUP_NUMBER or self._number(v, depth + 1) for v in values)
        return False

    def _tensor(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        if depth > _DEPTH:
            return False
        if isinstance(expr, cst.Attribute):
            return expr.attr.value in ("data", "grad")
        if isinstance(expr, cst.Call):
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in TENSOR_METHODS:
                return True
            name = self.qualified_name(expr.func)
            return name is not None and name.startswith("torch.")
        if isinstance(expr, cst.Name):
            values = self._scopes[-1].values.get(expr.value)
            return bool(values) and all(v is not _GROUP_NUMBER and self._tensor(v, depth + 1) for v in values)
        return False


_GROUP_NUMBER = cst.Name(GROUP_ENTRY)  # a name unpacked from a param group's entry


class _Scope:
    def __init__(self) -> None:
        self.values: dict[str, list[cst.BaseExpression]] = {}  # name -> every value bound to it
        self.groups: set[str] = set()  # loop variables over `<x>.param_groups`


class _Binder(BodyBindings):
    """The values each name of one function is bound to (nested functions are their own; a
    lambda's parameters are bound, to an unknown value). Keys are names and string-keyed entries
    (`state["step"]`); `x += v` adds `v` (`state["step"] += 1` keeps a number a number)."""

    def __init__(self, scope: _Scope) -> None:
        super().__init__(scope.values, enter_lambdas=True)
        self.scope = scope

    def key(self, target: cst.BaseExpression) -> str | None:
        return _key(target)

    def augmented_value(self, node: cst.AugAssign) -> cst.BaseExpression:
        return node.value

    def bind_unpacked(self, target: cst.Tuple | cst.List, value: cst.BaseExpression) -> None:
        entry = isinstance(value, cst.Subscript) and _group_entry(value, self.scope)
        for element in target.elements:
            if entry and isinstance(element.value, cst.Name):
                self.bind(element.value.value, _GROUP_NUMBER)
            else:
                self._unknown(element.value)

    def visit_For(self, node: cst.For) -> None:
        iterated = node.iter
        if isinstance(node.target, cst.Name) and isinstance(iterated, cst.Attribute) and iterated.attr.value == "param_groups":
            self.scope.groups.add(node.target.value)
        else:
            self._unknown(node.target)

    def visit_Param(self, node: cst.Param) -> None:
        self._unknown(node.name)

    def _unknown(self, target: cst.BaseExpression) -> None:
        """A binding whose value is not known: the name is no number (nor tensor) by this pass."""
        for node in _names(target):
            self.bind(node, cst.Name(UNKNOWN))


def _key(target: cst.BaseExpression) -> str | None:
    """How a binding target is looked up: `x`, or `state["step"]` for an entry with a string key."""
    if isinstance(target, cst.Name):
        return target.value
    if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) and len(target.slice) == 1:
        index = target.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
            return f"{target.value.value}[{index.value.evaluated_value!r}]"
    return None


def _names(target: cst.BaseExpression):
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _names(element.value)


def _group_entry(expr: cst.Subscript, scope: _Scope) -> bool:
    """`group["lr"]` where `group` runs over an optimizer's `param_groups` (not its "params")."""
    if not (isinstance(expr.value, cst.Name) and expr.value.value in scope.groups and len(expr.slice) == 1):
        return False
    index = expr.slice[0].slice
    return isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString) and index.value.evaluated_value != "params"
