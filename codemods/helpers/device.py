"""Where is `device`, and what is it? Shared by the codemods that move code onto a device.

TM101 (cuda-to-device), TM102 (load-map-location) and TM103 (dataparallel-to-ddp) all need a name
that holds a `torch.device` at a call site. The rules (DESIGN §5, TM101):

- reuse a `device` already in scope: a parameter (without a `None` default), a local bound to
  `torch.device(...)` (or a string literal), a module global bound to `torch.device(...)`;
- otherwise define one, once per module, after the last import of its import block (so after
  any `from __future__`): `device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`;
  where the module binds torch only inside functions (or nowhere), a site in a function gets the
  definition in that function instead (a module-level one would be a NameError on import, and a
  module-level `import torch` would make an optional dependency a hard one);
- never shadow or clobber a `device` that means something else: then the module's definition gets
  a fresh name (`torch_device`, `torch_device_2`, ...) that appears nowhere in the module.

Scope analysis here is a cheap libcst visitor (no `ScopeProvider`: DESIGN §9), precise enough for
the one question asked: which binding does a plain name at this node see?
"""

from __future__ import annotations

import ast
import keyword
import re
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

import libcst as cst

from codemods.helpers.codemod import MigrationCodemod, NodeT
from codemods.helpers.names import Imports, attribute_chain
from codemods.helpers.patterns import Words
from codemods.helpers.sites import Pruner, prune_visit
from codemods.helpers.statements import is_docstring

FRESH_NAMES = ("torch_device",)
# Every name `fresh_name` may pick (`torch_device`, `torch_device_2`, ...).
_FRESH = re.compile(r"torch_device(?:_\d+)?")

# -- scopes ----------------------------------------------------------------------------------------

_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
ScopeNode = cst.CSTNode


@dataclass(eq=False)
class Scope:
    node: cst.CSTNode
    kind: str  # module | function | lambda | class | comprehension
    parent: Scope | None
    params: dict[str, cst.BaseExpression | None] = field(default_factory=dict)
    """Parameter name -> its default (None when it has none)."""
    bindings: dict[str, list[cst.BaseExpression | None]] = field(default_factory=dict)
    """Name -> the values it is assigned (None for a binding that is not `name = value`)."""
    globals: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)

    def bind(self, name: str, value: cst.BaseExpression | None) -> None:
        self.bindings.setdefault(name, []).append(value)

    def binds(self, name: str) -> bool:
        return name in self.params or name in self.bindings

    def visible_chain(self) -> Iterator[Scope]:
        """This scope, then the scopes a name lookup falls back to (class bodies are skipped)."""
        scope: Scope | None = self
        first = True
        while scope is not None:
            if first or scope.kind != "class":
                yield scope
            first = False
            scope = scope.parent


@dataclass
class ModuleScopes:
    """Every scope of a module, the scope of each node that opens one, and all names it uses."""

    module: Scope
    by_node: dict[int, Scope]
    names: set[str]
    star_import: bool

    def scope_of(self, node: cst.CSTNode) -> Scope:
        return self.by_node.get(id(node), self.module)


def _target_names(target: cst.BaseExpression) -> Iterator[str]:
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _target_names(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _target_names(target.value)


class _ScopeCollector(cst.CSTVisitor):
    def __init__(self, module: cst.Module) -> None:
        self.module = Scope(module, "module", None)
        self.stack = [self.module]
        self.by_node: dict[int, Scope] = {id(module): self.module}
        self.names: set[str] = set()
        self.star_import = False

    @property
    def scope(self) -> Scope:
        return self.stack[-1]

    def _open(self, node: cst.CSTNode, kind: str) -> Scope:
        scope = Scope(node, kind, self.scope)
        self.by_node[id(node)] = scope
        self.stack.append(scope)
        return scope

    def _close(self, node: cst.CSTNode) -> None:
        self.stack.pop()

    def _params(self, scope: Scope, params: cst.Parameters) -> None:
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        for param in every:
            scope.params[param.name.value] = param.default
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                scope.params[star.name.value] = None

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.scope.bind(node.name.value, None)
        # Decorators and defaults are evaluated in the enclosing scope; visit them there.
        for decorator in node.decorators:
            decorator.visit(self)
        for param in [*node.params.posonly_params, *node.params.params, *node.params.kwonly_params]:
            if param.default is not None:
                param.default.visit(self)
        scope = self._open(node, "function")
        self._params(scope, node.params)
        self.names |= set(scope.params)
        node.body.visit(self)
        self._close(node)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        scope = self._open(node, "lambda")
        self._params(scope, node.params)
        self.names |= set(scope.params)
        node.body.visit(self)
        self._close(node)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.scope.bind(node.name.value, None)
        for decorator in node.decorators:
            decorator.visit(self)
        for arg in [*node.bases, *node.keywords]:
            arg.visit(self)
        self._open(node, "class")
        node.body.visit(self)
        self._close(node)
        return False

    def _comprehension(self, node: cst.CSTNode) -> bool:
        self._open(node, "comprehension")
        return True

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension  # type: ignore[assignment]

    def leave_ListComp(self, original_node: cst.ListComp) -> None:
        self._close(original_node)

    leave_SetComp = leave_DictComp = leave_GeneratorExp = leave_ListComp  # type: ignore[assignment]

    def visit_CompFor(self, node: cst.CompFor) -> None:
        for name in _target_names(node.target):
            self.scope.bind(name, None)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                self.scope.bind(target.target.value, node.value)
            else:
                for name in _target_names(target.target):
                    self.scope.bind(name, None)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if isinstance(node.target, cst.Name):
            self.scope.bind(node.target.value, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Name):
            self.scope.bind(node.target.value, None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        # `:=` binds in the nearest enclosing function (or module), even from a comprehension.
        scope = self.scope
        while scope.kind == "comprehension" and scope.parent is not None:
            scope = scope.parent
        if isinstance(node.target, cst.Name):
            scope.bind(node.target.value, node.value)

    def visit_For(self, node: cst.For) -> None:
        for name in _target_names(node.target):
            self.scope.bind(name, None)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            for name in _target_names(node.asname.name):
                self.scope.bind(name, None)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None and isinstance(node.name.name, cst.Name):
            self.scope.bind(node.name.name.value, None)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.scope.bind(alias.asname.name.value, None)
            else:
                head = cst.Module(body=[]).code_for_node(alias.name).split(".")[0]
                self.scope.bind(head, None)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            self.star_import = True
            return
        for alias in node.names:
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.scope.bind(alias.asname.name.value, None)
            elif isinstance(alias.name, cst.Name):
                self.scope.bind(alias.name.value, None)

    def visit_Global(self, node: cst.Global) -> None:
        self.scope.globals |= {n.name.value for n in node.names}

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.scope.nonlocals |= {n.name.value for n in node.names}

    def visit_Del(self, node: cst.Del) -> None:
        for name in _target_names(node.target):
            self.scope.bind(name, None)


def collect_scopes(module: cst.Module, pruner: Pruner | None = None) -> ModuleScopes:
    """Every scope of `module`; with `pruner`, of the statements it does not skip (see
    `DeviceCodemod.scopes_for` for what such a partial collection still says exactly)."""
    collector = _ScopeCollector(module)
    prune_visit(module, collector, pruner)
    return ModuleScopes(collector.module, collector.by_node, collector.names, collector.star_import)


# The partial scope collection (DeviceCodemod.scopes_for) reads the statements that spell the
# names on the codemod's own site lines; these are spelled there but asked about rarely or never,
# and would bring most of a module into the walk (a question about one falls back to the full walk).
_NEVER_ASKED = frozenset({"self", "torch", "print", "super", "range", "len", *keyword.kwlist, *keyword.softkwlist})
_IDENTIFIER = re.compile(r"(?<![\w.])[^\W\d]\w*")
_NEWLINE = re.compile(r"\r\n|\n")


@dataclass
class _PartialScopes:
    words: frozenset[str]
    scopes: ModuleScopes

    def covers(self, name: str) -> bool:
        return name in self.words or _FRESH.fullmatch(name) is not None


SCOPE_NODES = (cst.FunctionDef, cst.Lambda, cst.ClassDef, *_COMPREHENSIONS)


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


def _is_import_line(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body
    )


def _binds(statement: cst.BaseStatement, name: str) -> bool:
    if not _is_import_line(statement):
        return False
    for small in statement.body:
        names = small.names if isinstance(small, (cst.Import, cst.ImportFrom)) else ()
        if isinstance(names, cst.ImportStar):
            continue
        for alias in names:
            bound = alias.evaluated_alias or alias.evaluated_name.split(".")[0]
            if bound == name:
                return True
    return False


def _is_import_guard(statement: cst.BaseStatement) -> bool:
    """`try: import x` / `if cond: import x` at the top of a module: part of its import block."""
    if not isinstance(statement, (cst.Try, cst.If)):
        return False
    body = statement.body.body if isinstance(statement.body, cst.IndentedBlock) else [statement.body]
    return any(_is_import_line(s) or _is_import_guard(s) for s in body)


def _ends_import_block(statement: cst.BaseStatement) -> bool:
    """A def, a class or a compound statement other than an import guard: code from here on may
    call what the device is for, so the definition goes before it."""
    return not isinstance(statement, cst.SimpleStatementLine) and not _is_import_guard(statement)


def insertion_index(body: Sequence[cst.BaseStatement], first_use: int | None, needs: str | None = None) -> int:
    """Where the definition goes: after the last import of the import block (after a docstring
    and any `from __future__`; the block runs on through simple statements such as
    `sys.path.insert(...)`, notebook cell boundaries and `try: import x` guards, up to the first
    def, class or other compound statement), or after the later import that binds `needs` (how
    the definition spells torch), and never after the first top-level statement that uses the
    device."""
    limit = len(body) if first_use is None else first_use
    start = 1 if body and is_docstring(body[0]) else 0
    index = start
    for position in range(start, limit):
        statement = body[position]
        if _ends_import_block(statement):
            break
        if _is_import_line(statement) or _is_import_guard(statement):
            index = position + 1
    if needs is not None:
        for i, statement in enumerate(body[:limit]):
            if _binds(statement, needs):
                index = max(index, i + 1)
                break
    return min(index, limit)


def definition(name: str, torch_device: str, is_available: str) -> cst.SimpleStatementLine:
    return cst.parse_statement(f'{name} = {torch_device}("cuda" if {is_available}() else "cpu")\n')  # type: ignore[return-value]


def with_definition(
    module: cst.Module, name: str, imports: Imports, at: int, add_torch: Callable[[], None]
) -> cst.Module:
    """`module` with `name = torch.device("cuda" if torch.cuda.is_available() else "cpu")` at `at`.

    `add_torch` is called when the module has no way to spell `torch.device` (it should queue
    `import torch`, which libcst places with the first import block, before the definition).
    """
    torch_device = imports.local_name_for("torch.device")
    is_available = imports.local_name_for("torch.cuda.is_available")
    if torch_device is None or is_available is None or torch_device == name:
        add_torch()
        torch_device, is_available = "torch.device", "torch.cuda.is_available"
    body = list(module.body)
    statement = definition(name, torch_device, is_available)
    if at > 0:
        statement = statement.with_changes(leading_lines=[cst.EmptyLine()])
    body.insert(at, statement)
    return module.with_changes(body=body)


def module_level_imports(module: cst.Module, imports: Imports) -> Imports:
    """`imports` restricted to what the module binds at import time: an `import torch` inside a
    function (unittest modules, lazy-import libraries) does not bind `torch` for module code."""
    outside = [s for s in module.body if not isinstance(s, (cst.FunctionDef, cst.ClassDef))]
    return Imports(Imports.of(module.with_changes(body=outside)).aliases, imports.shadowed)


def local_torch_spelling(body: Sequence[cst.BaseStatement]) -> str | None:
    """The name a plain `import torch [as t]` line among `body` binds, if there is one."""
    for statement in body:
        if not _is_import_line(statement):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    if alias.evaluated_name == "torch":
                        return alias.evaluated_alias or "torch"
    return None


def with_local_definition(function: cst.FunctionDef, original: cst.FunctionDef, name: str, first: int) -> cst.FunctionDef:
    """`function` defining the device itself, after the imports at its top and before its `first`
    statement that uses it; it spells torch as the function's own `import torch [as t]` before
    that statement does, else it gets an `import torch` of its own there."""
    before = list(original.body.body)[:first]
    spelling = local_torch_spelling(before)
    at = insertion_index(original.body.body, first, spelling)
    added: list[cst.BaseStatement] = [] if spelling else [cst.parse_statement("import torch\n")]  # type: ignore[list-item]
    spelling = spelling or "torch"
    added.append(definition(name, f"{spelling}.device", f"{spelling}.cuda.is_available"))
    body = list(function.body.body)
    body[at:at] = added
    return function.with_changes(body=function.body.with_changes(body=body))


# -- a base for codemods that put things on the device ---------------------------------------------


class DeviceCodemod(MigrationCodemod):
    """A codemod whose rewrites refer to the device: tracks scopes, picks the name at each site
    (`self.with_device`) and defines the module-level device once, if a rewrite needed it.

    Subclasses that override `visit_Module`/`leave_Module`/`on_visit`/`on_leave` call `super()`.
    """

    def visit_Module(self, node: cst.Module) -> bool:
        # The scope analysis (a full walk) and the device plan are made on first use: most files
        # a device codemod parses for get no rewrite, and never need them.
        self._module_node = node
        self._scopes: ModuleScopes | None = None
        self._partial: _PartialScopes | None | bool = None  # False: none can be made here
        self._device_plan: DevicePlan | None = None
        self._open_scopes: list[cst.CSTNode] = [node]
        self._top_ids = {id(statement): index for index, statement in enumerate(node.body)}
        self._top_index: int | None = None
        self._deferred = 0  # depth of function/lambda bodies: code there runs later
        self._first_use: int | None = None
        self._first_any_use: int | None = None  # also uses inside lambdas and defs
        self._global_used = False
        self._module_imports: Imports | None = None
        self._functions: list[tuple[cst.FunctionDef, dict[int, int]]] = []  # open defs: body ids -> index
        self._statement_in: dict[int, int] = {}  # id(open def) -> index of its body statement being visited
        self._local_first: dict[int, int] = {}  # id(def) -> its first body statement using a local device
        self.extra_top_statements: dict[int, int] = {}
        """Top-level index -> statements a subclass added there (keeps the insertion index right)."""
        return True

    @property
    def scopes(self) -> ModuleScopes:
        """Every scope of the module, from a walk of all of it."""
        if self._scopes is None:
            self._scopes = collect_scopes(self._module_node)
        return self._scopes

    def scopes_for(self, *names: str) -> ModuleScopes:
        """The module's scopes, exact in all they say of `names` and of the device's names (the
        preferred one and every fresh one): where this codemod's walk is pruned, read from only
        the statements that spell a name of its site lines, a device name or a star import, and
        those its walk visits (speed, issue 18: the full walk was most of TM101's time).

        Why that is exact for such a name: each binding, parameter, `global` and use of it is
        spelled on a line of the statements read, and so are the statements around them; every
        scope the codemod's walk is in is one of those, with the scopes around it. A question about
        any other name is answered from the full walk (`scopes`)."""
        if self._scopes is None:
            if self._partial is None:
                self._partial = self._partial_scopes()
            if self._partial and all(self._partial.covers(name) for name in names):
                return self._partial.scopes
        return self.scopes

    def _partial_scopes(self) -> _PartialScopes | bool:
        if self.pruner is None or self.sites is None:
            return False
        text = _NEWLINE.split(self.sites.source)
        words = {word for line in self.pruner.lines for word in _IDENTIFIER.findall(text[line - 1])}
        words = (words - _NEVER_ASKED) | {self.file.device_name}
        pattern = r"\b(?:%s|%s)\b" % ("|".join(map(re.escape, sorted(words))), _FRESH.pattern)
        stars = [
            node.lineno
            for node in self.sites.scan.imports
            if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names)
        ]
        lines = sorted({*self.sites.hits([Words(pattern)]), *self.pruner.lines, *stars})
        return _PartialScopes(frozenset(words), collect_scopes(self._module_node, Pruner(self.sites, lines)))

    def scope_for(self, *names: str) -> Scope:
        """The scope of the node being visited, in `scopes_for(*names)`."""
        return self.scopes_for(*names).scope_of(self._open_scopes[-1])  # the module node maps to the module scope

    @property
    def device_plan(self) -> DevicePlan:
        if self._device_plan is None:
            self._device_plan = plan_device(self._module_node, self.scopes_for(), self.imports, self.file.device_name)
        return self._device_plan

    @property
    def current_scope(self) -> Scope:
        return self.scopes.scope_of(self._open_scopes[-1])  # the module node maps to the module scope

    @property
    def top_index(self) -> int | None:
        """Index in the module body of the top-level statement being visited."""
        return self._top_index

    def on_visit(self, node: cst.CSTNode) -> bool:
        top = getattr(self, "_top_ids", {}).get(id(node))
        if top is not None:
            self._top_index = top
        if hasattr(self, "_module_node"):
            if self._functions:
                function, statements = self._functions[-1]
                if id(node) in statements:
                    self._statement_in[id(function)] = statements[id(node)]
            if isinstance(node, SCOPE_NODES):
                self._open_scopes.append(node)
                if isinstance(node, (cst.FunctionDef, cst.Lambda)):
                    self._deferred += 1
                if isinstance(node, cst.FunctionDef) and isinstance(node.body, cst.IndentedBlock):
                    self._functions.append((node, {id(s): i for i, s in enumerate(node.body.body)}))
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):
        if isinstance(original_node, SCOPE_NODES) and hasattr(self, "_module_node"):
            self._open_scopes.pop()
            if isinstance(original_node, (cst.FunctionDef, cst.Lambda)):
                self._deferred -= 1
            if self._functions and self._functions[-1][0] is original_node:
                self._functions.pop()
                first = self._local_first.pop(id(original_node), None)
                if first is not None and isinstance(updated_node, cst.FunctionDef):
                    assert isinstance(original_node, cst.FunctionDef)
                    name = self.device_plan.global_name
                    updated_node = with_local_definition(updated_node, original_node, name, first)
        return super().on_leave(original_node, updated_node)

    @property
    def module_imports(self) -> Imports:
        """The imports the module's own code sees (not those inside its functions)."""
        if self._module_imports is None:
            self._module_imports = module_level_imports(self._module_node, self.imports)
        return self._module_imports

    def _torch_is_lazy(self) -> bool:
        """Whether the module imports torch only inside functions (or not at all): then a module-level
        `import torch` would make an optional dependency a hard one, and the device is defined in
        the function that uses it."""
        return not any(t == "torch" or t.startswith("torch.") for t in self.module_imports.aliases.values())

    def _local_site(self) -> cst.FunctionDef | None:
        """The function that defines the device for a site here, when the module cannot."""
        if not self._functions or not self._torch_is_lazy():
            return None
        function = self._functions[-1][0]
        name = self.device_plan.global_name
        if name in self.scopes_for(name).scope_of(function).globals:
            return None
        return function

    def with_device(
        self,
        original: cst.CSTNode,
        updated: NodeT,
        build: Callable[[cst.Name], cst.CSTNode],
        *,
        review: str | None = None,
    ):
        """`self.rewrite(original, updated, build(device))`, noting whether the module-level device
        is now needed and from which top-level statement on."""
        plan = self.device_plan
        name, is_global = plan.name_at(self.scope_for(plan.preferred), self.imports)
        replacement = build(cst.Name(name))
        result = self.rewrite(original, updated, replacement, review=review)
        if result is replacement and is_global:
            function = self._local_site()
            if function is not None:
                at = self._statement_in.get(id(function), 0)
                self._local_first[id(function)] = min(self._local_first.get(id(function), at), at)
                return result
            self._global_used = True
            if self._top_index is not None:
                self._first_any_use = min(self._first_any_use if self._first_any_use is not None else self._top_index, self._top_index)
            if not self._deferred and self._top_index is not None:
                first = self._first_use
                self._first_use = self._top_index if first is None else min(first, self._top_index)
        return result

    def spell(self, qualified: str) -> cst.BaseExpression:
        """`torch.float32` as this module can write it, queuing `import torch` when it cannot."""
        local = self.imports.local_name_for(qualified)
        if local is None:
            self.add_needed_import(qualified.split(".")[0])
            local = qualified
        return attribute_chain(local)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if not self._global_used or not self.device_plan.needs_definition(self._first_use):
            return updated_node
        spelling = self.module_imports.local_name_for("torch.device")
        needs = spelling.split(".")[0] if spelling else None
        uses = [u for u in (self._first_use, self._first_any_use) if u is not None]
        at = insertion_index(original_node.body, min(uses) if uses else None, needs)
        at += sum(n for index, n in self.extra_top_statements.items() if index < at)
        return with_definition(
            updated_node, self.device_plan.global_name, self.module_imports, at, lambda: self.add_needed_import("torch")
        )
