"""TM103 on training scripts of several real shapes, migrated end to end (`migrate()` writes the
scripts and the `ddp_helpers.py` beside them), then run: as one process the checkpoint is the
original's (less the `module.` prefix), and under `torchrun --nproc_per_node=2` (gloo, CPU) only
rank 0 writes it, whole, loadable into an unwrapped model."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from codemods.api import Options, migrate  # noqa: E402

pytestmark = pytest.mark.slow  # a torchrun of two processes per shape

COMMON = '''
import os
import sys

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


def data():
    generator = torch.Generator().manual_seed(1234)
    x = torch.randn(64, 4, generator=generator)
    return TensorDataset(x, (x.sum(dim=1) > 0).long())
'''

SHAPES = {
    # __main__ + argparse, the checkpoint written through `with open(path, "wb")`
    "with_open": COMMON + '''

def main(args):
    torch.manual_seed(0)
    loader = DataLoader(data(), batch_size=8, shuffle=True)
    model = nn.DataParallel(Net())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        print("epoch", epoch)
    path = os.path.join(args.out, "model.pt")
    with open(path, "wb") as f:
        torch.save(model.module.state_dict(), f)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    main(parser.parse_args())
''',
    # a training loop at module level: no guard, no argparse
    "top_level": COMMON + '''
torch.manual_seed(0)
loader = DataLoader(data(), batch_size=8, shuffle=True)
model = nn.DataParallel(Net())
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    print("epoch", epoch, loss.item())
torch.save(model.module.state_dict(), os.path.join(sys.argv[1], "model.pt"))
''',
    # os.makedirs then torch.save of a state dict, in a function of the script
    "makedirs": COMMON + '''

def save(model, folder):
    os.makedirs(folder, exist_ok=True)
    torch.save(model.module.state_dict(), os.path.join(folder, "model.pt"))


if __name__ == "__main__":
    torch.manual_seed(0)
    loader = DataLoader(data(), batch_size=8, shuffle=True)
    model = nn.DataParallel(Net())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
    save(model, sys.argv[1])
''',
    # the best checkpoint after an evaluation: `if acc > best:` keeps its own body
    "best_accuracy": COMMON + '''

def evaluate(model, loader):
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(dim=1) == y).sum().item()
    return correct / len(loader.dataset)


if __name__ == "__main__":
    torch.manual_seed(0)
    out = sys.argv[1]
    loader = DataLoader(data(), batch_size=8, shuffle=True)
    test_loader = DataLoader(data(), batch_size=16)
    model = nn.DataParallel(Net())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    best, improved = -1.0, 0
    for epoch in range(3):
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        accuracy = evaluate(model, test_loader)
        if accuracy > best:
            if not os.path.isdir(os.path.join(out, "checkpoint")):
                os.mkdir(os.path.join(out, "checkpoint"))
            torch.save({"net": model.module.state_dict(), "acc": accuracy}, os.path.join(out, "checkpoint", "model.pt"))
            best = accuracy
            improved += 1
    with open(os.path.join(out, "improved-%s.txt" % os.environ.get("RANK", "0")), "w") as f:
        f.write(str(improved))
''',
}
CHECKPOINT = {"best_accuracy": Path("checkpoint") / "model.pt"}

# Records which rank called torch.save, then runs the script as `python script.py` would.
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
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    """)


def _env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in {"RANK", "WORLD_SIZE", "LOCAL_RANK", "PYTHONPATH"}}
    env.update(OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo", CUDA_VISIBLE_DEVICES="", **extra)
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _state(path: Path) -> dict:
    loaded = torch.load(path, weights_only=True)
    return loaded["net"] if "net" in loaded else loaded


def _plain(script: Path, out: Path) -> subprocess.CompletedProcess:
    out.mkdir()
    done = subprocess.run([sys.executable, str(script), str(out)], env=_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def migrated(tmp_path_factory) -> Path:
    """The shapes, each in its own folder, as `migrate()` leaves them."""
    root = tmp_path_factory.mktemp("shapes")
    for name, source in SHAPES.items():
        (root / name).mkdir()
        (root / name / "train.py").write_text(source)
    report = migrate([root], Options(mode="write", cache=False, use_config=False))
    assert not report.problems, report.problems
    for name in SHAPES:
        code = (root / name / "train.py").read_text()
        assert "DataParallel(" not in code and "from ddp_helpers import " in code, name
        assert (root / name / "ddp_helpers.py").is_file(), name  # written beside it by the run
    assert sum(f.path.endswith("ddp_helpers.py") for f in report.changed) == len(SHAPES)
    again = migrate([root], Options(mode="check", cache=False, use_config=False))
    assert not again.changed  # a second run changes nothing, the helpers' module included
    return root


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_one_process_run_gives_the_original_checkpoint(shape: str, migrated: Path, tmp_path: Path) -> None:
    original = tmp_path / "original.py"
    original.write_text(SHAPES[shape])
    old, new = tmp_path / "old", tmp_path / "new"
    before, after = _plain(original, old), _plain(migrated / shape / "train.py", new)
    assert after.stdout == before.stdout
    where = CHECKPOINT.get(shape, Path("model.pt"))
    old_state, new_state = _state(old / where), _state(new / where)
    assert list(new_state) == list(old_state) and not any(k.startswith("module.") for k in new_state)
    for key, value in new_state.items():
        torch.testing.assert_close(value, old_state[key], rtol=0, atol=0)
    if shape == "best_accuracy":
        assert (new / "improved-0.txt").read_text() == (old / "improved-0.txt").read_text()


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_torchrun_writes_one_whole_checkpoint_on_rank_0(shape: str, migrated: Path, tmp_path: Path) -> None:
    out, log, launcher = tmp_path / "out", tmp_path / "saves.log", tmp_path / "audited.py"
    out.mkdir()
    launcher.write_text(AUDIT)
    command = [
        sys.executable, "-m", "torch.distributed.run", "--nnodes=1", "--nproc_per_node=2",
        "--master_addr=127.0.0.1", f"--master_port={_free_port()}",
        str(launcher), str(migrated / shape / "train.py"), str(out),
    ]  # fmt: skip
    done = subprocess.run(command, env=_env(SAVES_LOG=str(log)), capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert set(log.read_text().split()) == {"0"}  # only rank 0 called torch.save
    checkpoint = out / CHECKPOINT.get(shape, Path("model.pt"))
    assert checkpoint.stat().st_size > 0
    state = _state(checkpoint)
    assert not any(k.startswith("module.") for k in state)
    model = torch.nn.Linear(4, 2)
    model.load_state_dict({k.removeprefix("fc."): v for k, v in state.items()}, strict=True)
    if shape == "best_accuracy":  # every rank kept its own `best` and counted the same improvements
        counts = {(out / f"improved-{rank}.txt").read_text() for rank in (0, 1)}
        assert len(counts) == 1 and counts != {"0"}
        assert log.read_text().split().count("0") == int(counts.pop())
