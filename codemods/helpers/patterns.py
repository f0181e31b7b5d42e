"""Regexes searched at the speed of their first word.

CPython's `re` finds a pattern that starts with a literal (`size_average\\b`) with a fast scan
for that literal, but a pattern that starts with a zero-width assertion (`\\bsize_average\\b`,
`(?<!torch)\\.eye\\(`) is tried at every position of the text: many times slower, and the
triggers of every codemod are searched in every file. A `Words` pattern
searches without the leading assertion (every match of the whole pattern is a match of the rest),
and matches the whole pattern, assertion and all, where that finds something.
"""

from __future__ import annotations

import re
from typing import Iterator

# A leading `\b`, or a leading lookbehind without nested groups.
_LEADING_ASSERTION = re.compile(r"\\b|\(\?<[=!][^()]*\)")


class Words:
    """A codemod's word pattern (a trigger, or a gate's `sites`): a regex compiled once, which
    says whether a text holds it (`search`) and where (`starts`), at the speed of its first
    literal. `pattern` is its source, as for `re`."""

    __slots__ = ("pattern", "_whole", "_rest")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._whole = re.compile(pattern)
        lead = _LEADING_ASSERTION.match(pattern)
        rest = pattern[lead.end() :] if lead else ""
        # Every match of the whole is a match of the rest at the same offset (the assertion
        # consumes nothing; with a top-level `|` it only narrowed the first branch).
        self._rest = re.compile(rest) if rest else None

    def starts(self, text: str) -> Iterator[int]:
        """Every offset the pattern matches at (overlapping or not)."""
        if self._rest is None:
            yield from (m.start() for m in self._whole.finditer(text))
            return
        position = 0
        while (found := self._rest.search(text, position)) is not None:
            start = found.start()
            # match() at an offset still sees the text before it: `\b` and lookbehinds hold
            if self._whole.match(text, start) is not None:
                yield start
            position = start + 1

    def search(self, text: str) -> bool:
        return next(self.starts(text), None) is not None

    def __repr__(self) -> str:
        return f"Words({self.pattern!r})"
