"""Which names a scope binds, and to what: the one cheap scope analysis codemods share.

libcst's `ScopeProvider` answers every scoping question for every name, and costs several parses
of the file; the codemods here ask one narrow question each, so they read bindings with a plain
visitor instead. Three levels, from the cheapest:

- `ScopeNodes`: the nodes of one function (or module) body, without those of the functions,
  classes and lambdas nested in it (for codemods that reason about one body's statements);
- `BodyBindings`: name -> every value one body assigns it (`x = value`, `x: T = value`, `x += v`),
  again without nested scopes; subclasses change what a target is keyed by (`key`), what an
  unpacking binds (`bind_unpacked`) and what an augmented assignment adds (`augmented_value`);
- `collect_scopes`: the whole tree of a module's scopes (module, functions, lambdas, classes,
  comprehensions), each with its parameters and their defaults, its bindings with their values
  (None where the binding is not `name = value`: a loop, an import, a `with ... as`), its
  `global`/`nonlocal` names, and every name the module spells. Precise enough for "which binding
  does a plain name at this node see?" (`Scope.visible_chain`).

Nested scopes follow Python: decorators, defaults and class bases are evaluated in the enclosing
scope, a class body is not visible from its methods, `:=` in a comprehension binds in the
function around it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator

import libcst as cst
from codemods.engine.traverse import traverse


# Scopes nested in a body: their names are their own.
NESTED_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
SCOPE_NODES = (cst.FunctionDef, cst.Lambda, cst.ClassDef, *COMPREHENSIONS)
"""The nodes that open a scope of `collect_scopes`."""

Value = cst.BaseExpression | None


def target_names(target: cst.BaseExpression) -> Iterator[str]:
    """The plain names an assignment, loop or `del` target binds (`a, (b, *c)` binds a, b, c)."""
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from target_names(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from target_names(target.value)


def import_binding(alias: cst.ImportAlias) -> str | None:
    """The name an import alias binds: its `as` name, else `a` of `import a.b`, else the name of
    `from m import name`."""
    bound = alias.asname.name if alias.asname is not None else alias.name
    while isinstance(bound, cst.Attribute):
        bound = bound.value
    return bound.value if isinstance(bound, cst.Name) else None


# -- one body ---------------------------------------------------------------------------------------


class ScopeNodes(cst.CSTVisitor):
    """`nodes` in visiting order and each node's `parents` entry, for one body."""

    def __init__(self) -> None:
        self.nodes: list[cst.CSTNode] = []
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self._stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._stack:
            self.parents[node] = self._stack[-1]
        self.nodes.append(node)
        self._stack.append(node)
        return not (len(self._stack) > 1 and isinstance(node, NESTED_SCOPES))

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()

    @classmethod
    def of(cls, body: cst.CSTNode) -> ScopeNodes:
        """The scope of a function's body (pass `function.body`) or of a whole module."""
        scope = cls()
        traverse(body, scope)
        return scope


class BodyBindings(cst.CSTVisitor):
    """Name -> every value one body assigns it, in source order; nested functions and classes
    (and, with `enter_lambdas=False`, lambdas) are their own scopes and are not read.

    Only assignments bind here: loops, imports and `with ... as` are not values. What the
    default methods do: a plain name is keyed by itself (`key`); `a, b = x, y` pairs up and
    `a, b = f()` gives each name the whole value (`bind_unpacked`); `x += v` adds None, an
    unknown value (`augmented_value`). Codemods with other needs override those three.
    """

    def __init__(self, values: dict[str, list] | None = None, *, enter_lambdas: bool = False) -> None:
        self.values: dict[str, list] = {} if values is None else values
        self.enter_lambdas = enter_lambdas

    @classmethod
    def of(cls, scope: cst.FunctionDef | cst.Module) -> dict[str, list[Value]]:
        """The bindings of a function's body (its parameters are not read) or of a module."""
        visitor = cls()
        for statement in scope.body.body if isinstance(scope, cst.FunctionDef) else scope.body:
            traverse(statement, visitor)
        return visitor.values

    def bind(self, name: str, value) -> None:
        self.values.setdefault(name, []).append(value)

    def key(self, target: cst.BaseExpression) -> str | None:
        """What a binding target is looked up by (None: it binds nothing tracked)."""
        return target.value if isinstance(target, cst.Name) else None

    def bind_target(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        key = self.key(target)
        if key is not None:
            self.bind(key, value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            self.bind_unpacked(target, value)

    def bind_unpacked(self, target: cst.Tuple | cst.List, value: cst.BaseExpression) -> None:
        values = value.elements if isinstance(value, (cst.Tuple, cst.List)) else None
        pairs = len(values) == len(target.elements) if values is not None else False
        for index, element in enumerate(target.elements):
            if isinstance(element.value, cst.Name) and not isinstance(element, cst.StarredElement):
                # `a, b = x.cuda(), y.cuda()` pairs up; `a, b = f(x)` takes what f returns
                self.bind(element.value.value, values[index].value if pairs else value)

    def augmented_value(self, node: cst.AugAssign):
        """The value `target op= value` adds to its target's list."""
        return None

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return self.enter_lambdas

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self.bind_target(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self.bind_target(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        key = self.key(node.target)
        if key is not None:
            self.bind(key, self.augmented_value(node))


# -- the scope tree of a module ---------------------------------------------------------------------


@dataclass(eq=False)
class Scope:
    node: cst.CSTNode
    kind: str  # module | function | lambda | class | comprehension
    parent: Scope | None
    params: dict[str, Value] = field(default_factory=dict)
    """Parameter name -> its default (None when it has none)."""
    bindings: dict[str, list[Value]] = field(default_factory=dict)
    """Name -> the values it is assigned (None for a binding that is not `name = value`)."""
    globals: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)

    def bind(self, name: str, value: Value) -> None:
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


class ScopeCollector(cst.CSTVisitor):
    """Builds `ModuleScopes` in one walk (see `collect_scopes`)."""

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
            traverse(decorator, self)
        for param in [*node.params.posonly_params, *node.params.params, *node.params.kwonly_params]:
            if param.default is not None:
                traverse(param.default, self)
        scope = self._open(node, "function")
        self._params(scope, node.params)
        self.names |= set(scope.params)
        traverse(node.body, self)
        self._close(node)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        scope = self._open(node, "lambda")
        self._params(scope, node.params)
        self.names |= set(scope.params)
        traverse(node.body, self)
        self._close(node)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.scope.bind(node.name.value, None)
        for decorator in node.decorators:
            traverse(decorator, self)
        for arg in [*node.bases, *node.keywords]:
            traverse(arg, self)
        self._open(node, "class")
        traverse(node.body, self)
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
        for name in target_names(node.target):
            self.scope.bind(name, None)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                self.scope.bind(target.target.value, node.value)
            else:
                for name in target_names(target.target):
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
        for name in target_names(node.target):
            self.scope.bind(name, None)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            for name in target_names(node.asname.name):
                self.scope.bind(name, None)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None and isinstance(node.name.name, cst.Name):
            self.scope.bind(node.name.name.value, None)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            name = import_binding(alias)
            if name is not None:
                self.scope.bind(name, None)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            self.star_import = True
            return
        for alias in node.names:
            name = import_binding(alias)
            if name is not None:
                self.scope.bind(name, None)

    def visit_Global(self, node: cst.Global) -> None:
        self.scope.globals |= {n.name.value for n in node.names}

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.scope.nonlocals |= {n.name.value for n in node.names}

    def visit_Del(self, node: cst.Del) -> None:
        for name in target_names(node.target):
            self.scope.bind(name, None)


def collect_scopes(module: cst.Module, walk: Callable[[cst.CSTNode, cst.CSTVisitor], None] | None = None) -> ModuleScopes:
    """Every scope of `module`; with `walk` (a codemod's `visit_lines`), of the statements it
    visits (exact for the names spelled on those statements: see `DeviceCodemod.scopes_for`)."""
    collector = ScopeCollector(module)
    if walk is None:
        traverse(module, collector)
    else:
        walk(module, collector)
    return ModuleScopes(collector.module, collector.by_node, collector.names, collector.star_import)
