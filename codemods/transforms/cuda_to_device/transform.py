"""TM101's codemod: `.cuda()` -> `.to(device)`; legacy `torch.cuda.FloatTensor` & co. -> dtype/device forms.

The receiver analysis it relies on (is this a tensor, a module, a look-alike?) is in
`receivers.py`; picking and defining the device is `DeviceCodemod`'s (helpers/device_codemod.py).
"""

from __future__ import annotations

import libcst as cst

from codemods.helpers import arguments
from codemods.helpers.device_codemod import DeviceCodemod
from codemods.helpers.arguments import ARG_SEPARATOR, keyword_arg
from codemods.helpers.names import dotted, walk_statements
from codemods.transforms.cuda_to_device.receivers import (
    ClassCollector,
    ReceiverKinds,
    cuda_tensor_type,
    type_string_dtype,
)


class CudaToDevice(ReceiverKinds, DeviceCodemod):
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
      function, after its own imports, so torch stays a lazy dependency. `is_available()`
      initialises CUDA, which reads `CUDA_VISIBLE_DEVICES` only then: in a script that selects
      its GPU (`os.environ["CUDA_VISIBLE_DEVICES"] = ...`, directly or in a helper), the
      definition goes after the selection; where that is in `main()` or in the
      `if __name__ == "__main__":` block, that block and each function using the device define
      it themselves, after the selection (helpers/gpu_selection.py).

    - Code that runs only where CUDA is there is left as it is: under `if cuda:` where `cuda` is
      only ever a test of CUDA (`cuda = torch.cuda.is_available()`, `args.cuda = not args.no_cuda
      and torch.cuda.is_available()`), `if torch.cuda.is_available():`, `x.is_cuda`, a flag
      parameter by which a function that uses CUDA by default lets its caller turn it off
      (`def mnist(cuda=True)`: `if cuda:`; an opt-in `use_cuda=False` is rewritten), and the
      first branch of `a if <such a test> else b`: `.cuda()` cannot fail there (or runs at the
      caller's request), the code already chooses its device, and a `device` beside its own flag
      would be noise. A tensor's discarded
      `x.cuda()` there is still a silent bug: it becomes `x = x.cuda()`.

    ## Why is this bad?
    `.cuda()` and the `torch.cuda.*Tensor` types crash on a machine without CUDA, so the code (and
    its tests) can only run on a GPU. A discarded `x.cuda()` is a silent bug on top: tensors are not
    moved in place, so `x` stays on the CPU (only modules move in place).

    ## Example
    ```python
    import torch
    import torch.nn as nn

    model = nn.Linear(4, 2)
    model.cuda()
    x.cuda()
    y = target.cuda(non_blocking=True)
    buf = torch.cuda.FloatTensor(4, 4)
    ```

    ## Use instead
    ```python
    import torch
    import torch.nn as nn

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    model = nn.Linear(4, 2)
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

    PRUNE = True  # its sites are on `cuda` lines; its scope questions read only the statements that can answer them

    def visit_Module(self, node: cst.Module) -> bool:
        collector = ClassCollector()
        walk_statements(node.body, collector, collector.skips)  # classes, defs and assignments are statements
        self.classes = collector.classes
        # Some class with its own cuda(): importable ones anywhere in the repo (the first pass), or
        # any class of this file (one local to a function too).
        self._cuda_look_alikes = bool(self.file.facts.cuda_classes) or any(c.defines_cuda for c in self.classes.values())
        self._bare: set[int] = set()  # ids of calls that are a whole expression statement
        self._rebind: dict[int, cst.BaseExpression] = {}  # accepted bare calls -> assignment target
        self._handled: set[int] = set()  # legacy-type references in a position rewritten elsewhere
        self._class_stack: list[str] = []
        self._guards: list[bool] = []  # per enclosing if-body / conditional-expression body: tests CUDA?
        self._flag_params: list[set[str]] = []  # per enclosing function: its parameters that ask for CUDA
        self._module = node
        self._flags: frozenset[str] | None = None  # names and attributes bound to a CUDA test, on demand
        return super().visit_Module(node)

    # -- CUDA guards: code that runs only where CUDA is there ---------------------------------------

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        params = node.params
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        self._flag_params.append({p.name.value for p in every if p.name.value.lower() in _CUDA_FLAG_NAMES and _is_true(p.default)})

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self._flag_params.pop()
        return updated_node

    def visit_If_body(self, node: cst.If) -> None:
        self._guards.append(self._tests_cuda(node.test))

    def leave_If_body(self, node: cst.If) -> None:
        self._guards.pop()

    def visit_IfExp_body(self, node: cst.IfExp) -> None:
        self._guards.append(self._tests_cuda(node.test))

    def leave_IfExp_body(self, node: cst.IfExp) -> None:
        self._guards.pop()

    def _tests_cuda(self, test: cst.BaseExpression) -> bool:
        """Whether `test` is true only where CUDA is there: `torch.cuda.is_available()`,
        `torch.cuda.device_count() > 0`, `t.is_cuda`, a name or attribute only ever bound to such
        a test (`cuda = torch.cuda.is_available()`, `args.cuda = not args.no_cuda and ...`), or an
        `and` with one of them."""
        if isinstance(test, cst.BooleanOperation):
            return isinstance(test.operator, cst.And) and (self._tests_cuda(test.left) or self._tests_cuda(test.right))
        if isinstance(test, cst.Comparison):
            return isinstance(test.left, cst.Call) and self.qualified_name(test.left.func) == "torch.cuda.device_count"
        if isinstance(test, cst.Call):
            return self.qualified_name(test.func) == "torch.cuda.is_available"
        if isinstance(test, cst.Attribute) and test.attr.value == "is_cuda":
            return True
        spelled = dotted(test) if isinstance(test, (cst.Name, cst.Attribute)) else None
        if spelled is None:
            return False
        if self._flag_params and spelled in self._flag_params[-1]:
            return True  # `def mnist(cuda=True): ... if cuda: m.cuda()`: the caller asks for CUDA
        if self._flags is None:
            self._flags = frozenset()  # while they are found, a flag bound to another is not followed
            self._flags = _CudaFlags.of(self._module, self._tests_cuda)
        return spelled in self._flags

    def _cuda_guarded(self) -> bool:
        """Whether the node being walked runs only where CUDA is there, so `.cuda()` cannot fail
        there and `.to(device)` would change nothing (the script already chooses its device)."""
        return any(self._guards)

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
        if arguments.has_star_args(original):
            return updated
        if self._cuda_guarded():
            # `if cuda: model.cuda()` needs no device; a tensor's discarded `.cuda()` is still a
            # silent bug, fixed where it is: `x = x.cuda()`
            if id(original) in self._bare and not self._receiver_is_module(receiver):
                target = self._rebind_target(receiver)
                if target is not None and self._own_cuda_class(receiver) is None and not self.suppressed(original):
                    self._rebind[id(original)] = target
                    return self.rewrite(original, updated, updated)
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
        bound = arguments.bind(original, ["device", "non_blocking"])
        device_arg = bound.get("device")
        if device_arg is not None and arguments.literal(device_arg.arg.value) is not None:
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
            arguments.as_keyword(a, "non_blocking") if blocking is not None and i == blocking.index and blocking.positional else a
            for i, a in enumerate(updated.args)
            if device_arg is None or i != device_arg.index
        ]
        bare = id(original) in self._bare
        target = self._rebind_target(receiver) if bare and not self._receiver_is_module(receiver) else None

        storage = self._is_storage_value(receiver)  # a storage's `.to()` takes the device by keyword only

        def build(device: cst.Name) -> cst.Call:
            arg = keyword_arg("device", device) if storage else cst.Arg(device)
            args = [arg.with_changes(comma=ARG_SEPARATOR), *kept] if kept else [arg]
            return updated.with_changes(func=updated.func.with_changes(attr=cst.Name("to")), args=args)

        result = self.with_device(original, updated, build)
        if result is not updated and target is not None:
            self._rebind[id(original)] = target
        return result

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
            added = [keyword_arg("dtype", self.spell(f"torch.{dtype}")), keyword_arg("device", device)]
            return arguments.append_args(updated.with_changes(func=self.spell(factory), args=args), added)

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
        bound = arguments.bind(original, ["dtype", "non_blocking"])
        if "dtype" not in bound or arguments.has_star_args(original):
            return updated
        value = bound["dtype"].arg.value
        dtype = cuda_tensor_type(self.qualified_name(value)) or type_string_dtype(value)
        if dtype is None:
            return updated
        rest = [
            arguments.as_keyword(a, "non_blocking") if i == bound.get("non_blocking", bound["dtype"]).index and a.keyword is None else a
            for i, a in enumerate(updated.args)
            if i != bound["dtype"].index
        ]

        def build(device: cst.Name) -> cst.Call:
            typed = keyword_arg("dtype", self.spell(f"torch.{dtype}")).with_changes(comma=bound["dtype"].arg.comma)  # its comment
            args = [keyword_arg("device", device), typed, *rest]
            return arguments.with_args(updated.with_changes(func=updated.func.with_changes(attr=cst.Name("to"))), args)

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
        if self._cuda_guarded():
            return  # `Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor` works on 2.x too
        self.finding(
            node,
            f"legacy CUDA tensor type `{self.code_for(node)}` used as a value",
            suggestion=f"use dtype=torch.{dtype} and device=device (for a type test: `t.is_cuda and t.dtype == torch.{dtype}`)",
        )


# Parameters by which a function that uses CUDA by default lets its caller turn it off
# (`def build(cuda=True)`): the function already chooses its device, and the caller's
# `cuda=False` is its CPU path, so code under `if cuda:` stays. An opt-in flag (`use_cuda=False`)
# is rewritten as before: its CUDA path then runs on any machine.
_CUDA_FLAG_NAMES = frozenset({"cuda", "use_cuda", "on_cuda", "gpu", "use_gpu", "on_gpu"})


def _is_true(default: cst.BaseExpression | None) -> bool:
    return isinstance(default, cst.Name) and default.value == "True"


class _CudaFlags(cst.CSTVisitor):
    """The names and attributes (`cuda`, `args.cuda`) that a module binds only to a test of CUDA:
    every assignment to them is one (`_tests_cuda`), or the literal False."""

    def __init__(self, tests_cuda) -> None:
        self._tests_cuda = tests_cuda
        self.bound: dict[str, bool] = {}

    @classmethod
    def of(cls, module: cst.Module, tests_cuda) -> frozenset[str]:
        collector = cls(tests_cuda)
        module.visit(collector)
        return frozenset(name for name, only in collector.bound.items() if only)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target, None)

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        spelled = dotted(target) if isinstance(target, (cst.Name, cst.Attribute)) else None
        if spelled is None:
            return
        if isinstance(value, cst.IfExp) and isinstance(value.body, cst.Name) and value.body.value == "True":
            value = value.test  # `cuda = True if torch.cuda.is_available() else False`
        fits = value is not None and (
            (isinstance(value, cst.Name) and value.value == "False") or self._tests_cuda(value)
        )
        self.bound[spelled] = self.bound.get(spelled, True) and fits
