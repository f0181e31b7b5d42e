"""TM013: keywords torch removed from autograd's entry points -> their current names."""

from __future__ import annotations

import libcst as cst

from codemods.helpers import arguments
from codemods.base import MigrationCodemod
from codemods.helpers.names import walk_statements

# Qualified callable -> {old keyword: new keyword, or None to drop it}. `Tensor.backward` is a
# method: see METHOD below.
FUNCTIONS: dict[str, dict[str, str | None]] = {
    "torch.autograd.backward": {"variables": "tensors", "grad_variables": "grad_tensors", "retain_variables": "retain_graph"},
    "torch.autograd.grad": {"only_inputs": None},
}
METHOD = ("backward", {"retain_variables": "retain_graph"})


class RemovedKeywords(MigrationCodemod):
    """Rename the keyword arguments of autograd's entry points that torch 0.4 retired.

    ## What it does
    Renames `loss.backward(retain_variables=True)` to `retain_graph=True`; in
    `torch.autograd.backward(...)`, `variables=` to `tensors=`, `grad_variables=` to
    `grad_tensors=` and `retain_variables=` to `retain_graph=`; and drops
    `torch.autograd.grad(..., only_inputs=False)`, in every import form
    (`from torch import autograd as ag`, `from torch.autograd import grad`).

    ## Why is this bad?
    `retain_variables=` and `variables=` are gone: `TypeError: Tensor.backward() got an unexpected
    keyword argument 'retain_variables'`. `grad_variables=` warns on every call (`FutureWarning`),
    and `only_inputs=False` warns that it is ignored.

    ## Example
    ```python
    import torch
    loss.backward(retain_variables=True)
    torch.autograd.backward([loss], grad_variables=[weight])
    ```

    ## Use instead
    ```python
    import torch
    loss.backward(retain_graph=True)
    torch.autograd.backward([loss], grad_tensors=[weight])
    ```

    ## Fix safety
    Safe: each new keyword is the old one renamed, with the same meaning (torch 0.3 documented
    `retain_variables` as the deprecated name of `retain_graph`). `only_inputs` has been ignored
    since 0.4 (gradients are only ever returned for `inputs`, never accumulated into other leaves),
    so dropping it changes nothing but the warning; code that relied on the 0.3 accumulation has
    been wrong since 0.4 either way. A call that passes both spellings is a finding, and so is
    `.backward(retain_variables=...)` in a module that defines its own `backward` taking
    `retain_variables` (not torch's).

    ## References
    - https://pytorch.org/docs/stable/generated/torch.Tensor.backward.html
    - https://pytorch.org/docs/stable/generated/torch.autograd.backward.html
    - https://pytorch.org/docs/stable/generated/torch.autograd.grad.html
    """

    PRUNE = True  # its sites are calls that pass one of the old keywords, on trigger lines

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        collector = _OwnBackward()
        walk_statements(tree.body, collector)
        self.own_backward = collector.found  # a `def backward(..., retain_variables...)` here
        return super().transform_module_impl(tree)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        renames = FUNCTIONS.get(self.qualified_name(original_node.func) or "")
        if renames is None:
            func = original_node.func
            if not (isinstance(func, cst.Attribute) and func.attr.value == METHOD[0]):
                return updated_node
            if self.qualified_name(func) is not None:
                return updated_node  # a module's function named backward, not a tensor's method
            renames = METHOD[1]
            if self.own_backward and arguments.keyword(updated_node, "retain_variables") is not None:
                self.finding(original_node, "this module defines its own backward(retain_variables=...): not torch's, left as it is")
                return updated_node
        old = [a for a in updated_node.args if a.keyword is not None and a.keyword.value in renames]
        if not old:
            return updated_node
        for arg in old:
            new = renames[arg.keyword.value]
            if new is not None and arguments.keyword(updated_node, new) is not None:
                self.finding(original_node, f"both `{arg.keyword.value}=` and `{new}=` are passed: keep one", suggestion=f"{new}=...")
                return updated_node
            if new is None and not (isinstance(arg.value, cst.Name) and arg.value.value == "False"):
                return updated_node  # `only_inputs=True` is the default and does not warn
        return self.rewrite(original_node, updated_node, _renamed(updated_node, renames))


def _renamed(call: cst.Call, renames: dict[str, str | None]) -> cst.Call:
    args = []
    for arg in call.args:
        name = arg.keyword.value if arg.keyword is not None else None
        if name not in renames:
            args.append(arg)
        elif renames[name] is not None:
            args.append(arg.with_changes(keyword=cst.Name(renames[name])))
    if args and len(args) < len(call.args) and call.args[-1].comma == cst.MaybeSentinel.DEFAULT:
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)  # no trailing comma left behind
    return call.with_changes(args=args)


class _OwnBackward(cst.CSTVisitor):
    """Whether the module defines a function `backward` with a `retain_variables` parameter."""

    def __init__(self) -> None:
        self.found = False

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        pass

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        pass

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value == "backward":
            params = (*node.params.params, *node.params.kwonly_params, *node.params.posonly_params)
            self.found = self.found or any(p.name.value == "retain_variables" for p in params)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        pass
