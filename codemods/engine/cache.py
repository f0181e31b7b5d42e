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

Entries are JSON (never pickle: a cache file is input, and input is never executed), written
atomically. Anything wrong with an entry — unreadable, truncated, not JSON, wrong shape, another
key — makes it a miss; a cache that cannot be written is silently dropped for the rest of the run.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from codemods.engine.writer import replace_atomically
from codemods.helpers.facts import RepoFacts
from codemods.results import Finding, Problem, Status

DIRNAME = ".torch-migrate-cache"
ENV = "TORCH_MIGRATE_CACHE_DIR"
FORMAT = 1


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

    def key(
        self, content: bytes, display: str, codes: Sequence[str], device_name: str, facts: RepoFacts | None, target: str = ""
    ) -> str:
        """A file's entry key; `content` is `content_digest` of its bytes."""
        digest = hashlib.sha256()
        for part in (tool_digest(), display, ",".join(codes), device_name, _facts_digest(facts) if facts else "-", target):
            digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(content)
        return digest.hexdigest()

    def _path(self, key: str, kind: str = "") -> Path:
        return self.directory / f"v{FORMAT}" / (kind or key[:2]) / f"{key}.json"

    def get(self, key: str) -> FileOutcome | None:
        try:
            raw = json.loads(self._path(key).read_bytes())
            if not isinstance(raw, dict) or raw.get("key") != key:
                raise ValueError("not this key's entry")
            outcome = FileOutcome.from_json(raw["outcome"])
        except FileNotFoundError:
            self.misses += 1
            return None
        except Exception:  # a corrupt or foreign entry is a miss, never an error
            self.misses += 1
            return None
        self.hits += 1
        return outcome

    def put(self, key: str, outcome: FileOutcome) -> None:
        self._write(key, {"key": key, "outcome": outcome.to_json()})

    def _write(self, key: str, record: dict, kind: str = "") -> None:
        if not self.writable:
            return
        path = self._path(key, kind)
        try:
            if not self.directory.exists():
                self.directory.mkdir(parents=True, exist_ok=True)
                # Keep the cache out of `git add -A` and of backups, like other tools' caches.
                (self.directory / ".gitignore").write_text("# created by torch-migrate\n*\n")
                (self.directory / "CACHEDIR.TAG").write_text(
                    "Signature: 8a477f597d28d172789f06886806bc55\n# torch-migrate result cache\n"
                )
            path.parent.mkdir(parents=True, exist_ok=True)
            payload = json.dumps(record, separators=(",", ":"))
            replace_atomically(path, payload.encode("utf-8", "surrogateescape"), prefix=".tmp-")
        except (OSError, ValueError, TypeError):
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
            raw = json.loads(self._path(key, "facts").read_bytes())
            if not isinstance(raw, dict) or raw.get("key") != key:
                raise ValueError("not this key's entry")
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
        try:
            raw = json.loads(self._path(key, "facts").read_bytes())
            if not isinstance(raw, dict) or raw.get("key") != key or not isinstance(raw.get("parts"), dict):
                raise ValueError("not this key's entry")
            return raw["parts"]
        except Exception:  # missing or corrupt: a miss
            return None
