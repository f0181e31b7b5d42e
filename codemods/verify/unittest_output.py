"""Per-test outcomes from the verbose output of a runner that is not pytest (`python -m unittest -v`, `nose2 -v`).

Both print one line per test, `test_b (tests.checks.TestA.test_b) ... FAIL` (Python 3.11+ adds the
method to the parenthesis; earlier versions and nose2 print the class only), and a block per
failure whose last line is the exception. Ids are written the pytest way, `tests.checks::TestA::test_b`,
so that a module that fails to import (unittest reports it as `unittest.loader._FailedTest.<module>`)
has the module id (`tests.checks`) its tests fall under, as with pytest's collection errors.
"""

from __future__ import annotations

import re

from codemods.verify.junit import MESSAGE, Outcome

_STATUS = {"ok": "passed", "FAIL": "failed", "ERROR": "error", "expected failure": "passed", "unexpected success": "failed"}
_RESULT = r"(?P<status>ok|FAIL|ERROR|skipped\b.*|expected failure|unexpected success)\s*$"
_LINE = re.compile(r"^(?P<name>[\w.]+) \((?P<where>[\w.]+)\)(?:\s.*)? \.\.\. " + _RESULT)
_HEAD = re.compile(r"^(?P<name>[\w.]+) \((?P<where>[\w.]+)\)\s*$")  # a docstring's line follows
_TAIL = re.compile(r"^.* \.\.\. " + _RESULT)
_BLOCK = re.compile(r"^(?:FAIL|ERROR): (?P<name>[\w.]+) \((?P<where>[\w.]+)\)", re.M)
_FAILED_IMPORT = "unittest.loader._FailedTest"


def _test_id(name: str, where: str) -> str:
    if where.startswith(_FAILED_IMPORT + "."):
        return where[len(_FAILED_IMPORT) + 1 :]  # the module that did not import (3.11+)
    if where == _FAILED_IMPORT:
        return name
    parts = where.split(".")
    if parts[-1] != name:  # Python < 3.11 and nose2: `(module.Class)`
        parts.append(name)
    if len(parts) < 3:
        return "::".join(parts)
    return "::".join([".".join(parts[:-2]), parts[-2], parts[-1]])


def _messages(text: str) -> dict[str, str]:
    """The last line of each FAIL/ERROR block (its exception), by test id."""
    out: dict[str, str] = {}
    matches = list(_BLOCK.finditer(text))
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        body = [ln.strip() for ln in text[match.end() : end].splitlines()]
        body = [ln for ln in body if ln and not set(ln) <= set("-=") and not ln.startswith(("Ran ", "FAILED", "OK"))]
        out[_test_id(match["name"], match["where"])] = " ".join((body[-1] if body else "").split())[:MESSAGE]
    return out


def parse_output(text: str) -> dict[str, Outcome] | None:
    """Every test the output reports, or None when it has no verbose per-test lines."""
    results: dict[str, Outcome] = {}
    lines = text.splitlines()
    for index, line in enumerate(lines):
        match = _LINE.match(line)
        if match is None:
            head = _HEAD.match(line)
            tail = _TAIL.match(lines[index + 1]) if head and index + 1 < len(lines) else None
            if tail is None:
                continue
            name, where, status = head["name"], head["where"], tail["status"]
        else:
            name, where, status = match["name"], match["where"], match["status"]
        outcome = "skipped" if status.startswith("skipped") else _STATUS[status]
        results[_test_id(name, where)] = Outcome(outcome)
    if not results:
        return None
    for test_id, message in _messages(text).items():
        if test_id in results:
            results[test_id] = Outcome(results[test_id].outcome, message)
    return results
