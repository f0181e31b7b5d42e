"""TM004: `torch.cuda.amp.*` / `torch.cpu.amp.*` -> `torch.amp.*` with the device type."""

from __future__ import annotations

import libcst as cst

from codemods.helpers import arguments
from codemods.base import MigrationCodemod
from codemods.helpers.import_edits import UsedNamesRemover
from codemods.helpers.spelling import head, import_forms, reference, retire
from codemods.helpers.statements import drop_vanished, prune_if
from codemods.base import traverse

# Old qualified name -> (new qualified name, device type, kind). The submodule spellings are the
# classes' real homes, reachable as `from torch.cuda.amp.grad_scaler import GradScaler`.
AMP: dict[str, tuple[str, str, str]] = {}
for _device in ("cuda", "cpu"):
    for _old in ("autocast", "autocast_mode.autocast"):
        AMP[f"torch.{_device}.amp.{_old}"] = ("torch.amp.autocast", _device, "autocast")
    for _old in ("GradScaler", "grad_scaler.GradScaler"):
        AMP[f"torch.{_device}.amp.{_old}"] = ("torch.amp.GradScaler", _device, "scaler")
for _fn in ("custom_fwd", "custom_bwd"):
    for _old in (_fn, f"autocast_mode.{_fn}"):
        AMP[f"torch.cuda.amp.{_old}"] = (f"torch.amp.{_fn}", "cuda", "custom")

# `torch.cuda.amp.autocast(enabled, dtype, cache_enabled)` but
# `torch.amp.autocast(device_type, dtype, enabled, cache_enabled)`: positionals must become keywords.
AUTOCAST_POSITIONAL = ("enabled", "dtype", "cache_enabled")

_OLD_MODULES = ("torch.cuda", "torch.cpu")


def _device_arg(device: str, more: bool) -> cst.Arg:
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")) if more else cst.MaybeSentinel.DEFAULT
    return cst.Arg(value=cst.SimpleString(f'"{device}"'), comma=comma)


def _device_keyword(device: str, more: bool) -> cst.Arg:
    arg = arguments.as_keyword(cst.Arg(value=cst.SimpleString(f'"{device}"')), "device_type")
    if more:
        arg = arg.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return arg


class AmpNamespace(MigrationCodemod):
    """Move `torch.cuda.amp` / `torch.cpu.amp` to `torch.amp`, naming the device type.

    ## What it does
    Rewrites `torch.cuda.amp.autocast(...)`, `torch.cuda.amp.GradScaler(...)`,
    `torch.cuda.amp.custom_fwd`/`custom_bwd` and `torch.cpu.amp.autocast`/`GradScaler` to their
    `torch.amp` equivalents with the device type as an argument: `torch.amp.autocast("cuda", ...)`,
    `torch.amp.GradScaler("cuda", ...)`, `@torch.amp.custom_fwd(device_type="cuda")`. Every import
    form is followed (`import torch.cuda.amp as amp`, `from torch.cuda import amp`,
    `from torch.cuda.amp import autocast as ac`); the old import is removed once nothing uses it,
    and `import torch` is added when the module had no import that could spell `torch.amp`.

    ## Why is this bad?
    The per-device namespaces were deprecated in PyTorch 2.4: every construction warns
    (`FutureWarning`), also on CPU-only machines, and they will be removed.

    ## Example
    ```python
    import torch
    from torch.cuda.amp import GradScaler, autocast, custom_fwd

    scaler = GradScaler()
    with autocast(enabled=use_amp):
        ...

    @custom_fwd(cast_inputs=torch.float32)
    def forward(ctx, x): ...
    ```

    ## Use instead
    ```python
    import torch

    scaler = torch.amp.GradScaler("cuda")
    with torch.amp.autocast("cuda", enabled=use_amp):
        ...

    @torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.float32)
    def forward(ctx, x): ...
    ```

    ## Fix safety
    Safe: the old classes are thin subclasses that pass exactly these arguments on. Positional
    `autocast` arguments become keywords, because the new signature orders them differently. The
    new `autocast` takes its default `dtype` from `torch.get_autocast_dtype(device)` (float16 on
    CUDA, bfloat16 on CPU, the old defaults) unless a program changed it with
    `torch.set_autocast_dtype`. A reference that is not a call or decorator (`ctx = autocast`) cannot
    be given a device type and is reported instead; so is `autocast(*args)`.

    Nothing is left behind by a removed import: a block whose only statement was it
    (`if self.args.fp16: from torch.cuda import amp`) goes too when that has no effect, as TM002's
    leftovers do (helpers/statements.py): an `if` with a side-effect-free test and no `else`, and a
    `try` whose handlers only raise or pass (with nothing in its body it cannot raise). Any other
    such block (`if check():`, a handler that does something) is left as `pass`, with a finding.

    ## References
    - https://pytorch.org/docs/stable/amp.html
    - `torch/cuda/amp/autocast_mode.py`, `torch/cuda/amp/grad_scaler.py` (the deprecation notices)
    """

    PRUNE = True  # its sites, and the statement each sits in, are on trigger lines

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        self.forms = import_forms(tree)
        self.handled: set[int] = set()  # ids of original func/decorator expressions dealt with
        # updated compound statement -> the original (for the position of a finding about it)
        self.origins: dict[int, tuple[cst.CSTNode, cst.CSTNode]] = {}
        tree = super().transform_module_impl(tree)
        return self._prune_shells(tree)

    # -- blocks whose only statement was an import retired here ----------------------------

    def _prune_shells(self, tree: cst.Module) -> cst.Module:
        """`if fp16: from torch.cuda import amp` is `if fp16: pass` once the import goes: such a
        block goes with it where that has no effect (helpers/statements.py, as TM002 does)."""
        if not self.context.removed:
            return tree
        going, around = UsedNamesRemover(self.context.removed, self.context.codegen).plan(tree)  # what the removal after the walk takes
        if not around:  # only module-level imports go: no block can be left empty
            return tree
        return traverse(tree, _Shells(self, going, around))

    def _record_origin(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> cst.CSTNode:
        self.origins[id(updated_node)] = (original_node, updated_node)
        self.remember(original_node)
        return updated_node

    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> cst.If:
        return self._record_origin(original_node, updated_node)

    def leave_Try(self, original_node: cst.Try, updated_node: cst.Try) -> cst.Try:
        return self._record_origin(original_node, updated_node)

    def leave_For(self, original_node: cst.For, updated_node: cst.For) -> cst.For:
        return self._record_origin(original_node, updated_node)

    def leave_While(self, original_node: cst.While, updated_node: cst.While) -> cst.While:
        return self._record_origin(original_node, updated_node)

    def leave_With(self, original_node: cst.With, updated_node: cst.With) -> cst.With:
        return self._record_origin(original_node, updated_node)

    def _entry(self, expr: cst.BaseExpression) -> tuple[str, str, str] | None:
        name = self.qualified_name(expr)
        return AMP.get(name) if name else None

    # -- imports are never rewritten here; libcst's visitors add and drop them --------------

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def _retire_old(self, expr: cst.BaseExpression) -> None:
        local = head(expr)
        target = self.imports.aliases.get(local) if local else None
        if target and (target in _OLD_MODULES or target.startswith(tuple(f"{m}.amp" for m in _OLD_MODULES))):
            retire(self, self.forms, local)

    # -- calls: autocast(...), GradScaler(...), custom_fwd(...) -----------------------------

    def visit_Call(self, node: cst.Call) -> None:
        if self._entry(node.func) is not None:
            self.handled.add(id(node.func))

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        entry = self._entry(original_node.func)
        if entry is None:
            return updated_node
        new, device, kind = entry
        if new == "torch.amp.autocast" and not self.available(new):
            new = "torch.autocast"  # the same signature, since torch 1.10
        args = self._new_args(original_node, updated_node, kind, device)
        if args is None:
            return updated_node
        replacement = updated_node.with_changes(func=reference(self, new, self.forms), args=args)
        result = self.rewrite(original_node, updated_node, replacement)
        if result is replacement:
            self._retire_old(original_node.func)
        return result

    def _new_args(self, original: cst.Call, call: cst.Call, kind: str, device: str) -> list[cst.Arg] | None:
        args = list(call.args)
        if any(a.star == "*" for a in args):
            self.finding(
                original,
                f"`*args` passed to {self.code_for(original.func)}: add the device type {device!r} by hand",
                suggestion=f'{AMP[self.qualified_name(original.func)][0]}("{device}", ...)',
            )
            return None
        if kind == "scaler":  # GradScaler(device="cuda", init_scale, ...): the old order shifted by one
            return [_device_arg(device, bool(args)), *args]
        if kind == "autocast":
            positional = [i for i, a in enumerate(args) if a.keyword is None and not a.star]
            if len(positional) > len(AUTOCAST_POSITIONAL):
                self.finding(original, "more positional arguments than autocast accepts; left as it is")
                return None
            for slot, index in enumerate(positional):
                args[index] = arguments.as_keyword(args[index], AUTOCAST_POSITIONAL[slot])
            return [_device_arg(device, bool(args)), *args]
        # custom_fwd(fwd=None, *, cast_inputs=None): device_type goes after the positionals.
        if arguments.keyword(call, "device_type") is not None:
            return None
        at = sum(1 for a in args if a.keyword is None and not a.star)
        if at and at == len(args) and args[-1].comma == cst.MaybeSentinel.DEFAULT:
            args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        return [*args[:at], _device_keyword(device, at < len(args)), *args[at:]]

    # -- bare decorators: @custom_fwd ----------------------------------------------------------

    def visit_Decorator(self, node: cst.Decorator) -> None:
        if self._entry(node.decorator) is not None:
            self.handled.add(id(node.decorator))

    def leave_Decorator(self, original_node: cst.Decorator, updated_node: cst.Decorator) -> cst.Decorator:
        expr = original_node.decorator
        entry = self._entry(expr)
        if entry is None:
            return updated_node
        new, device, kind = entry
        if kind != "custom":
            self.finding(original_node, f"`@{self.code_for(expr)}` without a call; write `@{new}(\"{device}\")`")
            return updated_node
        call = cst.Call(func=reference(self, new, self.forms), args=[_device_keyword(device, False)])
        replacement = updated_node.with_changes(decorator=call)
        result = self.rewrite(original_node, updated_node, replacement)
        if result is replacement:
            self._retire_old(expr)
        return result

    # -- references that are neither called nor decorating: cannot take a device type ----------

    def _bare(self, expr: cst.BaseExpression | None) -> None:
        if expr is None or id(expr) in self.handled or not isinstance(expr, (cst.Name, cst.Attribute)):
            return
        entry = self._entry(expr)
        if entry is not None:
            new, device, _ = entry
            self.finding(
                expr,
                f"`{self.code_for(expr)}` is used without being called; its calls need the device type"
                f' (`{new}("{device}", ...)`)',
                suggestion=f'functools.partial({new}, "{device}")',
            )

    def visit_Arg(self, node: cst.Arg) -> None:
        self._bare(node.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        self._bare(node.value)

    def visit_Return(self, node: cst.Return) -> None:
        self._bare(node.value)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._bare(node.body)
        self._bare(node.orelse)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        self._bare(node.item)


_SUITES = (cst.IndentedBlock, cst.SimpleStatementSuite)
_CLAUSES = (cst.BaseCompoundStatement, cst.ExceptHandler, cst.ExceptStarHandler, cst.Else, cst.Finally, cst.MatchCase)


def _dead_handler(handler: cst.ExceptHandler) -> bool:
    """A handler that only re-raises or passes (`except AttributeError: raise AttributeError(...)`)."""
    body = handler.body.body if isinstance(handler.body, cst.IndentedBlock) else [handler.body]
    return all(
        isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite))
        and all(isinstance(small, (cst.Raise, cst.Pass)) for small in line.body)
        for line in body
    )


class _Shells(cst.CSTTransformer):
    """After TM004's walk, before the import removal: the blocks whose every statement is an import
    about to be removed (or a statement that went here). An `if` with a side-effect-free test and
    no `else` goes, and a `try` with only re-raising or passing handlers (a `try` whose body is
    empty cannot raise); any other such block is left to become `pass`, with a finding."""

    def __init__(self, codemod: AmpNamespace, going: set[int], enter: set[int]) -> None:
        super().__init__()
        self.codemod = codemod
        self.going = going  # ids of the import aliases the removal will take
        self.enter = enter  # ids of the compound statements and clauses around them
        # ids of the lines the removal will empty, of statements that go, of emptied blocks
        # (the values keep the nodes alive so that no id is reused)
        self.lines: dict[int, cst.CSTNode] = {}
        self.vanish: dict[int, cst.CSTNode] = {}
        self.emptied: dict[int, cst.CSTNode] = {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.Module, *_SUITES)):
            return True
        if isinstance(node, _CLAUSES):
            return id(node) in self.enter
        return False  # statement lines and expressions: nothing in them changes here

    def _goes(self, line: cst.BaseSuite | cst.SimpleStatementLine) -> bool:
        return all(
            isinstance(small, (cst.Import, cst.ImportFrom))
            and not isinstance(small.names, cst.ImportStar)
            and all(id(alias) in self.going for alias in small.names)
            for small in line.body
        )

    def leave_SimpleStatementLine(self, original_node, updated_node):
        if updated_node.body and self._goes(updated_node):
            self.lines[id(updated_node)] = updated_node
        return updated_node

    def leave_SimpleStatementSuite(self, original_node, updated_node):
        if updated_node.body and self._goes(updated_node):
            self.emptied[id(updated_node)] = updated_node
        return updated_node

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        body = updated_node.body
        if not any(id(s) in self.vanish or id(s) in self.lines for s in body):
            return updated_node
        if any(id(s) in self.vanish for s in body):
            kept, left = drop_vanished(body, self.vanish)
            if kept:
                updated_node = updated_node.with_changes(body=kept, footer=[*left, *updated_node.footer])
            else:
                updated_node = updated_node.with_changes(body=[cst.SimpleStatementLine([cst.Pass()], leading_lines=left)])
                self.emptied[id(updated_node)] = updated_node
                return updated_node
        if all(id(s) in self.lines for s in updated_node.body):
            self.emptied[id(updated_node)] = updated_node
        return updated_node

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if any(id(s) in self.vanish for s in updated_node.body):
            body, left = drop_vanished(updated_node.body, self.vanish)
            updated_node = updated_node.with_changes(body=body, footer=[*left, *updated_node.footer])
        return updated_node

    def leave_Else(self, original_node: cst.Else, updated_node: cst.Else) -> cst.Else:
        if id(updated_node.body) in self.emptied:
            self.vanish[id(updated_node)] = updated_node
        return updated_node

    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> cst.If:
        pruned = prune_if(updated_node, original_node.test, self.emptied, self.vanish)
        if pruned is None:
            self.vanish[id(updated_node)] = updated_node
            return updated_node
        return self._left_empty(original_node, pruned, "its condition")

    def leave_Try(self, original_node: cst.Try, updated_node: cst.Try) -> cst.Try:
        if (
            id(updated_node.body) in self.emptied
            and updated_node.orelse is None
            and updated_node.finalbody is None
            and all(_dead_handler(h) for h in updated_node.handlers)
        ):
            self.vanish[id(updated_node)] = updated_node  # nothing in it can raise: its handlers are dead
            return updated_node
        return self._left_empty(original_node, updated_node, "its handlers or its else/finally")

    def leave_For(self, original_node: cst.For, updated_node: cst.For) -> cst.For:
        return self._left_empty(original_node, updated_node, "the loop itself")

    def leave_While(self, original_node: cst.While, updated_node: cst.While) -> cst.While:
        return self._left_empty(original_node, updated_node, "the loop itself")

    def leave_With(self, original_node: cst.With, updated_node: cst.With) -> cst.With:
        return self._left_empty(original_node, updated_node, "its context manager")

    def _left_empty(self, original_node, updated_node, effects: str):
        if id(updated_node.body) in self.emptied:
            origin = self.codemod.origins.get(id(original_node), (original_node,))[0]
            self.codemod.finding(
                origin,
                "its only statement was an import of `torch.cuda.amp`/`torch.cpu.amp` that nothing uses"
                f" any more, so this block is `pass` now; delete it ({effects} may have effects, so it is"
                " not removed)",
            )
        return updated_node
