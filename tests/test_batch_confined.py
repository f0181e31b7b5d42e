"""Batch never deletes or moves what it does not own. A manifest is shared and edited by hand: its
`name` must stay one folder inside the work dir, whatever it says, and its `branch` must never move
a branch of the user's. Each test is a manifest a user wrote, and checks that the victim survived."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from codemods.batch import ManifestError, git, runner
from codemods.batch.manifest import load_manifest
from codemods.cli import main
from tests.test_batch import LOSS, _git, _repo, global_identity  # noqa: F401 (an autouse fixture)
from tests.test_batch_safety import _batch as _rows, _tip


def _manifest(tmp_path: Path, *entries: str, branch: str = "torch-migrate") -> Path:
    manifest = tmp_path / "repos.toml"
    manifest.write_text(f"[defaults]\nbranch = {json.dumps(branch)}\n" + "".join(f"\n[[repo]]\n{e}\n" for e in entries))
    return manifest


def _batch(manifest: Path, work: Path) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["batch", str(manifest), "--workdir", str(work), "--no-verify"])
    return result.exit_code, result.output


def _pushed(repo: Path) -> Path:
    """A repository whose every commit is on a remote (as a user's usually is): nothing in it looks like unpushed work."""
    _git(repo, "update-ref", "refs/remotes/origin/main", "main")
    return repo


def _snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (its .git included) and its bytes: equal snapshots, nothing touched."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    return _repo(src, "legacy", {"lib.py": LOSS})


# --- 1. a name is one folder inside the work dir -----------------------------------------------


def test_an_absolute_name_is_refused_and_that_directory_survives(tmp_path: Path, legacy: Path) -> None:
    victim = tmp_path / "precious"
    (victim / "data").mkdir(parents=True)
    (victim / "data" / "results.csv").write_text("epoch,loss\n1,0.5\n")
    before = _snapshot(victim)
    code, output = _batch(_manifest(tmp_path, f'name = "{victim}"\npath = "{legacy}"'), tmp_path / "work")
    assert code == 2
    assert f"[[repo]] #1: `name` '{victim}' is not a plain folder name" in output
    assert "it names the repository's clone and report folders in the work dir" in output
    assert _snapshot(victim) == before
    assert not (tmp_path / "work" / "repos").exists()  # refused before any work


def test_a_dotdot_name_naming_the_users_own_repository_is_refused(tmp_path: Path, legacy: Path) -> None:
    work = tmp_path / "work"
    (work / "repos").mkdir(parents=True)  # a work dir used before
    assert (work / "repos" / "../../src/legacy").resolve() == _pushed(legacy)
    before = _snapshot(legacy)
    code, output = _batch(_manifest(tmp_path, f'name = "../../src/legacy"\npath = "{legacy}"'), work)
    assert code == 2 and "[[repo]] #1: `name` '../../src/legacy' is not a plain folder name" in output
    assert _snapshot(legacy) == before


def test_a_dot_name_leaves_the_other_clones_and_an_uncommitted_edit(tmp_path: Path, legacy: Path) -> None:
    other = _repo(tmp_path / "src", "other", {"lib.py": LOSS})
    entries = (f'url = "file://{legacy}"', f'url = "file://{other}"')
    work = tmp_path / "work"
    assert _batch(_manifest(tmp_path, *entries), work)[0] == 0
    review = work / "repos" / "other" / "lib.py"
    review.write_text(review.read_text() + "# reviewed: keep sum, see the paper\n")  # not committed
    before = _snapshot(work / "repos")

    code, output = _batch(_manifest(tmp_path, *entries, f'name = "."\npath = "{legacy}"'), work)
    assert code == 2 and "[[repo]] #3: `name` '.' is not a plain folder name" in output
    assert _snapshot(work / "repos") == before
    assert review.read_text().endswith("# reviewed: keep sum, see the paper\n")


@pytest.mark.parametrize("name", ["team/legacy", "..", "-rf", ".git", "a\\b", "x" * 101], ids=["slash", "dotdot", "dash", "dot", "backslash", "long"])
def test_a_name_that_is_not_one_plain_folder_is_refused_before_any_work(tmp_path: Path, legacy: Path, name: str) -> None:
    manifest = _manifest(tmp_path, f"name = {json.dumps(name)}\npath = \"{legacy}\"")
    with pytest.raises(ManifestError, match=r"\[\[repo\]\] #1: `name` .* is not a plain folder name"):
        load_manifest(manifest)
    code, _ = _batch(manifest, tmp_path / "work")
    assert code == 2 and not (tmp_path / "work" / "repos").exists()


def test_a_default_name_is_a_plain_folder_too(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path, 'url = "https://example.org/.."', 'url = "https://example.org/-x.git"', 'url = "https://example.org/.dots"')
    assert [e.name for e in load_manifest(manifest)] == ["repo", "x", "dots"]


def test_names_that_differ_only_in_case_are_one_folder(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path, 'name = "Vision"\nurl = "file:///a"', 'name = "vision"\nurl = "file:///b"')
    with pytest.raises(ManifestError, match=r"#2: `name` 'vision' is used twice"):
        load_manifest(manifest)


def test_a_ref_that_git_would_read_as_an_option_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="`ref` '--output=/tmp/x' starts with '-'"):
        load_manifest(_manifest(tmp_path, 'url = "file:///a"\nref = "--output=/tmp/x"'))


def test_a_url_that_git_would_read_as_an_option_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="`url` '--upload-pack=touch x' starts with '-'"):
        load_manifest(_manifest(tmp_path, 'name = "a"\nurl = "--upload-pack=touch x"'))


def test_the_clone_never_reads_its_source_as_an_option(tmp_path: Path) -> None:
    with pytest.raises(git.GitError) as failed:
        git.clone("--no-such-option", tmp_path / "clone")
    assert "unknown option" not in str(failed.value) and not (tmp_path / "clone").exists()


def test_the_removal_itself_refuses_anything_but_a_folder_in_the_work_dirs_repos(tmp_path: Path) -> None:
    work, victim = tmp_path / "work", tmp_path / "victim"
    (work / "repos").mkdir(parents=True)
    victim.mkdir()
    (victim / "keep.txt").write_text("mine\n")
    (work / "repos" / "link").symlink_to(victim)
    for path in (victim, work / "repos" / "..", work / "repos" / ".", work / "repos" / "link", work / "repos" / "a" / "b"):
        with pytest.raises(RuntimeError, match="the batch only ever removes its own clones"):
            runner._remove_clone(path, work)
    assert (victim / "keep.txt").read_text() == "mine\n" and (work / "repos").is_dir()


def test_an_entry_made_without_the_manifest_is_checked_before_any_work(tmp_path: Path, legacy: Path) -> None:
    entry = runner.RepoEntry(name="../../src/legacy", source=str(legacy), is_path=True)
    before = _snapshot(_pushed(legacy))
    (tmp_path / "work" / "repos").mkdir(parents=True)
    result = runner.process_repo(entry, runner.BatchSettings(str(tmp_path / "work")))
    assert result.status == "failed" and "`name` '../../src/legacy' is not a plain folder name" in result.message
    assert _snapshot(legacy) == before


@pytest.mark.parametrize("kind", ["folder", "other repository"])
def test_a_folder_in_the_way_that_is_not_the_batchs_clone_is_kept(tmp_path: Path, legacy: Path, kind: str) -> None:
    work = tmp_path / "work"
    (work / "repos").mkdir(parents=True)
    if kind == "folder":
        (work / "repos" / "legacy").mkdir()
        (work / "repos" / "legacy" / "notes.txt").write_text("mine\n")
    else:
        _pushed(_repo(work / "repos", "legacy", {"notes.txt": "mine\n"}))  # clean, all pushed, but another origin
    code, rows = _rows(_manifest(tmp_path, f'path = "{legacy}"'), work)
    output = rows["legacy"]["message"]
    assert code == 2 and f"is in the way and is not the batch's clone of {legacy}; not removing it" in output
    assert (work / "repos" / "legacy" / "notes.txt").read_text() == "mine\n"


# --- 2. a branch of the user's is never moved --------------------------------------------------


def _user_main(legacy: Path) -> str:
    """`main` with a commit of the user's on top, tagged (so no commit is lost to the repository,
    only to `main`'s history); returns main's tip."""
    (legacy / "notes.md").write_text("user work\n")
    _git(legacy, "add", "notes.md")
    _git(legacy, "commit", "-q", "-m", "User work on main")
    _git(legacy, "tag", "v1")
    return _tip(legacy, "main")


MOVED_BACK = "branch 'main' already exists in {repo} with 1 commit(s) torch-migrate did not make ({tip} User work on main); not replacing it"
MOVED_FORWARD = "branch 'main' already exists in {repo} and torch-migrate did not make it (its tip: {tip} User work on main); not moving it"


@pytest.mark.parametrize(
    ("checkout", "refusal"),
    [
        (["checkout -q -b dev main~1"], MOVED_BACK),
        (["checkout -q --detach main~1"], MOVED_BACK),
        (["checkout -q -b dev", "commit -q --allow-empty -m wip"], MOVED_FORWARD),
        (["checkout -q --detach main"], MOVED_FORWARD),
    ],
    ids=["another branch behind main", "detached HEAD behind main", "another branch ahead of main", "detached HEAD at main"],
)
def test_an_existing_branch_that_is_not_checked_out_is_never_moved(tmp_path: Path, legacy: Path, checkout: list[str], refusal: str) -> None:
    main_tip = _user_main(legacy)
    for command in checkout:
        _git(legacy, *command.split())
    code, rows = _rows(_manifest(tmp_path, f'path = "{legacy}"', branch="main"), tmp_path / "work")
    assert code == 2 and refusal.format(repo=legacy, tip=main_tip[:7]) in rows["legacy"]["message"]
    assert _tip(legacy, "main") == main_tip


def test_a_local_branch_holding_a_users_commit_is_not_moved_by_the_checkout(tmp_path: Path, legacy: Path) -> None:
    base = _tip(legacy, "main")
    _git(legacy, "checkout", "-q", "-b", "feature")
    _git(legacy, "commit", "-q", "--allow-empty", "-m", "Only here")
    mine = _tip(legacy, "feature")
    _git(legacy, "checkout", "-q", "main")
    with pytest.raises(git.GitError, match=f"branch 'feature' in {legacy} has commit.* \\({mine[:7]} Only here\\); not moving it"):
        git.checkout_new_branch(legacy, "feature", base)
    assert _tip(legacy, "feature") == mine
    git.checkout_new_branch(legacy, "fresh", base)  # a new branch is made as before
    assert _tip(legacy, "fresh") == base


@pytest.mark.parametrize(
    ("branch", "reason"),
    [
        ("@", "is git's shorthand for HEAD or another commit"),
        ("main@{1}", "is git's shorthand for HEAD or another commit"),
        ("refs/heads/x", "is a full ref name"),
        ("+main", "starts with '+', which git reads as an option or a forced push"),
        ("-f", "starts with '-', which git reads as an option"),
        ("HEAD", "is not a valid branch name (git check-ref-format --branch failed"),
        ("a..b", "is not a valid branch name (git check-ref-format --branch failed"),
        ("x.lock", "is not a valid branch name"),
        ("has space", "is not a valid branch name"),
        ("tab\there", "contains a control character"),
    ],
)
@pytest.mark.parametrize("where", ["[defaults]", "[[repo]] #1"])
def test_an_invalid_branch_name_is_refused_before_the_clone(tmp_path: Path, legacy: Path, branch: str, reason: str, where: str) -> None:
    branches = _git(legacy, "branch", "--list")
    if where == "[defaults]":
        manifest = _manifest(tmp_path, f'path = "{legacy}"', branch=branch)
    else:
        manifest = _manifest(tmp_path, f"path = \"{legacy}\"\nbranch = {json.dumps(branch)}")
    with pytest.raises(ManifestError) as info:
        load_manifest(manifest)
    assert f"{where}: `branch` {branch!r} {reason}" in str(info.value)
    code, output = _batch(manifest, tmp_path / "work")
    assert code == 2 and reason in output
    assert not (tmp_path / "work" / "repos").exists() and _git(legacy, "branch", "--list") == branches
