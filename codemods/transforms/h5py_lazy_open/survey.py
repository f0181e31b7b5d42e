"""TM201's survey: what a module and each of its Dataset classes do with `h5py.File(...)` handles.

Read-only: the survey looks at the original nodes (through the codemod's name resolution) and
returns frozen records; deciding what to change is `plan.py`'s job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import libcst as cst

from codemods.gates.h5py_lazy_open import H5_FILE
from codemods.helpers.facts import is_dataset_base
from codemods.helpers.bindings import ScopeNodes
from codemods.transforms.h5py_lazy_open.syntax import (
    binds,
    chain_top,
    class_level_names,
    closes,
    drops,
    first_param,
    methods,
    names_in,
    navigates,
    read_chain,
    self_attribute,
    single_target,
)

# Calls that read a value out of what they are given instead of keeping it (`self.n = len(f["x"])`).
COPYING = frozenset(
    {"len", "int", "float", "str", "bool", "list", "tuple", "set", "dict", "sorted", "sum", "min", "max",
     "numpy.array", "numpy.asarray", "numpy.copy", "torch.tensor", "torch.as_tensor", "torch.from_numpy"}
)

# Attributes of an h5py dataset that are values, not handles (`.value` read it all in h5py < 3).
VALUE_ATTRIBUTES = frozenset({"value", "shape", "dtype", "size", "ndim"})


class Resolver(Protocol):
    """What the survey asks of the codemod: the names and text of the module being migrated."""

    def qualified_name(self, expr: cst.BaseExpression) -> str | None: ...

    def code_for(self, node: cst.CSTNode) -> str: ...

    def suppressed(self, node: cst.CSTNode) -> bool: ...


def is_open(resolver: Resolver, node: cst.CSTNode) -> bool:
    """An `h5py.File(...)` call, however the module spells it."""
    return isinstance(node, cst.Call) and resolver.qualified_name(node.func) == H5_FILE


# -- the module ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModuleSurvey:
    """The module's own top-level classes, which of them are datasets, and its open h5py handles."""

    top_level: frozenset[int]  # id() of the module's top-level classes
    dataset_classes: frozenset[str]
    handles: tuple[tuple[str, cst.Assign], ...]  # `name = h5py.File(...)...` at module level, in order


def survey_module(node: cst.Module, resolver: Resolver, dataset_classes: frozenset[str], loader_classes: frozenset[str]) -> ModuleSurvey:
    """`dataset_classes`/`loader_classes`: the repository's (classes deriving from a Dataset, and
    classes handed to a DataLoader), from its facts."""
    top_level = [s for s in node.body if isinstance(s, cst.ClassDef)]
    datasets = {s.name.value for s in top_level if _is_dataset(s, resolver, dataset_classes, loader_classes)}
    handles: dict[str, cst.Assign] = {}
    for statement in node.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign) and is_open(resolver, read_chain(small.value)[0]):
                    for target in small.targets:
                        if isinstance(target.target, cst.Name):
                            handles[target.target.value] = small
    return ModuleSurvey(frozenset(map(id, top_level)), frozenset(datasets), tuple(handles.items()))


def _is_dataset(node: cst.ClassDef, resolver: Resolver, dataset_classes: frozenset[str], loader_classes: frozenset[str]) -> bool:
    name = node.name.value
    if name in dataset_classes:
        return True
    for base in node.bases:
        qualified = resolver.qualified_name(base.value)
        if qualified is not None and is_dataset_base(qualified):
            return True
        if isinstance(base.value, (cst.Name, cst.Attribute)):
            bare = resolver.code_for(base.value).rsplit(".", 1)[-1]
            if bare in dataset_classes:
                return True
    has_getitem = any(isinstance(s, cst.FunctionDef) and s.name.value == "__getitem__" for s in node.body.body)
    return has_getitem and name in loader_classes


# -- one Dataset class ----------------------------------------------------------------------------


@dataclass(frozen=True)
class AttributeFate:
    """What the method that opened a file does with `self.<name>`, the attribute keeping it."""

    name: str
    closed: bool  # `self.<name>.close()` among its own statements (or in a `finally:` of one)
    read_after_close_by: str | None  # when closed: the first other method reading it without opening a file
    dropped: bool  # when closed: `del self.<name>` or `self.<name> = None` there too


@dataclass(frozen=True)
class OpenSurvey:
    """One `h5py.File(...)` call in `__init__` or a method `__init__` calls."""

    call: cst.Call
    self_name: str  # the first parameter of the method holding it
    problem: str | None  # why where the handle ends up cannot be decided (then `kept_in` is empty)
    kept_in: tuple[AttributeFate, ...]  # the attributes of `self` keeping it; empty when none does


@dataclass(frozen=True)
class CloseCall:
    """A `self.<attribute>.close()` statement in a method of the class."""

    statement: cst.Expr
    self_name: str
    attribute: str


@dataclass(frozen=True)
class ClassSurvey:
    name: str
    init: cst.FunctionDef | None
    self_name: str | None  # `__init__`'s first parameter
    opens: tuple[OpenSurvey, ...]  # in `__init__`, then in the methods it calls on `self`
    class_level_names: frozenset[str]
    closes: tuple[CloseCall, ...]
    init_reads: tuple[tuple[str, cst.Attribute], ...]  # every `self.<attribute>` in `__init__`, in order


def survey_class(node: cst.ClassDef, resolver: Resolver) -> ClassSurvey:
    by_name = methods(node)
    init = by_name.get("__init__")
    self_name = first_param(init) if init is not None else None
    opens: list[OpenSurvey] = []
    init_reads: list[tuple[str, cst.Attribute]] = []
    if init is not None and self_name is not None:
        init_scope = ScopeNodes.of(init.body)
        for n in init_scope.nodes:
            attribute = self_attribute(n, self_name) if isinstance(n, cst.Attribute) else None
            if attribute is not None:
                init_reads.append((attribute, n))
        for function in _scopes(init, init_scope, self_name, by_name):
            name = first_param(function)
            if name is not None:
                opens += _opens(function, name, by_name, resolver)
    return ClassSurvey(
        name=node.name.value,
        init=init,
        self_name=self_name,
        opens=tuple(opens),
        class_level_names=frozenset(class_level_names(node)),
        closes=tuple(_close_calls(by_name)),
        init_reads=tuple(init_reads),
    )


def _scopes(init: cst.FunctionDef, scope: ScopeNodes, self_name: str, by_name: dict[str, cst.FunctionDef]) -> list[cst.FunctionDef]:
    """`__init__` and the methods it calls on `self` (one level: `self._open()`)."""
    scopes = [init]
    for n in scope.nodes:
        if (
            isinstance(n, cst.Call)
            and isinstance(n.func, cst.Attribute)
            and isinstance(n.func.value, cst.Name)
            and n.func.value.value == self_name
            and n.func.attr.value in by_name
            and n.func.attr.value != "__init__"
            and by_name[n.func.attr.value] not in scopes
        ):
            scopes.append(by_name[n.func.attr.value])
    return scopes


def _close_calls(by_name: dict[str, cst.FunctionDef]) -> list[CloseCall]:
    found = []
    for function in by_name.values():
        name = first_param(function)
        if name is None:
            continue
        for n in ScopeNodes.of(function.body).nodes:
            if isinstance(n, cst.Expr) and isinstance(n.value, cst.Call) and not n.value.args:
                func = n.value.func
                if isinstance(func, cst.Attribute) and func.attr.value == "close":
                    attribute = self_attribute(func.value, name)
                    if attribute is not None:
                        found.append(CloseCall(n, name, attribute))
    return found


def _opens(function: cst.FunctionDef, self_name: str, by_name: dict[str, cst.FunctionDef], resolver: Resolver) -> list[OpenSurvey]:
    scope = ScopeNodes.of(function.body)
    found = []
    for call in (n for n in scope.nodes if is_open(resolver, n) and not resolver.suppressed(n)):
        kept = _destination(call, scope, self_name, resolver)
        if isinstance(kept, str):
            found.append(OpenSurvey(call, self_name, kept, ()))
            continue
        fates = tuple(_fate(function, attribute, self_name, by_name, resolver) for attribute in kept or ())
        found.append(OpenSurvey(call, self_name, None, fates))
    return found


def _fate(
    function: cst.FunctionDef, attribute: str, self_name: str, by_name: dict[str, cst.FunctionDef], resolver: Resolver
) -> AttributeFate:
    """Whether `function` itself closes `self.<attribute>` on every path (a `self.f.close()`
    among its own statements, or in the `finally:` of one), and if so, whether another method
    reads the closed handle (without opening a file itself) and whether the closed handle is dropped."""
    if not isinstance(function.body, cst.IndentedBlock):
        return AttributeFate(attribute, False, None, False)
    statements = list(function.body.body)
    statements += [line for s in statements if isinstance(s, cst.Try) and s.finalbody for line in s.finalbody.body.body]
    if not any(closes(s, attribute, self_name) for s in statements):
        return AttributeFate(attribute, False, None, False)
    for method in by_name.values():
        name = first_param(method)
        if method is function or name is None:
            continue
        nodes = ScopeNodes.of(method.body).nodes
        reads = [n for n in nodes if isinstance(n, cst.Attribute) and self_attribute(n, name) == attribute]
        if reads and not any(is_open(resolver, n) for n in nodes):
            return AttributeFate(attribute, True, method.name.value, False)
    return AttributeFate(attribute, True, None, any(drops(s, attribute, self_name) for s in statements))


def _destination(call: cst.Call, scope: ScopeNodes, self_name: str, resolver: Resolver) -> list[str] | str | None:
    """The attributes this open ends up in; a reason string if undecidable; None if not kept."""
    top = chain_top(call, scope)
    parent = scope.parents.get(top)
    if isinstance(parent, cst.Assign) and parent.value is top:
        target = single_target(parent)
        attribute = self_attribute(target, self_name) if target is not None else None
        if attribute is not None:
            return [attribute]
        if isinstance(target, cst.Name):
            return _local_destination(target.value, parent, scope, self_name)
    if _kept_on_self(top, scope, self_name, resolver):
        return "this h5py file ends up on `self` in a shape TM201 cannot relocate; open it lazily by hand"
    return None


def _kept_on_self(node: cst.CSTNode, scope: ScopeNodes, self_name: str, resolver: Resolver) -> bool:
    """Whether `node`'s value may be stored on `self` (not just read through a value-making call)."""
    while node in scope.parents:
        parent = scope.parents[node]
        if isinstance(parent, cst.Subscript) and parent.value is node and not navigates(parent):
            return False  # `h5py.File(p)["x"][:]`: the data is kept, not the file
        if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value in VALUE_ATTRIBUTES:
            return False
        if isinstance(parent, cst.Call) and parent.func is not node:
            if resolver.code_for(parent.func) in COPYING or (resolver.qualified_name(parent.func) or "") in COPYING:
                return False
        if isinstance(parent, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
            return any(self_name in {n.value for n in names_in(t)} for t in targets)
        if isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement, cst.WithItem)):
            return False
        node = parent
    return False


def _local_destination(local: str, assign: cst.Assign, scope: ScopeNodes, self_name: str) -> list[str] | str | None:
    """`hf = h5py.File(p)`: fine when every use of `hf` is `self.x = hf` / `hf[...]` / `hf.get(...)`."""
    defining = single_target(assign)
    assignments = [
        n for n in scope.nodes if isinstance(n, cst.Assign) and any(binds(t.target, local) for t in n.targets)
    ]
    uses = [n for n in scope.nodes if isinstance(n, cst.Name) and n.value == local and n is not defining]
    attributes: list[str] = []
    other = closed = False
    for use in uses:
        if any(use is t.target for b in assignments for t in b.targets):
            continue
        top = chain_top(use, scope)
        parent = scope.parents.get(top)
        if top is use and isinstance(parent, cst.Attribute) and parent.attr.value == "close":
            closed = True
        target = single_target(parent) if isinstance(parent, cst.Assign) and parent.value is top else None
        attribute = self_attribute(target, self_name) if target is not None else None
        if attribute is None:
            other = True
        elif attribute not in attributes:
            attributes.append(attribute)
    if not attributes:
        return None  # a local handle that is not kept: closed when it goes away
    if len(assignments) > 1:
        return f"`{local}` is assigned more than once; open the h5py file lazily by hand"
    if closed:
        return (
            f"`{self_name}.{attributes[0]}` keeps a group or dataset of `{local}`, which is closed here, so"
            " reading it later fails: read its values (`[:]`) or open the h5py file lazily by hand"
        )
    if other:
        return (
            f"`{local}` (an h5py file) is kept on `self` and also read directly here:"
            " read metadata in a `with h5py.File(...)` block and open the file lazily by hand"
        )
    return attributes
