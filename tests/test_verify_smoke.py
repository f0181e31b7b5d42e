"""verify on a project without tests: the generated smoke check (codemods/verify/smoke*.py).

fixtures/projects/notests_research (see its README) has no test at all; every kind shows on it:
a module and a script that only import after the migration (`torch._six`), a model whose forward
used `torch.symeig` (fixed), models that do not change, a model whose output is noise (flaky) and,
with tests/faults.py's TM099 removing `Head.reset_parameters`, a regression with its culprit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from codemods.cli import main
from codemods.verify.smoke_compare import model_difference
from codemods.verify.smoke_discover import IMPORT, MODEL, SCRIPT, discover, module_name

from tests import faults

FAULT = {"research/models.py": {"Head.reset_parameters"}}
CULPRIT = "TM099 on research/models.py"


def _verify_json(path: Path, *extra: str) -> dict:
    result = CliRunner().invoke(main, ["verify", str(path), "--device", "cpu", "--format", "json", *extra])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def broken_report(tmp_path_factory) -> dict:
    """One verify of the fixture with the fault installed, through the CLI (shared: it takes a while)."""
    import shutil

    from codemods import registry

    from tests.conftest import PROJECTS

    target = tmp_path_factory.mktemp("smoke") / "notests_research"
    shutil.copytree(PROJECTS / "notests_research", target, ignore=shutil.ignore_patterns("__pycache__"))
    pipeline = registry.PIPELINE
    faults.install(FAULT)
    try:
        return _verify_json(target, "--rerun", "1")
    finally:
        registry.PIPELINE = pipeline


def test_every_kind_shows_on_a_project_without_tests(broken_report) -> None:
    report = broken_report
    kinds = {t["id"]: t["kind"] for t in report["tests"]}
    assert report["exit_code"] == 1, report["message"]
    assert kinds == {
        "smoke::import::prepare_data": "unchanged",  # parses sys.argv at import: fails on both sides
        "smoke::import::research": "unchanged",
        "smoke::import::research.compat": "fixed",
        "smoke::import::research.models": "unchanged",
        "smoke::import::train": "fixed",
        "smoke::model::research.models.ConvNet": "unchanged",
        "smoke::model::research.models.Head": "regression",
        "smoke::model::research.models.NoisyNet": "flaky",
        "smoke::model::research.models.SpectralNet": "fixed",
        "smoke::script::prepare_data.py": "unchanged",
        "smoke::script::train.py": "fixed",
    }, json.dumps(report["tests"], indent=1)
    by_id = {t["id"]: t for t in report["tests"]}
    head = by_id["smoke::model::research.models.Head"]
    assert (head["before"], head["after"]) == ("passed", "failed")
    assert head["after_message"].startswith("initial parameter weight: values differ"), head
    assert head["culprits"] == [CULPRIT] and report["culprits"] == {CULPRIT: ["smoke::model::research.models.Head"]}
    assert report["without_culprits"]["clean"], report["without_culprits"]
    compat = by_id["smoke::import::research.compat"]
    assert compat["before"] == "error" and "torch._six" in compat["before_message"]
    spectral = by_id["smoke::model::research.models.SpectralNet"]
    assert "symeig" in spectral["before_message"] and spectral["after"] == "passed"
    argv = by_id["smoke::import::prepare_data"]
    assert argv["before"] == argv["after"] == "error" and "SystemExit(2)" in argv["after_message"]
    assert any("fail on every side" in n and "smoke::import::prepare_data" in n for n in report["notes"])
    assert report["summary"]["regression"] == 1 and report["summary"]["flaky"] == 1
    assert report["test_command"] == "smoke check" and [s["label"] for s in report["sides"]] == ["before", "after"]


def test_nothing_the_smoke_check_can_run_is_exit_2_with_the_reason(tmp_path) -> None:
    (tmp_path / "notes.txt").write_text("no python here\n")
    (tmp_path / "bad-name.py").write_text("import torch\nx = torch.autograd.Variable(torch.ones(1))\n")
    report = _verify_json(tmp_path)
    assert report["exit_code"] == 2
    assert "nothing the smoke check can run" in report["message"], report["message"]


def test_a_test_command_that_ran_no_test_is_exit_2_not_ok(tmp_path) -> None:
    (tmp_path / "lib.py").write_text("import torch\nx = torch.autograd.Variable(torch.ones(1))\n")
    report = _verify_json(tmp_path, "--tests", "python -m unittest -v", "--rerun", "0")
    assert report["exit_code"] == 2, report["message"]
    assert "ran no test" in report["message"]


def test_test_files_that_pytest_collects_nothing_from_fall_back_to_the_smoke_check(tmp_path) -> None:
    """An old repository's `test/test_utils.py` holding helpers but no test function: pytest exits 5 on
    both sides; the proof must not stop there (crnn.pytorch did), the smoke check takes over."""
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "test_utils.py").write_text("def make_batch(n):\n    return list(range(n))\n")
    (tmp_path / "net.py").write_text(
        "import torch\nimport torch.nn as nn\nfrom torch.autograd import Variable\n\n\n"
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(3, 2)\n\n"
        "    def forward(self, x):\n        return self.fc(Variable(x))\n"
    )
    report = _verify_json(tmp_path, "--rerun", "0", "--no-culprits")
    assert report["exit_code"] == 0, report["message"]
    assert report["test_command"] == "smoke check", report
    assert [s["command"] for s in report["sides"]] == ["smoke check (2 checks)"] * 2, report["sides"]
    kinds = {t["id"]: (t["kind"], t["before"], t["after"]) for t in report["tests"]}
    assert kinds["smoke::model::net.Net"] == ("unchanged", "passed", "passed"), kinds
    assert any("pytest collected no tests" in n and "smoke check is the evidence" in n for n in report["notes"])
    mine = _verify_json(tmp_path, "--tests", "python -m pytest", "--rerun", "0")
    assert mine["exit_code"] == 2 and "collected no tests" in mine["message"], mine["message"]


# -- discovery (no subprocess) ---------------------------------------------------------------------


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def test_discovery_builds_models_from_their_defaults_or_the_projects_own_literal_calls(tmp_path) -> None:
    found = discover(_project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/layers.py": (
            "from torch import nn\n"
            "class Block(nn.Module):\n    def __init__(self, dim, act='relu'):\n        super().__init__()\n"
            "class Free(nn.Module):\n    def __init__(self, dim=3):\n        super().__init__()\n"
            "class Lin(nn.Linear):\n    pass\n"
            "class NoSite(nn.Module):\n    def __init__(self, dim):\n        super().__init__()\n"
            "class Plain:\n    pass\n"
        ),
        "pkg/net.py": "from .layers import Block\nclass Deep(Block):\n    pass\n",
        "run.py": (
            "import sys\nfrom pkg.layers import Block, Lin, NoSite\nn = int(sys.argv[1])\n"
            "a = NoSite(n)\nb = Block(16, act='gelu')\nc = Lin(4, 2)\nd = Block(*[1])\n"
        ),
        "tests/test_x.py": "from torch import nn\nclass T(nn.Module):\n    pass\n",
        "setup.py": "from setuptools import setup\n",
    }))  # fmt: skip
    models = {c.id: (c.args, c.kwargs, c.site) for c in found.checks if c.kind == MODEL}
    assert models == {
        "smoke::model::pkg.layers.Block": (("16",), (("act", "'gelu'"),), "run.py:5"),
        "smoke::model::pkg.layers.Free": ((), (), ""),
        "smoke::model::pkg.layers.Lin": (("4", "2"), (), "run.py:6"),  # nn.Linear needs its arguments
        "smoke::model::pkg.net.Deep": (("16",), (("act", "'gelu'"),), "run.py:5"),  # Block's __init__, by name
    }
    assert found.unbuildable == ["pkg.layers.NoSite"]  # its only call passes a variable
    imports = [c.module for c in found.checks if c.kind == IMPORT]
    assert imports == ["run", "pkg", "pkg.layers", "pkg.net"]  # no tests/, no setup.py
    assert [c.kind for c in found.checks if c.kind == SCRIPT] == []  # sys.argv alone is no parser


def test_discovery_finds_argument_parsing_scripts_and_src_layouts(tmp_path) -> None:
    found = discover(_project(tmp_path, {
        "src/lib/__init__.py": "",
        "src/lib/core.py": "x = 1\n",
        "tools/train.py": "import argparse\np = argparse.ArgumentParser()\n",
        "tools/serve.py": "import click\n@click.command()\ndef cli():\n    pass\n",
        "tools/plain.py": "print(1)\n",
        "my-scripts/go.py": "from argparse import ArgumentParser\nArgumentParser().parse_args()\n",
    }))  # fmt: skip
    assert found.roots == ["src", "."]
    assert {c.path for c in found.checks if c.kind == SCRIPT} == {"tools/train.py", "tools/serve.py", "my-scripts/go.py"}
    assert {c.module for c in found.checks if c.kind == IMPORT} == {"lib", "lib.core", "tools.train", "tools.serve", "tools.plain"}
    assert module_name("my-scripts/go.py", ["."]) is None


def test_model_comparison_names_renamed_keys_even_when_every_number_agrees() -> None:
    t = {"shape": [2], "dtype": "torch.float32", "sum": 1.0, "abs": 1.0, "sample": [0.5, 0.5]}
    before = {"state": [["fc.weight", t]], "input": None, "forward": None, "grads": None}
    renamed = {**before, "state": [["linear.weight", t]]}
    assert model_difference(before, before, 1e-5, 1e-8) is None
    assert "missing after: fc.weight; new after: linear.weight" in model_difference(before, renamed, 1e-5, 1e-8)
    moved = {**before, "state": [["fc.weight", {**t, "sample": [0.5, 0.6]}]]}
    assert model_difference(before, moved, 1e-5, 1e-8) == "initial parameter fc.weight: values differ (max abs diff 0.1)"
    ran = {**before, "input": ["float", [2, 5]], "forward": [["out", t]], "grads": []}
    assert model_difference(ran, {**ran, "input": ["float", [2, 8, 5]]}, 1e-5, 1e-8).startswith("forward accepted input")
    assert model_difference(ran, {**before, "no_input": "x"}, 1e-5, 1e-8).startswith("forward no longer runs")


def test_across_torch_releases_values_near_zero_are_held_to_their_tensors_scale() -> None:
    """pytorch-cifar's PNASNet on torch 1.13.1 and 2.13: a batch-norm gradient near zero differs by
    1.8e-7 in a tensor whose values reach 1e-2: torch's arithmetic, not the migration's doing. The
    same torch on both sides keeps the user's tolerance; a real change stays a difference."""
    from codemods.verify.smoke import CROSS_RTOL

    grad = {"shape": [3], "dtype": "torch.float32", "sum": 0.0101, "abs": 0.0101, "sample": [1e-2, 1e-4, 0.0]}
    drift = {**grad, "sample": [1e-2, 1e-4, 1.8e-7], "sum": 0.0101002}
    model = {"state": [], "input": ["float", [2, 3]], "forward": [], "grads": [["bn.bias", grad]]}
    drifted = {**model, "grads": [["bn.bias", drift]]}
    assert model_difference(model, drifted, 1e-5, 1e-8) == "gradient of bn.bias: values differ (max abs diff 1.8e-07)"
    assert model_difference(model, drifted, 1e-5, 1e-8, CROSS_RTOL) is None
    changed = {**model, "grads": [["bn.bias", {**grad, "sample": [1e-2, 1e-4, 1e-3]}]]}
    assert model_difference(model, changed, 1e-5, 1e-8, CROSS_RTOL) == "gradient of bn.bias: values differ (max abs diff 0.001)"


def test_batch_report_names_smoke_checks_where_there_were_no_tests() -> None:
    from types import SimpleNamespace

    from codemods.batch.render import markdown_report
    from codemods.batch.result import RepoResult

    result = RepoResult("paper", "src", status="regressions", tests_before={"passed": 6, "error": 5},
                        tests_after={"passed": 8, "failed": 2, "error": 1},
                        regressions=["smoke::model::research.models.Head"], culprits=[CULPRIT])  # fmt: skip
    checked = SimpleNamespace(test_command="smoke check", unfixed=[], fixed=[], device=None, coverage=None)
    text = markdown_report(result, "", checked, None)
    assert "| smoke checks | 5 error, 6 passed | 1 error, 2 failed, 8 passed |" in text, text
    assert "No tests: the generated smoke check ran instead" in text
    assert "- `smoke::model::research.models.Head`" in text and f"Caused by: {CULPRIT}" in text


def test_across_torch_versions_the_old_sides_numbers_are_the_reference(project, old_torch_python) -> None:
    """torch 1.13.1 (before) against 2.13 (baseline, after): the probes exchange plain JSON, and the
    migrated SpectralNet (torch.linalg.eigh) reproduces what torch.symeig computed on 1.13.1."""
    report = _verify_json(project("notests_research"), "--before-python", old_torch_python, "--rerun", "1", "--no-culprits")
    kinds = {t["id"]: t["kind"] for t in report["tests"]}
    assert report["exit_code"] == 0, report["message"]
    assert [s["environment"]["torch"][:4] for s in report["sides"]] == ["1.13", "2.13", "2.13"]
    for fixed in ("research.compat", "train"):
        assert kinds[f"smoke::import::{fixed}"] == "fixed"
    spectral = next(t for t in report["tests"] if t["id"] == "smoke::model::research.models.SpectralNet")
    assert (spectral["before"], spectral["baseline"], spectral["after"], spectral["kind"]) == ("passed", "error", "passed", "fixed")
    assert kinds["smoke::model::research.models.ConvNet"] == kinds["smoke::model::research.models.Head"] == "unchanged"
    assert kinds["smoke::model::research.models.NoisyNet"] == "flaky"  # not unfixed: the before side's rerun differs


def test_smoke_beside_a_suite_adds_its_checks_to_the_tests(project) -> None:
    from codemods.verify import VerifyOptions, render, verify

    from tests.test_verify_suites import PYTEST

    options = VerifyOptions(tests=PYTEST, smoke=True, rerun=0, device="cpu", find_culprits=False)
    report = verify(project("legacy_unittest"), options)
    kinds = {c.id: c.kind for c in report.changes}
    assert report.exit_code == 0 and report.test_command == PYTEST, render.text(report)
    assert kinds["tests/checks_legacy.py::LegacyChecks::test_scale"] == "fixed"  # the suite, as without --smoke
    assert kinds["smoke::import::mathlib.compat"] == kinds["smoke::import::mathlib.legacy"] == "fixed"
    assert kinds["smoke::import::mathlib.stats"] == "unchanged"
    assert [s.label for s in report.sides] == ["before", "after", "before", "after"]  # the suite's, then the smoke's


def test_a_site_may_name_the_calling_modules_own_classes_unless_a_local_shadows_them(tmp_path) -> None:
    found = discover(_project(tmp_path, {
        "nets/__init__.py": "",
        "nets/resnet.py": (
            "import torch.nn as nn\n"
            "class BasicBlock(nn.Module):\n    pass\n"
            "class ResNet(nn.Module):\n    def __init__(self, block, layers):\n        super().__init__()\n"
            "def ResNet18():\n    return ResNet(BasicBlock, [2, 2, 2, 2])\n"
            "def custom(BasicBlock):\n    return ResNet(BasicBlock, [1])\n"
        ),
        "nets/shuffle.py": (
            "import torch.nn as nn\n"
            "class ShuffleBlock(nn.Module):\n    def __init__(self, groups):\n        super().__init__()\n"
            "def make(g):\n    return ShuffleBlock(groups=g)\n"
        ),
        "nets/shufflev2.py": (
            "import torch.nn as nn\n"
            "class ShuffleBlock(nn.Module):\n    def __init__(self, groups=2):\n        super().__init__()\n"
            "x = ShuffleBlock(groups=3)\n"
        ),
    }))  # fmt: skip
    models = {c.id: c for c in found.checks if c.kind == MODEL}
    resnet = models["smoke::model::nets.resnet.ResNet"]
    assert (resnet.args, resnet.site, resnet.site_module) == (("BasicBlock", "[2, 2, 2, 2]"), "nets/resnet.py:8", "nets.resnet")
    # shufflev2's call builds shufflev2's class, never the same-named class of shuffle.py
    assert "smoke::model::nets.shuffle.ShuffleBlock" not in models and found.unbuildable == ["nets.shuffle.ShuffleBlock"]
    assert models["smoke::model::nets.shufflev2.ShuffleBlock"].args == ()


def test_a_file_in_a_folder_of_scripts_imports_its_neighbours_as_when_run_there(tmp_path) -> None:
    """tools/gan/train.py does `from helpers import ...` (tools/gan/helpers.py), as scripts run from
    their own folder do; helpers.py reads collections.Mapping (gone in Python 3.10), which TM401
    repairs: both modules import only after the migration."""
    _project(tmp_path, {
        "tools/gan/helpers.py": "import collections\nMAPPING = collections.Mapping\n",
        "tools/gan/train.py": "from helpers import MAPPING\n",
        "tools/other/helpers.py": "NAME = 'another folder, another helpers.py'\n",
        "tools/other/run.py": "from helpers import NAME\n",
    })  # fmt: skip
    report = _verify_json(tmp_path, "--rerun", "0", "--no-culprits")
    kinds = {t["id"]: t["kind"] for t in report["tests"]}
    assert kinds == {
        "smoke::import::tools.gan.helpers": "fixed",
        "smoke::import::tools.gan.train": "fixed",
        "smoke::import::tools.other.helpers": "unchanged",
        "smoke::import::tools.other.run": "unchanged",  # its own helpers.py, not tools/gan's
    }, report["tests"]
    assert all(t["after"] == "passed" for t in report["tests"])


def test_the_reports_give_a_smoke_run_no_exit_status() -> None:
    from codemods.verify import render
    from codemods.verify.model import SideRun, VerifyReport

    report = VerifyReport("p", message="no regressions", test_command="smoke check")
    report.sides = [SideRun(label, "smoke check (2 checks)", 0, 0.5, True, {"passed": 2}) for label in ("before", "after")]
    text = render.text(report)
    assert "  before:   `smoke check (2 checks)`, 2 passed (0.5 s)" in text, text
    assert "| exit code |" not in render.markdown(report)
    report.sides.insert(0, SideRun("before", "python -m pytest", 1, 0.5, True, {"failed": 1}))
    assert "| exit code | 1 | — | — |" in render.markdown(report)


def test_a_module_that_kills_the_interpreter_costs_only_its_own_check(tmp_path) -> None:
    _project(tmp_path, {
        "a_exits.py": "import os\nos._exit(3)\n",  # no exception to catch: the probe process is gone
        "b_compat.py": "import collections\nMAPPING = collections.Mapping\n",
    })  # fmt: skip
    report = _verify_json(tmp_path, "--rerun", "0", "--no-culprits")
    by_id = {t["id"]: t for t in report["tests"]}
    crashed = by_id["smoke::import::a_exits"]
    assert (crashed["before"], crashed["after"], crashed["kind"]) == ("error", "error", "unchanged")
    assert "crashed the interpreter (exit 3)" in crashed["after_message"]
    assert by_id["smoke::import::b_compat"]["kind"] == "fixed"  # run by a fresh probe after the crash
