"""TM014's survey of a file, in one pass: whether it refers to torch's weight_norm (and reads
`remove_weight_norm` otherwise than calling it), and per scope which names are bound only to
tensors and parameters (for `x.require_grad`)."""

from __future__ import annotations

import re

import libcst as cst

from codemods.engine.lazy import spells_none
from codemods.gates.moved_apis import table
from codemods.helpers.names import dotted

# A function body spelling neither adds nothing the codemod asks about: no weight_norm reference,
# and its bindings are its own scopes', asked about only at a `require_grad` inside it.
_ASKED = re.compile(r"weight_norm|require_grad")


_PARAMETER_LOOPS = {"parameters": 0, "named_parameters": 1}  # method -> index of the parameter in the target


class _Survey(cst.CSTVisitor):
    """One pass over the file: whether it refers to torch's weight_norm, and per function (the
    module is one too) which names are bound only to tensors and parameters."""

    def __init__(self, resolve, module: cst.Module) -> None:
        self.resolve = resolve
        self.factories = frozenset(table()["tensor_factories"])
        self.weight_norm = False
        self.removal_other_uses = False  # a read of remove_weight_norm that is not a call
        self.removal = frozenset(table()["weight_norm_removal"])
        self.called: set[int] = set()
        self.not_refs: set[int] = set()  # `.attr`, `kw=`, def/class/parameter names
        self.bindings: dict[tuple[int, str], bool] = {}
        self.scopes: list[cst.CSTNode] = [module]

    def _record(self, name: str, provable: bool) -> None:
        key = (id(self.scopes[-1]), name)
        self.bindings[key] = self.bindings.get(key, True) and provable

    def _record_target(self, target: cst.BaseExpression, provable: bool) -> None:
        if isinstance(target, cst.Name):
            self._record(target.value, provable)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._record_target(element.value, False)
        elif isinstance(target, cst.StarredElement):
            self._record_target(target.value, False)

    def _tensor(self, value: cst.BaseExpression | None) -> bool:
        return isinstance(value, cst.Call) and self.resolve(value.func) in self.factories

    # references
    def _reference(self, node: cst.BaseExpression, last: str) -> None:
        if last == "weight_norm" and not self.weight_norm and self.resolve(node) in table()["renames"]:
            self.weight_norm = True
        if last == "remove_weight_norm" and id(node) not in self.called and self.resolve(node) in self.removal:
            self.removal_other_uses = True

    def visit_Call(self, node: cst.Call) -> None:
        self.called.add(id(node.func))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.not_refs.add(id(node.keyword))

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self.not_refs:
            self._reference(node, node.value)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.not_refs.add(id(node.attr))
        self._reference(node, node.attr.value)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> bool:
        return not spells_none(node, _ASKED)  # a body not parsed yet stays so (engine/lazy.py)

    # scopes
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.not_refs.add(id(node.name))
        self._record(node.name.value, False)
        self.scopes.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.scopes.pop()

    def _enter(self, node: cst.CSTNode) -> None:
        self.scopes.append(node)

    def _exit(self, node: cst.CSTNode) -> None:
        self.scopes.pop()

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _enter
    leave_ListComp = leave_SetComp = leave_DictComp = leave_GeneratorExp = _exit

    def visit_Param(self, node: cst.Param) -> None:
        self.not_refs.add(id(node.name))
        self._record(node.name.value, False)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.not_refs.add(id(node.name))
        self._record(node.name.value, False)

    # bindings
    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._record_target(target.target, self._tensor(node.value))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._record_target(node.target, self._tensor(node.value))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._record_target(node.target, False)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._record_target(node.target, False)

    def visit_For(self, node: cst.For) -> None:
        self._loop(node.target, node.iter)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._loop(node.target, node.iter)  # into the comprehension's own scope

    def _loop(self, target: cst.BaseExpression, loop: cst.BaseExpression) -> None:
        index = None
        if isinstance(loop, cst.Call) and isinstance(loop.func, cst.Attribute):
            index = _PARAMETER_LOOPS.get(loop.func.attr.value)
        if index == 0 and isinstance(target, cst.Name):
            self._record(target.value, True)
        elif index == 1 and isinstance(target, cst.Tuple) and len(target.elements) == 2:
            name, parameter = (e.value for e in target.elements)
            self._record_target(name, False)
            if isinstance(parameter, cst.Name):
                self._record(parameter.value, True)
            else:
                self._record_target(parameter, False)
        else:
            self._record_target(target, False)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._record_target(node.name, False)

    def visit_Import(self, node: cst.Import) -> bool:
        for alias in node.names:
            name = dotted(alias.name)
            local = alias.asname.name if alias.asname else None
            if isinstance(local, cst.Name):
                self._record(local.value, False)
            elif name:
                self._record(name.split(".")[0], False)
        return False  # an import names no value

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                local = alias.asname.name if alias.asname else alias.name
                if isinstance(local, cst.Name):
                    self._record(local.value, False)
        return False

    def visit_Global(self, node: cst.Global) -> None:
        for item in node.names:
            self._record(item.name.value, False)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        for item in node.names:
            self._record(item.name.value, False)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        for param in node.params.params:
            self._record(param.name.value, False)
