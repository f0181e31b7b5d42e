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


# -- seeded from the source ------------------------------------------------------------------------

SEEDING_SHAPES = [
    *SHAPES,
    "x = 1\ry = 2\r",  # old Mac line ends: CPython counts them as lines too
    "a = (1,\n     2)  # c\nb = '''x\ny'''; c = 3;\nd = 1 + \\\n    2\n",
    "@a\n\n# between decorators\n@b(\n  1)\ndef f():\n    pass\n\n\n    # a footer, indented\n# a comment at the top level\nx = 1\n",
    "if a:\n    if b:\n        c()\n        # footer of the inner if\n    # footer of the outer if\n# before else? no: a new statement follows\nelse:\n    d()\n",
    "if a:\n    b()\n# a comment\nelif c:\n    d()\n    # elif's footer\nelse:\n    e()\n\n\n\n# file footer\n",
    "for x in y:\n    pass\nelse:\n    z()\n    # for's else footer\nwhile a:\n    b()\n",
    "try:\n    a()\nexcept A:\n    b()\nexcept B as e:\n    c()\n    # last handler's footer\nw = 1\n",
    "def f():\n\n    '''doc'''\n\n\n    x = 1\n\n\n\n    y = 2\n",
    "class A:\n  def f(self):\n  \tpass\n  x = 1\n",  # mixed indentation tokens per block
    "match a:\n    case 1:\n        b()\n\nc = 2\n",
    "try:\n    a()\nexcept* E:\n    b()\nd = 1\n",
    "\n\n# header after blank lines\n\nimport os\n",
    "x = 1\n\x0c\ny = 2\n",  # a form feed line
]


def _seeded(text: str) -> tuple[cst.Module, ModuleCode, bool]:
    from codemods.engine.statement_map import StatementMap

    tree = cst.parse_module(text)
    codegen = ModuleCode()
    return tree, codegen, codegen.seed(text, tree, StatementMap.of(text, tree))


def _parses(text: str) -> bool:
    try:
        cst.parse_module(text)
    except cst.ParserSyntaxError:
        return False  # TM000's inputs: Python 2-era syntax
    return True


def _seeding_texts() -> list[str]:
    inputs = (path.read_text() for path in sorted(FIXTURES.glob("TM*/*.in.py")))
    return [*SEEDING_SHAPES, *filter(_parses, inputs)]


@pytest.mark.parametrize("text", _seeding_texts(), ids=range(len(_seeding_texts())))
def test_seeded_statements_are_what_libcst_writes_for_them(text: str) -> None:
    """Every statement cut from the source is what libcst generates for it at its indentation,
    so a seeded ModuleCode writes every tree exactly as an unseeded one does."""
    tree, codegen, seeded = _seeded(text)
    if not seeded:  # only where there is nothing to cut, or libcst writes the text's end (or BOM) itself
        assert not tree.body or not tree.has_trailing_newline or text.startswith("\ufeff"), text
        return
    fresh = ModuleCode()
    fresh(tree)
    for key in codegen._seeds:
        node, code = codegen._parts[key]
        assert fresh._generate(node, key[1]) == code, code
    assert codegen(tree) == text
    changed = traverse(tree, Rename())
    assert codegen(changed) == changed.code
    assert codegen.reproduces(tree, changed)


def test_a_seeded_run_generates_no_statement_it_keeps(monkeypatch) -> None:
    text = "import os\n\n\nclass A:\n    x = 1\n\n    def f(self):\n        return b\n\n\ndef g():\n    return 1\n"
    tree, codegen, seeded = _seeded(text)
    assert seeded
    generated = _counting_statements(monkeypatch)
    assert codegen(tree) == text
    assert generated == []
    changed = traverse(tree, Rename())
    assert codegen(changed) == text.replace("return b", "return renamed")
    assert generated == [changed.body[1].body.body[1].body.body[0]]  # the rewritten line, and nothing else
    assert codegen.reproduces(tree, changed)
    # the check of the replaced statements generates them (from their own parts), not the kept ones
    assert generated[1:] == [tree.body[1].body.body[1].body.body[0]]


def test_kept_statements_are_copied_and_replaced_ones_are_checked() -> None:
    """What the output keeps comes from the source as it is; a statement the codemods replaced
    must generate as its source lines, or `reproduces` says no (libcst would have changed more
    than the rewrite)."""
    text = "a = 1\nb = 2\nc = 3\n"
    tree, codegen, _ = _seeded(text)
    changed = traverse(tree, Rename())
    kept, replaced = (id(tree.body[0]), ()), (id(tree.body[1]), ())
    codegen._parts[kept] = (tree.body[0], "a  =  1\n")  # as if the source spelled it so
    assert codegen(changed) == "a  =  1\nrenamed = 2\nc = 3\n"
    assert codegen.reproduces(tree, changed)
    codegen._parts[replaced] = (tree.body[1], "b  =  2\n")  # libcst would not write this line back
    assert not codegen.reproduces(tree, changed)


def test_cuts_that_do_not_meet_seed_nothing() -> None:
    from codemods.engine.statement_map import StatementMap

    text = "a = 1\n\n# c\nb = 2\n"
    tree = cst.parse_module(text)
    statement_map = StatementMap.of(text, tree)
    node, first, last = statement_map.spans[id(tree.body[1])]
    statement_map.spans[id(tree.body[1])] = (node, first + 1, last + 1)  # a layout one line off
    codegen = ModuleCode()
    assert not codegen.seed(text, tree, statement_map)
    assert not codegen._seeds and codegen(tree) == text
    other = "a = 1\nb = 2\n"  # a map of another text
    assert not ModuleCode().seed(other, cst.parse_module(other), StatementMap.of(text, tree))
