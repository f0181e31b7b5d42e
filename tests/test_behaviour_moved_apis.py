"""TM014 under torch: each moved API gives the numbers the old one gave, without its warning.

weight_norm also: a checkpoint saved with the old layer loads into the migrated one (torch's
load hook renames `weight_g`/`weight_v`), and one saved after the change does not load into the
old layer (why the rewrite is listed for review). The `require_grad` typo is the one rule whose
behaviour changes on purpose: the old assignment did nothing, the new one freezes.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tests.behaviour import migrate, run  # noqa: E402

FUNCTORCH = """
import torch
import functorch
from functorch import vmap, grad


def transforms(seed):
    torch.manual_seed(seed)
    w = torch.randn(3)
    xs = torch.randn(5, 3)
    loss = lambda w, x: torch.sin(x @ w).pow(2)
    per_sample = vmap(grad(loss), in_dims=(None, 0))(w, xs)
    value_and = functorch.grad_and_value(loss)(w, xs[0])
    jac_r = functorch.jacrev(torch.tanh)(xs[0])
    jac_f = functorch.jacfwd(torch.tanh)(xs[0])
    hess = functorch.hessian(lambda x: torch.sin(x).sum())(xs[0])
    out, tangent = functorch.jvp(torch.exp, (xs[0],), (torch.ones(3),))
    _, pullback = functorch.vjp(torch.exp, xs[0])
    functional = functorch.functionalize(lambda x: x.add_(1).mul(2))(xs[0].clone())
    return per_sample, value_and[0], value_and[1], jac_r, jac_f, hess, out, tangent, pullback(torch.ones(3))[0], functional
"""

WEIGHT_NORM = """
import torch
import torch.nn as nn
from torch.nn.utils import weight_norm, remove_weight_norm


def build(seed):
    torch.manual_seed(seed)
    return nn.Sequential(
        weight_norm(nn.Conv1d(4, 6, 3)),
        nn.ReLU(),
        torch.nn.utils.weight_norm(nn.ConvTranspose1d(6, 2, 4, 2, 1), dim=1),
    )


def forward_backward(model, x):
    out = model(x)
    out.pow(2).sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    return out.detach(), grads


def strip(model, x):
    for layer in (model[0], model[2]):
        remove_weight_norm(layer)
    return model(x).detach(), model[0].weight.detach().clone()
"""

SDP_KERNEL = """
import torch
import torch.nn.functional as F


def flags():
    return (
        torch.backends.cuda.flash_sdp_enabled(),
        torch.backends.cuda.mem_efficient_sdp_enabled(),
        torch.backends.cuda.math_sdp_enabled(),
        torch.backends.cuda.cudnn_sdp_enabled(),
    )


def attend(seed):
    torch.manual_seed(seed)
    q, k, v = (torch.randn(2, 3, 5, 4) for _ in range(3))
    seen = []
    with torch.backends.cuda.sdp_kernel(enable_flash=False, enable_math=True, enable_mem_efficient=False):
        seen.append(flags())
        out = F.scaled_dot_product_attention(q, k, v)
    with torch.backends.cuda.sdp_kernel(True, False, False, False):
        seen.append(flags())
    with torch.backends.cuda.sdp_kernel(enable_cudnn=False):
        seen.append(flags())
    with torch.backends.cuda.sdp_kernel():
        seen.append(flags())
    seen.append(flags())
    return out, seen
"""

PYTREE = """
import torch
import torch.utils._pytree as pytree


class Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b


def roundtrip(seed):
    torch.manual_seed(seed)
    pytree._register_pytree_node(Pair, lambda p: ([p.a, p.b], None), lambda xs, _: Pair(*xs))
    tree = {"x": Pair(torch.randn(2), [torch.randn(3), Pair(1.0, torch.randn(1))])}
    leaves, spec = pytree.tree_flatten(tree)
    doubled = pytree.tree_unflatten([leaf * 2 for leaf in leaves], spec)
    return leaves, pytree.tree_leaves(doubled), str(spec)
"""

UPSAMPLING = """
import torch
import torch.nn as nn


def upsample(seed):
    torch.manual_seed(seed)
    x = torch.randn(2, 3, 5, 7, requires_grad=True)
    layers = [nn.UpsamplingBilinear2d(scale_factor=2), nn.UpsamplingNearest2d(size=(9, 4)), nn.UpsamplingBilinear2d((6, 11))]
    outs = [layer(x) for layer in layers]
    sum(o.sum() for o in outs).backward()
    return [o.detach() for o in outs] + [x.grad]
"""

REQUIRE_GRAD = """
import torch
import torch.nn as nn


def freeze(seed):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 1))
    for p in model[0].parameters():
        p.require_grad = False
    model(torch.randn(4, 3)).sum().backward()
    return [p.grad is None for p in model.parameters()]


def leaf():
    return torch.zeros(3, require_grad=True).requires_grad
"""


def _close(before, after) -> None:
    torch.testing.assert_close(before, after, rtol=0, atol=0)


def test_functorch_transforms_are_torch_func() -> None:
    with pytest.warns(FutureWarning, match="functorch"):
        old = run(FUNCTORCH, "transforms", 0)
    new_source = migrate(FUNCTORCH, "TM014")
    assert "functorch" not in new_source and "from torch.func import vmap, grad" in new_source
    new = run(new_source, "transforms", 0, strict=True)
    for before, after in zip(old, new, strict=True):
        _close(before, after)


def test_weight_norm_same_numbers_and_old_checkpoints_load() -> None:
    x = torch.randn(2, 4, 9, generator=torch.Generator().manual_seed(1))
    with pytest.warns(FutureWarning, match="weight_norm"):
        old_model = run(WEIGHT_NORM, "build", 0)
    old_out, old_grads = run(WEIGHT_NORM, "forward_backward", old_model, x)
    new_source = migrate(WEIGHT_NORM, "TM014")
    assert "from torch.nn.utils.parametrizations import weight_norm" in new_source
    assert "remove_parametrizations(layer, \"weight\")" in new_source
    new_model = run(new_source, "build", 0, strict=True)
    new_out, new_grads = run(new_source, "forward_backward", new_model, x, strict=True)
    _close(old_out, new_out)
    # the same parameters, in the same order: g then v (original0, original1), then the bias
    for before, after in zip(old_grads, new_grads, strict=True):
        torch.testing.assert_close(before, after)

    # A checkpoint of the old layer loads into the migrated one, strictly, with the same numbers.
    old_state = old_model.state_dict()
    assert {"0.weight_g", "0.weight_v"} <= old_state.keys()
    fresh = run(new_source, "build", 7, strict=True)
    fresh.load_state_dict(old_state)
    torch.testing.assert_close(fresh(x), old_model(x))
    # One saved after the change does not load into the old layer: the keys differ.
    new_state = new_model.state_dict()
    assert "0.parametrizations.weight.original0" in new_state and "0.weight_g" not in new_state
    with pytest.raises(RuntimeError, match="Missing key"):
        run(WEIGHT_NORM, "build", 0).load_state_dict(new_state)

    # remove_weight_norm -> remove_parametrizations: the same plain weight is left behind.
    old_stripped = run(WEIGHT_NORM, "strip", old_model, x)
    new_stripped = run(new_source, "strip", new_model, x, strict=True)
    for before, after in zip(old_stripped, new_stripped, strict=True):
        torch.testing.assert_close(before, after)
    assert not hasattr(new_model[0], "parametrizations")


def test_sdp_kernel_enables_the_same_backends() -> None:
    with pytest.warns(FutureWarning, match="sdp_kernel"):
        old_out, old_flags = run(SDP_KERNEL, "attend", 0)
    new_source = migrate(SDP_KERNEL, "TM014")
    assert "sdp_kernel" not in new_source.replace("sdpa_kernel", "")
    new_out, new_flags = run(new_source, "attend", 0, strict=True)
    _close(old_out, new_out)
    assert old_flags == new_flags
    assert old_flags[0] == (False, False, True, True)  # math and cuDNN: sdp_kernel's default enable_cudnn=True


def test_register_pytree_node_same_trees() -> None:
    with pytest.warns(FutureWarning, match="_register_pytree_node"):
        old = run(PYTREE, "roundtrip", 0)
    new_source = migrate(PYTREE, "TM014")
    assert "pytree.register_pytree_node(" in new_source
    new = run(new_source, "roundtrip", 0, strict=True)
    for before, after in zip(old[:2], new[:2], strict=True):
        for a, b in zip(before, after, strict=True):
            _close(torch.as_tensor(a), torch.as_tensor(b))
    assert old[2] == new[2]


def test_upsampling_modules_are_upsample() -> None:
    old = run(UPSAMPLING, "upsample", 0)
    new_source = migrate(UPSAMPLING, "TM014")
    assert "Upsampling" not in new_source
    new = run(new_source, "upsample", 0, strict=True)
    for before, after in zip(old, new, strict=True):
        _close(before, after)


def test_require_grad_typo_now_does_what_it_says() -> None:
    # Before: the assignment set a Python attribute and froze nothing; the keyword was a TypeError.
    assert run(REQUIRE_GRAD, "freeze", 0) == [False, False, False, False]
    with pytest.raises(TypeError, match="require_grad"):
        run(REQUIRE_GRAD, "leaf")
    new_source = migrate(REQUIRE_GRAD, "TM014")
    assert "require_grad " not in new_source and "require_grad=" not in new_source
    assert run(new_source, "freeze", 0, strict=True) == [True, True, False, False]
    assert run(new_source, "leaf", strict=True) is True
