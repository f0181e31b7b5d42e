"""TM101 + TM102 behaviour: a GPU-only legacy script crashes on a CPU machine, and after migration
runs to the same result as a hand-ported CPU reference.

There is no GPU here, so the checkpoint "saved on a GPU" is crafted: a CPU checkpoint whose pickle
records each storage's location as `cuda:0` instead of `cpu` (exactly what `torch.save` writes for
CUDA tensors), which `torch.load` without `map_location` refuses to load without CUDA.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from codemods import registry  # noqa: E402
from codemods.api import transform_source  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402

SCRIPTS = FIXTURES / "device_script"
# Hide any GPU: this test is about a machine without CUDA.
CPU_ONLY = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}


def save_as_if_on_gpu(obj: object, path: Path) -> None:
    """torch.save `obj`, then re-tag every storage's location from `cpu` to `cuda:0`."""
    plain = path.with_suffix(".cpu.pt")
    torch.save(obj, plain)
    cpu, cuda = b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0"  # BINUNICODE, protocol 2
    with zipfile.ZipFile(plain) as zin, zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename.endswith("/data.pkl"):
                assert data.count(cpu) == 1, "pickle memoizes the location string: one copy to re-tag"
                data = data.replace(cpu, cuda)
            zout.writestr(info, data)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    namespace: dict = {}
    exec(compile((SCRIPTS / "cpu_reference.py").read_text(), "cpu_reference.py", "exec"), namespace)
    torch.manual_seed(0)
    state = namespace["Net"]().state_dict()
    path = tmp_path_factory.mktemp("ckpt") / "gpu_checkpoint.pt"
    save_as_if_on_gpu(state, path)
    return path


def _run(script: Path, checkpoint: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(script), str(checkpoint)], capture_output=True, text=True, env=CPU_ONLY, timeout=120
    )


def _migrated(tmp_path: Path) -> tuple[Path, str]:
    result = transform_source((SCRIPTS / "legacy_gpu.py").read_text(), registry.select(), path="legacy_gpu.py")
    assert result.problem is None, result.problem
    assert result.rewrites and {"TM101", "TM102"} <= set(result.rewrites)
    target = tmp_path / "migrated.py"
    target.write_text(result.code)
    return target, result.code


def test_the_crafted_checkpoint_needs_cuda(checkpoint: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # as on this machine, even on a GPU one
    with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
        torch.load(checkpoint)
    state = torch.load(checkpoint, map_location=torch.device("cpu"))
    assert all(t.device.type == "cpu" for t in state.values())


def test_legacy_script_crashes_without_cuda(checkpoint: Path) -> None:
    run = _run(SCRIPTS / "legacy_gpu.py", checkpoint)
    assert run.returncode != 0
    assert "CUDA" in run.stderr, run.stderr


LEGACY_IDIOMS = [
    "torch.zeros(2).cuda()",
    "torch.nn.Linear(2, 2).cuda()",
    "torch.zeros(2).cuda(non_blocking=True)",
    "torch.cuda.FloatTensor([0.5, 1.0])",
    "torch.cuda.FloatTensor(3)",
]


def test_each_legacy_idiom_of_the_script_crashes_without_cuda() -> None:
    # One interpreter for all of them: importing torch is the slow part.
    probe = (
        "import json, sys, torch\n"
        "ok = []\n"
        "for statement in json.loads(sys.argv[1]):\n"
        "    try:\n"
        "        exec(statement)\n"
        "        ok.append(statement)\n"
        "    except (AssertionError, RuntimeError, TypeError):\n"
        "        pass\n"
        "print(json.dumps(ok))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe, json.dumps(LEGACY_IDIOMS)], capture_output=True, text=True, env=CPU_ONLY
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == []  # none of them runs without CUDA


def test_migrated_script_matches_the_cpu_reference(checkpoint: Path, tmp_path: Path) -> None:
    migrated, code = _migrated(tmp_path)
    assert ".cuda(" not in code and "torch.cuda.FloatTensor" not in code
    assert "inputs = inputs.to(device)" in code  # the discarded move now takes effect

    after = _run(migrated, checkpoint)
    assert after.returncode == 0, after.stderr
    reference = _run(SCRIPTS / "cpu_reference.py", checkpoint)
    assert reference.returncode == 0, reference.stderr

    got, want = json.loads(after.stdout), json.loads(reference.stdout)
    torch.testing.assert_close(torch.tensor(got["outputs"]), torch.tensor(want["outputs"]))
    torch.testing.assert_close(torch.tensor(got["loss"]), torch.tensor(want["loss"]))


def _run_function(source: str, name: str, *args):
    namespace: dict = {}
    exec(compile(source, "<migrated>", "exec"), namespace)
    return namespace[name](*args)


def test_a_discarded_cuda_call_now_moves_the_tensor() -> None:
    # `meta` stands in for a GPU: moving there is observable on any machine.
    source = "def move(x, device):\n    x.cuda()\n    return x\n"
    result = transform_source(source, [registry.get("TM101")])
    assert "x = x.to(device)" in result.code
    moved = _run_function(result.code, "move", torch.zeros(3), torch.device("meta"))
    assert moved.device.type == "meta"


def test_a_module_moves_in_place_and_keeps_its_identity() -> None:
    source = (
        "import torch.nn as nn\n"
        "def build(device):\n"
        "    model = nn.Linear(2, 2)\n"
        "    model.cuda()\n"
        "    return model\n"
    )
    result = transform_source(source, [registry.get("TM101")])
    assert "    model.to(device)\n" in result.code
    model = _run_function(result.code, "build", torch.device("meta"))
    assert model.weight.device.type == "meta"


def test_a_colliding_device_name_is_left_intact() -> None:
    source = (
        "import torch\n"
        "device = 'gpu-index-0'\n"
        "def f(x):\n"
        "    return x.cuda()\n"
    )
    result = transform_source(source, [registry.get("TM101")])
    namespace: dict = {}
    exec(compile(result.code, "<migrated>", "exec"), namespace)
    assert namespace["device"] == "gpu-index-0"
    assert namespace["f"](torch.ones(1)).device == torch.device("cpu")
