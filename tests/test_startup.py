"""Commands that parse nothing import neither libcst nor a codemod (issue 18: pre-commit pays the
start-up on every commit). Each command runs in a fresh interpreter, which then reports what it
imported; how long that takes is measured by scripts/bench.py, not here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codemods import registry
from tests.conftest import ROOT

# Runs the CLI in this fresh process and prints the heavy modules it imported.
PROBE = """
import json, sys
from codemods.cli import main
try:
    main(sys.argv[1:], prog_name="torch-migrate")
except SystemExit:
    pass
heavy = sorted(m for m in sys.modules if m.split(".")[0] == "libcst" or m.startswith("codemods.transforms."))
print("\\nIMPORTED " + json.dumps(heavy))
"""


def _imported(*args: str, cwd=ROOT) -> list[str]:
    env = {**os.environ, "TORCH_MIGRATE_CACHE_DIR": str(Path(cwd) / "cache")}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    marker = [line for line in proc.stdout.splitlines() if line.startswith("IMPORTED ")]
    assert marker, proc.stdout + proc.stderr
    return json.loads(marker[-1][len("IMPORTED ") :])


@pytest.fixture
def project(tmp_path):
    (tmp_path / "clean.py").write_text("import torch\n\n\ndef f(x):\n    return torch.relu(x)\n")
    # trigger words without a site: the AST gates decline it (`x.float()` is no `np.float`)
    (tmp_path / "gated.py").write_text("import numpy as np\nimport torch.nn.functional as F\ny = F.softmax(x, dim=1).float()\n")
    (tmp_path / "legacy.py").write_text("import torch.nn as nn\nloss = nn.MSELoss(size_average=False)\n")
    (tmp_path / "empty").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    "args",
    [
        ("list",),
        ("list", "--format", "json"),
        ("explain", "TM104"),
        ("explain", "cuda-to-device"),
        ("run", "--check", "clean.py"),
        ("run", "--diff", "clean.py", "gated.py"),
        ("run", "--check", "empty"),
    ],
    ids=" ".join,
)
def test_commands_that_parse_nothing_import_no_libcst(project, args) -> None:
    assert _imported(*args, cwd=project) == []


def test_a_file_that_needs_the_parse_imports_libcst_and_only_the_codemods_that_run(project) -> None:
    imported = _imported("run", "--check", "--no-cache", "legacy.py", cwd=project)
    assert "libcst" in imported
    transforms = {m.rsplit(".", 1)[1] for m in imported if m.startswith("codemods.transforms.")}
    assert "loss_reduction" in transforms and "dataparallel_to_ddp" not in transforms


def test_the_registry_points_at_each_codemod_and_reads_its_docs_unimported() -> None:
    for spec in registry.all_specs():
        fresh = registry.Spec(spec.code, spec.name, spec.target, spec.safety, spec.triggers, stage=spec.stage)
        doc = fresh.doc  # from the module's ast: nothing imported for it
        assert "codemod" not in fresh.__dict__
        assert spec.codemod.CODE == spec.code
        assert doc == spec.codemod.__doc__, spec.code


def test_a_spec_given_a_class_reads_its_summary_from_it() -> None:
    class Given(registry.get("TM001").codemod):
        DESCRIPTION = "a codemod made in place (tests/faults.py makes one)"

    given = registry.Spec("TM090", "given", Given, registry.Safety.SAFE, ("x",))
    assert given.summary == Given.DESCRIPTION and given.codemod is Given
    assert registry.Spec("TM090", "given", Given, registry.Safety.SAFE, ("x",), summary="own").summary == "own"


def test_a_run_that_parses_imports_neither_libcst_codemod_nor_matchers(tmp_path) -> None:
    """Every codemod, on every fixture input (import edits included), runs on libcst's nodes and
    visitors alone: `libcst.codemod` and `libcst.matchers` cost ~0.2 s of a small run (issue 18)."""
    import shutil

    for source in (ROOT / "fixtures").glob("TM*/*.in.py"):
        target = tmp_path / source.parent.name
        target.mkdir(exist_ok=True)
        shutil.copy(source, target / source.name)
    imported = _imported("run", "--diff", "--no-cache", "--no-config", "--select", "TM", "-j", "1", ".", cwd=tmp_path)
    transforms = {m.rsplit(".", 1)[1] for m in imported if m.startswith("codemods.transforms.")}
    assert {"state_dict_prefix", "variable_removal", "dataparallel_to_ddp", "torch_six"} <= transforms
    assert not [m for m in imported if m.startswith(("libcst.codemod", "libcst.matchers"))]
