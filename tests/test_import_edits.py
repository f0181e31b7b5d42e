"""Import edits never take user text with them: a comment above an import that goes stays."""

from __future__ import annotations

import pytest

from codemods import registry
from codemods.engine.pipeline import transform_source


@pytest.mark.parametrize(
    "source, kept",
    [
        ("x = 0\n# why F\nimport torch.nn.functional as F\ny = F.sigmoid(x)\n", "x = 0\n# why F\ny = torch.sigmoid(x)\n"),
        (
            "def f(x):\n    # local import\n    import torch.nn.functional as F\n    return F.sigmoid(x)\n",
            "def f(x):\n    # local import\n    return torch.sigmoid(x)\n",
        ),
        ("import torch\nx = 1\n# last\nimport torch.nn.functional as F\nF.tanh(x)\n", "x = 1\n# last\ntorch.tanh(x)\n"),
    ],
    ids=["module", "function", "after-torch"],
)
def test_a_comment_above_a_removed_import_stays(source: str, kept: str) -> None:
    result = transform_source(source, [registry.get("TM006")])
    assert result.changed and "import torch.nn.functional" not in result.code
    assert kept in result.code
