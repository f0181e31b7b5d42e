"""Version specifiers, read without `packaging`: which torch release lines a requirement allows.

    evaluate(">=1.8,<2")              # (1, 13): the newest release line of versions.RELEASES allowed
    evaluate("^1.8", "poetry")        # (1, 13)
    evaluate("1.13", "conda")         # (1, 13): conda's bare version is fuzzy, `1.13.*`

Three dialects: PEP 440 (`pep`, with `===`, `~=` and `.*`), poetry's (`^`, `~`, spaces and `||`)
and conda's (`=1.13` fuzzy, `|` alternatives). Pre-, post- and dev-release and local labels are
dropped, since only a release line matters (codemods/pins.py reads the files that hold them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from codemods.versions import NEWEST, RELEASES, Version

_NUMBER = re.compile(r"v?(\d+(?:\.\d+)*)(\.\*)?(.*)$")
_OPERATORS = ("===", "==", "!=", "~=", "<=", ">=", "<", ">", "^", "~", "=")


@dataclass(frozen=True)
class Clause:
    """One comparison: `op` against `release` (a version's numbers), `wildcard` for `1.13.*`."""

    op: str  # == != < <= > >= (everything else is rewritten into these)
    release: tuple[int, ...]
    wildcard: bool = False

    def allows(self, version: tuple[int, ...]) -> bool:
        if self.wildcard:
            inside = version[: len(self.release)] == self.release
            return inside if self.op == "==" else not inside
        width = max(len(version), len(self.release))
        a, b = _pad(version, width), _pad(self.release, width)
        return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[self.op]


def _pad(release: tuple[int, ...], width: int) -> tuple[int, ...]:
    return release + (0,) * (width - len(release))


def _number(text: str) -> tuple[tuple[int, ...], bool] | None:
    """`1.13.1`, `1.13.1+cu117`, `2.0.0rc1`, `1.13.*` as (release numbers, wildcard); None if not a version.

    Pre-, post- and dev-release and local labels are dropped: a release line is what matters."""
    match = _NUMBER.match(text.strip())
    if match is None:
        return None
    rest = match.group(3).strip()
    if rest and not re.fullmatch(r"[.+\-_]?[A-Za-z0-9.+\-_]*", rest):
        return None
    return tuple(int(p) for p in match.group(1).split(".")), bool(match.group(2))


def _clause(op: str, text: str, style: str) -> list[Clause] | None:
    """The clauses one `op version` stands for, in `style` ("pep", "poetry" or "conda"); None if unreadable."""
    parsed = _number(text)
    if parsed is None:
        return None
    release, wildcard = parsed
    if op == "===":
        op = "=="
    if op == "=" and style == "conda":  # conda's fuzzy `=1.13` is `1.13.*`
        return [Clause("==", release, True)]
    if op in ("==", "!=") and wildcard:
        return [Clause(op, release, True)]
    if wildcard:  # `>=1.13.*` is not a specifier anyone means; read it without the star
        wildcard = False
    if op == "~=":  # PEP 440: ~=1.13.1 is >=1.13.1, ==1.13.*; ~=1.13 is >=1.13, ==1.*
        if len(release) < 2:
            return None
        return [Clause(">=", release), Clause("==", release[:-1], True)]
    if op == "^":  # poetry: up to the next change of the first non-zero number
        first = next((i for i, n in enumerate(release) if n), len(release) - 1)
        upper = release[:first] + (release[first] + 1,)
        return [Clause(">=", release), Clause("<", upper)]
    if op == "~":  # poetry: ~1.13.1 and ~1.13 are <1.14; ~1 is <2
        keep = release[:2] if len(release) >= 2 else release[:1]
        upper = keep[:-1] + (keep[-1] + 1,)
        return [Clause(">=", release), Clause("<", upper)]
    if op in ("==", "!=", "<", "<=", ">", ">="):
        return [Clause(op, release)]
    return None


def parse_specifier(text: str, style: str = "pep") -> list[list[Clause]] | None:
    """Alternatives (or-ed: poetry `||`, conda `|`) of clause lists (and-ed: `,`, or poetry's
    spaces). `[]` for "any version" (`*`, empty); None when any part cannot be read."""
    text = text.strip()
    if not text or text == "*":
        return [[]]
    alternatives = re.split(r"\|\|" if style == "poetry" else r"\|", text)
    out = []
    for alternative in alternatives:
        clauses: list[Clause] = []
        alternative = re.sub(r"(===|==|!=|~=|<=|>=|<|>|\^|~|=)\s+", r"\1", alternative)  # `>= 1.8`
        parts = re.split(r"\s*,\s*" if style == "pep" else r"\s*,\s*|\s+(?=[<>=!~^\d])", alternative.strip())
        for part in parts:
            part = part.strip()
            if not part or part == "*":
                continue
            op = next((o for o in _OPERATORS if part.startswith(o)), None)
            if op is None:  # a bare version: exact for poetry, fuzzy (`1.13` is `1.13.*`) for conda
                op = "=" if style == "conda" else "=="
                value = part
            else:
                value = part[len(op) :]
            if op in ("^", "~") and style != "poetry" or op == "=" and style != "conda":
                return None
            found = _clause(op, value, style)
            if found is None:
                return None
            clauses.extend(found)
        out.append(clauses)
    return out


def _candidates(line: Version, clauses: list[Clause]) -> set[tuple[int, ...]]:
    """Versions that stand for every region the clauses can cut `line` into: its ends, and each
    version a clause names inside it with its neighbours."""
    found = {(*line, 0), (*line, 9999)}
    for clause in clauses:
        release = _pad(clause.release, 3)
        if release[:2] == line:
            found |= {release, release[:2] + (release[2] + 1,) + release[3:]}
            if release[2] > 0:
                found.add(release[:2] + (release[2] - 1,))
    return found


def allows(line: Version, alternatives: list[list[Clause]]) -> bool:
    """Whether some version of release line `line` (X.Y.0 and its patches) satisfies the specifier."""
    return any(
        all(c.allows(v) for c in clauses) for clauses in alternatives for v in _candidates(line, clauses)
    )


def newest_allowed(alternatives: list[list[Clause]]) -> Version | None:
    """The newest release line the specifier allows; NEWEST when it only allows newer ones (the
    tables know no further); None when it allows no version at all."""
    for line in reversed(RELEASES):
        if allows(line, alternatives):
            return line
    beyond = [(NEWEST[0], NEWEST[1] + 1), (NEWEST[0] + 1, 0)]
    beyond += [_pad(c.release, 2)[:2] for clauses in alternatives for c in clauses if _pad(c.release, 2)[:2] > NEWEST]
    return NEWEST if any(allows(line, alternatives) for line in beyond) else None


def evaluate(specifier: str, style: str = "pep") -> Version | None:
    """The newest release line `specifier` (without the name) allows; None if it is unreadable,
    unsatisfiable, or says nothing (`*`, empty)."""
    parsed = parse_specifier(specifier, style)
    if parsed is None or parsed == [[]]:
        return None
    return newest_allowed(parsed)
