"""TM202 behaviour: the fixture training/eval functions give the same numbers after migration,
and the migrated running totals no longer hold an autograd graph."""

from __future__ import annotations

import importlib
import sys

import pytest

torch = pytest.importorskip("torch")

from codemods import registry  # noqa: E402
from codemods.api import transform_source  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402

CASES = FIXTURES / "TM202-loss-accumulation"


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    root = tmp_path_factory.mktemp("tm202")
    for case in ("basic", "aliases"):
        source = (CASES / f"{case}.in.py").read_text()
        result = transform_source(source, [registry.get("TM202")])
        assert result.changed and result.problem is None
        (root / f"tm202_{case}_before.py").write_text(source)
        (root / f"tm202_{case}_after.py").write_text(result.code)
    sys.path.insert(0, str(root))
    try:
        yield lambda name: importlib.import_module(f"tm202_{name}")
    finally:
        sys.path.remove(str(root))


def _data():
    torch.manual_seed(0)
    return [(torch.randn(4, 3), torch.randint(0, 2, (4,))) for _ in range(3)]


def _train(module):
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    return module.train_epoch(model, _data(), optimizer)


def test_train_epoch_same_value_without_the_graph(modules):
    before, after = _train(modules("basic_before")), _train(modules("basic_after"))
    assert isinstance(before, torch.Tensor) and before.grad_fn is not None  # every step's graph kept
    assert isinstance(after, float)
    torch.testing.assert_close(torch.tensor(after), before.detach())


def test_evaluate_same_value_and_output(modules, capsys):
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    before = modules("basic_before").evaluate(model, _data())
    after = modules("basic_after").evaluate(model, _data())
    assert isinstance(before, torch.Tensor) and isinstance(after, float)
    torch.testing.assert_close(torch.tensor(after), before)
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 2 and printed[0] == printed[1]


def test_trainer_step_same_values(modules):
    x, y = torch.randn(4, 3, requires_grad=True), torch.randn(4, 3).softmax(-1)
    before = modules("aliases_before").Trainer().step(x, y)
    after = modules("aliases_after").Trainer().step(x, y)
    assert all(isinstance(v, torch.Tensor) and v.grad_fn is not None for v in before)
    assert all(isinstance(v, float) for v in after)
    for b, a in zip(before, after):
        torch.testing.assert_close(torch.tensor(a), b.detach())
