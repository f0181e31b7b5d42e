"""Where a project builds its own models: the call sites whose arguments the smoke check can reuse.

A site is a call that resolves (through the calling file's imports) to the class, and whose every
argument is a constant (`Head(16, 4)`, `Encoder(dim=32, heads=(4, 8))`) or refers only to names the
calling module binds at its top level — a class, a function, an import, a constant
(`ResNet(BasicBlock, [2, 2, 2, 2])` in `def ResNet18()`):
the probe evaluates those in that module's namespace. A name the enclosing function binds itself
(a parameter, a local) shadows the module's, so it makes the site unusable; so does any call.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

_CONSTANT = (ast.Constant, ast.Tuple, ast.List, ast.Set, ast.Dict, ast.UnaryOp, ast.BinOp, ast.unaryop, ast.operator,
             ast.expr_context, ast.Attribute)  # fmt: skip


@dataclass(frozen=True)
class Site:
    file: str  # relative path of the calling file
    line: int
    module: str  # the calling file's dotted module ("" when it has none)
    args: tuple[str, ...]
    kwargs: tuple[tuple[str, str], ...]
    needs_names: bool  # an argument names something of `module`: evaluated in its namespace


def aliases_of(tree: ast.Module, module: str) -> dict[str, str]:
    """Local name -> the dotted name it was imported as (relative imports made absolute)."""
    names: dict[str, str] = {}
    package = module.rsplit(".", 1)[0] if "." in module else ""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                names[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".") if package else []
                up = up[: len(up) - (node.level - 1)] if node.level > 1 else up
                base = ".".join([*up, base] if base else up)
            for a in node.names:
                names[a.asname or a.name] = f"{base}.{a.name}" if base else a.name
    return names


def dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted(node.value)
        return f"{inner}.{node.attr}" if inner else None
    return None


def resolve(node: ast.expr, aliases: dict[str, str], module: str = "") -> str | None:
    """The dotted name `node` refers to; a bare name no import binds is the module's own."""
    name = dotted(node)
    if name is None:
        return None
    head, _, rest = name.partition(".")
    full = aliases.get(head) or (f"{module}.{head}" if module else head)
    return f"{full}.{rest}" if rest else full


def _constant(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name.split(".")[0]) for a in node.names if a.name != "*")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _constant(node.value):
            # Only constants (`CFG = {"VGG11": [64, "M"]}`): `n = int(sys.argv[1])` is no argument to rebuild.
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def _locals(function: ast.AST) -> set[str]:
    a = function.args
    names = {p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, [a.vararg, a.kwarg])]}
    names.update(n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    return names


def _usable(node: ast.expr, top: set[str], shadowed: set[str]) -> tuple[bool, bool]:
    """(whether the argument can be rebuilt, whether it names something of the module)."""
    names = False
    for child in ast.walk(node):
        if isinstance(child, ast.Name):
            if child.id not in top or child.id in shadowed:
                return False, False
            names = True
        elif not isinstance(child, _CONSTANT):
            return False, False
    return True, names


def sites_in(rel: str, module: str, tree: ast.Module) -> dict[str, list[Site]]:
    """The file's usable calls, by the dotted class name each resolves to."""
    aliases, top = aliases_of(tree, module), _top_level_names(tree)
    found: dict[str, list[Site]] = {}

    def visit(node: ast.AST, shadowed: set[str]) -> None:
        for child in ast.iter_child_nodes(node):
            inner = shadowed | _locals(child) if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) else shadowed
            if isinstance(child, ast.Call):
                _add(child, shadowed)
            visit(child, inner)

    def _add(call: ast.Call, shadowed: set[str]) -> None:
        target = resolve(call.func, aliases, module)
        if not target or not target.rsplit(".", 1)[-1][:1].isupper():
            return
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return
        checks = [_usable(a, top, shadowed) for a in [*call.args, *(k.value for k in call.keywords)]]
        if not all(ok for ok, _ in checks) or (any(n for _, n in checks) and not module):
            return
        site = Site(rel, call.lineno, module, tuple(ast.unparse(a) for a in call.args),
                    tuple((k.arg, ast.unparse(k.value)) for k in call.keywords), any(n for _, n in checks))  # fmt: skip
        found.setdefault(target, []).append(site)

    visit(tree, set())
    return found
