"""TM103 scaffolds only training entry points, and a plain run on several GPUs keeps DataParallel
(issue 15): a library module imported under torchrun's environment starts no process group, and
the migrated training script, run as `python train.py`, trains exactly as the original did."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from codemods.api import transform_source  # noqa: E402
from tests.behaviour import migrate, run  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402

LIBRARY = FIXTURES / "TM103-dataparallel-to-ddp" / "library.in.py"


@pytest.fixture(autouse=True)
def companion(tmp_path_factory, monkeypatch) -> None:
    """The migrated snippets import their helpers from `ddp_helpers`, which a run writes beside them."""
    from codemods.engine import companions

    folder = tmp_path_factory.mktemp("companion")
    (folder / "ddp_helpers.py").write_text(companions.text("ddp_helpers"))
    monkeypatch.syspath_prepend(str(folder))

# Imports the module under torchrun's variables for rank 0 of 2: a module that joined the process
# group would block in init_process_group waiting for rank 1 (the timeout below catches that).
IMPORT_UNDER_TORCHRUN = textwrap.dedent("""
    import runpy, sys
    import torch
    namespace = runpy.run_path(sys.argv[1], run_name="library")
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    loader = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(3)]
    print(torch.distributed.is_initialized(), namespace["accuracy"](model, loader))
    """)


def _import_under_torchrun(module: Path, tmp_path: Path) -> tuple[str, str]:
    script = tmp_path / "importer.py"
    script.write_text(IMPORT_UNDER_TORCHRUN)
    env = dict(os.environ, WORLD_SIZE="2", RANK="0", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT="29531")
    env["CUDA_VISIBLE_DEVICES"] = ""
    done = subprocess.run(
        [sys.executable, str(script), str(module)], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-3000:]
    initialized, value = done.stdout.split()
    return initialized, value


def test_library_module_under_torchrun_starts_no_process_group(tmp_path: Path) -> None:
    source = LIBRARY.read_text()
    result = transform_source(source, path="models.py")  # the default pipeline
    assert result.problem is None, result.problem
    assert "ddp_setup" not in result.code and "ddp_wrap" not in result.code
    assert {f.line for f in result.findings if f.code == "TM103" and f.kind == "finding"} == {9, 19}
    before, after = tmp_path / "before.py", tmp_path / "after.py"
    before.write_text(source)
    after.write_text(result.code)
    old = _import_under_torchrun(before, tmp_path)
    new = _import_under_torchrun(after, tmp_path)
    assert new[0] == "False"  # importing the library made no process group
    assert new == old


TRAIN = """
import argparse

import torch
import torch.nn as nn


def main(steps):
    torch.manual_seed(0)
    model = nn.DataParallel(nn.Linear(3, 1), device_ids=None, dim=0)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    for step in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
    return type(model).__name__, loss.item()


if __name__ == "__main__":
    args = argparse.ArgumentParser().parse_args()
    main(5)
"""


@pytest.mark.parametrize("gpus", [1, 2])
def test_plain_run_keeps_dataparallel_on_several_gpus(gpus: int, monkeypatch) -> None:
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    new = migrate(TRAIN, "TM103")
    assert "ddp_wrap(nn.Linear(3, 1), device_ids=None, dim=0)" in new
    old_kind, old_loss = run(TRAIN, "main", 5)
    # DataParallel on a machine without CUDA is a pass-through wrapper; pretend there are `gpus`
    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)
    new_kind, new_loss = run(new, "main", 5)
    assert not torch.distributed.is_initialized()
    assert new_loss == old_loss
    assert new_kind == ("DataParallel" if gpus > 1 else "Linear") and old_kind == "DataParallel"


CONDITIONAL = """
import argparse

import torch
import torch.nn as nn


def main(n_gpu):
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    if n_gpu > 1:
        model = nn.DataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
    return type(model).__name__


if __name__ == "__main__":
    main(argparse.ArgumentParser().parse_args().n_gpu)
"""


@pytest.mark.parametrize("n_gpu", [0, 1, 2])
def test_a_hoisted_wrap_keeps_its_condition_in_a_plain_run(n_gpu: int, monkeypatch) -> None:
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    new = migrate(CONDITIONAL, "TM103")
    assert "model = ddp_wrap(model, data_parallel=n_gpu > 1)" in new  # out of the if: torchrun wraps on every rank
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)  # several GPUs visible, whatever n_gpu says
    assert run(new, "main", n_gpu) == run(CONDITIONAL, "main", n_gpu)


def test_every_generated_helper_carries_the_marker_on_one_line() -> None:
    """A later run (and TM104) knows a helper by the marker in its docstring: wrapping the
    docstring must never split it."""
    import ast

    from codemods.helpers import ddp

    for name, source in ddp._SOURCES.items():
        func = ast.parse(source).body[0]
        assert ddp.MARKER in ast.get_docstring(func, clean=False), name
