"""Rewrite coverage: which of the migration's rewrites the proofs (tests, smoke checks, probe) ran.

A rewrite is one changed region of a file (report/edits.py, one edit of `files[].edits`), split
line by line where it replaces as many lines as it removes (two adjacent one-line rewrites by
two codemods are two rewrites). Each is located twice: by its lines in the original file (what
the report names) and in the migrated file (what coverage.py measured in the after copy).

A rewrite is *exercised* when every statement on its migrated lines ran at least once (a
compound statement counts by its header: `if x.cuda():`, `def f(async_=False):`). A rewrite
with no statement of its own (a deleted import, an inserted blank line) is judged by the
statement now at its place. A rewrite whose lines never ran is not proven by any outcome: the
report lists it as not executed, never as verified.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace
from typing import Iterable, Sequence

_BREAK = re.compile(r"\r\n|\r|\n")
SHOWN = 10  # unexercised rewrites named in the text headline; JSON and Markdown list them all


@dataclass(frozen=True)
class Site:
    """One rewrite: `line` of the original file (for an insertion, the line it comes before),
    and its lines `first`..`last` of the migrated file (`last < first`: it only removed lines,
    which stood before line `first`)."""

    path: str
    line: int
    code: str
    first: int
    last: int

    def to_dict(self) -> dict:
        return {"path": self.path, "line": self.line, "code": self.code}

    def __str__(self) -> str:
        return f"{self.path}:{self.line} {self.code}"


@dataclass
class RewriteCoverage:
    """How many rewrites the proofs executed; `unavailable` says why it could not be measured."""

    rewrites: int
    exercised: int | None = None
    unexercised: list[Site] = field(default_factory=list)
    proofs: tuple[str, ...] = ()  # "the tests", "the smoke checks", "the probe"
    unavailable: str | None = None
    unmeasured: list[str] = field(default_factory=list)  # changed files coverage cannot see (notebooks)

    def to_dict(self) -> dict:
        if self.unavailable is not None:
            return {"rewrites": self.rewrites, "exercised": None, "unexercised": None, "unavailable": self.unavailable}
        return {
            "rewrites": self.rewrites,
            "exercised": self.exercised,
            "unexercised": [s.to_dict() for s in self.unexercised],
            "unavailable": None,
        }

    @property
    def by(self) -> str:
        names = list(self.proofs) or ["the proofs"]
        return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]

    def short(self) -> str:
        """For the verdict: `3 of 12 rewrites executed`."""
        if self.unavailable is not None:
            return "rewrite coverage unavailable"
        return f"{self.exercised} of {self.rewrites} rewrite{'' if self.rewrites == 1 else 's'} executed"

    def line(self) -> str:
        """`proof: 41 of 57 rewrites executed by the tests; not executed: train.py:88 TM101, ...`."""
        if self.unavailable is not None:
            return f"proof: rewrite coverage unavailable: {self.unavailable}"
        text = f"proof: {self.short()} by {self.by}"
        if self.unexercised:
            shown = ", ".join(str(s) for s in self.unexercised[:SHOWN])
            more = len(self.unexercised) - SHOWN
            text += f"; not executed: {shown}" + (f", … and {more} more" if more > 0 else "")
        return text

    def markdown(self) -> list[str]:
        out = ["### Rewrite coverage", ""]
        if self.unavailable is not None:
            return out + [f"Rewrite coverage unavailable: {self.unavailable}. No rewrite is shown to have run.", ""]
        out.append(f"**{self.short()}** by {self.by}.")
        if self.unexercised:
            out += [
                "",
                "Not executed by any proof (their outcome proves nothing about them):",
                "",
                "| file | line | code |",
                "|---|---:|---|",
            ]
            out += [f"| `{s.path.replace('|', chr(92) + '|')}` | {s.line} | {s.code} |" for s in self.unexercised]
        if self.unmeasured:
            out += ["", f"Not measured (notebooks): {', '.join(f'`{p}`' for p in self.unmeasured)}."]
        return out + [""]


def _count_lines(text: str) -> int:
    if not text:
        return 0
    return len(_BREAK.findall(text)) + (0 if _BREAK.search(text[-1]) else 1)


def _split(text: str) -> list[str]:
    return re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z", text)


def _fires(code: str, text: str) -> bool:
    from codemods import registry

    try:
        return registry.get(code).fires_on(text)
    except registry.SelectionError:
        return False


def sites(result, old: str, new: str) -> list[Site]:
    """The rewrites of one changed file (a `FileResult`), from its original and migrated text."""
    from codemods.engine.runner import unified_diff
    from codemods.report.edits import changes, file_edits

    diff = unified_diff(old, new, result.path)
    found = changes(diff)
    made = file_edits(replace(result, diff=diff))
    out: list[Site] = []
    delta = 0
    for change, edit in zip(found, made):
        added = _count_lines(change.added)
        first = change.line + delta
        delta += added - change.count
        if added == change.count > 1:  # line for line: each line is its own rewrite
            for i, (was, now) in enumerate(zip(_split(change.removed), _split(change.added))):
                codes = [c for c in edit.codes if _fires(c, was) or _fires(c, now)] or list(edit.codes)
                out.append(Site(result.path, change.line + i, codes[0], first + i, first + i))
        else:
            out.append(Site(result.path, change.line, edit.code, first, first + added - 1))
    return out


Span = tuple[int, int]


def statement_spans(source: bytes | str) -> list[Span]:
    """The lines of each statement that run when it starts: a simple statement's all, a compound
    statement's header (decorators included), an `except` clause's line."""
    spans: list[Span] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.stmt, ast.ExceptHandler)):
            continue
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])
        body = getattr(node, "body", None)
        cases = getattr(node, "cases", None)
        if body:
            end = max(start, body[0].lineno - 1)
        elif cases:
            end = max(start, cases[0].pattern.lineno - 1)
        else:
            end = node.end_lineno or node.lineno
        spans.append((start, end))
    return spans


def touched(site: Site, spans: Sequence[Span]) -> list[Span]:
    """The statements a rewrite must have run: those on its migrated lines, else the one at its place."""
    if site.last >= site.first:
        on = [s for s in spans if s[0] <= site.last and s[1] >= site.first]
        if on:
            return on
    at = site.first
    inside = [s for s in spans if s[0] <= at <= s[1]]
    if inside:
        return [min(inside, key=lambda s: s[1] - s[0])]
    later = [s for s in spans if s[0] > at]
    if later:
        return [min(later)]
    earlier = [s for s in spans if s[1] < at]
    return [max(earlier, key=lambda s: s[1])] if earlier else []


def exercised(site: Site, spans: Sequence[Span], ran: set[int]) -> bool:
    needed = touched(site, spans)
    return bool(needed) and all(any(line in ran for line in range(a, b + 1)) for a, b in needed)


def measure(files: Iterable[tuple[object, str, bytes]], ran: dict[str, set[int]]) -> tuple[int, list[Site]]:
    """(rewrites, unexercised) over `files`: (FileResult, original text, migrated bytes) each;
    `ran[path]` is the set of the migrated file's lines that ran (any line event)."""
    total = 0
    missed: list[Site] = []
    for result, old, new in files:
        found = sites(result, old, new.decode("utf-8", "surrogateescape"))
        total += len(found)
        try:
            spans = statement_spans(new)
        except (SyntaxError, ValueError):
            spans = []
        lines = ran.get(result.path, set())
        missed += [s for s in found if not exercised(s, spans, lines)]
    return total, missed
