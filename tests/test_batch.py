"""Batch upgrades end to end, on three local git repositories made here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from codemods.batch import ManifestError, run_batch
from codemods.batch.manifest import load_manifest
from codemods.cli import main
from tests.conftest import ROOT

pytest.importorskip("torch")

LOSS = "import torch.nn as nn\n\n\ndef criterion():\n    return nn.MSELoss(size_average=False)\n"
PYTEST_INI = "[pytest]\nfilterwarnings =\n    error::UserWarning\n"
FIXABLE_TEST = (
    "import torch\nfrom lib import criterion\n\n\n"
    "def test_sum():\n    assert criterion()(torch.ones(3), torch.zeros(3)).item() == 3.0\n"
)
PINNING_TEST = (
    "import inspect\nimport lib\n\n\n"
    "def test_keeps_the_paper_code_verbatim():\n    assert 'size_average=False' in inspect.getsource(lib)\n"
)


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True, env=env).stdout


def _repo(root: Path, name: str, files: dict[str, str]) -> Path:
    repo = root / name
    repo.mkdir()
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "legacy")
    return repo


@pytest.fixture(autouse=True)
def global_identity(tmp_path: Path, monkeypatch) -> Path:
    """A known global git config (and no system one, no identity from the environment): the migration
    commits are authored by the user's identity, so the tests must not depend on this machine's."""
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = Global User\n\temail = global@example.org\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"):
        monkeypatch.delenv(name, raising=False)
    return config


@pytest.fixture
def repos(tmp_path: Path) -> dict[str, Path]:
    src = tmp_path / "src"
    src.mkdir()
    return {
        "fixable": _repo(src, "fixable", {"lib.py": LOSS, "tests/test_lib.py": FIXABLE_TEST, "pytest.ini": PYTEST_INI}),
        "breaks": _repo(src, "breaks", {"lib.py": LOSS, "tests/test_lib.py": PINNING_TEST}),
        "mixed": _repo(src, "mixed", {"lib.py": LOSS, "py2.py": "print 'size_average'\n", "tests/test_lib.py": FIXABLE_TEST}),
    }


def _manifest(tmp_path: Path, repos: dict[str, Path], extra: str = "") -> Path:
    body = '[defaults]\nbranch = "tm/upgrade"\ntests = "python -m pytest -q -p no:cacheprovider"\ntimeout = 300\n' + extra
    for name, path in repos.items():
        body += f'\n[[repo]]\nname = "{name}"\npath = "{path}"\n'
    manifest = tmp_path / "repos.toml"
    manifest.write_text(body)
    return manifest


def _status(repo: Path) -> str:
    return _git(repo, "status", "--porcelain")


def test_batch_commits_fixes_refuses_regressions_and_reports_bad_files(tmp_path: Path, repos) -> None:
    manifest = _manifest(tmp_path, repos)
    result = CliRunner().invoke(main, ["batch", str(manifest), "--workdir", str(tmp_path / "work"), "--format", "json"])
    data = json.loads(result.output)
    by_name = {r["name"]: r for r in data["repos"]}
    assert result.exit_code == 1

    fixable = by_name["fixable"]
    assert fixable["status"] == "migrated" and fixable["commit"]
    assert fixable["tests_before"].get("failed", 0) + fixable["tests_before"].get("error", 0) >= 1
    assert fixable["tests_after"] == {"passed": 1}
    # The branch went back into the user's repository; its checkout and working tree are untouched.
    assert _git(repos["fixable"], "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert _status(repos["fixable"]) == ""
    assert "size_average" in (repos["fixable"] / "lib.py").read_text()
    migrated = _git(repos["fixable"], "show", "tm/upgrade:lib.py")
    assert 'reduction="sum"' in migrated
    message = _git(repos["fixable"], "log", "-1", "--format=%B", "tm/upgrade")
    assert "TM001 loss-reduction: 1 rewrite(s)" in message and "Verification:" in message
    report = (tmp_path / "work" / "reports" / "fixable" / "REPORT.md").read_text()
    assert "## Codemods applied" in report and "| TM001 |" in report and "## Verification" in report
    assert "Device: torch " in report and "| tests | " in report
    assert json.loads((tmp_path / "work" / "reports" / "fixable" / "report.json").read_text())["repo"]["status"] == "migrated"

    breaks = by_name["breaks"]
    assert breaks["status"] == "regressions" and breaks["commit"] is None
    assert any("test_keeps_the_paper_code_verbatim" in t for t in breaks["regressions"])
    assert "tm/upgrade" not in _git(repos["breaks"], "branch", "--list")

    mixed = by_name["mixed"]
    assert mixed["status"] == "migrated" and mixed["commit"]
    assert any("py2.py" in p and "syntax error" in p for p in mixed["problems"])
    assert _git(repos["mixed"], "show", "tm/upgrade:py2.py") == "print 'size_average'\n"


def test_resume_reruns_nothing_that_succeeded(tmp_path: Path, repos) -> None:
    manifest = _manifest(tmp_path, {"fixable": repos["fixable"]})
    work = tmp_path / "work"
    first = run_batch(manifest, work, verify=False)
    assert first.results[0].status == "migrated" and first.exit_code == 0
    commit = first.results[0].commit
    again = run_batch(manifest, work, verify=False, resume=True)
    assert again.resumed == {"fixable"} and again.results[0].commit == commit
    # A changed entry is not "the same work": it runs again.
    manifest.write_text(manifest.read_text().replace('branch = "tm/upgrade"', 'branch = "tm/other"'))
    changed = run_batch(manifest, work, verify=False, resume=True)
    assert changed.resumed == set() and changed.results[0].branch == "tm/other"


def test_one_failing_repository_never_stops_the_others(tmp_path: Path, repos) -> None:
    manifest = _manifest(tmp_path, {"fixable": repos["fixable"]})
    manifest.write_text(manifest.read_text() + '\n[[repo]]\nname = "gone"\nurl = "file:///nonexistent/repo.git"\n')
    outcome = run_batch(manifest, tmp_path / "work", verify=False, jobs=2)
    by_name = {r.name: r for r in outcome.results}
    assert by_name["gone"].status == "failed" and "clone" in by_name["gone"].message
    assert by_name["fixable"].status == "migrated"
    assert outcome.exit_code == 1


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('[[repo]]\npath = "x"\nurl = "y"\n', "exactly one of `path` or `url`"),
        ('[[repo]]\nurl = "file:///x"\nunsafe = "yes"\n', "[[repo]] #1: `unsafe` must be true or false"),
        ('[defaults]\nbranchh = "x"\n[[repo]]\nurl = "file:///x"\n', "unknown field(s) 'branchh'"),
        ('[[repo]]\nurl = "file:///x"\n[[repo]]\nurl = "file:///y"\nname = "x"\n', "used twice"),
        ('[defaults]\n', "no [[repo]] entries"),
    ],
)
def test_bad_manifest_is_one_clear_error(tmp_path: Path, body: str, message: str) -> None:
    manifest = tmp_path / "m.toml"
    manifest.write_text(body)
    with pytest.raises(ManifestError) as info:
        load_manifest(manifest)
    assert message in str(info.value)
    result = CliRunner().invoke(main, ["batch", str(manifest), "--workdir", str(tmp_path / "w")])
    assert result.exit_code == 2 and message in result.output


def test_dask_cluster_gives_the_same_summary_as_the_local_pool(tmp_path: Path, repos, monkeypatch) -> None:
    distributed = pytest.importorskip("distributed")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    subset = {k: repos[k] for k in ("fixable", "mixed")}
    manifest = _manifest(tmp_path, subset)
    local = run_batch(manifest, tmp_path / "local", verify=False, jobs=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        remote = run_batch(manifest, tmp_path / "dask", verify=False, dask_scheduler=cluster.scheduler_address)

    def summary(outcome):
        return [(r.name, r.status, r.files_changed, r.rewrites, r.findings, r.problems) for r in outcome.results]

    assert summary(remote) == summary(local)
    assert [r.status for r in remote.results] == ["migrated", "migrated"]
