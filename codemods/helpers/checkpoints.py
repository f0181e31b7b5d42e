"""What a module's `torch.save` calls write, for TM301: every save with the dicts it writes, the
keys read from each name a `torch.load` result is bound to, and whether each saved value is
provably a state dict, a tensor or a plain value (what `weights_only=True` can unpickle)."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from codemods.gates.load_weights_only import LOADS
from codemods.helpers import arguments
from codemods.helpers.names import Imports
from codemods.helpers.state_holders import StateHolders


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


# torchvision's MNIST family holds its images and labels as tensors (CIFAR's are NumPy arrays).
_MNIST_DATASETS = frozenset(f"torchvision.datasets.{name}" for name in ("MNIST", "FashionMNIST", "KMNIST", "EMNIST", "QMNIST"))
_MNIST_TENSORS = frozenset({"data", "targets", "train_data", "train_labels", "test_data", "test_labels"})
_LEGACY_TYPES = frozenset(
    f"{kind}Tensor" for kind in ("", "Float", "Double", "Half", "BFloat16", "Byte", "Char", "Short", "Int", "Long", "Bool")
)


# Factories that make a tensor on the default device from plain data (never given a tensor here).
_FACTORIES = frozenset({"tensor", "zeros", "ones", "empty", "full", "arange", "eye", "rand", "randn", "randint", "linspace"})


def _code(expr: cst.BaseExpression) -> str:
    """An expression's code without its layout: what two spellings of one path share."""
    return "".join(cst.Module([]).code_for_node(expr).split())


def _key(expr: cst.BaseExpression) -> str | None:
    value = arguments.literal(expr)
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
        self.classes: set[str] = set()  # the classes the module defines
        self.holders: StateHolders | None = None  # whose `state_dict()` may hold objects
        self.written_to: list[tuple[str, cst.BaseExpression, _Scope]] = []  # (the path's code, obj, scope) per save
        self._opened: dict[str, str] = {}  # `with open(path, "wb") as f`: f -> the path's code

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.add(node.name.value)

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

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            call, name = item.item, item.asname.name if item.asname is not None else None
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "open" and call.args:
                if isinstance(name, cst.Name):
                    self._opened[name.value] = _code(call.args[0].value)

    def saved_to(self, path: cst.BaseExpression) -> tuple[bool, str]:
        """For a load of `path`: whether this module's saves to that path (the same expression, or
        an `open()` of it) write only tensors and plain values (a tuple of tensors: MNIST-M's
        processed files), and why; (False, "") when no save of this module writes to it."""
        if isinstance(path, cst.Name):
            return False, ""  # a local name may mean another path in each function
        code = _code(path)
        found = [(obj, scope) for at, obj, scope in self.written_to if at == code]
        if not found:
            return False, ""
        for obj, scope in found:
            if not self.plain(obj, scope):
                return False, f"this file's torch.save of that path writes {self.describe(obj)}, not provably tensors and plain values"
        return True, "this file's torch.save of that path writes only tensors and plain values"

    def saved_on_cpu(self, path: cst.BaseExpression) -> bool:
        """Whether this module saves to `path` (as `saved_to` finds its saves) only tensors made on
        the CPU and plain values: a load of it needs no `map_location` on any machine."""
        if isinstance(path, cst.Name):
            return False
        found = [(obj, scope) for at, obj, scope in self.written_to if at == _code(path)]
        return bool(found) and all(self.cpu_made(obj, scope) for obj, scope in found)

    def cpu_made(self, expr: cst.BaseExpression, scope: _Scope, depth: int = 0) -> bool:
        """Whether `expr` is provably plain values and tensors made on the CPU: a legacy CPU type's
        constructor (`torch.ByteTensor(array)`), `torch.from_numpy`, a factory without `device=`
        of plain data, the MNIST family's tensors, containers and names of those."""
        if depth > 6:
            return False
        if isinstance(expr, _LITERALS) or (isinstance(expr, cst.Name) and expr.value in ("True", "False", "None")):
            return True
        if isinstance(expr, cst.Name):
            found = self._assignments(scope, expr.value)
            if found is None or not found[1] or expr.value in found[0].params:
                return False
            return all(self.cpu_made(v, found[0], depth + 1) for v in found[1])
        if isinstance(expr, (cst.List, cst.Tuple)):
            return all(self.cpu_made(e.value, scope, depth + 1) for e in expr.elements)
        if isinstance(expr, cst.Attribute):
            return self.plain(expr, scope, depth)  # the MNIST family's tensors (CPU tensors)
        if not isinstance(expr, cst.Call) or arguments.has_star_args(expr) or arguments.keyword(expr, "device") is not None:
            return False
        qualified = self.imports.resolve(expr.func) or ""
        head, _, rest = qualified.partition(".")
        if head != "torch":
            return False
        if rest in _LEGACY_TYPES or rest == "from_numpy":
            return True  # a CPU type, or NumPy's memory
        return rest in _FACTORIES and all(self.cpu_made(a.value, scope, depth + 1) for a in expr.args)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
            self._read(node.value, _key(node.slice[0].slice.value))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("get", "pop") and node.args:
            self._read(func.value, _key(node.args[0].value))
        if self.imports.resolve(func) in SAVES:
            bound = arguments.bind(node, ("obj", "f"))
            if "obj" in bound:
                self.saves.append((bound["obj"].arg.value, self.scope))
                path = _code(bound["f"].arg.value) if "f" in bound else None
                path = self._opened.get(path, path) if path is not None else None
                if path is not None:
                    self.written_to.append((path, bound["obj"].arg.value, self.scope))
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
            arg = arguments.keyword(call, param)
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
        if isinstance(expr, cst.Attribute) and expr.attr.value in _MNIST_TENSORS and isinstance(expr.value, cst.Call):
            # `datasets.MNIST(root, train=True).train_labels`: torchvision keeps these as tensors
            return (self.imports.resolve(expr.value.func) or "") in _MNIST_DATASETS
        if isinstance(expr, cst.BinaryOperation):
            return self.plain(expr.left, scope, depth + 1) and self.plain(expr.right, scope, depth + 1)
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in _PLAIN_RESULTS:
                # `state_dict()` of apex's FP16_Optimizer holds its loss scaler object
                return func.attr.value != "state_dict" or self.holders is None or not self.holders.holds_objects(func.value)
            if isinstance(func, cst.Attribute) and func.attr.value in _PLAIN_METHODS:
                return self.plain(func.value, scope, depth + 1)
            if isinstance(func, cst.Name) and func.value in _PLAIN_BUILTINS:
                return True
            if isinstance(func, cst.Name) and func.value in _PLAIN_OF_PLAIN:
                return all(self.plain(a.value, scope, depth + 1) for a in expr.args)
            qualified = self.imports.resolve(func) or ""
            head, _, rest = qualified.partition(".")
            if head == "torch" and rest in _LEGACY_TYPES:
                return True  # torch.ByteTensor(...): a tensor
            return head == "torch" and rest.islower() and "." not in rest  # torch.zeros(...), torch.tensor(...)
        return False

    def _plain_name(self, home: _Scope, name: str, values: list[cst.BaseExpression], depth: int) -> bool:
        if name in home.params:
            passed = self._arguments(home, name) if not values else None
            return passed is not None and all(self.plain(v, at, depth + 1) for v, at in passed)
        return bool(values) and all(self.plain(v, home, depth + 1) for v in values)

    def verdict(self, load: cst.Call) -> tuple[bool, str, tuple[str, ...]]:
        """(whether every matching save writes only weights-only values, the reason, the classes
        of the other values where the file shows them: what `add_safe_globals` would need)."""
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
            return False, f"no torch.save in this file writes a dict with the keys read ({shown})", ()
        refused = [(key, value, home) for entries in matching for key, (value, home) in entries.items() if not self.plain(value, home)]
        if refused:
            key, value, _ = refused[0]
            found = [self.class_of(value, home) for _, value, home in refused]
            classes = tuple(dict.fromkeys(c for c in found if c is not None)) if None not in found else ()
            return False, f"the matching torch.save also writes {key!r}: {self.describe(value)}", classes
        return True, "every entry the matching torch.save writes is a state dict, tensor, number or string", ()

    def class_of(self, expr: cst.BaseExpression, scope: _Scope, depth: int = 0) -> str | None:
        """The class of an instance the file makes (`Meter()`, `argparse.Namespace(...)`, or a name
        assigned one), as the file spells it; None where the file does not show it."""
        if depth > 4:
            return None
        if isinstance(expr, cst.Name):
            found = self._assignments(scope, expr.value)
            if found is None or len(found[1]) != 1:
                return None
            return self.class_of(found[1][0], found[0], depth + 1)
        if not isinstance(expr, cst.Call):
            return None
        func = expr.func
        if isinstance(func, cst.Name) and func.value in self.classes:
            return func.value
        qualified = self.imports.resolve(func) or ""
        leaf = qualified.rpartition(".")[2]
        if "." in qualified and leaf[:1].isupper() and not qualified.startswith(("torch.", "numpy.")):
            return cst.Module([]).code_for_node(func)  # argparse.Namespace: a class, by its spelling
        return None

    @staticmethod
    def describe(value: cst.BaseExpression) -> str:
        code = cst.Module([]).code_for_node(value)
        return f"`{code}`" if len(code) <= 40 and "\n" not in code else "a value not provably a tensor or plain value"
