"""TM008 removed-internals: its declaration (SPEC), trigger regexes and AST gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

import ast
from functools import lru_cache

from codemods.gates import Gate, Safety, Spec, Stage, data_table
from codemods.gates.python_compat import _attribute_or_import
from codemods.helpers.scan import Scan


@lru_cache(maxsize=None)
def table() -> dict:
    return data_table("removed_internals.json")


def triggers() -> tuple[str, ...]:
    t = table()
    names = {k.rsplit(".", 1)[1] for part in ("renames", "helpers", "removed") for k in t[part]}
    return (
        *_attribute_or_import("|".join(sorted(names))),
        # Type-name tests: only a comparison of the name can be one.
        r"__class__\s*\.\s*__name__\s*(?:[!=]=|(?:not\s+)?in\b)",
        r"type\([^()]*\)\s*\.\s*__name__\s*(?:[!=]=|(?:not\s+)?in\b)",
        r"\.type\(\)",
    )


@lru_cache(maxsize=None)
def _names() -> frozenset[str]:
    """Every qualified name the table acts on (renamed, replaced by a helper, or reported)."""
    t = table()
    return frozenset(k for part in ("renames", "helpers", "removed") for k in t[part])


# unittest's assertions the codemod reads a `.type()` string test in (as transforms/removed_internals.py)
TYPE_ASSERTS = frozenset({"assertEqual", "assertEquals", "assertIn", "assertNotEqual", "assertNotIn"})


def _strings(expr: ast.expr) -> list[str]:
    """The codemod's `_string_values`: the strings of a string literal or of a list, tuple or set
    of them ([] otherwise; an implicitly concatenated literal counts, a superset)."""
    if isinstance(expr, ast.Constant):
        return [expr.value] if isinstance(expr.value, str) else []
    if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
        values = [e.value for e in expr.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return values if len(values) == len(expr.elts) else []
    return []


def _is_class_name(expr: ast.expr) -> bool:
    """The codemod's `_class_name_subject`: `x.__class__.__name__` or `type(x).__name__`."""
    if not isinstance(expr, ast.Attribute) or expr.attr != "__name__":
        return False
    inner = expr.value
    if isinstance(inner, ast.Attribute) and inner.attr == "__class__":
        return True
    return (
        isinstance(inner, ast.Call)
        and isinstance(inner.func, ast.Name)
        and inner.func.id == "type"
        and len(inner.args) == 1
        and not inner.keywords
        and not isinstance(inner.args[0], ast.Starred)
    )


def _is_type_call(expr: ast.expr) -> bool:
    """The codemod's `_type_call_subject`: `x.type()`."""
    return isinstance(expr, ast.Call) and not expr.args and not expr.keywords and isinstance(expr.func, ast.Attribute) and expr.func.attr == "type"


def _type_strings(expr: ast.expr) -> bool:
    """Strings a `.type()` is tested against, one of them a torch type name (`'torch.FloatTensor'`)."""
    dtypes = table()["tensor_type_names"]
    return any(n.startswith("torch.") and n.rsplit(".", 1)[-1] in dtypes for n in _strings(expr))


def _type_name_test(node: ast.Compare) -> bool:
    """The codemod's `leave_Comparison`: one comparison of a class name with strings, one a
    tensor type name; or of `x.type()` with torch type strings. Both orders of `==`/`!=` with a
    string on the left, where the codemod swaps them."""
    if len(node.ops) != 1:
        return False
    left, right = node.left, node.comparators[0]
    orders = [(left, right)]
    if isinstance(node.ops[0], (ast.Eq, ast.NotEq)) and isinstance(left, ast.Constant) and isinstance(left.value, (str, bytes)):
        orders.append((right, left))
    dtypes = table()["tensor_type_names"]
    for tested, strings in orders:
        if _is_class_name(tested):
            if any(n in dtypes for n in _strings(strings)):
                return True
        elif _is_type_call(tested) and _type_strings(strings):
            return True
    return False


def _type_assertion(node: ast.Call) -> bool:
    """The codemod's `leave_Call`: `self.assertEqual(x.type(), 'torch.FloatTensor')` & co., the
    two first arguments in either order."""
    if not isinstance(node.func, ast.Attribute) or node.func.attr not in TYPE_ASSERTS:
        return False
    passed = sorted([*node.args, *(k.value for k in node.keywords)], key=lambda e: (e.lineno, e.col_offset))
    if len(passed) < 2:
        return False
    first, second = passed[:2]
    return (_is_type_call(first) and _type_strings(second)) or (_is_type_call(second) and _type_strings(first))


def may_act(scan: Scan, words, facts) -> bool:
    """A `from` import of a name of the table, a reference that may resolve to one, or a
    type-name test: most `.type()` calls are not compared with strings, and most of the table's
    short names (`default_collate`, `_LRScheduler`) on trigger lines are the public ones, or
    a library's own."""
    names = _names()
    for node in scan.nodes(words):
        if isinstance(node, ast.ImportFrom):
            if node.module and not node.level and any(f"{node.module}.{a.name}" in names for a in node.names):
                return True
        elif isinstance(node, (ast.Name, ast.Attribute)):
            if not names.isdisjoint(scan.qualified(node)):
                return True
        elif isinstance(node, ast.Compare):
            if _type_name_test(node):
                return True
        elif isinstance(node, ast.Call) and _type_assertion(node):
            return True
    return False


GATE = Gate(may_act=may_act)


SPEC = Spec(
    code="TM008",
    name="removed-internals",
    stage=Stage.REWRITE,
    safety=Safety.SAFE,
    target="codemods.transforms.removed_internals:RemovedInternals",
    triggers=triggers(),
    summary="_LRScheduler -> LRScheduler, private DataLoader paths, zero_gradients, type-name tests -> dtype",
    gate=GATE,
    emits=(
        "torch.hub.load_state_dict_from_url",
        "torch.utils.data.get_worker_info",
        "torch.utils.data.default_collate",
        "torch.utils.data.default_convert",
        "torch.optim.lr_scheduler.LRScheduler",
    ),
)
