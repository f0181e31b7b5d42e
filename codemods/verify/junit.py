"""Per-test outcomes from a JUnit XML file, keyed by pytest node id where it can be rebuilt.

pytest is asked for the `xunit1` family, whose `<testcase>` carries `file` next to `classname`
and `name`; from those the node id (`tests/test_x.py::TestA::test_b[1]`) is rebuilt, so reruns
can target single tests. Where it cannot be rebuilt the id is `classname::name`.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

# Worst wins when one test has several entries (pytest writes a teardown error as its own entry).
RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
FAILING = ("failed", "error")
MESSAGE = 300


class JUnitError(ValueError):
    pass


@dataclass(frozen=True)
class Outcome:
    outcome: str  # passed | failed | error | skipped
    message: str = ""
    file: str | None = None  # xunit1's file attribute, relative to pytest's rootdir
    imported: bool = True  # False: not run, because its module did not import (compare.expand)
    files: tuple[str, ...] = ()  # the .py files its traceback passes through, as pytest printed them

    @property
    def failing(self) -> bool:
        return self.outcome in FAILING


def node_id(classname: str, name: str, file: str | None) -> str:
    """pytest's node id, undoing junitxml's mangling (path separators to dots, `.py` dropped)."""
    if not classname:  # a collection error: `name` is the module's dotted path
        return file if file else name
    if file and file.endswith(".py"):
        module = re.sub(r"\.py$", "", file).replace("/", ".").replace("\\", ".")
        if classname == module:
            return f"{file}::{name}"
        if classname.startswith(module + "."):
            return "::".join([file, *classname[len(module) + 1 :].split("."), name])
    return f"{classname}::{name}"


def is_module_id(test_id: str) -> bool:
    """A whole module's id (`tests/test_x.py`): where pytest reports that it could not import it."""
    return "::" not in test_id


def module_of(test_id: str) -> str:
    return test_id.partition("::")[0]


# pytest's long tracebacks: `pkg/mod.py:12: in func` / `pkg/mod.py:12: Error`; Python's own
# (inside collection errors): `File "/abs/pkg/mod.py", line 12`.
_TRACEBACK_FILE = re.compile(r'^(\S+\.py):\d+:|File "([^"]+\.py)", line \d+', re.M)


def traceback_files(text: str) -> tuple[str, ...]:
    """The .py files a failure's traceback names, in order, each once."""
    found = (m[1] or m[2] for m in _TRACEBACK_FILE.finditer(text))
    return tuple(dict.fromkeys(found))


def _outcome(case: ET.Element) -> tuple[str, str, tuple[str, ...]]:
    for tag, outcome in (("error", "error"), ("failure", "failed"), ("skipped", "skipped")):
        child = case.find(tag)
        if child is not None:
            message = child.get("message") or ""
            if not message or message == "collection failure":
                # pytest's collection errors say only "collection failure"; the exception is the
                # last `E   ` line of the traceback.
                text = child.text or ""
                raised = [ln[1:].strip() for ln in text.splitlines() if ln.startswith("E ")]
                message = raised[-1] if raised else message or text.strip()
            files = traceback_files(child.text or "") if outcome != "skipped" else ()
            return outcome, " ".join(message.split())[:MESSAGE], files
    return "passed", "", ()


def parse(path: Path) -> dict[str, Outcome]:
    """Every `<testcase>` in the file; raises JUnitError when the file is missing or malformed."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise JUnitError(f"cannot read JUnit XML {path}: {exc}") from None
    results: dict[str, Outcome] = {}
    for case in root.iter("testcase"):
        file = case.get("file")
        test_id = node_id(case.get("classname", ""), case.get("name", ""), file)
        outcome, message, files = _outcome(case)
        previous = results.get(test_id)
        if previous is None or RANK[outcome] > RANK[previous.outcome]:
            results[test_id] = Outcome(outcome, message, file, files=files)
    return results


def rerun_target(test_id: str, bases: list[Path]) -> str | None:
    """An absolute pytest argument selecting `test_id`, or None when its file cannot be found.

    Node ids are relative to pytest's rootdir, which may be the working directory or one above it.
    """
    path, sep, rest = test_id.partition("::")
    if not path.endswith(".py"):
        return None
    for base in bases:
        candidate = base / path
        if candidate.is_file():
            return f"{candidate}::{rest}" if sep else str(candidate)  # no `::`: a whole module
    return None
