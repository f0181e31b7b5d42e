from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
PROJECTS = FIXTURES / "projects"


@pytest.fixture
def project(tmp_path: Path):
    """Copy a bundled fixture project into a temp dir and return its path."""
    import shutil

    def copy(name: str) -> Path:
        target = tmp_path / name
        shutil.copytree(PROJECTS / name, target, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        return target

    return copy
