"""`--resume`: whether a repository's saved result still describes its source.

A saved result is kept only while the source still names the commit it was made from: the state
records each repository's `base` (the commit its branch grew from, which is the source's `ref`, or
its HEAD, when it was cloned). A source that got new commits since is migrated again.
"""

from __future__ import annotations

import re

from codemods.batch import git

_SHA = re.compile(r"^[0-9a-f]{7,40}$")


def source_commit(source: str, ref: str | None, timeout: float = 60) -> str | None:
    """The commit `ref` (default HEAD) names in `source` now (a path or a URL alike, asked with
    `git ls-remote`, nothing cloned); None when the source cannot be asked or has no such ref.

    A name is looked up as the clone's `rev-parse` looks it up: a tag (the commit an annotated tag
    points at) before a branch."""
    patterns = [ref, f"{ref}^{{}}"] if ref else ["HEAD"]  # an annotated tag's commit is listed as `<tag>^{}`
    try:
        listing = git.git(None, "ls-remote", source, *patterns, timeout=timeout, what=f"git ls-remote {source}")
    except git.GitError:
        return None
    refs = {}
    for line in listing.splitlines():
        sha, _, name = line.partition("\t")
        refs[name.strip()] = sha.strip()
    if ref is None:
        return refs.get("HEAD")
    for name in (f"refs/tags/{ref}^{{}}", f"refs/tags/{ref}", f"refs/heads/{ref}", ref):
        if name in refs:
            return refs[name]
    return None


def source_unmoved(saved: dict, source: str, ref: str | None) -> bool:
    """Whether the source still names the commit the saved result was made from. A commit `ref`
    cannot move; a source that cannot be asked is not assumed unchanged (the row runs again and
    says why it failed)."""
    base = saved.get("base")
    if not base:
        return False
    if ref and _SHA.match(ref) and base.startswith(ref):
        return True
    return source_commit(source, ref) == base
