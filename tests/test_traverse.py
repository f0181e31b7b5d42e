"""engine/traverse.py walks as libcst's `visit` does: the same callbacks in the same order, the same
output, without entering tokens and without rebuilding what did not change."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from codemods.engine.traverse import TOKENS, handles_tokens, traverse

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SOURCES = sorted(FIXTURES.glob("TM*/*.in.py"))

# Shapes the fixtures may not hold: every compound statement, f-strings with format specs,
# relative star imports, decorators, match, walrus, lambda defaults, except*, type hints.
ODD = '''\
from . import *
from ..pkg import (a as b, c)
import os.path as p, sys
@dec(1)
@other
class C(Base, metaclass=M):
    x: int = 1
    def f(self, a, /, b=lambda q=1: q, *args, c: "str" = f"{1:{2}}", **kw) -> None:
        global g
        while (n := a.b[1:2, ...]):
            if a: pass
            elif b: continue
            else: break
        try:
            yield from b
        except* ValueError as e:
            raise RuntimeError() from e
        finally:
            del a[0], b
        with open(x) as (f, g), y:
            assert not a is not b, "m"
        for i, *j in {k: v for k, v in d.items() if k}: print(i, end="")
        match c:
            case [1, *rest] | {"k": _, **kw} if rest: return -a ** 2
            case Point(x=0) as p: lambda: (yield)
        return [*a, *{*b}] + (await g)  # comment
x = 1; y = 2  # trailing
'''


class Recorder(cst.CSTTransformer):
    """Records every callback on a non-token node; renames `x` to `renamed`."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, str, str]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if type(node) not in TOKENS:
            self.events.append(("visit", type(node).__name__, ""))
        return True

    def on_leave(self, original_node, updated_node):
        if type(original_node) not in TOKENS:
            self.events.append(("leave", type(original_node).__name__, ""))
        if isinstance(updated_node, cst.Name) and updated_node.value == "x":
            return updated_node.with_changes(value="renamed")
        return updated_node

    def visit_Call_func(self, node: cst.Call) -> None:
        self.events.append(("visit_attribute", "Call", "func"))

    def leave_Arg_value(self, node: cst.Arg) -> None:
        self.events.append(("leave_attribute", "Arg", "value"))


class Remover(cst.CSTTransformer):
    """Removes `pass` statements and expression arguments named `drop`, splits `dup()` in two."""

    def leave_Pass(self, original_node, updated_node):
        return cst.RemovalSentinel.REMOVE

    def leave_Arg(self, original_node, updated_node):
        if isinstance(updated_node.value, cst.Name) and updated_node.value.value == "drop":
            return cst.RemovalSentinel.REMOVE
        return updated_node

    def leave_SimpleStatementLine(self, original_node, updated_node):
        if "dup()" in cst.Module([]).code_for_node(original_node):
            return cst.FlattenSentinel([updated_node, updated_node.deep_clone()])
        return updated_node


def _parses(source: str) -> bool:
    try:
        cst.parse_module(source)
    except cst.ParserSyntaxError:
        return False  # TM000's inputs: `async` as a name
    return True


TEXTS = [ODD, *(text for text in (path.read_text() for path in SOURCES) if _parses(text))]


@pytest.mark.parametrize("index", range(len(TEXTS)))
def test_same_callbacks_and_output_as_libcst(index: int) -> None:
    tree = cst.parse_module(TEXTS[index])
    ours, theirs = Recorder(), Recorder()
    assert traverse(tree, ours).code == tree.visit(theirs).code
    assert ours.events == theirs.events


def test_removal_and_flattening_as_libcst() -> None:
    source = "def f():\n    pass\n\nif a:\n    pass\nelse:\n    g(1, drop, 2)\n    dup()\nh(drop)\n"
    tree = cst.parse_module(source)
    expected = tree.visit(Remover()).code
    assert traverse(tree, Remover()).code == expected
    assert "drop" not in expected and expected.count("dup()") == 2  # the test exercises both


def test_unchanged_nodes_keep_their_identity() -> None:
    tree = cst.parse_module("a = 1\nif b:\n    c(x)\n")
    new = traverse(tree, Recorder())
    assert new is not tree
    assert new.body[0] is tree.body[0]  # nothing in `a = 1` was renamed
    assert new.body[1] is not tree.body[1]
    assert traverse(tree, cst.CSTTransformer()) is tree


def test_a_visitor_sees_the_nodes_libcst_shows_it() -> None:
    tree = cst.parse_module(ODD)

    class Names(cst.CSTVisitor):
        def __init__(self) -> None:
            super().__init__()
            self.names: list[str] = []

        def visit_Name(self, node: cst.Name) -> None:
            self.names.append(node.value)

    ours, theirs = Names(), Names()
    traverse(tree, ours)
    tree.visit(theirs)
    assert ours.names == theirs.names and "renamed" not in ours.names


def test_a_class_that_handles_tokens_gets_libcst_walk() -> None:
    class Commas(cst.CSTVisitor):
        def __init__(self) -> None:
            super().__init__()
            self.count = 0

        def visit_Comma(self, node: cst.Comma) -> None:
            self.count += 1

    assert handles_tokens(Commas) and not handles_tokens(Recorder)
    visitor = Commas()
    traverse(cst.parse_module("f(a, b, c)\n"), visitor)
    assert visitor.count == 2


def test_removing_a_required_child_fails_as_in_libcst() -> None:
    class Bad(cst.CSTTransformer):
        def leave_Name(self, original_node, updated_node):
            return cst.RemovalSentinel.REMOVE

    tree = cst.parse_module("a.b\n")
    with pytest.raises(TypeError, match="RemovalSentinel"):
        tree.visit(Bad())
    with pytest.raises(TypeError, match="RemovalSentinel"):
        traverse(tree, Bad())
