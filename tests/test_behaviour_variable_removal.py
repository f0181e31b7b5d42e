"""TM002 under torch: the migrated code computes what the legacy code did, without its warnings."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tests.behaviour import migrate, run  # noqa: E402

TRAIN = """
import torch
import torch.nn as nn
from torch.autograd import Variable


def step(seed):
    torch.manual_seed(seed)
    model = nn.Linear(4, 2)
    images, labels = torch.randn(8, 4), torch.randint(0, 2, (8,))
    images, labels = Variable(images), Variable(labels)
    noise = Variable(torch.randn(8, 4), requires_grad=True)
    loss = nn.CrossEntropyLoss()(model(images + noise), labels)
    loss.backward()
    return loss.detach(), noise.grad, model.weight.grad
"""

ALIASING = """
import torch
from torch.autograd import Variable


def probe():
    base = torch.ones(3)
    leaf = Variable(base, requires_grad=True)
    (leaf * 2).sum().backward()
    base.add_(1)  # in place on the original tensor: fine only if `base` does not require grad
    return leaf.grad, base.requires_grad, leaf.is_leaf
"""

VOLATILE = """
import torch.autograd as ag
import torch


def infer(x):
    return ag.Variable(x, volatile=True) * 2
"""


def test_training_step_gives_the_same_loss_and_gradients() -> None:
    new = migrate(TRAIN, "TM002")
    assert "Variable" not in new
    for before, after in zip(run(TRAIN, "step", 0), run(new, "step", 0)):
        torch.testing.assert_close(before, after)


def test_requires_grad_on_a_named_tensor_keeps_variables_copy_semantics() -> None:
    new = migrate(ALIASING, "TM002")
    before, after = run(ALIASING, "probe"), run(new, "probe")
    torch.testing.assert_close(before[0], after[0])
    assert before[1:] == after[1:] == (False, True)


def test_volatile_warned_before_and_is_gone_after() -> None:
    x = torch.arange(3.0)
    with pytest.warns(UserWarning, match="volatile"):
        old = run(VOLATILE, "infer", x)
    new = run(migrate(VOLATILE, "TM002"), "infer", x, strict=True)
    torch.testing.assert_close(old, new)


DETACHING = """
import torch
from torch.autograd import Variable


def attack_step(seed):
    torch.manual_seed(seed)
    model = torch.nn.Linear(3, 1)
    x_natural = torch.rand(2, 3)
    delta = Variable(0.001 * torch.randn(2, 3), requires_grad=True)
    x_adv = Variable(x_natural + delta, requires_grad=False)
    model(x_adv).sum().backward()
    return delta.grad, model.weight.grad
"""


def test_a_computed_value_is_still_cut_off_from_its_graph() -> None:
    new = migrate(DETACHING, "TM002")
    assert "(x_natural + delta).detach()" in new
    old_result, new_result = run(DETACHING, "attack_step", 1), run(new, "attack_step", 1)
    assert old_result[0] is None and new_result[0] is None  # no gradient leaks into delta
    torch.testing.assert_close(old_result[1], new_result[1])


COMPUTED_NAME = """
import torch
from torch.autograd import Variable


def grad_of_w():
    w = torch.ones(1, requires_grad=True)
    h = w * 3
    h = Variable(h)  # detaches: the gradient must not flow through h
    (h * w).sum().backward()
    return w.grad
"""


def test_a_name_bound_to_a_computed_tensor_keeps_its_cut() -> None:
    """`h = w * 3; h = Variable(h)`: Variable detached h, so w's gradient is 3, not 6."""
    before = run(COMPUTED_NAME, "grad_of_w")
    after_source = migrate(COMPUTED_NAME, "TM002")
    assert "h = h.detach()" in after_source
    after = run(after_source, "grad_of_w", strict=True)
    assert before.item() == after.item() == 3.0


DETACHED_AFTER = """
import torch
from torch.autograd import Variable


def grad_of_w():
    w = torch.ones(1, requires_grad=True)
    h = Variable(w * 3).detach()
    (h * w).sum().backward()
    return w.grad, h.requires_grad
"""


def test_a_variable_detached_by_the_next_call_is_detached_once() -> None:
    """`Variable(w * 3).detach()` becomes `(w * 3).detach()`: the same cut, one call."""
    after_source = migrate(DETACHED_AFTER, "TM002")
    assert "h = (w * 3).detach()\n" in after_source
    before, after = run(DETACHED_AFTER, "grad_of_w"), run(after_source, "grad_of_w", strict=True)
    assert before[0].item() == after[0].item() == 3.0 and before[1] is after[1] is False


PARAMETER = """
import torch
from torch.autograd import Variable


def init_hidden(w):
    return Variable(w)


def grad_through():
    w = torch.ones(2, requires_grad=True)
    h = init_hidden(w)
    (h * w).sum().backward()
    return w.grad, h.requires_grad
"""


def test_gradients_do_not_flow_through_a_migrated_variable_of_a_parameter() -> None:
    """`return Variable(w)` cut the caller's graph: w's gradient is h (1), not h + w (2)."""
    after_source = migrate(PARAMETER, "TM002")
    assert "Variable" not in after_source
    before, after = run(PARAMETER, "grad_through"), run(after_source, "grad_through", strict=True)
    torch.testing.assert_close(before[0], after[0])
    assert before[1] is after[1] is False
    torch.testing.assert_close(after[0], torch.ones(2))


LOADER = """
import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.autograd import Variable


def epoch(seed):
    torch.manual_seed(seed)
    model = torch.nn.Linear(3, 1)
    train_loader = DataLoader(TensorDataset(torch.randn(8, 3), torch.randn(8, 1)), batch_size=4)
    for data, target in train_loader:
        data, target = Variable(data), Variable(target)
        torch.nn.functional.mse_loss(model(data), target).backward()
    return model.weight.grad, data.requires_grad
"""


def test_a_loader_batch_loses_its_wrapper_and_trains_the_same() -> None:
    after_source = migrate(LOADER, "TM002")
    assert "Variable" not in after_source and "detach" not in after_source
    before, after = run(LOADER, "epoch", 0), run(after_source, "epoch", 0, strict=True)
    torch.testing.assert_close(before[0], after[0])
    assert before[1] is after[1] is False
