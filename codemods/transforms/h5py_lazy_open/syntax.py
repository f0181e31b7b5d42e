"""Small questions TM201 asks of libcst nodes: h5py read chains, `self.<attribute>`, closes, drops.

Every function here looks at the nodes it is given and nothing else (no metadata, no state).
"""

from __future__ import annotations

import libcst as cst

from codemods.helpers.bindings import ScopeNodes
from codemods.base import traverse


def read_chain(expr: cst.BaseExpression) -> tuple[cst.BaseExpression, int]:
    """Strip `[key]` and `.get(key)` reads off `expr`: (the innermost object, how many reads)."""
    reads = 0
    while True:
        if isinstance(expr, cst.Subscript) and navigates(expr):
            expr, reads = expr.value, reads + 1
        elif (
            isinstance(expr, cst.Call)
            and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value == "get"
            and len(expr.args) == 1
            and expr.args[0].keyword is None
            and not expr.args[0].star
        ):
            expr, reads = expr.func.value, reads + 1
        else:
            return expr, reads


def navigates(read: cst.Subscript) -> bool:
    """Whether `x[key]` may give a group or dataset still tied to the file, rather than values read
    out of it (`[:]`, `[()]`, `[0]`, `[...]`, `[i, j]`: numpy data that outlives the handle)."""
    if len(read.slice) != 1 or not isinstance(read.slice[0].slice, cst.Index):
        return False
    return not isinstance(read.slice[0].slice.value, (cst.Integer, cst.Float, cst.Tuple, cst.Ellipsis, cst.UnaryOperation))


def chain_top(node: cst.CSTNode, scope: ScopeNodes) -> cst.CSTNode:
    """The largest `node[key]...`/`node.get(key)...` read chain that starts at `node`."""
    while True:
        parent = scope.parents.get(node)
        if isinstance(parent, cst.Subscript) and parent.value is node and read_chain(parent)[0] is read_chain(node)[0]:
            node = parent
            continue
        if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value == "get":
            call = scope.parents.get(parent)
            if isinstance(call, cst.Call) and call.func is parent and read_chain(call)[1] > read_chain(node)[1]:
                node = call
                continue
        return node


def self_attribute(target: cst.BaseExpression, self_name: str) -> str | None:
    """`attribute` for `<self_name>.attribute`, else None."""
    if (
        isinstance(target, cst.Attribute)
        and isinstance(target.value, cst.Name)
        and target.value.value == self_name
    ):
        return target.attr.value
    return None


def single_target(node: cst.Assign) -> cst.BaseExpression | None:
    return node.targets[0].target if len(node.targets) == 1 else None


def first_param(function: cst.FunctionDef) -> str | None:
    params = function.params.params or function.params.posonly_params
    return params[0].name.value if params else None


def closes(statement: cst.BaseStatement, attribute: str, self_name: str) -> bool:
    """`self.<attribute>.close()` as a statement of its own."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        call = small.value if isinstance(small, cst.Expr) else None
        if isinstance(call, cst.Call) and not call.args and isinstance(call.func, cst.Attribute):
            if call.func.attr.value == "close" and self_attribute(call.func.value, self_name) == attribute:
                return True
    return False


def drops(statement: cst.BaseStatement, attribute: str, self_name: str) -> bool:
    """`del self.<attribute>` or `self.<attribute> = None`."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, cst.Del):
            targets = [e.value for e in small.target.elements] if isinstance(small.target, cst.Tuple) else [small.target]
            if any(self_attribute(t, self_name) == attribute for t in targets):
                return True
        if isinstance(small, cst.Assign) and isinstance(small.value, cst.Name) and small.value.value == "None":
            if any(self_attribute(t.target, self_name) == attribute for t in small.targets):
                return True
    return False


def binds(target: cst.BaseExpression, name: str) -> bool:
    return any(n.value == name for n in names_in(target)) and not isinstance(target, (cst.Attribute, cst.Subscript))


def names_in(node: cst.CSTNode) -> list[cst.Name]:
    found: list[cst.Name] = []

    class Names(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.append(name)

    traverse(node, Names())
    return found


def methods(node: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    return {s.name.value: s for s in node.body.body if isinstance(s, cst.FunctionDef)}


def class_level_names(node: cst.ClassDef) -> set[str]:
    names: set[str] = set()
    for statement in node.body.body:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            names.add(statement.name.value)
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign):
                    for target in small.targets:
                        names |= {n.value for n in names_in(target.target)}
                elif isinstance(small, cst.AnnAssign) and small.value is not None:
                    names |= {n.value for n in names_in(small.target)}
    return names


def defines_class(module: cst.Module, name: str) -> bool:
    return any(isinstance(s, cst.ClassDef) and s.name.value == name for s in module.body)
