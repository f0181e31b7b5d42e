"""TM005 under torch: same outputs and gradients, and the `use_reentrant` warning is gone."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tests.behaviour import migrate, run  # noqa: E402

LEGACY = """
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint, checkpoint_sequential


def forward_backward(seed):
    torch.manual_seed(seed)
    block = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
    layers = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    x = torch.randn(3, 4, requires_grad=True)
    h = checkpoint(block, x)
    out = checkpoint_sequential(layers, 2, h)
    out.sum().backward()
    return out.detach(), x.grad, block[0].weight.grad, layers[2].weight.grad
"""


def test_same_results_and_no_warning() -> None:
    with pytest.warns(Warning, match="use_reentrant"):
        old = run(LEGACY, "forward_backward", 0)
    new_source = migrate(LEGACY, "TM005")
    assert new_source.count("use_reentrant=True") == 2
    new = run(new_source, "forward_backward", 0, strict=True)
    for before, after in zip(old, new):
        torch.testing.assert_close(before, after)
