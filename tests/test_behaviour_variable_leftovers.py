"""TM002 leaves nothing behind: no `x = x`, no empty `with torch.no_grad():`, no `.detach()` on a
tensor it has just built, and the migrated code computes what the legacy code did."""

from __future__ import annotations

import ast

import pytest

torch = pytest.importorskip("torch")

from tests.behaviour import migrate, run  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402

CASES = FIXTURES / "TM002-variable-removal"

GAN_STEP = """
import torch
from torch.autograd import Variable

Tensor = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor


def step(seed, n):
    torch.manual_seed(seed)
    index = torch.randint(0, 10, (n, 1))
    valid = Variable(Tensor(n, 1).fill_(1.0), requires_grad=False)
    one_hot = Variable(torch.zeros(n, 10).scatter_(1, index, 1))
    z = Variable(Tensor(n, 4).normal_(), requires_grad=True)
    p = torch.full((n,), 0.5, requires_grad=True)
    coin = Variable(torch.bernoulli(p.data))
    support = Variable(torch.stack([torch.Tensor([t]).expand(n) for t in (0, 1)]))
    return [(t, t.requires_grad, t.is_leaf) for t in (valid, one_hot, z, coin, support)]
"""

LEFTOVERS = """
import torch
from torch.autograd import Variable


class Holder:
    def __init__(self):
        self.hidden = torch.ones(2)


def evaluate(model, batches, cuda):
    holder = Holder()
    out = []
    for x, y in batches:
        holder.hidden = Variable(holder.hidden)  # keep the state
        with torch.no_grad():
            x = Variable(x, volatile=True)
        if cuda:
            y = Variable(y)
        out.append(model(x) + y + holder.hidden)
    return out
"""


def _leftovers(code: str) -> list[str]:
    """`x = x` statements and `with` blocks holding only `pass`."""
    found = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and ast.dump(node.targets[0]).replace("Store", "Load") == ast.dump(node.value):
            found.append(ast.unparse(node))
        if isinstance(node, ast.With) and all(isinstance(s, ast.Pass) for s in node.body):
            found.append(ast.unparse(node))
    return found


def test_fresh_tensors_of_an_aliased_legacy_type_get_no_detach_and_stay_the_same() -> None:
    new = migrate(GAN_STEP, "TM002")
    assert ".detach()" not in new
    for (old, *old_flags), (fresh, *new_flags) in zip(run(GAN_STEP, "step", 0, 3), run(new, "step", 0, 3)):
        torch.testing.assert_close(old, fresh)
        assert old_flags == new_flags


def test_no_op_assignments_and_empty_no_grad_blocks_go_and_results_stay() -> None:
    new = migrate(LEFTOVERS, "TM002")
    assert _leftovers(new) == []
    assert "# keep the state" in new
    model = torch.nn.Linear(2, 2)
    batches = [(torch.randn(3, 2), torch.randn(3, 2)) for _ in range(2)]
    for cuda in (False, True):
        for old, fresh in zip(run(LEFTOVERS, "evaluate", model, batches, cuda), run(new, "evaluate", model, batches, cuda)):
            torch.testing.assert_close(old, fresh)


@pytest.mark.parametrize("case", ["leftovers", "comments", "basic", "aliases", "fresh_tensors"])
def test_no_fixture_output_gains_a_leftover(case: str) -> None:
    written = _leftovers((CASES / f"{case}.in.py").read_text())  # `xs = xs` the user wrote is theirs
    assert _leftovers((CASES / f"{case}.out.py").read_text()) == written
