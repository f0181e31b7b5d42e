"""Which torch a run targets and saying it (issue 24): `--target-torch`, the config key, the
manifest key, the derivation order (flag, config, verify's interpreter, the repository's pin,
the newest), the summary line and JSON field, the pin-vs-target warning; and the end-to-end proof
on fixtures/projects/torch113_train: `verify --python <torch 1.13.1 venv>` reports no regression,
`run --diff` targets the pin."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from codemods import api
from codemods.batch import ManifestError
from codemods.batch.manifest import load_manifest
from codemods.cli import main
from codemods.config import Config, ConfigError, find_config
from codemods.versions import NEWEST, Target

TRAIN = (
    "import torch\n"
    "from torch.optim.lr_scheduler import _LRScheduler\n\n\n"
    "class Warm(_LRScheduler):\n"
    "    def get_lr(self):\n"
    "        return list(self.base_lrs)\n"
)
HELD_BACK = "the rewrite uses `torch.optim.lr_scheduler.LRScheduler`, which needs torch 2.0; the target is torch 1.13"


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def repo(root: Path, files: dict[str, str]) -> Path:
    (root / ".git").mkdir(parents=True)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


# -- the derivation order ----------------------------------------------------------------------


def test_derivation_order_flag_config_interpreter_pin_newest(tmp_path: Path) -> None:
    root = repo(tmp_path, {"requirements.txt": "torch==1.11.0\n", "train.py": TRAIN})
    config = Config(source=root / "pyproject.toml", target_torch="1.12")
    interpreter = lambda: Target((1, 10), "the torch of /venv/bin/python")  # noqa: E731
    paths = [root]
    assert api.target_for(api.Options(target_torch="1.13"), config, paths, interpreter) == Target((1, 13), "--target-torch")
    assert api.target_for(api.Options(), config, paths, interpreter) == Target((1, 12), f"{root}/pyproject.toml: target-torch")
    assert api.target_for(api.Options(), Config(), paths, interpreter) == interpreter()
    assert api.target_for(api.Options(), Config(), paths, lambda: None) == Target((1, 11), "requirements.txt: torch==1.11.0")
    assert api.target_for(api.Options(), Config(), paths) == Target((1, 11), "requirements.txt: torch==1.11.0")
    assert api.target_for(api.Options(), Config(), [repo(tmp_path / "unpinned", {"train.py": TRAIN})]) == Target()
    assert Target() == Target(NEWEST, "the newest release the tables know")


def test_the_interpreter_is_asked_only_when_nothing_explicit_decides(tmp_path: Path) -> None:
    def interpreter():
        raise AssertionError("asked although --target-torch decides")

    assert api.target_for(api.Options(target_torch="1.9"), Config(), [tmp_path], interpreter).version == (1, 9)
    assert api.target_for(api.Options(), Config(source=tmp_path / "setup.cfg", target_torch="1.9"), [tmp_path], interpreter).version == (1, 9)


@pytest.mark.parametrize(
    "torch, version, source",
    [
        ("1.13.1+cu117", (1, 13), "the torch of /v/bin/python"),
        ("2.13.0+cpu", (2, 13), "the torch of /v/bin/python"),
        ("2.14.0.dev20270101", NEWEST, "the torch of /v/bin/python; 2.13 is the newest the tables know"),
        ("0.4.1", (1, 0), "the torch of /v/bin/python; 1.0 is the oldest target"),
    ],
)
def test_the_interpreter_target(torch: str, version, source: str) -> None:
    assert api.interpreter_target(torch, "/v/bin/python") == Target(version, source)


def test_no_torch_in_the_interpreter_means_no_interpreter_target() -> None:
    assert api.interpreter_target(None, "/v/bin/python") is None
    assert api.interpreter_target("unknown", "/v/bin/python") is None


def test_the_pin_is_looked_for_from_the_config_folder_down_to_the_path(tmp_path: Path) -> None:
    # The config's folder bounds the search even without .git (a copy, an unpacked archive).
    (tmp_path / "pyproject.toml").write_text('[tool.torch-migrate]\nselect = ["TM0"]\n')
    (tmp_path / "requirements.txt").write_text("torch==1.12.1\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(TRAIN)
    target, warning = api.targeting([tmp_path / "src"], api.Options())
    assert target == Target((1, 12), "requirements.txt: torch==1.12.1") and warning is None


# -- the config key ----------------------------------------------------------------------------


def test_config_key_in_pyproject_and_setup_cfg(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torch-migrate]\ntarget-torch = "1.13"\n')
    assert find_config(tmp_path).target_torch == "1.13"
    other = tmp_path / "other"
    other.mkdir()
    (other / "setup.cfg").write_text("[torch-migrate]\ntarget_torch = 1.10.2\n")
    assert find_config(other).target_torch == "1.10"


@pytest.mark.parametrize(
    "value, says",
    [
        ('"banana"', "is not a torch version (expected MAJOR.MINOR, e.g. 1.13)"),
        ('"3.0"', "outside the releases this tool knows (1.0 to 2.13)"),
        ("1.10", 'expected a string such as "1.13"'),  # TOML would read it as 1.1
    ],
)
def test_a_bad_config_value_names_the_file(tmp_path: Path, value: str, says: str) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.torch-migrate]\ntarget-torch = {value}\n")
    with pytest.raises(ConfigError) as raised:
        find_config(tmp_path)
    assert str(tmp_path / "pyproject.toml") in str(raised.value) and "target-torch" in str(raised.value)
    assert says in str(raised.value)
    result = invoke("run", "--diff", str(tmp_path))
    assert result.exit_code == 2 and says in result.output


def test_the_config_key_is_the_target_and_the_summary_names_the_file(tmp_path: Path, monkeypatch) -> None:
    root = repo(tmp_path, {"pyproject.toml": '[tool.torch-migrate]\ntarget-torch = "1.13"\n', "train.py": TRAIN})
    monkeypatch.chdir(root)
    result = invoke("run", "--diff", ".")
    assert "target: torch 1.13 (pyproject.toml: target-torch)" in result.output
    assert HELD_BACK in result.output
    assert "target: torch 2.13 (--target-torch)" in invoke("run", "--diff", "--target-torch", "2.13", ".").output
    assert "target: torch 2.13 (the newest release the tables know)" in invoke("run", "--diff", "--no-config", ".").output


# -- the flag ----------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["run", "verify"])
@pytest.mark.parametrize(
    "value, says",
    [("1.x", "is not a torch version (expected MAJOR.MINOR, e.g. 1.13)"), ("0.4", "outside the releases this tool knows (1.0 to 2.13)")],
)
def test_a_bad_flag_is_a_usage_error_that_says_what_is_accepted(tmp_path: Path, command: str, value: str, says: str) -> None:
    result = invoke(command, str(tmp_path), "--target-torch", value)
    assert result.exit_code == 2
    assert "Invalid value for '--target-torch'" in result.output and says in result.output


def test_the_flag_holds_back_what_the_target_lacks(tmp_path: Path) -> None:
    root = repo(tmp_path, {"train.py": TRAIN})
    held = invoke("run", "--diff", "--target-torch", "1.13.1", str(root))
    assert HELD_BACK in held.output and "target: torch 1.13 (--target-torch)" in held.output
    newest = invoke("run", "--diff", str(root))
    assert "+from torch.optim.lr_scheduler import LRScheduler" in newest.output
    assert "target: torch 2.13 (the newest release the tables know)" in newest.output


# -- the summary, the JSON field and the warning -----------------------------------------------


def test_the_summary_line_sits_above_the_counts(tmp_path: Path) -> None:
    root = repo(tmp_path, {"requirements.txt": "torch==1.13.1\n", "train.py": TRAIN})
    lines = invoke("run", "--diff", str(root)).output.splitlines()
    assert lines[-3] == "target: torch 1.13 (requirements.txt: torch==1.13.1)"
    assert lines[-2].startswith("0 file(s) would change") and lines[-1].startswith("exit 0:")  # all held back


def test_json_report_carries_the_target(tmp_path: Path) -> None:
    root = repo(tmp_path, {"requirements.txt": "torch==1.13.1\n", "train.py": TRAIN})
    data = json.loads(invoke("run", "--diff", "--format", "json", str(root)).output)
    assert data["target"] == {"torch": "1.13", "source": "requirements.txt: torch==1.13.1", "warning": None}
    data = json.loads(invoke("run", "--diff", "--format", "json", "--target-torch", "2.13", str(root)).output)
    assert data["target"] == {
        "torch": "2.13",
        "source": "--target-torch",
        "warning": "requirements.txt pins torch 1.13 but the target is 2.13: the output may not run there (use --target-torch 1.13)",
    }


def test_a_target_newer_than_the_pin_says_so_with_the_fix(tmp_path: Path) -> None:
    root = repo(tmp_path, {"environment.yml": "dependencies:\n  - pytorch=1.12\n", "train.py": TRAIN})
    lines = invoke("run", "--diff", "--target-torch", "2.0", str(root)).output.splitlines()
    warning = "warning: environment.yml pins torch 1.12 but the target is 2.0: the output may not run there (use --target-torch 1.12)"
    assert lines[-4:-2] == ["target: torch 2.0 (--target-torch)", warning]
    # An older target, the pin itself, or no pin: nothing to say.
    for args in (["--target-torch", "1.10"], []):
        assert "warning:" not in invoke("run", "--diff", *args, str(root)).output
    unpinned = repo(tmp_path / "unpinned", {"train.py": TRAIN})
    assert "warning:" not in invoke("run", "--diff", "--target-torch", "2.0", str(unpinned)).output


def test_a_pin_older_than_any_target(tmp_path: Path) -> None:
    root = repo(tmp_path, {"requirements.txt": "torch==0.4.1\n", "train.py": TRAIN})
    report = api.migrate([root], api.Options(mode="diff"))
    assert report.target == Target((1, 0), "requirements.txt: torch==0.4.1; 1.0 is the oldest target")
    assert report.target_warning == (
        "requirements.txt pins torch 0.4 but the target is 1.0: the output may not run there"
        " (torch-migrate targets 1.0 at the oldest)"
    )


def test_the_api_report_has_the_target(tmp_path: Path) -> None:
    root = repo(tmp_path, {"setup.cfg": "[options]\ninstall_requires =\n    torch>=1.8,<2\n", "train.py": TRAIN})
    report = api.migrate([root / "train.py"], api.Options(mode="check"))
    assert report.target == Target((1, 13), "setup.cfg: torch>=1.8,<2") and report.target_warning is None
    assert any(HELD_BACK in f.message for f in report.findings)


# -- the manifest key --------------------------------------------------------------------------


def test_manifest_key_in_defaults_and_per_repository(tmp_path: Path) -> None:
    manifest = tmp_path / "repos.toml"
    manifest.write_text(
        '[defaults]\ntarget-torch = "1.13.1"\n\n[[repo]]\nname = "a"\npath = "a"\n\n'
        '[[repo]]\nname = "b"\npath = "b"\ntarget-torch = "2.0"\n\n[[repo]]\nname = "c"\npath = "c"\n'
    )
    entries = {e.name: e for e in load_manifest(manifest)}
    assert (entries["a"].target_torch, entries["b"].target_torch, entries["c"].target_torch) == ("1.13", "2.0", "1.13")
    manifest.write_text('[[repo]]\nname = "a"\npath = "a"\n')
    assert load_manifest(manifest)[0].target_torch is None


@pytest.mark.parametrize("value, says", [('"2.99"', "outside the releases"), ("1.13", "wrong type")])
def test_a_bad_manifest_value_names_the_entry(tmp_path: Path, value: str, says: str) -> None:
    manifest = tmp_path / "repos.toml"
    manifest.write_text(f'[[repo]]\nname = "a"\npath = "a"\ntarget-torch = {value}\n')
    with pytest.raises(ManifestError, match=rf"\[\[repo\]\] #1: `target-torch`.*{says}"):
        load_manifest(manifest)


def test_the_fingerprint_of_an_entry_without_the_key_is_unchanged(tmp_path: Path) -> None:
    # --resume keeps the work of a state file written before the key existed.
    import dataclasses
    import hashlib

    manifest = tmp_path / "repos.toml"
    manifest.write_text('[[repo]]\nname = "a"\npath = "a"\n')
    plain = load_manifest(manifest)[0]
    before = {k: v for k, v in dataclasses.asdict(plain).items() if k != "target_torch"}
    assert plain.fingerprint() == hashlib.sha256(json.dumps(before, sort_keys=True).encode()).hexdigest()[:16]
    manifest.write_text('[[repo]]\nname = "a"\npath = "a"\ntarget-torch = "1.13"\n')
    assert load_manifest(manifest)[0].fingerprint() != plain.fingerprint()


def _git_repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    for rel, text in files.items():
        (root / rel).write_text(text)
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "legacy"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=env)
    return root


def test_batch_passes_the_key_to_the_migration_and_reports_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GIT_AUTHOR_NAME", "t")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "t@t")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "t")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "t@t")
    pinned = _git_repo(tmp_path / "src" / "pinned", {"requirements.txt": "torch==1.13.1\n", "train.py": TRAIN})
    forced = _git_repo(tmp_path / "src" / "forced", {"requirements.txt": "torch==1.13.1\n", "train.py": TRAIN})
    manifest = tmp_path / "repos.toml"
    manifest.write_text(
        f'[defaults]\nbranch = "tm"\n\n[[repo]]\nname = "pinned"\npath = "{pinned}"\n\n'
        f'[[repo]]\nname = "forced"\npath = "{forced}"\ntarget-torch = "2.13"\n'
    )
    work = tmp_path / "work"
    result = invoke("batch", str(manifest), "--workdir", str(work), "--no-verify", "--format", "json")
    rows = {r["name"]: r for r in json.loads(result.output)["repos"]}
    assert rows["pinned"]["target"] == "torch 1.13 (requirements.txt: torch==1.13.1)"
    assert rows["pinned"]["target_warning"] is None and rows["pinned"]["status"] == "unchanged"  # all held back
    assert rows["forced"]["target"] == "torch 2.13 (--target-torch)" and rows["forced"]["status"] == "migrated"
    assert rows["forced"]["target_warning"].startswith("requirements.txt pins torch 1.13 but the target is 2.13")
    pinned_md = (work / "reports" / "pinned" / "REPORT.md").read_text()
    forced_md = (work / "reports" / "forced" / "REPORT.md").read_text()
    assert "**Target:** torch 1.13 (requirements.txt: torch==1.13.1)" in pinned_md and "Warning" not in pinned_md
    assert "**Warning:** requirements.txt pins torch 1.13 but the target is 2.13" in forced_md


def test_batch_passes_the_key_to_verify(tmp_path: Path, monkeypatch) -> None:
    from codemods.batch import runner
    from codemods.batch.manifest import RepoEntry
    from codemods.results import Report
    from codemods.verify import VerifyReport

    seen = {}

    def fake_verify(path, options):
        seen["options"] = options
        return VerifyReport(str(path), status="nothing-to-migrate", migration=Report(), target=Target((1, 12), "--target-torch"))

    monkeypatch.setattr("codemods.verify.verify", fake_verify)
    entry = RepoEntry(name="r", source=str(tmp_path), is_path=True, target_torch="1.12")
    result = runner.RepoResult(name="r", source=str(tmp_path))
    _, _, checked = runner._verify_and_apply(tmp_path, entry, runner.BatchSettings(str(tmp_path)), result)
    assert seen["options"].target_torch == "1.12" and result.target == "torch 1.12 (--target-torch)"


# -- end to end on torch 1.13.1 ----------------------------------------------------------------


def test_run_diff_on_the_pinned_project_targets_its_pin(project) -> None:
    root = project("torch113_train")
    result = invoke("run", "--diff", str(root))
    assert "target: torch 1.13 (requirements.txt: torch==1.13.1)" in result.output
    added = [line for line in result.output.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert added and not any("LRScheduler" in line or "GradScaler" in line for line in added)
    assert f"TM008 [safe] not rewritten: {HELD_BACK}" in result.output
    assert "TM004 [safe] not rewritten: the rewrite uses `torch.amp.GradScaler`, which needs torch 2.3; the target is torch 1.13" in result.output
    assert '+        with torch.amp.autocast("cuda", enabled=False):' in result.output  # both torches have it


def test_verify_on_the_old_interpreter_targets_its_torch_and_reports_no_regression(old_torch_python: str, project) -> None:
    root = project("torch113_train")
    result = invoke("verify", str(root), "--python", old_torch_python, "--device", "cpu", "--format", "json")
    data = json.loads(result.output)
    assert data["status"] == "ok" and data["summary"]["regression"] == 0, result.output
    assert data["device"]["torch"].startswith("1.13.1")
    assert data["target"] == {"torch": "1.13", "source": f"the torch of {data['device']['python']}", "warning": None}
    assert data["migration"]["findings"] == 2  # LRScheduler and GradScaler, held back
    assert set(data["migration"]["rewrites"]) == {"TM002", "TM004"}
    sides = {s["label"]: s["outcomes"] for s in data["sides"]}
    assert sides["before"] == sides["after"] == {"passed": 3}
    assert result.exit_code == 0


def test_verify_for_the_newest_torch_on_the_old_interpreter_regresses_and_warns(old_torch_python: str, project) -> None:
    # What the issue saw: the default target broke a project on its own interpreter.
    root = project("torch113_train")
    options = ["--python", old_torch_python, "--device", "cpu", "--no-culprits", "--rerun", "0", "--target-torch", "2.13"]
    text = invoke("verify", str(root), *options)
    assert text.exit_code == 1
    assert "  for:      torch 2.13 (--target-torch)" in text.output
    assert "  warning:  requirements.txt pins torch 1.13 but the target is 2.13" in text.output
    assert "cannot import name 'LRScheduler'" in text.output


def test_verify_reports_name_the_target(tmp_path: Path) -> None:
    from codemods.verify import render
    from codemods.verify.model import VerifyReport

    report = VerifyReport("p", message="no regressions", target=Target((1, 13), "requirements.txt: torch==1.13.1"),
                          target_warning="requirements.txt pins torch 1.12 but ...")  # fmt: skip
    assert "  for:      torch 1.13 (requirements.txt: torch==1.13.1)" in render.text(report)
    assert "  warning:  requirements.txt pins torch 1.12 but ..." in render.text(report)
    markdown = render.markdown(report)
    assert "Target: **torch 1.13** (requirements.txt: torch==1.13.1)" in markdown and "⚠️ requirements.txt pins" in markdown
    assert report.to_dict()["target"]["torch"] == "1.13"


def test_run_verify_writes_the_migration_it_verified_for_the_interpreters_torch(old_torch_python: str, project) -> None:
    root = project("torch113_train")
    result = invoke("run", "--verify", str(root), "--python", old_torch_python, "--device", "cpu", "--format", "json")
    data = json.loads(result.output)
    assert data["written"] and data["exit_code"] == 0, result.output
    assert data["verify"]["target"]["torch"] == "1.13" and data["migration"]["target"]["torch"] == "1.13"
    written = (root / "trainer.py").read_text()
    assert "from torch.optim.lr_scheduler import _LRScheduler" in written and "Variable" not in written
    assert "torch.cuda.amp.GradScaler(enabled=False)" in written
    done = subprocess.run([old_torch_python, "-m", "pytest", "-q"], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:]


def test_the_warning_reaches_the_terminal_when_the_report_goes_to_a_file(tmp_path: Path) -> None:
    root = repo(tmp_path / "r", {"requirements.txt": "torch==1.13.1\n", "train.py": TRAIN})
    report = tmp_path / "report.txt"
    result = CliRunner().invoke(main, ["run", "--diff", "--target-torch", "2.13", "-o", str(report), str(root)])
    warning = "warning: requirements.txt pins torch 1.13 but the target is 2.13"
    assert warning in result.stderr and warning in report.read_text()
