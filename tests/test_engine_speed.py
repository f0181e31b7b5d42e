"""The engine's shortcuts give exactly what libcst's slow paths give.

The base class skips work libcst does for every codemod and file (DESIGN §9): positions are
computed lazily, the import scan walks statements only, visit/leave dispatch is cached per node
type when no matcher decorator is used. Each shortcut is checked against the slow path here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst
import libcst.matchers as m
import pytest
from libcst.codemod import CodemodContext
from libcst.metadata import ParentNodeProvider, PositionProvider

from codemods.helpers import codemod as base
from codemods.helpers.codemod import FileContext, MigrationCodemod
from codemods.helpers.names import Imports, _ImportCollector, walk_statements

ROOT = Path(__file__).resolve().parents[1]

TRICKY = """\
import torch
import torch.nn as nn, numpy
from torch.nn import functional as F
if True: import os.path as osp
elif x:
    from a.b import c
else:
    import d
try:
    from e import f as g
except ImportError:
    import h as g
else:
    import i
finally:
    from j import k
try:
    pass
except* ValueError:
    import h2
with open(p) as fh:
    import l
for _ in range(3):
    import m1
else:
    import m2
while False:
    import n
else:
    import n2
match cmd:
    case [x]:
        import o
    case _:
        from p import q
class Net(nn.Module):
    import r
    def forward(self):
        import s as nn2
        class Inner:
            def method(self):
                from t import u
        lam = lambda: __import__("v")
        return nn2
def helper(): from w import x as y
async def coro():
    import z
@decorator
class Decorated: pass
from . import relative
from .pkg import rel2
from star import *
"""


def _full_visit(module: cst.Module) -> tuple[dict, set]:
    collector = _ImportCollector()
    module.visit(collector)
    return collector.aliases, collector.defined


def _sources():
    yield "tricky", TRICKY
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        text = path.read_text()
        try:
            ast.parse(text)
        except SyntaxError:
            continue  # inputs that do not parse, on purpose (TM000's, a legacy project's `async` module)
        yield str(path.relative_to(ROOT)), text
    for path in sorted((ROOT / "codemods").rglob("*.py")):
        yield str(path.relative_to(ROOT)), path.read_text()


@pytest.mark.parametrize(("name", "text"), list(_sources()), ids=lambda v: v if "\n" not in v else "")
def test_statement_import_scan_equals_a_full_visit(name: str, text: str) -> None:
    module = cst.parse_module(text)
    imports = Imports.of(module)
    assert (imports.aliases, imports.shadowed) == _full_visit(module)
    if name == "tricky":  # the walk reached every kind of block
        assert {"osp", "c", "d", "g", "i", "k", "l", "m1", "m2", "n", "n2", "o", "q", "r", "h2", "nn2", "u", "y", "z"} <= set(
            imports.aliases
        ) and {"Net", "helper", "coro", "Decorated"} <= imports.shadowed


@pytest.mark.parametrize(("name", "text"), list(_sources()), ids=lambda v: v if "\n" not in v else "")
def test_statement_class_scan_equals_a_full_visit(name: str, text: str) -> None:
    """TM101's class collector reads statements only (walk_statements): the same classes,
    bases, `cuda` definitions and `self.x = ...` values as a full visit."""
    from codemods.transforms.cuda_to_device import _ClassCollector

    module = cst.parse_module(text)
    walked, visited = _ClassCollector(), _ClassCollector()
    walk_statements(module.body, walked)
    module.visit(visited)
    assert walked.classes == visited.classes


class _Recorder(MigrationCodemod):
    """Renames `old(...)` to `new(...)`; a finding on every `maybe(...)`."""

    CODE = "TM999"

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        if m.matches(updated_node.func, m.Name("old")):
            return self.rewrite(original_node, updated_node, updated_node.with_changes(func=cst.Name("new")))
        if m.matches(updated_node.func, m.Name("maybe")):
            self.finding(original_node, "cannot decide")
        return updated_node


class _Decorated(MigrationCodemod):
    """The same rewrite through libcst's matcher decorators (the slow, general dispatch)."""

    CODE = "TM998"

    @m.call_if_inside(m.FunctionDef(name=m.Name("f")))
    @m.leave(m.Call(func=m.Name("old")))
    def _rename(self, original_node: cst.Call, updated_node: cst.Call):
        return self.rewrite(original_node, updated_node, updated_node.with_changes(func=cst.Name("new")))

    def visit_Call_func(self, node: cst.Call) -> None:
        self.seen = getattr(self, "seen", 0) + 1


class _WithParents(MigrationCodemod):
    # Not a subclass of _Recorder: libcst caches inherited dependencies on the class, so a
    # subclass used after its parent would inherit the parent's cached (smaller) set.
    CODE = "TM996"
    METADATA_DEPENDENCIES = (ParentNodeProvider,)
    leave_Call = _Recorder.leave_Call

    def visit_Call(self, node: cst.Call) -> None:
        assert isinstance(self.get_metadata(ParentNodeProvider, node), cst.CSTNode)  # eager providers resolve


SOURCE = "x = old(1)\n\ndef f():\n    return old(2) + maybe(3)\n"


def _apply(cls, source=SOURCE, noqa=None):
    codemod = cls(CodemodContext(), FileContext(noqa=noqa or {}))
    tree = codemod.transform_module(cst.parse_module(source))
    return codemod, tree.code


def test_plain_dispatch_rewrites_and_reports_positions() -> None:
    codemod, code = _apply(_Recorder)
    assert codemod._plain_dispatch
    assert code == "x = new(1)\n\ndef f():\n    return new(2) + maybe(3)\n"
    assert codemod.rewrites == 2
    assert [(f.line, f.column, f.message) for f in codemod.findings] == [(4, 20, "cannot decide")]


def test_matcher_decorators_fall_back_to_libcst_dispatch() -> None:
    assert base._uses_matcher_decorators(_Decorated) and not base._uses_matcher_decorators(_Recorder)
    codemod, code = _apply(_Decorated)
    assert not codemod._plain_dispatch
    assert code == "x = old(1)\n\ndef f():\n    return new(2) + maybe(3)\n"  # only inside f
    assert codemod.seen == 3  # attribute visitors still called: old, old, maybe


def test_eager_providers_still_resolve() -> None:
    codemod, code = _apply(_WithParents)
    assert code.count("new(") == 2 and codemod.findings[0].line == 4


def test_positions_are_computed_only_when_needed(monkeypatch) -> None:
    computed = []
    real = base.MetadataWrapper.resolve

    def spy(self, provider):
        computed.append(provider)
        return real(self, provider)

    monkeypatch.setattr(base.MetadataWrapper, "resolve", spy)
    _apply(_Recorder, "x = old(1)\n")  # a rewrite, no finding, no noqa: positions never needed
    assert PositionProvider not in computed
    codemod, _ = _apply(_Recorder, "y = maybe(1)\n")
    assert computed.count(PositionProvider) == 1 and codemod.findings[0].line == 1
    codemod, code = _apply(_Recorder, "x = old(1)  # noqa: TM999\nz = old(2)\n", noqa={1: frozenset({"TM999"})})
    assert code == "x = old(1)  # noqa: TM999\nz = new(2)\n" and codemod.rewrites == 1


def test_dispatch_cache_is_per_class() -> None:
    class Other(MigrationCodemod):
        CODE = "TM997"

        def leave_Name(self, original_node, updated_node):
            return updated_node.with_changes(value="renamed") if updated_node.value == "old" else updated_node

    _apply(_Recorder)
    _, code = _apply(Other)
    assert "renamed(1)" in code  # Other's leave_Name is found although _Recorder has none
