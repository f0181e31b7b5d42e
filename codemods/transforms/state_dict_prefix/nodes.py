"""Small predicates and readers over libcst nodes that TM104's idiom recognisers share.

Everything here reads nodes and returns facts about them; nothing rewrites or records anything.
"""

from __future__ import annotations

import libcst as cst

from codemods.gates.state_dict_prefix import PREFIX
from codemods.helpers.names import dotted
from codemods.base import traverse


def source_of(node: cst.CSTNode) -> str:
    """The source text of `node`."""
    return cst.Module(body=[]).code_for_node(node)


def is_prefix_string(node: cst.BaseExpression) -> bool:
    """The string literal `"module."`, however quoted."""
    return isinstance(node, cst.SimpleString) and node.evaluated_value == PREFIX


def is_name(node: cst.CSTNode | None, value: str) -> bool:
    """The name `value`."""
    return isinstance(node, cst.Name) and node.value == value


def is_int(node: cst.CSTNode | None, value: str) -> bool:
    """The integer literal `value`, as written."""
    return isinstance(node, cst.Integer) and node.value == value


def is_dot_string(node: cst.CSTNode | None) -> bool:
    """The string literal `"."`."""
    return isinstance(node, cst.SimpleString) and node.value in ('"."', "'.'")


def is_attribute(node: cst.CSTNode, attr: str, value: str | None = None) -> bool:
    """`<anything>.attr`, or `value.attr` when `value` is given."""
    return isinstance(node, cst.Attribute) and is_name(node.attr, attr) and (value is None or is_name(node.value, value))


def is_method_call(node: cst.CSTNode, method: str, key: str | None = None) -> bool:
    """`<anything>.method(...)` (`key.method(...)` when `key` is given), any arguments."""
    return isinstance(node, cst.Call) and is_attribute(node.func, method, key)


def one_slice(node: cst.CSTNode) -> cst.Slice | None:
    """The slice of `x[a:b]` (one element, a slice); None for anything else."""
    if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Slice):
        return node.slice[0].slice
    return None


def is_len_prefix(node: cst.CSTNode | None) -> bool:
    """`len("module.")`."""
    return (
        isinstance(node, cst.Call)
        and is_name(node.func, "len")
        and len(node.args) == 1
        and is_prefix_string(node.args[0].value)
    )


def is_prefix_test(expr: cst.BaseExpression, key: str) -> bool:
    """`key.startswith("module.")`."""
    return is_method_call(expr, "startswith", key) and len(expr.args) == 1 and is_prefix_string(expr.args[0].value)


def is_no_argument_call(node: cst.CSTNode, method: str) -> bool:
    """`<anything>.method()`."""
    return is_method_call(node, method) and not node.args


def single_small(stmt: cst.CSTNode) -> cst.BaseSmallStatement | None:
    """The one small statement of a line holding just one; None for anything else."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        return stmt.body[0]
    return None


def parse_line(code: str) -> cst.SimpleStatementLine:
    """`code`, one simple statement with its newline, as a statement line."""
    stmt = cst.parse_statement(code)
    assert isinstance(stmt, cst.SimpleStatementLine)
    return stmt


def store_parts(stmt: cst.CSTNode) -> tuple[cst.BaseExpression, cst.BaseExpression, cst.BaseExpression] | None:
    """(D, index, value) for the statement `D[index] = value`."""
    small = single_small(stmt)
    if not isinstance(small, cst.Assign) or len(small.targets) != 1:
        return None
    target = small.targets[0].target
    if not (isinstance(target, cst.Subscript) and len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index)):
        return None
    return target.value, target.slice[0].slice.value, small.value


def contains(node: cst.CSTNode, target: cst.CSTNode) -> bool:
    """Whether `target` (this very node) is `node` or inside it."""
    class Finder(cst.CSTVisitor):
        def __init__(self) -> None:
            self.found = False

        def on_visit(self, n: cst.CSTNode) -> bool:
            self.found = self.found or n is target
            return not self.found

    finder = Finder()
    traverse(node, finder)
    return finder.found


def load_state_dict_call(small) -> tuple[cst.BaseExpression, cst.Call] | None:
    """(receiver, call) for the expression statement `receiver.load_state_dict(...)`."""
    if not isinstance(small, cst.Expr) or not isinstance(small.value, cst.Call):
        return None
    call = small.value
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "load_state_dict"):
        return None
    return call.func.value, call


def uses_any(node: cst.CSTNode, names: set[str]) -> bool:
    """Whether `node` reads one of `names`."""
    return any(n in names for n in names_in(node))


def names_in(node: cst.CSTNode) -> set[str]:
    """Every plain name in `node` (not attribute names, not keyword-argument names)."""
    class Names(cst.CSTVisitor):
        def __init__(self) -> None:
            self.found: set[str] = set()
            self.skip: set[int] = set()

        def visit_Attribute(self, n: cst.Attribute) -> None:
            self.skip.add(id(n.attr))

        def visit_Arg(self, n: cst.Arg) -> None:
            if n.keyword is not None:
                self.skip.add(id(n.keyword))

        def visit_Name(self, n: cst.Name) -> None:
            if id(n) not in self.skip:
                self.found.add(n.value)

    v = Names()
    traverse(node, v)
    return v.found


_PURE_CALLS = frozenset({"isinstance", "hasattr", "len", "getattr", "torch.cuda.device_count", "torch.cuda.is_available"})


def is_pure_test(test: cst.BaseExpression) -> bool:
    """A condition whose evaluation has no effect worth keeping: names, attributes, literals,
    comparisons and `isinstance`/`hasattr`/`len`/GPU-count calls of those."""

    class Check(cst.CSTVisitor):
        pure = True

        def visit_Call(self, node: cst.Call) -> None:
            self.pure = self.pure and (dotted(node.func) or "") in _PURE_CALLS

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            self.pure = False
            return False

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            self.pure = False

        def visit_Await(self, node: cst.Await) -> None:
            self.pure = False

    check = Check()
    traverse(test, check)
    return check.pure

