"""TM401: Python and NumPy removals that stop old ML code from importing at all."""

from __future__ import annotations

import libcst as cst

from codemods.base import traverse
from codemods.gates.python_compat import ITERATOR_NAMES, replacement
from codemods.helpers import from_imports
from codemods.helpers.bindings import Scope, ScopeCollector
from codemods.helpers.references import ReferenceCodemod, parenthesized

BUILTINS = {"float", "int", "object", "str", "complex", "issubclass"}


def is_next_call(node: cst.Call) -> bool:
    """`x.next()`: Python 2's iterator protocol."""
    return isinstance(node.func, cst.Attribute) and node.func.attr.value == "next" and not node.args


class _NextSites(ScopeCollector):
    """The module's scopes, the scope of each `x.next()` call, and whether a class defines `next`."""

    def __init__(self, module: cst.Module) -> None:
        super().__init__(module)
        self.sites: dict[int, Scope] = {}
        self.own_next = False  # a class of the file defines `next`: its instances may be the receivers

    def visit_Call(self, node: cst.Call) -> None:
        if is_next_call(node):
            self.sites[id(node)] = self.scope

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if node.name.value == "next" and self.scope.kind == "class":
            self.own_next = True
        return super().visit_FunctionDef(node)


def _bound_values(scope: Scope, name: str, scopes: list[Scope]) -> list | None:
    """The values `name` is bound to where `scope` reads it (None where one is not known: a
    parameter, `nonlocal`, a name the file never binds); a module-level name also takes what each
    function declaring it `global` assigns it."""
    module = scopes[0]
    for owner in scope.visible_chain():
        if name in owner.nonlocals:
            return None
        if name in owner.globals or owner is module:
            values = module.bindings.get(name, []) + [v for s in scopes if name in s.globals for v in s.bindings.get(name, [])]
            return None if name in module.params or not values else values
        if owner.binds(name):
            return None if name in owner.params else list(owner.bindings[name])
    return None


class PythonCompat(ReferenceCodemod):
    """Move `collections.Mapping` & co. to `collections.abc`; replace NumPy's removed aliases.

    ## What it does
    - `collections.Mapping` (and the other 24 ABCs `collections` re-exported) ->
      `collections.abc.Mapping`; `from collections import Mapping, OrderedDict` ->
      `from collections import OrderedDict` + `from collections.abc import Mapping`, in place.
    - NumPy aliases removed in 1.24/2.0 -> what they were aliases of: `np.Inf`/`np.Infinity`/
      `np.infty`/`np.PINF` -> `np.inf`, `np.NINF` -> `-np.inf`, `np.NaN`/`np.NAN` -> `np.nan`,
      `np.float`/`np.int`/`np.object`/`np.str`/`np.complex` -> the builtins, `np.float_` ->
      `np.float64`, `np.complex_`/`np.cfloat` -> `np.complex128`, `np.string_` -> `np.bytes_`,
      `np.unicode_` -> `np.str_`, `np.product`/`np.cumproduct`/`np.sometrue`/`np.alltrue`/
      `np.round_` -> `np.prod`/`np.cumprod`/`np.any`/`np.all`/`np.round`, `np.mat` ->
      `np.asmatrix`, `np.asscalar(a)` -> `a.item()`, and the `int0`/`bool8`/... aliases.
      `from numpy import NaN` -> `from numpy import nan as NaN`.
    - Python 2's iterator method: `iter(loader).next()` -> `next(iter(loader))`, and `it.next()`
      where every binding of `it` the lookup finds is `iter(...)`; a `.next()` on a receiver
      named like an iterator or a loader (`val_iter`, `self.train_loader_it`) that is bound some
      other way (a parameter, an attribute) is reported, unless the file defines a `next` method.

    ## Why is this bad?
    Python 3.10 removed the ABC aliases from `collections`; NumPy 1.24 removed `np.float` & co.
    and NumPy 2.0 removed `np.Inf`, `np.NaN`, `np.float_` and the rest. Old projects fail at
    import time (`AttributeError: module 'numpy' has no attribute 'Inf'`) before any test runs.
    The DataLoader iterator kept a `next = __next__` alias for Python 2 until torch 1.13; since
    then `iter(loader).next()` raises `AttributeError: '_SingleProcessDataLoaderIter' object
    has no attribute 'next'`.

    ## Example
    ```python
    import collections

    import numpy as np

    if isinstance(x, collections.Mapping): best = np.Inf
    images, labels = iter(loader).next()
    ```

    ## Use instead
    ```python
    import collections

    import numpy as np
    import collections.abc

    if isinstance(x, collections.abc.Mapping): best = np.inf
    images, labels = next(iter(loader))
    ```

    ## Fix safety
    Safe: each name was an alias of its replacement, and `next(it)` calls the `__next__` that
    an iterator's `.next()` was an alias of (only where `iter`, `next` and the receiver's
    bindings are the file's to see: a parameter is reported, not rewritten). Out of scope (no exact mechanical
    replacement, or not removed): `np.bool`/`np.long` (NumPy 2 defines them again, with new
    meanings), `np.msort`, `np.asfarray`, `np.find_common_type`, `np.cast`, `np.trapz`,
    `np.in1d`, `np.row_stack`, NumPy's C-API and `np.lib` moves, `imp`, `distutils`,
    `asyncio.async`, `inspect.getargspec`, `fractions.gcd`.

    ## References
    - https://numpy.org/devdocs/numpy_2_0_migration_guide.html
    - https://docs.python.org/3/whatsnew/3.10.html#removed
    """

    PRUNE = True  # its sites are the removed aliases on trigger lines


    def replace_reference(self, qualified, original, updated):
        if not isinstance(original, cst.Attribute):
            return None  # a name from `from M import X`: the import statement is fixed instead
        target = replacement(qualified)
        if target is None:
            return None
        negative = target.startswith("-")
        target = target.lstrip("-")
        if "." in target:
            module, _, name = target.rpartition(".")
            spelled = self.module_spelling(module)
            if spelled is None:
                self.finding(original, f"`{self.code_for(original)}` is gone; use `{target}` (its module name is taken here)")
                return None
            new = cst.parse_expression(f"{spelled}.{name}")
        else:
            new = cst.parse_expression(target)
        if negative:
            new = parenthesized(cst.UnaryOperation(operator=cst.Minus(), expression=new))
        return new

    def visit_Module(self, node: cst.Module) -> None:
        self._module = node
        self._next_sites: _NextSites | None = None  # made at the first `x.next()`

    def _iterator_next(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        """`it.next()` -> `next(it)` where `it` is provably `iter(...)`; reported where it is
        plausibly a DataLoader iterator (its name says so) bound some other way."""
        if self._next_sites is None:
            self._next_sites = _NextSites(self._module)
            traverse(self._module, self._next_sites)
        sites = self._next_sites
        scope = sites.sites.get(id(original))
        if scope is None:
            return updated
        scopes = [sites.module, *(s for s in sites.by_node.values() if s is not sites.module)]
        receiver = original.func.value
        shown = self.code_for(receiver)
        # (a class body's `def next` is no name the module or a function sees)
        builtins = not sites.star_import and not any(s.kind != "class" and (s.binds("iter") or s.binds("next")) for s in scopes)
        if builtins and self._is_iter_call(receiver, scope, scopes):
            value = updated.func.value.with_changes(lpar=[], rpar=[])  # `(it).next()`: the call's parentheses are enough
            new = cst.Call(func=cst.Name("next"), args=[cst.Arg(value)], lpar=updated.lpar, rpar=updated.rpar)
            return self.rewrite(original, updated, new)
        if ITERATOR_NAMES.search(shown.rsplit(".", 1)[-1]) and not sites.own_next:
            self.finding(
                original,
                f"`{shown}.next()`: torch 1.13 removed the Python 2 `.next()` of DataLoader iterators"
                f" (AttributeError); `{shown}` is not shown to be `iter(...)` here",
                suggestion=f"next({shown})",
            )
        return updated

    def _is_iter_call(self, expr: cst.BaseExpression | None, scope: Scope, scopes: list[Scope]) -> bool:
        """`iter(x)`, or a name every binding of which is one (the caller has checked that `iter`
        is the builtin)."""
        if isinstance(expr, cst.Name):
            values = _bound_values(scope, expr.value, scopes)
            return bool(values) and all(not isinstance(v, cst.Name) and self._is_iter_call(v, scope, scopes) for v in values)
        return (
            isinstance(expr, cst.Call)
            and isinstance(expr.func, cst.Name)
            and expr.func.value == "iter"
            and len(expr.args) == 1
            and not expr.args[0].star
            and expr.args[0].keyword is None
        )

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if is_next_call(original_node):
            return self._iterator_next(original_node, updated_node)
        if self.qualified_name(original_node.func) != "numpy.asscalar":
            return updated_node
        args = updated_node.args
        if len(args) != 1 or args[0].keyword is not None or args[0].star:
            self.finding(original_node, "`np.asscalar` was removed in NumPy 1.23; use `a.item()`")
            return updated_node
        value = parenthesized(args[0].value.with_changes(lpar=[], rpar=[]) if args[0].value.lpar else args[0].value)
        new = cst.Call(func=cst.Attribute(value=value, attr=cst.Name("item")))
        return self.rewrite(original_node, updated_node, new.with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar))

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine):
        moved = from_imports.move_names(updated_node, self._decide, interface=self.interface)
        if not moved.changed:
            return updated_node
        return self.rewrite(original_node, updated_node, from_imports.replace_line(moved))

    def _decide(self, module: str, name: str, local: str) -> from_imports.Move | None:
        target = replacement(f"{module}.{name}")
        if target is None:
            return None
        if target in BUILTINS:
            # Without the import the local name is the builtin it aliased.
            return from_imports.Move(None) if local == target else from_imports.Move("builtins", target)
        if target.startswith("-") or "." not in target:
            return None  # `from numpy import NINF`: reported by `visit_ImportFrom`
        new_module, _, new_name = target.rpartition(".")
        return from_imports.Move(new_module, new_name)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if node.module is None or node.relative or isinstance(node.names, cst.ImportStar):
            return False
        module = self.code_for(node.module)
        for alias in node.names:
            name = self.code_for(alias.name)
            target = replacement(f"{module}.{name}")
            if target is not None and (target.startswith("-") or target == "0.0"):
                self.finding(node, f"`{module}.{name}` is gone; define `{name} = {target}` by hand")
        return False
