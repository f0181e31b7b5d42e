"""TM301: `torch.load` without `weights_only=` -> an explicit choice, with a security finding."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

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


class Flows(cst.CSTVisitor):
    """Which `torch.load(...)` calls feed `load_state_dict`, directly or through a name of their scope."""

    def __init__(self, imports: Imports) -> None:
        self.imports = imports
        self.feeds: set[int] = set()  # ids of torch.load calls whose result reaches load_state_dict
        self.partial: set[int] = set()  # ... reached through an entry of the loaded object
        self._scopes: list[tuple[dict[str, bool], list[tuple[int, str]]]] = [({}, [])]
        self.names: dict[int, tuple[str, cst.CSTNode | None]] = {}  # such a load: its name and scope
        self._nodes: list[cst.CSTNode | None] = [None]  # the scopes' nodes (None: the module)

    def _is_load(self, expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Call) and self.imports.resolve(expr.func) in LOADS

    def _push(self, node: cst.CSTNode) -> None:
        self._scopes.append(({}, []))
        self._nodes.append(node)

    def _pop(self) -> None:
        fed, loads = self._scopes.pop()
        scope = self._nodes.pop()
        for call, name in loads:
            if name in fed:
                self.feeds.add(call)
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


# -- what this module's torch.save calls write ----------------------------------------------------
#
# `weights_only=True` unpickles tensors, primitive types and their containers; anything else in
# the file (a NumPy scalar, an argparse.Namespace, a project's meter object) is an UnpicklingError.
# The whole file is unpickled, not only the entries the loader reads, so the decision rests on
# every value of the dict the matching `torch.save` writes.

SAVES = frozenset({"torch.save", "torch.serialization.save"})
# Calls whose result is a state dict, a tensor or a plain Python value.
_PLAIN_RESULTS = frozenset({"state_dict", "item", "tolist", "size", "numel", "dim"})  # whatever the receiver
_PLAIN_METHODS = frozenset({"cpu", "detach", "clone", "float", "double", "long", "half", "sum", "mean"})  # of a plain one
_PLAIN_BUILTINS = frozenset({"int", "float", "str", "bool", "len", "range", "enumerate"})  # whatever the arguments
_PLAIN_OF_PLAIN = frozenset({"max", "min", "sum", "abs", "round"})  # of plain arguments
_LITERALS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)


def _key(expr: cst.BaseExpression) -> str | None:
    value = A.literal(expr)
    return value if isinstance(value, str) else None


@dataclass
class _Scope:
    parent: _Scope | None
    params: tuple[str, ...] = ()
    method: bool = False
    assigned: dict[str, list[cst.BaseExpression]] = field(default_factory=dict)
    entries: dict[str, dict[str, cst.BaseExpression]] = field(default_factory=dict)  # name["k"] = v
    reads: dict[str, set[str]] = field(default_factory=dict)  # name["k"], name.get("k")


class _Checkpoints(cst.CSTVisitor):
    """Every `torch.save` of the module with the dicts it writes, and the keys read from each
    name a `torch.load` result is bound to."""

    def __init__(self, imports: Imports) -> None:
        self.imports = imports
        self.scope = _Scope(None)
        self.saves: list[tuple[cst.BaseExpression, _Scope]] = []
        self.calls: dict[str, list[tuple[cst.Call, _Scope]]] = {}  # f(...) / self.f(...) by name
        self.functions: dict[str, list[_Scope]] = {}
        self.loads: dict[int, tuple[_Scope, str | None, set[str]]] = {}  # load id -> scope, name, keys
        self._plain_names: dict[tuple[int, str], bool] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        params = tuple(p.name.value for p in (*node.params.posonly_params, *node.params.params))
        self.scope = _Scope(self.scope, params, method=bool(params) and params[0] in ("self", "cls"))
        self.functions.setdefault(node.name.value, []).append(self.scope)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.scope = self.scope.parent or self.scope

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.scope.assigned.setdefault(target.value, []).append(value)
            if isinstance(value, cst.Call) and self.imports.resolve(value.func) in LOADS:
                self.loads[id(value)] = (self.scope, target.value, set())
        elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) and len(target.slice) == 1:
            index = target.slice[0].slice
            key = _key(index.value) if isinstance(index, cst.Index) else None
            if key is not None:
                self.scope.entries.setdefault(target.value.value, {})[key] = value
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:  # unpacked: what each name holds is unknown
                self._bind(element.value, cst.Name("__unknown__"))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target, node.value)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target, node.iter)

    def _read(self, name: cst.BaseExpression, key: str | None) -> None:
        if isinstance(name, cst.Name) and key is not None:
            self.scope.reads.setdefault(name.value, set()).add(key)
        elif isinstance(name, cst.Call) and key is not None and self.imports.resolve(name.func) in LOADS:
            self.loads.setdefault(id(name), (self.scope, None, set()))[2].add(key)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
            self._read(node.value, _key(node.slice[0].slice.value))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("get", "pop") and node.args:
            self._read(func.value, _key(node.args[0].value))
        if self.imports.resolve(func) in SAVES:
            bound = A.bind(node, ("obj", "f"))
            if "obj" in bound:
                self.saves.append((bound["obj"].arg.value, self.scope))
        if isinstance(func, cst.Name):
            self.calls.setdefault(func.value, []).append((node, self.scope))
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"):
            self.calls.setdefault(func.attr.value, []).append((node, self.scope))

    # -- reading what a save writes --------------------------------------------------------------

    def _assignments(self, scope: _Scope, name: str) -> tuple[_Scope, list[cst.BaseExpression]] | None:
        while scope is not None:
            if name in scope.assigned or name in scope.params:
                return scope, scope.assigned.get(name, [])
            scope = scope.parent
        return None

    def written(self, expr: cst.BaseExpression, scope: _Scope, depth: int = 0) -> list[dict] | None:
        """The dicts (key -> value, with their scope) `expr` may hold when saved; None if unknown."""
        if depth > 4:
            return None
        if isinstance(expr, cst.Dict):
            entries = {}
            for element in expr.elements:
                key = _key(element.key) if isinstance(element, cst.DictElement) else None
                if key is None:
                    return None
                entries[key] = (element.value, scope)
            return [entries]
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "dict":
            if any(a.keyword is None for a in expr.args):
                return None
            return [{a.keyword.value: (a.value, scope) for a in expr.args}]
        if not isinstance(expr, cst.Name):
            return None
        found = self._assignments(scope, expr.value)
        if found is None:
            return None
        home, values = found
        dicts: list[dict] = []
        for value in values:
            more = self.written(value, home, depth + 1)
            if more is None:
                return None
            dicts += more
        if expr.value in home.params and not values:
            more = self._passed(home, expr.value, depth)
            if more is None:
                return None
            dicts += more
        added = {k: (v, home) for k, v in home.entries.get(expr.value, {}).items()}
        return [{**d, **added} for d in dicts] or None

    def _passed(self, function: _Scope, param: str, depth: int) -> list[dict] | None:
        """The dicts the calls of `function` in this module pass as its parameter `param`."""
        dicts: list[dict] = []
        for value, scope in self._arguments(function, param) or [(None, None)]:
            more = None if value is None else self.written(value, scope, depth + 1)
            if more is None:
                return None
            dicts += more
        return dicts

    def _arguments(self, function: _Scope, param: str) -> list[tuple[cst.BaseExpression, _Scope]] | None:
        """What each call of `function` in this module passes as `param`; None when a call hides it."""
        names = [n for n, scopes in self.functions.items() if any(s is function for s in scopes)]
        calls = [c for n in names for c in self.calls.get(n, [])]
        if not calls:
            return None
        index = function.params.index(param) - (1 if function.method else 0)
        passed = []
        for call, scope in calls:
            arg = A.keyword(call, param)
            if arg is None:
                positional = [a for a in call.args if a.keyword is None]
                if any(a.star for a in call.args) or not 0 <= index < len(positional):
                    return None
                arg = positional[index]
            passed.append((arg.value, scope))
        return passed

    def plain(self, expr: cst.BaseExpression, scope: _Scope, depth: int = 0) -> bool:
        """Whether `expr` is provably a state dict, a tensor, a number, a string or a container of those."""
        if depth > 6:
            return False
        if isinstance(expr, _LITERALS):
            return True
        if isinstance(expr, cst.Name):
            if expr.value in ("True", "False", "None"):
                return True
            found = self._assignments(scope, expr.value)
            if found is None:
                return False
            home, values = found
            memo = (id(home), expr.value)
            if memo not in self._plain_names:
                # Provisionally plain while its own updates are read (`total = total + x.item()`);
                # memoized, so that a name assigned in many places is read once.
                self._plain_names[memo] = True
                before = len(self._plain_names)
                verdict = self._plain_name(home, expr.value, values, depth)
                if not verdict:  # what was judged while assuming this name plain no longer holds
                    for stale in list(self._plain_names)[before:]:
                        del self._plain_names[stale]
                self._plain_names[memo] = verdict
            return self._plain_names[memo]
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
            return all(self.plain(e.value, scope, depth + 1) for e in expr.elements)
        if isinstance(expr, cst.Dict):
            return all(isinstance(e, cst.DictElement) and self.plain(e.value, scope, depth + 1) for e in expr.elements)
        if isinstance(expr, cst.UnaryOperation):
            return self.plain(expr.expression, scope, depth + 1)
        if isinstance(expr, cst.BinaryOperation):
            return self.plain(expr.left, scope, depth + 1) and self.plain(expr.right, scope, depth + 1)
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in _PLAIN_RESULTS:
                return True
            if isinstance(func, cst.Attribute) and func.attr.value in _PLAIN_METHODS:
                return self.plain(func.value, scope, depth + 1)
            if isinstance(func, cst.Name) and func.value in _PLAIN_BUILTINS:
                return True
            if isinstance(func, cst.Name) and func.value in _PLAIN_OF_PLAIN:
                return all(self.plain(a.value, scope, depth + 1) for a in expr.args)
            qualified = self.imports.resolve(func) or ""
            head, _, rest = qualified.partition(".")
            return head == "torch" and rest.islower() and "." not in rest  # torch.zeros(...), torch.tensor(...)
        return False

    def _plain_name(self, home: _Scope, name: str, values: list[cst.BaseExpression], depth: int) -> bool:
        if name in home.params:
            passed = self._arguments(home, name) if not values else None
            return passed is not None and all(self.plain(v, at, depth + 1) for v, at in passed)
        return bool(values) and all(self.plain(v, home, depth + 1) for v in values)

    def verdict(self, load: cst.Call) -> tuple[bool, str]:
        """(whether every matching save writes only weights-only values, the reason)."""
        scope, name, keys = self.loads.get(id(load), (None, None, set()))
        if scope is not None and name is not None:
            keys = keys | scope.reads.get(name, set())
        shown = ", ".join(repr(k) for k in sorted(keys)) or "none spelled as a literal"
        matching = []
        for obj, where in self.saves:
            for entries in self.written(obj, where) or []:
                if keys <= entries.keys():
                    matching.append(entries)
        if not matching:
            return False, f"no torch.save in this file writes a dict with the keys read ({shown})"
        for entries in matching:
            for key, (value, home) in entries.items():
                if not self.plain(value, home):
                    return False, f"the matching torch.save also writes {key!r}: {self.describe(value)}"
        return True, "every entry the matching torch.save writes is a state dict, tensor, number or string"

    @staticmethod
    def describe(value: cst.BaseExpression) -> str:
        code = cst.Module([]).code_for_node(value)
        return f"`{code}`" if len(code) <= 40 and "\n" not in code else "a value not provably a tensor or plain value"


# Every statement Flows learns from says `load` (`torch.load`, `th.load`, `load_state_dict`).
LOAD_WORD = Words(r"\bload(?:_state_dict)?\b")


class LoadWeightsOnly(MigrationCodemod):
    """Make `torch.load`'s `weights_only=` explicit: `True` for state dicts, else `False` and a finding.

    ## What it does
    Adds `weights_only=` to every `torch.load(...)` that does not pass it. When the loaded object
    itself flows into `load_state_dict` (as the argument, or through a name assigned from
    `torch.load` in the same function) it adds `weights_only=True`. When only an entry of it does
    (`model.load_state_dict(ckpt["model"])`), the rest of the checkpoint decides: the `torch.save`
    in the same file whose dict has every key the loader reads (a dict literal, `dict(...)`, a name
    assigned one, or a parameter filled by the file's calls) must hold only state dicts, tensors,
    numbers and strings for `True`. Otherwise, or when no such save is found, it adds
    `weights_only=False`, which keeps what the code did before PyTorch 2.6, and reports the call
    as a security finding that says why.

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
    Review. `weights_only=True` is right for plain state dicts, and for checkpoint dicts whose
    every saved entry is provably one; a NumPy scalar, an `argparse.Namespace` or a project's own
    object next to the state dict would fail to load with it, so those, and checkpoints saved
    elsewhere (whose contents this file cannot show), get `weights_only=False`.
    `weights_only=False` keeps the pre-2.6 behaviour and its risk: load only trusted files. A call
    with `pickle_module=` gets `False` (torch refuses `True` with it); calls with `**kwargs` are
    reported, not changed.

    ## References
    - https://pytorch.org/docs/stable/generated/torch.load.html
    - https://pytorch.org/docs/stable/notes/serialization.html#weights-only
    """

    CODE = "TM301"
    SAFETY = "review"

    PRUNE = True  # its sites are `load` calls; what it learns (Flows) is on `load...` lines too

    def visit_Module(self, node: cst.Module) -> None:
        self.flows = Flows(self.imports)
        self.visit_where(node, self.flows, LOAD_WORD)
        self._module = node
        self._checkpoints: _Checkpoints | None = None

    def _entries_read(self, fed: tuple[str, cst.CSTNode | None] | None) -> bool:
        """Whether the load's scope reads entries or attributes of the name it is bound to
        (`ckpt["model"]`, `ckpt.get`): a load that goes whole into load_state_dict on one path is
        then more than a state dict on another (a fairseq checkpoint: {"model": ..., "args":
        Namespace}). Read from the scope's text, so a comment naming it errs on the safe side."""
        if fed is None:
            return False
        name, scope = fed
        code = self._module.code_for_node(scope) if scope is not None else self._module.code
        return re.search(rf"\b{re.escape(name)}\s*(?:\[|\.(?!load_state_dict\b))", code) is not None

    @property
    def checkpoints(self) -> _Checkpoints:
        """The module's saves and key reads: a full walk, made only for a load that needs it."""
        if self._checkpoints is None:
            self._checkpoints = _Checkpoints(self.imports)
            self._module.visit(self._checkpoints)
        return self._checkpoints

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

        why_not = ""
        if id(original_node) in self.flows.feeds and "pickle_module" not in bound:
            reason = "the loaded object goes into load_state_dict"
            weights = True
            if id(original_node) in self.flows.partial or self._entries_read(self.flows.names.get(id(original_node))):
                # Only an entry is a state dict: the rest of the file must be weights-only too.
                weights, because = self.checkpoints.verdict(original_node)
                reason = f"an entry goes into load_state_dict and {because}"
                why_not = f"; {because}"
            if weights:
                new = append_args(updated_node, [keyword_arg("weights_only", cst.Name("True"))])
                return self.rewrite(original_node, updated_node, new, review=f"weights_only=True: {reason}")

        new = append_args(updated_node, [keyword_arg("weights_only", cst.Name("False"))])
        result = self.rewrite(
            original_node, updated_node, new, review="weights_only=False keeps the pre-2.6 full unpickling"
        )
        if result is new:
            self.finding(
                original_node,
                f"security: `{call}` unpickles arbitrary objects (weights_only=False{why_not}); load only"
                " trusted files, or save a state_dict and load it with weights_only=True"
                + (" (pickle_module= rules out weights_only=True)" if "pickle_module" in bound else ""),
                suggestion="weights_only=True",
            )
        return result
