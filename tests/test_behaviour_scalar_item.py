"""TM003 under torch: the legacy `.data[0]` crashes on 0-dim tensors; the migrated code runs and
returns the value `.data[0]` gave when losses were 1-element tensors."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from codemods import registry  # noqa: E402
from codemods.api import transform_source  # noqa: E402
from tests.behaviour import migrate, run  # noqa: E402

LEGACY = """
import torch
import torch.nn as nn
import torch.nn.functional as F


def epoch(seed):
    torch.manual_seed(seed)
    model = nn.Linear(4, 3)
    criterion = nn.CrossEntropyLoss()
    running = 0.0
    for _ in range(3):
        x, y = torch.randn(5, 4), torch.randint(0, 3, (5,))
        out = model(x)
        loss = criterion(out, y) + 0.01 * model.weight.norm()
        running += loss.data[0]
        hits = (out.argmax(1) == y).sum()
        mse = F.mse_loss(out, torch.zeros_like(out)).data.cpu()[0]
    return running, hits.cpu().data[0], mse, model.weight.data[0]
"""

WRAPPED = """
import torch
import torch.nn.functional as F
from torch.autograd import Variable


def mse(x, y):
    return Variable(F.mse_loss(x, y)).data[0]
"""


def _reference(seed: int):
    """The same computation written by hand with `.item()`."""
    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(seed)
    model = nn.Linear(4, 3)
    criterion = nn.CrossEntropyLoss()
    running = 0.0
    for _ in range(3):
        x, y = torch.randn(5, 4), torch.randint(0, 3, (5,))
        out = model(x)
        loss = criterion(out, y) + 0.01 * model.weight.norm()
        running += loss.item()
        hits = (out.argmax(1) == y).sum()
        mse = F.mse_loss(out, torch.zeros_like(out)).item()
    return running, hits.item(), mse, model.weight.data[0]


def test_legacy_code_crashes_and_migrated_code_gives_the_values() -> None:
    with pytest.raises(IndexError, match="0-dim"):
        run(LEGACY, "epoch", 0)
    new = migrate(LEGACY, "TM003")
    assert new.count(".item()") == 3 and "model.weight.data[0]" in new  # the weight row stays
    got, expected = run(new, "epoch", 0, strict=True), _reference(0)
    assert got[:3] == pytest.approx(expected[:3])
    assert isinstance(got[0], float) and isinstance(got[1], int)
    torch.testing.assert_close(got[3], expected[3])


def test_variable_wrapper_is_removed_first_so_the_reduction_is_seen() -> None:
    specs = [registry.get("TM002"), registry.get("TM003")]
    result = transform_source(WRAPPED, specs)
    assert "F.mse_loss(x, y).detach().item()" in result.code and "Variable" not in result.code
    x, y = torch.arange(4.0), torch.zeros(4)
    with pytest.raises(IndexError):
        run(WRAPPED, "mse", x, y)
    assert run(result.code, "mse", x, y, strict=True) == pytest.approx(3.5)
    # The reverse order cannot prove the wrapped value 0-dim: the order in PIPELINE matters.
    reverse = transform_source(WRAPPED, specs[::-1])
    assert ".data[0]" in reverse.code
    assert [s.code for s in registry.PIPELINE].index("TM002") < [s.code for s in registry.PIPELINE].index("TM003")


HELD = """
import torch
import torch.nn as nn


def train_epoch(model, batches, criterion, optimizer):
    running = 0.0
    for x, y in batches:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        running += loss.data[0]
    return running


class Trainer(object):
    def __init__(self, model, criterion):
        self.model = model
        self.criterion = criterion
        self.aux = nn.L1Loss()

    def evaluate(self, x, y):
        out = self.model(x)
        loss = self.criterion(out, y) + 0.5 * self.aux(out, y)
        return loss.data[0], (loss / x.size(0)).data[0]


def main(seed):
    torch.manual_seed(seed)
    model = nn.Linear(3, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = [(torch.randn(4, 3), torch.randn(4, 2)) for _ in range(3)]
    running = train_epoch(model, batches, nn.MSELoss(), optimizer)
    return (running,) + Trainer(model, nn.SmoothL1Loss()).evaluate(*batches[0])
"""


def _held_reference(seed: int):
    nn = torch.nn
    torch.manual_seed(seed)
    model = nn.Linear(3, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = [(torch.randn(4, 3), torch.randn(4, 2)) for _ in range(3)]
    running = 0.0
    for x, y in batches:
        loss = nn.MSELoss()(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        running += loss.item()
    x, y = batches[0]
    out = model(x)
    loss = nn.SmoothL1Loss()(out, y) + 0.5 * nn.L1Loss()(out, y)
    return running, loss.item(), (loss / x.size(0)).item()


def test_a_loss_passed_in_as_a_parameter_or_held_in_an_attribute_becomes_item() -> None:
    with pytest.raises(IndexError, match="0-dim"):
        run(HELD, "main", 0)
    new = migrate(HELD, "TM003")
    assert ".data[0]" not in new and new.count(".item()") == 3
    got = run(new, "main", 0, strict=True)
    assert got == pytest.approx(_held_reference(0))
    assert all(isinstance(value, float) for value in got)
