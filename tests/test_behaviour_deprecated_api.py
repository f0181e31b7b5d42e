"""TM006 behaviour: each rewritten call computes what the deprecated one did (or what the removed
one documented), and the new code runs clean under `warnings.simplefilter("error")`."""

from __future__ import annotations

import textwrap
import warnings

import pytest

torch = pytest.importorskip("torch")

from codemods import registry  # noqa: E402
from codemods.api import transform_source  # noqa: E402

TM006 = [registry.get("TM006")]

PRELUDE = """
import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
x = torch.randn(1, 2, 5, 7)
a = torch.randn(4, 4)
spd = a @ a.T + 4 * torch.eye(4)
b = torch.randn(4, 3)
"""


def migrate(source: str) -> str:
    result = transform_source(source, TM006)
    assert result.changed and result.problem is None, result
    assert not [f for f in result.findings if f.kind == "finding"], result.findings
    return result.code


def execute(source: str, strict: bool) -> object:
    namespace: dict = {}
    default = torch.get_default_dtype()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error" if strict else "ignore")
            exec(compile(source, "<snippet>", "exec"), namespace)
    finally:
        torch.set_default_dtype(default)
    return namespace["result"]


# Deprecated but still running on torch 2.13: old and new must agree.
SAME = {
    "upsample": "result = F.upsample(x, scale_factor=2, mode='bilinear', align_corners=False)",
    "upsample-nearest": "result = F.upsample_nearest(x, (10, 3))",
    "upsample-bilinear": "result = F.upsample_bilinear(x, scale_factor=3)",
    "sigmoid-tanh": "result = (F.sigmoid(x), F.tanh(x))",
    "init": textwrap.dedent(
        """
        w = torch.empty(6, 5)
        torch.manual_seed(1); nn.init.xavier_uniform(w, gain=2.0); first = w.clone()
        torch.manual_seed(1); nn.init.kaiming_normal(w, mode='fan_out'); second = w.clone()
        nn.init.constant(w, 0.5)
        result = (first, second, w)
        """
    ),
    "clip-grad-norm": textwrap.dedent(
        """
        p = nn.Parameter(torch.ones(3)); p.grad = torch.full((3,), 4.0)
        norm = nn.utils.clip_grad_norm([p], 1.0, norm_type=2)
        result = (norm, p.grad)
        """
    ),
    "ger": "result = torch.ger(torch.arange(3.0), torch.arange(4.0))",
    "range": textwrap.dedent(
        """
        n = 6
        result = (torch.range(0, 9), torch.range(1, 10, 3), torch.range(10, 0, -4), torch.range(0, n - 1),
                  torch.range(-5, -1), torch.range(2, 5, dtype=torch.long))
        """
    ),
    "chain-matmul": "result = torch.chain_matmul(a, b, b.T)",
    "qr": "result = (tuple(torch.qr(b)), tuple(torch.qr(b, some=False)))",
    "cholesky": "result = (torch.cholesky(spd), torch.cholesky(spd, True))",
    "default-type": "torch.set_default_tensor_type('torch.DoubleTensor'); result = torch.ones(2)",
    "assert-allclose": textwrap.dedent(
        """
        torch.testing.assert_allclose(a, a + 1e-7, rtol=1e-4, atol=1e-5)
        try:
            torch.testing.assert_allclose(a, a + 1.0, rtol=1e-4, atol=1e-5)
            result = torch.tensor(0)
        except AssertionError:
            result = torch.tensor(1)
        """
    ),
}


# Deprecated in the docs only: torch 2.13 does not warn for these.
SILENT = {"sigmoid-tanh", "ger"}


@pytest.mark.parametrize("name", SAME)
def test_same_result_and_no_warning(name: str) -> None:
    old = PRELUDE + SAME[name]
    new = migrate(old)
    if name not in SILENT:
        with pytest.raises(Warning):
            execute(old, strict=True)  # the deprecated call warns ...
    expected = execute(old, strict=False)
    actual = execute(new, strict=True)  # ... the migrated one does not
    torch.testing.assert_close(actual, expected)


def test_range_dtype_is_kept() -> None:
    new = migrate(PRELUDE + "result = torch.range(0, 3)")
    assert execute(new, strict=True).dtype == torch.get_default_dtype()


# Removed from torch: the old call raises, the migrated one returns the documented result.
def test_removed_linalg_functions_now_run() -> None:
    old = PRELUDE + textwrap.dedent(
        """
        e, v = torch.symeig(spd, eigenvectors=True)
        values = torch.symeig(spd)[0]
        lower = torch.symeig(spd, upper=False).eigenvalues
        x = torch.solve(b, spd)[0]
        rank = torch.matrix_rank(spd[:, :2] @ spd[:2, :])
        rank_h = torch.matrix_rank(spd, symmetric=True)
        result = (e, v, values, lower, x, rank, rank_h)
        """
    )
    with pytest.raises(RuntimeError):
        execute(old, strict=False)
    e, v, values, lower, x, rank, rank_h = execute(migrate(old), strict=True)
    spd = execute(PRELUDE + "result = spd", strict=True)
    b = execute(PRELUDE + "result = b", strict=True)
    torch.testing.assert_close(v @ torch.diag(e) @ v.T, spd)
    torch.testing.assert_close(values, e)
    torch.testing.assert_close(lower, e)
    torch.testing.assert_close(spd @ x, b)
    assert int(rank) == 2 and int(rank_h) == 4
