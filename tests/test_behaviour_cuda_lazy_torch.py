"""TM101 where `torch` is not bound at module level (issue 15), and where the definition goes.

A module that imports torch only inside its functions (unittest modules, lazy-import libraries)
must still import after migration, without torch becoming a module-level dependency; a generated
`device = ...` goes after the last import of the import block, in `.py` files and notebooks alike.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from codemods import registry  # noqa: E402
from codemods.api import Options, migrate as migrate_paths, transform_source  # noqa: E402
from tests.behaviour import migrate, run  # noqa: E402

LAZY = '''
import math


def scaled_sum(values):
    import torch

    x = torch.tensor(values).cuda()
    return (x * math.pi).sum().item()


def entry(values):
    return scaled_sum(values), helper(values)


def helper(values):
    return len(values)
'''


@pytest.fixture
def cuda_as_no_op(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self, device=None, non_blocking=False, **kw: self)


def test_a_module_whose_torch_import_is_local_still_imports_and_runs(cuda_as_no_op) -> None:
    before = run(LAZY, "entry", [1.0, 2.0])
    migrated = migrate(LAZY, "TM101")
    module_level = [line for line in migrated.splitlines() if line and not line.startswith((" ", "#"))]
    assert not any("torch" in line for line in module_level)  # torch stays a lazy dependency
    assert run(migrated, "entry", [1.0, 2.0]) == before


def test_the_migrated_lazy_module_runs_without_cuda() -> None:
    if torch.cuda.is_available():
        pytest.skip("about a machine without CUDA")
    with pytest.raises((AssertionError, RuntimeError)):
        run(LAZY, "entry", [1.0])
    assert run(migrate(LAZY, "TM101"), "entry", [1.0]) == pytest.approx((3.14159265, 1))


def test_module_level_code_gets_a_module_level_import() -> None:
    source = "def f():\n    import torch\n    return torch.zeros(1)\n\n\nx = f().cuda()\n"
    code = transform_source(source, [registry.get("TM101")]).code
    compile(code, "<migrated>", "exec")
    assert code.index("import torch\n") < code.index("device = torch.device(")  # bound before it is used
    assert code.startswith("import torch\n")


def test_the_definition_comes_after_the_last_import_of_a_notebook(tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import torch"),
        nbformat.v4.new_code_cell("import numpy as np\nimport torch.nn as nn"),
        nbformat.v4.new_code_cell("model = nn.Linear(2, 2).cuda()"),
    ]
    target = tmp_path / "train.ipynb"
    target.write_text(json.dumps(nb, indent=1) + "\n")
    report = migrate_paths([str(tmp_path)], Options(use_config=False, select=("TM101",)))
    assert not report.problems
    cells = [c["source"] for c in json.loads(target.read_text())["cells"]]
    assert cells[0] == "import torch"  # not between `import torch` and `import torch.nn`
    assert cells[1].startswith("import numpy as np\nimport torch.nn as nn\n\ndevice = torch.device(")
    assert cells[2] == "model = nn.Linear(2, 2).to(device)"
