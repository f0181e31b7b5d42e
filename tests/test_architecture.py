"""The import structure of `codemods/`, read with `ast` from the source files.

- No codemod imports another codemod: a module under `codemods/transforms/` imports nothing else
  under it, except modules of its own package (`transforms/<name>/...`). What codemods share lives
  in `codemods/helpers/` (or the tables in `codemods/data/`).
- No import cycle among the modules of `codemods/`, counting the imports that run when a module
  is imported: those at module level (in `try:`/`if` blocks and class bodies too), not those
  inside functions or under `if TYPE_CHECKING:`.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "codemods"
TRANSFORMS = "codemods.transforms"

# Cycles that were there when this test was written, each as the set of modules importing each
# other. They are to be broken, not added to: a new cycle, or a known one that grows, fails the
# test; a known one that is gone must be removed from here.
KNOWN_CYCLES: frozenset[frozenset[str]] = frozenset()


def _modules() -> dict[str, Path]:
    """Dotted name -> file, for every module of the package."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _imported(name: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules of `codemods` that an import statement in module `name` imports."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    else:
        if node.level:
            base = name.split(".")
            base = base if _is_package(name) else base[:-1]
            base = base[: len(base) - (node.level - 1)]
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        # `from package import submodule` imports the submodule; `from module import name` the module
        targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in MODULES else module for a in node.names]
    return sorted({t for t in targets if t in MODULES})


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_time_imports(body: list[ast.stmt]):
    """The import statements that run when a module with this body is imported."""
    for statement in body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            yield statement
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        elif isinstance(statement, ast.If) and _is_type_checking(statement.test):
            yield from _import_time_imports(statement.orelse)
        else:
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                for child in getattr(statement, field, ()):
                    yield from _import_time_imports(child.body if isinstance(child, (ast.ExceptHandler, ast.match_case)) else [child])


def _tree(name: str) -> ast.Module:
    return ast.parse(MODULES[name].read_text(encoding="utf-8"), filename=str(MODULES[name]))


def _import_graph() -> dict[str, set[str]]:
    return {
        name: {t for node in _import_time_imports(_tree(name).body) for t in _imported(name, node)} - {name}
        for name in MODULES
    }


def _cycles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.add(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _codemod_of(name: str) -> str | None:
    """`codemods.transforms.<name>` for a module of that codemod (a module or a package), else None."""
    parts = name.split(".")
    if name.startswith(TRANSFORMS + ".") and len(parts) > 2:
        return ".".join(parts[:3])
    return None


def test_no_codemod_imports_another_codemod():
    crossing = []
    for name in MODULES:
        own = _codemod_of(name)
        if own is None:
            continue
        for node in ast.walk(_tree(name)):  # imports inside functions count too
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _imported(name, node):
                    other = _codemod_of(target)
                    if (other is not None and other != own) or target == TRANSFORMS:
                        crossing.append(f"{name} (line {node.lineno}) imports {target}")
    assert crossing == [], "codemods share code through codemods/helpers/, not by importing each other:\n" + "\n".join(crossing)


def test_no_new_import_cycle():
    cycles = _cycles(_import_graph())
    new = sorted(sorted(c) for c in cycles - KNOWN_CYCLES)
    assert new == [], f"import cycles among codemods/ modules (module-level imports): {new}"


def test_known_cycles_are_still_there():
    gone = sorted(sorted(c) for c in KNOWN_CYCLES - _cycles(_import_graph()))
    assert gone == [], f"these cycles are broken now: remove them from KNOWN_CYCLES: {gone}"


def test_the_graph_sees_imports_as_python_runs_them():
    source = ast.parse(
        "import codemods.gates\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from codemods import registry\n"
        "else:\n    from codemods import api\n"
        "try:\n    from . import config\nexcept ImportError:\n    from codemods import cli\n"
        "def later():\n    from codemods import engine\n"
        "class Options:\n    from codemods.helpers.arguments import bind\n"
    )
    imported = {t for node in _import_time_imports(source.body) for t in _imported("codemods.era", node)}
    assert imported == {"codemods.gates", "codemods.api", "codemods.config", "codemods.cli", "codemods.helpers.arguments"}
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == {frozenset("abc")}
