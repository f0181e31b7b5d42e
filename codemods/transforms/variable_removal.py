"""TM002: `torch.autograd.Variable(x)` -> `x` (and `requires_grad=` / `volatile=` handled)."""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from codemods.helpers import args as A
from codemods.helpers.codemod import MigrationCodemod
from codemods.helpers.names import dotted

VARIABLE = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})
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
# Tensor methods that always return a new tensor object, never `self`.
_FRESH_METHODS = frozenset({"detach", "clone"})


def triggers() -> tuple[str, ...]:
    return (r"\bVariable\b",)


class VariableRemoval(MigrationCodemod):
    """Remove `torch.autograd.Variable` wrappers.

    ## What it does
    Rewrites `Variable(x)` to `x`, and `Variable(x, requires_grad=True)` to
    `x.requires_grad_()` (to `x.detach().requires_grad_()` when `x` may be a tensor used
    elsewhere, which is exactly what `Variable` did). `volatile=` is dropped, with a finding that
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
    Safe. `Variable(x)` is `x.detach()`; dropping it is exact for every argument the 0.3 API
    accepted (a plain tensor, which never requires grad). With `requires_grad=`, a freshly made
    tensor (a `torch.*` call, `.data`, `.clone()`, `.detach()`) is flagged in place; any other
    argument is detached first, so the tensor it names does not start requiring grad.
    `volatile=` has no effect today, so removing it changes nothing; wrapping the code in
    `torch.no_grad()` is left to you (a finding says where). Calls with `*args`, `**kwargs`, other
    arguments or a `volatile=` expression with calls in it are findings, not rewrites. A user
    class called `Variable` is never touched.

    ## References
    - https://pytorch.org/blog/pytorch-0_4_0-migration-guide/
    - https://pytorch.org/docs/stable/autograd.html#variable-deprecated
    """

    CODE = "TM002"
    DESCRIPTION = "Variable(x) -> x; Variable(x, requires_grad=True) -> x.requires_grad_()"

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
        if flag is False or flag is None:
            replacement = data if id(original_node) in self._loose else _operand(data)
        else:
            receiver = _operand(data)
            if not self._fresh(data):
                receiver = cst.Call(func=cst.Attribute(value=receiver, attr=cst.Name("detach")))
            flag_args = [] if flag is True else [cst.Arg(value=requires_grad.arg.value)]
            replacement = cst.Call(func=cst.Attribute(value=receiver, attr=cst.Name("requires_grad_")), args=flag_args)
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

    def _fresh(self, data: cst.BaseExpression) -> bool:
        """A tensor nothing else refers to, so flagging it in place is exactly `Variable`'s copy."""
        if isinstance(data, cst.Attribute) and data.attr.value == "data":
            return True
        if isinstance(data, cst.Call):
            name = self.qualified_name(data.func)
            if name is not None and name.startswith("torch."):
                return True
            return isinstance(data.func, cst.Attribute) and data.func.attr.value in _FRESH_METHODS
        return False

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.RemovalSentinel:
        """`x = Variable(x)` became `x = x`: drop the no-op line (unless it carries a comment)."""
        if updated_node is original_node or len(updated_node.body) != 1:
            return updated_node
        stmt = updated_node.body[0]
        if not isinstance(stmt, cst.Assign) or len(stmt.targets) != 1 or updated_node.trailing_whitespace.comment:
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
