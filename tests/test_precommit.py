"""The pre-commit hooks, run the way pre-commit runs them: the entry, then the staged file names."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

yaml = pytest.importorskip("yaml")
HOOKS = {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}


def _run_hook(hook_id: str, files: list[Path], cwd: Path) -> subprocess.CompletedProcess:
    entry = shlex.split(HOOKS[hook_id]["entry"])
    assert entry[0] == "torch-migrate"
    command = [sys.executable, "-m", "codemods", *entry[1:], *(str(f.relative_to(cwd)) for f in files)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env, timeout=120)


def test_hooks_declare_python_and_notebooks() -> None:
    assert set(HOOKS) == {"torch-migrate", "torch-migrate-check"}
    for hook in HOOKS.values():
        assert hook["language"] == "python" and set(hook["types_or"]) == {"python", "jupyter"}


def test_check_hook_fails_on_legacy_files_and_passes_after_the_rewrite_hook(tmp_path: Path) -> None:
    legacy = tmp_path / "train.py"
    legacy.write_text("import torch.nn as nn\nc = nn.MSELoss(size_average=False)\n")
    other = tmp_path / "other.py"
    other.write_text("x = nn.MSELoss(size_average=False)\n")  # not staged: the hook must not touch it
    assert _run_hook("torch-migrate-check", [legacy], tmp_path).returncode == 1
    assert _run_hook("torch-migrate", [legacy], tmp_path).returncode == 0
    assert 'reduction="sum"' in legacy.read_text()
    assert other.read_text() == "x = nn.MSELoss(size_average=False)\n"
    assert _run_hook("torch-migrate-check", [legacy], tmp_path).returncode == 0
