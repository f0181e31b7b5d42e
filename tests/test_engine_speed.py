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
from libcst.metadata import ParentNodeProvider, PositionProvider

from codemods import base
from codemods.engine import walk
from codemods.engine.traverse import attribute_handlers
from codemods.base import CodemodContext, FileContext, MigrationCodemod
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
    walked, full = _ImportCollector(), _ImportCollector()
    walk_statements(module.body, walked)
    module.visit(full)
    assert (walked.aliases, walked.defined, walked.stars) == (full.aliases, full.defined, full.stars)
    # Imports.of adds what star imports of torch bind; an explicit import always wins.
    imports = Imports.of(module)
    assert imports.shadowed == walked.defined and walked.aliases.items() <= imports.aliases.items()
    if name == "tricky":  # the walk reached every kind of block
        assert {"osp", "c", "d", "g", "i", "k", "l", "m1", "m2", "n", "n2", "o", "q", "r", "h2", "nn2", "u", "y", "z"} <= set(
            imports.aliases
        ) and {"Net", "helper", "coro", "Decorated"} <= imports.shadowed


@pytest.mark.parametrize(("name", "text"), list(_sources()), ids=lambda v: v if "\n" not in v else "")
def test_statement_class_scan_equals_a_full_visit(name: str, text: str) -> None:
    """TM101's class collector reads statements only (walk_statements): the same classes,
    bases, `cuda` definitions and `self.x = ...` values as a full visit."""
    from codemods.transforms.cuda_to_device import ClassCollector

    module = cst.parse_module(text)
    walked, visited = ClassCollector(), ClassCollector()
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
    assert code == "x = new(1)\n\ndef f():\n    return new(2) + maybe(3)\n"
    assert codemod.rewrites == 2
    assert [(f.line, f.column, f.message) for f in codemod.findings] == [(4, 20, "cannot decide")]


def test_matcher_decorators_are_refused() -> None:
    """The base is a plain CSTTransformer (no libcst.codemod, no matcher import): a codemod
    using libcst's matcher decorators would silently never fire, so defining one fails."""
    with pytest.raises(TypeError, match="matcher decorators"):

        class _Decorated(MigrationCodemod):
            CODE = "TM998"

            @m.call_if_inside(m.FunctionDef(name=m.Name("f")))
            @m.leave(m.Call(func=m.Name("old")))
            def _rename(self, original_node: cst.Call, updated_node: cst.Call):
                return updated_node


def test_attribute_handlers_are_dispatched_only_where_defined() -> None:
    """Per-attribute callbacks return at once for a codemod without `visit_X_attr` methods (all of
    ours); one that defines some still gets them, and libcst's no-op stubs are never called."""

    class _Attributes(MigrationCodemod):
        CODE = "TM994"

        def visit_Call_func(self, node: cst.Call) -> None:
            self.seen = getattr(self, "seen", 0) + 1

    codemod, code = _apply(_Attributes)
    assert codemod.seen == 3 and code == SOURCE
    assert attribute_handlers(_Attributes) and not attribute_handlers(_Recorder)
    assert base.MigrationCodemod._handler(codemod, "visit_", cst.Name("x")) is None  # a stub: skipped
    assert codemod._handler("visit_", cst.Call(cst.Name("f")), "func") is not None


def test_eager_providers_still_resolve() -> None:
    codemod, code = _apply(_WithParents)
    assert code.count("new(") == 2 and codemod.findings[0].line == 4


def test_positions_are_computed_only_when_needed(monkeypatch) -> None:
    computed = []
    real = walk.MetadataWrapper.resolve

    def spy(self, provider):
        computed.append(provider)
        return real(self, provider)

    monkeypatch.setattr(walk.MetadataWrapper, "resolve", spy)
    _apply(_Recorder, "x = old(1)\n")  # a rewrite, no finding, no noqa: positions never needed
    assert PositionProvider not in computed
    codemod, _ = _apply(_Recorder, "y = maybe(1)\n")
    assert computed.count(PositionProvider) == 1 and codemod.findings[0].line == 1
    codemod, code = _apply(_Recorder, "x = old(1)  # noqa: TM999\nz = old(2)\n", noqa={1: frozenset({"TM999"})})
    assert code == "x = old(1)  # noqa: TM999\nz = new(2)\n" and codemod.rewrites == 1


class _Survey(MigrationCodemod):
    """Reports every `maybe(...)` from visit_Module, after a survey walk of its own: nodes
    outside the walk's path when reported."""

    CODE = "TM993"

    def visit_Module(self, node: cst.Module) -> bool:
        found = []

        class _Calls(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> None:
                if m.matches(call.func, m.Name("maybe")):
                    found.append(call)

        node.visit(_Calls())
        for call in found:
            self.finding(call, "cannot decide")
        return False


def test_a_survey_finding_is_placed_by_its_statement_not_the_whole_module(monkeypatch) -> None:
    from codemods.engine.statement_map import StatementMap

    source = "import x\n\nclass A:\n    def f(self):\n        if x:\n            pass\n        elif y:\n            return (1 +\n                maybe(3))\n\nz = [maybe(4)]\n"
    computed = []
    real = walk.MetadataWrapper.resolve
    monkeypatch.setattr(walk.MetadataWrapper, "resolve", lambda self, p: computed.append(len(self.module.body)) or real(self, p))
    tree = cst.parse_module(source)
    codemod = _Survey(CodemodContext(), FileContext())
    codemod._prepare(StatementMap.of(source, tree), None)
    codemod.transform_module(tree)
    assert computed == [1, 1]  # each finding: one statement laid out (in its stand-in blocks)
    placed = [(f.line, f.column) for f in codemod.findings]
    unmapped, _ = _apply(_Survey, source)  # without a statement map: libcst's layout of the module
    assert computed == [1, 1, 3]
    assert placed == [(f.line, f.column) for f in unmapped.findings] == [(9, 16), (11, 5)]


def test_dispatch_cache_is_per_class() -> None:
    class Other(MigrationCodemod):
        CODE = "TM997"

        def leave_Name(self, original_node, updated_node):
            return updated_node.with_changes(value="renamed") if updated_node.value == "old" else updated_node

    _apply(_Recorder)
    _, code = _apply(Other)
    assert "renamed(1)" in code  # Other's leave_Name is found although _Recorder has none


# -- import edits: ours against libcst's AddImportsVisitor / RemoveImportsVisitor ---------------

_ADDS = [
    ("os", None, None),
    ("torch", None, None),
    ("torch.nn.modules.utils", "consume_prefix_in_state_dict_if_present", None),
    ("typing", "Optional", "Opt"),
    ("numpy", None, "np"),
    ("__future__", "annotations", None),
]


def _leading_from_imports(module: cst.Module) -> list[tuple[str, str | None, str | None]]:
    """A new name from each module the source already imports from (merged into that line)."""
    out = []
    for statement in module.body:
        for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
                out.append((cst.Module(body=[]).code_for_node(small.module), "added_name", None))
    return out[:3]


def _libcst_edit(tree: cst.Module, adds=(), removes=()) -> str:
    from libcst.codemod import CodemodContext as LibcstContext
    from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor

    context = LibcstContext()
    if adds:
        for module, obj, asname in adds:
            AddImportsVisitor.add_needed_import(context, module, obj, asname)
        tree = AddImportsVisitor(context).transform_module(tree)
    if removes:
        for module, obj, asname in removes:
            RemoveImportsVisitor.remove_unused_import(context, module, obj, asname)
        tree = RemoveImportsVisitor(context).transform_module(tree)
    return tree.code


class _Edits(MigrationCodemod):
    CODE = "TM995"
    ADDS: tuple = ()
    REMOVES: tuple = ()

    def visit_Module(self, node: cst.Module) -> None:
        for args in self.ADDS:
            self.add_needed_import(*args)
        for args in self.REMOVES:
            self.remove_unused_import(*args)


def _ours(tree: cst.Module, adds=(), removes=()) -> str:
    edits = type("_E", (_Edits,), {"ADDS": tuple(adds), "REMOVES": tuple(removes)})
    return edits(CodemodContext(), FileContext()).transform_module(tree).code


def _unused_imports(module: cst.Module) -> list[tuple[str, str | None, str | None]]:
    """Top-level imports whose bound name the module spells nowhere else: both removers drop them
    (libcst never drops a `__future__` import; no codemod asks to)."""
    import re

    code = module.code
    out = []
    for statement in module.body:
        for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.Import):
                for alias in small.names:
                    bound = alias.evaluated_alias or alias.evaluated_name.split(".")[0]
                    if len(re.findall(rf"(?<![.\w]){re.escape(bound)}\b", code)) == 1:
                        out.append((alias.evaluated_name, None, alias.evaluated_alias))
            elif isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
                if isinstance(small.names, cst.ImportStar):
                    continue
                name = cst.Module(body=[]).code_for_node(small.module)
                if name == "__future__":
                    continue
                for alias in small.names:
                    bound = alias.evaluated_alias or alias.evaluated_name
                    if len(re.findall(rf"(?<![.\w]){re.escape(bound)}\b", code)) == 1:
                        out.append((name, alias.evaluated_name, alias.evaluated_alias))
    return out


_EDIT_SOURCES = [
    ("docstring", '"""Doc."""\nimport sys\nfrom typing import List\n\nx = 1\n'),
    ("strict", "__strict__ = True\nimport sys\n# c\nx = 1\n"),
    ("comment-first", "# only a comment\nx = 1\n"),
    ("empty", ""),
    ("star", "from typing import *\nimport a; import b\nx = 1\n"),
    ("paren", "from typing import (\n    List,  # keep\n    Dict,  # gone\n    Set,\n)\nimport os, sys, re\nx: List = sys.path\n"),
]


@pytest.mark.parametrize(
    ("name", "text"), _EDIT_SOURCES + [s for s in _sources() if s[0].startswith("fixtures") and ".out." not in s[0]], ids=lambda v: v if "\n" not in v else ""
)
def test_import_edits_equal_libcsts(name: str, text: str) -> None:
    module = cst.parse_module(text)
    adds = [*_ADDS, *_leading_from_imports(module)]
    for request in [adds[:1], adds[2:3], adds[3:5], adds]:
        assert _ours(module, adds=request) == _libcst_edit(module, adds=request)
    removes = _unused_imports(module)
    if removes:
        assert _ours(module, removes=removes) == _libcst_edit(module, removes=removes)
        assert _ours(module, removes=removes[:1]) == _libcst_edit(module, removes=removes[:1])
