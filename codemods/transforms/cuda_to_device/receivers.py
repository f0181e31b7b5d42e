"""What a `.cuda()` receiver is, for TM101: a tensor, an `nn.Module`, or an object of a class with
its own `cuda()`, as far as this module (and the repository's facts) show.

`ClassCollector` reads this module's classes (bases, a `cuda()` of their own, `self.x = ...`
values); `ReceiverKinds` is the part of the codemod that answers from them and from the scopes of
`DeviceCodemod`. Also the legacy CUDA tensor types and the dtypes they stand for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst

from codemods.engine.lazy import spells_none
from codemods.gates.cuda_to_device import legacy_tensor_types
from codemods.helpers.names import attribute_chain, dotted


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
PARAMETER = {"torch.nn.Parameter", "torch.nn.parameter.Parameter"}
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

# Tensor methods that return a storage, and storage methods that return one.
_STORAGE_METHODS = frozenset({"storage", "untyped_storage", "_typed_storage"})
_STORAGE_CHAIN = frozenset({"cuda", "cpu", "to", "pin_memory", "share_memory_", "float", "double", "half", "long", "int", "clone"})


@dataclass
class ClassInfo:
    bases: list[str]
    defines_cuda: bool = False
    attributes: dict[str, list[cst.BaseExpression | None]] = field(default_factory=dict)


# What a function body must spell for ClassCollector to record anything in it: a `class`, a
# `def cuda`, or an assignment to `self.<name>` (`self.x = `, `self.x: T`, and inside brackets
# `(self  # why\n .x) =`). The pattern matches more (a dict's `{self.x: 1}`): that only costs a parse.
_GAP = r"(?:[\s\\)]|#[^\n]*)*"  # blanks, continuations, comments, closing brackets
_RECORDED = re.compile(rf"\bclass\b|\bcuda\b|\bself{_GAP}\.{_GAP}\w+{_GAP}(?:=(?!=)|:)")


class ClassCollector(cst.CSTVisitor):
    """Classes of this module: their bases, whether they define `cuda()`, and `self.x = ...` values.
    Walked with `walk_statements(..., collector.skips)`: a function body not parsed yet that spells
    nothing it records stays unparsed (engine/lazy.py)."""

    @staticmethod
    def skips(block: cst.IndentedBlock) -> bool:
        return spells_none(block, _RECORDED)

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



class ReceiverKinds:
    """Questions about receivers, asked by `CudaToDevice` (a `DeviceCodemod`) during its walk;
    reads `self.classes` (a `ClassCollector`'s) and `self._class_stack` (the classes being visited)."""

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
            return self._bound_only_to(expr, depth, self._is_tensor_value)
        if not isinstance(expr, cst.Call):
            return False
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in _TENSOR_METHODS and self._is_tensor_value(func.value, depth):
            return True
        qualified = self.qualified_name(func)
        if qualified is None or not qualified.startswith("torch."):
            return False
        if qualified in PARAMETER or qualified.startswith(_TENSOR_NAMESPACES):
            return True
        rest = qualified[len("torch.") :]
        return "." not in rest and rest not in _NOT_TENSORS and (rest[:1].islower() or rest.endswith("Tensor"))

    def _bound_only_to(self, name: cst.Name, depth: int, kind) -> bool:
        """`name` has values here, and each is of `kind` (a `_is_..._value` predicate) one level deeper."""
        values = self._binding_values(name.value)
        return bool(values) and all(kind(v, depth + 1) for v in values)

    def _is_storage_value(self, expr: cst.BaseExpression | None, depth: int = 0) -> bool:
        """A storage: `torch.Storage(n)`, `torch.FloatStorage(...)`, `x.untyped_storage()`, a storage
        method's result on one, or a name bound only to such values. Its `.to()` takes the device
        only by keyword (`TypedStorage.to(*, device, non_blocking)`)."""
        if isinstance(expr, cst.Name) and depth < 2:
            return self._bound_only_to(expr, depth, self._is_storage_value)
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _STORAGE_METHODS:
            return True
        if not isinstance(expr, cst.Call):
            return False
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _STORAGE_CHAIN:
            return self._is_storage_value(expr.func.value, depth)
        qualified = self.qualified_name(expr.func) or ""
        return qualified.startswith("torch.") and "." not in qualified[len("torch.") :] and qualified.endswith("Storage")

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
        return isinstance(value, cst.Call) and self.qualified_name(value.func) in PARAMETER


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
