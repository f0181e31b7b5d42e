"""TM013 under torch: the legacy keywords raise (or warn) today; the renamed ones give the same
gradients the 0.3 spelling meant (retain_graph is what retain_variables was renamed to)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tests.behaviour import migrate, run  # noqa: E402

LEGACY = """
import torch
from torch import autograd


def grads(seed):
    torch.manual_seed(seed)
    w = torch.randn(3, requires_grad=True)
    x = torch.randn(3, requires_grad=True)
    loss = (w * x).tanh().sum()
    loss.backward(retain_variables=True)  # the graph is kept: a second backward works
    first = w.grad.clone()
    autograd.backward([loss], grad_variables=[torch.tensor(2.0)], retain_variables=True)
    (gx,) = autograd.grad(loss, x, only_inputs=False)
    return first, w.grad, gx
"""


def reference(seed):
    """What the 0.3 spelling computed, written with today's keywords by hand."""
    torch.manual_seed(seed)
    w = torch.randn(3, requires_grad=True)
    x = torch.randn(3, requires_grad=True)
    loss = (w * x).tanh().sum()
    loss.backward(retain_graph=True)
    first = w.grad.clone()
    torch.autograd.backward([loss], grad_tensors=[torch.tensor(2.0)], retain_graph=True)
    (gx,) = torch.autograd.grad(loss, x)
    return first, w.grad, gx


def test_the_legacy_spelling_fails_today() -> None:
    with pytest.raises(TypeError, match="retain_variables"):
        run(LEGACY, "grads", 0)


def test_migrated_gradients_match_and_nothing_warns() -> None:
    new_source = migrate(LEGACY, "TM013")
    assert "retain_variables" not in new_source and "grad_variables" not in new_source
    assert "only_inputs" not in new_source
    new = run(new_source, "grads", 0, strict=True)
    for expected, got in zip(reference(0), new):
        torch.testing.assert_close(got, expected)
    # and the second backward really accumulated: 1x + 2x the first gradient
    torch.testing.assert_close(new[1], 3 * new[0])
