"""The test command: what runs in each copy, how pytest is asked for JUnit XML, how reruns target tests."""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from codemods.verify.execute import pytest_argv

# pytest options whose separate value may be an existing path that must stay in a rerun.
_PATH_VALUED = {
    "-c", "--rootdir", "--confcutdir", "--basetemp", "--ignore", "--ignore-glob", "--deselect",
    "-p", "--junitxml", "--junit-xml", "--override-ini", "-o", "--log-file", "--cov", "--cov-config",
}  # fmt: skip
TEST_FILE = re.compile(r"(^|/)(test_[^/]*|[^/]*_test)\.py$")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")  # `PYTHONPATH=plugins pytest ...`


@dataclass(frozen=True)
class TestCommand:
    __test__ = False  # not a pytest test class

    text: str  # as the user reads it
    pytest: tuple[str, ...] | None  # argv when it is pytest (JUnit XML and targeted reruns)
    env: tuple[tuple[str, str], ...] = ()  # leading `NAME=value` words of a pytest command

    @classmethod
    def default(cls, python: str) -> "TestCommand":
        return cls("python -m pytest", (python, "-m", "pytest"))

    @classmethod
    def from_user(cls, text: str) -> "TestCommand":
        """A pytest command (after any `NAME=value` words, as a shell reads them) runs as an
        argument list, so reruns can target tests; anything else runs through the shell as given."""
        try:
            words = shlex.split(text)
        except ValueError:
            words = []
        env = []
        while words and ASSIGNMENT.match(words[0]):
            name, _, value = words.pop(0).partition("=")
            env.append((name, value))
        argv = pytest_argv(shlex.join(words) if env else text) if words else None
        if argv is None:
            return cls(text, None)
        return cls(text, tuple(argv), tuple(env))

    def argv(self, xml: Path, targets: Iterable[str] | None = None, cwd: Path | None = None) -> list[str] | str:
        """The command to run; with `targets`, only those tests (pytest only)."""
        if self.pytest is None:
            return self.text
        base = list(self.pytest)
        if targets is not None:
            base = self._without_paths(base, cwd)
        # One module that no longer imports must not hide the results of all the others.
        extra = [f"--junitxml={xml}", "-o", "junit_family=xunit1", "--continue-on-collection-errors"]
        return [*base, *extra, *(targets or ())]

    @staticmethod
    def _without_paths(argv: list[str], cwd: Path | None) -> list[str]:
        """Drop the user's test paths so that a rerun runs only the named tests."""
        start = 3 if os.path.basename(argv[0]).startswith("python") else 1
        kept = argv[:start]
        for index in range(start, len(argv)):
            token, previous = argv[index], argv[index - 1]
            takes_value = previous in _PATH_VALUED
            is_path = "::" in token or (cwd is not None and not token.startswith("-") and (cwd / token).exists())
            if is_path and not takes_value:
                continue
            kept.append(token)
        return kept


def has_tests(project: Path) -> bool:
    """Whether pytest would find anything: a test_*.py / *_test.py file outside virtualenvs and caches."""
    from codemods.verify.copies import NEVER

    for current, dirs, files in os.walk(project):
        dirs[:] = [d for d in dirs if d not in NEVER and not (Path(current) / d / "pyvenv.cfg").exists()]
        if any(TEST_FILE.search(name) for name in files):
            return True
    return False
