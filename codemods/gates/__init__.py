"""Each codemod's declaration: what it is, and what the engine decides before parsing a file.

One module per codemod, named like its module in `transforms/`, holding its `SPEC` (code, name,
stage, safety, where its class is, trigger regexes, summary, what it writes) and, where it has
one, its `GATE`: the text gate (`applies`) and the AST gate (`may_act`, reading CPython's ast
through `helpers/scan.Scan`). Nothing here imports libcst or the codemod itself, so that `list`,
`explain` and a run over files no codemod can act on never pay for those imports (most of a
short run's time). The codemod class reads its code and safety from its SPEC; a transform
imports from its gate module whatever the two share (tables, qualified names).
"""

from __future__ import annotations

import ast
import enum
import importlib
import importlib.util
import json
import os
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable, Sequence

from codemods.helpers.patterns import Words

if TYPE_CHECKING:
    from codemods.base import MigrationCodemod
    from codemods.helpers.facts import RepoFacts
    from codemods.helpers.scan import Scan


_DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")


def data_table(name: str) -> Any:
    """A JSON table of codemods/data/ (package data, installed beside the modules), read as a
    file: `importlib.resources` would add its imports to every run, the shortest among them."""
    with open(os.path.join(_DATA, name), encoding="utf-8") as handle:
        return json.load(handle)


@dataclass(frozen=True)
class Gate:
    """A codemod's decisions before parsing, beyond its trigger regexes (the registry's `Spec`)."""

    sites: tuple[str, ...] = ()
    """Regexes for statements to visit besides the trigger lines (with the codemod's PRUNE), and
    for its AST gate to read."""
    applies: Callable[[str, RepoFacts], bool] | None = None
    """A file-level gate after the trigger regexes, with the repo facts at hand: the triggers say
    "this text may need me"; a codemod whose decision also depends on the whole repository (or on
    a second word being present) declines a file here, before it is parsed. None: yes."""
    may_act: Callable[[Scan, Sequence[Words], RepoFacts], bool] | None = None
    """The AST gate: whether anything on the lines of `words` (the triggers and `sites`) could be
    one of the codemod's sites, given the repo's facts. Must never say no to a file the codemod
    would change or report on: a superset of its decisions, from the ast (`Scan.nodes`,
    `Scan.qualified`). None: no AST gate."""


NO_GATE = Gate()


class Safety(str, enum.Enum):
    SAFE = "safe"  # on by default; behaviour kept (or a crash becomes a correct run)
    REVIEW = "review"  # on by default; every change listed for review with its reason
    UNSAFE = "unsafe"  # only with --unsafe


class Stage(enum.Enum):
    """Where in a file's run a codemod works (engine/pipeline.py)."""

    TEXT = "text"
    """It repairs the text before the parse (Python 2-era syntax libcst cannot read), and never
    runs on a tree."""
    CHECK = "check"
    """Findings only (codes TM9xx): it rewrites nothing, and runs before the rewriting codemods
    so that its line numbers point into the file as its author wrote it."""
    REWRITE = "rewrite"
    """It rewrites the parsed tree (and may report what it will not rewrite)."""


FINDINGS_ONLY = "findings-only"


@dataclass(frozen=True)
class Spec:
    """A codemod's declaration, made once, in its module of codemods/gates/."""

    code: str
    name: str
    target: type[MigrationCodemod] | str
    """Where the codemod class is (`"package.module:Class"`), imported on the first use of
    `codemod`; or the class itself (a codemod a test makes in place)."""
    safety: Safety
    triggers: tuple[str, ...]
    """Regular expressions; a file matching none of them is never parsed for this codemod."""
    stage: Stage = Stage.REWRITE
    summary: str = ""
    """One line: what it rewrites or reports (`list`, the README's table)."""
    gate: Gate = NO_GATE
    """What else decides, before parsing, whether it can act on a file."""
    facts: tuple[str, ...] = ()
    """The repository facts it reads (`self.file.facts.<name>`: the collectors of helpers/facts/),
    and "era" for the torch the repository's code was written for (`self.file.era`,
    codemods/era.py). A run gathers only the facts its codemods declare (and those the engine
    reads for every file); tests/test_facts_collectors.py runs each codemod with only its own."""
    report_note: tuple[str, str] | None = None
    """(heading, text): what a pull request carrying its rewrites tells the reviewer (batch's
    REPORT.md), beyond the list of changes."""
    emits: tuple[str, ...] = ()
    """The torch symbols newer than the oldest target (keys of codemods/data/torch_minimums.json)
    that its rewrites may write: where the target lacks one, that rewrite is held back with a
    finding (helpers/target_gate.py). The README's table shows what each needs; the tests check
    every fixture output against this list."""
    intended: str | None = None
    """Why its rewrites change results on purpose (an old default restored), or None: verify
    reports a test or probe result that changes only because of it as `intended`, with this
    reason, not as a regression (codemods/verify/intended.py)."""

    def __post_init__(self) -> None:
        # the policy of the codes: TM9xx are the findings-only checks, and nothing else is
        if (self.stage is Stage.CHECK) != self.code.startswith("TM9"):
            raise ValueError(f"{self.code}: findings-only checks, and only they, take TM9xx codes")
        if not self.summary and not isinstance(self.target, str):  # a class given in place: its own line
            object.__setattr__(self, "summary", vars(self.target).get("DESCRIPTION", ""))

    @cached_property
    def codemod(self) -> type[MigrationCodemod]:
        if not isinstance(self.target, str):
            return self.target
        module, _, name = self.target.partition(":")
        return getattr(importlib.import_module(module), name)

    @cached_property
    def trigger(self) -> tuple[Words, ...]:
        return tuple(Words(t) for t in self.triggers)

    @cached_property
    def sites(self) -> tuple[Words, ...]:
        """What makes a statement one of this codemod's candidates (see engine/statement_map.py)."""
        return (*self.trigger, *(Words(s) for s in self.gate.sites))

    @property
    def doc(self) -> str:
        """The codemod's docstring; read from its module's source while the module is not
        imported (`explain` needs neither it nor libcst)."""
        if isinstance(self.target, str) and "codemod" not in self.__dict__:
            return _docstring(*self.target.split(":"))
        return self.codemod.__doc__ or ""

    @property
    def label(self) -> str:
        """The label `list`, `run` and every report show, and its findings carry: the safety of
        a codemod, or "findings-only" for a check."""
        return FINDINGS_ONLY if self.stage is Stage.CHECK else self.safety.value

    @property
    def needs(self) -> tuple[tuple[str, tuple[int, int]], ...]:
        """(symbol, the torch it needs) for each symbol in `emits`, oldest first."""
        from codemods.versions import needed

        return tuple(sorted(((s, needed(s) or (1, 0)) for s in self.emits), key=lambda item: (item[1], item[0])))

    @cached_property  # asked for every file a run looks up
    def reads_repo(self) -> bool:
        """Whether it reads facts from other files of the repository (then its per-file cache
        entries depend on them)."""
        return any(name != "era" for name in self.facts)

    def fires_on(self, text: str) -> bool:
        return any(t.search(text) for t in self.trigger)


def _docstring(module: str, name: str) -> str:
    """Class `name`'s docstring, from the ast of `module`'s source (nothing imported: a package
    that re-exports its class, `from .transform import Class`, is followed by its files)."""
    return _class_docstring(_source_path(module), name, module)


def _source_path(module: str) -> str:
    parent, _, leaf = module.rpartition(".")
    spec = importlib.util.find_spec(parent)  # imports `parent`'s packages only, never `module`
    for folder in spec.submodule_search_locations or ():
        for candidate in (os.path.join(folder, leaf, "__init__.py"), os.path.join(folder, f"{leaf}.py")):
            if os.path.exists(candidate):
                return candidate
    raise LookupError(f"no source for {module}")


def _class_docstring(path: str, name: str, module: str) -> str:
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return ast.get_docstring(node, clean=False) or ""
        if isinstance(node, ast.ImportFrom) and any(alias.name == name and alias.asname is None for alias in node.names):
            package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
            origin = importlib.util.resolve_name("." * node.level + (node.module or ""), package) if node.level else node.module
            return _docstring(origin, name)
    raise LookupError(f"{module} defines no class {name}")
