"""What TM003 knows of a module's names before deciding a `.data[0]`: every scope's bindings, each
value with the environment it was assigned in, the classes with their attributes and bases, and
the parameters with the calls that fill them (`Bindings`, one walk of the module)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Union

import libcst as cst

from codemods.helpers.bindings import import_binding


@dataclass(frozen=True)
class Param:
    """A function's parameter: what it holds is what every call site in the file passes."""

    function: cst.FunctionDef
    name: str
    index: int | None  # its position among the positional parameters (self included); None: keyword-only


@dataclass
class Scope:
    """Simple bindings of one function (or the module): name -> assigned values, each with the
    environment it was assigned in; a None value is opaque."""

    names: dict[str, list[tuple[Value, Env]]] = field(default_factory=dict)
    is_class: bool = False  # a class body: its names are not visible from its methods

    def bind(self, name: str, value: Value, env: Env) -> None:
        self.names.setdefault(name, []).append((value, env))


@dataclass
class ClassFacts:
    """One class of the file: its bases (as spelled), its methods, and its methods' `self.<attr>`
    assignments."""

    name: str
    bases: tuple[str, ...]
    methods: dict[str, cst.FunctionDef] = field(default_factory=dict)
    attributes: Scope = field(default_factory=Scope)


@dataclass(frozen=True)
class Env:
    """Where an expression is evaluated: the scopes it sees (innermost last) and the class its
    `self` is an instance of."""

    scopes: tuple[Scope, ...]
    cls: ClassFacts | None = None


Value = Union[cst.BaseExpression, Param, None]


class Bindings(cst.CSTVisitor):
    """First pass: what each function, the module and each class's `self.x` are assigned, where
    each function is called from, and how often each name is used other than as a callee.

    Not helpers/bindings.py's `collect_scopes`, on purpose: a value is kept with the environment
    it was assigned in (to follow it there), a parameter is bound to the calls that pass it, and a
    tuple unpacking, a loop, `:=` or a multiple assignment binds an opaque value."""

    def __init__(self) -> None:
        self.module = Scope()
        self.envs: dict[int, Env] = {}  # FunctionDef / ClassDef id -> the env of its body
        self.classes: dict[str, list[ClassFacts]] = {}  # by name
        self.owner: dict[int, ClassFacts] = {}  # FunctionDef id -> the class it is a method of
        self.defs: Counter[str] = Counter()  # functions and classes defined, by name
        self.calls: list[tuple[cst.Call, Env]] = []
        self.name_uses: Counter[str] = Counter()  # Names other than callees, bases and definitions
        self.attribute_uses: Counter[str] = Counter()  # `x.attr` other than a callee
        self.foreign_attributes: set[str] = set()  # attributes assigned on something not `self`
        self._env = Env((self.module,))
        self._stack: list[tuple[Env, ClassFacts | None]] = []
        self._class: ClassFacts | None = None  # the class whose body is being read (not its methods')
        self._skip: set[int] = set()  # Name/Attribute nodes that are callees, bases or def names

    def _push(self, env: Env, cls: ClassFacts | None) -> None:
        self._stack.append((self._env, self._class))
        self._env, self._class = env, cls

    def _pop(self) -> None:
        self._env, self._class = self._stack.pop()

    def _bind(self, name: str, value: Value) -> None:
        self._env.scopes[-1].bind(name, value, self._env)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._bind(node.name.value, None)
        self.defs[node.name.value] += 1
        self._skip.add(id(node.name))
        bases = []
        for base in node.bases:
            if isinstance(base.value, cst.Name) and base.keyword is None:
                bases.append(base.value.value)
                self._skip.add(id(base.value))  # naming a class as a base does not let it escape
        cls = ClassFacts(node.name.value, tuple(bases))
        self.classes.setdefault(cls.name, []).append(cls)
        env = Env((*self._env.scopes, Scope(is_class=True)), self._env.cls)
        self.envs[id(node)] = env
        self._push(env, cls)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._bind(node.name.value, None)
        self.defs[node.name.value] += 1
        self._skip.add(id(node.name))
        cls = self._class
        if cls is not None:
            cls.methods.setdefault(node.name.value, node)
            self.owner[id(node)] = cls
        scope = Scope()
        visible = tuple(s for s in self._env.scopes if not s.is_class)
        env = Env((*visible, scope), cls if cls is not None else self._env.cls)
        self.envs[id(node)] = env
        params = node.params
        for index, param in enumerate((*params.posonly_params, *params.params)):
            scope.bind(param.name.value, Param(node, param.name.value, index), env)
        for param in params.kwonly_params:
            scope.bind(param.name.value, Param(node, param.name.value, None), env)
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                scope.bind(star.name.value, None, env)
        self._push(env, None)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        # Its parameters are its own: opaque inside it, and its calls' arguments are read there.
        scope = Scope()
        env = Env((*self._env.scopes, scope), self._env.cls)
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            scope.bind(param.name.value, None, env)
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                scope.bind(star.name.value, None, env)
        self.envs[id(node)] = env
        self._push(env, self._class)

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self._pop()

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._target(node.target, None)  # opaque in the whole scope: never read the outer binding

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append((node, self._env))
        self._skip.add(id(node.func))

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self._skip:
            self.name_uses[node.value] += 1

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._skip.add(id(node.attr))  # `x.train` is no use of a name `train`
        if id(node) not in self._skip:
            self.attribute_uses[node.attr.value] += 1

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._skip.add(id(node.keyword))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._target(target.target, node.value if len(node.targets) == 1 else None)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._target(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        # `loss += other`: as scalar as `loss` and `other` both are.
        if isinstance(node.target, cst.Name):
            self._bind(node.target.value, cst.BinaryOperation(node.target, cst.Add(), node.value))
        else:
            self._target(node.target, None)

    def visit_For(self, node: cst.For) -> None:
        self._target(node.target, None)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._target(node.asname.name, None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._target(node.target, None)

    def visit_Global(self, node: cst.Global) -> None:
        for item in node.names:
            self._bind(item.name.value, None)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        for item in node.names:
            self._bind(item.name.value, None)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        bound = import_binding(node)
        if bound is not None:
            self._bind(bound, None)

    def visit_Del(self, node: cst.Del) -> None:
        self._target(node.target, None)

    def _target(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if isinstance(target, cst.Name):
            self._bind(target.value, value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._target(element.value, None)
        elif isinstance(target, cst.StarredElement):
            self._target(target.value, None)
        elif isinstance(target, cst.Attribute):
            if isinstance(target.value, cst.Name) and target.value.value == "self" and self._env.cls is not None:
                self._env.cls.attributes.bind(target.attr.value, value, self._env)
            else:  # `trainer.criterion = ...`: any class's attribute of that name may hold it
                self.foreign_attributes.add(target.attr.value)
