"""Which files a run covers: `.py` (and `.ipynb`) under the given paths, minus what never is code."""

from __future__ import annotations

import fnmatch
import errno
import os
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from codemods.engine import git_safe

SKIP_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".tox", ".nox", ".venv", "venv", ".eggs", "build", "dist",
        "site-packages", "node_modules", "__pycache__", ".mypy_cache", ".pytest_cache",
        ".ruff_cache", ".ipynb_checkpoints", ".torch-migrate-cache",
    }
)  # fmt: skip
SUFFIXES = (".py", ".ipynb")


@dataclass
class Discovered:
    files: list[Path] = field(default_factory=list)
    unreadable: list[tuple[Path, str]] = field(default_factory=list)


def _excluded(rel: str, patterns: Sequence[str]) -> bool:
    parts = rel.split("/")
    for pattern in patterns:
        pattern = pattern.strip().rstrip("/")
        if not pattern:
            continue
        if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(rel, pattern + "/*"):
            return True
        if "/" not in pattern and any(fnmatch.fnmatch(part, pattern) for part in parts):
            return True
    return False


def _skipped_dir(path: str, name: str, skip: frozenset[str] = SKIP_DIRS) -> bool:
    return name in skip or os.path.exists(os.path.join(path, "pyvenv.cfg"))  # every virtualenv has one at its top


def _in_git(directory: Path) -> bool:
    """Whether git may see a work tree at `directory`: a `.git` (a folder, or a worktree's file)
    there or above, or git told where one is. Outside one, asking git costs a process for nothing
    (a run over 16 unpacked projects spent a tenth of a warm run on it)."""
    if os.environ.get("GIT_DIR") or os.environ.get("GIT_WORK_TREE"):
        return True
    try:
        here = directory.resolve()
    except (OSError, RuntimeError):
        return True
    return any(os.path.lexists(os.path.join(folder, ".git")) for folder in (here, *here.parents))


def _git_listing(directory: Path) -> list[str] | None:
    """Files git would consider (tracked + untracked, .gitignore honoured), or None outside git."""
    if not _in_git(directory):
        return None
    try:
        done = git_safe.run(
            "-C", str(directory), "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ".", timeout=60
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return [p for p in done.stdout.decode("utf-8", "surrogateescape").split("\0") if p]


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
        return True
    except (ValueError, OSError, RuntimeError):  # RuntimeError: symlink loop on older Pythons
        return False


# What `Path.is_file()` answers False to rather than raise: not a file to report as unreadable.
_NOT_A_FILE = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP})


def walk(
    directory: Path, skip: frozenset[str] = SKIP_DIRS, onerror: Callable[[OSError], None] | None = None
) -> Iterator[Path]:
    """Every file under `directory` (each folder's files in name order, then its subfolders),
    minus folders named in `skip` and virtualenvs; links to folders are not followed.

    The one walk of a tree outside git: discovery, the era's idiom scan and verify's copies."""
    for here, _, names in _folders(directory, skip, onerror):
        for name in names:
            yield here / name


def _folders(
    directory: Path, skip: frozenset[str] = SKIP_DIRS, onerror: Callable[[OSError], None] | None = None
) -> Iterator[tuple[Path, str, list[str]]]:
    """walk's folders: each as (its path, its path relative to `directory` in `/` form, "" for
    `directory` itself, its file names sorted)."""
    for current, dirs, files in os.walk(directory, onerror=onerror, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not _skipped_dir(os.path.join(current, d), d, skip))
        rel = os.path.relpath(current, directory).replace(os.sep, "/")
        yield Path(current), "" if rel == "." else rel + "/", sorted(files)


def _walk(directory: Path, found: Discovered, suffixes: tuple[str, ...] = ()) -> Iterable[tuple[Path, str]]:
    """(path, path relative to `directory`) of every file walk finds whose name ends with one of
    `suffixes` (all: none given). A path is made only for those: most files of a project are
    data, docs and configs."""

    def onerror(exc: OSError) -> None:
        found.unreadable.append((Path(exc.filename or directory), exc.strerror or str(exc)))

    for here, rel, names in _folders(directory, onerror=onerror):
        for name in names:
            if not suffixes or name.endswith(suffixes):
                yield here / name, rel + name


def _named_rel(path: Path, root: Path | None) -> str:
    """A named file's path as `exclude` patterns are written: relative to the config's folder
    (else the working directory) when inside it, else as given."""
    absolute = Path(os.path.abspath(path))  # not resolve(): a link is excluded by the name it was given
    for base in (root, Path.cwd()):
        if base is not None:
            try:
                return absolute.relative_to(os.path.abspath(base)).as_posix()
            except ValueError:
                continue
    return path.as_posix()


def discover(
    paths: Sequence[Path],
    exclude: Sequence[str] = (),
    suffixes: Sequence[str] = SUFFIXES,
    root: Path | None = None,
) -> Discovered:
    """Files to migrate, sorted and de-duplicated.

    `exclude` applies to named files too (ruff's and black's `--force-exclude`, always on):
    pre-commit and editors name every file they want checked, excluded ones included. Patterns
    for named files are matched relative to `root` (the config's folder) or the working directory.
    """
    found = Discovered()
    seen: set[tuple[int, int]] = set()
    suffixes = tuple(suffixes)

    def add(path: Path, root: Path) -> None:
        if not path.name.endswith(suffixes):
            return
        try:
            status = os.lstat(path)
            if stat.S_ISLNK(status.st_mode):
                if not _inside(path, root):
                    return  # never follow a link out of the tree we were asked to migrate
                status = os.stat(path)
            if not stat.S_ISREG(status.st_mode):
                return  # a directory called x.py, a socket
            key = (status.st_dev, status.st_ino)  # one file, by whatever names it is reached
        except OSError as exc:
            if exc.errno in _NOT_A_FILE:
                return  # a dangling link, a link loop
            found.unreadable.append((path, exc.strerror or str(exc)))
            return
        if key not in seen:
            seen.add(key)
            found.files.append(path)

    for given in paths:
        given = Path(given)
        if not given.exists() and not given.is_symlink():
            found.unreadable.append((given, "no such file or directory"))
            continue
        if not given.is_dir():
            if given.name.endswith(suffixes) and not _excluded(_named_rel(given, root), exclude):
                add(given, given.resolve().parent)
            continue
        root = given.resolve()
        listing = _git_listing(given)
        candidates = ((given / rel, rel) for rel in listing) if listing is not None else _walk(given, found, suffixes)
        # Untracked virtualenvs are not always ignored; each has a pyvenv.cfg at its top.
        venvs = tuple(rel[: -len("pyvenv.cfg")] for rel in listing or () if rel.endswith("pyvenv.cfg"))
        for path, rel in candidates:
            if not rel.endswith(suffixes):
                continue  # most files of a project: data, docs, configs
            if any(part in SKIP_DIRS for part in rel.split("/")[:-1]) or (venvs and rel.startswith(venvs)):
                continue
            if _excluded(rel, exclude):
                continue
            add(path, root)
    found.files.sort(key=_parts)  # Path's own order (by parts), without its __lt__ per comparison
    return found


def _parts(path: Path) -> tuple[str, ...]:
    return path.parts
