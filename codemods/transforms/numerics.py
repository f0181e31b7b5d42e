"""TM906: numerically weak hand-written formulas with an exact torch function (findings only)."""

from __future__ import annotations

import libcst as cst

from codemods.helpers import arguments
from codemods.base import MigrationCodemod


def _is_one(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Integer):
        return arguments.literal(expr) == 1
    return isinstance(expr, cst.Float) and float(expr.value) == 1.0


def _single_arg(call: cst.Call) -> cst.BaseExpression | None:
    """The argument of `f(x)` (one positional argument, nothing else), else None."""
    if len(call.args) == 1 and call.args[0].keyword is None and not call.args[0].star:
        return call.args[0].value
    return None


def _atomic(expr: cst.BaseExpression) -> bool:
    """Whether `expr` can take a method call or a unary minus without parentheses."""
    return bool(expr.lpar) or isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float))


class Numerics(MigrationCodemod):
    """Report `log(1 + x)`, `exp(x) - 1` and hand-written log-sum-exp, which lose precision.

    ## What it does
    Reports, with the torch function that computes the same value accurately:
    - `torch.log(1 + x)`, `torch.log(x + 1)`, `(1 + x).log()` -> `torch.log1p(x)`, and
      `torch.log(1 - x)` -> `torch.log1p(-x)`;
    - `torch.exp(x) - 1`, `x.exp() - 1` -> `torch.expm1(x)`;
    - `torch.log(torch.sum(torch.exp(x), dim))` and its method spellings
      (`x.exp().sum(dim).log()`) -> `torch.logsumexp(x, dim)` (`keepdim` kept; with no `dim`,
      `torch.logsumexp(x.flatten(), 0)`).
    Only `torch`'s functions and tensor methods are read: `math.log`, `np.exp` and a function of
    your own named `log` are left alone. It rewrites nothing.

    ## Why is this bad?
    In float32, `1 + x` rounds `x` away below about 6e-8 and keeps only a few digits of it
    above: `torch.log(1 + 1e-7)` is off by 19%, `torch.log1p(1e-7)` is exact to the last bit.
    `exp(x) - 1` cancels the same way for small `x`. `log(sum(exp(x)))` overflows to `inf` as
    soon as an `x` exceeds 88 (float32) and underflows to `-inf` for very negative `x`;
    `logsumexp` subtracts the maximum first and stays finite.

    ## Example
    ```python
    import torch
    import torch.nn.functional as F

    rmsle = F.mse_loss(torch.log(1 + pred), torch.log(1 + targ))
    growth = torch.exp(rate) - 1
    lse = torch.log(torch.sum(torch.exp(scores), dim=1))
    ```

    ## Use instead
    ```python
    import torch
    import torch.nn.functional as F

    rmsle = F.mse_loss(torch.log1p(pred), torch.log1p(targ))
    growth = torch.expm1(rate)
    lse = torch.logsumexp(scores, dim=1)
    ```

    ## Fix safety
    Findings only. Each suggestion is the same mathematical function, computed more accurately:
    results change in the last digits where the old formula was exact enough, and become finite
    or accurate where it was not (tests/test_behaviour_numerics.py measures both). Gradients
    follow: `log1p`'s is `1 / (1 + x)` as before.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.log1p.html
    - https://pytorch.org/docs/stable/generated/torch.expm1.html
    - https://pytorch.org/docs/stable/generated/torch.logsumexp.html
    """

    PRUNE = True  # every site is a log/exp call on a trigger line

    def _torch_call(self, expr: cst.BaseExpression, function: str) -> cst.BaseExpression | None:
        """`x` when `expr` is `torch.<function>(x)` or the method call `x.<function>()`."""
        if not isinstance(expr, cst.Call):
            return None
        if self.qualified_name(expr.func) == f"torch.{function}":
            return _single_arg(expr)
        func = expr.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value == function
            and not expr.args
            and self.qualified_name(func.value) is None  # `np.exp()`, `math.log()`: not a tensor
            and self.qualified_name(func) is None
        ):
            return func.value
        return None

    def visit_Call(self, node: cst.Call) -> None:
        inner = self._torch_call(node, "log")
        if inner is None:
            return
        inner = inner.with_changes(lpar=(), rpar=()) if isinstance(inner, cst.BinaryOperation) else inner
        if isinstance(inner, cst.BinaryOperation):
            self._log1p(node, inner)
        elif isinstance(inner, cst.Call):
            self._logsumexp(node, inner)

    def _log1p(self, node: cst.Call, inner: cst.BinaryOperation) -> None:
        op = inner.operator
        if isinstance(op, cst.Add) and _is_one(inner.left):
            x = self.code_for(inner.right)
        elif isinstance(op, cst.Add) and _is_one(inner.right):
            x = self.code_for(inner.left)
        elif isinstance(op, cst.Subtract) and _is_one(inner.left):
            right = inner.right
            logits = self._sigmoid_of(right)
            if logits is not None:  # log(1 - sigmoid(d)): log1p does not help near 1; logsigmoid is exact
                d = self.code_for(logits)
                self.finding(
                    node,
                    f"`{self.code_for(node)}` is -inf once sigmoid({d}) rounds to 1 (from about 17 in float32)"
                    f" and loses precision before: log(1 - sigmoid({d})) is logsigmoid(-{d}), exact",
                    suggestion=f"torch.nn.functional.logsigmoid(-{d if _atomic(logits) else f'({d})'})",
                )
                return
            x = "-" + (self.code_for(right) if _atomic(right) else f"({self.code_for(right)})")
        else:
            return
        operand = x.removeprefix("-")
        self.finding(
            node,
            f"`{self.code_for(node)}` loses precision where `{operand}` is small: adding it to 1 rounds it off"
            " before the log",
            suggestion=f"torch.log1p({x})",
        )

    def _sigmoid_of(self, expr: cst.BaseExpression) -> cst.BaseExpression | None:
        """`d` where `expr` is `torch.sigmoid(d)`, `F.sigmoid(d)`, `d.sigmoid()` or a name this
        module binds once, to one of those."""
        if isinstance(expr, cst.Name):
            bound = [v for v in self._assignments().get(expr.value, [])]
            return self._sigmoid_of(bound[0]) if len(bound) == 1 and not isinstance(bound[0], cst.Name) else None
        if isinstance(expr, cst.Call):
            if self.qualified_name(expr.func) in ("torch.sigmoid", "torch.nn.functional.sigmoid"):
                return _single_arg(expr)
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value == "sigmoid" and not expr.args and self.qualified_name(func) is None:
                return func.value
        return None

    def _assignments(self) -> dict[str, list[cst.BaseExpression]]:
        """Every value the module assigns to each plain name (read once, on the first need)."""
        if self._bound is None:
            collector = _Assignments()
            self._module.visit(collector)
            self._bound = collector.values
        return self._bound

    def visit_Module(self, node: cst.Module) -> bool:
        self._module, self._bound = node, None
        return True

    def _logsumexp(self, node: cst.Call, total: cst.Call) -> None:
        """`log(sum(exp(x), dim, keepdim))` in function or method spellings."""
        if arguments.has_star_args(total):
            return
        if self.qualified_name(total.func) == "torch.sum":
            bound = arguments.bind(total, ("input", "dim", "keepdim"))
            summed = bound.get("input")
            exps = summed.arg.value if summed is not None else None
        elif isinstance(total.func, cst.Attribute) and total.func.attr.value == "sum" and self.qualified_name(total.func) is None:
            bound = arguments.bind(total, ("dim", "keepdim"))
            exps = total.func.value
        else:
            return
        if set(bound) - {"input", "dim", "keepdim"}:
            return  # dtype=, out=: not logsumexp's
        x = self._torch_call(exps, "exp") if exps is not None else None
        if x is None:
            return
        x_code = self.code_for(x)
        dim = bound.get("dim")
        keepdim = bound.get("keepdim")
        if dim is None or arguments.literal(dim.arg.value) is None:
            flat = x_code if _atomic(x) else f"({x_code})"
            suggestion = f"torch.logsumexp({flat}.flatten(), 0)"
        else:
            suggestion = f"torch.logsumexp({x_code}, {self.code_for(dim.arg.value)}"
            suggestion += f", keepdim={self.code_for(keepdim.arg.value)})" if keepdim is not None else ")"
        self.finding(
            node,
            f"`{self.code_for(node)}` overflows to inf once an exponent passes ~88 (float32): a hand-written log-sum-exp",
            suggestion=suggestion,
        )

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not (isinstance(node.operator, cst.Subtract) and _is_one(node.right)):
            return
        x = self._torch_call(node.left, "exp")
        if x is None:
            return
        self.finding(
            node,
            f"`{self.code_for(node)}` loses precision for small values: exp(x) is near 1 and the subtraction cancels",
            suggestion=f"torch.expm1({self.code_for(x)})",
        )


class _Assignments(cst.CSTVisitor):
    def __init__(self) -> None:
        self.values: dict[str, list[cst.BaseExpression]] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                self.values.setdefault(target.target.value, []).append(node.value)
            else:  # `a, s = ...`: each name it binds, bound to something unknown
                for name in _names(target.target):
                    self.values.setdefault(name, []).extend([node.value, node.value])

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Name):
            self.values.setdefault(node.target.value, []).extend([node.value, node.value])


def _names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _names(e.value)]
    return []
