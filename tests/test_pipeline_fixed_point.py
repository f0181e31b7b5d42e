"""One run of the whole pipeline reaches its fixed point: a second run changes nothing.

tests/test_fixtures.py checks each codemod against its own output; here every codemod runs, in
PIPELINE order, so that a codemod whose output an earlier one would rewrite (TM101 writing a
uint8 mask that TM011 turns bool) shows: an interrupted migration run again must end where an
uninterrupted one does. The real-corpus test (tests/test_real_corpus.py) holds the same on
whole projects; the project here is fastai 0.7.0's shape, small: a file that only parses once
TM000 has repaired it, reading names from star imports of its package.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from codemods import api, registry
from codemods.api import transform_source
from tests.conftest import FIXTURES

CASES = sorted(FIXTURES.glob("TM*/*.in.py"))
MODES = {"default": False, "unsafe": True}


@pytest.mark.parametrize("unsafe", list(MODES.values()), ids=list(MODES))
def test_a_second_run_over_every_fixture_changes_nothing(unsafe: bool) -> None:
    specs = registry.select(unsafe=unsafe)
    moving = []
    for case in CASES:
        first = transform_source(case.read_text(), specs, path=case.name)
        second = transform_source(first.code, specs, path=case.name)
        if second.code != first.code:
            moving.append(f"{case.parent.name}/{case.name}: {sorted(second.rewrites)}")
    assert moving == []


def test_uint8_masks_that_tm101_moves_are_bool_after_one_run() -> None:
    # TM011 could not spell torch.bool (no `import torch`) and left the masks uint8; TM101 then
    # added `import torch` and wrote `torch.empty(..., dtype=uint8, device=device)`, which TM011
    # made bool only on a second run.
    masks = FIXTURES / "TM011-bool-masks" / "imports.in.py"  # torch.cuda.ByteTensor(size), dtype=uint8
    first = transform_source(masks.read_text(), registry.select())
    assert "dtype=torch.bool, device=device" in first.code
    assert "zeros(x.size(), dtype=torch.bool)" in first.code
    assert "uint8" not in first.code
    assert transform_source(first.code, registry.select()).code == first.code


PACKAGE = {
    "__init__.py": "",
    "imports.py": "import collections\nimport numpy as np\n",
    "torch_imports.py": "import torch\nfrom torch.autograd import Variable\n",
    # `async=True`: a syntax error until TM000 repairs it, and its names come from star imports.
    "core.py": """\
from .imports import *
from .torch_imports import *


def is_iter(x):
    return isinstance(x, collections.Iterable)


def T(a, cuda=True):
    a = torch.from_numpy(np.asarray(a))
    if cuda:
        a = to_gpu(a, async=True)
    return a


def create_variable(x, requires_grad=False):
    return Variable(T(x), requires_grad=requires_grad)
""",
}


def test_a_file_only_the_text_stage_makes_parse_gets_its_facts_on_the_first_run(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    root.mkdir()
    for name, text in PACKAGE.items():
        (root / name).write_text(text)
    again = tmp_path / "again"
    options = api.Options(mode="write", use_config=False, cache=False, jobs=1)
    api.migrate([str(root)], options)
    core = (root / "core.py").read_text()
    # The star imports' names are known on the first run, as they are once `async` is repaired.
    assert "collections.abc.Iterable" in core and "Variable(T(x)" not in core and "async_=True" in core
    shutil.copytree(root, again)
    second = api.migrate([str(again)], options)
    assert [f.path for f in second.changed] == []
