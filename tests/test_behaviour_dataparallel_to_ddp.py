"""TM103 + TM104 end to end: a legacy DataParallel training script, migrated, run as one process
(same loss and parameters as the original) and under torchrun with 2 CPU processes (gloo)."""

from __future__ import annotations

import json
import os
import runpy
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from codemods.api import transform_source  # noqa: E402
from codemods.engine import companions  # noqa: E402
from tests.conftest import PROJECTS  # noqa: E402

SCRIPT = PROJECTS / "ddp_train" / "train.py"

# Wraps torch.save to record which rank called it: proof of who wrote a checkpoint.
AUDIT = textwrap.dedent("""
    import os, runpy, sys
    import torch

    def save(*args, **kwargs):
        with open(os.environ["SAVES_LOG"], "a") as log:
            log.write(os.environ.get("RANK", "?") + "\\n")
        return original(*args, **kwargs)

    original, torch.save = torch.save, save
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))  # as `torchrun script.py` has it
    runpy.run_path(script, run_name="__main__")
    """)


@pytest.fixture(scope="module")
def migrated(tmp_path_factory) -> Path:
    result = transform_source(SCRIPT.read_text(), path="train.py")  # the default pipeline
    assert result.problem is None, result.problem
    assert {"TM103", "TM104"} <= set(result.rewrites or {})
    # the only DataParallel left is the helper's, for a plain run on several GPUs
    assert "DataParallel(" not in result.code  # the plain run's DataParallel is the helper's
    assert "from ddp_helpers import " in result.code
    assert "torch_migrate" not in result.code and "codemods" not in result.code
    launch = [f for f in result.findings if f.kind == "review" and "torchrun --nproc_per_node=N train.py" in f.message]
    assert launch and "batch_size is now per process" in launch[0].message  # the report says how to launch
    again = transform_source(result.code, path="train.py")
    assert not again.changed and again.code == result.code  # helpers are not added twice
    path = tmp_path_factory.mktemp("migrated") / "train.py"
    path.write_text(result.code)
    (path.parent / "ddp_helpers.py").write_text(companions.text("ddp_helpers"))  # what a run writes beside it
    return path


def _run_here(script: Path, out: Path, monkeypatch) -> dict:
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(sys, "argv", [str(script), str(out)])
    monkeypatch.syspath_prepend(str(script.parent))  # as `python script.py` has it
    runpy.run_path(str(script), run_name="__main__")
    return json.loads((out / "run-0.json").read_text())


def test_one_process_run_is_the_original_run(migrated: Path, tmp_path: Path, monkeypatch) -> None:
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir()
    after.mkdir()
    old = _run_here(SCRIPT, before, monkeypatch)
    new = _run_here(migrated, after, monkeypatch)
    assert not torch.distributed.is_initialized()  # a plain run never makes a process group
    assert new["seen"] == old["seen"]  # the same shuffle: the DataLoader samples as before
    assert new["loss"] == old["loss"]
    old_state = torch.load(before / "model.pt")
    new_state = torch.load(after / "model.pt")
    assert all(k.startswith("module.") for k in old_state)  # the original saved the wrapper
    assert not any(k.startswith("module.") for k in new_state)
    assert list(new_state) == [k[len("module.") :] for k in old_state]
    for key, value in new_state.items():
        torch.testing.assert_close(value, old_state["module." + key], rtol=0, atol=0)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_torchrun_two_cpu_processes(migrated: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    launcher = tmp_path / "audited.py"
    launcher.write_text(AUDIT)
    log = tmp_path / "saves.log"
    env = {k: v for k, v in os.environ.items() if k not in {"RANK", "WORLD_SIZE", "LOCAL_RANK"}}
    env.update(SAVES_LOG=str(log), OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo", CUDA_VISIBLE_DEVICES="")
    command = [
        sys.executable, "-m", "torch.distributed.run",
        "--nnodes=1", "--nproc_per_node=2", "--master_addr=127.0.0.1", f"--master_port={_free_port()}",
        str(launcher), str(migrated), str(out),
    ]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    runs = [json.loads((out / f"run-{rank}.json").read_text()) for rank in (0, 1)]
    for epoch in range(3):
        first, second = (set(run["seen"][epoch]) for run in runs)
        assert len(first) == len(second) == 32
        assert not first & second  # each rank sees a disjoint half
        assert first | second == set(range(64))
    assert runs[0]["seen"][0] != runs[0]["seen"][1]  # set_epoch reshuffles every epoch
    assert done.stdout.count("epoch 2 loss") == 1  # printing on rank 0 only

    assert log.read_text().split() == ["0"]  # only rank 0 wrote a checkpoint
    state = torch.load(out / "model.pt", weights_only=True)
    assert not any(k.startswith("module.") for k in state)
    namespace = runpy.run_path(str(SCRIPT), run_name="not_main")
    model = namespace["Net"]()
    model.load_state_dict(state, strict=True)


def test_ddp_setup_follows_a_gpu_selection_in_another_file(tmp_path: Path) -> None:
    # pytorch-playground's cifar/train.py calls `misc.auto_select_gpu(...)` (utee/misc.py), which
    # sets CUDA_VISIBLE_DEVICES: ddp_setup() initialises CUDA under torchrun, so it must run after
    from codemods.api import Options, migrate

    (tmp_path / "misc.py").write_text('import os\n\n\ndef auto_select_gpu(gpus="1"):\n    os.environ["CUDA_VISIBLE_DEVICES"] = gpus\n    return gpus\n')
    script = tmp_path / "train.py"
    script.write_text(
        "import misc\nimport torch\nimport torch.nn as nn\n\ngpu = misc.auto_select_gpu()\n"
        "model = nn.DataParallel(nn.Linear(2, 2))\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for epoch in range(2):\n    model(torch.ones(1, 2)).sum().backward()\n    optimizer.step()\n"
    )
    report = migrate([str(tmp_path)], Options(select=("TM103",), use_config=False, jobs=1, cache=False))
    text = script.read_text()
    assert report.changed and text.index("gpu = misc.auto_select_gpu()") < text.index("ddp_setup()  #") < text.index("ddp_wrap(nn.Linear")
