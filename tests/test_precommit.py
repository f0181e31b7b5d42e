"""The pre-commit hooks through a real `pre-commit run`, as a user installs them.

This checkout (its working tree, uncommitted edits included) is committed to a temporary git
repository; a temporary user repository points `.pre-commit-config.yaml` at it with the README's
example, and pre-commit installs the hook in its own environment (libcst, click and rich from the
package index), once per test session in a shared PRE_COMMIT_HOME.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

yaml = pytest.importorskip("yaml")
pytest.importorskip("pre_commit")
HOOKS = {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
LEGACY = "import torch.nn as nn\nc = nn.MSELoss(size_average=False)\n"
FINDING_ONLY = "import torch.nn as nn\nd = nn.L1Loss(size_average=flag)\n"  # undecidable: a finding, no rewrite
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
}  # fmt: skip


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def _readme_config() -> dict:
    """The README's example `.pre-commit-config.yaml`."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"### pre-commit\n\n```yaml\n(.*?)```", readme, re.S)
    assert block, "README has no pre-commit example"
    return yaml.safe_load(block[1])


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory) -> tuple[Path, str]:
    """A git repository holding this checkout as it is now, and its head commit."""
    repo = tmp_path_factory.mktemp("hook-repo")
    shutil.copytree(ROOT / "codemods", repo / "codemods", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("setup.cfg", "pyproject.toml", "README.md", ".pre-commit-hooks.yaml"):
        shutil.copy2(ROOT / name, repo / name)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "hook")
    return repo, _git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")  # shared: the hook's environment is built once


def _pre_commit(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NO_COLOR", "FORCE_COLOR")}
    env.update(GIT_ENV, PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never")
    command = [sys.executable, "-m", "pre_commit", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def _user_repo(root: Path, hook: Path, rev: str, hooks: list[dict], files: dict[str, str]) -> Path:
    """A git repository with `files` staged and the README's config pointed at `hook`."""
    config = _readme_config()
    config["repos"][0].update(repo=str(hook), rev=rev, hooks=hooks)
    files = {"pyproject.toml": '[tool.torch-migrate]\nexclude = ["third_party"]\n', **files}
    files[".pre-commit-config.yaml"] = yaml.safe_dump(config)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    _git(root, "init", "-q")
    _git(root, "add", ".")
    return root


def test_hooks_declare_python_and_notebooks() -> None:
    assert set(HOOKS) == {"torch-migrate", "torch-migrate-check"}
    for hook in HOOKS.values():
        assert hook["language"] == "python" and set(hook["types_or"]) == {"python", "jupyter"}


def test_readme_example_pinned_by_autoupdate_rewrites_staged_files_but_not_excluded_ones(
    tmp_path: Path, hook_repo, pre_commit_home: Path
) -> None:
    hook, head = hook_repo
    readme = _readme_config()["repos"][0]
    files = {"train.py": LEGACY, "third_party/vendored.py": LEGACY}
    repo = _user_repo(tmp_path, hook, readme["rev"], readme["hooks"], files)

    def commit_hook_rewrites_train_only() -> None:
        ran = _pre_commit(repo, pre_commit_home, "run")  # pre-commit names both staged files
        output = ran.stdout + ran.stderr
        assert ran.returncode == 1, output
        assert "files were modified by this hook" in output
        assert 'reduction="sum"' in (repo / "train.py").read_text()
        assert (repo / "third_party" / "vendored.py").read_text() == LEGACY
        assert "Changed:\n  train.py  TM001 (1)\n" in output and "1 file(s) changed; 1 checked" in output

    commit_hook_rewrites_train_only()  # with the README's own `rev`
    (repo / "train.py").write_text(LEGACY)
    # The documented pin: the README's branch becomes the commit it names (no tag in the hook repo).
    updated = _pre_commit(repo, pre_commit_home, "autoupdate", "--freeze")
    assert updated.returncode == 0, updated.stdout + updated.stderr
    pinned = yaml.safe_load((repo / ".pre-commit-config.yaml").read_text())["repos"][0]["rev"]
    assert pinned == head
    _git(repo, "add", ".")
    commit_hook_rewrites_train_only()


def test_check_hook_fails_on_pending_rewrites_and_on_findings_only_when_asked(
    tmp_path: Path, hook_repo, pre_commit_home: Path
) -> None:
    hook, head = hook_repo
    check = [{"id": "torch-migrate-check"}]
    strict = [{"id": "torch-migrate-check", "args": ["--fail-on-findings"]}]

    quiet = _user_repo(tmp_path / "findings", hook, head, check, {"model.py": FINDING_ONLY})
    passed = _pre_commit(quiet, pre_commit_home, "run", "--verbose")
    output = passed.stdout + passed.stderr
    assert passed.returncode == 0, output
    assert "model.py:2:5: TM001 [safe]" in output  # one line per finding, 1-based column
    assert "exit 0: nothing would change; 1 open finding(s) fail only with --fail-on-findings" in output

    loud = _user_repo(tmp_path / "strict", hook, head, strict, {"model.py": FINDING_ONLY})
    failed = _pre_commit(loud, pre_commit_home, "run")
    assert failed.returncode == 1
    assert "exit 1: 1 open finding(s) (--fail-on-findings)" in failed.stdout

    pending = _user_repo(tmp_path / "pending", hook, head, check, {"model.py": FINDING_ONLY, "train.py": LEGACY})
    failed = _pre_commit(pending, pre_commit_home, "run")
    assert failed.returncode == 1
    assert "Would change:\n  train.py  TM001 (1)\n" in failed.stdout
    assert "exit 1: 1 file(s) would change (pending rewrites fail --check)" in failed.stdout
    assert (pending / "train.py").read_text() == LEGACY
