"""TM015 under torch: the numbers old code computed are kept, and newer code stops warning.

torch 2.13 no longer has the old defaults, so the legacy numbers come from reference
implementations written from torch's documentation of them: up to 1.2, `affine_grid` spread its
grid over the corner pixels' centres (`linspace(-1, 1, n)`) and `grid_sample` mapped -1 and 1 to
those centres (what `align_corners=True` does today); up to 0.3.1, bilinear `upsample` did the
same (source pixel = target pixel * (in - 1) / (out - 1)). Each reference is checked against
the hand arithmetic of a tiny case, so it is not merely today's `align_corners=True` again.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from codemods import registry  # noqa: E402
from codemods.era import Era  # noqa: E402
from codemods.engine.pipeline import transform_source  # noqa: E402
from codemods.helpers.context import FileContext  # noqa: E402
from tests.behaviour import run  # noqa: E402

WARP = """
import torch
import torch.nn.functional as F


def warp(image, theta):
    grid = F.affine_grid(theta, image.size())
    return F.grid_sample(image, grid)
"""

UPSAMPLE = """
import torch
import torch.nn as nn
import torch.nn.functional as F


def upsample(image):
    up = nn.Upsample(scale_factor=2, mode="bilinear")
    return F.upsample(image, size=(5, 7), mode="bilinear"), up(image)
"""


def migrate(source: str, era: Era | None, *codes: str) -> str:
    result = transform_source(source, [registry.get(c) for c in codes], FileContext(era=era))
    assert result.problem is None, result.problem
    assert result.changed
    return result.code


def old_affine_grid(theta, size):
    """torch <= 1.2's affine_grid: base coordinates linspace(-1, 1, n) (corner pixels' centres)."""
    n, _, h, w = size
    ys, xs = torch.meshgrid(torch.linspace(-1, 1, h), torch.linspace(-1, 1, w), indexing="ij")
    base = torch.stack([xs, ys, torch.ones_like(xs)], dim=-1).reshape(1, h * w, 3).expand(n, -1, -1)
    return (base @ theta.transpose(1, 2)).reshape(n, h, w, 2)


def old_grid_sample(image, grid):
    """torch <= 1.2's bilinear grid_sample with zero padding: -1 and 1 are the corner pixels' centres."""
    n, c, h, w = image.shape
    x = (grid[..., 0] + 1) / 2 * (w - 1)
    y = (grid[..., 1] + 1) / 2 * (h - 1)
    x0, y0 = x.floor(), y.floor()
    out = torch.zeros(n, c, *grid.shape[1:3])
    for dx in (0, 1):
        for dy in (0, 1):
            xi, yi = x0 + dx, y0 + dy
            weight = (1 - (x - xi).abs()) * (1 - (y - yi).abs())
            inside = (xi >= 0) & (xi <= w - 1) & (yi >= 0) & (yi <= h - 1)
            flat = (yi.clamp(0, h - 1) * w + xi.clamp(0, w - 1)).long().reshape(n, 1, -1).expand(-1, c, -1)
            values = image.reshape(n, c, -1).gather(2, flat).reshape(out.shape)
            out += values * (weight * inside).unsqueeze(1)
    return out


def old_upsample_bilinear(image, size):
    """torch <= 0.3.1's bilinear upsample: source = target * (in - 1) / (out - 1)."""
    _, _, h, w = image.shape
    out_h, out_w = size
    y = torch.arange(out_h, dtype=torch.float64) * (h - 1) / max(out_h - 1, 1)
    x = torch.arange(out_w, dtype=torch.float64) * (w - 1) / max(out_w - 1, 1)
    y0, x0 = y.floor().long().clamp(max=h - 2), x.floor().long().clamp(max=w - 2)
    wy, wx = (y - y0).to(image.dtype), (x - x0).to(image.dtype)
    rows = image[:, :, y0] * (1 - wy)[:, None] + image[:, :, y0 + 1] * wy[:, None]
    return rows[..., x0] * (1 - wx) + rows[..., x0 + 1] * wx


def test_the_references_are_the_old_arithmetic() -> None:
    image = torch.tensor([[[[0.0, 10.0], [20.0, 30.0]]]])
    identity = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    grid = old_affine_grid(identity, (1, 1, 2, 2))
    assert grid[0, 0, 0].tolist() == [-1.0, -1.0] and grid[0, 1, 1].tolist() == [1.0, 1.0]
    assert old_grid_sample(image, grid).flatten().tolist() == [0.0, 10.0, 20.0, 30.0]  # corners hit exactly
    centre = torch.zeros(1, 1, 1, 2)
    assert old_grid_sample(image, centre).item() == 15.0  # (0 + 10 + 20 + 30) / 4
    up = old_upsample_bilinear(torch.tensor([[[[0.0, 10.0]]] * 2]).reshape(1, 1, 2, 2), (2, 3))
    assert up[0, 0, 0].tolist() == [0.0, 5.0, 10.0]


def test_old_grid_sample_numbers_are_kept() -> None:
    torch.manual_seed(0)
    image = torch.randn(2, 3, 6, 8)
    theta = torch.tensor([[[0.9, 0.1, 0.05], [-0.1, 0.8, 0.1]]] * 2)
    legacy = old_grid_sample(image, old_affine_grid(theta, image.size()))
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        today = run(WARP, "warp", image, theta)  # the legacy code as torch 2.13 runs it
    assert not torch.allclose(today, legacy, atol=1e-3), "torch 2.13's default would change the numbers"
    migrated = migrate(WARP, Era((1, 0), "requirements.txt: torch>=1.0", oldest=(1, 0)), "TM015")
    assert migrated.count("align_corners=True") == 2
    torch.testing.assert_close(run(migrated, "warp", image, theta, strict=True), legacy, rtol=1e-5, atol=1e-5)


def test_old_bilinear_upsample_numbers_are_kept() -> None:
    torch.manual_seed(1)
    image = torch.randn(1, 2, 3, 4)
    legacy = old_upsample_bilinear(image, (5, 7))
    legacy_module = old_upsample_bilinear(image, (6, 8))
    era = Era(None, "idioms: Variable at train.py:3", newest=(0, 3))
    # with TM006 after it, as in the pipeline: F.upsample -> F.interpolate, which raises no warning
    migrated = migrate(UPSAMPLE, era, "TM015", "TM006")
    assert "F.interpolate(image, size=(5, 7), mode=\"bilinear\", align_corners=True)" in " ".join(migrated.split())
    functional, module = run(migrated, "upsample", image, strict=True)
    torch.testing.assert_close(functional, legacy)
    torch.testing.assert_close(module, legacy_module)
    with pytest.warns(UserWarning):
        today, _ = run(UPSAMPLE, "upsample", image)
    assert not torch.allclose(today, legacy, atol=1e-3)


def test_code_for_1_3_or_newer_keeps_its_numbers_and_stops_warning() -> None:
    torch.manual_seed(2)
    image = torch.randn(2, 3, 5, 5)
    theta = torch.tensor([[[1.0, 0.2, 0.0], [0.0, 1.1, -0.1]]] * 2)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        before = run(WARP, "warp", image, theta)
    migrated = migrate(WARP, Era((1, 6), "setup.py: torch>=1.6", oldest=(1, 6)), "TM015")
    assert migrated.count("align_corners=False") == 2
    after = run(migrated, "warp", image, theta, strict=True)
    torch.testing.assert_close(after, before, rtol=0, atol=0)
