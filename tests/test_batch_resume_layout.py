"""batch (issue #41 item 4): `--resume` runs a repository again when its source moved, and the
summary is one line per repository when the terminal is narrow."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from codemods.batch import run_batch
from codemods.batch.render import NARROW_BELOW, print_summary, summary_lines
from codemods.batch.result import RepoResult
from codemods.batch.resume import source_commit
from codemods.cli import main

LOSS = "import torch.nn as nn\n\n\ndef criterion():\n    return nn.MSELoss(size_average=False)\n"
IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


@pytest.fixture(autouse=True)
def global_identity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = Global User\n\temail = global@example.org\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True, env={**os.environ, **IDENTITY})
    return done.stdout.strip()


def _source(tmp_path: Path, name: str = "legacy") -> Path:
    repo = tmp_path / "src" / name
    repo.mkdir(parents=True)
    (repo / "lib.py").write_text(LOSS)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "legacy")
    return repo


def _manifest(tmp_path: Path, repo: Path, extra: str = "") -> Path:
    manifest = tmp_path / "repos.toml"
    manifest.write_text(f'[defaults]\nbranch = "tm/upgrade"\n\n[[repo]]\nname = "legacy"\npath = "{repo}"\n{extra}')
    return manifest


def _commit_more_legacy_code(repo: Path) -> str:
    (repo / "more.py").write_text(LOSS.replace("criterion", "other"))
    _git(repo, "add", "more.py")
    _git(repo, "commit", "-q", "-m", "more")
    return _git(repo, "rev-parse", "HEAD")


def test_resume_runs_a_repository_again_when_its_source_moved(tmp_path: Path) -> None:
    repo = _source(tmp_path)
    manifest, work = _manifest(tmp_path, repo), tmp_path / "work"
    first = run_batch(manifest, work, verify=False)
    assert first.results[0].status == "migrated" and first.results[0].base == _git(repo, "rev-parse", "HEAD")

    assert run_batch(manifest, work, verify=False, resume=True).resumed == {"legacy"}

    moved = _commit_more_legacy_code(repo)
    again = run_batch(manifest, work, verify=False, resume=True)
    assert again.resumed == set()
    result = again.results[0]
    assert result.status == "migrated" and result.base == moved and result.files_changed == 2
    assert "more.py" in _git(repo, "show", "--stat", "--format=", "tm/upgrade")
    # The state now records the new source commit: nothing moved since, so it is kept.
    assert run_batch(manifest, work, verify=False, resume=True).resumed == {"legacy"}


def test_a_pinned_ref_that_did_not_move_is_kept(tmp_path: Path) -> None:
    repo = _source(tmp_path)
    _git(repo, "tag", "-a", "v1", "-m", "release")
    manifest, work = _manifest(tmp_path, repo, 'ref = "v1"\n'), tmp_path / "work"
    assert run_batch(manifest, work, verify=False).results[0].status == "migrated"
    _commit_more_legacy_code(repo)  # main moves; the tag does not
    assert run_batch(manifest, work, verify=False, resume=True).resumed == {"legacy"}
    _git(repo, "tag", "-f", "-a", "v1", "-m", "release again")  # the tag moves to the new commit
    assert run_batch(manifest, work, verify=False, resume=True).resumed == set()


def test_source_commit_reads_tags_branches_and_head(tmp_path: Path) -> None:
    repo = _source(tmp_path)
    head = _git(repo, "rev-parse", "HEAD")
    _git(repo, "tag", "-a", "v1", "-m", "annotated")
    assert source_commit(str(repo), None) == head
    assert source_commit(str(repo), "v1") == head  # the commit, not the tag object
    assert source_commit(str(repo), "main") == head
    assert source_commit(str(repo), "nope") is None
    assert source_commit(str(tmp_path / "gone"), None) is None


# -- the summary's layout --------------------------------------------------------------------------


def _results() -> list[RepoResult]:
    return [
        RepoResult("fixable", "/src/fixable", "migrated", "ok", "tm/upgrade", "9ddf5bdee5aa", "b", 1, {"TM001": 1}, 0,
                   tests_before={"failed": 1}, tests_after={"passed": 1}),
        RepoResult("breaks", "/src/breaks", "regressions", "1 regression", "tm/upgrade", None, "b", 1, {"TM001": 1}, 0,
                   tests_before={"passed": 1}, tests_after={"failed": 1},
                   regressions=["tests/test_lib.py::test_keeps_the_paper_code_verbatim"]),
        RepoResult("a-repository-with-a-long-name", "/src/x", "failed",
                   "`path` /somewhere/very/far/away/that/does/not/exist/at/all does not exist"),
    ]  # fmt: skip


def test_narrow_summary_is_one_line_per_repository_within_the_width() -> None:
    lines = summary_lines(_results(), {"fixable"}, 80)
    assert len(lines) == 1 + 3 and all(len(line) <= 80 for line in lines)
    assert lines[1].split()[:9] == "fixable migrated (resumed): tests 1 failed → 1 passed".split()
    assert lines[1].endswith(" …")  # the rest did not fit: REPORT.md has it
    assert "1 file, 1 rewrite; 9ddf5bdee5" in summary_lines(_results(), set(), 100)[1]
    assert "regressions: 1 regression; tests 1 passed → 1 failed" in lines[2] and lines[3].endswith("…")


@pytest.mark.parametrize(("columns", "narrow"), [("80", True), ("160", False)])
def test_columns_chooses_the_layout(columns: str, narrow: bool, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    print_summary(_results(), set())
    out = capsys.readouterr().out.splitlines()
    assert all(len(line) <= int(columns) for line in out)
    assert ("┏" in "".join(out)) is not narrow
    if narrow:
        assert len(out) == 4 and int(columns) < NARROW_BELOW


def test_the_batch_command_prints_the_narrow_summary_at_80_columns(tmp_path: Path) -> None:
    repo = _source(tmp_path)
    manifest = _manifest(tmp_path, repo)
    args = ["batch", str(manifest), "--workdir", str(tmp_path / "work"), "--no-verify"]
    narrow = CliRunner(env={"COLUMNS": "80"}).invoke(main, args)
    assert narrow.exit_code == 0, narrow.output
    summary = [line for line in narrow.output.splitlines() if not line.startswith(("legacy: ", "reports: "))]
    assert "┏" not in narrow.output and all(len(line) <= 80 for line in summary)
    assert summary[1:] == [f"legacy  migrated: 1 file, 1 rewrite; {_git(repo, 'rev-parse', 'tm/upgrade')[:10]}"]
    wide = CliRunner(env={"COLUMNS": "160"}).invoke(main, args)
    assert "┏" in wide.output


def test_an_interpreter_without_pytest_fails_the_row_saying_which_and_what_to_set(tmp_path: Path) -> None:
    """The manifest's `python` is the projects' interpreter; one that cannot run pytest (as the tool's
    own, installed apart, cannot) fails the row before any test runs, and says how to fix it."""
    import sys

    repo = _source(tmp_path)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_lib.py").write_text("def test_nothing():\n    pass\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "tests")
    bare = tmp_path / "bare"
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(bare)], check=True)
    python = bare / "bin" / "python"
    if subprocess.run([str(python), "-c", "import pytest"], capture_output=True).returncode == 0:
        pytest.skip("the base interpreter's venv imports pytest")
    manifest = _manifest(tmp_path, repo, f'python = "{python}"\n')
    result = run_batch(manifest, tmp_path / "work").results[0]
    assert result.status == "failed"
    assert "cannot import pytest" in result.message and "`python = " in result.message and "--python" in result.message
