"""The few git operations a batch needs, with errors that say what failed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from codemods import __version__
from codemods.engine import git_safe


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
    what = what or f"git {args[0]}"
    try:
        proc = git_safe.run(*args, cwd=cwd, timeout=timeout, env=env, text=True)  # no repository's command runs
    except FileNotFoundError:
        raise GitError("git is not installed") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"{what} timed out after {timeout:.0f}s") from None
    if proc.returncode != 0:
        reason = _explain(proc.stderr or proc.stdout)
        raise GitError(f"{what} failed (exit {proc.returncode})" + (f": {reason}" if reason else ""))
    return proc.stdout


def clone(source: str, target: Path) -> None:
    # `--`: a source that starts with '-' (`--upload-pack=CMD`) is a repository, never an option
    git(None, "clone", "--quiet", "--no-hardlinks", "--", source, str(target), what=f"git clone {source}")


def branch_problem(name: str) -> str | None:
    """Why `name` cannot be the migration branch (None: it can): what `git check-ref-format --branch`
    refuses, and the names it takes that would mean something else on a command line or in a refspec."""
    if name.startswith(("-", "+")):
        return f"starts with {name[0]!r}, which git reads as an option or a forced push"
    if name == "@" or "@{" in name:
        return "is git's shorthand for HEAD or another commit, not a branch name"
    if name.startswith("refs/"):
        return "is a full ref name; give the branch's short name (without refs/heads/)"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "contains a control character"
    try:
        git(None, "check-ref-format", "--branch", name, what="git check-ref-format --branch")
    except GitError as exc:
        return f"is not a valid branch name ({exc})"
    return None


def base_commit(repo: Path, ref: str | None) -> str:
    """The commit the migration branch starts from: `ref`, default the clone's HEAD."""
    return git(repo, "rev-parse", "--verify", f"{ref or 'HEAD'}^{{commit}}", what=f"finding ref {ref or 'HEAD'}").strip()


def checkout_new_branch(repo: Path, branch: str, base: str) -> None:
    """Check out `branch` at `base`. A local branch of that name is moved only when every commit
    the move would drop is in `base`, on a remote or a tag, or the tool's own."""
    local = ref_sha(repo, f"refs/heads/{branch}")
    lost = user_commits(repo, local, base, "--remotes", "--tags") if local else []
    if lost:
        raise GitError(f"branch {branch!r} in {repo} has commit(s) torch-migrate did not make ({describe(repo, lost)}); not moving it")
    git(repo, "checkout", "--quiet", "-B" if local else "-b", branch, base)


def _config(repo: Path, key: str) -> str | None:
    try:
        return git(repo, "config", "--get", key).strip() or None
    except GitError:
        return None  # not set


def origin_url(repo: Path) -> str | None:
    return _config(repo, "remote.origin.url")


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


def _made_by_tool(tree: str, body: str) -> bool:
    trailers = _trailers(body)
    return trailers.get(TOOL_TRAILER, "").startswith("torch-migrate") and trailers.get(TREE_TRAILER) == tree


def _commits(repo: Path, *args: str) -> list[tuple[str, bool]]:
    """(sha, made by torch-migrate and unchanged since) for each commit `git log ARGS` lists, in one git call."""
    # `log` for its -z; --no-show-signature: a user's log.showSignature would print into the records.
    records = git(repo, "log", "-z", "--no-show-signature", "--format=%H%n%T%n%B", *args, "--").split("\0")
    parsed = (record.lstrip("\n").split("\n", 2) for record in records if record.strip())
    return [(sha, _made_by_tool(tree, rest[0] if rest else "")) for sha, tree, *rest in parsed]


def is_tool_commit(repo: Path, sha: str) -> bool:
    """Made by torch-migrate and unchanged since: its trailers name the tool and its own tree."""
    return _commits(repo, "-1", sha)[0][1]


def user_commits(repo: Path, ref: str, *others: str) -> list[str]:
    """The commits that replacing `ref` would lose and that torch-migrate did not make: those reachable
    from `ref` and from none of `others` (commits or rev-list arguments such as `--branches`), newest first."""
    return [sha for sha, tool in _commits(repo, ref, "--not", *others) if not tool]


def grew_from_tool_commit(repo: Path, tip: str) -> bool:
    """Whether the branch at `tip` is one torch-migrate made: its first-parent history (the branch's
    own line, not what was merged into it) holds a migration commit of the tool's."""
    found = _commits(repo, "--first-parent", f"--grep=^{TOOL_TRAILER}: torch-migrate", tip)
    return any(tool for _, tool in found)


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
