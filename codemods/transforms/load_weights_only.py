"""TM301: `torch.load` without `weights_only=` -> an explicit choice, with a security finding."""

from __future__ import annotations

import libcst as cst

from codemods.gates.load_weights_only import LOADS
from codemods.helpers import args as A
from codemods.helpers.codemod import MigrationCodemod
from codemods.helpers.keywords import append_args, keyword_arg
from codemods.helpers.names import Imports
from codemods.helpers.patterns import Words

POSITIONAL = ("f", "map_location", "pickle_module")
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


class _Flows(cst.CSTVisitor):
    """Which `torch.load(...)` calls feed `load_state_dict`, directly or through a name of their scope."""

    def __init__(self, imports: Imports) -> None:
        self.imports = imports
        self.feeds: set[int] = set()  # ids of torch.load calls whose result reaches load_state_dict
        self.partial: set[int] = set()  # ... reached through an entry of the loaded object
        self._scopes: list[tuple[dict[str, bool], list[tuple[int, str]]]] = [({}, [])]

    def _is_load(self, expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Call) and self.imports.resolve(expr.func) in LOADS

    def _push(self) -> None:
        self._scopes.append(({}, []))

    def _pop(self) -> None:
        fed, loads = self._scopes.pop()
        for call, name in loads:
            if name in fed:
                self.feeds.add(call)
                if fed[name]:
                    self.partial.add(call)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._push()

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._push()

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
        bound = A.bind(node, ("state_dict",))
        if "state_dict" not in bound:
            return
        value = bound["state_dict"].arg.value
        root = _root(value)
        through_entry = root is not value
        if self._is_load(root):
            self.feeds.add(id(root))
            if through_entry:
                self.partial.add(id(root))
        elif isinstance(root, cst.Name):
            fed = self._scopes[-1][0]
            fed[root.value] = fed.get(root.value, False) or through_entry


# Every statement _Flows learns from says `load` (`torch.load`, `th.load`, `load_state_dict`).
_LOAD_WORD = Words(r"\bload(?:_state_dict)?\b")


class LoadWeightsOnly(MigrationCodemod):
    """Make `torch.load`'s `weights_only=` explicit: `True` for state dicts, else `False` and a finding.

    ## What it does
    Adds `weights_only=` to every `torch.load(...)` that does not pass it. When the loaded object
    flows into `load_state_dict` (as the argument itself, an entry of it, or through a name
    assigned from `torch.load` in the same function) it adds `weights_only=True`. Otherwise it adds
    `weights_only=False`, which keeps what the code did before PyTorch 2.6, and reports the call
    as a security finding.

    ## Why is this bad?
    `torch.load` unpickles: a malicious checkpoint runs arbitrary code. PyTorch 2.6 changed the
    default to `weights_only=True`, which only allows tensors, primitive types and containers, so
    legacy code that pickles whole models, optimisers or argparse namespaces fails with an
    `UnpicklingError` on current torch, while code that only loads state dicts should say so.

    ## Example
    ```python
    model.load_state_dict(torch.load("weights.pt"))
    model = torch.load("whole_model.pt")
    ```

    ## Use instead
    ```python
    model.load_state_dict(torch.load("weights.pt", weights_only=True))
    model = torch.load("whole_model.pt", weights_only=False)  # only for files you trust
    ```

    ## Fix safety
    Review. `weights_only=True` is right for plain state dicts; a checkpoint dict that also holds
    other Python objects (an `argparse.Namespace`, NumPy arrays) next to the state dict then fails
    to load and needs `weights_only=False` or `torch.serialization.add_safe_globals`.
    `weights_only=False` keeps the pre-2.6 behaviour and its risk: load only trusted files. A call
    with `pickle_module=` gets `False` (torch refuses `True` with it); calls with `**kwargs` are
    reported, not changed.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.load.html
    - https://pytorch.org/docs/stable/notes/serialization.html#weights-only
    """

    CODE = "TM301"
    SAFETY = "review"

    PRUNE = True  # its sites are `load` calls; what it learns (_Flows) is on `load...` lines too

    def visit_Module(self, node: cst.Module) -> None:
        self.flows = _Flows(self.imports)
        self.visit_where(node, self.flows, _LOAD_WORD)

    def _name_call(self, node: cst.Call, bound: dict) -> str:
        """`torch.load("model.pth")`, or `torch.load(...)` when the file argument is long."""
        source = self.code_for(bound["f"].arg.value) if "f" in bound else "..."
        if len(source) > 40 or "\n" in source:
            source = "..."
        return f"{self.code_for(node.func)}({source})"

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if self.qualified_name(original_node.func) not in LOADS:
            return updated_node
        bound = A.bind(updated_node, POSITIONAL)
        if "weights_only" in bound:
            return updated_node
        call = self._name_call(original_node, bound)
        if any(a.star == "**" for a in updated_node.args):
            self.finding(original_node, f"`{call}` with **kwargs: make sure they set `weights_only=`")
            return updated_node

        if id(original_node) in self.flows.feeds and "pickle_module" not in bound:
            reason = "the loaded object goes into load_state_dict"
            if id(original_node) in self.flows.partial:
                reason += "; other entries of this checkpoint must be tensors or plain Python values"
            new = append_args(updated_node, [keyword_arg("weights_only", cst.Name("True"))])
            return self.rewrite(original_node, updated_node, new, review=f"weights_only=True: {reason}")

        new = append_args(updated_node, [keyword_arg("weights_only", cst.Name("False"))])
        result = self.rewrite(
            original_node, updated_node, new, review="weights_only=False keeps the pre-2.6 full unpickling"
        )
        if result is new:
            self.finding(
                original_node,
                f"security: `{call}` unpickles arbitrary objects (weights_only=False); load only trusted"
                " files, or save a state_dict and load it with weights_only=True"
                + (" (pickle_module= rules out weights_only=True)" if "pickle_module" in bound else ""),
                suggestion="weights_only=True",
            )
        return result
