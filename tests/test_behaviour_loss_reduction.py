"""TM001 under real torch: every legacy combination builds the same loss, gives the same value,
and the migrated call no longer warns."""

from __future__ import annotations

import itertools
import warnings

import pytest

from codemods import registry
from codemods.api import transform_source
from codemods.transforms.loss_reduction import losses

torch = pytest.importorskip("torch")

VALUES = ("None", "True", "False")
CLASSES = sorted({n.rsplit(".", 1)[-1] for n in losses() if n.startswith("torch.nn.") and ".functional." not in n and n.count(".") == 2})


def _run(source: str) -> dict:
    scope: dict = {}
    exec(compile(source, "<case>", "exec"), scope)
    return scope


def _run_clean(source: str) -> dict:
    """Run migrated code; it must not emit the legacy-argument deprecation warning."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scope = _run(source)
    legacy = [str(w.message) for w in caught if "size_average" in str(w.message) or "reduce" in str(w.message)]
    assert legacy == []
    return scope


def _migrate(source: str) -> str:
    result = transform_source(source, [registry.get("TM001")])
    assert result.problem is None
    return result.code


@pytest.mark.parametrize("name", CLASSES)
@pytest.mark.parametrize(("size_average", "reduce"), list(itertools.product(VALUES, VALUES)))
def test_every_loss_class_keeps_its_reduction(name: str, size_average: str, reduce: str) -> None:
    before = f"import torch.nn as nn\nloss = nn.{name}(size_average={size_average}, reduce={reduce})\n"
    after = _migrate(before)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old = _run(before)["loss"]
    new = _run_clean(after)["loss"]
    assert new.reduction == old.reduction
    assert "size_average" not in after and "reduce=" not in after


def test_positional_and_override_forms_build_the_same_objects() -> None:
    before = (
        "import torch.nn as nn\n"
        "a = nn.NLLLoss(None, False, 3, True)\n"
        "b = nn.MSELoss(None, False, 'mean')\n"
        "c = nn.CrossEntropyLoss(reduction='sum', size_average=True)\n"
    )
    after = _migrate(before)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old = _run(before)
    new = _run_clean(after)
    for key in "abc":
        assert (new[key].reduction, getattr(new[key], "ignore_index", None)) == (
            old[key].reduction,
            getattr(old[key], "ignore_index", None),
        )


FUNCTIONAL = [
    ("F.cross_entropy(x, t, size_average=False)", "x, t = torch.randn(4, 3), torch.tensor([0, 2, 1, 2])"),
    ("F.cross_entropy(x, t, None, False, 1)", "x, t = torch.randn(4, 3), torch.tensor([0, 2, 1, 2])"),
    ("F.nll_loss(x.log_softmax(1), t, reduce=False)", "x, t = torch.randn(4, 3), torch.tensor([0, 2, 1, 2])"),
    ("F.mse_loss(x, y, size_average=False, reduce=True)", "x, y = torch.randn(5), torch.randn(5)"),
    ("F.kl_div(x.log_softmax(0), y.softmax(0), size_average=False)", "x, y = torch.randn(5), torch.randn(5)"),
    ("F.binary_cross_entropy(x.sigmoid(), y.sigmoid(), None, True, False)", "x, y = torch.randn(5), torch.randn(5)"),
    ("F.smooth_l1_loss(x, y, False)", "x, y = torch.randn(5), torch.randn(5)"),
]


@pytest.mark.parametrize(("call", "setup"), FUNCTIONAL)
def test_functional_losses_give_the_same_values(call: str, setup: str) -> None:
    torch.manual_seed(0)
    before = f"import torch\nimport torch.nn.functional as F\ntorch.manual_seed(0)\n{setup}\nout = {call}\n"
    after = _migrate(before)
    assert after != before
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old = _run(before)["out"]
    new = _run_clean(after)["out"]
    torch.testing.assert_close(new, old)
