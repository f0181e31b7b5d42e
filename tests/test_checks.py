"""The findings-only checks (TM9xx): registered, documented, never rewriting, fixtures both ways."""

from __future__ import annotations

import re

import pytest

from codemods import registry
from codemods.api import transform_source
from tests.conftest import FIXTURES

SECTIONS = ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety", "## References")
_EXPECT = re.compile(r"#\s*expect:\s*TM9\d\d")


@pytest.mark.parametrize("spec", registry.CHECKS, ids=lambda s: s.code)
def test_check_has_fixtures_that_fire_and_that_stay_quiet(spec: registry.Spec) -> None:
    folder = FIXTURES / f"{spec.code}-{spec.name}"
    sources = [p.read_text() for p in sorted(folder.glob("*.in.py"))]
    assert any(_EXPECT.search(s) for s in sources), f"{spec.code}: no fixture where it fires"
    assert any(not _EXPECT.search(s) and spec.fires_on(s) for s in sources), f"{spec.code}: no must-not-fire fixture"
    assert any(" as " in s for s in sources), f"{spec.code}: no fixture with aliased imports"


@pytest.mark.parametrize("spec", registry.CHECKS, ids=lambda s: s.code)
def test_check_never_rewrites(spec: registry.Spec) -> None:
    for case in (FIXTURES / f"{spec.code}-{spec.name}").glob("*.in.py"):
        result = transform_source(case.read_text(), [spec])
        assert not result.changed and not result.rewrites


@pytest.mark.parametrize("code", ["TM101", "TM102", "TM901", "TM902", "TM903", "TM904"])
def test_documented_in_ruff_sections(code: str) -> None:
    spec = registry.get(code)
    positions = [spec.doc.find(section) for section in SECTIONS]
    assert all(p >= 0 for p in positions) and positions == sorted(positions), code
    assert spec.summary


def test_checks_are_selected_by_default_and_by_prefix() -> None:
    default = {s.code for s in registry.select()}
    assert {s.code for s in registry.CHECKS} - default == registry.OPT_IN  # style hints: opt-in
    assert [s.code for s in registry.select(select=["TM9"])] == [s.code for s in registry.CHECKS]
    assert "TM904" not in {s.code for s in registry.select(ignore=["explicit-cuda-index"])}


def test_explicit_index_left_by_tm101_is_reported_by_tm904() -> None:
    source = "import torch\nx = torch.zeros(1)\ny = x.cuda(1)\nz = x.cuda()\n"
    result = transform_source(source, registry.select(select=["TM101", "TM904"]))
    assert "y = x.cuda(1)" in result.code and "z = x.to(device)" in result.code
    assert [(f.code, f.line) for f in result.findings if f.kind == "finding"] == [("TM904", 3)]
