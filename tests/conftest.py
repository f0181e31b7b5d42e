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


def load_script(name: str):
    """scripts/<name>.py as a module, loaded once (so its classes are the same in every test module)."""
    import importlib.util
    import sys

    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="session")
def old_torch_python() -> str:
    """The interpreter of the cached torch 1.13.1 venv (scripts/old_torch.py), built on first use.

    A cross-version test without it fails, never skips: the proof across versions is the promise.
    """
    old_torch = load_script("old_torch")
    try:
        return str(old_torch.build())
    except old_torch.SetupError as exc:
        pytest.fail(f"the torch 1.13.1 venv could not be built: {exc}", pytrace=False)
