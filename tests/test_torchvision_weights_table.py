"""TM009's table (codemods/data/torchvision_weights.json) and the torch_minimums entries it implies.

The table is generated from torchvision's Python source by scripts/gen_torchvision_weights.py;
tests cannot fetch that source, so they check:

- the table's own consistency (every legacy default is a member of an enum the table records,
  named `<X>_Weights`; every spelling reaches one builder; the source is pinned);
- that torch_minimums.json's torchvision entries and TM009's declared `emits` are exactly what
  the generator derives from the table (`--minimums --check`);
- the generator's parser on a small torchvision-shaped tree written here (decorator forms, star
  exports, a module named like its builder), read both from a directory and from a git repository;
- with TORCHVISION_SOURCE=DIR (a checkout of pytorch/vision or an unpacked torchvision wheel), that
  the checked-in table equals what the generator reads from DIR (`--check`).

torchvision is never imported (it is not installed: its compiled operators do not load against
the CPU torch wheel used here).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from codemods import registry
from codemods.gates import torchvision_weights as gate
from tests.conftest import ROOT, load_script

SCRIPT = ROOT / "scripts" / "gen_torchvision_weights.py"
ENUM = re.compile(r"^torchvision\.models(?:\.(?:detection|segmentation|video|quantization|optical_flow))?\.[A-Za-z0-9_]+_(?:Quantized)?Weights$")


@pytest.fixture(scope="module")
def table() -> dict:
    return json.loads((ROOT / "codemods" / "data" / "torchvision_weights.json").read_text())


def test_the_table_pins_its_source(table) -> None:
    source = table["source"]
    assert re.fullmatch(r"[0-9a-f]{40}", source["commit"]), source
    assert source["release"] and source["files"] == "torchvision/models/**/*.py"
    assert table["weights_since"] == {"torchvision": "0.13", "torch": "1.12"}


def test_every_legacy_default_is_a_member_of_a_recorded_enum(table) -> None:
    assert len(table["builders"]) >= 100
    for name, builder in table["builders"].items():
        assert builder["legacy"], name
        params = [*builder["positional"], *builder["keywords"]]
        for new, info in builder["legacy"].items():
            assert new in params and info["from"] in ("pretrained", "pretrained_backbone"), (name, new)
            if "chooser" in info:
                assert info["chooser"].startswith("lambda") and "enum" not in info, (name, info)
                continue
            if info["value"] is None:
                assert "enum" not in info, (name, info)
                continue
            assert ENUM.match(info["enum"]), (name, info["enum"])
            assert info["value"] in table["enums"][info["enum"]]["members"], (name, info)
    for enum, members in table["enums"].items():
        assert ENUM.match(enum) and members["members"], enum
        assert members["default"] in members["members"], enum


def test_every_spelling_reaches_one_builder(table) -> None:
    seen: dict[str, str] = {}
    for name, builder in table["builders"].items():
        for spelled in (name, *builder["spellings"]):
            assert spelled.startswith("torchvision.models.") and spelled not in seen, (spelled, name, seen.get(spelled))
            seen[spelled] = name
    assert gate.builders()["torchvision.models.resnet.resnet18"]["name"] == "torchvision.models.resnet18"


def test_the_legacy_choice_is_not_default(table) -> None:
    """The reason the table exists: `pretrained=True` is the first weights, and DEFAULT may be newer."""
    resnet50 = table["builders"]["torchvision.models.resnet50"]["legacy"]["weights"]
    assert resnet50 == {"from": "pretrained", "enum": "torchvision.models.ResNet50_Weights", "value": "IMAGENET1K_V1"}
    assert table["enums"]["torchvision.models.ResNet50_Weights"]["default"] == "IMAGENET1K_V2"
    detection = table["builders"]["torchvision.models.detection.fasterrcnn_resnet50_fpn"]["legacy"]
    assert detection["weights"]["value"] == "COCO_V1"
    assert detection["weights_backbone"] == {"from": "pretrained_backbone", "enum": "torchvision.models.ResNet50_Weights", "value": "IMAGENET1K_V1"}
    # what TM009's finding for a builder chosen at run time suggests
    classifiers = [b for n, b in table["builders"].items() if n.count(".") == 2]
    assert {b["legacy"]["weights"].get("value") for b in classifiers} == {"IMAGENET1K_V1", None}
    # quantized builders choose by `quantize`: recorded, and reported by the codemod
    assert "quantize" in table["builders"]["torchvision.models.quantization.resnet18"]["legacy"]["weights"]["chooser"]


def test_minimums_and_emits_are_what_the_table_implies(table) -> None:
    generator = load_script("gen_torchvision_weights")
    expected = generator.minimum_entries(table)
    minimums = json.loads((ROOT / "codemods" / "data" / "torch_minimums.json").read_text())["minimums"]
    assert {k: v for k, v in minimums.items() if k.startswith("torchvision.")} == expected
    assert set(registry.get("TM009").emits) == set(expected)
    assert expected["torchvision.models.ResNet18_Weights.IMAGENET1K_V1"] == "1.12"
    assert expected["torchvision.models.resnet.resnet18(weights)"] == "1.12"
    done = subprocess.run([sys.executable, str(SCRIPT), "--minimums", "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# -- the generator's parser on a small tree written here ------------------------------------------

TREE = {
    "torchvision/version.py": """
        __version__ = "9.9.9"
        git_version = "0123456789abcdef0123456789abcdef01234567"
    """,
    "torchvision/models/__init__.py": """
        from .tiny import *
        from .net import *
        from . import detection
    """,
    "torchvision/models/tiny.py": """
        __all__ = ["Tiny_Weights", "tiny", "huge"]

        class Tiny_Weights(WeightsEnum):
            FIRST = Weights(url="a")
            SECOND = Weights(url="b")
            DEFAULT = SECOND

        @register_model()
        @handle_legacy_interface(weights=("pretrained", Tiny_Weights.FIRST))
        def tiny(*, weights=None, progress=True, **kwargs):
            pass

        @handle_legacy_interface(weights=("pretrained", None))
        def huge(*, weights=None, progress=True, **kwargs):
            pass

        def helper(pretrained=False):
            pass
    """,
    "torchvision/models/net.py": """
        __all__ = ["Net_Weights", "net"]

        class Net_Weights(WeightsEnum):
            V1 = Weights(url="n")
            DEFAULT = V1

        @handle_legacy_interface(weights=("pretrained", lambda kwargs: Net_Weights.V1 if kwargs.get("x") else None))
        def net(*, weights=None, x=False, **kwargs):
            pass
    """,
    "torchvision/models/detection/__init__.py": """
        from .finder import *
    """,
    "torchvision/models/detection/finder.py": """
        from ..tiny import tiny, Tiny_Weights

        __all__ = ["Finder_Weights", "finder"]

        class Finder_Weights(WeightsEnum):
            COCO = Weights(url="c")
            DEFAULT = COCO

        @handle_legacy_interface(
            weights=("pretrained", Finder_Weights.COCO),
            weights_backbone=("pretrained_backbone", Tiny_Weights.FIRST),
        )
        def finder(*, weights=None, progress=True, num_classes=None, weights_backbone=Tiny_Weights.FIRST, **kwargs):
            pass
    """,
}


def _write_tree(root) -> None:
    for path, text in TREE.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text).lstrip())


def _check_generated(generated: dict) -> None:
    builders = generated["builders"]
    assert set(builders) == {
        "torchvision.models.tiny",  # the star import rebinds the submodule's name to the function
        "torchvision.models.huge",
        "torchvision.models.net",
        "torchvision.models.detection.finder",
    }
    assert builders["torchvision.models.tiny"]["legacy"] == {
        "weights": {"from": "pretrained", "enum": "torchvision.models.Tiny_Weights", "value": "FIRST"}
    }
    assert set(builders["torchvision.models.tiny"]["spellings"]) == {
        "torchvision.models.tiny.tiny",
        "torchvision.models.detection.finder.tiny",  # imported there: a name that reaches it
    }
    assert builders["torchvision.models.huge"]["legacy"]["weights"] == {"from": "pretrained", "value": None}
    assert builders["torchvision.models.net"]["legacy"]["weights"]["chooser"].startswith("lambda kwargs:")
    finder = builders["torchvision.models.detection.finder"]
    assert finder["keywords"] == ["weights", "progress", "num_classes", "weights_backbone"]
    assert finder["legacy"]["weights"]["enum"] == "torchvision.models.detection.Finder_Weights"
    assert finder["legacy"]["weights_backbone"]["enum"] == "torchvision.models.Tiny_Weights"
    assert generated["enums"]["torchvision.models.Tiny_Weights"] == {"members": ["FIRST", "SECOND"], "default": "SECOND"}


def test_the_generator_reads_a_source_directory(tmp_path) -> None:
    generator = load_script("gen_torchvision_weights")
    _write_tree(tmp_path)
    generated = generator.generate(generator.DirSource(tmp_path))
    _check_generated(generated)
    assert generated["source"]["commit"] == "0123456789abcdef0123456789abcdef01234567"
    assert generated["source"]["release"] == "9.9.9"


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_generator_reads_a_git_repository(tmp_path) -> None:
    generator = load_script("gen_torchvision_weights")
    work = tmp_path / "vision"
    _write_tree(work)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "tree"]):
        subprocess.run(["git", "-C", str(work), *command], check=True, env=env, capture_output=True)
    head = subprocess.run(["git", "-C", str(work), "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    generated = generator.generate(generator.GitSource(work / ".git", "HEAD"))
    _check_generated(generated)
    assert generated["source"]["commit"] == head


@pytest.mark.skipif(not os.environ.get("TORCHVISION_SOURCE"), reason="set TORCHVISION_SOURCE=DIR to compare with torchvision's source")
def test_the_table_is_what_the_source_gives() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--source", os.environ["TORCHVISION_SOURCE"], "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
