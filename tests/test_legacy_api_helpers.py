"""Units behind TM004/TM006/TM301: end adjustment, keyword appending, import forms, triggers."""

from __future__ import annotations

import libcst as cst
import pytest

from codemods import registry
from codemods.api import transform_source
from codemods.helpers.arguments import append_args, keyword_arg
from codemods.helpers.spelling import import_forms
from codemods.transforms.deprecated_api.expressions import provably_int, shifted
from tests.conftest import FIXTURES

CODES = ("TM004", "TM006", "TM301")


def code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


@pytest.mark.parametrize(
    "end, delta, expected",
    [
        ("9", 1, "10"),
        ("-1", 1, "0"),
        ("0", -1, "-1"),
        ("n - 1", 1, "n"),
        ("n - 2", 1, "n - 1"),
        ("n + 1", -1, "n"),
        ("n", 1, "n + 1"),
        ("len(x)", -1, "len(x) - 1"),
        ("a if b else c", 1, "(a if b else c) + 1"),
        ("a << 2", 1, "(a << 2) + 1"),
        ("(n - 1)", 1, "(n - 1) + 1"),
    ],
)
def test_shifted(end: str, delta: int, expected: str) -> None:
    assert code(shifted(cst.parse_expression(end), delta)) == expected


@pytest.mark.parametrize(
    "expr, expected",
    [("3", True), ("-3", True), ("len(x) - 1", True), ("int(a) * 2", True), ("n", False), ("3.0", False),
     ("len(x) / 2", False)],
)
def test_provably_int(expr: str, expected: bool) -> None:
    assert provably_int(cst.parse_expression(expr)) is expected


@pytest.mark.parametrize(
    "call, expected",
    [
        ("f()", "f(k=1)"),
        ("f(a)", "f(a, k=1)"),
        ("f(a,)", "f(a, k=1,)"),
        ("f(\n    a,\n    b,\n)", "f(\n    a,\n    b,\n    k=1,\n)"),
        ("f(\n    a, b\n)", "f(\n    a, b, k=1\n)"),
    ],
)
def test_append_args_keeps_layout(call: str, expected: str) -> None:
    node = cst.parse_expression(call)
    assert code(append_args(node, [keyword_arg("k", cst.Integer("1"))])) == expected


def test_import_forms_prefers_module_level() -> None:
    forms = import_forms(cst.parse_module("def f():\n    import torch\nimport torch.nn as nn\nimport torch\n"))
    assert forms["torch"].module_level and forms["nn"].module == "torch.nn"
    nested = import_forms(cst.parse_module("def f():\n    from torch.cuda import amp\n"))
    assert not nested["amp"].module_level


@pytest.mark.parametrize("path", sorted(p for c in CODES for p in FIXTURES.glob(f"{c}-*/*.in.py")), ids=lambda p: p.name)
def test_trigger_fires_on_every_fixture_that_changes_or_finds(path) -> None:
    spec = registry.get(path.parent.name.split("-", 1)[0])
    source = path.read_text()
    if source != path.with_name(path.name.replace(".in.py", ".out.py")).read_text() or "# expect:" in source:
        assert spec.fires_on(source)


def test_amp_through_an_aliased_torch_cuda() -> None:
    result = transform_source("import torch.cuda as tc\nwith tc.amp.autocast():\n    pass\n", [registry.get("TM004")])
    # `tc` is unused afterwards, so its import goes
    assert result.code == 'import torch\n\nwith torch.amp.autocast("cuda"):\n    pass\n'


def test_legacy_api_codemods_together_compile_and_settle() -> None:
    source = (
        "from torch.cuda.amp import autocast\nimport torch.nn.functional as F\n\n"
        "def run(model, x, path):\n    model.load_state_dict(torch.load(path))\n"
        "    with autocast():\n        return F.upsample(x, scale_factor=2), torch.range(1, 4)\n"
    )
    specs = [registry.get(c) for c in CODES]
    once = transform_source(source, specs)
    assert set(once.rewrites) == set(CODES) and once.problem is None
    compile(once.code, "<migrated>", "exec")
    assert "import torch\n" in once.code and "torch.cuda" not in once.code
    assert not transform_source(once.code, specs).changed
