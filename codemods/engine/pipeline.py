"""Parse once, run the selected codemods in order, check the output: the per-file heart of the tool.

libcst, the statement map, the code generator and the codemods are imported where a file is
parsed and run (`_parse`, `_run`): a file whose every firing codemod is declined by its triggers
or gates (registry.py, codemods/gates/) costs neither their import nor a parse.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Sequence

from codemods.engine import depth
from codemods.helpers.context import FileContext
from codemods.engine.positions import Origin, noqa_broken, originally
from codemods.helpers.noqa import any_ours, is_suppressed, noqa_lines
from codemods.helpers.scan import Scan, indirect_spellings
from codemods.registry import Spec, Stage
from codemods.results import Finding, Problem

if TYPE_CHECKING:
    import libcst as cst

    from codemods.engine.codegen import ModuleCode
    from codemods.engine.statement_map import StatementMap


@dataclass(frozen=True)
class Result:
    code: str
    changed: bool = False
    parsed: bool = False
    rewrites: dict[str, int] | None = None
    findings: tuple[Finding, ...] = ()
    problem: Problem | None = None
    notes: tuple[str, ...] = ()


_UNREPRODUCED = "libcst cannot reproduce this file byte-for-byte; not rewritten, to avoid spurious changes"


def _compile_error(code: str, path: str) -> SyntaxError | None:
    return _compiled(code, path, keep_ast=False)[1]


def compiles(code: str) -> bool:
    """The output guard's first test, for output this run did not make (engine/cache.py)."""
    return _compile_error(code, "<cached>") is None


def _compiled(code: str, path: str, keep_ast: bool = True) -> tuple[ast.Module | None, SyntaxError | None]:
    """(CPython's ast of `code`, None), or (None, the SyntaxError compiling it raises). With
    `keep_ast` (an output, whose ast the name guard reads) the text is parsed once and the tree
    compiled, which raises what compiling the text raises (the parser's errors, then the
    compiler's: `return` outside a function...); without, the text is compiled directly."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning for "\d" and friends is not ours to print
            tree = ast.parse(code, path) if keep_ast else None
            compile(tree if keep_ast else code, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return None, exc
    except (ValueError, RecursionError, MemoryError) as exc:
        return None, SyntaxError(str(exc) or type(exc).__name__)
    return tree, None


# libcst's native parser overflows its stack (the process dies) on brackets nested thousands
# deep, and takes minutes on a line of 200k operators; CPython refuses both in milliseconds
# (its limit is 200 nested brackets). Such text goes to CPython first, and only on to libcst
# when CPython accepts it. Real code is never near these limits, so the check is a cheap scan.
_BRACKET = re.compile(r"[(\[{)\]}]")
_MAX_DEPTH = 150
_MAX_LINE = 10_000


def _pathological(text: str) -> bool:
    if max(map(len, text.split("\n")), default=0) > _MAX_LINE:
        return True
    depth = 0
    for match in _BRACKET.finditer(text):
        if match.group() in "([{":
            depth += 1
            if depth > _MAX_DEPTH:
                return True
        elif depth:
            depth -= 1
    return False


def _parse(text: str, path: str, scan: Scan | None = None, hits: Sequence[int] = ()) -> cst.Module | Problem:
    """libcst's tree of `text`, or the Problem that stops it. With `scan` (CPython's ast of the
    text), the bodies of the functions that hold none of the `hits` lines are parsed only when
    something reads them (engine/lazy.py)."""
    import libcst as cst

    pathological = _pathological(text)
    if scan is not None and scan.source == text and not pathological:
        from codemods.engine import lazy

        try:
            tree = lazy.parse(text, scan.module, hits)
        except Exception:  # the skeleton did not parse: the whole text says why
            tree = None
        if tree is not None:
            return tree
    if pathological:
        python = _compile_error(text, path)
        if python is not None:
            return Problem(path, python.lineno or 0, f"syntax error: {python.msg}")
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        # CPython's message is the one users know ("Missing parentheses in call to 'print'").
        python = _compile_error(text, path)
        if python is not None:
            return Problem(path, python.lineno or exc.raw_line, f"syntax error: {python.msg}")
        return Problem(path, exc.raw_line, f"libcst cannot parse this file: {exc.message}")
    except (RecursionError, MemoryError) as exc:
        return Problem(path, 0, f"too deeply nested to parse ({type(exc).__name__})")
    except Exception as exc:  # libcst's native parser raises plain exceptions on some inputs
        return Problem(path, 0, f"libcst cannot parse this file: {exc}")


def _run(
    tree: cst.Module,
    specs: Sequence[Spec],
    file: FileContext,
    statement_map: StatementMap | None = None,
    declined: frozenset[str] = frozenset(),
    codegen: ModuleCode | None = None,
):
    """Run `specs` over `tree`; returns (tree, rewrites, findings, tree's code when already made)
    or raises _CodemodFailed.

    `declined`: codes whose AST gate found nothing in the original text; they are skipped unless
    an earlier codemod rewrote the tree and their gate then finds something in the new text (TM004
    adding `import torch` makes a bare `torch.load(...)` TM301's).

    `statement_map` (the statement map of the text `tree` was parsed from) lets codemods with PRUNE skip
    the statements that hold none of their words. After a codemod rewrote the tree, the map is
    made again from the new text before the next codemod (statements it rebuilt are not in the
    old map, and positions for them would cost a layout of the whole module).

    `codegen`: the file's ModuleCode, which makes that text from the statements that changed."""
    from codemods.engine.codegen import ModuleCode
    from codemods.engine.statement_map import StatementMap
    from codemods.engine.walk import CodemodContext

    codegen = codegen if codegen is not None else ModuleCode()
    rewrites: dict[str, int] = {}
    findings: list[Finding] = []
    stale = False
    text = None  # tree.code, when a rebuild made it and nothing rewrote since
    origin: Origin | None | bool = False  # `tree`'s text mapped to `file.origin`; False: not made yet
    staged = file  # `file` with its noqa lines moved to `tree`'s text

    def walking() -> str:
        """The text of `tree`."""
        nonlocal text
        if text is None and not rewrites and statement_map is not None:
            return statement_map.source
        text = text if text is not None else codegen(tree)
        return text

    def walked() -> Origin | None:
        """The map from `tree`'s text to the original file's (None: they are the same)."""
        nonlocal origin
        if origin is False:
            origin = Origin.between(file.origin, walking())
        return origin

    for spec in specs:
        if stale:
            text = codegen(tree)
            statement_map, stale = StatementMap.of(text, tree, Scan.of(text, file.facts, file.path)), False
        if spec.code in declined:
            if not rewrites:
                continue
            scan = statement_map.scan if statement_map is not None else Scan.of(tree.code, file.facts, file.path)
            if scan is not None and not spec.gate.may_act(scan, spec.sites, file.facts):
                continue
        if staged is file and file.origin is not None and any_ours(file.noqa) and walked() is not None:
            staged = replace(file, noqa=walked().noqa(file.noqa))
        # A fresh context per codemod: chained codemods sharing one re-apply each other's imports.
        codemod = spec.codemod(CodemodContext(filename=file.path, codegen=codegen), staged)
        codemod._prepare(statement_map, spec.sites if codemod.PRUNE else None)
        try:
            new = codemod.transform_module(tree)
        except Exception as exc:
            raise _CodemodFailed(spec.code, f"{type(exc).__name__}: {exc}") from exc
        found = codemod.findings
        broken = noqa_broken(spec, staged, walking, lambda: codegen(codemod._walked)) if codemod.rewrites else None
        if broken is not None:  # not applied: what it rewrote is not listed for review either
            found = [*(f for f in found if f.kind != "review"), broken]
            codemod.rewrites = 0
        if found and file.origin is not None and walked() is not None:
            found = [originally(finding, walked()) for finding in found]
        findings.extend(found)
        if codemod.rewrites:
            rewrites[spec.code] = codemod.rewrites
            tree, text, origin, staged = new, None, False, file
            stale = statement_map is not None
    return tree, rewrites, findings, text


class _CodemodFailed(Exception):
    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


def _culprit(tree: cst.Module, specs: Sequence[Spec], file: FileContext, statement_map: StatementMap | None) -> str:
    """Replay the pipeline one codemod at a time; the first whose output stops compiling."""
    for spec in specs:
        tree, rewrites, _, _ = _run(tree, [spec], file, statement_map)
        if rewrites and _compile_error(tree.code, file.path) is not None:
            return spec.code
    return specs[-1].code if specs else "?"


def _firing(specs: Sequence[Spec], source: str, file: FileContext) -> list[Spec]:
    """The codemods that may change this text: trigger regexes first, then the codemod's own gate.
    The triggers also read the qualified names of what the file gets by a star import or a
    re-export (`GradScaler` from `from utils import *` reads as torch.cuda.amp.GradScaler)."""
    indirect = indirect_spellings(file.facts, file.path, source)
    seen = f"{source}\n{indirect}" if indirect else source
    return [s for s in specs if s.fires_on(seen) and (s.gate.applies is None or s.gate.applies(source, file.facts))]


def _gated(firing: list[Spec], source: str, file: FileContext) -> tuple[frozenset[str], Scan | None]:
    """The codes in `firing` whose ast gate finds none of their statement_map in `source` (most files
    that say `softmax` pass `dim=`; most `.float` is `x.float()`, not `np.float`), and the Scan,
    which the statement map reuses. Without an ast (a syntax error, Python 2), none."""
    gated = [s for s in firing if s.gate.may_act is not None]
    if not gated:
        return frozenset(), None
    scan = Scan.of(source, file.facts, file.path)
    if scan is None:
        return frozenset(), None
    return frozenset(s.code for s in gated if not s.gate.may_act(scan, s.sites, file.facts)), scan


def transform_source(source: str, specs: Sequence[Spec], file: FileContext | None = None, *, lazy: bool = True) -> Result:
    """Migrate one module's text with `specs` (in the given order, normally PIPELINE order).

    Never raises for bad input: problems come back in `Result.problem`, with the text unchanged.
    `lazy`: function bodies may be parsed when first read (engine/lazy.py); False: the whole
    text is parsed up front.
    """
    try:
        result = _transform(source, specs, file, lazy=lazy)
        if not depth.overflowed(result.problem):
            return result
    except RecursionError:
        pass
    try:  # valid code may nest deeper than the default recursion limit lets a walk go
        return depth.on_deep_stack(_transform, source, specs, file, lazy=lazy)
    except RecursionError:
        reason = "too deeply nested for the codemods (RecursionError); left as it is"
        return Result(code=source, problem=Problem((file or FileContext()).path, 0, reason))


def _transform(source: str, specs: Sequence[Spec], file: FileContext | None, *, lazy: bool) -> Result:
    given = file
    file = file or FileContext()
    firing = _firing(specs, source, file)
    declined, scan = _gated(firing, source, file)
    if len(declined) == len(firing):  # nothing to do here; a later rewrite cannot change that
        return Result(code=source)
    file = replace(file, noqa=noqa_lines(source), origin=source)  # the text every position is of

    original = source
    scan = scan if scan is not None else Scan.of(source, file.facts, file.path)  # the statement map's too
    late = _lazy_bodies(firing, declined, scan) if lazy else (None, [])
    tree = _parse(source, file.path, *late)
    repaired: tuple[Finding, ...] = ()
    if isinstance(tree, Problem):
        text_stage = next((s for s in firing if s.stage is Stage.TEXT), None)
        fixed = _repair_text(source, file, text_stage) if text_stage is not None else None
        if fixed is None:
            return Result(code=source, problem=tree)
        source, tree, repaired = fixed
        firing, declined, scan = _firing(specs, source, file), frozenset(), None
    firing = [s for s in firing if s.stage is not Stage.TEXT]
    # The statement map prunes walks, and gives findings their positions at the cost of one
    # statement's layout instead of the whole module's: made for every parsed file.
    from codemods.engine.codegen import ModuleCode
    from codemods.engine.statement_map import StatementMap

    statement_map = StatementMap.of(source, tree, scan if scan is not None else Scan.of(source, file.facts, file.path))
    codegen = ModuleCode()
    seeded = codegen.seed(source, tree, statement_map)  # kept statements are copied from `source`
    try:
        new_tree, rewrites, findings, new_code = _run(tree, firing, file, statement_map, declined, codegen)
    except _CodemodFailed as exc:
        if late[0] is not None:  # a body parsed late may be what failed: the whole text's parse says what is wrong
            return transform_source(original, specs, given, lazy=False)
        return Result(
            code=original, parsed=True, problem=Problem(file.path, 0, f"internal error: {exc.reason}", exc.code)
        )
    found = (*repaired, *findings)
    repairs = {text_stage.code: sum(f.kind == "review" for f in repaired)} if repaired else {}
    rewrites = {**repairs, **rewrites}
    if not rewrites:
        return Result(code=original, parsed=True, findings=found)

    # libcst must write what it rebuilt as the source has it, less the rewrites: each statement a
    # codemod replaced must generate as its source lines (seeded), or the whole input as the source.
    reproduced = None if seeded else codegen(tree) == source  # first: the output reuses its pieces
    code = (codegen(new_tree) if new_code is None else new_code) if rewrites.keys() - repairs.keys() else source
    if code == original:
        return Result(code=original, parsed=True, findings=found)
    if reproduced is None:
        reproduced = codegen.reproduces(tree, new_tree)
    if not reproduced:
        return Result(code=original, parsed=True, findings=found, problem=Problem(file.path, 0, _UNREPRODUCED))

    # The output guard: never hand back code that CPython does not parse and compile. (libcst
    # re-reading its own output, once part of the guard, cost as much as parsing the inputs of
    # the changed files again. What libcst writes from a tree it parsed, it reads:
    # the idempotence tests re-run every fixture's and corpus file's output through the pipeline.)
    output, error = _compiled(code, file.path)
    if error is not None:
        before = _compile_error(source, file.path)
        if before is not None:
            reason = f"does not compile with this Python ({before.msg}); left as it is"
            return Result(code=original, parsed=True, problem=Problem(file.path, before.lineno or 0, reason))
        culprit = _culprit(tree, firing, file, statement_map)
        reason = f"internal error: the rewrite would not compile ({error.msg}); file left untouched"
        return Result(code=original, parsed=True, problem=Problem(file.path, error.lineno or 0, reason, culprit))
    # The name guard (engine/name_guard.py): a codemod whose output leaves a name unbound, an
    # import unused or doubled, or a `.to()` torch refuses is dropped from this file, with a finding.
    from codemods.engine import name_guard  # only for a file that changes

    replay = name_guard.Replay(tree, firing, file, statement_map, declined, _run, _compile_error)
    guarded = name_guard.guard(source, code, rewrites, replay, output)
    if guarded is not None and guarded.code != source and seeded and ModuleCode()(tree) != source:
        # the guard's replays write whole trees (`tree.code`): they need the whole round trip
        return Result(code=original, parsed=True, findings=found, problem=Problem(file.path, 0, _UNREPRODUCED))
    if guarded is not None:
        code, found = guarded.code, (*repaired, *guarded.findings)
        rewrites = {**repairs, **guarded.rewrites}
        if code == original:
            return Result(code=original, parsed=True, findings=found)
    notes = tuple(f"{f.path}:{f.line}: {f.message}" for f in repaired if f.kind == "review")
    return Result(code=code, changed=True, parsed=True, rewrites=rewrites, findings=found, notes=notes)


def _lazy_bodies(firing: Sequence[Spec], declined: frozenset[str], scan: Scan | None) -> tuple[Scan | None, list[int]]:
    """(the Scan, the lines holding a firing codemod's words) when function bodies can wait to
    be parsed: every codemod that may walk this file prunes its walk (one that walks it all would
    read every body at once). (None, []) otherwise."""
    walking = [s for s in firing if s.stage is not Stage.TEXT and s.code not in declined]
    if scan is None or not walking or not all(s.codemod.PRUNE for s in walking):
        return None, []
    return scan, scan.hits([words for s in firing for words in s.sites])


def _repair_text(source: str, file: FileContext, spec: Spec):
    """A text stage's repair of a file libcst cannot parse (TM000: `async` used as a name):
    (text, tree, findings), or None when the file still does not parse (then the original syntax
    error is the one reported)."""
    fixed = spec.codemod.repair_text(source)
    if fixed is None or not fixed.edits:
        return None
    tree = _parse(fixed.text, file.path)
    if isinstance(tree, Problem):
        return None
    findings = tuple(
        Finding(
            code=spec.code,
            path=file.path,
            line=r.line,
            column=r.column,
            message=r.message,
            safety=spec.codemod.SAFETY,
            suggestion=r.suggestion,
            kind=r.kind,
        )
        for r in fixed.repairs
        if not is_suppressed(file.noqa, r.line, r.line, spec.code) or r.kind == "review"
    )
    return fixed.text, tree, findings
