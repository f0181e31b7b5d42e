"""What the engine asks of a codemod before it parses a file, with no libcst import.

One module per codemod, named like its module in `transforms/`: its trigger regexes
(`triggers()`) and, where it has one, its `GATE`: the text gate (`applies`) and the AST gate
(`may_act`, reading CPython's ast through `helpers/scan.Scan`). The registry reads these without
importing the codemod itself, so that `list`, `explain` and a run over files that no codemod can
act on never import libcst or a transform (issue 18: that import is most of a short run's time).
A transform imports from its gate module whatever the two share (tables, qualified names).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

if TYPE_CHECKING:
    from codemods.helpers.facts import RepoFacts
    from codemods.helpers.patterns import Words
    from codemods.helpers.scan import Scan


_DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")


def data_table(name: str) -> Any:
    """A JSON table of codemods/data/ (package data, installed beside the modules), read as a
    file: `importlib.resources` would cost a few ms of imports on every run (issue 18)."""
    with open(os.path.join(_DATA, name), encoding="utf-8") as handle:
        return json.load(handle)


@dataclass(frozen=True)
class Gate:
    """A codemod's decisions before parsing, beyond its trigger regexes (the registry's `Spec`)."""

    sites: tuple[str, ...] = ()
    """Regexes for statements to visit besides the trigger lines (with the codemod's PRUNE), and
    for its AST gate to read."""
    uses_repo_facts: bool = False
    """Ask the engine for the whole-repo first pass (helpers/facts.py)."""
    applies: Callable[[str, RepoFacts], bool] | None = None
    """A file-level gate after the trigger regexes, with the repo facts at hand: the triggers say
    "this text may need me"; a codemod whose decision also depends on the whole repository (or on
    a second word being present) declines a file here, before it is parsed. None: yes."""
    may_act: Callable[[Scan, Sequence[Words], RepoFacts], bool] | None = None
    """The AST gate: whether anything on the lines of `words` (the triggers and `sites`) could be
    one of the codemod's sites, given the repo's facts. Must never say no to a file the codemod
    would change or report on: a superset of its decisions, from the ast (`Scan.nodes`,
    `Scan.qualified`). None: no AST gate."""
    pre_parse: bool = False
    """The codemod repairs the text before the parse and never runs on a tree (TM000)."""
    uses_era: bool = False
    """Ask the engine for the torch the repository's code was written for (codemods/era.py),
    handed to every file as FileContext.era."""


NO_GATE = Gate()
