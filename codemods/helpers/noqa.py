"""`# noqa` / `# noqa: TM101,TM102` comments (the flake8/ruff convention)."""

from __future__ import annotations

import re

_NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)

ALL = frozenset({"*"})


def noqa_lines(text: str) -> dict[int, frozenset[str]]:
    """Line number -> codes suppressed on that line (`ALL` for a bare `# noqa`)."""
    if "noqa" not in text.lower():
        return {}
    found: dict[int, frozenset[str]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        match = _NOQA.search(line)
        if match is None:
            continue
        codes = match.group("codes")
        found[number] = ALL if codes is None else frozenset(c.upper() for c in re.split(r"[,\s]+", codes) if c)
    return found


def silences(noqa: dict[int, frozenset[str]], code: str) -> bool:
    """True when some line's noqa covers `code`: most files' noqa comments name other tools'
    codes (`# noqa: F401`), and then no node's lines need to be found to know it is not silenced."""
    return any(codes is ALL or code in codes or "*" in codes for codes in noqa.values())


def is_suppressed(noqa: dict[int, frozenset[str]], first: int, last: int, code: str) -> bool:
    """True when a line in `first..last` carries a noqa that covers `code`."""
    if not noqa:
        return False
    for line in range(first, last + 1):
        codes = noqa.get(line)
        if codes is not None and (codes is ALL or code in codes or "*" in codes):
            return True
    return False


def any_ours(noqa: dict[int, frozenset[str]]) -> bool:
    """Whether some line's noqa can silence a torch-migrate code (a bare `# noqa`, `*` or a TM
    code): most files' name only other tools' codes (`# noqa: F401`)."""
    return any(codes is ALL or "*" in codes or any(code.startswith("TM") for code in codes) for codes in noqa.values())
