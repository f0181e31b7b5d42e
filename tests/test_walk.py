"""What engine/walk.py relies on of libcst beyond its documented API (setup.cfg pins libcst's
major version for it): if a libcst release changes either, these fail before any codemod does."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper

from codemods.base import MigrationCodemod
from codemods.engine.walk import Walk


def test_typed_stubs_are_marked_no_op() -> None:
    """The dispatch skips CSTTransformer's own visit_X/leave_X stubs by their `_is_no_op` mark."""
    assert getattr(cst.CSTTransformer.visit_Call, "_is_no_op", False)
    assert getattr(cst.CSTTransformer.leave_Call, "_is_no_op", False)

    class Renames(MigrationCodemod):
        def leave_Name(self, original_node, updated_node):
            return updated_node.with_changes(value="y") if original_node.value == "x" else updated_node

    codemod = Renames()
    assert codemod._handler("leave_", cst.Name("x")) is not None
    assert codemod._handler("visit_", cst.Name("x")) is None  # only the stub: not called
    assert codemod.transform_module(cst.parse_module("x = 1\n")).code == "y = 1\n"


def test_unsafe_skip_copy_keeps_the_callers_tree() -> None:
    """Positions are looked up by the nodes of the tree the engine holds: no copy is made."""
    tree = cst.parse_module("a = 1\n")
    assert MetadataWrapper(tree, unsafe_skip_copy=True).module is tree


def test_matcher_decorators_are_refused() -> None:
    import libcst.matchers as m
    import pytest

    with pytest.raises(TypeError, match="matcher decorators"):

        class Decorated(Walk):
            @m.visit(m.Name())
            def on_name(self, node) -> None:
                pass
