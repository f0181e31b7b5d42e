"""TM101: `.cuda()` -> `.to(device)`; legacy `torch.cuda.FloatTensor` & co. -> dtype/device forms."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from codemods.gates.cuda_to_device import legacy_tensor_types
from codemods.helpers import args as A
from codemods.helpers.device import DeviceCodemod
from codemods.helpers.names import attribute_chain, dotted, walk_statements


def cuda_tensor_type(qualified: str | None) -> str | None:
    """`torch.cuda.FloatTensor` -> `float32`; None for anything else."""
    if qualified is None or not qualified.startswith("torch.cuda."):
        return None
    return legacy_tensor_types().get(qualified[len("torch.cuda.") :])


def type_string_dtype(expr: cst.BaseExpression) -> str | None:
    """`"torch.cuda.FloatTensor"` -> `float32`."""
    if isinstance(expr, cst.SimpleString):
        return cuda_tensor_type(str(expr.evaluated_value))
    return None


# Calls that return the module they are called on (so `Net().cuda()` is still a module).
_MODULE_CHAIN = {"cuda", "to", "cpu", "eval", "train", "float", "double", "half", "requires_grad_"}
_PARAMETER = {"torch.nn.Parameter", "torch.nn.parameter.Parameter"}
# Capitalised `torch.nn` names that are not modules (their `.cuda()` returns a new object).
_NOT_MODULES = ("torch.nn.utils.", "torch.nn.parameter.", "torch.nn.functional.", "torch.nn.Buffer", "torch.nn.Parameter")
# The keywords `Tensor.cuda(device=None, non_blocking=False, memory_format=...)` and
# `Module.cuda(device=None)` take; anything else (`devices=`, the 0.x `device_id=`) is not torch's.
_CUDA_KEYWORDS = frozenset({"device", "non_blocking", "memory_format"})
# torch namespaces whose functions return tensors (`torch.load`, `torch.device`, ... excepted below).
_TENSOR_NAMESPACES = ("torch.nn.functional.", "torch.linalg.", "torch.fft.", "torch.special.")
_NOT_TENSORS = frozenset({"device", "load", "jit", "cuda", "backends", "utils", "optim", "distributed", "hub", "set_grad_enabled", "no_grad", "Size", "Generator", "get_default_dtype", "is_tensor", "manual_seed"})
# Tensor methods that return a tensor.
_TENSOR_METHODS = frozenset(
    {"to", "cpu", "cuda", "float", "double", "half", "long", "int", "bool", "byte", "view", "reshape", "contiguous",
     "clone", "detach", "t", "permute", "transpose", "unsqueeze", "squeeze", "expand", "repeat", "type_as", "view_as",
     "requires_grad_", "pin_memory", "flatten", "sum", "mean", "abs", "exp", "log", "sqrt", "zero_", "fill_"}
)


@dataclass
class ClassInfo:
    bases: list[str]
    defines_cuda: bool = False
    attributes: dict[str, list[cst.BaseExpression | None]] = field(default_factory=dict)


class _ClassCollector(cst.CSTVisitor):
    """Classes of this module: their bases, whether they define `cuda()`, and `self.x = ...` values."""

    def __init__(self) -> None:
        self.classes: dict[str, ClassInfo] = {}
        self.stack: list[ClassInfo] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        bases = [d for d in (dotted(arg.value) for arg in node.bases if arg.keyword is None) if d]
        info = ClassInfo(bases)
        self.classes[node.name.value] = info
        self.stack.append(info)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.stack.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self.stack and node.name.value == "cuda":
            self.stack[-1].defines_cuda = True

    def _attribute(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if (
            self.stack
            and isinstance(target, cst.Attribute)
            and isinstance(target.value, cst.Name)
            and target.value.value == "self"
        ):
            self.stack[-1].attributes.setdefault(target.attr.value, []).append(value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._attribute(target.target, node.value if len(node.targets) == 1 else None)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._attribute(node.target, node.value)


class CudaToDevice(DeviceCodemod):
    """Replace `.cuda()` with `.to(device)` and the `torch.cuda.*Tensor` types with dtype/device forms.

    ## What it does
    - `x.cuda()` → `x.to(device)`; `x.cuda(non_blocking=True)` → `x.to(device, non_blocking=True)`.
    - A statement `x.cuda()` whose result is thrown away → `x = x.to(device)` (name, attribute or
      subscript). A receiver known to be an `nn.Module` keeps the statement form `model.to(device)`.
    - `torch.cuda.FloatTensor(2, 3)` → `torch.empty(2, 3, dtype=torch.float32, device=device)`;
      `torch.cuda.LongTensor([1, 2])` → `torch.tensor([1, 2], dtype=torch.int64, device=device)`.
    - `x.type(torch.cuda.FloatTensor)` → `x.to(device=device, dtype=torch.float32)`.
    - `torch.set_default_tensor_type("torch.cuda.FloatTensor")` →
      `torch.set_default_device(device)` and `torch.set_default_dtype(torch.float32)`.
    - `device` is the one in scope (a parameter, a local or a module global bound to
      `torch.device(...)`); otherwise it is defined once after the imports as
      `device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`, after the last
      import of the module's import block. When `device` means something else anywhere in the
      module, the definition takes a fresh name (`torch_device`). In a module that imports torch
      only inside its functions (or not at all), a site in a function gets the definition in that
      function, after its own imports, so torch stays a lazy dependency.

    ## Why is this bad?
    `.cuda()` and the `torch.cuda.*Tensor` types crash on a machine without CUDA, so the code (and
    its tests) can only run on a GPU. A discarded `x.cuda()` is a silent bug on top: tensors are not
    moved in place, so `x` stays on the CPU (only modules move in place).

    ## Example
    ```python
    model.cuda()
    x.cuda()
    y = target.cuda(non_blocking=True)
    buf = torch.cuda.FloatTensor(4, 4)
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model.to(device)
    x = x.to(device)
    y = target.to(device, non_blocking=True)
    buf = torch.empty(4, 4, dtype=torch.float32, device=device)
    ```

    ## Fix safety
    Safe: on a machine with CUDA, `device` is the current CUDA device, exactly where `.cuda()` put
    things; without CUDA the code now runs on the CPU instead of crashing. Not rewritten: an explicit
    index (`.cuda(1)`, `.cuda(args.gpu)`: see TM904), a receiver whose class defines its own
    `cuda()` (a finding when it is an `nn.Module`: `.to()` would bypass the override), a legacy type
    used as a value (`Tensor = torch.cuda.FloatTensor`) or with an argument that may be either data
    or a size — each a finding. A `.cuda(...)` whose arguments torch's `cuda()` does not take
    (`devices=`, the 0.x `device_id=`) is a finding, not a rewrite. When any class of the repository
    defines its own `cuda()` (a trainer's `cuda(self, devices=None)`), `x.cuda()` may be that one:
    only receivers provably a tensor (a torch function's result, a name bound only to one) or an
    `nn.Module` are rewritten, the rest become findings, and instances of such a class stay as they are. A discarded `x.cuda()` that cannot be rebound (a global inside a
    function, a parameter of an `nn.Module`) keeps the statement form and yields a finding.

    ## References
    - https://pytorch.org/docs/stable/notes/cuda.html#device-agnostic-code
    - https://pytorch.org/docs/stable/generated/torch.Tensor.to.html
    """

    CODE = "TM101"
    PRUNE = True  # its sites are on `cuda` lines; its scope questions read only the statements that can answer them
    SAFETY = "safe"

    def visit_Module(self, node: cst.Module) -> bool:
        collector = _ClassCollector()
        walk_statements(node.body, collector)  # classes, defs and assignments are statements
        self.classes = collector.classes
        # Some class with its own cuda(): importable ones anywhere in the repo (the first pass), or
        # any class of this file (one local to a function too).
        self._cuda_look_alikes = bool(self.file.facts.cuda_classes) or any(c.defines_cuda for c in self.classes.values())
        self._bare: set[int] = set()  # ids of calls that are a whole expression statement
        self._rebind: dict[int, cst.BaseExpression] = {}  # accepted bare calls -> assignment target
        self._handled: set[int] = set()  # legacy-type references in a position rewritten elsewhere
        self._class_stack: list[str] = []
        return super().visit_Module(node)

    # -- what is a module? --------------------------------------------------------------------------

    def _is_module_class(self, name: str, seen: frozenset[str] = frozenset()) -> bool:
        short = name.rsplit(".", 1)[-1]
        if name in seen:
            return False
        qualified = self.imports.resolve(attribute_chain(name))
        if qualified and qualified.startswith("torch.nn.") and not qualified.startswith(_NOT_MODULES):
            return short[:1].isupper()
        if short in self.file.facts.module_classes:
            return True
        info = self.classes.get(short)
        return bool(info) and any(self._is_module_class(b, seen | {name}) for b in info.bases)

    def _is_module_value(self, expr: cst.BaseExpression | None) -> bool:
        if not isinstance(expr, cst.Call):
            return False
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in _MODULE_CHAIN:
            return self._is_module_value(func.value)
        name = dotted(func)
        if name is None:
            return False
        qualified = self.qualified_name(func)
        if qualified and qualified.startswith("torchvision.models."):
            return True
        return self._is_module_class(name)

    def _binding_values(self, name: str) -> list[cst.BaseExpression | None] | None:
        """The values `name` is bound to as seen from the node being visited (None: unbound)."""
        for s in self.scope_for(name).visible_chain():
            if name in s.params:
                return [None]
            if name in s.bindings:
                return s.bindings[name]
        return None

    def _enclosing_class(self) -> ClassInfo | None:
        return self.classes.get(self._class_stack[-1]) if self._class_stack else None

    def _self_is_module(self) -> bool:
        return bool(self._class_stack) and self._is_module_class(self._class_stack[-1])

    def _receiver_is_module(self, receiver: cst.BaseExpression) -> bool:
        if isinstance(receiver, cst.Name):
            if receiver.value == "self":
                return self._self_is_module()
            values = self._binding_values(receiver.value)
            return bool(values) and all(self._is_module_value(v) for v in values)
        if isinstance(receiver, cst.Attribute):
            values = self._attribute_values(receiver)
            return bool(values) and all(self._is_module_value(v) for v in values)
        return self._is_module_value(receiver)

    def _attribute_values(self, receiver: cst.Attribute) -> list[cst.BaseExpression | None]:
        """Values this module's code assigns to `owner.attr`, when owner's class is known here."""
        owner = receiver.value
        info = None
        if isinstance(owner, cst.Name) and owner.value == "self":
            info = self._enclosing_class()
        elif isinstance(owner, cst.Name):
            values = self._binding_values(owner.value) or []
            classes = {dotted(v.func) for v in values if isinstance(v, cst.Call)}
            if len(classes) == 1 and len(values) == 1:
                info = self.classes.get(classes.pop() or "")
        return list(info.attributes.get(receiver.attr.value, [])) if info else []

    def _own_cuda_class(self, receiver: cst.BaseExpression) -> bool | None:
        """When `receiver` is an instance of a class (of this module, or of the repository) that
        defines `cuda()`: whether that class is an nn.Module. None when it is not such an instance."""
        if isinstance(receiver, cst.Name) and receiver.value == "self":
            if self._class_stack and self._has_own_cuda(self._class_stack[-1]):
                return self._self_is_module()
            return None
        values = self._binding_values(receiver.value) if isinstance(receiver, cst.Name) else None
        for value in values or [receiver]:
            name = dotted(value.func) if isinstance(value, cst.Call) else None
            if name is not None and not (self.qualified_name(value.func) or "").startswith("torch.") and self._has_own_cuda(name):
                return self._is_module_class(name)
        return None

    def _has_own_cuda(self, name: str, seen: frozenset[str] = frozenset()) -> bool:
        """Whether class `name` (or a base of it) defines `cuda()`: this module's classes, then the repo's."""
        short = name.rsplit(".", 1)[-1]
        info = self.classes.get(short)
        if short in self.file.facts.cuda_classes:
            return True  # the first pass also sees `cuda = ...` in a class body, and other files' classes
        if info is None or name in seen:
            return False
        return info.defines_cuda or any(self._has_own_cuda(b, seen | {name}) for b in info.bases)

    def _unfit_arguments(self, call: cst.Call) -> str | None:
        """What in a `.cuda(...)` call torch's `cuda()` would not accept, if anything."""
        positional = [a for a in call.args if a.keyword is None]
        odd = [a.keyword.value for a in call.args if a.keyword is not None and a.keyword.value not in _CUDA_KEYWORDS]
        if odd:
            return ", ".join(f"`{k}=`" for k in odd)
        if len(positional) > 2:
            return f"{len(positional)} positional arguments"
        return None

    def _provably_torch(self, receiver: cst.BaseExpression) -> bool:
        """A receiver known to be a tensor or an nn.Module, from what this module shows. Of a name's
        values, `None` (`.cuda()` on it fails before and after) and its own moves (`x = x.cuda()`,
        which keep what `x` is) prove nothing either way."""
        if isinstance(receiver, cst.Name) and receiver.value != "self":
            values = self._binding_values(receiver.value) or []
            kept = [v for v in values if not _is_none(v) and not self._moves(v, receiver.value)]
            return bool(kept) and all(self._is_tensor_value(v) or self._is_module_value(v) for v in kept)
        return self._receiver_is_module(receiver) or self._receiver_is_tensor(receiver)

    def _moves(self, value: cst.BaseExpression | None, name: str) -> bool:
        """`name.cuda()`, `name.float().to(d)`, ...: a value made from `name` by calls that keep its kind."""
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            if value.func.attr.value not in _TENSOR_METHODS | _MODULE_CHAIN:
                return False
            value = value.func.value
        return isinstance(value, cst.Name) and value.value == name

    def _receiver_is_tensor(self, receiver: cst.BaseExpression) -> bool:
        if isinstance(receiver, cst.Name):
            values = self._binding_values(receiver.value)
            return bool(values) and all(self._is_tensor_value(v) for v in values)
        if isinstance(receiver, cst.Attribute):
            values = self._attribute_values(receiver)
            return bool(values) and all(self._is_tensor_value(v) or self._is_module_value(v) for v in values)
        return self._is_tensor_value(receiver)

    def _is_tensor_value(self, expr: cst.BaseExpression | None, depth: int = 0) -> bool:
        """A torch function's result (`torch.zeros(...)`, `F.relu(...)`, `nn.Parameter(...)`), a tensor
        method's result on one, or an index into one; a name bound only to such values, one level deep."""
        if isinstance(expr, cst.Subscript):
            return self._is_tensor_value(expr.value, depth)
        if isinstance(expr, cst.Name) and depth < 2:
            values = self._binding_values(expr.value)
            return bool(values) and all(self._is_tensor_value(v, depth + 1) for v in values)
        if not isinstance(expr, cst.Call):
            return False
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in _TENSOR_METHODS and self._is_tensor_value(func.value, depth):
            return True
        qualified = self.qualified_name(func)
        if qualified is None or not qualified.startswith("torch."):
            return False
        if qualified in _PARAMETER or qualified.startswith(_TENSOR_NAMESPACES):
            return True
        rest = qualified[len("torch.") :]
        return "." not in rest and rest not in _NOT_TENSORS and (rest[:1].islower() or rest.endswith("Tensor"))

    # -- traversal bookkeeping ----------------------------------------------------------------------

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._class_stack.append(node.name.value)

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        self._class_stack.pop()
        return updated_node

    def visit_Expr(self, node: cst.Expr) -> None:
        if isinstance(node.value, cst.Call):
            self._bare.add(id(node.value))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._handled.add(id(node.attr))  # `x.FloatTensor` is not the imported name

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._handled.add(id(node.keyword))

    def visit_Call(self, node: cst.Call) -> None:
        # Legacy types in a position leave_Call handles are not "used as a value".
        if cuda_tensor_type(self.qualified_name(node.func)):
            self._handled.add(id(node.func))
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "type" or self._is_set_default(node):
            for arg in node.args:
                self._handled.add(id(arg.value))

    def _is_set_default(self, node: cst.Call) -> bool:
        return self.qualified_name(node.func) == "torch.set_default_tensor_type"

    # -- rewrites -----------------------------------------------------------------------------------

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        func = original_node.func
        dtype = cuda_tensor_type(self.qualified_name(func))
        if dtype is not None:
            return self._constructor(original_node, updated_node, dtype)
        if isinstance(func, cst.Attribute) and func.attr.value == "cuda":
            return self._cuda_call(original_node, updated_node)
        if isinstance(func, cst.Attribute) and func.attr.value == "type":
            return self._type_call(original_node, updated_node)
        if self._is_set_default(original_node) and id(original_node) not in self._bare:
            if self._set_default_dtype(original_node):
                self.finding(
                    original_node,
                    "set_default_tensor_type() with a CUDA type inside an expression",
                    suggestion="torch.set_default_device(device); torch.set_default_dtype(...)",
                )
        return updated_node

    def _cuda_call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func = original.func
        assert isinstance(func, cst.Attribute)
        receiver = func.value
        if self.qualified_name(receiver) == "torch":
            return updated  # `torch.cuda` is a module, not a call
        if isinstance(receiver, cst.Call) and dotted(receiver.func) == "super":
            return updated  # the implementation of an overriding `cuda()`
        if A.has_star_args(original):
            return updated
        own = self._own_cuda_class(receiver)
        if own is not None:
            if own:
                self.finding(
                    original,
                    "this class overrides cuda(); `.to(device)` would bypass the override",
                    suggestion="move what the override does into `_apply`/`to()`, then use `.to(device)`",
                )
            return updated  # a look-alike: the user's own cuda()
        unfit = self._unfit_arguments(original)
        if unfit:
            self.finding(
                original,
                f"`.cuda()` with {unfit}, which neither Tensor.cuda nor Module.cuda takes: not torch's cuda(), or 0.x code",
                suggestion="if this is a tensor or module: `.to(device)` (an explicit GPU index: `.to(f\"cuda:{i}\")`)",
            )
            return updated
        bound = A.bind(original, ["device", "non_blocking"])
        device_arg = bound.get("device")
        if device_arg is not None and A.literal(device_arg.arg.value) is not None:
            return updated  # explicit index: TM904 reports it
        if self._cuda_look_alikes and not self._provably_torch(receiver):
            # Some class of this repository has its own cuda(): only a receiver known to be a
            # tensor or a module is torch's; `.to(device)` on the user's object would break it.
            self.finding(
                original,
                "a class in this repository defines its own cuda(), and this receiver is not provably a tensor or an nn.Module",
                suggestion=f"if it is one: {self.code_for(receiver)}.to(device)",
            )
            return updated

        blocking = bound.get("non_blocking")
        kept = [
            A.as_keyword(a, "non_blocking") if blocking is not None and i == blocking.index and blocking.positional else a
            for i, a in enumerate(updated.args)
            if device_arg is None or i != device_arg.index
        ]
        bare = id(original) in self._bare
        target = self._rebind_target(receiver) if bare and not self._receiver_is_module(receiver) else None

        def build(device: cst.Name) -> cst.Call:
            args = [cst.Arg(device, comma=_COMMA), *kept] if kept else [cst.Arg(device)]
            return updated.with_changes(func=updated.func.with_changes(attr=cst.Name("to")), args=args)

        result = self.with_device(original, updated, build)
        if result is not updated and target is not None:
            self._rebind[id(original)] = target
        return result

    def _rebind_target(self, receiver: cst.BaseExpression) -> cst.BaseExpression | None:
        """Where a discarded `receiver.cuda()` result must go; None (with a finding) if nowhere."""
        why = None
        if isinstance(receiver, cst.Name):
            if receiver.value == "self":
                return None
            scope = self.scope_for(receiver.value)
            local = scope.kind == "module" or scope.binds(receiver.value) or receiver.value in scope.globals
            if local:
                return receiver
            why = f"`{receiver.value}` is not a local here; rebinding it would make it one"
        elif not _pure(receiver):
            if not isinstance(receiver, (cst.Attribute, cst.Subscript)):
                return None  # `make().cuda()`: nothing to rebind
            why = "assigning to it would evaluate its parts twice"
        elif isinstance(receiver, cst.Attribute):
            # An attribute of a module may be a Parameter: assigning it a plain tensor (what `.to()`
            # returns on a GPU) raises TypeError. Rebind only attributes known to hold something else.
            values = self._attribute_values(receiver)
            owner_is_module = self._receiver_is_module(receiver.value)
            if owner_is_module and (not values or any(self._is_parameter(v) for v in values)):
                why = f"`{self.code_for(receiver)}` may be an nn.Parameter, which cannot be assigned a plain tensor"
            elif not owner_is_module and receiver.attr.value.endswith(("weight", "bias")) and not values:
                why = f"`{self.code_for(receiver)}` may be an nn.Parameter, which cannot be assigned a plain tensor"
            else:
                return receiver
        else:
            return receiver
        self.finding(
            receiver,
            f"the result of `.cuda()` is thrown away: a tensor does not move in place ({why})",
            suggestion=f"{self.code_for(receiver)} = {self.code_for(receiver)}.to(device)",
        )
        return None

    def _is_parameter(self, value: cst.BaseExpression | None) -> bool:
        return isinstance(value, cst.Call) and self.qualified_name(value.func) in _PARAMETER

    def leave_Expr(self, original_node: cst.Expr, updated_node: cst.Expr) -> cst.BaseSmallStatement:
        target = self._rebind.get(id(original_node.value))
        if target is None:
            return updated_node
        return cst.Assign(targets=[cst.AssignTarget(target)], value=updated_node.value, semicolon=updated_node.semicolon)

    def _constructor(self, original: cst.Call, updated: cst.Call, dtype: str) -> cst.BaseExpression:
        args = list(updated.args)
        if any(a.star or a.keyword is not None for a in args):
            self.finding(original, "legacy CUDA tensor type with keyword or star arguments", suggestion=self._suggest(dtype))
            return updated
        if not args:
            factory, args = "torch.empty", [cst.Arg(cst.Integer("0"))]
        elif len(args) > 1 or isinstance(args[0].value, cst.Integer) or self._is_size(args[0].value):
            factory = "torch.empty"
        elif self._is_data(args[0].value):
            factory = "torch.tensor"
        else:
            self.finding(
                original,
                "legacy CUDA tensor type called with a value that may be data or a size",
                suggestion=self._suggest(dtype),
            )
            return updated
        name = self.qualified_name(original.func) or ""
        if isinstance(original.func, cst.Name):
            obj = name.rsplit(".", 1)[-1]
            local = original.func.value
            self.remove_unused_import("torch.cuda", obj, None if local == obj else local)

        def build(device: cst.Name) -> cst.Call:
            last = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            return updated.with_changes(
                func=self.spell(factory),
                args=[
                    *args[:-1],
                    last,
                    cst.Arg(self.spell(f"torch.{dtype}"), keyword=cst.Name("dtype"), equal=_EQ, comma=_COMMA),
                    cst.Arg(device, keyword=cst.Name("device"), equal=_EQ),
                ],
            )

        return self.with_device(original, updated, build)

    def _is_data(self, expr: cst.BaseExpression) -> bool:
        """A list/tuple display, `list(...)`, or a local name bound only to those."""
        if isinstance(expr, (cst.List, cst.Tuple, cst.ListComp)):
            return True
        if isinstance(expr, cst.Call) and dotted(expr.func) == "list" and "list" not in self.scopes_for("list").module.bindings:
            return True
        if isinstance(expr, cst.Name):
            values = self._binding_values(expr.value)
            return bool(values) and all(v is not None and not isinstance(v, cst.Name) and self._is_data(v) for v in values)
        return False

    @staticmethod
    def _suggest(dtype: str) -> str:
        return f"torch.tensor(data, dtype=torch.{dtype}, device=device) or torch.empty(size, dtype=torch.{dtype}, device=device)"

    def _is_size(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Attribute) and expr.attr.value == "shape":
            return True
        if isinstance(expr, cst.Call):
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "size" and not expr.args:
                return True
            return self.qualified_name(expr.func) == "torch.Size"
        return False

    def _type_call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        bound = A.bind(original, ["dtype", "non_blocking"])
        if "dtype" not in bound or A.has_star_args(original):
            return updated
        value = bound["dtype"].arg.value
        dtype = cuda_tensor_type(self.qualified_name(value)) or type_string_dtype(value)
        if dtype is None:
            return updated
        rest = [
            A.as_keyword(a, "non_blocking") if i == bound.get("non_blocking", bound["dtype"]).index and a.keyword is None else a
            for i, a in enumerate(updated.args)
            if i != bound["dtype"].index
        ]

        def build(device: cst.Name) -> cst.Call:
            args = [
                cst.Arg(device, keyword=cst.Name("device"), equal=_EQ, comma=_COMMA),
                cst.Arg(self.spell(f"torch.{dtype}"), keyword=cst.Name("dtype"), equal=_EQ),
            ]
            for arg in rest:
                args[-1] = args[-1].with_changes(comma=_COMMA)
                args.append(arg.with_changes(comma=cst.MaybeSentinel.DEFAULT))
            return updated.with_changes(func=updated.func.with_changes(attr=cst.Name("to")), args=args)

        return self.with_device(original, updated, build)

    def _set_default_dtype(self, call: cst.Call) -> str | None:
        if len(call.args) != 1 or call.args[0].star:
            return None
        value = call.args[0].value
        return cuda_tensor_type(self.qualified_name(value)) or type_string_dtype(value)

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.BaseStatement | cst.FlattenSentinel:
        if len(original_node.body) != 1 or not isinstance(original_node.body[0], cst.Expr):
            return updated_node
        call = original_node.body[0].value
        if not isinstance(call, cst.Call) or not self._is_set_default(call):
            return updated_node
        dtype = self._set_default_dtype(call)
        if dtype is None:
            return updated_node

        def build(device: cst.Name) -> cst.FlattenSentinel:
            set_device = cst.Call(self.spell("torch.set_default_device"), [cst.Arg(device)])
            set_dtype = cst.Call(self.spell("torch.set_default_dtype"), [cst.Arg(self.spell(f"torch.{dtype}"))])
            first = updated_node.with_changes(body=[cst.Expr(set_device)])
            second = cst.SimpleStatementLine([cst.Expr(set_dtype)], trailing_whitespace=updated_node.trailing_whitespace)
            first = first.with_changes(trailing_whitespace=cst.TrailingWhitespace())
            return cst.FlattenSentinel([first, second])

        result = self.with_device(original_node, updated_node, build)
        if result is not updated_node and id(original_node) in self._top_ids and self.top_index is not None:
            self.extra_top_statements[self.top_index] = self.extra_top_statements.get(self.top_index, 0) + 1
        return result

    # -- legacy types used as values ----------------------------------------------------------------

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        self._legacy_value(original_node)
        return updated_node

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        self._legacy_value(original_node)
        return updated_node

    def _legacy_value(self, node: cst.BaseExpression) -> None:
        if id(node) in self._handled:
            return
        dtype = cuda_tensor_type(self.qualified_name(node))
        if dtype is None:
            return
        self._handled.add(id(node))
        self.finding(
            node,
            f"legacy CUDA tensor type `{self.code_for(node)}` used as a value",
            suggestion=f"use dtype=torch.{dtype} and device=device (for a type test: `t.is_cuda and t.dtype == torch.{dtype}`)",
        )


def _is_none(value: cst.BaseExpression | None) -> bool:
    return isinstance(value, cst.Name) and value.value == "None"


def _pure(expr: cst.BaseExpression) -> bool:
    """A name, attribute chain or subscript of simple indices: safe to evaluate twice."""
    if isinstance(expr, cst.Name):
        return True
    if isinstance(expr, cst.Attribute):
        return _pure(expr.value)
    if isinstance(expr, cst.Subscript):
        return _pure(expr.value) and all(
            isinstance(e.slice, cst.Index)
            and (isinstance(e.slice.value, (cst.Integer, cst.SimpleString)) or _pure(e.slice.value))
            for e in expr.slice
        )
    return False


_EQ = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
_COMMA = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
