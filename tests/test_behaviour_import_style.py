"""TM908 under torch: what its findings say is so — the two import spellings bind one module, and a
`torch.library.Library` outlives the test that made it while `_scoped_library` does not."""

from __future__ import annotations

import importlib
import uuid

import pytest

torch = pytest.importorskip("torch")

from codemods import registry  # noqa: E402
from codemods.api import transform_source  # noqa: E402


def test_both_import_spellings_bind_the_same_module() -> None:
    spelled = importlib.import_module("torch.nn.functional")
    from torch.nn import functional

    assert spelled is functional  # the same holds for torchvision.models, which is not installed here


def test_a_library_made_in_a_test_stays_registered_and_a_scoped_one_does_not() -> None:
    namespace = f"tm908_{uuid.uuid4().hex[:8]}"
    kept = torch.library.Library(namespace, "DEF")
    kept.define("twice(Tensor x) -> Tensor")
    with pytest.raises(RuntimeError):
        torch.library.Library(namespace, "DEF").define("twice(Tensor x) -> Tensor")  # what the next test meets
    scoped = f"{namespace}_scoped"
    with torch.library._scoped_library(scoped, "DEF") as lib:
        lib.define("twice(Tensor x) -> Tensor")
    with torch.library._scoped_library(scoped, "DEF") as lib:
        lib.define("twice(Tensor x) -> Tensor")  # gone with the block: defining it again works


def test_only_test_files_are_told_about_library() -> None:
    source = "import torch\n\nlib = torch.library.Library('ops', 'DEF')\n"
    spec = registry.get("TM908")
    assert [f.code for f in transform_source(source, [spec], path="tests/test_ops.py").findings] == ["TM908"]
    assert not transform_source(source, [spec], path="mypkg/ops.py").findings
