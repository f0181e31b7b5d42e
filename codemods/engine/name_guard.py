"""The output guard for names and imports: a rewrite must not break what a static check can see.

Next to the compile guard (engine/pipeline.py), every changed file is held against its input with
pyflakes, and with an `ast` pass for `.to()` calls. Only what the output has and the input had
not counts (old code is full of pyflakes messages that are none of our business):

- a name used but bound nowhere (NameError), or read in a function before the function assigns
  it (UnboundLocalError), or reachable only through a `from m import *` that no code of the
  input relied on for that name;
- an import that the rewrite left unused (not in an `__init__.py`: there an import is the
  package's interface, used or not), or a name imported (or defined) again while the first one
  is unused;
- a `.to(...)` with a keyword that neither `Tensor.to` nor `Module.to` takes, or more positional
  arguments than they take;
- a torch symbol newer than the file's target torch (helpers/emitted.py; only when the target is
  older than the newest release: a codemod that holds such a rewrite back itself never gets here).

An import a rewrite left unused is retired (engine/import_retirement.py), the rewrite kept.
For anything else the output has, the pipeline is replayed one codemod at a time to find the codemod
whose output first had it (and kept it to the end); that codemod's change to this file is
dropped (the pipeline runs again without it, so the file gets what the other codemods make of
it, or stays as it is) and a finding names the codemod and the reason. Cost: one pyflakes run
per changed file when its output has no message of these kinds (most: 71 of 76 changed files of
five corpus projects), two otherwise; the replay only when something is caught.

pyflakes is imported on first use: start-up and files nothing rewrote never pay for it.
"""

from __future__ import annotations

import ast
import difflib
import os
import re
import warnings
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

from codemods.helpers import emitted
from codemods.helpers.scan import names_taken
from codemods.results import Finding
from codemods.versions import NEWEST, Version, format_version

if TYPE_CHECKING:
    import libcst as cst

    from codemods.helpers.context import FileContext
    from codemods.engine.statement_map import StatementMap
    from codemods.registry import Spec

# torch 2.x `Tensor.to(device=None, dtype=None, non_blocking=False, copy=False, *,
# memory_format=...)`, `Tensor.to(other, non_blocking, copy)`, and `Module.to(device, dtype,
# non_blocking, tensor=..., memory_format=...)`; tests/test_name_guard.py checks the installed torch.
TO_KEYWORDS = frozenset({"device", "dtype", "non_blocking", "copy", "memory_format", "tensor"})
TO_MAX_POSITIONAL = 4

# Kinds whose comparison is by name: a name unbound somewhere in the input (old code that relies
# on `exec`, injected builtins, Python 2's `unicode`) is no new breakage where a rewrite uses it.
_UNBOUND = ("undefined-name", "unbound-local", "star-name")

_REASONS = {
    "undefined-name": "`{}` used but bound nowhere (NameError)",
    "unbound-local": "`{}` read in a function before the function assigns it (UnboundLocalError)",
    "star-name": "`{}` used, bound nowhere in this file, and no code before relied on a `*` import for it",
    "unused-import": "the import `{}` unused",
    "duplicate-import": "`{}` imported or defined a second time while the first is unused",
    "bad-to-call": "a `.to()` call with {}, which neither Tensor.to nor Module.to takes (TypeError)",
    "too-new": "{}",
}


@dataclass(frozen=True)
class Breakage:
    """One thing the guard holds against an output: its kind, the name it is about (the bound
    name of an import; the argument of a `.to()`), its line in the text it was found in, and
    how the message shows it (an import as written: `torch.nn as nn`)."""

    kind: str
    name: str
    line: int
    shown: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return (self.kind, self.name)

    @property
    def reason(self) -> str:
        return _REASONS[self.kind].format(self.shown or self.name)


_UNPARSED = Breakage("undefined-name", "<the whole file: it no longer parses>", 0)

# Known defects, tolerated until their codemods are fixed (each leaves the import of what it
# rewrote away unused): code -> the kinds not held against it. Only
# import hygiene is ever listed here, never a kind that makes code crash.
PENDING: dict[str, frozenset[str]] = {}  # none left: TM103 retires the `nn` import it left unused


def tolerated(breakage: Breakage, codes: Iterable[str]) -> bool:
    """Whether `breakage` is a known defect (PENDING) of one of the codemods `codes`."""
    return any(breakage.kind in PENDING.get(code, ()) for code in codes)


@dataclass(frozen=True)
class Profile:
    """What the guard sees in one text."""

    breakages: tuple[Breakage, ...]
    tree: ast.Module = field(repr=False, compare=False)

    @cached_property
    def unbound(self) -> frozenset[str]:
        return frozenset(b.name for b in self.breakages if b.kind in _UNBOUND)

    @cached_property
    def counts(self) -> Counter:
        return Counter(b.key for b in self.breakages if b.kind not in _UNBOUND)

    @cached_property
    def imported(self) -> Counter:
        """How many imports, anywhere in the file, bind each name (only asked for when an
        import may have become unused: one more walk of the tree)."""
        bound: Counter = Counter()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                bound.update(a.asname or a.name.partition(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                bound.update(a.asname or a.name for a in node.names)
        return bound

    def new_against(self, base: Profile) -> tuple[Breakage, ...]:
        """This text's breakages that `base` did not have: a name unbound nowhere in `base`;
        one occurrence more of anything else. An import counts as left unused when `base` used
        that name, or when it is a new name and no import of `base` was renamed (a rewrite that
        renames an unused import, `_LRScheduler` -> `LRScheduler`, does not make it unused)."""
        unbound, counts, seen, new = base.unbound, base.counts, Counter(), []
        for b in self.breakages:
            seen[b.key] += 1
            if b.kind in _UNBOUND:
                fresh = b.name not in unbound and seen[b.key] == 1
            else:
                fresh = seen[b.key] > counts[b.key]
            if fresh and b.kind == "unused-import":
                used_before = base.imported[b.name] > counts[b.key]
                renamed = any(name not in self.imported for name in base.imported)
                fresh = used_before or (b.name not in base.imported and not renamed)
            if fresh:
                new.append(b)
        return tuple(new)


def _bound_name(shown: str, line: str) -> str:
    """The name an unused import binds, from how pyflakes shows it (`torch.nn as F`, `.utils.x`,
    `torch.nn`) and its statement's line: `import torch.nn` binds `torch`, `from torch import nn`
    (also shown `torch.nn`) and `import torch.nn as nn` bind `nn`."""
    full, _, alias = shown.partition(" as ")
    if alias:
        return alias
    if line.lstrip().startswith("from") or "." not in full or re.search(rf"\bas\s+{re.escape(full.rpartition('.')[2])}\b", line):
        return full.rpartition(".")[2]
    return full.partition(".")[0]


def _star_bound(tree: ast.Module, path: str, facts) -> frozenset[str]:
    """The names this file's star imports are known to bind (torch's own modules from the
    table, the repository's from its facts): using one of them is no guess."""
    stars = [(n.level, n.module or "") for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.names[0].name == "*"]
    if not stars:
        return frozenset()
    from codemods.helpers.scan import FileNames

    return frozenset(FileNames.of(stars, facts, path).star_names())


def _messages(tree: ast.Module, path: str, lines: Sequence[str], facts=None) -> Iterable[Breakage]:
    from pyflakes import checker, messages

    kinds = {
        messages.UndefinedName: "undefined-name",
        messages.UndefinedLocal: "unbound-local",
        messages.ImportStarUsage: "star-name",
        messages.UnusedImport: "unused-import",
        messages.RedefinedWhileUnused: "duplicate-import",
    }
    package = os.path.basename(path) == "__init__.py"
    interface = names_taken(facts, path)  # imports other files of the repository take from this one
    star_bound: frozenset[str] | None = None
    found = checker.Checker(tree, filename=path, withDoctest=False)
    _release(found)
    for message in found.messages:
        kind = kinds.get(type(message))
        if kind is None or (package and kind == "unused-import"):
            continue  # in a package's __init__.py an import is its interface, used or not
        name = str(message.message_args[0])
        if kind == "star-name":
            star_bound = _star_bound(tree, path, facts) if star_bound is None else star_bound
            if name in star_bound:
                continue
        if kind == "unused-import":
            line = lines[message.lineno - 1] if 0 < message.lineno <= len(lines) else ""
            bound = _bound_name(name, line)
            if bound not in interface:
                yield Breakage(kind, bound, message.lineno, name)
        else:
            yield Breakage(kind, name, message.lineno)


def _release(found) -> None:
    """Break the reference cycles a pyflakes Checker leaves once its messages are made: its
    node handlers are bound methods of itself, and a used binding points back at the scope that
    holds it. Left alone, the checker, its scopes and the whole ast go to the cycle collector,
    which engine/runner.py pauses while a file is processed: this way they go as soon as the
    caller is done with the messages."""
    getattr(found, "_nodeHandlers", {}).clear()
    for scope in (*getattr(found, "deadScopes", ()), *getattr(found, "scopeStack", ())):
        scope.clear()


def _bad_to_calls(tree: ast.Module) -> Iterable[Breakage]:
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "to"):
            continue
        for keyword in node.keywords:
            if keyword.arg is not None and keyword.arg not in TO_KEYWORDS:
                yield Breakage("bad-to-call", f"`{keyword.arg}=`", node.lineno)
        if len(node.args) > TO_MAX_POSITIONAL and not any(isinstance(a, ast.Starred) for a in node.args):
            yield Breakage("bad-to-call", f"{len(node.args)} positional arguments", node.lineno)


def profile(
    text: str, path: str = "<string>", tree: ast.Module | None = None, target: Version = NEWEST, facts=None
) -> Profile | None:
    """The guard's view of `text` (whose `ast` is `tree`, when already parsed) for output that
    must run on torch `target`, in a repository with these `RepoFacts` (what its star imports
    bind); None when CPython's `ast` does not parse it."""
    if tree is None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # SyntaxWarning for "\d": not ours to print
                tree = ast.parse(text, path)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
    found = list(_messages(tree, path, text.splitlines(), facts))
    if ".to(" in text:
        found.extend(_bad_to_calls(tree))
    for symbol, version, line in emitted.too_new(tree, target):
        shown = f"`{symbol}` in use, which needs torch {format_version(version)} (the target is torch {format_version(target)})"
        found.append(Breakage("too-new", symbol, line, shown))
    found.sort(key=lambda b: b.line)
    return Profile(tuple(found), tree)


def introduced(
    before: str, after: str, path: str = "<string>", target: Version = NEWEST, facts=None
) -> tuple[Breakage, ...]:
    """What `after` (a rewrite of `before`) breaks that `before` did not; lines are `after`'s,
    in a repository with these `RepoFacts` (an import other files take from this one is used).
    Nothing when `before` does not parse with `ast` (there is nothing to hold `after` against)."""
    result = profile(after, path, target=target, facts=facts)
    if result is not None and not result.breakages:
        return ()
    base = profile(before, path, target=target, facts=facts)
    if base is None:
        return ()
    if result is None:
        return (_UNPARSED,)
    return result.new_against(base)


# -- dropping the change of the codemod that broke something ------------------------------------


@dataclass(frozen=True)
class Replay:
    """What the pipeline ran on one file, so that the guard can run it again: the parsed input,
    the firing codemods in order, and the engine's own `_run` and compile check."""

    tree: cst.Module
    specs: Sequence[Spec]
    file: FileContext
    statement_map: StatementMap | None
    declined: frozenset[str]
    run: Callable  # engine/pipeline.py's _run
    compile_error: Callable[[str, str], object]


@dataclass(frozen=True)
class Guarded:
    """The file without the dropped codemods' changes."""

    code: str
    rewrites: dict[str, int]
    findings: tuple[Finding, ...]
    dropped: dict[str, tuple[Breakage, ...]] = field(default_factory=dict)


def _guarded(spec: Spec) -> bool:
    # A codemod that breaks code on purpose (tests/faults.py, for verify's own tests) opts out.
    return getattr(spec.codemod, "NAME_GUARD", True)


def _attribute(
    replay: Replay, base: Profile, dropped: Iterable[str], retiring: bool = False
) -> dict[str, tuple[list[Breakage], str]]:
    """Run the codemods one at a time; each breakage of the last output goes to the codemod whose
    output first had it, if it stayed to the end. {code: (its breakages, its output)}. When
    `retiring`, an import left unused is nobody's fault: it is retired, not its codemod dropped."""
    from codemods.engine import import_retirement as retirement

    owner: dict[tuple[str, str], tuple[str, Breakage, str]] = {}
    tree, changed = replay.tree, False
    for spec in replay.specs:
        if spec.code in dropped:
            continue
        # Once the tree changed, gates and the statement map (speed only) no longer apply.
        new, rewrites, _, text = replay.run(
            tree, [spec], replay.file, None if changed else replay.statement_map, frozenset() if changed else replay.declined
        )
        if not rewrites:
            continue
        tree, changed = new, True
        text = text if text is not None else tree.code
        now = profile(text, replay.file.path, target=replay.file.target_torch, facts=replay.file.facts)
        if now is None:  # not parseable: everything from here on is this codemod's doing
            return {spec.code: ([_UNPARSED], text)}
        new_keys = {b.key: b for b in now.new_against(base) if not (retiring and retirement.retirable(b, now.tree))}
        owner = {key: owner.get(key, (spec.code, b, text)) for key, b in new_keys.items()}
    guarded = {s.code for s in replay.specs if _guarded(s)}
    by_code: dict[str, tuple[list[Breakage], str]] = {}
    for code, breakage, text in owner.values():
        if code in guarded and not tolerated(breakage, [code]):
            by_code.setdefault(code, ([], text))[0].append(breakage)
    return by_code


def _input_line(source: str, output: str, line: int) -> int:
    """The line of `source` that `output`'s `line` came from, or the first line of the change
    that produced it."""
    if line <= 0:
        return 1
    matcher = difflib.SequenceMatcher(None, source.splitlines(), output.splitlines(), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if j1 < line <= j2:
            return i1 + (line - 1 - j1) + 1 if tag == "equal" else i1 + 1
    return max(1, len(source.splitlines()))


def _finding(spec: Spec, breakages: Sequence[Breakage], source: str, output: str, path: str) -> Finding:
    reasons = "; ".join(dict.fromkeys(b.reason for b in breakages))
    return Finding(
        code=spec.code,
        path=path,
        line=_input_line(source, output, breakages[0].line),
        column=0,
        message=f"{spec.code} ({spec.name}) not applied to this file: its rewrite would leave {reasons}",
        safety=spec.codemod.SAFETY,
        suggestion=_suggestion(spec, breakages),
    )


def _suggestion(spec: Spec, breakages: Sequence[Breakage]) -> str:
    if all(b.kind == "unused-import" for b in breakages):
        # only a relative import (the project's own module, perhaps imported for what importing
        # it does), or one the remover sees used, is kept: whether it can go is the user's call
        return f"migrate this file's {spec.code} rewrites by hand, and remove the import if nothing needs its module imported"
    return f"migrate this file's {spec.code} rewrites by hand, or report it as a torch-migrate bug"


def untolerated(after: Profile | None, base: Profile, rewrote: Iterable[str]) -> bool | None:
    """Whether `after` has a new breakage that no codemod in `rewrote` is known for; None when
    its text does not parse."""
    if after is None:
        return None
    codes = list(rewrote)
    return any(not tolerated(b, codes) for b in after.new_against(base))


def guard(source: str, code: str, rewrote: Iterable[str], replay: Replay, tree: ast.Module | None = None) -> Guarded | None:
    """None when `code` (what the codemods `rewrote` made of `source`; `tree`, its ast when already
    parsed) breaks nothing that `source` did not; else the output with the imports its rewrites
    left unused retired, and without the changes of the codemods that broke anything else, with a
    finding for each."""
    from codemods.engine import import_retirement as retirement  # it reads this module's profiles

    path, target, facts = replay.file.path, replay.file.target_torch, replay.file.facts
    if code == source:
        return None
    after = profile(code, path, tree, target=target, facts=facts)
    if after is not None and not after.breakages:
        return None  # most outputs (71 of 76 changed corpus files): then the input needs no check
    scan = replay.statement_map.scan if replay.statement_map is not None else None  # the engine's ast of `source`
    base = profile(source, path, scan.module if scan is not None and scan.source == source else None, target, facts)
    if base is None or untolerated(after, base, rewrote) is False:
        return None
    by_code = {s.code: s for s in replay.specs}
    dropped: dict[str, tuple[Breakage, ...]] = {}
    findings: list[Finding] = []
    rewrites, found = None, []  # the last replay's, once there is one
    retiring = True  # imports left unused are retired, until the remover keeps one of them
    while True:
        if retiring and retirement.retirable_all(after, base, rewrote):
            if rewrites is not None:  # a replay's output: its findings and rewrites are at hand
                retired = retirement.retired(code, after, base, rewrote, replay)
                if retired is not None:
                    code = retired
                    break
                retiring = False  # the remover sees a use pyflakes does not: drop as for the rest
                continue
        else:
            culprits = _attribute(replay, base, dropped, retiring)
            if not culprits:  # what is left (if anything) is tolerated, or an unguarded codemod's doing
                break
            for culprit, (breakages, output) in culprits.items():
                dropped[culprit] = tuple(breakages)
                findings.append(_finding(by_code[culprit], breakages, source, output, path))
        tree, rewrites, found, text = replay.run(
            replay.tree, [s for s in replay.specs if s.code not in dropped], replay.file, replay.statement_map, replay.declined
        )
        code = (text if text is not None else tree.code) if rewrites else source
        after, rewrote = profile(code, path, target=target, facts=facts), rewrites
        if after is None or replay.compile_error(code, path) is not None:
            # Without the dropped codemods, the others' output does not even compile: keep none.
            return Guarded(source, {}, tuple(findings), dropped)
        if untolerated(after, base, rewrites) is False:
            break
    if rewrites is None:
        return None
    return Guarded(code, rewrites, (*found, *findings), dropped)
