"""batch writes the verified migration itself (digest-checked), never a second migration."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from codemods.batch import runner
from codemods.batch.manifest import RepoEntry
from codemods.results import FileResult, Report, Status
from codemods.verify import VerifyOptions, VerifyReport, apply_verified

LEGACY = "import torch.nn as nn\n\n\ndef criterion():\n    return nn.MSELoss(size_average=False)\n"
# Not what the engine would make of LEGACY: only a write of the verified copy's bytes puts it there.
VERIFIED = "import torch.nn as nn\n\n\ndef criterion():\n    return nn.MSELoss(reduction='sum')  # as tested\n"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True, env=env).stdout


@pytest.fixture
def source(tmp_path: Path, monkeypatch) -> Path:
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = Global User\n\temail = global@example.org\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    repo = tmp_path / "src" / "lossy"
    repo.mkdir(parents=True)
    (repo / "lib.py").write_text(LEGACY)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "legacy")
    return repo


def _verified(path, baseline: str = LEGACY) -> VerifyReport:
    migration = Report(files=[FileResult("lib.py", Status.CHANGED, rewrites={"TM001": 1})], mode="write")
    return VerifyReport(
        str(path), status="ok", message="no regressions", migration=migration,
        baseline={"lib.py": _sha(baseline)}, verified={"lib.py": _sha(VERIFIED)},
        verified_files={"lib.py": VERIFIED.encode()},
    )  # fmt: skip


def _no_second_migration(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("batch migrated a second time")

    monkeypatch.setattr("codemods.api.migrate", refuse)
    monkeypatch.setattr("codemods.verify.migration.migrate_tree", refuse)


def _run(source: Path, tmp_path: Path) -> runner.RepoResult:
    entry = RepoEntry(name="lossy", source=str(source), is_path=True, branch="tm/upgrade")
    return runner.process_repo(entry, runner.BatchSettings(str(tmp_path / "work")))


def test_batch_commits_the_verified_copy_byte_for_byte(source: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("codemods.verify.verify", lambda path, options: _verified(path))
    _no_second_migration(monkeypatch)
    result = _run(source, tmp_path)
    assert result.status == "migrated", result.message
    assert result.files_changed == 1 and result.rewrites == {"TM001": 1}
    assert _git(source, "show", "tm/upgrade:lib.py") == VERIFIED
    assert (source / "lib.py").read_text() == LEGACY  # the user's checkout is untouched


def test_batch_refuses_a_tree_that_differs_from_what_was_verified(source: Path, tmp_path: Path, monkeypatch) -> None:
    other = "import torch\n"  # the digest verify took of lib.py is not the clone's lib.py
    monkeypatch.setattr("codemods.verify.verify", lambda path, options: _verified(path, baseline=other))
    _no_second_migration(monkeypatch)
    result = _run(source, tmp_path)
    assert result.status == "failed" and "changed while verifying" in result.message and result.commit is None
    clone = tmp_path / "work" / "repos" / "lossy"
    assert (clone / "lib.py").read_text() == LEGACY and not _git(clone, "status", "--porcelain")


def test_apply_refuses_content_that_does_not_match_its_digest(tmp_path: Path) -> None:
    (tmp_path / "lib.py").write_text(LEGACY)
    report = _verified(tmp_path)
    report.verified_files = {"lib.py": b"tampered\n"}
    applied = apply_verified(tmp_path, report, VerifyOptions())
    assert (applied.written, applied.exit_code) == (False, 2) and "not in this report" in applied.message
    assert (tmp_path / "lib.py").read_text() == LEGACY


def test_apply_keeps_the_mode_and_writes_with_regressions_only_when_allowed(tmp_path: Path) -> None:
    from codemods.verify.compare import compare
    from codemods.verify.junit import Outcome

    (tmp_path / "lib.py").write_text(LEGACY)
    (tmp_path / "lib.py").chmod(0o750)
    report = _verified(tmp_path)
    report.status = "regressions"
    report.changes = compare({"t.py::x": Outcome("passed")}, {"t.py::x": Outcome("failed")})
    refused = apply_verified(tmp_path, report, VerifyOptions())
    assert not refused.written and (tmp_path / "lib.py").read_text() == LEGACY
    applied = apply_verified(tmp_path, report, VerifyOptions(), allow_regressions=True)
    assert applied.complete and applied.exit_code == 1 and "written anyway" in applied.message
    assert (tmp_path / "lib.py").read_text() == VERIFIED and (tmp_path / "lib.py").stat().st_mode & 0o777 == 0o750
