"""The checked-in data tables match the installed torch (they are generated from it)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT


def test_tables_are_current_with_installed_torch() -> None:
    pytest.importorskip("torch")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_tables.py"), "--check"], capture_output=True, text=True, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
