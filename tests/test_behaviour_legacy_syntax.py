"""TM000 under torch: the 0.3-era file does not even compile; the repaired one runs clean."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tests.behaviour import migrate, run  # noqa: E402

LEGACY = """
import torch
import torch.nn as nn


def prepare(batch, async=False):
    return batch.to("cpu", async=async).float()


def evaluate(seed):
    torch.manual_seed(seed)
    model = nn.Linear(3, 1)
    batch = prepare(torch.arange(6).view(2, 3), async=True)
    loss = nn.MSELoss(size_average=False)(model(batch), torch.zeros(2, 1))
    return loss.detach()
"""


def test_legacy_file_is_a_syntax_error_and_the_repaired_one_computes_the_loss() -> None:
    with pytest.raises(SyntaxError):
        compile(LEGACY, "<legacy>", "exec")
    new = migrate(LEGACY, "TM000", "TM001")
    assert 'batch.to("cpu", non_blocking=async_)' in new and "async_=True" in new
    got = run(new, "evaluate", 0, strict=True)
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    expected = ((model(torch.arange(6.0).view(2, 3))) ** 2).sum().detach()
    torch.testing.assert_close(got, expected)


FORWARDING = """
import torch


def to_device(x, *args, **kwargs):
    return x.to(*args, **kwargs)


def batch_to_device(batch, *args, **options):
    return [to_device(t, *args, **options) for t in batch]


def total(seed):
    torch.manual_seed(seed)
    a = to_device(torch.randn(3), "cpu", async=True)
    b, c = batch_to_device([torch.randn(2), torch.randn(4)], "cpu", async=True)
    return a.sum() + b.sum() + c.sum()
"""


def test_async_forwarded_through_kwargs_reaches_to_as_non_blocking() -> None:
    # `async_=True` would reach `Tensor.to` through **kwargs and raise TypeError there.
    new = migrate(FORWARDING, "TM000")
    assert "async" not in new.replace("async_", "")
    torch.manual_seed(0)
    expected = torch.randn(3).sum() + torch.randn(2).sum() + torch.randn(4).sum()
    torch.testing.assert_close(run(new, "total", 0, strict=True), expected)
    with pytest.raises(TypeError, match="async_"):
        run(FORWARDING.replace("async=", "async_="), "total", 0)
