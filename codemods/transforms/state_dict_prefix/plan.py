"""TM104's decisions as pure functions: from the survey and a block's statements to the edits
that replace a hand-written `module.` strip or the load of a maybe-prefixed checkpoint; for a
save of a wrapped model, a conditional made redundant, and the strips left over, the edit or
the finding.

Nothing here changes a tree or records anything. An `Edit` says what replaces what and what it
needs once tried (an import, the generated `unwrap_model`, a new name); the transformer applies
it through `rewrite()`, which may still keep the original (`# noqa`, an older target torch), and
then takes the next edit offered for the same statement.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import AbstractSet, Callable, Iterator, Sequence

import libcst as cst

from codemods.gates.state_dict_prefix import NOT_MODELS, PREFIX
from codemods.helpers.names import dotted
from codemods.transforms.state_dict_prefix.idioms import one_store, strip_comprehension, strip_loop
from codemods.transforms.state_dict_prefix.in_place import in_place_strip, keys_copy
from codemods.transforms.state_dict_prefix.nodes import (
    contains,
    is_pure_test,
    load_state_dict_call,
    names_in,
    parse_line,
    single_small,
    source_of,
    uses_any,
)
from codemods.transforms.state_dict_prefix.survey import Resolve, Survey

CONSUME = "consume_prefix_in_state_dict_if_present"
CONSUME_MODULE = "torch.nn.modules.utils"

# When an edit needs the `consume_prefix_in_state_dict_if_present` import: once it is tried
# (even if `# noqa` keeps the original), or only once it is applied.
TRIED = "tried"
APPLIED = "applied"

UNWRAP = "unwrap_model"


@dataclass(frozen=True)
class Edit:
    """One replacement for `rewrite(original, updated, replacement)`, and what it needs."""

    original: cst.CSTNode
    updated: cst.CSTNode
    replacement: cst.CSTNode | cst.FlattenSentinel | None
    """None: nothing to rewrite; trying the edit only retires `retire_import`."""
    statements: tuple[cst.CSTNode, ...] = ()
    """What the block holds instead of its `width` statements once the edit is applied."""
    width: int = 1
    consume: str | None = None
    """TRIED or APPLIED: when the edit needs the `consume_prefix...` import; None: never."""
    unwrap: bool = False
    """It calls the generated `unwrap_model` (asked for once tried)."""
    claims: str | None = None
    """A new name the edit binds: no later edit of the module may pick it."""
    retire_import: tuple[str, str] | None = None
    """(module, name) of an import the edit may leave unused (dropped only if it is)."""
    retire_names: tuple[str, ...] = ()
    """Local names whose imports the edit may leave unused (dropped only if they are)."""
    review: str | None = None


@dataclass(frozen=True)
class Decline:
    """A case left as it is, with the finding that says why."""

    node: cst.CSTNode
    message: str


@dataclass(frozen=True)
class BlockContext:
    """What the block plans read besides the statements: the survey, name resolution, and the
    enclosing scope's names (callables, so that a scope is only read when a plan asks)."""

    survey: Survey
    resolve: Resolve
    bound: Callable[[], AbstractSet[str]]
    """Names the enclosing scope's own statements assign (not its parameters)."""
    loaded: Callable[[], AbstractSet[str]]
    """Names of the enclosing scope assigned only from `torch.load`."""
    taken: Callable[[], AbstractSet[str]]
    """Every name of the module, and those earlier edits claimed."""


def consume_line(name: str) -> cst.SimpleStatementLine:
    """`consume_prefix_in_state_dict_if_present(name, "module.")`."""
    return parse_line(f'{CONSUME}({name}, "{PREFIX}")\n')


# -- saving, conditionals, leftovers -----------------------------------------------------------


def unwrapped_save(survey: Survey, original: cst.Call, updated: cst.Call) -> Edit | Decline:
    """`m.state_dict()` of a wrapped `m` (inside a save) as `unwrap_model(m).state_dict()`."""
    if not survey.helpers_ok:
        return Decline(original, "this module defines its own `unwrap_model`: save `model.module.state_dict()` by hand")
    owner = updated.func.value
    unwrapped = cst.Call(func=cst.Name(UNWRAP), args=[cst.Arg(owner)])
    return Edit(original, updated, updated.with_changes(func=updated.func.with_changes(value=unwrapped)), unwrap=True)


def merged_branches(original: cst.If, updated: cst.If) -> Edit | Decline | None:
    """`if isinstance(model, DataParallel): save(model.module...) else: save(model...)` saves
    `unwrap_model(model)` in both branches once migrated: keep one copy, not the test."""
    before, after = original.orelse, updated.orelse
    if not (isinstance(before, cst.Else) and isinstance(after, cst.Else)):
        return None
    if not (isinstance(updated.body, cst.IndentedBlock) and isinstance(after.body, cst.IndentedBlock)):
        return None
    body, other = list(updated.body.body), list(after.body.body)
    if [source_of(x) for x in body] != [source_of(x) for x in other] or source_of(original.body) == source_of(before.body):
        return None  # not the same, or the same already (the user's, not ours)
    test = source_of(updated.test)
    if after.leading_lines or after.body.header.comment or not is_pure_test(updated.test):
        # a comment would be lost, or the test does something that must still happen
        return Decline(
            original,
            f"both branches of `if {test}:` are the same once unwrapped; "
            "the test is kept (it calls something, or a comment is on its `else:`): drop one branch by hand",
        )
    body[0] = body[0].with_changes(leading_lines=[*updated.leading_lines, *body[0].leading_lines])
    return Edit(
        original,
        updated,
        cst.FlattenSentinel(body),
        # `nn` of `nn.DataParallel`, if used nowhere else
        retire_names=tuple(names_in(updated.test)),
        review=f"both branches of `if {test}:` are the same once unwrapped: one kept",
    )


def leftover_strips(survey: Survey, replaced: Sequence[cst.CSTNode]) -> tuple[Decline, ...]:
    """A finding for each hand-written strip that no applied edit replaced."""
    return tuple(
        Decline(
            strip,
            "hand-written `module.` stripping that is not one of the recognised idioms: strip the "
            f'prefix with `{CONSUME_MODULE}.{CONSUME}(state_dict, "module.")`',
        )
        for strip in survey.hand_strips
        if not any(contains(done, strip) for done in replaced)
    )


# -- loading: the statements of a block ----------------------------------------------------------


def block_edits(
    original: Sequence[cst.CSTNode],
    updated: Sequence[cst.CSTNode],
    i: int,
    before: Sequence[cst.CSTNode],
    context: BlockContext,
) -> Iterator[Edit]:
    """The edits that may replace statement `i` of a block (or it and the next), best first,
    each computed only when the one before it was not applied. `before` holds the statements
    the block already has in place of those before `i`."""
    if i + 1 < len(original):
        pair = (original[i], original[i + 1], updated[i], updated[i + 1], original[i + 2 :], context)
        for plan in (_copy_loop, _in_place_copy):
            edit = plan(*pair)
            if edit is not None:
                yield edit
    orig, new = original[i], updated[i]
    singles: tuple[Callable[[], Edit | None], ...] = (
        lambda: _comprehension(orig, new, context),
        lambda: _in_place(orig, new, original[i + 1 :], context),
        lambda: _retry(orig, new, context),
        lambda: _load(orig, new, before, context),
    )
    for plan in singles:
        edit = plan()
        if edit is not None:
            yield edit


def _copy_loop(init, loop, new_init, new_loop, rest, context: BlockContext) -> Edit | None:
    """`new = OrderedDict(); for k, v in sd.items(): new[k[7:]] = v` as a copy and the library call."""
    repo_wraps = context.survey.repo_wraps
    found = strip_loop(init, loop, context.resolve, repo_wraps)
    if found is None and isinstance(loop, cst.For):
        # `if k.startswith("module."): new[k[7:]] = v  else: new[k] = v`: the one-store form
        found = strip_loop(init, one_store(loop), context.resolve, repo_wraps)
    if found is None:
        return None
    name, ctor, source, loop_names = found
    if any(uses_any(stmt, loop_names) for stmt in rest):
        return None  # the loop variables are read afterwards: not exactly the idiom
    first = parse_line(f"{name} = {source_of(ctor)}({source_of(source)})\n")
    first = first.with_changes(leading_lines=new_init.leading_lines)
    second = consume_line(name).with_changes(leading_lines=new_loop.leading_lines)
    return Edit(loop, new_loop, cst.FlattenSentinel([first, second]), (first, second), width=2, consume=TRIED)


def _in_place(orig, new, rest, context: BlockContext, copy=None) -> Edit | None:
    """`for k in list(sd.keys()): if k.startswith("module."): sd[k[7:]] = sd.pop(k)`; with
    `copy`, the loop runs over a name that the statement before it filled with sd's keys."""
    found = in_place_strip(orig, context.survey.repo_wraps, copy)
    if found is None:
        return None
    source, loop_names = found
    if any(uses_any(stmt, loop_names | ({copy[0]} if copy else set())) for stmt in rest):
        return None  # the loop variables are read afterwards: not exactly the idiom
    line = consume_line(source_of(source)).with_changes(leading_lines=new.leading_lines)
    return Edit(orig, new, line, (line,), consume=TRIED)


def _in_place_copy(init, loop, new_init, new_loop, rest, context: BlockContext) -> Edit | None:
    """`all_keys = {k for k in sd.keys()}` then the in-place loop over `all_keys`."""
    copy = keys_copy(init)
    if copy is None:
        return None
    edit = _in_place(loop, new_loop, rest, context, copy)
    if edit is None:
        return None
    line = edit.statements[0]
    line = line.with_changes(leading_lines=[*new_init.leading_lines, *line.leading_lines])
    return replace(edit, statements=(line,), width=2)


def _comprehension(orig, new, context: BlockContext) -> Edit | None:
    """`new = {k[7:]: v for k, v in sd.items()}` as a copy and the library call."""
    found = strip_comprehension(orig, context.resolve, context.survey.repo_wraps)
    if found is None:
        return None
    name, ctor, source = found
    first = new.with_changes(
        body=[single_small(new).with_changes(value=cst.parse_expression(f"{source_of(ctor)}({source_of(source)})"))]
    )
    return Edit(orig, new, first, (first, consume_line(name)), consume=APPLIED)


def _retry(orig, new, context: BlockContext) -> Edit | None:
    """try: m.load_state_dict(sd)  except ...: <strip sd into n>; m.load_state_dict(n)"""
    if not isinstance(orig, cst.Try) or orig.orelse is not None or orig.finalbody is not None:
        return None
    if len(orig.handlers) != 1 or not isinstance(orig.body, cst.IndentedBlock) or len(orig.body.body) != 1:
        return None
    handler = orig.handlers[0]
    if handler.type is not None and (dotted(handler.type) or "") not in {"RuntimeError", "Exception", "KeyError"}:
        return None
    first = load_state_dict_call(single_small(orig.body.body[0]))
    if first is None:
        return None
    receiver, call = first
    if len(call.args) < 1 or call.args[0].keyword is not None or not isinstance(call.args[0].value, cst.Name):
        return None
    source = call.args[0].value.value
    steps = list(handler.body.body) if isinstance(handler.body, cst.IndentedBlock) else []
    if not steps:
        return None
    last = load_state_dict_call(single_small(steps[-1]))
    if last is None or source_of(last[0]) != source_of(receiver) or not last[1].args:
        return None
    stripped = last[1].args[0].value
    if not isinstance(stripped, cst.Name):
        return None
    strip = steps[:-1]
    ok = False
    if len(strip) == 2:
        found = strip_loop(strip[0], strip[1], context.resolve, context.survey.repo_wraps)
        ok = found is not None and found[0] == stripped.value and source_of(found[2]) == source
    elif len(strip) == 1:
        found = strip_comprehension(strip[0], context.resolve, context.survey.repo_wraps)
        ok = found is not None and found[0] == stripped.value and source_of(found[2]) == source
    if not ok or [source_of(a) for a in last[1].args[1:]] != [source_of(a) for a in call.args[1:]]:
        return None
    ctor = context.resolve(found[1])
    retire = None
    if ctor is not None and "." in ctor:
        module, _, obj = ctor.rpartition(".")
        retire = (module, obj)  # only if nothing else uses it
    if not context.survey.helpers_ok:
        return None if retire is None else Edit(orig, new, None, retire_import=retire)
    # the retry says the model may be wrapped (a wrapped model loads the prefixed keys first
    # time): load into the unwrapped module, whatever this file shows of the model
    load = parse_line(f"{UNWRAP}({source_of(receiver)}).{source_of(call.with_changes(func=call.func.attr))}\n")
    statements = (consume_line(source).with_changes(leading_lines=new.leading_lines), load)
    return Edit(
        orig, new, cst.FlattenSentinel(list(statements)), statements, consume=TRIED, unwrap=True, retire_import=retire
    )


def _load(orig, new, before: Sequence[cst.CSTNode], context: BlockContext) -> Edit | None:
    """m.load_state_dict(torch.load(p)) / m.load_state_dict(ckpt["model"]) in a repo that wraps."""
    survey = context.survey
    if not survey.repo_wraps or not survey.helpers_ok:
        return None
    found = load_state_dict_call(single_small(orig))
    if found is None:
        return None
    receiver, call = found
    owner = dotted(receiver) or ""
    if owner in {"self", ""} or any(w in owner.lower() for w in NOT_MODELS) or not may_hold_wrapper(receiver, context):
        return None
    if not call.args or call.args[0].keyword is not None or call.args[0].star:
        return None
    arg = call.args[0].value
    if _from_load(arg, context, direct=True):
        name = "state_dict"
        taken = context.taken()
        while name in taken:
            name += "_"
        hoist = parse_line(f"{name} = {source_of(arg)}\n").with_changes(leading_lines=new.leading_lines)
        args_code = ", ".join(
            [name] + [source_of(a.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for a in call.args[1:]]
        )
        load = parse_line(f"{UNWRAP}({source_of(receiver)}).load_state_dict({args_code})\n")
        statements = (hoist, consume_line(name), load)
        return Edit(orig, new, cst.FlattenSentinel(list(statements)), statements, consume=TRIED, unwrap=True, claims=name)
    if _from_load(arg, context, direct=False):
        text = source_of(arg)
        prev = before[-1] if before else None
        if prev is not None and source_of(prev).strip() == f'{CONSUME}({text}, "{PREFIX}")':
            return None  # already done (idempotence)
        load = new.with_changes(
            body=[
                single_small(new).with_changes(
                    value=cst.parse_expression(
                        f"{UNWRAP}({source_of(receiver)}).{source_of(call.with_changes(func=call.func.attr))}"
                    )
                )
            ],
            leading_lines=[],
        )
        statements = (consume_line(text).with_changes(leading_lines=new.leading_lines), load)
        return Edit(orig, new, cst.FlattenSentinel(list(statements)), statements, consume=TRIED, unwrap=True)
    return None


def may_hold_wrapper(receiver: cst.BaseExpression, context: BlockContext) -> bool:
    """A DataParallel/DDP wrapper may hold `receiver`: it is wrapped in this file (or, for
    `self.x`, anywhere in the repository), or it is a name this scope does not bind (a
    parameter: the caller may pass a wrapped model) in a repository that wraps. A model built
    here and never wrapped needs no unwrap_model and no prefix strip."""
    owner = dotted(receiver)
    if owner is None:
        return False
    if owner in context.survey.wrapped:
        return True
    if "." in owner:
        return False
    return context.survey.repo_wraps and owner not in context.bound()


def _from_load(expr: cst.BaseExpression, context: BlockContext, direct: bool) -> bool:
    """`torch.load(...)` (subscripted by literals) when direct; else a name assigned only from it."""
    while isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
        if not isinstance(expr.slice[0].slice.value, cst.SimpleString):
            return False
        expr = expr.value
    if direct:
        return isinstance(expr, cst.Call) and context.resolve(expr.func) == "torch.load"
    return isinstance(expr, cst.Name) and expr.value in context.loaded()
