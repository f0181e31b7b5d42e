"""Per-file result cache: a file whose bytes, options and tool are unchanged is not parsed again.

Where: `.torch-migrate-cache/` in the target's root (the directory of its torch-migrate config,
else the first path given), like `.ruff_cache`/`.mypy_cache`: it lives and dies with the project,
a batch run over many clones does not grow one shared directory forever, `verify` and discovery
skip it (SKIP_DIRS), and a `.gitignore` inside keeps it out of `git add -A`. `$TORCH_MIGRATE_CACHE_DIR`
overrides the place (read-only checkouts, CI caches); `--no-cache` bypasses it.

Key: sha256 of the cache format, the tool version and a digest of the tool's own source and data
files (so an edited codemod never serves stale results, even at the same version), the file's
display path (findings and diffs name it; repo facts are keyed by it), the selected codes in
order, the device name, the repo facts when a selected codemod reads them, and the file's bytes.
The repo facts have entries of their own (under facts/): the facts of an exact set of files, and
each file's parts of them, one per collector (helpers/facts/), keyed by its path and digest.
The mode is not in the key: the entry holds the migrated text, so a `--diff` run warms the cache
for a later write run, which still writes the file.

Storage: one SQLite database (`v2.sqlite3`, write-ahead log), a row per entry. A file per entry
cost half a millisecond to create on ext4 (mkdir, mkstemp, rename): 8% of a cold corpus run and
of a small repository's, where an SQLite row costs a few tens of microseconds. Each process
opens its own connection when it first needs one (a connection never crosses a fork), each
entry is its own transaction, and concurrent writers (pool workers) wait on SQLite's lock.
Entries are JSON text (never pickle: a cache is input, and input is never executed). Anything
wrong with an entry — truncated, not JSON, wrong shape, another key — makes it a miss, and so
does a database that cannot be read; a database that is not one is replaced; a cache that
cannot be written is silently dropped for the rest of the run.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from codemods.helpers.facts import RepoFacts
from codemods.results import Finding, Problem, Status

DIRNAME = ".torch-migrate-cache"
ENV = "TORCH_MIGRATE_CACHE_DIR"
FORMAT = 2  # 1: a JSON file per entry; 2: rows of one SQLite database
DATABASE = f"v{FORMAT}.sqlite3"
_SCHEMA = "CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, kind TEXT NOT NULL, value TEXT NOT NULL) WITHOUT ROWID"
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# torch-migrate result cache\n"
# Connections a forked process found open in its parent's Cache objects: kept, never used, never
# closed (closing one in the child could checkpoint and remove the write-ahead log the parent
# still writes to). A pool worker exits without finalizing them.
_INHERITED: list[sqlite3.Connection] = []


@dataclass(frozen=True)
class FileOutcome:
    """What the pipeline made of one file's bytes: everything a FileResult needs (the diff once
    a --diff or --check run made it)."""

    status: Status
    rewrites: dict[str, int]
    findings: tuple[Finding, ...] = ()
    problem: Problem | None = None
    notes: tuple[str, ...] = ()
    code: str | None = None  # the migrated text when status is CHANGED
    diff: str | None = None  # its unified diff (the key holds the display path it names)

    def to_json(self) -> dict:
        return {
            "status": self.status.value,
            "rewrites": self.rewrites,
            "findings": [f.to_dict() for f in self.findings],
            "problem": self.problem.to_dict() if self.problem else None,
            "notes": list(self.notes),
            "code": self.code,
            "diff": self.diff,
        }

    @classmethod
    def from_json(cls, raw: dict) -> FileOutcome:
        status = Status(raw["status"])
        rewrites = {str(k): int(v) for k, v in raw["rewrites"].items()}
        findings = tuple(Finding(**f) for f in raw["findings"])
        problem = Problem(**raw["problem"]) if raw["problem"] is not None else None
        notes = tuple(str(n) for n in raw["notes"])
        code, diff = raw["code"], raw.get("diff")
        if (code is None) == (status is Status.CHANGED) or not (code is None or isinstance(code, str)):
            raise ValueError("changed entries carry the migrated text, others none")
        if not (diff is None or (isinstance(diff, str) and code is not None)):
            raise ValueError("a diff belongs to a changed entry")
        return cls(status, rewrites, findings, problem, notes, code, diff)


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

    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256(f"{FORMAT}:{__version__}".encode())
    for path in sorted(package.rglob("*")):
        if path.suffix in (".py", ".json") and "__pycache__" not in path.parts:
            digest.update(path.relative_to(package).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()


@lru_cache(maxsize=8)
def _facts_digest(facts: RepoFacts) -> str:
    parts = [f"{name}={','.join(sorted(value))}" for name, value in sorted(asdict(facts).items())]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


class Cache:
    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.writable = True
        self.hits = 0
        self.misses = 0
        self._db: sqlite3.Connection | None = None
        self._pid = 0  # the process that opened _db
        self._absent = False  # no database yet: reads are misses until the first write creates one

    @property
    def database(self) -> Path:
        return self.directory / DATABASE

    def _connection(self, create: bool) -> sqlite3.Connection | None:
        """This process's connection; None when there is no database to read (`create` False) or
        none can be opened."""
        if self._db is not None and self._pid != os.getpid():
            _INHERITED.append(self._db)  # opened before a fork: the parent's (see _INHERITED)
            self._db, self._absent = None, False
        if self._db is not None or (self._absent and not create):
            return self._db
        try:
            if create:
                self._create_directory()
            elif not self.database.is_file():
                self._absent = True
                return None
            self._db = self._open(create)
        except sqlite3.Error as exc:
            self._absent = True  # reads are misses from now on
            # Exactly DatabaseError: the file is not a database, or a corrupt one (a locked or
            # unopenable one raises OperationalError, and is never removed)
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

    def _open(self, create: bool) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(self.database, timeout=30, isolation_level=None, check_same_thread=False)
            try:
                # WAL: readers never wait on the writer; NORMAL: a crash may lose the last
                # entries, never the database (a cache can afford that, not an fsync per entry)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.execute(_SCHEMA)
            except BaseException:
                db.close()
                raise
        except sqlite3.OperationalError:
            if create:
                raise
            # A read-only cache (a CI cache restored read-only, a shared checkout): WAL needs a
            # writable folder, so read the database file as it stands
            db = sqlite3.connect(f"{self.database.resolve().as_uri()}?mode=ro&immutable=1", uri=True, check_same_thread=False)
            db.execute("SELECT 1 FROM entries LIMIT 1")
        return db

    def _create_directory(self) -> None:
        if self.directory.exists():
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        # Keep the cache out of `git add -A` and of backups, like other tools' caches.
        (self.directory / ".gitignore").write_text("# created by torch-migrate\n*\n")
        (self.directory / "CACHEDIR.TAG").write_text(_TAG)

    def _remove_database(self) -> bool:
        try:
            for suffix in ("", "-wal", "-shm"):
                Path(str(self.database) + suffix).unlink(missing_ok=True)
        except OSError:
            return False
        return True

    def _read(self, key: str) -> dict | None:
        """The entry's record, or None: missing, unreadable, not JSON, or not this key's."""
        db = self._connection(create=False)
        if db is None:
            return None
        try:
            row = db.execute("SELECT value FROM entries WHERE key = ?", (key,)).fetchone()
            raw = json.loads(row[0]) if row is not None else None
        except (sqlite3.Error, ValueError, TypeError):
            return None
        return raw if isinstance(raw, dict) and raw.get("key") == key else None

    def entries(self, kind: str = "") -> dict[str, str]:
        """key -> stored text of every entry of this kind ("": the files'; "facts")."""
        db = self._connection(create=False)
        if db is None:
            return {}
        return dict(db.execute("SELECT key, value FROM entries WHERE kind = ?", (kind,)))

    def close(self) -> None:
        """Close this process's connection (a later use opens another). A connection left open
        is freed only by the cycle collector (sqlite3's statement cache refers back to it), and
        holds its lock until then: a Cache closes it when it goes."""
        if self._db is not None and self._pid == os.getpid():
            self._db.close()
        self._db = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # at interpreter exit, or a connection already gone
            pass

    def key(
        self, content: bytes, display: str, codes: Sequence[str], device_name: str, facts: RepoFacts | None, target: str = ""
    ) -> str:
        """A file's entry key; `content` is `content_digest` of its bytes."""
        digest = hashlib.sha256()
        for part in (tool_digest(), display, ",".join(codes), device_name, _facts_digest(facts) if facts else "-", target):
            digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(content)
        return digest.hexdigest()

    def get(self, key: str) -> FileOutcome | None:
        raw = self._read(key)
        try:
            outcome = FileOutcome.from_json(raw["outcome"]) if raw is not None else None
        except Exception:  # a corrupt or foreign entry is a miss, never an error
            outcome = None
        if outcome is None:
            self.misses += 1
            return None
        self.hits += 1
        return outcome

    def put(self, key: str, outcome: FileOutcome) -> None:
        self._write(key, {"key": key, "outcome": outcome.to_json()})

    def _write(self, key: str, record: dict, kind: str = "") -> None:
        if not self.writable:
            return
        try:
            payload = json.dumps(record, separators=(",", ":"))
            db = self._connection(create=True)
            if db is None:
                raise OSError("no database")
            db.execute("INSERT OR REPLACE INTO entries VALUES (?, ?, ?)", (key, kind, payload))
        except (sqlite3.Error, OSError, ValueError, TypeError):
            self.writable = False  # read-only tree, full disk, ...: run on without a cache

    # -- the whole-repo facts (api._facts) ---------------------------------------------------
    # Two kinds of entry, both under facts/: the facts of an exact set of files and contents (a
    # warm run reads one entry), and each file's parts, one per collector (after an edit, only
    # the edited files are read again).

    def facts_key(self, files: Sequence[tuple[str, bytes]], collectors: Sequence[str] = ()) -> str:
        """The key of the facts of these files: (path, content_digest of its bytes) each."""
        digest = hashlib.sha256(f"facts\0{tool_digest()}\0{','.join(collectors)}\0".encode())
        for path, content in files:
            digest.update(path.encode("utf-8", "surrogateescape") + b"\0" + content)
        return digest.hexdigest()

    def get_facts(self, key: str) -> RepoFacts | None:
        try:
            raw = self._read(key)
            fields = {name: frozenset(str(v) for v in values) for name, values in raw["facts"].items()}
            return RepoFacts(**fields)
        except Exception:  # missing or corrupt: recompute
            return None

    def put_facts(self, key: str, facts: RepoFacts) -> None:
        values = asdict(facts).values()
        if not all(isinstance(v, frozenset) and all(isinstance(x, str) for x in v) for v in values):
            return  # a fact that is not a set of names: not cached (recomputed each run)
        self._write(key, {"key": key, "facts": {k: sorted(v) for k, v in asdict(facts).items()}}, "facts")

    def parts_key(self, path: str, content: bytes) -> str:
        """The key of one file's collector parts: the tool, the path (a collector may read it),
        the content_digest of the file's bytes."""
        digest = hashlib.sha256(f"parts\0{tool_digest()}\0".encode())
        digest.update(path.encode("utf-8", "surrogateescape") + b"\0" + content)
        return digest.hexdigest()

    def get_parts(self, key: str, collectors: Sequence[str]) -> dict | None:
        """The file's part for each collector named, or None unless the entry holds all of them."""
        parts = self._parts(key)
        if parts is None or not all(name in parts for name in collectors):
            return None  # missing, corrupt, or made for other collectors: recompute
        return {name: parts[name] for name in collectors}

    def put_parts(self, key: str, parts: dict) -> None:
        """Store the file's parts beside those other collectors left in its entry."""
        self._write(key, {"key": key, "parts": {**(self._parts(key) or {}), **parts}}, "facts")

    def _parts(self, key: str) -> dict | None:
        raw = self._read(key)
        parts = raw.get("parts") if raw is not None else None
        return parts if isinstance(parts, dict) else None  # missing or corrupt: a miss
