"""The result cache's entries of whole-repo facts (api._facts), a part of `cache.Cache`.

Two kinds of entry, both under facts/: the facts of an exact set of files and contents (a warm run
reads one entry), and each file's parts, one per collector (after an edit, only the edited files are
read again).

The keys and entries are the files' kind: MACs under this user's secret (engine/cache_trust.py).
"""

from __future__ import annotations

import hashlib
from dataclasses import fields
from functools import lru_cache
from typing import Sequence

from codemods.helpers.facts import RepoFacts


def _values(facts: RepoFacts) -> dict:
    """Each fact by name, as it stands (dataclasses.asdict deep-copies every set: 30 ms for the
    corpus's facts, a tenth of a warm run)."""
    return {field.name: getattr(facts, field.name) for field in fields(facts)}


@lru_cache(maxsize=8)
def _facts_digest(facts: RepoFacts) -> str:
    return _known_digests.get(facts) or _sorted_digest({name: sorted(value) for name, value in _values(facts).items()})


def _sorted_digest(facts: dict[str, list[str]]) -> str:
    """The digest of facts whose every list is sorted."""
    parts = [f"{name}={','.join(values)}" for name, values in sorted(facts.items())]
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


# The digests of the facts a cache entry gave, made from its sorted lists as they were read (a
# warm run otherwise sorted every fact again: 27,000 names on the corpus).
_known_digests: dict[RepoFacts, str] = {}


class FactsEntries:
    """`Cache`'s facts entries: keyed and signed as its files' are (`_signers`, `_read`, `_write`)."""

    def facts_key(self, files: Sequence[tuple[str, bytes]], collectors: Sequence[str] = ()) -> str:
        """The key of the facts of these files: (path, content_digest of its bytes) each."""
        from codemods.engine.cache import tool_digest  # not at import: cache imports this module

        digest = self._signers()[0].copy()
        digest.update(f"facts\0{tool_digest()}\0{','.join(collectors)}\0".encode())
        for path, content in files:
            digest.update(path.encode("utf-8", "surrogatepass") + b"\0" + content)
        return digest.hexdigest()

    def get_facts(self, key: str) -> RepoFacts | None:
        try:
            record = self._read(key)[0]
            stored, digest = record["facts"], record["digest"]
            if not all(set(map(type, values)) <= {str} for values in stored.values()) or not isinstance(digest, str):
                return None
            facts = RepoFacts(**{name: frozenset(values) for name, values in stored.items()})
        except Exception:  # missing or corrupt: recompute
            return None
        _known_digests.clear()  # a run reads one facts entry: keep no older ones alive
        _known_digests[facts] = digest  # _facts_digest(facts), made when they were stored
        return facts

    def put_facts(self, key: str, facts: RepoFacts) -> None:
        values = _values(facts).values()
        if not all(isinstance(v, frozenset) and all(isinstance(x, str) for x in v) for v in values):
            return  # a fact that is not a set of names: not cached (recomputed each run)
        stored = {k: sorted(v) for k, v in _values(facts).items()}
        # with its digest, which a warm run would otherwise make again from 27,000 names (15 ms)
        self._write(key, {"key": key, "facts": stored, "digest": _sorted_digest(stored)}, "facts")

    def parts_key(self, path: str, content: bytes) -> str:
        """The key of one file's collector parts: the tool, the path (a collector may read it),
        the content_digest of the file's bytes."""
        from codemods.engine.cache import tool_digest

        digest = self._signers()[0].copy()
        digest.update(f"parts\0{tool_digest()}\0".encode())
        digest.update(path.encode("utf-8", "surrogatepass") + b"\0" + content)
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
        found = self._read(key)
        parts = found[0].get("parts") if found is not None else None
        return parts if isinstance(parts, dict) else None  # missing or corrupt: a miss
