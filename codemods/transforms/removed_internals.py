"""TM008: torch internals that old code imported and that are gone or changed meaning."""

from __future__ import annotations

import libcst as cst

from codemods.gates.removed_internals import TYPE_ASSERTS, table
from codemods.helpers import from_imports
from codemods.helpers.names import dotted
from codemods.helpers.placement import after_import_block, insert_once
from codemods.helpers.references import ReferenceCodemod
from codemods.helpers.spelling import ImportForm, head, import_forms, retire

HELPER = "zero_gradients"
HELPER_TEMPLATE = '''
def {name}(x):
    # torch.autograd.gradcheck.zero_gradients, which torch no longer has (added by torch-migrate)
    if isinstance(x, {torch}.Tensor):
        if x.grad is not None:
            x.grad.detach_()
            x.grad.zero_()
    elif isinstance(x, {abc}.Iterable):
        for elem in x:
            {name}(elem)
'''


class RemovedInternals(ReferenceCodemod):
    """Replace torch internals that are gone, or that changed meaning, with their public forms.

    ## What it does
    Table-driven (`codemods/data/removed_internals.json`):
    - `torch.optim.lr_scheduler._LRScheduler` -> `LRScheduler`;
    - private DataLoader paths (`torch.utils.data.dataloader.default_collate`,
      `..._utils.collate.default_convert`, `dataloader.get_worker_info`) -> `torch.utils.data.*`;
      `torch._utils._accumulate` -> `itertools.accumulate`; torchvision's
      `models.utils.load_state_dict_from_url` -> `torch.hub.load_state_dict_from_url`;
    - `torch.autograd.gradcheck.zero_gradients(x)` -> a `zero_gradients` function with the same
      body, written once into the module;
    - type-name tests from the 0.3 era, when tensors had one class per type:
      `x.__class__.__name__ == 'FloatTensor'` / `type(x).__name__ in ['FloatTensor', 'DoubleTensor']`
      -> `isinstance(x, torch.Tensor) and x.dtype == torch.float32` (`... in (torch.float32, torch.float64)`).
    Other gone DataLoader internals (`numpy_type_map`, `_DataLoaderIter`, `_use_shared_memory`,
    ...) and string tests of `x.type()` are findings.

    ## Why is this bad?
    The private paths raise `ImportError` today. `_LRScheduler` still exists, but since torch 2.0
    no built-in scheduler derives from it: `issubclass(StepLR, _LRScheduler)` is False, so code
    that discovers schedulers that way (Poutyne 0.5) silently finds none. Since torch 0.4 every
    tensor's class is `Tensor`, so `x.__class__.__name__ == 'FloatTensor'` is always False.

    ## Example
    ```python
    import torch
    from torch.optim.lr_scheduler import _LRScheduler

    if x.__class__.__name__ == 'FloatTensor': ...
    ```

    ## Use instead
    ```python
    import torch
    from torch.optim.lr_scheduler import LRScheduler

    if isinstance(x, torch.Tensor) and x.dtype == torch.float32: ...
    ```

    ## Fix safety
    Per entry (see the table); all current entries are safe. An `isinstance`/`issubclass` test
    against `_LRScheduler` is listed for review: `LRScheduler` also matches `ReduceLROnPlateau`,
    which `_LRScheduler` never did. Type-name tests are rewritten only when the tested object is a
    plain name (evaluated twice) and every string is a tensor type name; `x.type() == 'torch.FloatTensor'`
    (also as `self.assertEqual(x.type(), 'torch.FloatTensor')`, `assertIn`, `assertNotEqual`...)
    still works but depends on the device, so it is a finding with the dtype form suggested, each
    dtype named once. A `.type()` compared with strings that are no torch type names is the
    user's own method and is left alone.

    ## References
    - https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate
    - https://pytorch.org/docs/stable/data.html#torch.utils.data.default_collate
    """

    PRUNE = True  # its sites are the removed names on trigger lines

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._helper_needed: str | None = None
        self._bare_tests: set[int] = set()  # ids of expressions that need no parentheses
        self._forms: dict[str, ImportForm] | None = None  # the module's imports, read on first need

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        self._tree, self._forms = tree, None
        return super().transform_module_impl(tree)

    def _retire(self, original: cst.BaseExpression) -> None:
        """`dl.default_convert` -> `torch.utils.data.default_convert` may be the last use of
        `import torch.utils.data.dataloader as dl`: queue its removal (kept while still used)."""
        if not isinstance(original, cst.Attribute):
            return  # a from-imported name: its import line is rewritten in place
        if self._forms is None:
            self._forms = import_forms(self._tree)
        retire(self, self._forms, head(original))

    def visit_If(self, node: cst.If) -> None:
        self._bare_tests.add(id(node.test))

    def visit_While(self, node: cst.While) -> None:
        self._bare_tests.add(id(node.test))

    def visit_Assert(self, node: cst.Assert) -> None:
        self._bare_tests.add(id(node.test))

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self._bare_tests.add(id(node.value))

    def visit_Assign(self, node: cst.Assign) -> None:
        self._bare_tests.add(id(node.value))

    # -- names -----------------------------------------------------------------------------

    def _taken(self, name: str) -> bool:
        return name in self.imports.aliases or name in self.imports.shadowed

    def replace_reference(self, qualified, original, updated):
        t = table()
        if qualified in t["removed"]:
            if isinstance(original, cst.Attribute):  # a from-import is reported at the import
                self.finding(original, f"`{qualified}`: {t['removed'][qualified]}")
            return None
        if qualified in t["helpers"]:
            return self._helper_reference(original)
        entry = t["renames"].get(qualified)
        if entry is None:
            return None
        if not self.available(entry["to"]):
            if isinstance(original, cst.Attribute):  # a from-import is reported at the import
                self.hold_back(original, entry["to"])
            return None
        module, _, name = entry["to"].rpartition(".")
        if isinstance(original, cst.Name):
            # From `from M import name`: the import line is rewritten; rename if it renamed.
            old_name = qualified.rsplit(".", 1)[1]
            if original.value != old_name or name == old_name or self._taken(name):
                return None
            if self.imports.imported_here(original.value) != qualified or original.value in self.interface:
                return None  # a star import or re-export binds it, or other files take it: its import stays
            return cst.Name(name)
        old_module = qualified.rpartition(".")[0]
        if self.qualified_name(updated.value) == old_module and old_module == module:
            return updated.with_changes(attr=cst.Name(name))
        spelled = self.module_spelling(module)
        if spelled is None:
            self.finding(original, f"`{qualified}` moved to `{entry['to']}`, whose module name is taken here")
            return None
        self._retire(original)
        return cst.parse_expression(f"{spelled}.{name}")

    def review_for(self, qualified: str, original: cst.CSTNode) -> str | None:
        entry = table()["renames"].get(qualified)
        if entry and id(original) in self.type_tests:
            return entry.get("review_in_type_tests")
        return None

    def _helper_free(self) -> bool:
        """Whether the module-level name `zero_gradients` is free for the generated helper."""
        bound = self.imports.aliases.get(HELPER)
        return HELPER not in self.imports.shadowed and bound in (None, *table()["helpers"])

    def _helper_reference(self, original: cst.BaseExpression) -> cst.BaseExpression | None:
        if not self._helper_free():
            if isinstance(original, cst.Attribute):  # a from-import is reported at the import
                self.finding(original, "`zero_gradients` is gone from torch; inline it (the name is taken here)")
            return None
        self._helper_needed = HELPER
        if isinstance(original, cst.Name) and original.value == HELPER:
            return None  # the helper takes the imported name's place
        self._retire(original)
        return cst.Name(HELPER)

    # -- imports ---------------------------------------------------------------------------

    def _decide(self, module: str, name: str, local: str) -> from_imports.Move | None:
        qualified = f"{module}.{name}"
        t = table()
        if qualified in t["helpers"]:
            return from_imports.Move(None) if self._helper_free() else None
        entry = t["renames"].get(qualified)
        if entry is None or not self.available(entry["to"]):
            return None
        new_module, _, new_name = entry["to"].rpartition(".")
        return from_imports.Move(new_module, new_name)

    def leave_SimpleStatementLine(self, original_node, updated_node):
        moved = from_imports.move_names(updated_node, self._decide, taken=self._taken, interface=self.interface)
        if not moved.changed:
            return updated_node
        return self.rewrite(original_node, updated_node, from_imports.replace_line(moved))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if node.module is None or node.relative or isinstance(node.names, cst.ImportStar):
            return False
        module = dotted(node.module)
        for alias in node.names:
            qualified = f"{module}.{dotted(alias.name)}"
            if qualified in table()["removed"]:
                self.finding(node, f"`{qualified}`: {table()['removed'][qualified]}")
            entry = table()["renames"].get(qualified)
            if entry is not None and not self.available(entry["to"]):
                self.hold_back(node, entry["to"])
            if qualified in table()["helpers"] and not self._helper_free():
                self.finding(node, "`zero_gradients` is gone from torch; inline it (the name is taken here)")
        return False

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if self._helper_needed is None:
            return updated_node
        torch = self.module_spelling("torch")
        abc = self.module_spelling("collections.abc")
        if torch is None or abc is None:
            self.finding(original_node, "`zero_gradients` is gone from torch; inline it by hand")
            return updated_node
        helper = cst.parse_module(HELPER_TEMPLATE.format(name=self._helper_needed, torch=torch, abc=abc)).body[0]
        helper = helper.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
        result = insert_once(updated_node, self._helper_needed, helper, after_import_block(updated_node.body))
        if result is not updated_node:
            self.rewrites += 1
        return result

    # -- type-name tests -------------------------------------------------------------------

    def leave_Comparison(self, original_node: cst.Comparison, updated_node: cst.Comparison) -> cst.BaseExpression:
        if len(original_node.comparisons) != 1:
            return updated_node
        target = original_node.comparisons[0]
        left, right = original_node.left, target.comparator
        op = target.operator
        if isinstance(op, (cst.Equal, cst.NotEqual)) and isinstance(left, cst.SimpleString):
            left, right = right, left  # `'FloatTensor' == x.__class__.__name__`
        subject = _class_name_subject(left)
        if subject is None:
            if _type_call_subject(left) is not None:
                positive = not isinstance(op, (cst.NotEqual, cst.NotIn))
                self._type_string_test(original_node, _type_call_subject(left), right, positive)
            return updated_node
        names = _string_values(right)
        if names is None:
            return updated_node
        dtypes = table()["tensor_type_names"]
        if not any(n in dtypes for n in names):
            return updated_node  # a test of the user's own classes
        if not all(n in dtypes for n in names):
            self.finding(original_node, "type-name test with names that are not tensor types: intent unclear, check it by hand")
            return updated_node
        if dotted(subject) is None:
            self.finding(original_node, "type-name test on an expression with effects: use `isinstance(x, torch.Tensor) and x.dtype == ...`")
            return updated_node
        torch = self.module_spelling("torch")
        if torch is None:
            return updated_node
        x = self.code_for(subject)
        one = isinstance(right, cst.SimpleString)
        if isinstance(op, (cst.Equal, cst.NotEqual)) and one or isinstance(op, (cst.In, cst.NotIn)) and not one:
            positive = isinstance(op, (cst.Equal, cst.In))
        else:
            return updated_node
        dtype_test = _dtype_test(x, [f"{torch}.{dtypes[n]}" for n in names], positive)
        text = (
            f"(isinstance({x}, {torch}.Tensor) and {dtype_test})"
            if positive
            else f"(not isinstance({x}, {torch}.Tensor) or {dtype_test})"
        )
        new = cst.parse_expression(text)
        if id(original_node) in self._bare_tests and not original_node.lpar:
            new = new.with_changes(lpar=[], rpar=[])
        else:
            new = new.with_changes(lpar=updated_node.lpar or new.lpar, rpar=updated_node.rpar or new.rpar)
        return self.rewrite(original_node, updated_node, new)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        """`self.assertEqual(x.type(), 'torch.FloatTensor')` and its unittest siblings."""
        func = original_node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in _TYPE_ASSERTS or len(original_node.args) < 2:
            return updated_node
        first, second = (a.value for a in original_node.args[:2])
        if _type_call_subject(first) is None and func.attr.value in ("assertEqual", "assertEquals", "assertNotEqual"):
            first, second = second, first
        subject = _type_call_subject(first)
        if subject is not None and not any(a.star for a in original_node.args[:2]):
            self._type_string_test(original_node, subject, second, func.attr.value in _TYPE_ASSERTS_POSITIVE, assertion=func)
        return updated_node

    def _type_string_test(
        self,
        node: cst.CSTNode,
        subject: cst.BaseExpression,
        strings: cst.BaseExpression,
        positive: bool,
        assertion: cst.Attribute | None = None,
    ) -> None:
        """A finding for a test of `subject.type()` against tensor type strings (and nothing for
        other strings: `layer.type() == 'conv'` is the user's own method)."""
        names = _string_values(strings)
        if not names:
            return
        dtypes = table()["tensor_type_names"]
        shorts = [n.rsplit(".", 1)[-1] for n in names]
        if not any(n.startswith("torch.") and short in dtypes for n, short in zip(names, shorts)):
            return
        suggestion = None
        if all(n.startswith("torch.") and short in dtypes for n, short in zip(names, shorts)):
            x, kinds = self.code_for(subject), [f"torch.{dtypes[short]}" for short in shorts]
            if assertion is None:
                suggestion = _dtype_test(x, kinds, positive)
            else:
                kinds = list(dict.fromkeys(kinds))
                method = ("assertEqual" if positive else "assertNotEqual") if len(kinds) == 1 else ("assertIn" if positive else "assertNotIn")
                expected = kinds[0] if len(kinds) == 1 else f"({', '.join(kinds)})"
                suggestion = f"{self.code_for(assertion.value)}.{method}({x}.dtype, {expected})"
        self.finding(node, "`.type()` string test depends on the device; test the dtype instead", suggestion=suggestion)


_TYPE_ASSERTS_POSITIVE = frozenset({"assertEqual", "assertEquals", "assertIn"})
_TYPE_ASSERTS = TYPE_ASSERTS  # the positive ones, assertNotEqual and assertNotIn (the AST gate reads them too)


def _dtype_test(x: str, kinds: list[str], positive: bool) -> str:
    """`x.dtype == k` for one dtype, `x.dtype in (k1, k2)` for several, each named once."""
    kinds = list(dict.fromkeys(kinds))  # 'LongTensor' and 'cuda.LongTensor' are one dtype
    if len(kinds) == 1:
        return f"{x}.dtype {'==' if positive else '!='} {kinds[0]}"
    return f"{x}.dtype {'in' if positive else 'not in'} ({', '.join(kinds)})"


def _class_name_subject(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """`x` of `x.__class__.__name__` or `type(x).__name__`."""
    if not isinstance(expr, cst.Attribute) or expr.attr.value != "__name__":
        return None
    inner = expr.value
    if isinstance(inner, cst.Attribute) and inner.attr.value == "__class__":
        return inner.value
    if (
        isinstance(inner, cst.Call)
        and isinstance(inner.func, cst.Name)
        and inner.func.value == "type"
        and len(inner.args) == 1
        and inner.args[0].keyword is None
        and not inner.args[0].star
    ):
        return inner.args[0].value
    return None


def _type_call_subject(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """`x` of `x.type()`."""
    if isinstance(expr, cst.Call) and not expr.args and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "type":
        return expr.func.value
    return None


def _string_values(expr: cst.BaseExpression) -> list[str] | None:
    """The strings of a string literal or a list/tuple/set of them (None otherwise)."""
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return [value] if isinstance(value, str) else None
    if isinstance(expr, (cst.List, cst.Tuple, cst.Set)) and expr.elements:
        values = []
        for element in expr.elements:
            if not isinstance(element, cst.Element) or not isinstance(element.value, cst.SimpleString):
                return None
            value = element.value.evaluated_value
            if not isinstance(value, str):
                return None
            values.append(value)
        return values
    return None
