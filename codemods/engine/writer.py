"""Atomic writes, the one way the tool replaces a file: a reader never sees half a file, a crash never
leaves one. `replace_atomically` is the rename itself (the cache and batch's state file use it);
`write_atomic` is how a migrated source file is written (read-only refused, mode and owner kept,
and only over the very file that was read: `Original`).

Temp files are named `.<name>.<pid>.<8 hex>.tm-tmp`: one whose process is gone was left by a run
that was killed, and `sweep_temps` removes it on the next run.
"""

from __future__ import annotations

import errno
import os
import re
import signal
import stat
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable, Iterator, NamedTuple

from codemods.engine import interrupt

TEMP_SUFFIX = ".tm-tmp"
_TEMP_NAME = re.compile(r"\.(?P<name>.+)\.(?P<pid>[0-9]+)\.[0-9a-f]{8}" + re.escape(TEMP_SUFFIX))
_RENAME_EXCHANGE = 2  # linux/fs.h
_DIR_FD = {os.open, os.rename, os.unlink, os.stat} <= os.supports_dir_fd  # (os.replace is renameat too)


class ReadOnly(OSError):
    """The file is marked read-only; the rename that makes writes atomic would not have asked."""


class Changed(OSError):
    """The file is no longer the one that was read (edited, replaced, made a link): it is left as it is."""


class Identity(NamedTuple):
    """Which file a path named when it was read."""

    device: int
    inode: int
    link: bool  # the path itself was a symlink (discovery keeps only links inside the tree)

    @classmethod
    def of(cls, path: Path) -> Identity:
        """Taken just before the file is read: whatever happens after shows as another file or
        other bytes when the file is written."""
        info = os.lstat(path)
        link = stat.S_ISLNK(info.st_mode)
        if link:
            info = os.stat(path)
        return cls(info.st_dev, info.st_ino, link)


@dataclass(frozen=True)
class Original:
    """A file as it was read: its identity and its bytes. Only that file is ever replaced."""

    identity: Identity
    data: bytes


def read_only(path: Path) -> bool:
    """Whether `path` is one its owner has marked read-only, or this user may not open for writing.

    The mode bits decide even for root (for whom `os.access` always says yes): `chmod 444` means
    "do not change this file", and a rename would otherwise replace it without asking.
    """
    return not stat.S_IMODE(path.stat().st_mode) & 0o222 or not os.access(path, os.W_OK)


def replace_atomically(
    target: Path,
    data: bytes,
    prefix: str,
    suffix: str = "",
    durable: bool = False,
    prepare: Callable[[str], None] | None = None,
    expect: Original | None = None,
) -> None:
    """Put `data` in a temp file beside `target` (`prefix`/`suffix` name it), then rename it over
    `target`: a reader sees the old content or the new, never half of it.

    `durable` syncs the data to disk before the rename (a crash then leaves the old file or the
    new one, not an empty one). `prepare(temp_path)` runs before the rename (modes, owners). With
    `expect`, `target` is replaced only while it is still that file with those bytes, else
    `Changed` is raised. On any failure the temp file is removed and the error raised; `target`
    is untouched.
    """
    # Every name is looked up in the folder opened here: a folder swapped for a link meanwhile
    # cannot send the write elsewhere.
    folder = os.open(target.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)) if _DIR_FD else None
    name = target.name if folder is not None else str(target)
    tmp = None
    try:
        fd, tmp = _create(folder, target, prefix, suffix)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        if prepare is not None:
            prepare(str(target.parent / os.path.basename(tmp)))
        if expect is None:
            os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
            tmp = None
            return
        interrupt.before_write()  # a worker told to stop, or whose run is gone, writes nothing more
        with _signals_held():  # never stopped between the swap and its check: that would lose the user's file
            tmp, owned = None, tmp
            _swap_if_unchanged(folder, owned, name, expect)
            interrupt.wrote()
    finally:
        if tmp is not None:
            _remove(folder, tmp)
        if folder is not None:
            os.close(folder)


def write_atomic(path: Path, data: bytes, original: Original | None = None) -> None:
    """Replace `path`'s content with `data` via a temp file in the same directory and a rename.

    A symlink is followed, so the link stays a link and its target gets the new content. The
    replacement keeps the file's mode, and its owner and group where this user may set them.
    A read-only file raises `ReadOnly` and is not touched. With `original` (the file as it was
    read), a file that is no longer that one raises `Changed` and is not touched: edited since,
    replaced, or a link now where a file was read (never written through).
    """
    if original is not None and not original.identity.link and os.path.islink(path):
        raise Changed(f"{path} became a link")
    target = path.resolve()
    if read_only(target):
        raise ReadOnly(f"{target} is read-only")
    info = target.stat()

    def keep_mode_and_owner(tmp: str) -> None:
        _keep_owner(tmp, info)
        os.chmod(tmp, stat.S_IMODE(info.st_mode))

    prefix = f".{target.name}.{os.getpid()}."
    replace_atomically(target, data, prefix, TEMP_SUFFIX, durable=True, prepare=keep_mode_and_owner, expect=original)


def write_new(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Create `path` with `data`, whole or not at all, never replacing anything: a complete temp
    file beside it is linked to the name, which fails with FileExistsError if the name is taken."""
    fd, tmp = _create(None, path, f".{path.name}.{os.getpid()}.", TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.link(tmp, path)
    finally:
        _remove(None, tmp)


def sweep_temps(folders: Iterable[Path]) -> list[Path]:
    """Remove, from `folders`, the temp files of writes whose process is gone (a run killed
    mid-write); return them. Another name, or a live process's temp file, is left alone."""
    removed = []
    for folder in folders:
        try:
            entries = [entry.name for entry in os.scandir(folder) if entry.name.endswith(TEMP_SUFFIX)]
        except OSError:
            continue
        for entry in entries:
            found = _TEMP_NAME.fullmatch(entry)
            if found is None or _alive(int(found["pid"])):
                continue
            try:
                os.unlink(folder / entry)
            except OSError:
                continue
            removed.append(folder / entry)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def _create(folder: int | None, target: Path, prefix: str, suffix: str) -> tuple[int, str]:
    """A new temp file beside `target`: (its descriptor, its name in `folder`, else its path)."""
    for _ in range(100):
        name = f"{prefix}{os.urandom(4).hex()}{suffix}"
        where = name if folder is not None else str(target.parent / name)
        try:
            return os.open(where, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=folder), where
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temp file name", str(target.parent))


def _swap_if_unchanged(folder: int | None, tmp: str, name: str, expect: Original) -> None:
    """Put `tmp` in `name`'s place if `name` is still `expect`'s file and bytes; else `Changed`.

    Where the system can swap two names in one step, the check is made again on the file swapped
    out, and a file that changed in between is swapped back: nothing saved meanwhile is lost.
    `tmp` is removed in every case but a swap back that fails (it then holds the other file)."""
    current = None
    try:
        current = _open_unchanged(folder, name, expect)
        swapped = _exchange(folder, tmp, name)
        if not swapped:
            os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        _remove(folder, tmp)
        if current is not None:
            os.close(current)
        raise
    try:
        if not swapped:
            return
        out = os.stat(tmp, dir_fd=folder, follow_symlinks=False)
        os.lseek(current, 0, os.SEEK_SET)
        if (out.st_dev, out.st_ino) == expect.identity[:2] and _read(current) == expect.data:
            _remove(folder, tmp)
            return
        try:
            _exchange(folder, tmp, name)
        except OSError as exc:
            raise Changed(f"{name} changed while it was written; that version is now {tmp} ({exc})") from None
        _remove(folder, tmp)
        raise Changed(f"{name} changed while it was written")
    finally:
        os.close(current)


def _remove(folder: int | None, name: str) -> None:
    try:
        os.unlink(name, dir_fd=folder)
    except OSError:
        pass


def _open_unchanged(folder: int | None, name: str, expect: Original) -> int:
    """`name` opened for reading, if it is still `expect`'s file with its bytes; else `Changed`."""
    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0), dir_fd=folder)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOENT, errno.EMLINK):  # a link now, or gone
            raise Changed(f"{name} was replaced") from None
        raise
    info = os.fstat(fd)
    if (info.st_dev, info.st_ino) != expect.identity[:2] or info.st_size != len(expect.data) or _read(fd) != expect.data:
        os.close(fd)
        raise Changed(f"{name} changed since it was read")
    return fd


def _read(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _exchange(folder: int | None, a: str, b: str) -> bool:
    """Swap the names `a` and `b` in one step (Linux's renameat2): False where the system or the
    file system cannot, and the caller renames instead."""
    function = _renameat2()
    if function is None or folder is None:
        return False
    import ctypes

    if function(folder, os.fsencode(a), folder, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), b)


@lru_cache(maxsize=1)
def _renameat2():
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # a libc without it (glibc before 2.28)
        return None
    function.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    return function


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait while inside (in this thread): a stop lands before the swap or after
    its check, never between."""
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - Windows
        yield
        return
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


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
