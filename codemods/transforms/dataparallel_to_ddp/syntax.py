"""Small pure functions that read libcst nodes, shared by TM103's survey, plan and transform."""

from __future__ import annotations

import libcst as cst

from codemods.helpers.names import dotted
from codemods.base import traverse


class _Nodes(cst.CSTVisitor):
    """Every node under a root, in order (the attribute names of `a.b` left out)."""

    def __init__(self) -> None:
        self.nodes: list[cst.CSTNode] = []
        self.attrs: set[int] = set()

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Attribute):
            self.attrs.add(id(node.attr))
        if id(node) not in self.attrs:
            self.nodes.append(node)
        return True


def all_nodes(root: cst.CSTNode) -> list[cst.CSTNode]:
    walker = _Nodes()
    traverse(root, walker)
    return walker.nodes


def references(node: cst.CSTNode, name: str) -> bool:
    """`node` mentions the name or dotted name `name`."""
    return any(isinstance(n, (cst.Name, cst.Attribute)) and dotted(n) == name for n in all_nodes(node))


def self_calls(node: cst.CSTNode) -> set[str]:
    """Names of `self.method(...)` calls in `node`."""
    return {
        n.func.attr.value
        for n in all_nodes(node)
        if isinstance(n, cst.Call)
        and isinstance(n.func, cst.Attribute)
        and isinstance(n.func.value, cst.Name)
        and n.func.value.value == "self"
    }


def contains(node: cst.CSTNode, target: cst.CSTNode) -> bool:
    return any(n is target for n in all_nodes(node))


def binds(func: cst.FunctionDef, name: str) -> bool:
    """`name` is a parameter of `func` or assigned in it (then it is not the global of that name)."""
    params = func.params
    every = [*params.posonly_params, *params.params, *params.kwonly_params]
    every += [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
    if any(p.name.value == name for p in every):
        return True
    return any(
        isinstance(n, cst.AssignTarget) and isinstance(n.target, cst.Name) and n.target.value == name
        for n in all_nodes(func.body)
    )


def is_main_guard(test: cst.BaseExpression) -> bool:
    """`__name__ == "__main__"`, either way round."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    if not isinstance(test.comparisons[0].operator, cst.Equal):
        return False
    sides = [test.left, test.comparisons[0].comparator]
    names = [s for s in sides if isinstance(s, cst.Name) and s.value == "__name__"]
    strings = [s for s in sides if isinstance(s, cst.SimpleString) and s.evaluated_value == "__main__"]
    return len(names) == 1 and len(strings) == 1


def is_submodule(expr: cst.BaseExpression | None) -> bool:
    """`model.features` / `self.model.encoder`: part of a model, not a model (`self.model` is one)."""
    parts = (dotted(expr) or "").split(".") if isinstance(expr, cst.Attribute) else []
    return len(parts) > 2 or (len(parts) == 2 and parts[0] != "self")


def assigned_name(line: cst.SimpleStatementLine | None, call: cst.Call, chain: bool = True) -> str | None:
    """`x` / `self.x` when `line` is `x = call` (or `x = call.cuda()/.to(...)` with chain)."""
    if line is None or len(line.body) != 1 or not isinstance(line.body[0], cst.Assign):
        return None
    assign = line.body[0]
    if len(assign.targets) != 1:
        return None
    value = assign.value
    if chain and chained_on(value) is call:
        value = call
    if value is not call:
        return None
    return dotted(assign.targets[0].target)


def chained_on(expr: cst.BaseExpression) -> cst.Call | None:
    """The call under `call.cuda(...)` / `call.to(...)`."""
    if (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value in {"cuda", "to"}
        and isinstance(expr.func.value, cst.Call)
    ):
        return expr.func.value
    return None


def saved_path(stmt: cst.BaseStatement) -> str | None:
    """The file a `torch.save(obj, path)` line, or a `with open(path, ...) as f:` around one,
    writes, when `path` is a plain (dotted) name."""
    if isinstance(stmt, cst.With):
        call = opened(stmt)
        return dotted(call.args[0].value) if call is not None and call.args and not call.args[0].star else None
    if not (isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Expr)):
        return None
    call = stmt.body[0].value
    if not isinstance(call, cst.Call):
        return None
    positional = [a for a in call.args if a.keyword is None and not a.star]
    f = (
        positional[1]
        if len(positional) > 1
        else next((a for a in call.args if a.keyword and a.keyword.value == "f"), None)
    )
    return dotted(f.value) if f is not None else None


def opened(stmt: cst.With) -> cst.Call | None:
    """The `open(...)` call a `with` statement's only item makes (`open`, `io.open`, `gzip.open`...)."""
    if len(stmt.items) != 1 or not isinstance(stmt.items[0].item, cst.Call):
        return None
    call = stmt.items[0].item
    name = dotted(call.func) or ""
    return call if name == "open" or name.endswith(".open") else None


# Calls that make a directory: `os.makedirs(d)`, `os.mkdir(d)`, `Path(d).mkdir(...)`.
MKDIR = ("makedirs", "mkdir")


def creates_directory(stmt: cst.CSTNode) -> bool:
    """`os.makedirs(d)` on its own line, or `if not os.path.exists(d): os.makedirs(d)` (no else)."""
    if isinstance(stmt, cst.If):
        body = stmt.body.body if isinstance(stmt.body, cst.IndentedBlock) else ()
        return stmt.orelse is None and bool(body) and all(creates_directory(s) for s in body)
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)):
        return False
    call = stmt.body[0].value
    return isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value in MKDIR
