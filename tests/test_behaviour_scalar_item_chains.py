"""TM003 on `.data[0]` reads it does not rewrite: each is either provably unchanged (the old code
read a tensor there, and still reads the same one) or reported with a suggestion that gives the
number torch 0.3 gave; none is left silent."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from codemods import registry  # noqa: E402
from codemods.api import transform_source  # noqa: E402
from tests.behaviour import run  # noqa: E402

UNCHANGED = """
import torch


def reads(batch, out, gamma):
    image = batch.data[0].cpu().numpy()
    column = out.data[0][:, 1]
    positive = (out.data[0] > 0.5).nonzero()
    corner = out.data[0][0][0].item()
    gamma.data[0] = 0.5
    return image, column, positive, corner, gamma
"""

REPORTED = """
import torch


def reads(model, x, out):
    corner = model(x).data[0][0]
    top = out.max(1)[1].data[0]
    total = (out * 2).sum(1).sum(0).data[0]
    return corner, top, total
"""


def _migrate(source: str):
    result = transform_source(source, [registry.get("TM003")])
    assert result.problem is None, result.problem
    return result


def test_reads_of_a_tensor_stay_and_give_the_same_values() -> None:
    result = _migrate(UNCHANGED)
    assert result.code == UNCHANGED and not result.findings
    torch.manual_seed(0)
    batch, out, gamma = torch.randn(2, 3, 4), torch.rand(2, 3, 4), torch.ones(1)
    image, column, positive, corner, gamma = run(result.code, "reads", batch, out, gamma.clone(), strict=True)
    torch.testing.assert_close(torch.from_numpy(image), batch[0])
    torch.testing.assert_close(column, out[0][:, 1])
    torch.testing.assert_close(positive, (out[0] > 0.5).nonzero())
    assert corner == out[0][0][0].item() and gamma.tolist() == [0.5]


def test_every_other_read_is_reported_and_its_suggestion_gives_the_old_number() -> None:
    result = _migrate(REPORTED)
    assert result.code == REPORTED
    lines = {f.line for f in result.findings}
    assert lines == {6, 7, 8}, [f.message for f in result.findings]
    model = torch.nn.Linear(3, 1)
    x, out = torch.randn(2, 3), torch.randn(4, 5)
    with pytest.raises(IndexError, match="0-dim"):  # `total` is 0-dim: the old read crashes today
        run(REPORTED, "reads", model, x, out)
    # The suggestions read each value as the Python number torch 0.3 gave.
    namespace = {"model": model, "x": x, "out": out}
    by_line = {f.line: f.suggestion for f in result.findings}
    corner = eval(by_line[6].split("`")[3], namespace)
    top = eval(by_line[7].split("`")[3], namespace)
    total = eval(by_line[8].split("`")[1], namespace)
    assert isinstance(corner, float) and corner == model(x)[0][0].item()
    assert isinstance(top, int) and top == out.argmax(1)[0].item()
    assert isinstance(total, float) and total == pytest.approx((out * 2).sum().item())
