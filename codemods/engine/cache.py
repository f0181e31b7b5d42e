"""Per-file result cache: a file whose bytes, options and tool are unchanged is not parsed again.

Where: `.torch-migrate-cache/` in the target's root (the directory of its torch-migrate config,
else the first path given), like `.ruff_cache`/`.mypy_cache`: it lives and dies with the project,
a batch run over many clones does not grow one shared directory forever, `verify` and discovery
skip it (SKIP_DIRS), and a `.gitignore` inside keeps it out of `git add -A`. `$TORCH_MIGRATE_CACHE_DIR`
overrides the place (read-only checkouts, CI caches); `--no-cache` bypasses it.

Key: a MAC under this user's secret of the cache format, the tool version and a digest of the
tool's own source and data files (so an edited codemod never serves stale results, even at the
same version), the file's display path (findings and diffs name it; repo facts are keyed by it),
the selected codes in order, the device name, the repo facts when a selected codemod reads them,
and the file's bytes.
The repo facts have entries of their own (under facts/): the facts of an exact set of files, and
each file's parts of them, one per collector (helpers/facts/), keyed by its path and digest
(engine/cache_facts.py).
The mode is not in the key: the entry holds the migrated text, so a `--diff` run warms the cache
for a later write run, which still writes the file.

Trust (engine/cache_trust.py): a cache may only make a run faster. Keys and entries are signed
with this user's secret, so a repository can neither forge nor alter one; a folder is used only
when it holds the marker this tool signed when making it, and is no symbolic link; otherwise
the run goes uncached with one warning (`take_notices`). An entry's migrated text and diff must
match the digests signed with it, and a migrated text must compile (the output guard's test), or
the entry is a miss and the file is migrated afresh. A cache another process holds locked is
given up after a short wait (`_BUSY_SECONDS`), with a warning, never waited on for long.

Storage: one SQLite database (`v3.sqlite3`, write-ahead log), a row per entry (a file per entry
cost 50-500 microseconds to create on this ext4, an SQLite row 4-20). Each process opens its own
connection when it first needs one (a connection never crosses a fork), each entry is its own
transaction, and concurrent writers (pool workers) wait briefly on SQLite's lock.
Entries are JSON text (never pickle: a cache is input, and input is never executed). Anything
wrong with an entry — truncated, not JSON, wrong shape, another key, not signed — makes it a miss, and so
does a database that cannot be read; a database that is not one is replaced; a cache that
cannot be written is silently dropped for the rest of the run.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sqlite3
from functools import lru_cache
from pathlib import Path
from typing import Iterator, Sequence

from codemods.engine import cache_trust
from codemods.engine.cache_facts import FactsEntries, _facts_digest
from codemods.engine.cache_facts import _known_digests, _sorted_digest, _values  # noqa: F401  (tests read them)
from codemods.engine.cache_trust import Untrusted, keyed, notice, sign
from codemods.engine.cache_trust import refused, take_notices  # noqa: F401  (re-exported: the run's, api.py)
from codemods.engine.outcome import FileOutcome
from codemods.helpers.facts import RepoFacts

DIRNAME = ".torch-migrate-cache"
ENV = "TORCH_MIGRATE_CACHE_DIR"
# 1: a JSON file per entry; 2: rows of one SQLite database; 3: keys and entries signed
FORMAT = 3
DATABASE = f"v{FORMAT}.sqlite3"
# value: the entry as JSON, with the digests of code and diff; mac: its signature; code and diff:
# a changed file's migrated text and diff, apart (a --diff lookup reads only the diff, where JSON
# would decode both), as UTF-8 bytes that keep a non-UTF-8 file name's escapes (surrogatepass)
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS entries"
    " (key TEXT PRIMARY KEY, kind TEXT NOT NULL, value TEXT NOT NULL, mac TEXT NOT NULL, code BLOB, diff BLOB)"
)
_RECORD = "SELECT value, mac FROM entries WHERE key = ?"
_WITH_TEXT = "SELECT value, mac, code, diff FROM entries WHERE key = ?"
_DIFF_ELSE_TEXT = "SELECT value, mac, CASE WHEN diff IS NULL THEN code END, diff FROM entries WHERE key = ?"
_TEXTS = ("code", "diff")  # the columns after mac, in the order both queries select them
# Pool workers write an entry in microseconds: a lock held longer is another process's, and a
# run waits this long for it once, then goes on uncached
_BUSY_SECONDS = 0.5
# Connections a forked process found open in its parent's Cache objects: kept, never used, never
# closed (closing one in the child could checkpoint and remove the write-ahead log the parent
# still writes to). A pool worker exits without finalizing them.
_INHERITED: list[sqlite3.Connection] = []


def default_dir(paths: Sequence[Path], config_source: Path | None = None) -> Path:
    """$TORCH_MIGRATE_CACHE_DIR, else `.torch-migrate-cache` in the config's or the first path's directory."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV]).expanduser()
    if config_source is not None:
        return config_source.parent / DIRNAME
    first = Path(paths[0]) if paths else Path(".")
    return (first if first.is_dir() else first.parent) / DIRNAME


def content_digest(data: bytes) -> bytes:
    """What every key (a file's entry, its facts parts, the whole facts) holds of a file's bytes."""
    return hashlib.sha256(data).digest()


@lru_cache(maxsize=1)
def tool_digest() -> str:
    """The tool version plus a digest of every source and data file of the `codemods` package."""
    from codemods import __version__

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    digest = hashlib.sha256(f"{FORMAT}:{__version__}".encode())
    for relative in sorted(_package_files(package)):
        digest.update(relative.encode() + b"\0")
        with open(os.path.join(package, relative), "rb") as handle:
            digest.update(handle.read())
    return digest.hexdigest()


def _package_files(package: str, folder: str = "") -> Iterator[str]:
    """The .py and .json files under `package` (not __pycache__), as relative POSIX paths
    (os.scandir: Path.rglob took 2.6 ms of every run's start, this 0.4)."""
    with os.scandir(os.path.join(package, folder)) as entries:
        for entry in entries:
            relative = f"{folder}/{entry.name}" if folder else entry.name
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__":
                    yield from _package_files(package, relative)
            elif entry.name.endswith((".py", ".json")):
                yield relative


def _checked(blob: bytes, digest: str) -> str:
    """A text column's bytes as text, when they are those whose digest was signed with the entry."""
    if hashlib.sha256(blob).hexdigest() != digest:
        raise ValueError("not the text signed")
    return blob.decode("utf-8", "surrogatepass")


def _busy(exc: sqlite3.Error) -> bool:
    """Whether SQLite gave up waiting for another connection's lock (SQLITE_BUSY 5, SQLITE_LOCKED 6)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF in (5, 6) if code is not None else "locked" in str(exc)


class Cache(FactsEntries):
    """A cache folder's entries: the files' (here) and the whole-repo facts' (`FactsEntries`)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.writable = True
        self.hits = 0
        self.misses = 0
        self.refused: str | None = None  # why this cache is not used: every read a miss, no write
        self._db: sqlite3.Connection | None = None
        self._pid = 0  # the process that opened _db
        self._absent = False  # no database yet: reads are misses until the first write creates one
        self._secret: bytes | None = None  # this user's (cache_trust.secret), read on first use
        self._macs: tuple[hashlib.blake2b, ...] = ()  # (keys', entries') MACs under it (_signers)

    @property
    def database(self) -> Path:
        return self.directory / DATABASE

    def _signers(self) -> tuple[hashlib.blake2b, ...]:
        """(the keys' MAC, the entries' MAC) under this user's secret, read on first use; without
        one, the cache is refused."""
        if self._secret is None:
            try:
                self._secret = cache_trust.secret()
            except Untrusted as exc:
                self._secret = b""
                self._give_up(str(exc))
            self._macs = (keyed(self._secret, b"key"), keyed(self._secret, b"entry"))
        return self._macs

    def _give_up(self, reason: str) -> None:
        self.refused, self.writable = reason, False
        notice(self.directory, reason)

    def _connection(self, create: bool) -> sqlite3.Connection | None:
        """This process's connection; None when there is no database to read (`create` False) or
        none can be opened, or the folder is not one to trust."""
        if self._db is not None and self._pid != os.getpid():
            _INHERITED.append(self._db)  # opened before a fork: the parent's (see _INHERITED)
            self._db, self._absent = None, False
        if self._db is not None or self.refused is not None or (self._absent and not create):
            return self._db
        try:
            self._signers()
            if self.refused is not None:
                return None
            if not cache_trust.usable(self.directory, self._secret):
                if not create:
                    self._absent = True
                    return None
                cache_trust.claim(self.directory, self._secret)
            if self.database.is_symlink():
                raise Untrusted(f"the result cache {self.directory} holds a symbolic link; not used, this run is uncached")
            if not create and not self.database.is_file():
                self._absent = True
                return None
            self._db = self._open(create)
        except Untrusted as exc:
            self._give_up(str(exc))
            return None
        except sqlite3.Error as exc:
            self._absent = True  # reads are misses from now on
            if _busy(exc):
                self._locked()
                return None
            # Exactly DatabaseError: the file is not a database, or a corrupt one (an unopenable
            # one raises OperationalError, and is never removed)
            if not (create and type(exc) is sqlite3.DatabaseError and self._remove_database()):
                return None
            try:
                self._db = self._open(create)
            except (sqlite3.Error, OSError):
                return None
        except OSError:
            self._absent = True
            return None
        self._pid, self._absent = os.getpid(), False
        return self._db

    def _locked(self) -> None:
        self._give_up(f"the result cache {self.directory} is locked by another process; this run is uncached")

    def _open(self, create: bool) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(self.database, timeout=_BUSY_SECONDS, isolation_level=None, check_same_thread=False)
            try:
                # WAL: readers never wait on the writer; NORMAL: a crash may lose the last
                # entries, never the database (a cache can afford that, not an fsync per entry)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.execute(_SCHEMA)
                # Another process holding the write lock is found here, once, rather than by every
                # write of the run waiting for it
                db.execute("BEGIN IMMEDIATE")
                db.execute("ROLLBACK")
            except BaseException:
                db.close()
                raise
        except sqlite3.OperationalError as exc:
            if create or _busy(exc):
                raise
            # A read-only cache (a CI cache restored read-only, a shared checkout): WAL needs a
            # writable folder, so read the database file as it stands
            db = sqlite3.connect(f"{self.database.resolve().as_uri()}?mode=ro&immutable=1", uri=True, check_same_thread=False)
            db.execute("SELECT 1 FROM entries LIMIT 1")
        return db

    def _remove_database(self) -> bool:
        try:
            for suffix in ("", "-wal", "-shm"):
                Path(str(self.database) + suffix).unlink(missing_ok=True)
        except OSError:
            return False
        return True

    def _failed(self, exc: sqlite3.Error) -> None:
        if _busy(exc):
            self._locked()

    def _read(self, key: str, query: str = _RECORD) -> tuple[dict, ...] | None:
        """The entry's record and the texts `query` selects, or None: missing, unreadable, not
        signed with this user's secret, not JSON, not this key's, or a text not the one signed."""
        db = self._connection(create=False)
        if db is None:
            return None
        try:
            row = db.execute(query, (key,)).fetchone()
        except sqlite3.Error as exc:
            self._failed(exc)
            return None
        try:
            # the key is 64 hex digits: key + value is one message only one way
            if row is None or not hmac.compare_digest(row[1], sign(self._macs[1], (key + row[0]).encode())):
                return None
            raw = json.loads(row[0])
            if raw["key"] != key:
                return None
            return (raw, *[None if blob is None else _checked(blob, raw[name]) for name, blob in zip(_TEXTS, row[2:])])
        except (ValueError, TypeError, KeyError):  # not text, not JSON, not a record, a text altered
            return None

    def entries(self, kind: str = "") -> dict[str, str]:
        """key -> stored text of every entry of this kind ("": the files'; "facts")."""
        db = self._connection(create=False)
        if db is None:
            return {}
        return dict(db.execute("SELECT key, value FROM entries WHERE kind = ?", (kind,)))

    def close(self) -> None:
        """Close this process's connection (a later use opens another, and checks the folder
        again). A connection left open is freed only by the cycle collector (sqlite3's statement
        cache refers back to it), and holds its lock until then: a Cache closes it when it goes."""
        if self._db is not None and self._pid == os.getpid():
            self._db.close()
        self._db = None
        if self.refused is not None:  # asked again on the next use: the secret, the folder, the lock
            self.refused, self.writable, self._secret = None, True, None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # at interpreter exit, or a connection already gone
            pass

    def key(
        self, content: bytes, display: str, codes: Sequence[str], device_name: str, facts: RepoFacts | None, target: str = ""
    ) -> str:
        """A file's entry key; `content` is `content_digest` of its bytes. Signed: a repository
        cannot compute the key of a file, so cannot plant an entry for one."""
        digest = self._signers()[0].copy()
        for part in (tool_digest(), display, ",".join(codes), device_name, _facts_digest(facts) if facts else "-", target):
            digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
        digest.update(content)
        return digest.hexdigest()

    def get(self, key: str, text: bool = True) -> FileOutcome | None:
        """The entry's outcome; without `text`, a changed file's migrated text only when the
        entry has no diff (a --diff or --check run needs the one or the other). A migrated text
        that does not compile is a miss, as fresh output that does not is never used."""
        found = self._read(key, _WITH_TEXT if text else _DIFF_ELSE_TEXT)
        try:
            outcome = FileOutcome.from_json(found[0]["outcome"], *found[1:]) if found is not None else None
        except Exception:  # a corrupt or foreign entry is a miss, never an error
            outcome = None
        if outcome is not None and outcome.code is not None:
            from codemods.engine.pipeline import compiles

            outcome = outcome if compiles(outcome.code) else None
        if outcome is None:
            self.misses += 1
            return None
        self.hits += 1
        return outcome

    def put(self, key: str, outcome: FileOutcome) -> None:
        self._write(key, {"key": key, "outcome": outcome.to_json()}, code=outcome.code, diff=outcome.diff)

    def _write(self, key: str, record: dict, kind: str = "", code: str | None = None, diff: str | None = None) -> None:
        """Store the record, signed, with the digests of the texts beside it."""
        if not self.writable:
            return
        try:
            texts = [text.encode("utf-8", "surrogatepass") if text is not None else None for text in (code, diff)]
            digests = {name: hashlib.sha256(blob).hexdigest() for name, blob in zip(_TEXTS, texts) if blob is not None}
            payload = json.dumps({**record, **digests}, separators=(",", ":"))
            db = self._connection(create=True)
            if db is None:
                raise OSError("no database")
            mac = sign(self._signers()[1], (key + payload).encode())
            db.execute("INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?)", (key, kind, payload, mac, *texts))
        except sqlite3.Error as exc:
            self._failed(exc)
            self.writable = False
        except (OSError, ValueError, TypeError):
            self.writable = False  # read-only tree, full disk, ...: run on without a cache
