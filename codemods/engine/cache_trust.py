"""Whom the result cache trusts: this user's own secret, and the cache folders it made itself.

A cache folder sits in the target repository, and what a repository holds is input: a
`.torch-migrate-cache/` committed with it (or planted beside it) must never decide what a run
writes. So every key and every entry is a MAC (keyed BLAKE2b) under a secret made once per user,
outside any repository (`key_file()`, mode 0600): a repository can neither compute the key of a
file nor sign an entry, and an entry altered by one bit no longer verifies. A folder is used only when it
holds a marker signed with that secret (written when this tool made the folder), is not a
symbolic link (which would send the cache's writes elsewhere), and is this user's, writable by
no other (who could put links where SQLite writes next); any other folder is left as it is and
the run goes uncached, saying why once.

Not checked: whether git tracks the folder. A marker no repository can forge already refuses a
committed cache, and asking git would cost a process start on every warm run. A cache made
before entries were signed has no marker: it is refused the same way, and the warning says to
delete it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import shutil
import stat
import tempfile
from functools import lru_cache
from pathlib import Path

SECRET_BYTES = 32
MARKER = "torch-migrate.marker"
GITIGNORE = "# created by torch-migrate\n*\n"
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# torch-migrate result cache\n"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)  # nor wait on a FIFO put there


class Untrusted(Exception):
    """Why a cache is not used: one line for the run's warnings."""


# Why a cache folder is not used, by folder, as this process found it: each said once per run (the
# run takes them, `take_notices`), and a refused folder is not handed to the pipeline (`refused`).
_notices: dict[str, str] = {}


def notice(directory: str | Path, reason: str) -> None:
    _notices.setdefault(str(directory), reason)


def take_notices() -> tuple[str, ...]:
    """The warnings of the caches given up since the last call, one per folder."""
    found = tuple(_notices.values())
    _notices.clear()
    return found


def refused(directory: str | Path) -> bool:
    return str(directory) in _notices


def key_file() -> Path:
    """Where this user's cache secret lives: the user's config folder, outside any repository."""
    if os.name == "nt":
        base = os.environ.get("APPDATA") or os.path.join(os.path.expanduser("~"), "AppData", "Roaming")
    else:
        base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "torch-migrate" / "cache-key"


def secret() -> bytes:
    """This user's secret, made on first use; raises Untrusted when it cannot be read or made,
    or when its file is not private to this user (anyone who can read it can forge entries)."""
    return _secret(str(key_file()))


@lru_cache(maxsize=4)
def _secret(path: str) -> bytes:
    try:
        try:
            return _read_secret(path)
        except FileNotFoundError:
            _make_secret(Path(path))
            return _read_secret(path)
    except OSError as exc:
        raise Untrusted(f"cannot read or make the cache key {path} ({exc.strerror or exc}); this run is uncached") from None


def _read_secret(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    try:
        info = os.fstat(fd)
        foreign = hasattr(os, "getuid") and (info.st_uid != os.getuid() or info.st_mode & 0o077)
        data = os.read(fd, SECRET_BYTES + 1) if stat.S_ISREG(info.st_mode) and not foreign else b""
    finally:
        os.close(fd)
    if len(data) != SECRET_BYTES:
        raise Untrusted(f"the cache key {path} is not a private file of this user's (mode 0600); this run is uncached")
    return data


def _make_secret(path: Path) -> None:
    """Write a new secret where none is: made apart and linked into place, so that a process
    racing this one reads either no file or the whole of one, and both keep the first."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
    try:  # whatever fails (a full disk, a file-size limit), the half-made file goes
        try:
            written = os.write(fd, secrets.token_bytes(SECRET_BYTES))
        finally:
            os.close(fd)
        if written != SECRET_BYTES:
            raise OSError(f"wrote {written} of {SECRET_BYTES} bytes")
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass  # another process made it first: theirs is the secret
        except OSError:  # a file system without hard links
            if not path.exists():
                os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def keyed(key: bytes, purpose: bytes) -> hashlib.blake2b:
    """A MAC under `key` for one `purpose` (keys, entries, the marker), to `copy()` per message:
    keyed BLAKE2b, a MAC by design, and one hash where an HMAC is two (a warm run makes two MACs
    per file)."""
    return hashlib.blake2b(key=key, digest_size=32, person=purpose)


def sign(mac: hashlib.blake2b, message: bytes) -> str:
    mac = mac.copy()
    mac.update(message)
    return mac.hexdigest()


def _marker_text(key: bytes) -> bytes:
    return f"torch-migrate result cache\n{sign(keyed(key, b'marker'), b'')}\n".encode()


def usable(directory: Path, key: bytes) -> bool:
    """True when `directory` is a cache folder this user's torch-migrate made; False when it is
    absent or empty (nothing to read; `claim` makes it one); raises Untrusted otherwise."""
    try:
        info = directory.lstat()
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(info.st_mode):
        raise Untrusted(f"the result cache {directory} is a symbolic link; not used, this run is uncached")
    if not stat.S_ISDIR(info.st_mode):
        raise Untrusted(f"the result cache {directory} is not a folder; not used, this run is uncached")
    if hasattr(os, "getuid") and (info.st_uid != os.getuid() or info.st_mode & 0o002):
        # Whoever else can write in it can put links where SQLite writes (its -wal, -shm files):
        # an empty folder of theirs is not claimed, and a folder this tool made is 0700. (Group
        # write is let through: a umask of 002 gives it to every folder a user makes by hand.)
        raise Untrusted(
            f"the result cache {directory} is not a folder only this user can write in; not used, this run is uncached"
        )
    try:
        fd = os.open(directory / MARKER, os.O_RDONLY | _NOFOLLOW)
    except FileNotFoundError:
        with os.scandir(directory) as entries:
            if next(entries, None) is None:
                return False
        raise _foreign(directory) from None
    try:
        found = os.read(fd, 256) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    finally:
        os.close(fd)
    if not hmac.compare_digest(found, _marker_text(key)):
        raise _foreign(directory)
    return True


def _foreign(directory: Path) -> Untrusted:
    return Untrusted(
        f"the result cache {directory} was not made by torch-migrate for this user (it may have come with"
        " the repository); not used, this run is uncached (delete it to let torch-migrate make its own)"
    )


def claim(directory: Path, key: bytes) -> None:
    """Make `directory` a cache folder of this user's: an empty one is marked where it is, an
    absent one is made whole apart and renamed into place (a process racing this one never
    sees a folder that holds files but no marker yet)."""
    if directory.is_dir():
        _fill(directory, key)
        return
    directory.parent.mkdir(parents=True, exist_ok=True)
    made = Path(tempfile.mkdtemp(prefix=f"{directory.name}-", dir=directory.parent))
    try:
        _fill(made, key)
        os.rename(made, directory)
    except OSError:
        if not directory.is_dir():
            raise
    finally:
        if made.exists():
            shutil.rmtree(made, ignore_errors=True)  # another process's folder got there first


def _fill(directory: Path, key: bytes) -> None:
    (directory / MARKER).write_bytes(_marker_text(key))
    # Keep the cache out of `git add -A` and of backups, like other tools' caches.
    (directory / ".gitignore").write_text(GITIGNORE)
    (directory / "CACHEDIR.TAG").write_text(_TAG)
