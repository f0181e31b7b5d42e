"""codemods/era.py: the torch a repository's code was written for (pins: their lowest release;
else idioms), and TM015 reading it from FileContext.era."""

from __future__ import annotations

from pathlib import Path

import pytest

from codemods import registry
from codemods.engine.pipeline import transform_source
from codemods.era import Era, detect_era, era_of_text, lowest_allowed
from codemods.helpers.context import FileContext


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.mark.parametrize(
    "specifier, line",
    [
        pytest.param(">=0.4", (0, 4), id="lower bound: what it was written against"),
        pytest.param(">=1.0,<1.3", (1, 0), id="bounded"),
        pytest.param("==1.2.0", (1, 2), id="exact"),
        pytest.param("~=1.4", (1, 4), id="compatible"),
        pytest.param(">1.0", (1, 0), id="greater: 1.0.1 is allowed"),
        pytest.param("<1.3", None, id="upper bound only: no lowest"),
        pytest.param("", None, id="nothing"),
    ],
)
def test_the_lowest_release_a_specifier_allows(specifier: str, line) -> None:
    assert lowest_allowed(specifier) == line


@pytest.mark.parametrize(
    "files, version, newest",
    [
        pytest.param({"requirements.txt": "numpy\ntorch>=0.4\n"}, (0, 4), (2, 13), id="requirements"),
        pytest.param({"setup.py": "from setuptools import setup\nsetup(install_requires=['torch>=1.0,<1.5'])\n"}, (1, 0), (1, 4), id="setup.py"),
        pytest.param({"setup.cfg": "[options]\ninstall_requires =\n    torch==1.2.0\n"}, (1, 2), (1, 2), id="setup.cfg"),
        pytest.param({"pyproject.toml": '[tool.poetry.dependencies]\ntorch = "^1.6"\n'}, (1, 6), (1, 13), id="poetry"),
        pytest.param({"environment.yml": "dependencies:\n  - pytorch=0.4.1\n"}, (0, 4), (0, 4), id="conda"),
        pytest.param({"environment.yml": "dependencies:\n  - pip:\n    - torch>=1.1\n"}, (1, 1), (2, 13), id="conda's pip list"),
        pytest.param({"requirements.txt": "torch>=1.4\n", "setup.py": "setup(install_requires=['torch>=1.0'])"}, (1, 0), (2, 13), id="the lowest of several"),
        pytest.param({"requirements.txt": "torch @ https://download.pytorch.org/whl/cu92/torch-1.2.0%2Bcu92-cp37-linux.whl\n"}, (1, 2), (1, 2), id="wheel"),
    ],
)
def test_a_pin_gives_its_lowest_allowed_release(tmp_path: Path, files, version, newest) -> None:
    era = detect_era(write(tmp_path, files))
    assert era is not None and (era.version, era.newest) == (version, newest)
    assert era.before((1, 3)) is (version < (1, 3))


def test_a_pin_without_lower_bound_only_bounds_from_above(tmp_path: Path) -> None:
    era = detect_era(write(tmp_path, {"requirements.txt": "torch<1.3\n"}))
    assert era.version is None and era.newest == (1, 2)
    assert era.before((1, 3)) is True and era.before((0, 4)) is None
    assert str(era) == "torch < 1.3 (requirements.txt: torch<1.3)"


def test_a_pin_beats_the_idioms(tmp_path: Path) -> None:
    root = write(tmp_path, {"requirements.txt": "torch>=1.4\n", "train.py": "from torch.autograd import Variable\n"})
    assert str(detect_era(root)) == "torch 1.4 (requirements.txt: torch>=1.4)"


@pytest.mark.parametrize(
    "text, oldest, newest",
    [
        pytest.param("from torch.autograd import Variable\n", None, (0, 3), id="Variable"),
        pytest.param("x = Variable(x, volatile=True)\n", None, (0, 3), id="volatile"),
        pytest.param("total += loss.data[0]\n", None, (0, 3), id="loss.data[0]"),
        pytest.param("c = nn.MSELoss(size_average=False)\n", None, (0, 4), id="size_average"),
        pytest.param("with torch.no_grad():\n    pass\n", (0, 4), None, id="no_grad"),
        pytest.param("with torch.cuda.amp.autocast():\n    pass\n", (1, 6), None, id="amp"),
        pytest.param("with torch.no_grad():\n    y = loss.data[0]\n", (0, 4), (0, 3), id="conflict: the new API wins"),
    ],
)
def test_idioms_bound_the_era(text: str, oldest, newest) -> None:
    era = era_of_text(text, "train.py")
    if oldest is not None and newest is not None:  # a new API beside an old idiom
        assert (era.oldest, era.newest) == (oldest, None) and "leftovers" in era.source
    else:
        assert (era.oldest, era.newest) == (oldest, newest)


def test_look_alikes_are_no_idioms() -> None:
    for text in (
        "self.volatile = volatile\n",
        "first = batch.data[0]\n",
        "from functools import reduce\nreduce(f, xs)\n",
        "x = x.item()\nloss = nn.MSELoss(reduction='sum')\ndevice = torch.device('cpu')\n",  # rewrites write these
    ):
        assert era_of_text(text) is None, text


def test_idioms_over_a_repository_name_where_they_are(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "pkg/model.py": "import torch\n\nfrom torch.autograd import Variable\n",
            ".venv/lib/site.py": "with torch.cuda.amp.autocast():\n    pass\n",  # not the project's
        },
    )
    era = detect_era(root)
    assert str(era) == "torch < 0.4 (idioms: Variable at pkg/model.py:3)"
    assert detect_era(write(tmp_path / "empty", {"a.py": "import torch\n"})) is None


GRID = "import torch.nn.functional as F\n\n\ndef warp(x, grid):\n    return F.grid_sample(x, grid)\n"
UP = "import torch.nn.functional as F\n\n\ndef up(x):\n    return F.upsample(x, scale_factor=2, mode='bilinear')\n"


def _tm015(source: str, era: Era | None):
    return transform_source(source, [registry.get("TM015")], FileContext(path="m.py", era=era))


@pytest.mark.parametrize(
    "era, grid, up",
    [
        pytest.param(Era((1, 0), "pin", oldest=(1, 0)), "align_corners=True", None, id="1.0"),
        pytest.param(Era((0, 3), "pin", oldest=(0, 3)), "align_corners=True", "align_corners=True)", id="0.3"),
        pytest.param(Era((1, 3), "pin", oldest=(1, 3)), "align_corners=False", None, id="1.3: written out, upsample kept"),
        pytest.param(Era((0, 4), "pin", oldest=(0, 4)), "align_corners=True", None, id="0.4"),
        pytest.param(Era(None, "pin <1.3", newest=(1, 2)), "align_corners=True", "finding", id="below 1.3, otherwise unknown"),
        pytest.param(None, "finding", "finding", id="unknown"),
    ],
)
def test_the_codemod_reads_the_era_from_the_file_context(era, grid, up) -> None:
    for source, expected in ((GRID, grid), (UP, up)):
        result = _tm015(source, era)
        if expected is None:
            assert not result.changed and not result.findings
        elif expected == "finding":
            assert not result.changed and [f.kind for f in result.findings] == ["finding"]
            assert "unknown" in result.findings[0].message
        else:
            assert expected in result.code
            assert [f.kind for f in result.findings] == ["review"]


def test_the_repository_era_beats_the_files_own_idioms() -> None:
    source = "from torch.autograd import Variable\n" + GRID
    assert "align_corners=True" in _tm015(source, None).code  # the file's idioms: < 0.4
    assert "align_corners=False" in _tm015(source, Era((1, 6), "setup.py: torch>=1.6", oldest=(1, 6))).code


def test_the_idioms_of_the_files_a_run_discovered(tmp_path: Path) -> None:
    root = write(tmp_path, {"old.py": "from torch.autograd import Variable\n", "new.py": "import torch\n"})
    assert detect_era(root, [root / "new.py"]) is None
    assert str(detect_era(root, [root / "old.py", root / "notes.txt"])) == "torch < 0.4 (idioms: Variable at old.py:1)"


def test_a_run_detects_the_era_once_reports_it_and_hands_it_to_every_file(tmp_path) -> None:
    """End to end: the repository's pin says torch >= 1.0, < 1.3; `run` rewrites grid_sample with
    the old default and names the era in its summary and JSON report."""
    import json

    from click.testing import CliRunner

    from codemods.cli import main

    (tmp_path / "requirements.txt").write_text("torch>=1.0,<1.3\n")
    (tmp_path / "warp.py").write_text(
        "import torch.nn.functional as F\n\n\ndef warp(x, grid):\n    return F.grid_sample(x, grid)\n"
    )
    result = CliRunner().invoke(main, ["run", str(tmp_path), "--diff", "--no-cache", "--target-torch", "2.13"])
    assert "+    return F.grid_sample(x, grid, align_corners=True)" in result.output
    assert "era: torch 1.0 (requirements.txt: torch>=1.0,<1.3)" in result.output
    as_json = CliRunner().invoke(main, ["run", str(tmp_path), "--diff", "--no-cache", "--format", "json"])
    assert json.loads(as_json.output)["era"] == "torch 1.0 (requirements.txt: torch>=1.0,<1.3)"
    # Without a codemod that asks for it, no era is read or shown.
    other = CliRunner().invoke(main, ["run", str(tmp_path), "--diff", "--no-cache", "--select", "TM001"])
    assert "era:" not in other.output
