"""Command-line conventions users bring from ruff and TorchFix (#41 item 1): `-` for stdin with
`--stdin-filename`, `--exit-zero`, `--statistics`, `--quiet`/`--verbose`, `--config FILE`, and
repeated list options that add up."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from codemods.cli import main

LEGACY = "import torch.nn as nn\nc = nn.MSELoss(size_average=False)\nd = nn.L1Loss(size_average=flag)\n"
MIGRATED = 'import torch.nn as nn\nc = nn.MSELoss(reduction="sum")\nd = nn.L1Loss(size_average=flag)\n'
GER = "import torch\nz = torch.ger(a, b)\n"


def invoke(*args: str, input: bytes | str | None = None):
    return CliRunner().invoke(main, ["run", *args], input=input, catch_exceptions=False)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "train.py").write_text(LEGACY)
    (tmp_path / "other.py").write_text(GER)
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- `-`: stdin -----------------------------------------------------------------------------


def test_dash_prints_the_migrated_source_and_the_report_on_stderr(project: Path) -> None:
    result = invoke("-", input=LEGACY)
    assert result.exit_code == 0
    assert result.stdout == MIGRATED
    assert "-:3:5: TM001" in result.stderr and "cannot read" not in result.stderr


def test_dash_over_the_size_limit_is_refused_as_a_file_is_and_comes_back_unchanged(project: Path) -> None:
    big = LEGACY + "x = 1\n" * 400_000  # 2.4 MB: past the 2,000,000-byte limit
    result = invoke("-", input=big)
    assert result.exit_code == 2
    assert result.stdout == big
    assert "-: larger than the 2,000,000-byte limit (2,400,090 bytes); skipped" in result.stderr


def test_dash_with_diff_prints_the_diff_under_the_stdin_filename(project: Path) -> None:
    result = invoke("-", "--diff", "--stdin-filename", "src/train.py", input=LEGACY)
    assert result.exit_code == 1
    assert result.stdout.startswith("--- a/src/train.py\n+++ b/src/train.py\n")
    assert '+c = nn.MSELoss(reduction="sum")' in result.stdout
    assert "src/train.py:3:5: TM001" in result.stdout
    assert invoke("-", "--check", input=MIGRATED.replace("d = nn.L1Loss(size_average=flag)\n", "")).exit_code == 0


def test_dash_keeps_the_bom_and_echoes_what_it_cannot_process(project: Path) -> None:
    bom = b"\xef\xbb\xbf" + LEGACY.encode()
    assert invoke("-", input=bom).stdout_bytes == b"\xef\xbb\xbf" + MIGRATED.encode()
    broken = b"import torch.nn as nn\nprint 'size_average'\nnn.MSELoss(size_average=False)\n"
    result = invoke("-", input=broken)
    assert result.exit_code == 2 and result.stdout_bytes == broken  # an editor's buffer is never emptied
    assert "-:2: syntax error" in result.stderr


def test_stdin_filename_picks_the_config_its_per_file_ignores_and_excludes(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.torch-migrate]\nexclude = ["vendor"]\nper-file-ignores = { "tests/*" = ["TM001"] }\n'
    )
    ignored = invoke("-", "--diff", "--stdin-filename", "tests/test_train.py", input=LEGACY)
    assert ignored.exit_code == 0 and "+c = " not in ignored.stdout
    excluded = invoke("-", "--stdin-filename", "vendor/train.py", input=LEGACY)
    assert excluded.exit_code == 0 and excluded.stdout == LEGACY
    assert invoke("-", "--stdin-filename", "src/train.py", input=LEGACY).stdout == MIGRATED


def test_dash_is_the_only_path_and_stdin_filename_needs_it(project: Path) -> None:
    mixed = invoke("-", "train.py", input=LEGACY)
    assert mixed.exit_code == 2 and "reads one file from stdin" in mixed.stderr
    unnamed = invoke("train.py", "--stdin-filename", "x.py")
    assert unnamed.exit_code == 2 and "give `-` as the PATH" in unnamed.stderr


# -- exit codes, statistics, verbosity --------------------------------------------------------


def test_exit_zero_keeps_only_the_error_bit(project: Path) -> None:
    assert invoke(".", "--check").exit_code == 1
    passed = invoke(".", "--check", "--exit-zero", "--fail-on-findings")
    assert passed.exit_code == 0
    assert passed.stdout.splitlines()[-1].startswith("exit 0: 2 file(s) would change (--exit-zero")
    (project / "broken.py").write_text("print 'x'\nimport torch\ntorch.ger(a, b)\n")
    assert invoke(".", "--check", "--exit-zero").exit_code == 2
    assert invoke("-", "--diff", "--exit-zero", input=LEGACY).exit_code == 0


def test_statistics_print_one_line_per_code(project: Path) -> None:
    result = invoke(".", "--check", "--statistics")
    lines = [line.split() for line in result.stdout.splitlines()[:2]]
    assert [line[:3] for line in lines] == [["2", "TM001", "loss-reduction"], ["1", "TM006", "deprecated-api"]]
    assert "TM001 [safe]" not in result.stdout  # the counts replace the findings' lines
    rows = json.loads(invoke(".", "--check", "--statistics", "--format", "json").stdout)
    assert rows[0] == {"code": "TM001", "name": "loss-reduction", "count": 2, "rewrites": 1, "findings": 1}
    assert invoke(".", "--statistics", "--format", "sarif").exit_code == 2


def test_quiet_prints_only_diffs_and_findings(project: Path) -> None:
    loud = invoke(".", "--diff")
    quiet = invoke(".", "--diff", "--quiet")
    assert quiet.exit_code == loud.exit_code == 1
    assert "+c = " in quiet.stdout and "TM001 [safe]" in quiet.stdout
    assert "exit 1" in loud.stdout and "exit 1" not in quiet.stdout and "Would change" not in quiet.stdout
    assert invoke(".", "-q", "-v").exit_code == 2


def test_verbose_says_what_happened_to_each_file(project: Path) -> None:
    (project / "plain.py").write_text("x = 1\n")
    result = invoke(".", "--check", "--verbose")
    assert "train.py: changed: TM001 (1); 1 finding(s)" in result.stderr
    assert "plain.py: skipped (no selected codemod's words in it)" in result.stderr
    assert "3 file(s) in " in result.stderr


# -- --config and lists that add up ------------------------------------------------------------


@pytest.mark.parametrize(
    "name, text",
    [
        ("elsewhere/pyproject.toml", '[tool.torch-migrate]\nignore = ["TM001"]\n'),
        ("elsewhere/setup.cfg", "[torch-migrate]\nignore = TM001\n"),
        ("elsewhere/torch-migrate.toml", 'ignore = ["TM001"]\n'),
    ],
)
def test_config_file_replaces_discovery(project: Path, name: str, text: str) -> None:
    (project / "pyproject.toml").write_text('[tool.torch-migrate]\nignore = ["TM006"]\n')  # found, but not used
    config = project / name
    config.parent.mkdir()
    config.write_text(text)
    result = invoke(".", "--check", "--config", str(config))
    assert "TM006 (1)" in result.stdout and "TM001 (1)" not in result.stdout
    assert "c = nn.MSELoss(size_average=False)" in invoke("-", "--config", str(config), input=LEGACY).stdout


def test_config_file_errors(project: Path) -> None:
    (project / "empty.toml").write_text("[tool.black]\n")
    (project / "pyproject.toml").write_text("[tool.black]\n")
    no_table = invoke(".", "--config", "pyproject.toml")
    assert no_table.exit_code == 2 and "pyproject.toml: no [tool.torch-migrate] table" in no_table.stderr
    unknown = invoke(".", "--config", "empty.toml")  # a TOML of settings only: `tool` is none of them
    assert unknown.exit_code == 2 and "unknown option(s) tool" in unknown.stderr
    assert invoke(".", "--config", "nowhere.toml").exit_code == 2
    both = invoke(".", "--config", "empty.toml", "--no-config")
    assert both.exit_code == 2 and "--no-config" in both.stderr


def test_repeated_select_ignore_and_exclude_add_up(project: Path) -> None:
    both = invoke(".", "--check", "--select", "TM001", "--select", "TM006")
    assert "TM001 (1)" in both.stdout and "TM006 (1)" in both.stdout
    assert "TM006 (1)" in invoke(".", "--check", "--select", "TM001,TM006").stdout
    neither = invoke(".", "--check", "--ignore", "TM001", "--ignore", "TM006")
    assert neither.exit_code == 0 and "Would change" not in neither.stdout
    (project / "vendor").mkdir()
    (project / "vendor" / "v.py").write_text(GER)
    (project / "gen").mkdir()
    (project / "gen" / "g.py").write_text(GER)
    listed = invoke(".", "--check", "--exclude", "vendor,gen", "--exclude", "other.py").stdout
    assert "train.py" in listed and "v.py" not in listed and "g.py" not in listed and "other.py" not in listed
