"""The few git operations a batch needs, with errors that say what failed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


class GitError(RuntimeError):
    pass


_ENV = {
    "GIT_TERMINAL_PROMPT": "0",  # never hang on a credential prompt
    "GIT_AUTHOR_NAME": os.environ.get("GIT_AUTHOR_NAME", "torch-migrate"),
    "GIT_AUTHOR_EMAIL": os.environ.get("GIT_AUTHOR_EMAIL", "torch-migrate@localhost"),
    "GIT_COMMITTER_NAME": os.environ.get("GIT_COMMITTER_NAME", "torch-migrate"),
    "GIT_COMMITTER_EMAIL": os.environ.get("GIT_COMMITTER_EMAIL", "torch-migrate@localhost"),
}


def git(cwd: Path | None, *args: str, timeout: float = 600) -> str:
    try:
        proc = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env={**os.environ, **_ENV}
        )
    except FileNotFoundError:
        raise GitError("git is not installed") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"git {args[0]} timed out after {timeout:.0f}s") from None
    if proc.returncode != 0:
        message = (proc.stderr or proc.stdout).strip().splitlines()
        raise GitError(f"git {' '.join(args[:2])} failed: {message[-1] if message else proc.returncode}")
    return proc.stdout


def clone(source: str, target: Path) -> None:
    git(None, "clone", "--quiet", "--no-hardlinks", source, str(target))


def checkout_new_branch(repo: Path, branch: str, ref: str | None) -> str:
    """Create `branch` at `ref` (default: the clone's HEAD); returns the base commit."""
    base = git(repo, "rev-parse", "--verify", f"{ref or 'HEAD'}^{{commit}}").strip()
    git(repo, "checkout", "--quiet", "-B", branch, base)
    return base


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "--no-verify", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def diffstat(repo: Path, base: str) -> str:
    return git(repo, "diff", "--stat", base, "HEAD").rstrip()


def checked_out_branch(repo: str) -> str | None:
    try:
        return git(Path(repo), "symbolic-ref", "--quiet", "--short", "HEAD").strip() or None
    except GitError:
        return None


def push_branch(repo: Path, remote: str, branch: str) -> None:
    git(repo, "push", "--quiet", "--force", remote, f"refs/heads/{branch}:refs/heads/{branch}")
