"""TM012 under torch: a hand-written Adam step (the shape old optimizers have) gives the same
parameters before and after, and the migrated step raises no deprecation warning."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tests.behaviour import migrate, run  # noqa: E402

LEGACY = """
import math

import torch
from torch.optim import Optimizer


class Adam(Optimizer):
    def __init__(self, params, lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                grad = p.grad.data
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p.data)
                    state["exp_avg_sq"] = torch.zeros_like(p.data)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                beta1, beta2 = group["betas"]
                state["step"] += 1
                grad.add_(group["weight_decay"], p.data)
                exp_avg.mul_(beta1).add_(1 - beta1, grad)
                exp_avg_sq.mul_(beta2).addcmul_(1 - beta2, grad, grad)
                denom = exp_avg_sq.sqrt().add_(group["eps"])
                step_size = group["lr"] * math.sqrt(1 - beta2 ** state["step"]) / (1 - beta1 ** state["step"])
                p.data.addcdiv_(-step_size, exp_avg, denom)


def train(seed):
    torch.manual_seed(seed)
    model = torch.nn.Linear(4, 2)
    optimizer = Adam(model.parameters())
    x, y = torch.randn(8, 4), torch.randn(8, 2)
    for _ in range(5):
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    blended = torch.add(x, 0.5, x), torch.addcdiv(x, 0.25, x, x + 2)
    return model.weight.detach(), model.bias.detach(), *blended
"""


def test_same_parameters_and_no_deprecation_warning() -> None:
    old = run(LEGACY, "train", 0)
    new_source = migrate(LEGACY, "TM012")
    assert new_source.count("alpha=") == 3 and new_source.count("value=") == 3
    new = run(new_source, "train", 0, strict=True)
    for before, after in zip(old, new):
        torch.testing.assert_close(after, before, rtol=0, atol=0)


def test_the_legacy_overload_is_the_deprecated_one() -> None:
    """The rewrite is worth doing: torch itself flags the scalar-first form (a fresh process:
    torch warns about an overload once per process)."""
    import subprocess
    import sys

    code = "import torch; torch.ones(2).add_(0.5, torch.ones(2))"
    proc = subprocess.run([sys.executable, "-W", "error::UserWarning", "-c", code], capture_output=True, text=True)
    assert proc.returncode != 0 and "deprecated" in proc.stderr
