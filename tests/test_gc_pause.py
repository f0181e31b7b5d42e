"""The cycle collector is paused per file (engine/gc_pause.py), which only pays because the engine
leaves no reference cycles behind: a file's trees, surveys and pyflakes' checker are freed by
reference counting. These tests fail if a cycle creeps back in (a bound method cached on a
codemod, a checker's scopes kept), or if the pause leaks past its file."""

from __future__ import annotations

import ast
import gc
from collections import Counter
from pathlib import Path

import libcst as cst
import pytest

from codemods import api
from codemods.engine.gc_pause import paused_gc
from codemods.engine.walk import Walk

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _cyclic_garbage(run) -> list:
    """The objects `run()` leaves that only the cycle collector frees."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        run()
        gc.collect()
        return list(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()


def test_migrating_files_leaves_no_codemod_checker_or_tree_to_the_cycle_collector(tmp_path: Path) -> None:
    # Inputs that exercise every codemod, the name guard (pyflakes) and the import edits. Some
    # codemods' surveys are cyclic by design (a scope's values keep the environment that holds
    # the scope); those cycles are small and the pause's collection at the end of each file
    # frees them. What must not be cyclic is what holds a whole file: the codemod objects
    # (their dispatch), pyflakes' checker (its scopes and ast) and the trees themselves.
    # TM000's inputs are left out: libcst's parse errors keep their frames in a cycle (an
    # exception raised in an `except` block), inside libcst, and the pause's collection frees them.
    inputs = [path for path in sorted(FIXTURES.glob("TM*/*.in.py")) if not path.parent.name.startswith("TM000")]
    for index, source in enumerate(inputs):
        (tmp_path / f"m{index}.py").write_text(source.read_text())
    options = api.Options(mode="diff", cache=False, use_config=False, jobs=1)
    api.migrate([str(tmp_path)], options)  # first run: imports, per-class caches
    report = None

    def run() -> None:
        nonlocal report
        report = api.migrate([str(tmp_path)], options)

    garbage = _cyclic_garbage(run)
    assert sum(result.status.value == "changed" for result in report.files) > 100
    kinds = Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in garbage)
    assert not [o for o in garbage if isinstance(o, Walk)], kinds
    assert not [o for o in garbage if type(o).__module__.startswith("pyflakes")], kinds
    assert not [o for o in garbage if isinstance(o, (cst.Module, ast.Module))], kinds


def test_pause_restores_the_collector_and_frees_the_cycles_made_inside() -> None:
    assert gc.isenabled()

    class Node:
        pass

    with paused_gc():
        assert not gc.isenabled()
        with paused_gc():  # nested: the outer pause stays in charge
            assert not gc.isenabled()
        assert not gc.isenabled()
        cycle = Node()
        cycle.me = cycle
        probe = __import__("weakref").ref(cycle)
        del cycle
        assert probe() is not None  # only a collection frees a cycle
    assert gc.isenabled()
    assert probe() is None


def test_pause_leaves_a_disabled_collector_disabled() -> None:
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_pause_restores_the_collector_when_the_block_raises() -> None:
    with pytest.raises(ValueError):
        with paused_gc():
            raise ValueError
    assert gc.isenabled()
