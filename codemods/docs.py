"""A codemod's documentation page: the text `torch-migrate explain` prints, and its parts.

A page is the codemod class's docstring, in ruff's rule-doc sections (`## What it does`,
`## Why is this bad?`, `## Example`, `## Use instead`, `## Fix safety`, `## References`).
Its Example and Use instead code blocks are executable: tests/test_explain_examples.py runs
each Example through its own codemod and compares the result with Use instead, so the parsing
here is the one both `explain` and that test rely on. Imports neither libcst nor a codemod.
"""

from __future__ import annotations

import inspect
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codemods.registry import Spec

_HEADING = re.compile(r"^## (?P<title>.+?)[ \t]*$", re.MULTILINE)
_PYTHON_BLOCK = re.compile(r"^```python[ \t]*\n(?P<code>.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_ELIDED_HELPERS = re.compile(r"^[ \t]*# \.\.\. generated helpers, written in full: (?P<names>\w+(?:, \w+)*)[ \t]*$")


def page(spec: Spec) -> str:
    """The page `explain` prints after its title line: the docstring, dedented."""
    return inspect.cleandoc(spec.doc)


def sections(text: str) -> dict[str, str]:
    """A page's sections by heading (`"Use instead"`), each the text up to the next heading."""
    headings = list(_HEADING.finditer(text))
    ends = [heading.start() for heading in headings[1:]] + [len(text)]
    return {heading["title"]: text[heading.end() : end] for heading, end in zip(headings, ends)}


def python_blocks(section: str) -> list[str]:
    """The ```python code blocks of one section, in order, each ending with a newline."""
    return [match["code"] for match in _PYTHON_BLOCK.finditer(section)]


def elided_helpers(line: str) -> tuple[str, ...] | None:
    """The helpers one line of a Use instead block stands for, or None for an ordinary line.

    A codemod that generates helper functions into the file (TM103's `ddp_wrap`, TM201's lazy
    h5py handle) writes dozens of lines, with docstrings of their own that a class docstring could
    not hold; its page shows them as one comment naming what is defined there, in order:
    `# ... generated helpers, written in full: ddp_setup, ddp_wrap`.
    """
    match = _ELIDED_HELPERS.match(line)
    return tuple(match["names"].split(", ")) if match else None
