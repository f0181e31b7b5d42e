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
    # nested blocks: each statement's code is cached at the indentation it is generated at
    "class A(B):\n    'doc'\n\n    @dec  # c\n    # between\n    def f(self, b=b):\n        if b:\n            return b\n"
    "        elif c:\n            pass\n        else:\n            b = 1\n        # footer of f\n    # footer of A\n# top\n",
    "try:\n  b()\nexcept (E, b) as e:\n        b = e\nelse:\n\tb = 2\nfinally:\n  del b\n",
    "with a as b, c:\n    for x in b:\n        while b:\n            b -= 1\n        else:\n            continue\n",
    "async def f():\n    async with b:\n        async for c in b:\n            await b\n",
    "match b:\n    case [1, b]:\n        b()\n    case _:\n        pass\n",
    "if a:\n    pass\n    \n    # indented comment after a blank line with spaces\n\nb = 1\n",
    "def f():\r\n    if b:\r\n        return b\r\n",
    "if a: b()\nelse: b = 1\nclass C: b = 2\n",
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


def _counting_statements(monkeypatch) -> list[cst.CSTNode]:
    """The simple statement lines generated from now on, in order."""
    generated: list[cst.CSTNode] = []
    real = cst.SimpleStatementLine._codegen_impl

    def counting(self, state):
        generated.append(self)
        return real(self, state)

    monkeypatch.setattr(cst.SimpleStatementLine, "_codegen_impl", counting)
    return generated


def test_an_unchanged_statement_is_generated_once(monkeypatch) -> None:
    tree = cst.parse_module("a = 1\nb = 2\nc = b\n")
    codegen = ModuleCode()
    codegen(tree)
    generated = _counting_statements(monkeypatch)
    changed = traverse(tree, Rename())
    assert codegen(changed) == "a = 1\nrenamed = 2\nc = renamed\n"
    assert generated == [changed.body[1], changed.body[2]]


def test_a_change_deep_in_a_class_generates_only_that_statement_again(monkeypatch) -> None:
    text = "class A:\n    x = 1\n\n    def f(self):\n        y = 2\n        if y:\n            return b\n        return y\n"
    tree = cst.parse_module(text)
    codegen = ModuleCode()
    assert codegen(tree) == text
    generated = _counting_statements(monkeypatch)
    changed = traverse(tree, Rename())
    assert codegen(changed) == text.replace("return b", "return renamed")
    (line,) = generated
    assert line is changed.body[0].body.body[1].body.body[1].body.body[0]  # `return renamed`


def test_a_statement_moved_to_another_indentation_is_generated_there() -> None:
    class Wrap(cst.CSTTransformer):  # `b = 2` moved into an `if True:` block, the node kept as it is
        def leave_Module(self, original_node, updated_node):
            moved = updated_node.body[1]
            block = cst.If(test=cst.Name("True"), body=cst.IndentedBlock(body=[moved]))
            return updated_node.with_changes(body=[updated_node.body[0], block])

    tree = cst.parse_module("a = 1\nb = 2\n")
    codegen = ModuleCode()
    codegen(tree)
    changed = traverse(tree, Wrap())
    assert changed.body[1].body.body[0] is tree.body[1]
    assert codegen(changed) == changed.code == "a = 1\nif True:\n    b = 2\n"
