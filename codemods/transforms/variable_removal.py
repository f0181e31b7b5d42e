"""TM002: `torch.autograd.Variable(x)` -> `x` (and `requires_grad=` / `volatile=` handled)."""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from codemods.gates.variable_removal import VARIABLE
from codemods.helpers import args as A
from codemods.helpers.codemod import MigrationCodemod
from codemods.helpers.names import dotted

PARAMETERS = ("data", "requires_grad", "volatile")
# Expressions that can take `.attr` or stand as an operand without parentheses.
_ATOMS = (
    cst.Name,
    cst.Attribute,
    cst.Call,
    cst.Subscript,
    cst.SimpleString,
    cst.ConcatenatedString,
    cst.FormattedString,
    cst.Integer,
    cst.Float,
    cst.Imaginary,
    cst.List,
    cst.Dict,
    cst.Set,
    cst.ListComp,
    cst.SetComp,
    cst.DictComp,
)
# Tensor constructors: a new tensor that requires no grad and that nothing else refers to.
FACTORIES = frozenset(
    f"torch.{name}"
    for name in (
        "tensor Tensor FloatTensor DoubleTensor HalfTensor LongTensor IntTensor ShortTensor CharTensor ByteTensor"
        " BoolTensor cuda.FloatTensor cuda.DoubleTensor cuda.HalfTensor cuda.LongTensor cuda.IntTensor"
        " cuda.ByteTensor zeros ones empty full rand randn randint randperm arange range linspace logspace eye"
        " from_numpy zeros_like ones_like empty_like full_like rand_like randn_like randint_like"
    ).split()
)
# Tensor methods that make a new tensor requiring no grad, whatever their receiver.
NEW_TENSOR_METHODS = frozenset("detach new new_zeros new_ones new_empty new_full new_tensor".split())
# Tensor methods after which a tensor that required no grad still requires none.
KEEPS_GRAD_FREE = frozenset(
    "cuda cpu to type type_as float double half long int short byte bool char view view_as reshape resize_"
    " unsqueeze squeeze contiguous uniform_ normal_ fill_ zero_ random_ bernoulli_ exponential_ t permute"
    " expand expand_as repeat transpose pin_memory narrow select resize_as_".split()
)


class VariableRemoval(MigrationCodemod):
    """Remove `torch.autograd.Variable` wrappers.

    ## What it does
    Rewrites `Variable(x)` to `x` (to `x.detach()` when `x` is computed and may carry a graph),
    and `Variable(x, requires_grad=True)` to `x.requires_grad_()` (to `x.detach().requires_grad_()`
    when `x` may be a tensor used elsewhere, which is exactly what `Variable` did). `volatile=` is dropped, with a finding that
    suggests `torch.no_grad()`. Every import form is recognised (`from torch.autograd import
    Variable`, `import torch.autograd as ag; ag.Variable`, `torch.autograd.Variable`,
    `from torch.autograd.variable import Variable`), and the import is removed once unused.

    ## Why is this bad?
    Since PyTorch 0.4 tensors carry autograd state themselves; `Variable` is a deprecated shim that
    returns a detached tensor. `volatile=` has had no effect since 0.4 and warns on every call:
    code that relied on it to skip autograd now builds graphs and uses more memory.

    ## Example
    ```python
    from torch.autograd import Variable
    inputs, labels = Variable(inputs), Variable(labels)
    noise = Variable(torch.randn(4, 100), requires_grad=True)
    batch = Variable(images, volatile=True)
    ```

    ## Use instead
    ```python
    inputs, labels = inputs, labels
    noise = torch.randn(4, 100).requires_grad_()
    batch = images  # and run the inference under `with torch.no_grad():`
    ```

    ## Fix safety
    Safe. `Variable(x)` is `x.detach()`, which is what the output says whenever `x` is computed
    (`Variable(x + delta)`, `Variable(torch.clamp(x, 0, 1))`, `Variable(model(x))`): such a value may
    carry a graph that the wrapper cut off. A freshly made tensor (`torch.zeros(...)`, `x.data`,
    `.detach()`, conversions and views of those) and a tensor passed by name (`Variable(images)`)
    lose the wrapper entirely: the 0.3 API only accepted plain tensors, which never require grad,
    so the copy changed nothing there. With `requires_grad=`, only a fresh tensor is flagged in
    place; anything else is detached first, so the caller's tensor does not start requiring grad.
    `volatile=` has no effect today, so removing it changes nothing; wrapping the code in
    `torch.no_grad()` is left to you (a finding says where). Calls with `*args`, `**kwargs`, other
    arguments or a `volatile=` expression with calls in it are findings, not rewrites. A user
    class called `Variable` is never touched. `x = Variable(x)` lines vanish (unless commented).

    ## References
    - https://pytorch.org/blog/pytorch-0_4_0-migration-guide/
    - https://pytorch.org/docs/stable/autograd.html#variable-deprecated
    """

    CODE = "TM002"
    PRUNE = True  # its sites and what decides them (the statement around a `Variable(...)`) are on trigger lines

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._loose: set[int] = set()  # ids of original expressions where no parentheses are needed
        self._heads: set[str] = set()  # local names through which a rewritten Variable was reached

    # -- positions where a bare expression needs no parentheses ------------------------------

    def _mark(self, node: cst.CSTNode | None) -> None:
        if node is not None:
            self._loose.add(id(node))

    def visit_Assign(self, node: cst.Assign) -> None:
        self._mark(node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._mark(node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._mark(node.value)

    def visit_Return(self, node: cst.Return) -> None:
        self._mark(node.value)

    def visit_Arg(self, node: cst.Arg) -> None:
        self._mark(node.value)

    def visit_Element(self, node: cst.Element) -> None:
        self._mark(node.value)

    def visit_DictElement(self, node: cst.DictElement) -> None:
        self._mark(node.value)

    def visit_Expr(self, node: cst.Expr) -> None:
        self._mark(node.value)

    # -- the rewrite ------------------------------------------------------------------------

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if self.qualified_name(original_node.func) not in VARIABLE:
            return updated_node
        reason = self._undecidable(updated_node)
        if reason is not None:
            self.finding(original_node, reason, suggestion="pass the tensor itself (`x` or `x.requires_grad_()`)")
            return updated_node
        bound = A.bind(updated_node, PARAMETERS)
        data = bound["data"].arg.value
        volatile = bound.get("volatile")
        requires_grad = bound.get("requires_grad")

        flag = A.literal(requires_grad.arg.value) if requires_grad else False
        origin = self._origin(data)
        if flag is False or flag is None:
            if origin == "computed":  # it may carry a graph: `Variable` cut it off
                replacement = _method(_operand(data), "detach")
            else:
                replacement = data if id(original_node) in self._loose else _operand(data)
        else:
            receiver = _operand(data)
            if origin != "fresh":  # flag a copy, never the caller's tensor (what `Variable` did)
                receiver = _method(receiver, "detach")
            flag_args = [] if flag is True else [cst.Arg(value=requires_grad.arg.value)]
            replacement = _method(receiver, "requires_grad_", flag_args)
        if not self.suppressed(original_node):
            self._heads.add((dotted(original_node.func) or "").split(".")[0])
            if volatile is not None and A.literal(volatile.arg.value) is not False:
                self.finding(
                    original_node,
                    "`volatile=` has had no effect since PyTorch 0.4 and was removed: run this code under"
                    " `with torch.no_grad():` to skip autograd",
                    suggestion="with torch.no_grad():",
                )
        return self.rewrite(original_node, updated_node, replacement)

    def _undecidable(self, call: cst.Call) -> str | None:
        if A.has_star_args(call):
            return "`Variable(...)` with *args/**kwargs: remove the wrapper by hand"
        bound = A.bind(call, PARAMETERS)
        if "data" not in bound:
            return "`Variable()` without data: replace it with the tensor it should hold"
        extra = [a.keyword.value for a in call.args if a.keyword is not None and a.keyword.value not in PARAMETERS]
        if extra or len([a for a in call.args if a.keyword is None]) > len(PARAMETERS):
            return f"`Variable(...)` with other arguments ({', '.join(extra) or 'extra positional'}): remove by hand"
        volatile = bound.get("volatile")
        if volatile is not None and m.findall(volatile.arg.value, m.Call()):
            return "`volatile=` is computed by a call that removing it would skip: remove the wrapper by hand"
        return None

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
        if isinstance(data, (cst.Name, cst.Subscript)):
            return "named"
        if isinstance(data, (cst.Integer, cst.Float)):
            return "fresh"
        if isinstance(data, cst.BinaryOperation):  # arithmetic of fresh tensors and numbers
            fresh = self._origin(data.left) == "fresh" and self._origin(data.right) == "fresh"
            return "fresh" if fresh else "computed"
        if isinstance(data, cst.IfExp):
            branches = {self._origin(data.body), self._origin(data.orelse)}
            return next(o for o in ("computed", "named", "fresh") if o in branches)
        if not isinstance(data, cst.Call):
            return "computed"
        name = self.qualified_name(data.func)
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
        return "computed"

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.RemovalSentinel:
        """`x = Variable(x)` became `x = x`: drop the no-op line (unless it carries a comment)."""
        if updated_node is original_node or len(updated_node.body) != 1:
            return updated_node
        stmt = updated_node.body[0]
        if not isinstance(stmt, cst.Assign) or len(stmt.targets) != 1 or _has_comment(updated_node):
            return updated_node
        names = _names(stmt.targets[0].target)
        if names is None or names != _names(stmt.value) or names == _names(original_node.body[0].value):
            return updated_node
        return cst.RemoveFromParent()

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        for head in self._heads:
            target = self.imports.aliases.get(head)
            if target is None or head in self.imports.shadowed:
                continue
            if target in VARIABLE:
                module, _, obj = target.rpartition(".")
                self.remove_unused_import(module, obj, None if head == obj else head)
            elif head != target.split(".")[0]:  # `import torch.autograd as ag`, not `import torch`
                self.remove_unused_import(target, None, head)
        return updated_node


def _method(receiver: cst.BaseExpression, name: str, args: list[cst.Arg] | None = None) -> cst.Call:
    return cst.Call(func=cst.Attribute(value=receiver, attr=cst.Name(name)), args=args or [])


def _operand(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`expr`, parenthesised when it could not otherwise take an attribute or be an operand."""
    if isinstance(expr, _ATOMS) or expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _names(expr: cst.BaseExpression) -> tuple[str, ...] | None:
    """`a` or `a, b` (with or without parentheses) as names; None for anything else."""
    if isinstance(expr, cst.Name):
        return (expr.value,)
    if isinstance(expr, cst.Tuple) and all(isinstance(e, cst.Element) and isinstance(e.value, cst.Name) for e in expr.elements):
        return tuple(e.value.value for e in expr.elements)
    return None


def _has_comment(line: cst.SimpleStatementLine) -> bool:
    return line.trailing_whitespace.comment is not None or any(e.comment for e in line.leading_lines)
