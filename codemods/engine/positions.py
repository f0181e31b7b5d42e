"""Positions in a text the codemods made, as positions in the file's original text.

The pipeline runs its codemods in order, each on the text the ones before it left: after TM101
defines `device` below the imports, every later line sits two lines lower, and after TM002 drops
`from torch.autograd import Variable` one line higher. A codemod knows positions only in the text
it walks. What it reports (a finding, a rewrite's review note) and what its `# noqa` comments
mean must be of the original file, the one an editor, CI annotations and SARIF open.

`Origin` maps one such text back to the original by a line diff of the two: a line both texts
share is the same line; a line an earlier codemod changed is the original line it is most like
within the changed region (its column through a diff of the two lines); a line an earlier codemod
inserted is the nearest original line above it that is not blank, the statement it was written
beside (or, at the top of the file, the first one below it).
"""

from __future__ import annotations

import difflib
import re
from bisect import bisect_left, bisect_right
from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Mapping

from codemods.helpers.noqa import is_suppressed, silences
from codemods.results import Finding

if TYPE_CHECKING:
    from codemods.gates import Spec
    from codemods.helpers.context import FileContext

# Lines end at CRLF, LF or a lone CR, as CPython and libcst count them (not at \f or \u2028,
# which str.splitlines also breaks at).
_BREAK = re.compile(r"\r\n|\r|\n")
_PAIRED = 400  # a changed region of more lines than this (both texts multiplied) is mapped by proportion
_SMALL = 40_000  # a region without anchors is diffed line by line up to this size (both sides multiplied)


def split_lines(text: str) -> list[str]:
    """The lines of `text`, without their ends."""
    lines = _BREAK.split(text)
    if lines and lines[-1] == "" and len(lines) > 1:
        lines.pop()  # the text ends with a line break: no line after it
    return lines


class Origin:
    """Where each line of `text` (a codemod's output) came from in `original`."""

    def __init__(self, original: str, text: str) -> None:
        self._old = split_lines(original)
        self._new = split_lines(text)
        # per line of `text` (index from 0): (its original line from 0, or None when inserted)
        self._source: list[int | None] = [None] * len(self._new)
        self._diff()

    @classmethod
    def between(cls, original: str | None, text: str) -> Origin | None:
        """The map, or None when there is nothing to map (the same text, or no original)."""
        if original is None or text is original or text == original:
            return None
        return cls(original, text)

    # -- what the pipeline asks ----------------------------------------------------------------

    def line(self, line: int) -> int | None:
        """The original line (from 1) that `text`'s `line` is, or was changed from; None for a
        line a codemod inserted (or a position out of range)."""
        source = self._source[line - 1] if 0 < line <= len(self._new) else None
        return None if source is None else source + 1

    def position(self, line: int, column: int) -> tuple[int, int]:
        """(line, column) in the original of `text`'s (line, column); line from 1, column from 0.
        Never a blank original line, unless the original has nothing else."""
        if line <= 0 or not self._old:
            return line, column
        index = min(line, len(self._new)) - 1 if self._new else -1
        source = self._source[index] if index >= 0 else None
        if source is not None and self._old[source].strip():
            return source + 1, _column(self._old[source], self._new[index], column)
        near = self._nearest(index if source is None else source, inserted=source is None)
        old = self._old[near]
        return near + 1, len(old) - len(old.lstrip())

    def noqa(self, noqa: Mapping[int, frozenset[str]]) -> dict[int, frozenset[str]]:
        """The original's noqa lines (line -> codes) as the lines of `text` that are them."""
        if not noqa:
            return {}
        return {j + 1: noqa[i + 1] for j, i in enumerate(self._source) if i is not None and i + 1 in noqa}

    # -- the map -------------------------------------------------------------------------------

    def _diff(self) -> None:
        for tag, i1, i2, j1, j2 in _opcodes(self._old, self._new):
            if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
                for k in range(j2 - j1):
                    self._source[j1 + k] = i1 + k
            elif tag == "replace":
                self._pair(i1, i2, j1, j2)
            # "insert": None; "delete": no line of `text` to map

    def _pair(self, i1: int, i2: int, j1: int, j2: int) -> None:
        """Each new line of a changed region to the old line of the region it is most like, in
        order (an old line may be the source of several new ones)."""
        if (i2 - i1) * (j2 - j1) > _PAIRED:
            for j in range(j1, j2):
                self._source[j] = i1 + (j - j1) * (i2 - i1) // (j2 - j1)
            return
        start = i1
        for j in range(j1, j2):
            new = self._new[j].strip()
            best, score = start, -1.0
            for i in range(start, i2):
                ratio = difflib.SequenceMatcher(None, self._old[i].strip(), new, autojunk=False).ratio()
                if ratio > score:
                    best, score = i, ratio
            self._source[j] = start = best

    def _nearest(self, index: int, *, inserted: bool) -> int:
        """The original line (from 0) to report for `text`'s line `index` (an inserted one) or
        for original line `index` (a blank one): the nearest non-blank original line above, else
        below."""
        if inserted:  # the original line just above the insertion
            above = next((s for s in reversed(self._source[:index]) if s is not None), None)
            below = next((s for s in self._source[index + 1 :] if s is not None), len(self._old))
        else:
            above, below = index, index
        for i in range(above if above is not None else -1, -1, -1):
            if self._old[i].strip():
                return i
        for i in range(below, len(self._old)):
            if self._old[i].strip():
                return i
        return max(0, min(index, len(self._old) - 1))


def noqa_broken(spec: Spec, file: FileContext, before: Callable[[], str], after: Callable[[], str]) -> Finding | None:
    """The engine's side of `# noqa`: when the codemod's walk (`after`: its tree before the import
    edits it queued, which the engine makes) changes a line whose noqa covers it (it changed a
    node without `rewrite()`, which honours noqa), a finding saying its changes are not applied
    to this file; None when every such line is kept (or there is none)."""
    noqa = file.noqa  # of the lines of `before`
    if not silences(noqa, spec.code):
        return None
    kept = [line for line in noqa if is_suppressed(noqa, line, line, spec.code)]
    changed = changed_lines(before(), after(), kept)
    if not changed:
        return None
    return Finding(
        code=spec.code,
        path=file.path,
        line=changed[0],
        column=0,
        message=f"{spec.code} ({spec.name}) not applied to this file: it changed this line, which `# noqa` keeps as it is",
        safety=spec.codemod.SAFETY,
        suggestion="a torch-migrate bug (a change made without rewrite()): report it",
    )


def originally(finding: Finding, origin: Origin) -> Finding:
    """`finding` at the position in the original file of the code it names."""
    if finding.line <= 0:
        return finding
    line, column = origin.position(finding.line, finding.column)
    return replace(finding, line=line, column=column)


def changed_lines(before: str, after: str, lines: Iterable[int]) -> list[int]:
    """Those of `lines` (of `before`, from 1) that `after` does not keep as they are."""
    kept: set[int] = set()
    for tag, i1, i2, _, _ in _opcodes(split_lines(before), split_lines(after)):
        if tag == "equal":
            kept.update(range(i1 + 1, i2 + 1))
    return sorted(line for line in lines if line not in kept)


def _opcodes(old: list[str], new: list[str]) -> Iterator[tuple[str, int, int, int, int]]:
    """difflib-style opcodes of the two line lists, from the lines they share (`_matches`)."""
    i = j = 0
    run: list[int] | None = None  # an equal block being extended: [i1, i2, j1, j2]
    for a, b in [*_matches(old, new), (len(old), len(new))]:
        if a > i or b > j:  # the gap before this match
            if run is not None:
                yield "equal", *run
                run = None
            yield ("replace" if a > i and b > j else "delete" if a > i else "insert"), i, a, j, b
        if a < len(old):
            if run is not None and run[1] == a and run[3] == b:
                run[1], run[3] = a + 1, b + 1
            else:
                if run is not None:
                    yield "equal", *run
                run = [a, a + 1, b, b + 1]
        i, j = a + 1, b + 1
    if run is not None:
        yield "equal", *run


def _matches(old: list[str], new: list[str]) -> list[tuple[int, int]]:
    """The pairs (old line, new line) kept as they are, ascending: a patience diff. Lines both
    texts begin and end with match; then the lines that occur once in each side of a region are
    its anchors (in order), and the regions between anchors are matched the same way. A region
    with no such line is left to difflib, when small (its matcher is quadratic where lines repeat,
    as blank lines do; the anchors keep the regions small)."""
    found: list[tuple[int, int]] = []
    work = [(0, len(old), 0, len(new))]
    while work:
        i0, i1, j0, j1 = work.pop()
        while i0 < i1 and j0 < j1 and old[i0] == new[j0]:
            found.append((i0, j0))
            i0, j0 = i0 + 1, j0 + 1
        while i0 < i1 and j0 < j1 and old[i1 - 1] == new[j1 - 1]:
            i1, j1 = i1 - 1, j1 - 1
            found.append((i1, j1))
        if i0 == i1 or j0 == j1:
            continue
        anchors = _anchors(old, new, i0, i1, j0, j1)
        if anchors:
            found.extend(anchors)
            edges = [(i0 - 1, j0 - 1), *anchors, (i1, j1)]
            work.extend((a + 1, c, b + 1, d) for (a, b), (c, d) in zip(edges, edges[1:]))
        elif (i1 - i0) * (j1 - j0) <= _SMALL:
            matcher = difflib.SequenceMatcher(None, old[i0:i1], new[j0:j1], autojunk=False)
            found.extend((i0 + a + k, j0 + b + k) for a, b, size in matcher.get_matching_blocks() for k in range(size))
    return sorted(found)


def _anchors(old: list[str], new: list[str], i0: int, i1: int, j0: int, j1: int) -> list[tuple[int, int]]:
    """The lines occurring once in old[i0:i1] and once in new[j0:j1], as (i, j) pairs: the longest
    run of them in the same order on both sides."""
    seen: dict[str, list[int]] = {}
    for i in range(i0, i1):
        seen.setdefault(old[i], [0, i, 0, -1])[0] += 1
    for j in range(j0, j1):
        entry = seen.get(new[j])
        if entry is not None:
            entry[2] += 1
            entry[3] = j
    pairs = sorted((i, j) for count, i, times, j in seen.values() if count == 1 and times == 1)
    # the longest increasing subsequence of the j's (patience sorting)
    tails: list[int] = []  # index into pairs of the smallest tail of each length
    ends: list[int] = []  # their j's
    back: list[int] = [-1] * len(pairs)
    for index, (_, j) in enumerate(pairs):
        at = bisect_left(ends, j)
        back[index] = tails[at - 1] if at else -1
        if at == len(tails):
            tails.append(index)
            ends.append(j)
        else:
            tails[at], ends[at] = index, j
    chain, index = [], tails[-1] if tails else -1
    while index != -1:
        chain.append(pairs[index])
        index = back[index]
    return chain[::-1]


def _column(old: str, new: str, column: int) -> int:
    """The column of `old` that `new`'s `column` is (the same text, or the place text was put in)."""
    if old == new:
        return column
    blocks = difflib.SequenceMatcher(None, old, new, autojunk=False).get_matching_blocks()
    starts = [b.b for b in blocks]
    at = bisect_right(starts, column) - 1
    if at < 0:
        return 0
    block = blocks[at]
    if column < block.b + block.size:
        return block.a + (column - block.b)
    return min(block.a + block.size, len(old))  # inside inserted text: where it was put
