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

Whether a text holds a pattern at all (`search`, what the triggers ask of every file) is answered
from the pattern's top-level branches one by one, each with its own needles and without its
leading assertion, and with each group that lists many plain words (`(?:BCELoss|...|nll_loss)`,
thirty names of removed functions) written as a trie (`(?:b(?:tri(?:fact|solve)|...)|...)`),
which `re` tries a character at a time instead of a word at a time. Both match the same texts
at the same offsets: `starts`, whose offsets Scan.hits turns into lines, keeps the pattern as
written.

Even the `in` scans and the tries added up, the triggers of thirty codemods searched in every
file: a tenth of a corpus run. But most patterns need whole words: `\\bsize_average\\b`,
`.cuda(`, `\\bimport\\s+torchvision\\.(?:models|datasets)`, thirty loss names between `\\b`s.
A match has such a word delimited in the text (by the pattern's `\\b`, its own non-word
characters, a run of spaces), so the word is among the text's words, the `\\w+` runs made once
per text (`text_words`). `word_clauses` reads these needs from the parsed pattern; a few set
lookups then answer for most patterns in most files before any scan.
"""

from __future__ import annotations

import re
try:  # Python 3.11 and newer: re's own parser
    from re import _constants as sre
    from re import _parser as sre_parse
except ImportError:  # Python 3.10: the same parser under its old, public names
    import sre_constants as sre  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]
from functools import lru_cache
from typing import Any, Iterable, Iterator, Sequence

# A leading `\b`, or a leading lookbehind without nested groups.
_LEADING_ASSERTION = re.compile(r"\\b|\(\?<[=!][^()]*\)")


class Words:
    """A codemod's word pattern (a trigger, or a gate's `sites`): a regex compiled once, which
    says whether a text holds it (`search`) and where (`starts`), at the speed of its first
    literal. `pattern` is its source, as for `re`. What each question needs is made when it is
    first asked: `list` and `explain` make nothing, and a run compiles only the patterns whose
    words some file holds."""

    __slots__ = ("pattern", "_whole", "_rest", "_needles", "_clauses", "_probes")

    def __init__(self, pattern: str, _probe: bool = False) -> None:
        self.pattern = pattern
        self._whole: re.Pattern | None = None  # with _rest, made by _compile
        self._rest: re.Pattern | None = None
        self._needles: Needles | None = _UNSET
        self._clauses: tuple[Clause, ...] = _UNSET
        # What `search` tries: see _probes_of
        self._probes: tuple[Words, ...] | None = None if _probe else _UNSET

    def _compile(self) -> re.Pattern:
        self._whole = re.compile(self.pattern)
        lead = _LEADING_ASSERTION.match(self.pattern)
        rest = self.pattern[lead.end() :] if lead else ""
        # Every match of the whole is a match of the rest at the same offset (the assertion
        # consumes nothing; with a top-level `|` it only narrowed the first branch).
        self._rest = re.compile(rest) if rest else None
        return self._whole

    def starts(self, text: str) -> Iterator[int]:
        """Every offset the pattern matches at (overlapping or not)."""
        if self._needles is _UNSET:
            self._needles = needles(self.pattern)
        if self._needles is not None and not any(all(n in text for n in every) for every in self._needles):
            return
        whole = self._whole or self._compile()
        if self._rest is None:
            yield from (m.start() for m in whole.finditer(text))
            return
        position = 0
        while (found := self._rest.search(text, position)) is not None:
            start = found.start()
            # match() at an offset still sees the text before it: `\b` and lookbehinds hold
            if whole.match(text, start) is not None:
                yield start
            position = start + 1

    def search(self, text: str) -> bool:
        if self._clauses is _UNSET:
            self._clauses = word_clauses(self.pattern)
        if self._clauses and len(text) >= _WORDS_FROM and not _holds(self._clauses, text_words(text)):
            return False
        if self._probes is _UNSET:
            self._probes = _probes_of(self.pattern)
        if self._probes is not None:
            return any(probe.search(text) for probe in self._probes)
        return next(self.starts(text), None) is not None

    def __reduce__(self):
        # Only the source travels (to a worker, in a pickled plan): the lazily made parts are
        # made again there. Copying the slots would carry the module-private `_UNSET` marker,
        # which is another object in the receiving process.
        return (Words, (self.pattern, self._probes is None))

    def __repr__(self) -> str:
        return f"Words({self.pattern!r})"


_UNSET: Any = object()


def any_name(names: Iterable[str]) -> str:
    """A pattern matching any of `names` as a whole name (in a fixed order: the same names make
    the same pattern)."""
    return r"\b(?:%s)\b" % "|".join(map(re.escape, sorted(names)))


def _probes_of(pattern: str) -> tuple[Words, ...] | None:
    """The branches of `pattern`, each with its word lists as tries, as `search` tries them (see
    the module); None when that is the pattern itself."""
    branches = _branches(pattern)
    probes = [_tries(branch) for branch in branches]
    if len(branches) == 1 and probes[0] == pattern:
        return None
    return tuple(Words(probe, _probe=True) for probe in probes)


# A non-capturing group of plain words, at least this many (fewer gain nothing as a trie).
_WORD_LIST = re.compile(r"(?<!\\)\(\?:(\w+(?:\|\w+){5,})\)")


def _tries(pattern: str) -> str:
    """`pattern` with each group that lists plain words (`(?:add|addcmul|sub)`) written as a trie
    (`(?:add(?:cmul)?|sub)`): the same strings, the same matches."""
    return _WORD_LIST.sub(lambda m: f"(?:{_trie(m.group(1).split('|'))})", pattern)


def _trie(words: Sequence[str]) -> str:
    """An alternation that matches exactly `words` (plain word characters), by shared prefixes."""
    if "" in words:
        rest = [w for w in words if w]
        return f"(?:{_trie(rest)})?" if rest else ""
    groups: dict[str, list[str]] = {}
    for word in words:
        groups.setdefault(word[0], []).append(word[1:])
    parts = [head + _trie(tails) for head, tails in sorted(groups.items())]
    return parts[0] if len(parts) == 1 else f"(?:{'|'.join(parts)})"


def _branches(pattern: str) -> list[str]:
    """The top-level `|` branches of `pattern` (itself alone when it has one, or when splitting
    could change what it means: inline flags, back-references, conditionals)."""
    if pattern.startswith("(?") and re.match(r"\(\?[aiLmsux]+\)", pattern) or re.search(r"\\\d|\(\?P=|\(\?\(", pattern):
        return [pattern]
    branches, start, depth, i = [], 0, 0, 0
    in_class = False
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "^":
                i += 1
            if pattern[i + 1 : i + 2] == "]":  # a `]` first in a class is a literal
                i += 1
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            branches.append(pattern[start:i])
            start = i + 1
        i += 1
    branches.append(pattern[start:])
    return branches


# More alternatives than this and the `in` scans cost about what the regex does.
_MAX_ALTERNATIVES = 8
Needles = tuple[tuple[str, ...], ...]


@lru_cache(maxsize=1024)  # the Words made for each file (a codemod's names) ask again
def needles(pattern: str) -> Needles | None:
    """Literals a text must hold for `pattern` to match in it, as alternatives: the text can match
    only if, for one of them, it holds every literal listed. None when no such condition is
    known (a case-insensitive pattern, a pattern with no literal, too many alternatives).

    `\\bimport\\s+ffi\\b|\\bcreate_extension\\b` -> (("import", "ffi"), ("create_extension",))."""
    parsed = _parsed(pattern)
    if parsed is None or parsed.state.flags & re.IGNORECASE:
        return None
    return _sequence(list(parsed))


@lru_cache(maxsize=256)  # needles and word_clauses each read it, one after the other
def _parsed(pattern: str) -> sre_parse.SubPattern | None:
    try:
        return sre_parse.parse(pattern)
    except re.error:
        return None


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


# -- the words a match needs ------------------------------------------------------------------------

# Below this many characters the `in` scans cost less than making the text's words.
_WORDS_FROM = 2_000
_WORD = re.compile(r"\w+")
_last_words: tuple[str | None, frozenset[str]] = (None, frozenset())


def text_words(text: str) -> frozenset[str]:
    """The words (`\\w+` runs) of `text`: made once for the text asked about last (every trigger
    of a file asks of the same text in turn)."""
    global _last_words
    if _last_words[0] is not text:
        # An ASCII text's words are what is left between its other characters, made spaces
        # (twice as fast as the regex)
        words = text.translate(_ASCII_NON_WORD).split() if text.isascii() else _WORD.findall(text)
        _last_words = (text, frozenset(words))
    return _last_words[1]


_ASCII_NON_WORD = {code: " " for code in range(128) if not _WORD.match(chr(code))}


# A clause: the text can match only if it holds one of `singles`, or every word of one of `sets`.
Clause = tuple[frozenset[str], tuple[frozenset[str], ...]]

# In the strings `_language` makes: a point where a word must end or start (a `\\b` the pattern
# asserts, a run of non-word characters it needs). Itself a non-word character: a word next to
# it in such a string is delimited there.
_EDGE = "\x00"
_DELIMITED = re.compile(r"(?<=\W)\w+(?=\W)")
# More strings than this in a piece of a pattern and its words are not worth knowing.
_LANGUAGE_LIMIT = 256
_REPEATS = tuple(op for op in (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None)) if op is not None)


def _holds(clauses: tuple[Clause, ...], words: frozenset[str]) -> bool:
    return all(not singles.isdisjoint(words) or any(every <= words for every in sets) for singles, sets in clauses)


@lru_cache(maxsize=1024)
def word_clauses(pattern: str) -> tuple[Clause, ...]:
    """What `pattern` needs of a text's words (`text_words`), as clauses that a text it matches
    in satisfies every one of: () when nothing is known (a case-insensitive pattern, no whole
    word in it).

    `\\b(?:BCELoss|L1Loss)\\(` -> one clause, BCELoss or L1Loss; `\\bimport\\s+torch\\.cuda\\b`
    -> three, import and torch and cuda; `size_average\\b` -> none (`my_size_average`)."""
    parsed = _parsed(pattern)
    if parsed is None or parsed.state.flags & re.IGNORECASE:
        return ()
    flags = parsed.state.flags
    # Under ASCII or LOCALE a `\\b` is not the boundary of text_words' (Unicode) words
    unicode_boundary = not flags & (re.ASCII | re.LOCALE)
    return tuple(dict.fromkeys(_clauses(list(parsed), unicode_boundary)))


def _clauses(items: Sequence, unicode_boundary: bool) -> list[Clause]:
    """The clauses of a sequence: its pieces of finitely many strings (`_language`), each
    string's delimited words one alternative of the piece's clause; and what the other elements
    need inside them."""
    clauses: list[Clause] = []
    piece = [""]

    def close(strings: list[str]) -> None:
        words = [frozenset(_DELIMITED.findall(string)) for string in strings]
        if words and all(words):  # a string with no whole word: the piece needs none
            clauses.append(_clause(words))

    for op, value in items:
        if op is sre.ASSERT:  # a lookaround that must match: what it needs is in the text too
            clauses.extend(_clauses(list(value[1]), unicode_boundary))
            continue
        strings = _language(op, value, unicode_boundary)
        if strings is not None:
            joined = [a + b for a in piece for b in strings]
            if len(joined) <= _LANGUAGE_LIMIT:
                piece = list(dict.fromkeys(joined))
                continue
            close(piece)
            piece = strings
            continue
        close(piece)
        piece = [""]
        clauses.extend(_inner_clauses(op, value, unicode_boundary))
    close(piece)
    return clauses


def _clause(alternatives: Sequence[frozenset[str]]) -> Clause:
    singles = frozenset(next(iter(words)) for words in alternatives if len(words) == 1)
    return singles, tuple(dict.fromkeys(words for words in alternatives if len(words) > 1))


def _inner_clauses(op, value, unicode_boundary: bool) -> list[Clause]:
    """What an element of infinitely many strings needs."""
    if op is sre.SUBPATTERN:
        _group, add_flags, _del_flags, inner = value
        return [] if add_flags & sre.SRE_FLAG_IGNORECASE else _clauses(list(inner), unicode_boundary)
    if op in _REPEATS:
        low, _high, inner = value
        return _clauses(list(inner), unicode_boundary) if low >= 1 else []
    if op is sre.BRANCH:
        # One clause of each branch (any branch may be the one that matches): their union
        alternatives: list[frozenset[str]] = []
        for branch in value[1]:
            found = _clauses(list(branch), unicode_boundary)
            if not found:
                return []
            singles, sets = found[0]
            alternatives.extend((*(frozenset((word,)) for word in singles), *sets))
        return [_clause(alternatives)]
    return []


def _language(op, value, unicode_boundary: bool) -> list[str] | None:
    """The strings an element matches, when they are few (at most _LANGUAGE_LIMIT), else None;
    each run of non-word characters of unknown length (`\\s+`, `[,;]`) as one _EDGE, and an _EDGE
    where a `\\b` holds. Zero-width elements match the empty string."""
    if op is sre.LITERAL:
        return [chr(value)]
    if op is sre.IN and _non_word_class(value):
        return [_EDGE]
    if op in _REPEATS and len(value[2]) == 1 and _language(*value[2][0], unicode_boundary) == [_EDGE]:
        return [_EDGE] if value[0] >= 1 else ["", _EDGE]
    if op is sre.AT:
        return [_EDGE if value is sre.AT_BOUNDARY and unicode_boundary else ""]
    if op is sre.ASSERT_NOT:
        return [""]
    if op is sre.SUBPATTERN:
        _group, add_flags, _del_flags, inner = value
        return None if add_flags & sre.SRE_FLAG_IGNORECASE else _sequence_language(list(inner), unicode_boundary)
    if op is sre.BRANCH:
        union: list[str] = []
        for branch in value[1]:
            strings = _sequence_language(list(branch), unicode_boundary)
            if strings is None:
                return None
            union.extend(strings)
        return list(dict.fromkeys(union)) if len(union) <= _LANGUAGE_LIMIT else None
    if op in _REPEATS:
        low, high, inner = value
        if (low, high) == (0, 1):
            strings = _sequence_language(list(inner), unicode_boundary)
            return None if strings is None else list(dict.fromkeys(["", *strings]))
    return None


def _sequence_language(items: Sequence, unicode_boundary: bool) -> list[str] | None:
    strings = [""]
    for op, value in items:
        part = _language(op, value, unicode_boundary)
        if part is None:
            return None
        strings = [a + b for a in strings for b in part]
        if len(strings) > _LANGUAGE_LIMIT:
            return None
    return list(dict.fromkeys(strings))


def _non_word_class(items) -> bool:
    """Whether a character class holds no word character (`\\s`, `[,;]`)."""
    return all(
        (kind is sre.CATEGORY and item in (sre.CATEGORY_SPACE, sre.CATEGORY_NOT_WORD))
        or (kind is sre.LITERAL and not _WORD.match(chr(item)))
        for kind, item in items
    )
