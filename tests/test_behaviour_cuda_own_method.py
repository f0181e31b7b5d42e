"""TM101 behaviour where `.cuda()` is not always torch's: a project class with its own `cuda()`
(issue 15), and `.cuda()` arguments that torch's `cuda()` does not take.

No GPU here, so "what the original does on a GPU" is the original run with torch's own
`Tensor.cuda`/`Module.cuda` standing in as no-ops; the migrated code runs unpatched on the CPU and
must give the same results.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tests.behaviour import migrate, run  # noqa: E402

TRAINER = '''
import torch
import torch.nn as nn


class Trainer:
    """A trainer whose cuda() takes the GPUs to spread over, like many research repos'."""

    def __init__(self, model):
        self.model = model
        self.devices = None

    def cuda(self, devices=None):
        self.devices = list(devices or [0])
        return self

    def step(self, x):
        return self.model(x).sum()


def train():
    torch.manual_seed(0)
    net = nn.Linear(3, 1)
    net.cuda()
    x = torch.ones(4, 3).cuda()
    trainer = Trainer(net)
    trainer.cuda(devices=[0, 1])
    spread = trainer.devices
    trainer = trainer.cuda()
    return spread, trainer.devices, trainer.step(x).item()
'''


@pytest.fixture
def cuda_as_no_op(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self, device=None, non_blocking=False, **kw: self)
    monkeypatch.setattr(torch.nn.Module, "cuda", lambda self, device=None: self)


def test_the_trainer_with_its_own_cuda_still_works(cuda_as_no_op) -> None:
    before = run(TRAINER, "train")
    assert before[:2] == ([0, 1], [0])

    migrated = migrate(TRAINER, "TM101")
    assert "trainer.cuda(devices=[0, 1])" in migrated and "trainer = trainer.cuda()" in migrated
    assert "net.to(device)" in migrated and "torch.ones(4, 3).to(device)" in migrated
    torch.testing.assert_close(run(migrated, "train"), before)


def test_the_migrated_trainer_runs_without_cuda() -> None:
    if torch.cuda.is_available():
        pytest.skip("about a machine without CUDA")
    with pytest.raises((AssertionError, RuntimeError)):
        run(TRAINER, "train")  # the original needs a GPU
    spread, devices, loss = run(migrate(TRAINER, "TM101"), "train")
    assert (spread, devices) == ([0, 1], [0]) and isinstance(loss, float)


POSITIONAL = '''
import torch


def move():
    x = torch.arange(6.0).reshape(2, 3)
    y = x.cuda(None, True)
    z = x.t().cuda(memory_format=torch.contiguous_format)
    return y.sum().item(), z.tolist()
'''


def test_a_positional_non_blocking_becomes_a_keyword(cuda_as_no_op) -> None:
    before = run(POSITIONAL, "move")
    migrated = migrate(POSITIONAL, "TM101")
    assert "x.to(device, non_blocking=True)" in migrated  # `.to(device, True)` would read True as a dtype
    assert "memory_format=torch.contiguous_format" in migrated  # `.to` takes it too
    assert run(migrated, "move") == before == (15.0, [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]])


def test_a_cuda_method_in_another_file_is_seen_repo_wide() -> None:
    from codemods import registry
    from codemods.api import transform_source
    from codemods.helpers.facts import collect_facts

    trainers = "class Base:\n    def cuda(self, devices=None):\n        return self\n\n\nclass Runner(Base):\n    pass\n"
    script = "import torch\nfrom trainers import Runner\n\nrunner = Runner()\nrunner.cuda()\nbatch.cuda()\nx = torch.ones(2).cuda()\n"
    facts = collect_facts([("trainers.py", trainers), ("train.py", script)])
    assert {"Base", "Runner"} <= facts.cuda_classes  # subclasses too
    result = transform_source(script, [registry.get("TM101")], path="train.py", facts=facts)
    assert "runner.cuda()\nbatch.cuda()\nx = torch.ones(2).to(device)\n" in result.code
    assert [f.line for f in result.findings if f.kind == "finding"] == [6]  # batch: unknown; runner: the user's
    alone = transform_source(script, [registry.get("TM101")], path="train.py")
    assert "batch = batch.to(device)" in alone.code  # no class with its own cuda() anywhere: as before


def test_a_class_local_to_a_function_makes_only_its_own_file_strict() -> None:
    from codemods import registry
    from codemods.api import transform_source
    from codemods.helpers.facts import collect_facts

    test = "def test_fake():\n    class Fake:\n        def cuda(self, device):\n            return self\n\n    Fake().cuda(0)\n    batch.cuda()\n"
    other = "import torch\nbatch.cuda()\n"
    facts = collect_facts([("test_util.py", test), ("train.py", other)])
    assert not facts.cuda_classes  # no other file can make a Fake
    assert "batch = batch.to(device)" in transform_source(other, [registry.get("TM101")], path="train.py", facts=facts).code
    result = transform_source(test, [registry.get("TM101")], path="test_util.py", facts=facts)
    assert not result.changed and [f.line for f in result.findings if f.kind == "finding"] == [7]
