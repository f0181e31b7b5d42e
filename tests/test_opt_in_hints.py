"""TM907 (performance hints) and TM908 (import style) are style, not migration: off by default,
on when a selection names them (a code, a name, a prefix or ALL)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codemods import registry
from codemods.api import Options, migrate

LOADER = "import torchvision.models as models\nfrom torch.utils.data import DataLoader\n\nloader = DataLoader(range(8), 4)\n"


def _codes(specs) -> set[str]:
    return {s.code for s in specs}


def test_off_by_default() -> None:
    assert registry.OPT_IN == {"TM907", "TM908"}
    assert not _codes(registry.select()) & registry.OPT_IN
    assert "TM905" in _codes(registry.select())


@pytest.mark.parametrize("selection", [("TM907",), ("performance-hints",), ("TM9",), ("ALL",)])
def test_on_when_selected(selection) -> None:
    assert "TM907" in _codes(registry.select(selection))


def test_a_default_run_reports_neither_a_selected_run_both(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(LOADER)
    default = migrate([str(tmp_path)], Options(use_config=False, cache=False, mode="diff"))
    assert not {f.code for f in default.findings} & registry.OPT_IN
    chosen = migrate([str(tmp_path)], Options(use_config=False, cache=False, mode="diff", select=("TM907", "TM908")))
    assert {f.code for f in chosen.findings} == {"TM907", "TM908"}
