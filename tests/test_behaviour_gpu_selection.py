"""TM101 and a script that selects its GPU: `torch.cuda.is_available()` initialises CUDA, which
reads CUDA_VISIBLE_DEVICES once, so the device the migration defines must be made after the
script sets it, or a multi-GPU machine ignores the selection. Each migrated fixture runs as a
script in a child process whose `torch.cuda.is_available` records what CUDA_VISIBLE_DEVICES was
when it was first called."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from codemods import registry  # noqa: E402
from codemods.api import Options, migrate, transform_source  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402

CASES = FIXTURES / "TM101-cuda-to-device"

OBSERVE = """
import json, os, runpy, sys
import torch
seen = []
real = torch.cuda.is_available
def is_available():
    seen.append(os.environ.get("CUDA_VISIBLE_DEVICES"))
    return real()
torch.cuda.is_available = is_available
script = sys.argv[1]
sys.argv = [script, *sys.argv[2:]]
runpy.run_path(script, run_name="__main__")
print("SEEN=" + json.dumps(seen))
"""


def first_seen(code: str, tmp_path: Path, *argv: str) -> str | None:
    script = tmp_path / "script.py"
    script.write_text(code)
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "GPU")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    run = subprocess.run(
        [sys.executable, "-c", OBSERVE, str(script), *argv], capture_output=True, text=True, env=env, timeout=120
    )
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout.rpartition("SEEN=")[2])
    assert seen, "the migrated script never asked for the device"
    return seen[0]


@pytest.mark.parametrize(
    ("case", "argv", "selected"),
    [("gpu_selection_top", ("--gpu", "1"), "1"), ("gpu_selection_helper", (), "1"), ("gpu_selection_main_block", (), "0")],
)
def test_the_device_is_made_after_the_script_selects_its_gpu(case: str, argv: tuple[str, ...], selected: str, tmp_path: Path) -> None:
    source = (CASES / f"{case}.in.py").read_text()
    result = transform_source(source, [registry.get("TM101")])
    assert result.changed and not [f for f in result.findings if f.kind == "finding"]
    assert first_seen(result.code, tmp_path, *argv) == selected


def test_a_device_defined_after_the_imports_would_have_missed_it(tmp_path: Path) -> None:
    # the observation can fail: the definition after the imports (what TM101 wrote before) runs first
    source = (CASES / "gpu_selection_top.in.py").read_text()
    early = source.replace("import torch as th\n", 'import torch as th\n\ndevice = th.device("cuda" if th.cuda.is_available() else "cpu")\n')
    assert first_seen(early.replace(".cuda()", ".to(device)"), tmp_path, "--gpu", "1") is None


def test_a_helper_of_another_file_that_selects_the_gpu_is_followed(tmp_path: Path) -> None:
    # pytorch-playground's train.py calls `misc.auto_select_gpu(...)` (utee/misc.py) at the top
    (tmp_path / "misc.py").write_text(
        'import os\n\n\ndef auto_select_gpu(gpus="1"):\n    os.environ["CUDA_VISIBLE_DEVICES"] = gpus\n    return gpus\n'
    )
    script = tmp_path / "script.py"
    script.write_text("import misc\nimport torch\n\ngpu = misc.auto_select_gpu()\nmodel = torch.nn.Linear(2, 2).cuda()\n")
    report = migrate([str(tmp_path)], Options(select=("TM101",), use_config=False, jobs=1, cache=False))
    assert report.changed and "gpu = misc.auto_select_gpu()\n\ndevice = torch.device(" in script.read_text()
    assert first_seen(script.read_text(), tmp_path) == "1"
