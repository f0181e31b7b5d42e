"""Every line a codemod writes into a CRLF file ends in CRLF, as the file's own lines do.

libcst writes its newline tokens with the module's line ending, but the text of a token that
spans lines (a generated helper's docstring, a backslash continuation) keeps the line ends it was
parsed with. Each fixture whose migration adds lines is run again as a CRLF file: the output must
be the fixture's expected output with CRLF line ends, byte for byte.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from codemods import registry
from codemods.api import transform_source
from tests.conftest import FIXTURES
from tests.test_fixtures import target_of


def _adds_lines(case: Path) -> bool:
    before = case.read_bytes().count(b"\n")
    return case.with_name(case.name.replace(".in.py", ".out.py")).read_bytes().count(b"\n") > before


CASES = [case for case in sorted(FIXTURES.glob("TM*/*.in.py")) if _adds_lines(case)]


@pytest.mark.parametrize("before", CASES, ids=lambda p: f"{p.parent.name}/{p.name[:-6]}")
def test_inserted_lines_end_as_the_file_does(before: Path) -> None:
    source = before.read_text()
    expected = before.with_name(before.name.replace(".in.py", ".out.py")).read_text()
    spec = registry.get(before.parent.name.split("-", 1)[0])
    result = transform_source(source.replace("\n", "\r\n"), [spec], path=before.name, target_torch=target_of(source))
    assert result.problem is None, result.problem
    lone = [n for n, line in enumerate(result.code.split("\n")[:-1], start=1) if not line.endswith("\r")]
    assert not lone, f"lines ending in LF alone: {lone}"
    assert result.code == expected.replace("\n", "\r\n")
