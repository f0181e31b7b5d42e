"""The name guard, run: code a wrong rewrite would have broken still works after migration.

Each snippet is executed before and after migration with a test-only codemod that makes the
mistake (tests/test_name_guard.py); without the guard the rewrite crashes, with it the file keeps
what the other codemods made of it and gives the same result as before.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from codemods import registry  # noqa: E402
from codemods.api import transform_source  # noqa: E402
from tests.behaviour import run  # noqa: E402
from tests.test_name_guard import FAULTS, _unguarded_output  # noqa: E402

TRAINER = '''
import torch
import torch.nn as nn


class Trainer:
    """A project class with its own cuda(): it records the GPUs, it moves nothing."""

    def __init__(self, model):
        self.model, self.devices = model, None

    def cuda(self, devices=None):
        self.devices = devices
        return self


def fit():
    torch.manual_seed(0)
    trainer = Trainer(nn.Linear(3, 1)).cuda(devices=[0, 1])
    out = trainer.model(torch.ones(2, 3))
    return trainer.devices, out
'''

GLOBAL_MODEL = '''
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(3, 1)


def predict(x):
    model.cuda() if torch.cuda.is_available() else None
    return model(x)


def train(x):
    if torch.cuda.is_available():
        model.cuda()
    return model(x).sum()
'''

VARIABLE_AND_CUDA = '''
import torch
from torch.autograd import Variable


def step(x):
    y = Variable(x * 2)
    if torch.cuda.is_available():
        y = y.cuda()
    return y.sum()
'''


def test_the_trainer_with_its_own_cuda_still_works() -> None:
    with pytest.raises(AttributeError):  # `Trainer(...).to("cuda", devices=[0, 1])`: no such method
        run(_unguarded_output(TRAINER, "TM095"), "fit")
    migrated = transform_source(TRAINER, [FAULTS["TM095"]])
    assert migrated.code == TRAINER and any(f.code == "TM095" for f in migrated.findings)
    devices, out = run(migrated.code, "fit")
    expected_devices, expected = run(TRAINER, "fit")
    assert devices == expected_devices == [0, 1]
    torch.testing.assert_close(out, expected)


def test_a_module_level_model_moved_inside_a_function_still_trains() -> None:
    x = torch.ones(2, 3)
    with pytest.raises(UnboundLocalError):  # `model = model.to("cpu")` made `model` local to train()
        run(_unguarded_output(GLOBAL_MODEL, "TM092"), "train", x)
    migrated = transform_source(GLOBAL_MODEL, [FAULTS["TM092"]])
    assert not migrated.changed
    torch.testing.assert_close(run(migrated.code, "train", x), run(GLOBAL_MODEL, "train", x))


def test_the_other_codemods_changes_are_kept_and_run() -> None:
    x = torch.arange(4.0)
    with pytest.raises(NameError):  # `y.to(device)`, `device` bound nowhere (the branch forced to run)
        run(_unguarded_output(VARIABLE_AND_CUDA.replace("if torch.cuda.is_available():", "if True:"), "TM091"), "step", x)
    migrated = transform_source(VARIABLE_AND_CUDA, [registry.get("TM002"), FAULTS["TM091"]])
    assert migrated.rewrites == {"TM002": 1} and "Variable" not in migrated.code and "y.cuda()" in migrated.code
    torch.testing.assert_close(run(migrated.code, "step", x, strict=True), run(VARIABLE_AND_CUDA, "step", x))
