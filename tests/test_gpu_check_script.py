"""scripts/verify_gpu_check.sh in CPU mode: the install-from-wheels path a GPU machine takes.

The wheels folder is prepared as for a GPU machine (scripts/gpu_wheels.sh: this project built as a
wheel, its dependencies, pytest and pip downloaded from PyPI for this Python and platform). The
downloads are cached in `$TORCH_MIGRATE_CACHE/gpu-wheels` (default `~/.cache/torch-migrate/gpu-wheels`),
so a rerun only rebuilds the project's wheel. Without PyPI on a cold cache the test FAILS, never
skips. Then the script runs with `--device cpu`: a fresh venv over this interpreter (whose torch
it must use), `pip install --no-index` from the folder, verify on the example projects, the DDP
fixture under torchrun (2 processes, gloo) and the TM101-migrated script; one summary file.
About 2-3 minutes here.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytest.importorskip("torch")

pytestmark = pytest.mark.torch

CACHE = Path(os.environ.get("TORCH_MIGRATE_CACHE", Path.home() / ".cache" / "torch-migrate")) / "gpu-wheels"
VERSION = "%d.%d" % sys.version_info[:2]


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheels folder for this Python: cached downloads, a freshly built project wheel."""
    folder = tmp_path_factory.mktemp("gpu-check") / "wheels"
    CACHE.mkdir(parents=True, exist_ok=True)
    shutil.copytree(CACHE, folder)  # stamps included: downloads already cached are not repeated
    command = [
        str(ROOT / "scripts" / "gpu_wheels.sh"), "-d", str(folder), "--python", sys.executable,
        "--python-version", VERSION, "--platform", f"manylinux_2_28_{platform.machine()}",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        pytest.fail(
            "could not prepare the wheels folder (PyPI is needed on a cold cache at "
            f"{CACHE}):\n{done.stdout[-2000:]}{done.stderr[-3000:]}",
            pytrace=False,
        )
    for item in folder.iterdir():  # keep the downloads (not the project's wheel) for the next run
        if not item.name.startswith("torch_migrate-") and not (CACHE / item.name).exists():
            shutil.copy2(item, CACHE / item.name)
    return folder


def _run_check(wheels: Path, summary: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV", "OUT"}}
    command = [
        str(ROOT / "scripts" / "verify_gpu_check.sh"), "--python", sys.executable, "--wheels", str(wheels),
        "--device", "cpu", "--summary", str(summary), *extra,
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=400, env=env)


def test_cpu_mode_installs_from_the_wheels_and_passes_every_check(wheels: Path, tmp_path: Path) -> None:
    summary_path = tmp_path / "summary.json"
    done = _run_check(wheels, summary_path)
    assert summary_path.is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads(summary_path.read_text())
    checks = {check["name"]: check for check in summary["checks"]}
    failed = {name: check for name, check in checks.items() if not check["ok"]}
    assert not failed, json.dumps(failed, indent=1)[-4000:]
    assert done.returncode == 0 and summary["passed"] is True, done.stdout[-3000:]
    assert summary["device"] == "cpu"
    assert summary["seconds"] < 330

    # Installed into the fresh venv from the folder, with no index; torch is this interpreter's.
    install = checks["install from wheels"]
    pip = next(step for step in install["steps"] if step["step"] == "pip install")
    assert "--no-index" in pip["command"] and pip["command"][pip["command"].index("--find-links") + 1] == str(wheels)
    assert pip["command"][1].startswith(str(wheels / "pip-"))  # pip itself from the folder too
    site = install["site_packages"]
    assert install["codemods_file"].startswith(site)
    assert install["version_output"].startswith("torch-migrate, version")
    installed = [Path(p).name for p in install["installed_from_wheels"]]
    assert any(name.startswith("torch_migrate-") for name in installed)
    assert any(name.startswith("libcst-") for name in installed)
    import torch

    assert install["torch_file"] == torch.__file__ and not install["torch_file"].startswith(site)

    # verify on each example, with its expected outcome (pinned_warning: one fair regression).
    examples = [name for name in checks if name.startswith("verify ")]
    assert {"verify loss_warnings --device cpu", "verify pinned_warning --device cpu"} <= set(examples)
    for name in examples:
        assert checks[name]["device"]["uses_cuda"] is False
        assert checks[name]["exit_code"] == checks[name]["expected_exit_code"]
    assert "TM001 on legacy.py" in checks["verify pinned_warning --device cpu"]["message"]

    ddp = checks["DDP fixture under torchrun"]
    assert ddp["nproc"] == 2 and [a["backend"] for a in ddp["audits"]] == ["gloo", "gloo"]
    assert [a["saves"] for a in ddp["audits"]] == [1, 0]

    tm101 = checks["TM101-migrated script"]
    assert tm101["loss_inputs"] == [["cpu", "cpu"]]
    assert tm101["legacy_exit_code"] != 0  # the original needs CUDA


def test_a_wheels_folder_without_the_project_fails_the_install_check(tmp_path: Path) -> None:
    empty = tmp_path / "wheels"
    empty.mkdir()
    summary_path = tmp_path / "summary.json"
    done = _run_check(empty, summary_path)
    assert done.returncode == 1, done.stdout + done.stderr
    summary = json.loads(summary_path.read_text())
    assert summary["passed"] is False
    install = next(check for check in summary["checks"] if check["name"] == "install from wheels")
    assert not install["ok"] and "gpu_wheels.sh" in install["problems"][0]
    assert [check["name"] for check in summary["checks"]] == ["environment", "install from wheels"]
