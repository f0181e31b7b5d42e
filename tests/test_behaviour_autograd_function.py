"""TM010 under torch: migrated legacy autograd Functions give the legacy numbers and gradients.

The legacy classes cannot run on torch 2.13 at all (`RuntimeError: Legacy autograd function with
non-static forward method is deprecated`, checked first), so the legacy semantics are emulated by
hand-written references: each Function's documented math as plain differentiable torch code (the
gradients their `backward`s return, with tensor hooks where `backward` is not the derivative of
`forward`). The migrated code runs with warnings as errors, and gradcheck checks the migrated
Functions whose `backward` is the true derivative on double inputs.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from tests.behaviour import migrate, run  # noqa: E402

LEGACY = """
import torch
import torch.nn as nn
from torch.autograd import Function


class MyReLU(Function):
    def forward(self, input):
        self.save_for_backward(input)
        return input.clamp(min=0)

    def backward(self, grad_output):
        input, = self.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


class GradReverse(Function):
    def __init__(self, lambd=1.0):
        super(GradReverse, self).__init__()
        self.lambd = lambd

    def forward(self, x):
        return x.view_as(x)

    def backward(self, grad_output):
        return grad_output.neg() * self.lambd


class ScaledMul(Function):
    def __init__(self, scale, shift):
        super().__init__()
        self.scale = float(scale)
        self.shift = shift

    def forward(self, a, b, bias=None):
        self.save_for_backward(a, b)
        self.had_bias = bias is not None
        out = a * b * self.scale + self.shift
        return out if bias is None else out + bias

    def backward(self, grad_out):
        a, b = self.saved_variables
        grad_a = grad_b = None
        if self.needs_input_grad[0]:
            grad_a = grad_out * b * self.scale
        if self.needs_input_grad[1]:
            grad_b = grad_out * a * self.scale
        if self.had_bias:
            return grad_a, grad_b, grad_out
        return grad_a, grad_b


class ScaleGrad(Function):
    def __init__(self, scale, clip=None):
        self.scale = scale
        self.clip = clip

    def forward(self, x):
        return x.clone()

    def backward(self, grad_output):
        grad = grad_output * self.scale
        if self.clip is not None:
            grad = grad.clamp(-self.clip, self.clip)
        return grad


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.scale_grad = ScaleGrad(0.5, clip=0.1)

    def forward(self, x):
        return self.fc(self.scale_grad(MyReLU()(x)))


def relu(x):
    return MyReLU()(x)


def reverse(x, lambd):
    return GradReverse(lambd)(x) + GradReverse()(x)


def scaled(a, b, bias):
    return ScaledMul(2, shift=0.5)(a, b) + ScaledMul(3, 1)(a, b, bias)


def head(seed):
    torch.manual_seed(seed)
    return Head()


def namespace():
    return globals()
"""


# -- the legacy semantics, by hand ------------------------------------------------------------


def _grad_replaced(x, hook):
    """`x` unchanged forward; the gradient flowing back into `x` is `hook(grad)`."""
    y = x.clone()
    y.register_hook(hook)
    return y


def relu_ref(x):
    return x.clamp(min=0)  # inputs have no exact zeros: the clamp's gradient is the legacy one


def reverse_ref(x, lambd):
    return _grad_replaced(x, lambda g: g.neg() * lambd) + _grad_replaced(x, lambda g: g.neg() * 1.0)


def scaled_ref(a, b, bias):
    return (a * b * 2.0 + 0.5) + (a * b * 3.0 + 1 + bias)


def head_ref(model, x):
    h = _grad_replaced(relu_ref(x), lambda g: (g * 0.5).clamp(-0.1, 0.1))
    return model.fc(h)


def _inputs(seed, *shape, dtype=torch.float32):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=generator, dtype=dtype)
    return x.masked_fill(x == 0, 0.5).requires_grad_()


def _value_and_grads(fn, *inputs):
    out = fn(*inputs)
    weights = torch.linspace(-1, 1, out.numel(), dtype=out.dtype).reshape(out.shape)
    (out * weights).sum().backward()
    return out.detach(), [t.grad for t in inputs]


@pytest.fixture(scope="module")
def migrated() -> str:
    return migrate(LEGACY, "TM010")


@pytest.mark.filterwarnings("ignore:.*should not be instantiated:DeprecationWarning")
def test_legacy_no_longer_runs() -> None:
    with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward"):
        run(LEGACY, "relu", _inputs(0, 5))


def test_migrated_source_shape(migrated: str) -> None:
    assert "def __init__(self, lambd" not in migrated
    assert "MyReLU.apply(x)" in migrated and "GradReverse.apply(x, 1.0)" in migrated
    assert "ScaledMul.apply(a, b, None, 2, 0.5) + ScaledMul.apply(a, b, bias, 3, 1)" in migrated
    assert "class _ScaleGradFunction(Function)" in migrated and "class ScaleGrad:" in migrated
    assert "self.scale_grad = ScaleGrad(0.5, clip=0.1)" in migrated  # the instance site is unchanged


@pytest.mark.parametrize(
    ("entry", "reference", "shapes"),
    [
        ("relu", relu_ref, [(3, 4)]),
        ("reverse", lambda x: reverse_ref(x, 0.3), [(6,)]),
        ("scaled", scaled_ref, [(2, 3), (2, 3), (2, 3)]),
    ],
)
def test_same_values_and_gradients(migrated: str, entry, reference, shapes) -> None:
    args = (0.3,) if entry == "reverse" else ()
    new_inputs = [_inputs(i, *s) for i, s in enumerate(shapes)]
    ref_inputs = [_inputs(i, *s) for i, s in enumerate(shapes)]
    new = _value_and_grads(lambda *xs: run(migrated, entry, *xs, *args, strict=True), *new_inputs)
    ref = _value_and_grads(reference, *ref_inputs)
    torch.testing.assert_close(new[0], ref[0])
    for got, want in zip(new[1], ref[1]):
        torch.testing.assert_close(got, want)


def test_module_instance_keeps_working(migrated: str) -> None:
    model = run(migrated, "head", 0, strict=True)
    ref_model = run(migrated, "head", 0, strict=True)  # same seed: same weights
    for step in range(2):  # the kept instance is called again: a fresh ctx each call
        x, x_ref = _inputs(step, 5, 4), _inputs(step, 5, 4)
        new = _value_and_grads(model, x)
        ref = _value_and_grads(lambda t: head_ref(ref_model, t), x_ref)
        torch.testing.assert_close(new[0], ref[0])
        torch.testing.assert_close(new[1][0], ref[1][0])
        torch.testing.assert_close(model.fc.weight.grad, ref_model.fc.weight.grad)
    clone = copy.deepcopy(model)  # the wrapper holds plain arguments: the module copies (and pickles)
    torch.testing.assert_close(clone(x).detach(), model(x).detach())


def test_gradcheck_on_double_inputs(migrated: str) -> None:
    ns = run(migrated, "namespace", strict=True)
    a, b, bias = (_inputs(i, 2, 3, dtype=torch.float64) for i in range(3))
    assert torch.autograd.gradcheck(ns["MyReLU"].apply, (a,))
    assert torch.autograd.gradcheck(lambda a, b: ns["ScaledMul"].apply(a, b, None, 2, 0.5), (a, b))
    assert torch.autograd.gradcheck(lambda a, b, c: ns["ScaledMul"].apply(a, b, c, 3, 1), (a, b, bias))
    assert torch.autograd.gradgradcheck(lambda a, b: ns["ScaledMul"].apply(a, b, None, 2, 0.5), (a, b))


PACKAGE = {
    "gradpkg/__init__.py": "",
    "gradpkg/functions.py": '''
import torch
from torch.autograd import Function


class ScaleGrad(Function):
    def __init__(self, scale):
        self.scale = scale

    def forward(self, x):
        return x.clone()

    def backward(self, grad_output):
        return grad_output * self.scale
''',
    "gradpkg/model.py": '''
import torch
from gradpkg.functions import ScaleGrad


def scaled_sum(x):
    return ScaleGrad(0.25)(x * 2).sum()
''',
}


def test_a_class_another_file_imports_keeps_its_call_sites(tmp_path, monkeypatch) -> None:
    """`from gradpkg.functions import ScaleGrad; ScaleGrad(0.25)(x)` in another file: the
    wrapper under the old name keeps that call working, and model.py is not touched."""
    import importlib
    import sys
    import warnings

    from codemods.api import Options
    from codemods.api import migrate as migrate_paths

    for name, text in PACKAGE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text.lstrip())
    report = migrate_paths([tmp_path], Options(select=("TM010",), cache=False, use_config=False))
    changed = sorted(Path(r.path).name for r in report.files if r.rewrites)
    assert changed == ["functions.py"]
    assert "class _ScaleGradFunction(Function)" in (tmp_path / "gradpkg/functions.py").read_text()
    assert (tmp_path / "gradpkg/model.py").read_text() == PACKAGE["gradpkg/model.py"].lstrip()

    monkeypatch.syspath_prepend(str(tmp_path))
    for module in [m for m in sys.modules if m == "gradpkg" or m.startswith("gradpkg.")]:
        monkeypatch.delitem(sys.modules, module)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = importlib.import_module("gradpkg.model")
        x = _inputs(0, 4)
        model.scaled_sum(x).backward()
    torch.testing.assert_close(x.grad, torch.full_like(x, 2 * 0.25))  # legacy: d(2x)/dx * the scaled 1
