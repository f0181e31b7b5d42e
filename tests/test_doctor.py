"""`doctor`: pure checks with the machine simulated (a 64 MB /dev/shm, a GPU), and the click command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from codemods import doctor as D
from codemods.doctor_cli import doctor

CPU_TORCH = D.TorchInfo(installed=True, version="2.13.0+cpu")
DOCKER_DEFAULT_SHM = 64 * D.MiB


def _by_name(report: D.DoctorReport) -> dict[str, D.Check]:
    return {c.name: c for c in report.checks}


def test_small_shm_and_docker_run_without_shm_size_are_reported(project) -> None:
    root = project("docker_workers")
    report = D.diagnose(root, probe=lambda: CPU_TORCH, shm=lambda: DOCKER_DEFAULT_SHM)
    checks = _by_name(report)
    assert checks["shm"].status == D.FAIL
    assert "64 MiB" in checks["shm"].message and "--shm-size" in checks["shm"].fix
    assert set(checks["shm"].where) == {"data.py:8", "data.py:13"}
    assert checks["docker"].status == D.FAIL
    # run.sh's `docker run` and compose's `train` service lack it; README's --ipc=host and the
    # `notebook` service's shm_size are fine.
    assert set(checks["docker"].where) == {"run.sh:4", "docker-compose.yml:2"}
    assert report.exit_code == 1


def test_fixed_launches_and_a_big_shm_pass(project) -> None:
    root = project("docker_workers")
    run = root / "run.sh"
    run.write_text(run.read_text().replace("docker run --rm", "docker run --shm-size=8g --rm"))
    compose = root / "docker-compose.yml"
    compose.write_text(compose.read_text().replace("    image: docker-workers\n    command", "    image: docker-workers\n    ipc: host\n    command"))
    report = D.diagnose(root, probe=lambda: CPU_TORCH, shm=lambda: 16 * D.GiB)
    checks = _by_name(report)
    assert checks["shm"].status == D.OK and checks["docker"].status == D.OK
    assert report.exit_code == 0


def test_without_workers_shm_and_docker_do_not_matter(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("from torch.utils.data import DataLoader\nDataLoader(ds, num_workers=0)\n")
    (tmp_path / "Makefile").write_text("train:\n\tdocker run image python train.py\n")
    report = D.diagnose(tmp_path, probe=lambda: CPU_TORCH, shm=lambda: DOCKER_DEFAULT_SHM)
    checks = _by_name(report)
    assert checks["shm"].status == D.OK
    assert checks["docker"].status == D.INFO and checks["docker"].where == ("Makefile:2",)
    assert report.exit_code == 0


def test_many_workers_on_a_medium_shm_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import torch.utils.data as tud\nloader = tud.DataLoader(ds, num_workers=16)\n")
    report = D.diagnose(tmp_path, probe=lambda: CPU_TORCH, shm=lambda: 1 * D.GiB)
    assert _by_name(report)["shm"].status == D.WARN


def test_continued_docker_run_lines_are_joined(tmp_path: Path) -> None:
    (tmp_path / "loader.py").write_text("DataLoader(ds, num_workers=2)\n")
    (tmp_path / "go.sh").write_text("nvidia-docker run \\\n  --ipc=host \\\n  img\n")
    assert _by_name(D.diagnose(tmp_path, probe=lambda: CPU_TORCH, shm=lambda: None))["docker"].status == D.OK


@pytest.mark.parametrize(
    ("info", "status"),
    [
        (D.TorchInfo(installed=False, error="ModuleNotFoundError: No module named 'torch'"), D.FAIL),
        (D.TorchInfo(installed=True, version="1.4.0"), D.WARN),
        (CPU_TORCH, D.OK),
    ],
)
def test_torch_check(info: D.TorchInfo, status: str) -> None:
    assert D.check_torch(info).status == status


def test_cuda_check_names_the_devices() -> None:
    info = D.TorchInfo(True, "2.13.0", cuda_available=True, cuda_version="12.8", devices=("NVIDIA H200",))
    check = D.check_cuda(info)
    assert check.status == D.OK and "NVIDIA H200" in check.message
    assert D.check_cuda(CPU_TORCH).status == D.INFO


def test_the_real_probes_answer() -> None:
    torch = pytest.importorskip("torch")
    info = D.probe_torch()
    assert info.installed and info.version == str(torch.__version__)
    assert info.cuda_available == torch.cuda.is_available()
    assert D.shm_bytes("/nonexistent/shm") is None


def test_cli_json_and_exit_code(project, monkeypatch: pytest.MonkeyPatch) -> None:
    root = project("docker_workers")
    monkeypatch.setattr(D, "probe_torch", lambda python=None: CPU_TORCH)
    monkeypatch.setattr(D, "shm_bytes", lambda: DOCKER_DEFAULT_SHM)
    result = CliRunner().invoke(doctor, [str(root), "--format", "json"])
    assert result.exit_code == 1, result.output
    data = json.loads(result.output)
    assert {c["name"]: c["status"] for c in data["checks"]} == {
        "torch": "ok", "cuda": "info", "shm": "fail", "docker": "fail"
    }
    text = CliRunner().invoke(doctor, [str(root)])
    assert text.exit_code == 1 and "--shm-size" in text.output and "run.sh:4" in text.output
