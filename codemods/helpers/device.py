"""Where is `device`, and what is it? The rules shared by the codemods that move code onto a device.

A rewrite such as `x.cuda()` -> `x.to(device)` needs a name that holds a `torch.device` at the
call site:

- reuse a `device` already in scope: a parameter (without a `None` default), a local bound to
  `torch.device(...)` (or a string literal), a module global bound to `torch.device(...)`;
- otherwise define one, once per module, after the last import of its import block (so after
  any `from __future__`): `device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`;
  where the module binds torch only inside functions (or nowhere), a site in a function gets the
  definition in that function instead (a module-level one would be a NameError on import, and a
  module-level `import torch` would make an optional dependency a hard one);
- never shadow or clobber a `device` that means something else: then the module's definition gets
  a fresh name (`torch_device`, `torch_device_2`, ...) that appears nowhere in the module.

This module holds those rules as functions of the scopes (helpers/bindings.py); the codemod base
class that applies them while walking is `helpers/device_codemod.py`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

import libcst as cst

from codemods.helpers.bindings import ModuleScopes, Scope
from codemods.helpers.names import Imports
from codemods.helpers.placement import after_import_block, is_import_line

FRESH_NAMES = ("torch_device",)
# Every name `fresh_name` may pick (`torch_device`, `torch_device_2`, ...).
FRESH_PATTERN = re.compile(r"torch_device(?:_\d+)?")


# -- what a binding of `device` means -------------------------------------------------------------


# What `torch.device(...)` accepts as a string: "cuda", "cuda:1", "cpu", ... (not TensorFlow's
# "/device:GPU:0", a name that only shares the word).
_TORCH_DEVICE_STRING = re.compile(r"^(?:cpu|cuda|mps|xpu|meta|hpu|xla|privateuseone)(?::\d+)?$")


def is_torch_device_call(expr: cst.BaseExpression | None, imports: Imports) -> bool:
    return isinstance(expr, cst.Call) and imports.resolve(expr.func) == "torch.device"


def is_device_value(expr: cst.BaseExpression | None, imports: Imports) -> bool:
    """A value that can be passed wherever a device is expected: `torch.device(...)` or a string."""
    if expr is None:
        return False
    if is_torch_device_call(expr, imports):
        return True
    if isinstance(expr, cst.SimpleString):
        return _TORCH_DEVICE_STRING.match(str(expr.evaluated_value)) is not None
    if isinstance(expr, cst.FormattedString):  # f"cuda:{rank}"
        head = expr.parts[0] if expr.parts else None
        return isinstance(head, cst.FormattedStringText) and _TORCH_DEVICE_STRING.match(head.value + "0") is not None
    if isinstance(expr, cst.IfExp):
        return is_device_value(expr.body, imports) and is_device_value(expr.orelse, imports)
    return False


REUSE = "reuse"  # the name is bound to a device where it is used
GLOBAL = "global"  # the name resolves to the module; a module definition is needed (or present)
CONFLICT = "conflict"  # the name means something else here


def lookup(scope: Scope, name: str, imports: Imports) -> str:
    """What `name` means at a node in `scope`: REUSE, GLOBAL or CONFLICT."""
    for s in scope.visible_chain():
        if s.kind == "module":
            break
        if name in s.globals:
            break
        if name in s.params:
            default = s.params[name]
            none_default = isinstance(default, cst.Name) and default.value == "None"
            return CONFLICT if none_default else REUSE
        if name in s.bindings:
            values = s.bindings[name]
            return REUSE if all(is_device_value(v, imports) for v in values) else CONFLICT
    return GLOBAL


def module_binding_is_compatible(scopes: ModuleScopes, name: str, imports: Imports) -> bool:
    """True when every module-level binding of `name` is a `torch.device(...)` (or none exists)."""
    if scopes.star_import and name in scopes.names and not scopes.module.binds(name):
        return False  # `from x import *` may be what defines it
    return all(is_torch_device_call(v, imports) for v in scopes.module.bindings.get(name, []))


def top_level_device_binding(module: cst.Module, name: str, imports: Imports) -> int | None:
    """Index in `module.body` of a direct `name = torch.device(...)` statement, if any."""
    for index, statement in enumerate(module.body):
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if (
                isinstance(small, cst.Assign)
                and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name)
                and small.targets[0].target.value == name
                and is_torch_device_call(small.value, imports)
            ):
                return index
    return None


def fresh_name(taken: set[str]) -> str:
    for candidate in FRESH_NAMES:
        if candidate not in taken:
            return candidate
    n = 2
    while f"{FRESH_NAMES[0]}_{n}" in taken:
        n += 1
    return f"{FRESH_NAMES[0]}_{n}"


def module_device_name(module: cst.Module, preferred: str = "device", scopes: ModuleScopes | None = None) -> str | None:
    """The name of the module's top-level `... = torch.device(...)` binding that codemods reuse.

    Checks `preferred` first, then the fresh names TM101/TM102 would have picked. For TM103 and
    friends: run after TM101, this is the name its `.to(...)` calls use at module level.
    """
    imports = Imports.of(module)
    for name in (preferred, *FRESH_NAMES):
        if top_level_device_binding(module, name, imports) is not None:
            if name == preferred and scopes is not None and not module_binding_is_compatible(scopes, name, imports):
                continue
            return name
    return None


# -- the plan for one module ----------------------------------------------------------------------


@dataclass
class DevicePlan:
    """Which name each call site uses for the device, and whether the module must define it."""

    preferred: str
    global_name: str
    defined: bool
    """True when the module already has a usable top-level `global_name = torch.device(...)`."""
    defined_at: int | None = None

    def name_at(self, scope: Scope, imports: Imports) -> tuple[str, bool]:
        """(the name to use in `scope`, whether it is the module-level one)."""
        if lookup(scope, self.preferred, imports) == REUSE:
            return self.preferred, False
        return self.global_name, True

    def needs_definition(self, first_use: int | None) -> bool:
        """Whether the module must get a definition, given the first top-level statement using it."""
        if not self.defined or self.defined_at is None:
            return True
        return first_use is not None and first_use <= self.defined_at


def _means_something_else(scope: Scope, name: str, imports: Imports) -> bool:
    if scope.kind == "module":
        return False
    if name in scope.params:
        default = scope.params[name]
        return isinstance(default, cst.Name) and default.value == "None"
    return name in scope.bindings and not all(is_device_value(v, imports) for v in scope.bindings[name])


def plan_device(module: cst.Module, scopes: ModuleScopes, imports: Imports, preferred: str = "device") -> DevicePlan:
    """Decide the module-level device name.

    The module defines (or reuses) `preferred` unless some binding of that name, anywhere in the
    module, means something other than a device: then every site that cannot reuse a device in its
    own scope uses a fresh module-level name, so that no function's own `device` is clobbered.
    """
    conflict = not module_binding_is_compatible(scopes, preferred, imports) or any(
        _means_something_else(s, preferred, imports) for s in scopes.by_node.values()
    )
    if not conflict:
        at = top_level_device_binding(module, preferred, imports)
        return DevicePlan(preferred, preferred, at is not None, at)
    for name in FRESH_NAMES:  # an earlier run's definition
        at = top_level_device_binding(module, name, imports)
        if at is not None:
            return DevicePlan(preferred, name, True, at)
    return DevicePlan(preferred, fresh_name(scopes.names | set(scopes.module.bindings)), False)


# -- defining the device ---------------------------------------------------------------------------


def definition(name: str, torch_device: str, is_available: str) -> cst.SimpleStatementLine:
    return cst.parse_statement(f'{name} = {torch_device}("cuda" if {is_available}() else "cpu")\n')  # type: ignore[return-value]


def with_definition(
    module: cst.Module, name: str, imports: Imports, at: int, add_torch: Callable[[], None]
) -> cst.Module:
    """`module` with `name = torch.device("cuda" if torch.cuda.is_available() else "cpu")` at `at`.

    `add_torch` is called when the module has no way to spell `torch.device` (it should queue
    `import torch`, which libcst places with the first import block, before the definition).
    """
    body = list(module.body)
    statement = _spelled_definition(name, imports, add_torch)
    if at > 0:
        statement = statement.with_changes(leading_lines=[cst.EmptyLine()])
    body.insert(at, statement)
    return module.with_changes(body=body)


def _spelled_definition(name: str, imports: Imports, add_torch: Callable[[], None]) -> cst.SimpleStatementLine:
    torch_device = imports.local_name_for("torch.device")
    is_available = imports.local_name_for("torch.cuda.is_available")
    if torch_device is None or is_available is None or torch_device == name:
        add_torch()
        torch_device, is_available = "torch.device", "torch.cuda.is_available"
    return definition(name, torch_device, is_available)


def with_block_definition(
    module: cst.Module, top: int, name: str, imports: Imports, at: int, add_torch: Callable[[], None]
) -> cst.Module:
    """`module` with the device defined inside its top-level `if` statement `top` (the script's
    `if __name__ == "__main__":` block that selects the GPU), before that block's statement `at`."""
    block = module.body[top]
    assert isinstance(block, cst.If) and isinstance(block.body, cst.IndentedBlock)
    inner = list(block.body.body)
    inner.insert(at, _spelled_definition(name, imports, add_torch))
    body = list(module.body)
    body[top] = block.with_changes(body=block.body.with_changes(body=inner))
    return module.with_changes(body=body)


def module_level_imports(module: cst.Module, imports: Imports) -> Imports:
    """`imports` restricted to what the module binds at import time: an `import torch` inside a
    function (unittest modules, lazy-import libraries) does not bind `torch` for module code."""
    outside = [s for s in module.body if not isinstance(s, (cst.FunctionDef, cst.ClassDef))]
    return Imports(Imports.of(module.with_changes(body=outside)).aliases, imports.shadowed)


def local_torch_spelling(body: Sequence[cst.BaseStatement]) -> str | None:
    """The name a plain `import torch [as t]` line among `body` binds, if there is one."""
    for statement in body:
        if not is_import_line(statement):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    if alias.evaluated_name == "torch":
                        return alias.evaluated_alias or "torch"
    return None


def with_local_definition(
    function: cst.FunctionDef, original: cst.FunctionDef, name: str, first: int, after: int = 0, module_torch: str | None = None
) -> cst.FunctionDef:
    """`function` defining the device itself, after the imports at its top (and its statement
    `after - 1`, which selects the GPU) and before its `first` statement that uses it; it spells
    torch as the function's own `import torch [as t]` before that statement does, else as the
    module's `module_torch`, else it gets an `import torch` of its own there."""
    before = list(original.body.body)[:first]
    spelling = local_torch_spelling(before)
    at = max(after_import_block(original.body.body, first, spelling), min(after, first))
    spelling = spelling or module_torch
    added: list[cst.BaseStatement] = [] if spelling else [cst.parse_statement("import torch\n")]  # type: ignore[list-item]
    spelling = spelling or "torch"
    added.append(definition(name, f"{spelling}.device", f"{spelling}.cuda.is_available"))
    body = list(function.body.body)
    body[at:at] = added
    return function.with_changes(body=function.body.with_changes(body=body))
