"""codemods/helpers/bindings.py and codemods/helpers/placement.py: the shared scope analysis and
the "after the imports" placement."""

from __future__ import annotations

import libcst as cst
import pytest

from codemods.helpers import placement
from codemods.helpers.bindings import BodyBindings, ScopeNodes, collect_scopes, import_binding, target_names


def _code(values: list) -> list:
    return [None if v is None else cst.Module(body=[]).code_for_node(v) for v in values]


def test_target_names_reach_into_tuples_and_stars() -> None:
    target = cst.parse_expression("a, (b, *c), d.e, f[0]")
    assert list(target_names(target)) == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("line", "bound"),
    [("import a.b.c\n", "a"), ("import a.b as c\n", "c"), ("from m import n\n", "n"), ("from m import n as o\n", "o")],
)
def test_import_binding(line: str, bound: str) -> None:
    statement = cst.parse_statement(line)
    (small,) = statement.body
    assert import_binding(small.names[0]) == bound


def test_body_bindings_pair_tuples_and_skip_nested_scopes() -> None:
    function = cst.parse_statement(
        "def f(p):\n"
        "    a, b = x, y\n"
        "    c, d = g()\n"
        "    e: int = 1\n"
        "    e += 2\n"
        "    def inner():\n"
        "        a = 'inner'\n"
        "    h = lambda: (q := 1)\n"
    )
    values = BodyBindings.of(function)
    assert {name: _code(v) for name, v in values.items()} == {
        "a": ["x"],
        "b": ["y"],
        "c": ["g()"],
        "d": ["g()"],
        "e": ["1", None],
        "h": ["lambda: (q := 1)"],
    }


def test_body_bindings_hooks_change_keys_and_augmented_values() -> None:
    class Entries(BodyBindings):
        def key(self, target):
            if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
                return f"{target.value.value}[]"
            return super().key(target)

        def augmented_value(self, node):
            return node.value

    module = cst.parse_module("state['step'] = 0\nstate['step'] += 1\nx = 2\n")
    assert {n: _code(v) for n, v in Entries.of(module).items()} == {"state[]": ["0", "1"], "x": ["2"]}


def test_scope_nodes_stop_at_nested_scopes() -> None:
    module = cst.parse_module("x = 1\ndef f():\n    y = 2\n")
    nodes = ScopeNodes.of(module).nodes
    assert [n.value for n in nodes if isinstance(n, cst.Name)] == ["x"]  # not `f`, `y`: the def's own
    assert sum(isinstance(n, cst.FunctionDef) for n in nodes) == 1


def test_collect_scopes_follows_python_scoping() -> None:
    module = cst.parse_module(
        "import torch.nn as nn\n"
        "from os import *\n"
        "device = torch.device('cpu')\n"
        "class C:\n"
        "    device = 'class attribute'\n"
        "    def m(self, device=None):\n"
        "        global g\n"
        "        return [i for i in range(3) if (j := i)]\n"
    )
    scopes = collect_scopes(module)
    assert scopes.star_import
    assert set(scopes.module.bindings) == {"nn", "device", "C"}
    method = next(s for s in scopes.by_node.values() if s.kind == "function")
    assert _code([method.params["device"]]) == ["None"] and method.globals == {"g"}
    assert _code(method.bindings["j"]) == ["i"]  # `:=` binds in the function, not the comprehension
    comprehension = next(s for s in scopes.by_node.values() if s.kind == "comprehension")
    assert comprehension.binds("i") and not method.binds("i")
    # a class body is not visible from its methods
    assert [s.kind for s in method.visible_chain()] == ["function", "module"]


# -- placement ---------------------------------------------------------------------------------------


def _body(code: str):
    return cst.parse_module(code).body


@pytest.mark.parametrize(
    ("line", "only", "holds", "single"),
    [
        ("import os\n", True, True, True),
        ("import os; import sys\n", True, True, False),
        ("import os; os.getcwd()\n", False, True, False),
        ("x = 1\n", False, False, False),
    ],
)
def test_what_an_import_line_is(line: str, only: bool, holds: bool, single: bool) -> None:
    statement = cst.parse_statement(line)
    assert (placement.is_import_line(statement), placement.holds_import(statement), placement.is_single_import(statement)) == (
        only,
        holds,
        single,
    )


def test_after_import_block_runs_through_path_setup_and_guards() -> None:
    body = _body(
        '"""Doc."""\nimport os\nimport sys\nsys.path.insert(0, ".")\nimport torch\n'
        "try:\n    import apex\nexcept ImportError:\n    apex = None\n\nx = torch.zeros(1)\ndef f():\n    pass\nimport late\n"
    )
    assert placement.after_import_block(body) == 6  # after the guard, not between two imports
    assert placement.after_import_block(body, first_use=3) == 3
    assert placement.after_leading_imports(body) == 3  # libcst's adder: the single imports after the docstring


def test_after_import_block_follows_the_import_a_name_needs() -> None:
    body = _body("import os\ndef f():\n    pass\nimport torch as t\n")
    assert placement.after_import_block(body) == 1
    assert placement.after_import_block(body, needs="t") == 3
    assert placement.binds(body[2], "t") and not placement.binds(body[2], "torch")


def test_insert_once() -> None:
    module = cst.parse_module("import os\n")
    helper = cst.parse_statement("def helper():\n    pass\n")
    once = placement.insert_once(module, "helper", helper, 1)
    assert once.code == "import os\ndef helper():\n    pass\n"
    assert placement.insert_once(once, "helper", helper, 1) is once
