"""Which `torch.load(...)` calls feed `load_state_dict`: `Flows`, a visitor, and `LOAD_WORD`.

TM102 gives such a load `map_location="cpu"` (the tensors are copied into the model wherever
they live) and TM301 gives it `weights_only=True` (a state dict is only tensors); both learn it
with `Flows` over the statements that say `LOAD_WORD`.
"""

from __future__ import annotations

import libcst as cst

from codemods.gates.load_weights_only import LOADS
from codemods.helpers.arguments import bind
from codemods.helpers.names import Imports
from codemods.helpers.patterns import Words

# Every statement Flows learns from says `load` (`torch.load`, `th.load`, `load_state_dict`).
LOAD_WORD = Words(r"\bload(?:_state_dict)?\b")

# Getting an entry out of a loaded checkpoint keeps the flow: ckpt["model"], ckpt.get("model").
_GETTERS = frozenset({"get", "pop", "copy"})


def _root(expr: cst.BaseExpression) -> cst.BaseExpression:
    """What an expression reads from: `ckpt` for `ckpt["a"]["b"]` or `ckpt.get("model")`."""
    while True:
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        elif (
            isinstance(expr, cst.Call)
            and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value in _GETTERS
        ):
            expr = expr.func.value
        else:
            return expr


class Flows(cst.CSTVisitor):
    """Which `torch.load(...)` calls feed `load_state_dict`, directly or through a name of their scope."""

    def __init__(self, imports: Imports) -> None:
        self.imports = imports
        self.feeds: set[int] = set()  # ids of torch.load calls whose result reaches load_state_dict
        self.partial: set[int] = set()  # ... reached through an entry of the loaded object
        self._scopes: list[tuple[dict[str, bool], list[tuple[int, str]]]] = [({}, [])]
        self.names: dict[int, tuple[str, cst.CSTNode | None]] = {}  # such a load: its name and scope
        # such a load: what it is loaded into (`optimizer` of `optimizer.load_state_dict(...)`)
        self.receivers: dict[int, list[cst.BaseExpression]] = {}
        self._into: list[dict[str, list[cst.BaseExpression]]] = [{}]  # per scope: name -> receivers
        self._nodes: list[cst.CSTNode | None] = [None]  # the scopes' nodes (None: the module)

    def _is_load(self, expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Call) and self.imports.resolve(expr.func) in LOADS

    def _push(self, node: cst.CSTNode) -> None:
        self._scopes.append(({}, []))
        self._nodes.append(node)
        self._into.append({})

    def _pop(self) -> None:
        fed, loads = self._scopes.pop()
        scope = self._nodes.pop()
        into = self._into.pop()
        for call, name in loads:
            if name in fed:
                self.feeds.add(call)
                self.receivers.setdefault(call, []).extend(into.get(name, ()))
                self.names[call] = (name, scope)
                if fed[name]:
                    self.partial.add(call)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._push(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._push(node)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._pop()

    def leave_Module(self, original_node: cst.Module) -> None:
        self._pop()

    def _assigned(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if value is not None and isinstance(target, cst.Name) and self._is_load(value):
            self._scopes[-1][1].append((id(value), target.value))

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1:
            self._assigned(node.targets[0].target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._assigned(node.target, node.value)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "load_state_dict"):
            return
        bound = bind(node, ("state_dict",))
        if "state_dict" not in bound:
            return
        value = bound["state_dict"].arg.value
        root = _root(value)
        through_entry = root is not value
        if self._is_load(root):
            self.feeds.add(id(root))
            self.receivers.setdefault(id(root), []).append(func.value)
            if through_entry:
                self.partial.add(id(root))
        elif isinstance(root, cst.Name):
            fed = self._scopes[-1][0]
            fed[root.value] = fed.get(root.value, False) or through_entry
            self._into[-1].setdefault(root.value, []).append(func.value)
