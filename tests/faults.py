"""A deliberately broken migration, for verify's own tests: a codemod registered only in a test.

`TM099 test-fault` removes the definitions it is given (`function`, `Class.method`) from the files
it is given, the way real wrong rewrites break code: a method that is gone (AttributeError at the
call) or a name that other modules import (their import fails, so their tests are not collected).
It is never part of the shipped pipeline: `install()` adds it to this process's registry.

    python tests/faults.py 'ignite/metrics/mean_absolute_error.py=MeanAbsoluteError.compute' verify PROJECT ...

runs the real CLI with the fault installed (worker processes are forked, so they have it too).
"""

from __future__ import annotations

import re
import sys
from typing import Mapping

import libcst as cst

from codemods import registry
from codemods.base import MigrationCodemod

CODE, NAME = "TM099", "test-fault"


class TestFault(MigrationCodemod):
    """Test only: remove definitions, breaking the code on purpose."""

    __test__ = False  # not a pytest test class
    CODE = CODE
    DESCRIPTION = "test only: removes definitions, the way a wrong rewrite breaks code"
    # file suffix -> dotted definition names to remove there. A class attribute, set by
    # install(): the engine pickles the class by reference for its (forked) workers.
    TARGETS: dict[str, set[str]] = {}

    def visit_Module(self, node: cst.Module) -> None:
        path = self.file.path.replace("\\", "/")
        self.wanted = next((names for f, names in self.TARGETS.items() if path.endswith(f)), set())
        self.scope: list[str] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.scope.append(node.name.value)

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef):
        self.scope.pop()
        return self._drop(original, updated)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scope.append(node.name.value)

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef):
        self.scope.pop()
        return self._drop(original, updated)

    def _drop(self, original, updated):
        if ".".join([*self.scope, original.name.value]) in self.wanted:
            return self.rewrite(original, updated, cst.RemoveFromParent())
        return updated


def spec(targets: Mapping[str, set[str]]) -> registry.Spec:
    words = sorted({name.rpartition(".")[2] for names in targets.values() for name in names})
    triggers = tuple(rf"\b(?:def|class)\s+{re.escape(w)}\b" for w in words)
    TestFault.TARGETS = {f: set(names) for f, names in targets.items()}
    return registry.Spec(CODE, NAME, TestFault, registry.Safety.SAFE, triggers)


def install(targets: Mapping[str, set[str]]) -> registry.Spec:
    """Append the fault to this process's pipeline (last: it breaks what the others produced)."""
    fault = spec(targets)
    registry.PIPELINE = (*registry.PIPELINE, fault)
    return fault


def parse(text: str) -> dict[str, set[str]]:
    """`file=Name,Class.method;file2=...` -> {file: names}."""
    targets: dict[str, set[str]] = {}
    for part in filter(None, text.split(";")):
        file, _, names = part.partition("=")
        targets.setdefault(file, set()).update(filter(None, names.split(",")))
    return targets


if __name__ == "__main__":
    install(parse(sys.argv[1]))
    from codemods.cli import main

    main(sys.argv[2:], prog_name="torch-migrate")
