"""TM011 on masks that reach `masked_fill_` through a product or from another function (a
language model's attention masks): the uint8 masks crash today; the rewrite (same function) or
the reported suggestion (across functions) gives what bool masks give."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from codemods import registry  # noqa: E402
from codemods.api import transform_source  # noqa: E402
from tests.behaviour import run  # noqa: E402

LEGACY = """
import torch
import torch.nn as nn


class Attention(nn.Module):
    def forward(self, scores, mask=None):
        if mask is not None:
            scores = scores.clone()
            scores.masked_fill_(mask, -1e9)
        return scores.softmax(-1)


class LanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Attention(), Attention()])

    def forward(self, scores, tokens):
        pad = (tokens == 0).byte().unsqueeze(1)
        for layer in self.layers:
            scores = layer(scores, mask=pad)
        return scores


def both(x, y):
    x = x.clone()
    x.masked_fill_((x > 0).byte() * (y > 0).byte(), 0)
    return x


def lm(scores, tokens):
    return LanguageModel()(scores, tokens)
"""


def _inputs():
    torch.manual_seed(0)
    return torch.randn(2, 4, 4), torch.tensor([[5, 7, 0, 0], [3, 0, 0, 0]]), torch.randn(3, 4), torch.randn(3, 4)


def test_uint8_masks_crash_today_and_the_migration_or_its_suggestion_gives_the_bool_result() -> None:
    scores, tokens, x, y = _inputs()
    with pytest.raises(RuntimeError, match="boolean"):
        run(LEGACY, "both", x, y)
    with pytest.raises(RuntimeError, match="boolean"):
        run(LEGACY, "lm", scores, tokens)
    result = transform_source(LEGACY, [registry.get("TM011")])
    assert result.problem is None
    assert "(x > 0).bool() * (y > 0).bool()" in result.code  # the product, in one function: rewritten
    [finding] = result.findings  # the attention mask, made in one class and used in another: reported
    line = result.code.splitlines()[finding.line - 1]
    assert "(tokens == 0).byte()" in line and "`mask`" in finding.message
    torch.testing.assert_close(run(result.code, "both", x, y, strict=True), x.masked_fill((x > 0) & (y > 0), 0))
    suggested = result.code.replace("(tokens == 0).byte()", "(tokens == 0).bool()")
    expected = scores
    for _ in range(2):
        expected = expected.masked_fill((tokens == 0).unsqueeze(1), -1e9).softmax(-1)
    torch.testing.assert_close(run(suggested, "lm", scores, tokens, strict=True), expected)
