"""A file no codemod reads that does not parse as Python 3 (`print 'x'`, `except E, e:`) is named
by one TM000 finding: a migration that leaves it behind has not made the repository runnable.

A file a codemod reads is parsed anyway, and one that does not parse is reported as a syntax
error; this covers the files that are never parsed, at the cost of Python's own `ast` parse.
TM000 (legacy syntax) repairs only `async` used as a name; the rest is the finding's work.
"""

from __future__ import annotations

import ast
import warnings
from typing import Sequence

from codemods.registry import Spec
from codemods.results import Finding

CODE = "TM000"
_SAYS = "this file does not parse as Python 3"


def names_unparsed(finding: Finding) -> bool:
    """Whether `finding` is the one `unparsed` gives (batch's row counts those files)."""
    return finding.code == CODE and finding.message.startswith(_SAYS)


def unparsed(source: str, path: str, specs: Sequence[Spec]) -> tuple[Finding, ...]:
    """One finding when `source` does not parse as Python 3 and TM000 is selected, else none."""
    spec = next((s for s in specs if s.code == CODE), None)
    if spec is None:
        return ()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like are not ours to say
            ast.parse(source, path)
        return ()
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        line = getattr(exc, "lineno", None) or 0
        reason = getattr(exc, "msg", None) or type(exc).__name__
    return (
        Finding(
            code=CODE,
            path=path,
            line=line,
            column=0,
            message=f"{_SAYS} (line {line}: {reason}): it will not import,"
            " and no codemod could read it",
            safety=spec.label,
            suggestion="port it to Python 3 (Python 2 syntax such as `print 'x'` or `except E, e:`), then run again",
        ),
    )
