"""Batch never loses a user's work: branches it did not make, commits in its work dir, who commits,
and failures that say what failed. Each test is the situation a user met, on real git repositories."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from codemods import __version__
from codemods.batch import git, run_batch
from codemods.batch.render import summary_table
from codemods.cli import main
from tests.test_batch import LOSS, _git, _repo, global_identity  # noqa: F401 (an autouse fixture)

BRANCH = "torch-migrate"


def _manifest(tmp_path: Path, *entries: str) -> Path:
    manifest = tmp_path / "repos.toml"
    manifest.write_text(f'[defaults]\nbranch = "{BRANCH}"\n' + "".join(f"\n[[repo]]\n{e}\n" for e in entries))
    return manifest


def _batch(manifest: Path, work: Path, *extra: str) -> tuple[int, dict[str, dict]]:
    """The CLI as a user runs it (no tests, so it is quick); the JSON rows by repository name."""
    result = CliRunner().invoke(main, ["batch", str(manifest), "--workdir", str(work), "--no-verify", "--format", "json", *extra])
    return result.exit_code, {r["name"]: r for r in json.loads(result.output)["repos"]}


def _commit_on(repo: Path, branch: str, rel: str, text: str, subject: str) -> str:
    _git(repo, "checkout", "-q", branch)
    (repo / rel).write_text(text)
    _git(repo, "add", rel)
    _git(repo, "commit", "-q", "-m", subject)
    _git(repo, "checkout", "-q", "main")
    return _git(repo, "rev-parse", branch).strip()


def _tip(repo: Path, branch: str = BRANCH) -> str:
    return _git(repo, "rev-parse", branch).strip()


@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    return _repo(src, "legacy", {"lib.py": LOSS})


# --- 1. a branch that is not the tool's own result is never replaced ---------------------------


@pytest.mark.parametrize("kind", ["path", "url --push"])
def test_second_run_refuses_to_replace_the_branch_a_user_committed_on(tmp_path: Path, legacy: Path, kind: str) -> None:
    if kind == "path":
        entry, flags, where = f'path = "{legacy}"', (), legacy
    else:
        entry, flags, where = f'url = "file://{legacy}"', ("--push",), f"origin (file://{legacy})"
    manifest = _manifest(tmp_path, entry)
    code, rows = _batch(manifest, tmp_path / "work", *flags)
    assert code == 0 and rows["legacy"]["status"] == "migrated" and _tip(legacy) == rows["legacy"]["commit"]
    mine = _commit_on(legacy, BRANCH, "NOTES.md", "my review notes\n", "Review notes on the migration")

    code, rows = _batch(manifest, tmp_path / "work", *flags)  # the second run, without --resume
    row = rows["legacy"]
    assert row["status"] == "failed" and row["commit"] is None and code == 2
    assert f"branch '{BRANCH}' already exists in {where}" in row["message"]
    assert "1 commit(s) torch-migrate did not make" in row["message"]
    assert f"{mine[:7]} Review notes on the migration" in row["message"]
    assert _tip(legacy) == mine  # the user's commit is still the branch's tip
    assert _git(legacy, "show", f"{BRANCH}:NOTES.md") == "my review notes\n"


def test_an_amended_migration_commit_counts_as_the_users(tmp_path: Path, legacy: Path) -> None:
    manifest = _manifest(tmp_path, f'path = "{legacy}"')
    _batch(manifest, tmp_path / "work")
    _git(legacy, "checkout", "-q", BRANCH)
    (legacy / "lib.py").write_text((legacy / "lib.py").read_text() + "# checked by hand\n")
    _git(legacy, "commit", "-q", "-a", "--amend", "--no-edit")  # keeps the tool's trailers
    _git(legacy, "checkout", "-q", "main")
    amended = _tip(legacy)
    assert "Migrated-by: torch-migrate" in _git(legacy, "log", "-1", "--format=%B", BRANCH)

    _, rows = _batch(manifest, tmp_path / "work")
    assert rows["legacy"]["status"] == "failed" and "did not make" in rows["legacy"]["message"]
    assert _tip(legacy) == amended


def test_a_users_own_branch_of_that_name_is_never_replaced(tmp_path: Path, legacy: Path) -> None:
    _git(legacy, "branch", BRANCH)
    theirs = _commit_on(legacy, BRANCH, "plan.md", "upgrade by hand\n", "My own upgrade plan")
    _, rows = _batch(_manifest(tmp_path, f'path = "{legacy}"'), tmp_path / "work")
    assert rows["legacy"]["status"] == "failed" and "My own upgrade plan" in rows["legacy"]["message"]
    assert _tip(legacy) == theirs


def test_the_tools_own_earlier_result_is_replaced_on_the_new_base(tmp_path: Path, legacy: Path) -> None:
    manifest = _manifest(tmp_path, f'path = "{legacy}"')
    _, first = _batch(manifest, tmp_path / "work")
    (legacy / "more.py").write_text(LOSS)  # the user's main moves on after the first run
    _git(legacy, "add", "more.py")
    _git(legacy, "commit", "-q", "-m", "more legacy code")

    _, rows = _batch(manifest, tmp_path / "work")
    row = rows["legacy"]
    assert row["status"] == "migrated" and row["files_changed"] == 2
    assert _tip(legacy) == row["commit"] != first["legacy"]["commit"]
    assert _git(legacy, "rev-parse", f"{BRANCH}^").strip() == _tip(legacy, "main")
    assert 'reduction="sum"' in _git(legacy, "show", f"{BRANCH}:more.py")


def test_a_user_commit_merged_elsewhere_is_not_lost_so_the_branch_is_replaced(tmp_path: Path, legacy: Path) -> None:
    manifest = _manifest(tmp_path, f'path = "{legacy}"')
    _batch(manifest, tmp_path / "work")
    mine = _commit_on(legacy, BRANCH, "NOTES.md", "notes\n", "Review notes")
    _git(legacy, "merge", "-q", "--no-ff", "-m", "Merge the migration", BRANCH)
    (legacy / "more.py").write_text(LOSS)
    _git(legacy, "add", "more.py")
    _git(legacy, "commit", "-q", "-m", "more legacy code")

    _, rows = _batch(manifest, tmp_path / "work")
    assert rows["legacy"]["status"] == "migrated" and _tip(legacy) == rows["legacy"]["commit"]
    assert _git(legacy, "merge-base", "--is-ancestor", mine, BRANCH) == ""  # still in the branch's history


def test_a_commit_made_between_the_check_and_the_push_is_kept(tmp_path: Path, legacy: Path) -> None:
    _git(legacy, "branch", BRANCH)
    seen = _tip(legacy)
    clone = tmp_path / "clone"
    git.clone(str(legacy), clone)
    _git(clone, "checkout", "-q", "-b", BRANCH)
    _git(clone, "commit", "-q", "--allow-empty", "-m", "ours")
    late = _commit_on(legacy, BRANCH, "late.txt", "late\n", "A late user commit")
    with pytest.raises(git.GitError, match=f"branch '{BRANCH}' in .* changed while the batch ran; not replacing it"):
        git.push_branch(clone, str(legacy), BRANCH, seen)
    assert _tip(legacy) == late


def test_commits_and_edits_in_the_work_dir_clone_survive_a_rerun(tmp_path: Path, legacy: Path) -> None:
    # A `url` repository's branch stays in the work dir's clone, where a user may go on working.
    manifest = _manifest(tmp_path, f'url = "file://{legacy}"')
    work = tmp_path / "work"
    _, rows = _batch(manifest, work)
    clone = work / "repos" / "legacy"
    assert rows["legacy"]["status"] == "migrated" and _tip(clone) == rows["legacy"]["commit"]
    (clone / "lib.py").write_text("# edited, not committed\n")

    _, rows = _batch(manifest, work)
    assert rows["legacy"]["status"] == "failed" and "uncommitted changes" in rows["legacy"]["message"]
    assert (clone / "lib.py").read_text() == "# edited, not committed\n"

    _git(clone, "commit", "-q", "-a", "-m", "Hand-tuned the loss")
    mine = _tip(clone)
    _, rows = _batch(manifest, work)
    assert rows["legacy"]["status"] == "failed" and "Hand-tuned the loss" in rows["legacy"]["message"]
    assert _tip(clone) == mine


# --- 2. the commit is the user's, the tool named in a trailer ----------------------------------


def test_the_commit_is_authored_by_the_repositorys_identity_and_names_the_tool(tmp_path: Path, legacy: Path) -> None:
    _git(legacy, "config", "user.name", "Ada Lovelace")
    _git(legacy, "config", "user.email", "ada@example.org")
    plain = _repo(tmp_path / "src", "plain", {"lib.py": LOSS})
    _, rows = _batch(_manifest(tmp_path, f'path = "{legacy}"', f'path = "{plain}"'), tmp_path / "work")

    def author_and_committer(repo: Path) -> list[str]:
        return _git(repo, "log", "-1", "--format=%an <%ae>%n%cn <%ce>", BRANCH).splitlines()

    assert author_and_committer(legacy) == ["Ada Lovelace <ada@example.org>"] * 2  # the repository's own config
    assert author_and_committer(plain) == ["Global User <global@example.org>"] * 2  # the user's global one
    message = _git(legacy, "log", "-1", "--format=%B", BRANCH)
    assert f"Migrated-by: torch-migrate {__version__}" in message
    tree = _git(legacy, "log", "-1", "--format=%T", BRANCH).strip()
    assert f"Migrated-tree: {tree}" in message
    assert "localhost" not in _git(legacy, "log", "--format=%ae %ce", BRANCH)
    assert rows["legacy"]["commit"] == _tip(legacy)


def test_no_identity_anywhere_is_a_clear_failure_before_any_work(tmp_path: Path, legacy: Path, global_identity: Path) -> None:
    global_identity.write_text("")
    code, rows = _batch(_manifest(tmp_path, f'path = "{legacy}"'), tmp_path / "work")
    row = rows["legacy"]
    assert code == 2 and row["status"] == "failed" and row["message"] == git.NO_IDENTITY
    assert BRANCH not in _git(legacy, "branch", "--list")
    assert row["seconds"] < 30  # it stopped before migrating


# --- 3. a bad source is that repository's failed row, and says why -----------------------------


def test_a_missing_path_fails_its_row_and_the_others_still_run(tmp_path: Path, legacy: Path) -> None:
    missing, plain_dir = tmp_path / "moved-away", tmp_path / "not-a-repo"
    plain_dir.mkdir()
    manifest = _manifest(tmp_path, f'path = "{legacy}"', f'path = "{missing}"', f'path = "{plain_dir}"')
    code, rows = _batch(manifest, tmp_path / "work")
    assert code == 1
    assert rows["legacy"]["status"] == "migrated"
    assert rows["moved-away"]["status"] == "failed"
    assert rows["moved-away"]["message"] == f"`path` {missing} does not exist"
    assert rows["not-a-repo"]["status"] == "failed"
    assert rows["not-a-repo"]["message"] == f"`path` {plain_dir} is not a git repository (no .git in it)"


def test_a_clone_failure_says_what_failed_and_why(tmp_path: Path) -> None:
    url = f"file://{tmp_path}/nowhere/repo.git"
    expected = subprocess.run(["git", "ls-remote", url], capture_output=True, text=True)
    reason = next(line for line in expected.stderr.splitlines() if line.startswith("fatal:"))
    _, rows = _batch(_manifest(tmp_path, f'url = "{url}"'), tmp_path / "work")
    message = rows["repo"]["message"]
    assert message.startswith(f"git clone {url} failed (exit {expected.returncode}): {reason}")
    assert not message.endswith("and the repository exists.")


# --- 4. the summary names the files left untouched ---------------------------------------------


def test_the_summary_names_the_files_left_untouched(tmp_path: Path) -> None:
    broken = {f"py2_{i}.py": "print 'size_average'\n" for i in range(4)}
    repo = _repo(tmp_path, "mixed", {"lib.py": LOSS, **broken})
    outcome = run_batch(_manifest(tmp_path, f'path = "{repo}"'), tmp_path / "work", verify=False)
    result = outcome.results[0]
    assert result.status == "migrated" and sorted(result.untouched) == sorted(broken)

    console = Console(width=400, record=True)
    console.print(summary_table(outcome.results, outcome.resumed))
    row = next(line for line in console.export_text().splitlines() if line.startswith("│ mixed"))
    assert f"4 file(s) left untouched: {', '.join(result.untouched[:3])} and 1 more; see REPORT.md" in row
    assert result.untouched[3] not in row
