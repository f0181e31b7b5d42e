"""Machine-readable fixes: each changed region of a file as an edit of the ORIGINAL text.

A pending rewrite (`--diff`/`--check`) is known to the report by its unified diff. Each run of
removed and added lines in a hunk is one edit: the region of the original text it replaces
(lines and columns from 1, columns in code points, the end exclusive: SARIF's regions with
`columnKind: unicodeCodePoints`) and the text that replaces it, trimmed to the characters that
differ. Applying every edit of a file to its original text gives exactly the migrated text.

Lines end at CRLF, LF or a lone CR, as Python, SARIF and the engine's diffs count them
(engine/runner.unified_diff). Each edit names the rewrite behind it: the file's only codemod,
else those whose review notes lie on its lines or whose trigger words it removes or adds, else
all of the file's codemods (the first is its `code`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_NO_NEWLINE = "\\ No newline at end of file"
_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Change:
    """One run of removed/added lines: the original's lines from `line` (`removed` whole
    lines, with their ends; none for a pure insertion before `line`) and what replaces them."""

    line: int
    removed: str
    added: str
    count: int  # lines removed


@dataclass(frozen=True)
class Edit:
    """Replace the original text from (start_line, start_column) up to, not including,
    (end_line, end_column) with `replacement`; `code` is the rewrite it belongs to."""

    code: str
    codes: tuple[str, ...]
    start_line: int
    start_column: int
    end_line: int
    end_column: int
    replacement: str
    first_line: int  # the whole lines the change touches, for messages
    last_line: int

    def to_dict(self) -> dict:
        return {
            "code": self.code,
            "codes": list(self.codes),
            "start": {"line": self.start_line, "column": self.start_column},
            "end": {"line": self.end_line, "column": self.end_column},
            "replacement": self.replacement,
        }

    def region(self) -> dict:
        """The SARIF region the edit deletes (empty for an insertion)."""
        return {
            "startLine": self.start_line,
            "startColumn": self.start_column,
            "endLine": self.end_line,
            "endColumn": self.end_column,
        }


def changes(diff: str) -> list[Change]:
    """The runs of removed and added lines of a unified diff, in the original's order."""
    rows = diff.split("\n")
    found: list[Change] = []
    old = old_left = new_left = 0
    start, removed, added = 0, [], []

    def close() -> None:
        nonlocal removed, added
        if removed or added:
            found.append(Change(start, "".join(removed), "".join(added), len(removed)))
        removed, added = [], []

    for index, row in enumerate(rows):
        if old_left <= 0 and new_left <= 0:
            match = _HUNK.match(row)
            if match:
                old, old_left, new_left = int(match[1]), int(match[2] or 1), int(match[3] or 1)
                old = old if old_left else old + 1  # "-5,0": the insertion comes after line 5
            continue
        if row == _NO_NEWLINE:
            continue
        text = row[1:] if index + 1 < len(rows) and rows[index + 1] == _NO_NEWLINE else row[1:] + "\n"
        if row.startswith("-"):
            if not removed and not added:
                start = old
            removed.append(text)
            old, old_left = old + 1, old_left - 1
        elif row.startswith("+"):
            if not removed and not added:
                start = old
            added.append(text)
            new_left -= 1
        else:  # context
            close()
            old, old_left, new_left = old + 1, old_left - 1, new_left - 1
        if old_left <= 0 and new_left <= 0:
            close()
    close()
    return found


def _position(text: str, line: int) -> tuple[int, int]:
    """(line, column) just after `text`, which starts at column 1 of `line`."""
    breaks = list(_BREAK.finditer(text))
    if not breaks:
        return line, len(text) + 1
    return line + len(breaks), len(text) - breaks[-1].end() + 1


def _trimmed(old: str, new: str) -> tuple[int, int]:
    """(prefix, suffix) lengths the two texts share, never splitting a CRLF."""
    limit = min(len(old), len(new))
    prefix = 0
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    if 0 < prefix < len(old) and old[prefix - 1] == "\r" and old[prefix] == "\n":
        prefix -= 1
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    cut = len(old) - suffix
    if suffix and old[cut] == "\n" and cut > prefix and old[cut - 1] == "\r":
        suffix -= 1
    return prefix, suffix


def _edit(change: Change, codes: tuple[str, ...]) -> Edit:
    prefix, suffix = _trimmed(change.removed, change.added)
    start = _position(change.removed[:prefix], change.line)
    end = _position(change.removed[: len(change.removed) - suffix], change.line)
    replacement = change.added[prefix : len(change.added) - suffix]
    last = change.line + max(change.count, 1) - 1
    return Edit(codes[0], codes, *start, *end, replacement, change.line, last)


def _attribution(change: Change, codes: Sequence[str], reviews: Iterable[tuple[str, int]]) -> tuple[str, ...]:
    if len(codes) <= 1:
        return tuple(codes) or ("?",)
    from codemods import registry

    last = change.line + max(change.count, 1) - 1
    chosen = {code for code, line in reviews if change.line <= line <= last}
    for code in codes:
        try:
            spec = registry.get(code)
        except registry.SelectionError:
            continue
        if spec.fires_on(change.removed) or spec.fires_on(change.added):
            chosen.add(code)
    return tuple(code for code in codes if code in chosen) or tuple(codes)


def file_edits(result) -> list[Edit]:
    """The edits of a FileResult's pending rewrite (none without a diff, or for a notebook, whose
    diff counts lines per cell)."""
    if not result.diff or result.path.endswith(".ipynb"):
        return []
    from codemods.registry import all_specs

    order = {spec.code: index for index, spec in enumerate(all_specs())}
    codes = sorted(result.rewrites, key=lambda code: (order.get(code, len(order)), code))
    reviews = [(f.code, f.line) for f in result.findings if f.kind == "review"]
    return [_edit(change, _attribution(change, codes, reviews)) for change in changes(result.diff)]


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """`text` with `edits` made (as an editor applies them: by position, last first)."""
    starts = [0] + [m.end() for m in _BREAK.finditer(text)]

    def offset(line: int, column: int) -> int:
        return starts[line - 1] + column - 1 if line <= len(starts) else len(text)

    out = text
    for edit in sorted(edits, key=lambda e: (e.start_line, e.start_column), reverse=True):
        begin, end = offset(edit.start_line, edit.start_column), offset(edit.end_line, edit.end_column)
        out = out[:begin] + edit.replacement + out[end:]
    return out
