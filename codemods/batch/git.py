"""The few git operations a batch needs, with errors that say what failed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from codemods import __version__


class GitError(RuntimeError):
    pass


# The migration commit's trailers: the tool that made it, and the tree it made. A commit is the
# tool's own only while both hold, so an amended migration commit counts as the user's.
TOOL_TRAILER = "Migrated-by"
TREE_TRAILER = "Migrated-tree"

NO_IDENTITY = (
    "no git identity to author the migration commit: set user.name and user.email "
    "(`git config --global user.name NAME`, `git config --global user.email EMAIL`, or in the repository), "
    "or GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL"
)


def _explain(stderr: str) -> str:
    """git's own reason: its `fatal:`/`error:` lines, else everything it said, on one line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    reasons = [line for line in lines if line.startswith(("fatal:", "error:", "remote:", "! "))]
    return " ".join(reasons or lines)


def git(cwd: Path | None, *args: str, timeout: float = 600, what: str | None = None, env: dict | None = None) -> str:
    """Run git; a failure raises `GitError` naming the command (or `what`), the exit status and git's reason."""
    environ = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **(env or {})}  # never hang on a credential prompt
    what = what or f"git {args[0]}"
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=environ)
    except FileNotFoundError:
        raise GitError("git is not installed") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"{what} timed out after {timeout:.0f}s") from None
    if proc.returncode != 0:
        reason = _explain(proc.stderr or proc.stdout)
        raise GitError(f"{what} failed (exit {proc.returncode})" + (f": {reason}" if reason else ""))
    return proc.stdout


def clone(source: str, target: Path) -> None:
    git(None, "clone", "--quiet", "--no-hardlinks", source, str(target), what=f"git clone {source}")


def checkout_new_branch(repo: Path, branch: str, ref: str | None) -> str:
    """Create `branch` at `ref` (default: the clone's HEAD); returns the base commit."""
    base = git(repo, "rev-parse", "--verify", f"{ref or 'HEAD'}^{{commit}}", what=f"finding ref {ref or 'HEAD'}").strip()
    git(repo, "checkout", "--quiet", "-B", branch, base)
    return base


def _config(repo: Path, key: str) -> str | None:
    try:
        return git(repo, "config", "--get", key).strip() or None
    except GitError:
        return None  # not set


def identity(repo: Path) -> dict[str, str]:
    """The migration commit's author and committer, as git would choose them in `repo`: GIT_AUTHOR_*
    (and GIT_COMMITTER_*) from the environment, else `user.name`/`user.email` from the repository's
    config, then the global and system ones. Never made up: with none, `GitError(NO_IDENTITY)`."""
    name = os.environ.get("GIT_AUTHOR_NAME") or _config(repo, "user.name")
    email = os.environ.get("GIT_AUTHOR_EMAIL") or _config(repo, "user.email") or os.environ.get("EMAIL")
    if not name or not email:
        raise GitError(NO_IDENTITY)
    return {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": os.environ.get("GIT_COMMITTER_NAME") or name,
        "GIT_COMMITTER_EMAIL": os.environ.get("GIT_COMMITTER_EMAIL") or email,
    }


def commit_all(repo: Path, message: str, author: dict[str, str]) -> str:
    """Commit the whole working tree on the checked-out branch, by `author`, with the tool's trailers.

    `commit-tree` rather than `commit`: no hook of the user's can change the commit after its tree
    is recorded in the message."""
    git(repo, "add", "--all")
    tree = git(repo, "write-tree").strip()
    parent = git(repo, "rev-parse", "HEAD").strip()
    body = f"{message.rstrip()}\n\n{TOOL_TRAILER}: torch-migrate {__version__}\n{TREE_TRAILER}: {tree}\n"
    sha = git(repo, "commit-tree", tree, "-p", parent, "-m", body, env=author).strip()
    git(repo, "update-ref", "-m", "torch-migrate: migrate", "HEAD", sha, parent)
    return sha


def _trailers(body: str) -> dict[str, str]:
    last = body.strip().rsplit("\n\n", 1)[-1]
    pairs = (line.split(": ", 1) for line in last.splitlines() if ": " in line)
    return {key.strip(): value.strip() for key, value in pairs}


def is_tool_commit(repo: Path, sha: str) -> bool:
    """Made by torch-migrate and unchanged since: its trailers name the tool and its own tree."""
    tree, _, body = git(repo, "show", "-s", "--format=%T%n%B", sha).partition("\n")
    trailers = _trailers(body)
    return trailers.get(TOOL_TRAILER, "").startswith("torch-migrate") and trailers.get(TREE_TRAILER) == tree


def user_commits(repo: Path, ref: str, *others: str) -> list[str]:
    """The commits that replacing `ref` would lose and that torch-migrate did not make: those reachable
    from `ref` and from none of `others` (rev-list arguments such as `--branches`), newest first."""
    lost = git(repo, "rev-list", ref, "--not", *others).split()
    return [sha for sha in lost if not is_tool_commit(repo, sha)]


def describe(repo: Path, shas: list[str], limit: int = 3) -> str:
    """`1a2b3c4 subject` for the first few commits, then how many more."""
    shown = [git(repo, "show", "-s", "--format=%h %s", sha).strip() for sha in shas[:limit]]
    more = f" and {len(shas) - limit} more" if len(shas) > limit else ""
    return "; ".join(shown) + more


def ref_sha(repo: Path, ref: str) -> str | None:
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip() or None
    except GitError:
        return None  # no such ref


def diffstat(repo: Path, base: str) -> str:
    return git(repo, "diff", "--stat", base, "HEAD").rstrip()


def checked_out_branch(repo: str) -> str | None:
    try:
        return git(Path(repo), "symbolic-ref", "--quiet", "--short", "HEAD").strip() or None
    except GitError:
        return None


def push_branch(repo: Path, remote: str, branch: str, expected: str | None) -> None:
    """Point `branch` in `remote` at ours, only if it is still at `expected` (None: still absent).

    The lease turns a commit the user made on that branch since the check into a refusal."""
    ref = f"refs/heads/{branch}"
    try:
        lease = f"--force-with-lease={ref}:{expected or ''}"
        git(repo, "push", "--quiet", lease, remote, f"{ref}:{ref}", what=f"git push to {remote}")
    except GitError as exc:
        if "(stale info)" not in str(exc):
            raise
        raise GitError(f"branch {branch!r} in {remote} changed while the batch ran; not replacing it ({exc})") from None
