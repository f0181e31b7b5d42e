"""Statement pruning (engine/statement_map.py) changes how much of a tree a codemod walks, never what it does.

Each check runs the same input with and without the shortcut and compares: the output, the
rewrite counts and the findings (with their lines) of every codemod that prunes, over every
fixture of every codemod (all of them, so a codemod meets others' inputs too); positions from
`StatementMap.position` against libcst's PositionProvider for every node of real-looking files; the
import remover against what a reader would call used.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from codemods import registry
from codemods.api import transform_source
from codemods.helpers.patterns import Words
from codemods.engine.statement_map import StatementMap
from tests.conftest import FIXTURES

ROOT = Path(__file__).resolve().parents[1]
INPUTS = sorted(FIXTURES.glob("TM*/*.in.py")) + sorted((FIXTURES / "projects").rglob("*.py"))
PRUNING = [s for s in registry.PIPELINE + registry.CHECKS if s.codemod.PRUNE]


def _outcome(spec: registry.Spec, source: str, prune: bool):
    saved = spec.codemod.PRUNE
    spec.codemod.PRUNE = prune
    try:
        result = transform_source(source, [spec], path="case.py")
    finally:
        spec.codemod.PRUNE = saved
    findings = sorted((f.code, f.line, f.column, f.kind, f.message) for f in result.findings)
    return result.code, result.rewrites, findings, result.problem


def test_most_codemods_prune() -> None:
    # The speed of the pipeline rests on this (scripts/bench.py); a codemod that stops pruning
    # should be a decision, not an accident.
    assert len(PRUNING) >= 15


@pytest.mark.parametrize("spec", PRUNING, ids=lambda s: s.code)
def test_pruned_walk_does_what_the_full_walk_does(spec: registry.Spec) -> None:
    compared = 0
    for path in INPUTS:
        source = path.read_text()
        if not spec.fires_on(source):
            continue
        assert _outcome(spec, source, True) == _outcome(spec, source, False), path
        compared += 1
    assert compared >= 2, f"{spec.code} fires on only {compared} inputs"


def test_pruning_skips_statements_without_the_codemod_words() -> None:
    source = "import torch\n\ndef f(x):\n    y = x + 1\n    return y\n\ndef g(x):\n    return x.cuda()\n"
    tree = cst.parse_module(source)
    sites = StatementMap.of(source, tree)
    assert sites is not None
    f, g = tree.body[1], tree.body[2]
    assert sites.spans[id(f)][1:] == (3, 5) and sites.spans[id(g)][1:] == (7, 8)
    from codemods.engine.statement_map import Pruner

    pruner = Pruner(sites, sites.hits([Words(r"\.cuda\b")]))
    assert pruner.skips(f) and not pruner.skips(g)
    assert not pruner.skips(cst.parse_statement("x = 1\n"))  # not of this text: visited


def test_an_alias_bound_on_a_trigger_line_makes_its_uses_sites() -> None:
    source = "from torch.autograd import Variable as V\n\na = 1\nb = V(a)\n"
    tree = cst.parse_module(source)
    assert StatementMap.of(source, tree).hits([Words(r"\bVariable\b")]) == [1, 4]


@pytest.mark.parametrize(
    "source",
    ["x = 1\r\ny = 2\r\n", "def f(:\n", "x = 1\ry = 2\n"],
    ids=["crlf", "syntax-error", "lone-cr"],
)
def test_no_pruning_when_lines_cannot_be_trusted(source: str) -> None:
    try:
        tree = cst.parse_module(source)
    except cst.ParserSyntaxError:
        tree = cst.parse_module("pass\n")
    sites = StatementMap.of(source, tree)
    if "\r\n" in source and "\ry" not in source:
        assert sites is not None  # CRLF files are common and fine
    else:
        assert sites is None


def _positions_agree(source: str) -> int:
    try:
        tree = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return 0  # the bad-input fixtures
    sites = StatementMap.of(source, tree)
    if sites is None:
        return 0  # a Python 2 fixture: ast refuses it, and the engine does not prune it
    full = MetadataWrapper(tree, unsafe_skip_copy=True).resolve(PositionProvider)
    checked = 0

    class Walk(cst.CSTVisitor):
        def __init__(self) -> None:
            self.statements: list[tuple[cst.CSTNode, int]] = []
            self.blocks: list[cst.IndentedBlock] = []

        def on_visit(self, node: cst.CSTNode) -> bool:
            nonlocal checked
            if isinstance(node, cst.IndentedBlock):
                self.blocks.append(node)
            elif id(node) in sites.spans and id(node) not in sites.elifs:
                self.statements.append((node, len(self.blocks)))
            if self.statements:
                statement, depth = self.statements[-1]
                got = sites.position(statement, self.blocks[:depth], tree.default_indent, node)
                want = full[node]
                assert got == (want.start.line, want.end.line, want.start.column), (type(node).__name__, got, want)
                checked += 1
            return True

        def on_leave(self, node: cst.CSTNode) -> None:
            if self.blocks and self.blocks[-1] is node:
                self.blocks.pop()
            elif self.statements and self.statements[-1][0] is node:
                self.statements.pop()

    tree.visit(Walk())
    return checked


def test_positions_from_one_statement_match_the_whole_module_layout() -> None:
    checked = sum(_positions_agree(p.read_text()) for p in INPUTS if "TM000" not in str(p) and "\r" not in p.read_text())
    # decorated defs, elif chains, tabs, comments between decorators, nested classes:
    checked_tricky = _positions_agree(
        "import torch\n\n\n# c\n@a\n# between\n@b(1,\n   2)\nclass C:\n\tdef f(self):\n\t\tif x:\n\t\t\tpass\n"
        "\t\telif y == (1,\n    2):\n\t\t\tz = torch.cuda()\n\t\telse:\n\t\t\ttry:\n\t\t\t\tq = 1\n\t\t\texcept E:\n"
        "\t\t\t\tw = [\n  1]\n"
    )
    assert checked_tricky > 50
    assert checked > 1000


IMPORTS = [
    # (source, codemod, import that must stay or go)
    ("from torch.autograd import Variable\nx = Variable(t)\n", "TM002", False),
    ("from torch.autograd import Variable\nx = Variable(t)\ny = Variable\n", "TM002", True),
    ('from torch.autograd import Variable\nx = Variable(t)\n__all__ = ["Variable"]\n', "TM002", True),
    ("from torch.autograd import Variable\nx = Variable(t)\ndef f(v: 'Variable'): pass\n", "TM002", True),
    ("from torch.autograd import Variable\nx = Variable(t)\n# Variable was here\ny = z.Variable\n", "TM002", False),
    ("from torch.autograd import Variable\nx = Variable(t)\nf(Variable=1)\n", "TM002", False),
]


@pytest.mark.parametrize("source,code,stays", IMPORTS, ids=range(len(IMPORTS)))
def test_unused_imports_go_and_used_ones_stay(source: str, code: str, stays: bool) -> None:
    result = transform_source(source, [registry.get(code)], path="case.py")
    assert result.changed
    assert ("import Variable" in result.code) is stays, result.code


@pytest.mark.parametrize("spec", registry.all_specs(), ids=lambda s: s.code)
def test_positions_from_the_statement_map_are_libcsts(spec: registry.Spec, monkeypatch) -> None:
    """Every codemod, pruning or not, reports the lines and columns libcst's PositionProvider
    gives (what it falls back to without a statement map): also for nodes reported after the
    walk that found them (TM103's survey) and from leave_ handlers."""
    from codemods.engine import statement_map as sites

    with_map = [_outcome(spec, path.read_text(), spec.codemod.PRUNE) for path in INPUTS]
    monkeypatch.setattr(sites.StatementMap, "of", classmethod(lambda cls, *args: None))
    without = [_outcome(spec, path.read_text(), spec.codemod.PRUNE) for path in INPUTS]
    assert with_map == without
    assert any(findings for _, _, findings, _ in with_map) or spec.code in {"TM000", "TM007"}


GATED = [s for s in registry.all_specs() if s.gate.may_act is not None]


def _ungated(spec: registry.Spec, source: str):
    return _outcome(replace(spec, gate=replace(spec.gate, may_act=None)), source, spec.codemod.PRUNE)


@pytest.mark.parametrize("spec", GATED, ids=lambda s: s.code)
def test_the_ast_gate_never_declines_a_file_the_codemod_acts_on(spec: registry.Spec) -> None:
    acted = 0
    for path in INPUTS:
        source = path.read_text()
        gated = _outcome(spec, source, spec.codemod.PRUNE)
        assert gated == _ungated(spec, source), path
        acted += bool(gated[1] or gated[2])
    assert acted >= 1, f"{spec.code} acts on no input"


@pytest.mark.parametrize(
    "code, source",
    [
        ("TM903", "import torch.nn.functional as F\ny = F.softmax(x, dim=-1)\nz = F.log_softmax(x, 1)\n"),
        ("TM903", "import torch.nn as nn\nact = nn.Softmax(dim=1)\n"),
        ("TM401", "import numpy as np\nimport torch\ny = x.float() + torch.float32.itemsize + np.float64(1)\n"),
        ("TM001", "import torch.nn as nn\nloss = nn.CrossEntropyLoss(reduction='sum')\nsize_average = 3\n"),
        ("TM104", "import torch.nn as nn\nnet = nn.DataParallel(model)\noptimizer.load_state_dict(state)\n"),
        ("TM301", "import torch as th\nx = th.zeros(3)\n"),
        ("TM002", "import tensorflow as tf\nv = tf.Variable(3)\n"),
        ("TM003", "import torch\nhint = 'old code read loss.data[0]; use loss.item()'\n"),
        ("TM907", "from torch.utils.data import DataLoader\nloader = DataLoader(ds, 8, num_workers=4)\n"),
        ("TM906", "import torch\neps = torch.log(1e-8 + sigma)\nlse = torch.log(torch.exp(scores).mean(0))\n"),
        (
            "TM901",
            "import torch.optim as optim\nopt = optim.Adam(model.parameters())\ncritic.eval()\n\n\ndef step(x):\n"
            "    loss = model(x).mean()\n    loss.backward()\n    opt.step()\n\n\ndef check(x):\n    return critic(model(x))\n",
        ),
        ("TM011", "import torch\npixels = torch.ByteTensor(image.tobytes()).float() / 255\nvalid = (x > 0).byte()\nprint(valid.sum())\n"),
        ("TM008", "import torch\nif layer.type() == 'conv':\n    kind = type(x).__name__ == 'Config'\n"),
        (
            "TM104",
            "import torch\nimport torch.nn as nn\nmodel = nn.DataParallel(Net())\nstate = model.state_dict()\nnet = Net()\n"
            "net.load_state_dict(torch.load(path))\n",
        ),
        ("TM012", "import torch\nout = torch.add(x, y)\nwords = pattern.sub(' ', text)\n"),
    ],
)
def test_the_ast_gate_declines_look_alikes_before_libcst_parses(code: str, source: str) -> None:
    spec = registry.get(code)
    assert spec.fires_on(source)  # the trigger words are there...
    result = transform_source(source, [spec], path="case.py")
    assert not result.parsed and result.code == source and not result.findings  # ...the sites are not
    assert _ungated(spec, source)[:3] == (source, None, [])  # and the codemod agrees


def test_scan_reads_the_statements_on_hit_lines_and_resolves_through_imports() -> None:
    import ast

    from codemods.engine.statement_map import Scan

    source = (
        "import numpy as N\n"
        "import os.path\n"
        "def f():\n"
        "    from torch.nn import functional as F2\n"
        "    return F2.softmax(x)\n"
        "if N.float:\n"  # a header line: the whole `if` is read
        "    a = 1\n"
        "try:\n"
        "    b = 2\n"
        "except ValueError:\n"
        "    c = N.Inf\n"  # inside an except handler: only that statement
        "@decorate(N)\n"
        "def g():\n"
        "    d = 4\n"
    )
    scan = Scan.of(source)
    assert scan is not None
    found = list(scan.nodes([Words(r"\bN\.")]))
    names = {n.id for n in found if isinstance(n, ast.Name)}
    assert {"N", "a", "c"} <= names and "b" not in names and "d" not in names
    attributes = [n for n in found if isinstance(n, ast.Attribute)]
    assert {q for n in attributes for q in scan.qualified(n)} == {"numpy.float", "numpy.Inf"}
    call = next(n for n in ast.walk(scan.module) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute))
    assert scan.qualified(call.func) == {"torch.nn.functional.softmax"}
    assert scan.qualified(ast.parse("os.path.join").body[0].value) == {"os.path.join"}
    assert Scan.of("x = (\n") is None and Scan.of("a = 1\rb = 2\n") is None


def test_a_declined_codemod_is_asked_again_after_an_earlier_rewrite() -> None:
    # No import binds `torch` here, so TM301's gate declines the file; TM004 then adds
    # `import torch`, and on the new text `torch.load` is TM301's.
    source = "from torch.cuda.amp import autocast\n\nwith autocast():\n    model.load_state_dict(torch.load(path))\n"
    tm301 = registry.get("TM301")
    assert transform_source(source, [tm301]).code == source
    result = transform_source(source, [registry.get("TM004"), tm301])
    assert set(result.rewrites) == {"TM004", "TM301"} and "weights_only=" in result.code
