"""TM401: Python and NumPy removals that stop old ML code from importing at all."""

from __future__ import annotations

import libcst as cst

from codemods.gates.python_compat import replacement
from codemods.helpers import from_imports
from codemods.helpers.references import ReferenceCodemod, parenthesized

BUILTINS = {"float", "int", "object", "str", "complex", "issubclass"}


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

    ## Why is this bad?
    Python 3.10 removed the ABC aliases from `collections`; NumPy 1.24 removed `np.float` & co.
    and NumPy 2.0 removed `np.Inf`, `np.NaN`, `np.float_` and the rest. Old projects fail at
    import time (`AttributeError: module 'numpy' has no attribute 'Inf'`) before any test runs.

    ## Example
    ```python
    import collections

    import numpy as np

    if isinstance(x, collections.Mapping): best = np.Inf
    ```

    ## Use instead
    ```python
    import collections

    import numpy as np
    import collections.abc

    if isinstance(x, collections.abc.Mapping): best = np.inf
    ```

    ## Fix safety
    Safe: each name was an alias of its replacement. Out of scope (no exact mechanical
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

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
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
