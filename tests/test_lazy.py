"""engine/lazy.py: function bodies libcst parses only when read give the tree a whole parse gives.

The promise is exactness: whatever reads a lazy body gets the statements `cst.parse_module` makes
of the whole text, so a run with lazy bodies is the run without them, only cheaper. Checked on
shapes that stress the skeleton (decorators, comments, tabs, nesting, a two-space default), on
every fixture input through the whole pipeline, and on every corpus file in
tests/test_real_corpus.py (its digests are those of runs made before lazy bodies existed).
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import libcst as cst
import pytest

from codemods import registry
from codemods.engine import lazy, pipeline
from codemods.engine.codegen import _blocks
from codemods.helpers.context import FileContext
from codemods.helpers.names import Imports
from codemods.helpers.spelling import import_forms

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _difference(a, b, path: str = "module") -> str | None:
    """Where two trees differ (a LazyBlock standing for the IndentedBlock it is), or None."""
    kind = cst.IndentedBlock if isinstance(a, lazy.LazyBlock) else type(a)
    if kind is not type(b):
        return f"{path}: {kind.__name__} vs {type(b).__name__}"
    if isinstance(a, cst.CSTNode):
        for field in dataclasses.fields(b):
            found = _difference(getattr(a, field.name), getattr(b, field.name), f"{path}.{field.name}")
            if found:
                return found
        return None
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{path}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            found = _difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if a == b else f"{path}: {a!r} vs {b!r}"


def _lazy_blocks(node: cst.CSTNode) -> list[lazy.LazyBlock]:
    """The lazy blocks of a tree, found without reading any (statements and blocks only)."""
    found = []
    for statement in getattr(node, "body", ()):
        for block, _ in _blocks(statement, "    "):
            found.extend([block] if isinstance(block, lazy.LazyBlock) else _lazy_blocks(block))
    return found


def _read_all(node: cst.CSTNode) -> None:
    for child in node.children:
        _read_all(child)


SHAPES = {
    "plain": "import torch\n\n\ndef f(x):\n    y = x + 1\n    return y\n\n\ndef g():\n    pass\n",
    "docstring and comments": (
        "def f(x):\n    # a comment before the first statement\n\n    \"\"\"Doc.\"\"\"\n    return x  # trailing\n\n\nz = 1\n"
    ),
    "decorated nested def": (
        "class A:\n    def m(self):\n        @staticmethod\n        def inner(a,\n                  b):\n"
        "            return a\n        return inner\n\n    x = 1\n"
    ),
    "async, nested blocks": (
        "if True:\n    async def f():\n        for i in range(3):\n            if i:\n                await g(i)\n"
        "            else:\n                pass\n        return 1\nelse:\n    pass\n"
    ),
    "tabs": "def f():\n\tif x:\n\t\treturn 1\n\treturn 2\n",
    "two-space default": "def f():\n  while x:\n    x -= 1\n  return x\n\n\nclass B:\n  def m(self):\n    return 3\n",
    "mixed indentation": "def f():\n  return 1\n\n\nclass C:\n    def m(self):\n        return 2\n",
    "body at the end of the text": "x = 1\n\n\ndef f():\n    return x\n",
    "blank lines after a body": "def f():\n    if a:\n        b()\n\n\n\ndef g():\n    return 2\n",
}


@pytest.mark.parametrize("source", SHAPES.values(), ids=SHAPES.keys())
def test_a_lazy_tree_read_whole_is_libcsts_tree(source: str) -> None:
    tree = lazy.parse(source, ast.parse(source), [])
    assert tree is not None and _lazy_blocks(tree), "every shape here has a body that can wait"
    _read_all(tree)
    assert _difference(tree, cst.parse_module(source)) is None
    assert tree.code == source


KEPT_WHOLE = {
    "one-line body": "def f(x): return x\n",
    "body on the signature's last line": "def f(a,\n      b): return a\n",
    "a comment after the body": "def f():\n    if a:\n        b()\n        # about b, in the if's block\nx = 1\n",
    "no newline at the end": "def f():\n    return 1",
    "carriage returns": "def f():\r\n    return 1\r\n",
    "a def in a match case": "match x:\n    case 1:\n        def f():\n            return 1\n",
}


@pytest.mark.parametrize("source", KEPT_WHOLE.values(), ids=KEPT_WHOLE.keys())
def test_bodies_whose_lines_may_not_stand_alone_are_parsed_with_the_file(source: str) -> None:
    assert lazy.parse(source, ast.parse(source), []) is None


def test_a_function_holding_a_codemod_word_is_parsed_with_the_file() -> None:
    source = "def f(p):\n    return torch.load(p)\n\n\ndef g():\n    return 2\n"
    tree = lazy.parse(source, ast.parse(source), hits=[2])
    blocks = _lazy_blocks(tree)
    assert len(blocks) == 1 and "return 2" in blocks[0]._lines


def test_a_marker_in_the_source_is_not_mistaken_for_a_stub() -> None:
    source = "def f():\n    pass  # torch-migrate:lazy:0:0\n\n\ndef g():\n    return 2\n"
    tree = lazy.parse(source, ast.parse(source), [])
    _read_all(tree)
    assert tree.code == source and _difference(tree, cst.parse_module(source)) is None


def test_import_surveys_skip_only_bodies_that_cannot_hold_an_import() -> None:
    source = (
        "import torch\n\n\ndef f(x):\n    return x + 1\n\n\n"
        "def g():\n    from os import path as p\n    return p\n\n\nclass K:\n    def m(self):\n        return 1\n"
    )
    tree = lazy.parse(source, ast.parse(source), [])
    full = cst.parse_module(source)
    assert Imports.of(tree).aliases == Imports.of(full).aliases
    assert import_forms(tree).keys() == import_forms(full).keys()
    read = [block.parsed for block in _lazy_blocks(tree)]
    assert read == [False, True, False], "only g says `import`: only g's body was parsed"


def _fixture_inputs() -> list[Path]:
    return sorted(p for p in FIXTURES.glob("TM*/*.in.py"))


def test_every_fixture_runs_the_same_with_lazy_bodies_and_without(monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole pipeline (rewrites, findings, their positions, problems) on every fixture input,
    with function bodies parsed lazily and with the whole text parsed up front."""
    specs = registry.select(unsafe=True)
    inputs = _fixture_inputs()
    assert len(inputs) > 100
    parse, lazy_trees = lazy.parse, []

    def counted(*args):
        tree = parse(*args)
        lazy_trees.append(tree is not None)
        return tree

    monkeypatch.setattr(lazy, "parse", counted)
    with_lazy = [pipeline.transform_source(p.read_text(), specs, FileContext(path=p.name)) for p in inputs]
    assert sum(lazy_trees) >= 20, "the comparison means something only where bodies were lazy"
    without = [pipeline.transform_source(p.read_text(), specs, FileContext(path=p.name), lazy=False) for p in inputs]
    for path, a, b in zip(inputs, with_lazy, without):
        assert a == b, path.name


def test_the_import_remover_reads_only_bodies_that_may_use_or_import_its_names() -> None:
    """`Variable` is spelled in a comment at module level (so the remover must look for uses) and
    used in h: only h's body, which spells it, is parsed; the import stays, as on the full tree."""
    from codemods.helpers.import_remover import UsedNamesRemover

    source = (
        "from torch.autograd import Variable  # Variable: old\n\n\n"
        "def f(x):\n    return x + 1\n\n\ndef h(x):\n    return Variable(x)\n\n\ndef k():\n    return 3\n"
    )
    asked = [("torch.autograd", "Variable", None)]
    tree = lazy.parse(source, ast.parse(source), [])
    out = UsedNamesRemover(asked, code=lambda module: source).transform(tree)  # the engine's code copies the source
    assert [block.parsed for block in _lazy_blocks(tree)] == [False, True, False]
    assert out.code == UsedNamesRemover(asked).transform(cst.parse_module(source)).code == source


def test_a_body_that_fails_to_parse_late_sends_the_file_to_a_whole_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read by a survey, a body whose own lines libcst rejects would surface as a codemod's
    internal error; the file is run again parsed whole, and says what the whole parse says."""
    source = "import torch\n\n\ndef f(x):\n    return x.cuda()\n\n\ndef g(self):\n    self.y = 2\n    return self.y\n"
    specs = registry.select()
    expected = pipeline.transform_source(source, specs, FileContext(path="m.py"), lazy=False)
    assert expected.changed, "TM101 rewrites this .cuda(), and its survey of classes reads a body assigning `self.y`"

    tried = []

    def unparsable(*args):
        tried.append(args)
        raise cst.ParserSyntaxError("rejected", lines=["x"], raw_line=1, raw_column=0)

    monkeypatch.setattr(lazy, "_parse_body", unparsable)
    assert pipeline.transform_source(source, specs, FileContext(path="m.py")) == expected
    assert tried, "a body was read late, and failed"


# (source, a line of each body a survey must read, a line of each body that must stay unread)
_SURVEYED = {
    "TM101 classes: bases, `def cuda`, `self.x =`": (
        "import torch\n\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.w = torch.nn.Linear(2, 2)\n\n    def forward(self, x):\n        h = self.w(x)\n"
        "        return h * 2\n\n\ndef main(net):\n    net.cuda()\n",
        ["self.w = torch.nn.Linear(2, 2)"],
        ["h = self.w(x)"],
    ),
    "TM014 weight_norm and require_grad bindings": (
        "import torch\n\n\ndef f():\n    p = torch.zeros(3)\n    p.require_grad = True\n\n\n"
        "def g(m):\n    return torch.nn.utils.weight_norm(m)\n\n\ndef h():\n    q = torch.ones(2)\n    return q\n",
        [],  # its words are TM014's own: such a body is parsed with the file
        ["q = torch.ones(2)"],
    ),
}


@pytest.mark.parametrize("source, read, unread", _SURVEYED.values(), ids=_SURVEYED.keys())
def test_surveys_read_only_the_bodies_that_hold_what_they_collect(monkeypatch: pytest.MonkeyPatch, source, read, unread) -> None:
    """A whole-module survey skips a body not parsed yet whose lines cannot hold anything it
    records (engine/lazy.py's `spells_none`); the run is the run without lazy bodies."""
    specs = registry.select()
    expected = pipeline.transform_source(source, specs, FileContext(path="m.py"), lazy=False)
    parsed: list[str] = []
    original = lazy._parse_body

    def recording(lines: str, *args):
        parsed.append(lines)
        return original(lines, *args)

    monkeypatch.setattr(lazy, "_parse_body", recording)
    assert pipeline.transform_source(source, specs, FileContext(path="m.py")) == expected
    assert expected.changed
    for line in read:
        assert any(line in body for body in parsed), f"the survey must read the body holding {line!r}"
    for line in unread:
        assert not any(line in body for body in parsed), f"the body holding {line!r} was parsed"


def test_the_ddp_helper_search_reads_no_body_that_lacks_the_marker() -> None:
    from codemods.helpers import ddp

    source = f'def ddp_wrap(m):\n    """{ddp.MARKER}"""\n    return m\n\n\ndef other(m):\n    x = 1\n    return m\n'
    tree = lazy.parse(source, ast.parse(source), ())
    assert tree is not None
    assert ddp.top_level_defs(tree) == {"ddp_wrap": True, "other": False}
    first, second = (statement.body for statement in tree.body)
    assert first.parsed and lazy.unread(second)


@pytest.mark.parametrize(
    "body",
    [
        "self.w = 1",
        "self.w: int",
        "(self  # why\n         .w  # not\n        ) = 2",
        "self . w \\\n            = 3",
        "class Inner:\n            pass",
        "def cuda(self):\n            return self",
        "self.w == 1\n        self.w += 1\n        x = {self.w: 1}",
    ],
)
def test_the_tm101_class_survey_collects_what_it_collects_from_bodies_parsed_late(body: str) -> None:
    from codemods.helpers.names import walk_statements
    from codemods.transforms.cuda_to_device.receivers import ClassCollector

    source = f"class Net(Base):\n    def __init__(self):\n        {body}\n\n    def forward(self, x):\n        return x\n"
    whole, collector = ClassCollector(), ClassCollector()
    walk_statements(cst.parse_module(source).body, whole)
    tree = lazy.parse(source, ast.parse(source), ())
    walk_statements(tree.body, collector, collector.skips)
    assert {n: (c.bases, c.defines_cuda, list(c.attributes)) for n, c in collector.classes.items()} == {
        n: (c.bases, c.defines_cuda, list(c.attributes)) for n, c in whole.classes.items()
    }
    assert lazy.unread(tree.body[0].body.body[1].body), "forward() records nothing: left unparsed"
