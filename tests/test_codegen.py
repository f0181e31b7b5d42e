"""engine/codegen.ModuleCode writes what `Module.code` writes, reusing the statements it has seen."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from codemods.engine.codegen import ModuleCode
from codemods.engine.traverse import traverse

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

SHAPES = [
    "",
    "\n",
    "# only a comment\n",
    "# header\n\nimport os\n\n\ndef f():\n    return 1\n# footer\n",
    "x = 1\r\ny = 2\r\n",
    "if a:\n\tb()\n",
    "x = 1",  # no trailing newline
    "x = '''a\nb'''\n\n\n# trailing comment",
    "\ufeffimport os\n",
]


class Rename(cst.CSTTransformer):
    def leave_Name(self, original_node, updated_node):
        return updated_node.with_changes(value="renamed") if updated_node.value == "b" else updated_node


def _texts() -> list[str]:
    texts = list(SHAPES)
    for path in sorted(FIXTURES.glob("TM*/*.out.py")):
        texts.append(path.read_text())
    return texts


@pytest.mark.parametrize("text", _texts(), ids=range(len(_texts())))
def test_same_code_as_libcst_before_and_after_a_change(text: str) -> None:
    tree = cst.parse_module(text)
    codegen = ModuleCode()
    assert codegen(tree) == tree.code
    changed = traverse(tree, Rename())
    assert codegen(changed) == changed.code
    assert codegen(tree) == tree.code  # the old tree's pieces are still its own


def test_an_unchanged_statement_is_generated_once(monkeypatch) -> None:
    tree = cst.parse_module("a = 1\nb = 2\nc = b\n")
    codegen = ModuleCode()
    codegen(tree)
    generated: list[cst.CSTNode] = []
    real = cst.Module.code_for_node

    def counting(self, node):
        generated.append(node)
        return real(self, node)

    monkeypatch.setattr(cst.Module, "code_for_node", counting)
    changed = traverse(tree, Rename())
    assert codegen(changed) == "a = 1\nrenamed = 2\nc = renamed\n"
    assert generated == [changed.body[1], changed.body[2]]
