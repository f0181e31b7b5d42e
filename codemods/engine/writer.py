"""Atomic writes, the one way the tool replaces a file: a reader never sees half a file, a crash never
leaves one. `replace_atomically` is the rename itself (the cache and batch's state file use it);
`write_atomic` is how a migrated source file is written (read-only refused, mode and owner kept)."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import Callable


class ReadOnly(OSError):
    """The file is marked read-only; the rename that makes writes atomic would not have asked."""


def read_only(path: Path) -> bool:
    """Whether `path` is one its owner has marked read-only, or this user may not open for writing.

    The mode bits decide even for root (for whom `os.access` always says yes): `chmod 444` means
    "do not change this file", and a rename would otherwise replace it without asking.
    """
    return not stat.S_IMODE(path.stat().st_mode) & 0o222 or not os.access(path, os.W_OK)


def replace_atomically(
    target: Path, data: bytes, prefix: str, suffix: str = "", durable: bool = False, prepare: Callable[[str], None] | None = None
) -> None:
    """Put `data` in a temp file beside `target` (`prefix`/`suffix` name it), then rename it over
    `target`: a reader sees the old content or the new, never half of it.

    `durable` syncs the data to disk before the rename (a crash then leaves the old file or the
    new one, not an empty one). `prepare(temp_path)` runs before the rename (modes, owners). On
    any failure the temp file is removed and the error raised; `target` is untouched.
    """
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        if prepare is not None:
            prepare(tmp)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_atomic(path: Path, data: bytes) -> None:
    """Replace `path`'s content with `data` via a temp file in the same directory and a rename.

    A symlink is followed, so the link stays a link and its target gets the new content. The
    replacement keeps the file's mode, and its owner and group where this user may set them.
    A read-only file raises `ReadOnly` and is not touched.
    """
    target = path.resolve()
    if read_only(target):
        raise ReadOnly(f"{target} is read-only")
    info = target.stat()

    def keep_mode_and_owner(tmp: str) -> None:
        _keep_owner(tmp, info)
        os.chmod(tmp, stat.S_IMODE(info.st_mode))

    replace_atomically(target, data, prefix=f".{target.name}.", suffix=".tm-tmp", durable=True, prepare=keep_mode_and_owner)


def _keep_owner(tmp: str, info: os.stat_result) -> None:
    """Give the temp file the original's owner and group; failing that, its group; else neither.

    (A user who is not root may only give a file a group they belong to.)"""
    if not hasattr(os, "chown"):  # pragma: no cover - Windows
        return
    for uid, gid in ((info.st_uid, info.st_gid), (-1, info.st_gid)):
        try:
            os.chown(tmp, uid, gid)
            return
        except OSError:
            continue
