"""Every fixture pair under fixtures/TMxxx-slug/: exact output, idempotence, expected findings.

A line of a `.in.py` that must yield a finding says so in a trailing comment: `# expect: TM001`.
A fixture for an older target torch says so on its first line: `# target-torch: 1.13`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from codemods import registry
from codemods.api import transform_source
from tests.conftest import FIXTURES

CASES = sorted(FIXTURES.glob("TM*/*.in.py"))
_EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>TM\d+(?:\s*,\s*TM\d+)*)")
_TARGET = re.compile(r"#\s*target-torch:\s*(?P<version>\d+\.\d+)\s*$")


def target_of(source: str) -> str | None:
    """The target torch a fixture declares on its first line, else None (the newest)."""
    match = _TARGET.match(source.partition("\n")[0])
    return match.group("version") if match else None


def _expected_findings(source: str) -> set[tuple[int, str]]:
    expected = set()
    for number, line in enumerate(source.splitlines(), start=1):
        match = _EXPECT.search(line)
        if match:
            expected |= {(number, code.strip()) for code in match.group("codes").split(",")}
    return expected


def _specs(case: Path) -> list[registry.Spec]:
    return [registry.get(case.parent.name.split("-", 1)[0])]


@pytest.mark.parametrize("before", CASES, ids=lambda p: f"{p.parent.name}/{p.name[:-6]}")
def test_fixture(before: Path) -> None:
    source = before.read_text()
    expected = before.with_name(before.name.replace(".in.py", ".out.py")).read_text()
    result = transform_source(source, _specs(before), path=before.name, target_torch=target_of(source))
    assert result.problem is None, result.problem
    assert result.code == expected
    found = {(f.line, f.code) for f in result.findings if f.kind == "finding"}
    assert found == _expected_findings(source)


@pytest.mark.parametrize("before", CASES, ids=lambda p: f"{p.parent.name}/{p.name[:-6]}")
def test_fixture_is_idempotent(before: Path) -> None:
    target = target_of(before.read_text())
    once = transform_source(before.read_text(), _specs(before), target_torch=target).code
    twice = transform_source(once, _specs(before), target_torch=target)
    assert twice.code == once
    assert not twice.changed


def test_every_codemod_has_the_four_kinds_of_fixture() -> None:
    for spec in registry.PIPELINE:
        folder = FIXTURES / f"{spec.code}-{spec.name}"
        assert folder.is_dir(), f"{spec.code} has no fixtures folder {folder.name}"
        sources = [p.read_text() for p in folder.glob("*.in.py")]
        outputs = {p.name: p.read_text() for p in folder.glob("*.out.py")}
        assert any(
            outputs[p.name.replace(".in.py", ".out.py")] != p.read_text() for p in folder.glob("*.in.py")
        ), f"{spec.code}: no fixture that rewrites"
        assert any(
            outputs[p.name.replace(".in.py", ".out.py")] == p.read_text() and not _expected_findings(p.read_text())
            for p in folder.glob("*.in.py")
        ), f"{spec.code}: no look-alike fixture that must stay unchanged"
        assert any(_expected_findings(s) for s in sources), f"{spec.code}: no fixture expecting a finding"
        assert any(" as " in s for s in sources), f"{spec.code}: no fixture with aliased imports"
