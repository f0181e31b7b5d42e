"""TM401's `.next()` under torch: the DataLoader iterator has no Python 2 `.next()` today (the
legacy code raises AttributeError); the migrated code reads the same batches."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tests.behaviour import migrate, run  # noqa: E402

LEGACY = """
import torch
from torch.utils.data import DataLoader, TensorDataset


def restart(loader):
    global data_iter
    data_iter = iter(loader)


def batches(n):
    loader = DataLoader(TensorDataset(torch.arange(12.0).view(6, 2), torch.arange(6)), batch_size=2)
    first, labels = iter(loader).next()
    restart(loader)
    rest = [data_iter.next() for _ in range(n)]
    return first, labels, rest
"""


def test_legacy_next_fails_and_the_migrated_code_reads_the_same_batches() -> None:
    with pytest.raises(AttributeError, match="next"):
        run(LEGACY, "batches", 2)
    new = migrate(LEGACY, "TM401")
    assert ".next()" not in new
    first, labels, rest = run(new, "batches", 3, strict=True)
    torch.testing.assert_close(first, torch.tensor([[0.0, 1.0], [2.0, 3.0]]))
    torch.testing.assert_close(labels, torch.tensor([0, 1]))
    assert [b[1].tolist() for b in rest] == [[0, 1], [2, 3], [4, 5]]
