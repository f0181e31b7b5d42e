"""Isolated copies of the user's project; the user's tree is only ever read.

Inside git the copy holds the whole repository as it is on disk — HEAD plus every uncommitted
change and untracked file, minus what .gitignore excludes — so tests that import siblings or read
configuration above PATH behave as they do for the user. `git worktree` is not used: it would
write into the user's .git. Outside git the copy is PATH minus virtualenvs, caches and VCS data.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from codemods.engine import git_safe
from codemods.engine.discovery import SKIP_DIRS, walk

# Directories that are never part of a project's source, whatever .gitignore says.
NEVER = SKIP_DIRS - {"build", "dist"}


class CopyError(Exception):
    pass


@dataclass(frozen=True)
class Source:
    """What to copy: `root` (the git top level, or PATH) and PATH relative to it."""

    root: Path
    project: str  # PATH relative to root, "." when they are the same
    files: tuple[str, ...]  # relative to root
    git: bool

    def project_in(self, copy_root: Path) -> Path:
        return copy_root / self.project


def _git(directory: Path, *args: str) -> str | None:
    try:
        done = git_safe.run("-C", str(directory), *args, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.decode("utf-8", "surrogateescape") if done.returncode == 0 else None


def _walk(root: Path) -> list[str]:
    return [path.relative_to(root).as_posix() for path in walk(root, skip=NEVER)]


def source_of(path: Path) -> Source:
    path = path.resolve()
    if not path.is_dir():
        raise CopyError(f"{path} is not a directory; verify needs the project's folder")
    top = _git(path, "rev-parse", "--show-toplevel")
    if top and top.strip():
        root = Path(top.strip()).resolve()
        listing = _git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
        if listing is not None:
            files = [f for f in listing.split("\0") if f]
            venvs = tuple(f[: -len("pyvenv.cfg")] for f in files if f.endswith("pyvenv.cfg"))
            files = [
                f
                for f in files
                if not any(part in NEVER for part in f.split("/")[:-1]) and not (venvs and f.startswith(venvs))
            ]
            rel = path.relative_to(root).as_posix()
            return Source(root, rel, tuple(files), git=True)
    return Source(path, ".", tuple(_walk(path)), git=False)


def make_copy(source: Source, target: Path) -> Path:
    """Copy `source` to `target` (created); symlinks stay links; deleted files are skipped."""
    target.mkdir(parents=True)
    for rel in source.files:
        origin = source.root / rel
        dest = target / rel
        try:
            if origin.is_symlink():
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(os.readlink(origin), dest)
            elif origin.is_file():
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, dest)
        except FileNotFoundError:
            continue  # deleted in the working tree but still in the index: as on disk, absent
        except OSError as exc:
            raise CopyError(f"cannot copy {origin}: {exc.strerror or exc}") from None
    source.project_in(target).mkdir(parents=True, exist_ok=True)
    return target


def clone_copy(copy_root: Path, target: Path) -> Path:
    """A further copy of an existing copy (for culprit trials)."""
    shutil.copytree(copy_root, target, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return target


def remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
