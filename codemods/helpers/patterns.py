"""Regexes searched at the speed of their first word.

CPython's `re` finds a pattern that starts with a literal (`size_average\\b`) with a fast scan
for that literal, but a pattern that starts with a zero-width assertion (`\\bsize_average\\b`,
`(?<!torch)\\.eye\\(`) is tried at every position of the text: many times slower, and the
triggers of every codemod are searched in every file. A `Words` pattern
searches without the leading assertion (every match of the whole pattern is a match of the rest),
and matches the whole pattern, assertion and all, where that finds something.

Some patterns start with no literal at all (`\\b(?:remove_)?weight_norm\\b`, a top-level `|`
whose branches each start with `\\b`), and `re` tries them at every position. Before any regex
runs, a `Words` checks the literals the pattern cannot match without (`needles`): `in` on a
string is a fast C scan, and most texts hold none of a codemod's words.
"""

from __future__ import annotations

import re
from re import _constants as sre
from re import _parser as sre_parse
from typing import Iterator, Sequence

# A leading `\b`, or a leading lookbehind without nested groups.
_LEADING_ASSERTION = re.compile(r"\\b|\(\?<[=!][^()]*\)")


class Words:
    """A codemod's word pattern (a trigger, or a gate's `sites`): a regex compiled once, which
    says whether a text holds it (`search`) and where (`starts`), at the speed of its first
    literal. `pattern` is its source, as for `re`."""

    __slots__ = ("pattern", "_whole", "_rest", "_needles")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._whole = re.compile(pattern)
        self._needles = needles(pattern)
        lead = _LEADING_ASSERTION.match(pattern)
        rest = pattern[lead.end() :] if lead else ""
        # Every match of the whole is a match of the rest at the same offset (the assertion
        # consumes nothing; with a top-level `|` it only narrowed the first branch).
        self._rest = re.compile(rest) if rest else None

    def starts(self, text: str) -> Iterator[int]:
        """Every offset the pattern matches at (overlapping or not)."""
        if self._needles is not None and not any(all(n in text for n in every) for every in self._needles):
            return
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


# More alternatives than this and the `in` scans cost about what the regex does.
_MAX_ALTERNATIVES = 8
Needles = tuple[tuple[str, ...], ...]


def needles(pattern: str) -> Needles | None:
    """Literals a text must hold for `pattern` to match in it, as alternatives: the text can match
    only if, for one of them, it holds every literal listed. None when no such condition is
    known (a case-insensitive pattern, a pattern with no literal, too many alternatives).

    `\\bimport\\s+ffi\\b|\\bcreate_extension\\b` -> (("import", "ffi"), ("create_extension",))."""
    try:
        parsed = sre_parse.parse(pattern)
    except re.error:
        return None
    if parsed.state.flags & re.IGNORECASE:
        return None
    return _sequence(list(parsed))


def _sequence(items: Sequence) -> Needles | None:
    """What a sequence needs: every run of literals in it (a zero-width `\\b` or `^` keeps a run
    going: the characters around it are still adjacent) and what each element needs; of the
    elements with several alternatives, the one with the fewest."""
    required: list[str] = []
    choices: list[Needles] = []
    run: list[str] = []
    for op, value in items:
        if op is sre.LITERAL:
            run.append(chr(value))
            continue
        if op is sre.AT:
            continue
        if run:
            required.append("".join(run))
            run = []
        part = _element(op, value)
        if part is None:
            continue
        if len(part) == 1:
            required.extend(part[0])
        else:
            choices.append(part)
    if run:
        required.append("".join(run))
    if choices:
        fewest = min(choices, key=len)
        return tuple((*required, *alternative) for alternative in fewest)
    return (tuple(required),) if required else None


def _element(op, value) -> Needles | None:
    if op is sre.SUBPATTERN:
        _group, add_flags, _del_flags, inner = value
        return None if add_flags & sre.SRE_FLAG_IGNORECASE else _sequence(list(inner))
    if op is sre.BRANCH:
        alternatives: list[tuple[str, ...]] = []
        for branch in value[1]:
            part = _sequence(list(branch))
            if part is None:
                return None  # a branch that needs nothing: the whole needs nothing
            alternatives.extend(part)
        return tuple(alternatives) if len(alternatives) <= _MAX_ALTERNATIVES else None
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None)):
        low, _high, inner = value
        return _sequence(list(inner)) if low >= 1 else None
    if op is getattr(sre, "ATOMIC_GROUP", None):
        return _sequence(list(value))
    return None  # a class, any character, a lookaround, a back-reference: no literal known
