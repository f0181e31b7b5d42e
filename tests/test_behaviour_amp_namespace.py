"""TM004 behaviour: the migrated amp code computes what the old code did, without its FutureWarnings.

Each snippet is migrated by the real codemod, then the old and the new text are both executed.
On a machine without CUDA, the CUDA variants still construct (and disable themselves with a
UserWarning, in old and new code alike), so the deprecation is checked by category.
"""

from __future__ import annotations

import textwrap
import warnings

import pytest

torch = pytest.importorskip("torch")

from codemods import registry  # noqa: E402
from codemods.api import transform_source  # noqa: E402

TM004 = [registry.get("TM004")]


def migrate(source: str) -> str:
    source = textwrap.dedent(source)
    result = transform_source(source, TM004)
    assert result.changed and result.problem is None, result
    return result.code


def execute(source: str, error_on: type[Warning] | None) -> dict:
    namespace: dict = {}
    with warnings.catch_warnings():
        if error_on is None:
            warnings.simplefilter("ignore")
        else:
            warnings.simplefilter("error", error_on)
        exec(compile(source, "<snippet>", "exec"), namespace)
    return namespace


CPU_AUTOCAST = """
    import torch
    from torch.cpu.amp import autocast as ac

    torch.manual_seed(0)
    layer = torch.nn.Linear(8, 4)
    x = torch.randn(3, 8)
    with torch.cpu.amp.autocast():
        plain = layer(x)
    with ac(True, torch.bfloat16):
        positional = layer(x)
    with ac(enabled=False):
        off = layer(x)
    scaler = torch.cpu.amp.GradScaler(init_scale=1024.0)
    result = (plain, positional, off, torch.tensor(scaler.get_scale()))
"""

CUSTOM_FWD = """
    import torch
    from torch.cuda.amp import custom_bwd, custom_fwd

    class Scale(torch.autograd.Function):
        @staticmethod
        @custom_fwd(cast_inputs=torch.float32)
        def forward(ctx, x):
            return x * 3

        @staticmethod
        @custom_bwd
        def backward(ctx, grad):
            return grad * 3

    x = torch.arange(4.0, requires_grad=True)
    y = Scale.apply(x)
    y.sum().backward()
    result = (y.detach(), x.grad)
"""

CUDA_CONSTRUCTORS = """
    import torch
    from torch.cuda import amp

    scaler = amp.GradScaler(init_scale=512.0, enabled=False)
    with torch.cuda.amp.autocast(enabled=False):
        y = torch.ones(2) * 2
    result = (torch.tensor(scaler.get_scale()), torch.tensor(float(scaler.is_enabled())), y)
"""


@pytest.mark.parametrize(
    "snippet, strict",
    [
        pytest.param(CPU_AUTOCAST, Warning, id="cpu-autocast-and-scaler"),
        pytest.param(CUSTOM_FWD, FutureWarning, id="custom-fwd-bwd"),
        pytest.param(CUDA_CONSTRUCTORS, FutureWarning, id="cuda-constructors"),
    ],
)
def test_old_warns_new_is_clean_and_equal(snippet: str, strict: type[Warning]) -> None:
    old = textwrap.dedent(snippet)
    new = migrate(snippet)
    with pytest.raises(FutureWarning):
        execute(old, FutureWarning)
    before = execute(old, None)["result"]
    after = execute(new, strict)["result"]  # raises if the new code still warns
    torch.testing.assert_close(after, before)


def test_cpu_autocast_really_autocasts() -> None:
    # Guard against a vacuous comparison: autocast must have changed the dtype in both versions.
    after = execute(migrate(CPU_AUTOCAST), Warning)["result"]
    assert after[0].dtype == torch.bfloat16 and after[2].dtype == torch.float32


def test_migrated_module_imports_what_it_references() -> None:
    new = migrate(
        """
        from torch.cuda.amp import autocast as ac
        with ac(enabled=False):
            pass
        """
    )
    assert "import torch\n" in new and "torch.cuda" not in new
    execute(new, FutureWarning)


CUDA_STEP = """
    import torch
    from torch.cuda.amp import GradScaler, autocast

    torch.manual_seed(0)
    model = torch.nn.Linear(16, 4).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = GradScaler(init_scale=256.0)
    x = torch.randn(8, 16, device="cuda")
    with autocast():
        out = model(x)
        loss = out.float().pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    result = (out, model.weight.detach(), torch.tensor(scaler.get_scale()))
"""


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device: autocast/GradScaler are no-ops without one")
def test_cuda_training_step_is_unchanged() -> None:
    old = textwrap.dedent(CUDA_STEP)
    before = execute(old, None)["result"]
    after = execute(migrate(CUDA_STEP), Warning)["result"]
    assert after[0].dtype == torch.float16  # autocast really ran
    torch.testing.assert_close(after, before)
