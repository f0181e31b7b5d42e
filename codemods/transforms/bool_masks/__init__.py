"""TM011: uint8 masks (`.byte()`, `torch.ByteTensor`, `dtype=torch.uint8`) -> bool masks.

This module holds the codemod: the plan per scope (which makers reach a mask use, and the
findings for those that cannot be made bool) and the rewrite. Its parts: `makers` (what makes a
uint8 mask), `flow` (where its value goes), `values` (what a value is shown to hold), `scope`
(one scope's bindings and reads), `tables` (the torch names it knows)."""

from __future__ import annotations

import libcst as cst

from codemods.gates.bool_masks import BOOL_OF
from codemods.base import MigrationCodemod
from codemods.helpers.bindings import ScopeNodes
from codemods.transforms.bool_masks.escapes import MaskEscapes
from codemods.transforms.bool_masks.flow import MaskFlow
from codemods.transforms.bool_masks.makers import UintMakers
from codemods.transforms.bool_masks.scope import _Scope
from codemods.transforms.bool_masks.values import MaskValues


def _short(code_for, node: cst.CSTNode) -> str:
    """A use, for a message: `x.masked_fill(...)`, `x[...]`, or its code when it is short."""
    text = code_for(node)
    if len(text) <= 40 and "\n" not in text:
        return text
    if isinstance(node, cst.Call):
        return f"{_short(code_for, node.func)}(...)"
    if isinstance(node, cst.Subscript):
        return f"{_short(code_for, node.value)}[...]"
    return text.split("\n", 1)[0][:40] + "..."


class BoolMasks(UintMakers, MaskEscapes, MaskFlow, MaskValues, MigrationCodemod):
    """Make masks bool where old code made them uint8.

    ## What it does
    Finds masks made as uint8 — `cond.byte()`, `.type(torch.uint8)`, `.to(torch.uint8)`,
    `torch.ByteTensor(...)`/`torch.cuda.ByteTensor(...)`, `torch.zeros(..., dtype=torch.uint8)`
    and the other factories — that flow, directly or through a local name of the same function
    (and through reshapes, `.cuda()`, `[None]` and the like), into the mask of `masked_fill(_)`,
    `masked_select`, `masked_scatter(_)`, into an index (`x[mask]`, `x[mask] = v`) or into the
    condition of `torch.where`, and makes them bool there: `.bool()`, `torch.BoolTensor`,
    `dtype=torch.bool`. A uint8 value that is used only as data (an image, a count, arithmetic,
    an attribute, a return value) is never touched; one used both as a mask and as data (arithmetic
    whose result reaches a mask included), or one whose values may be other than 0 and 1, is
    reported. `a.byte() * b.byte()` is their logical and, as `&` is. A uint8 value passed on as
    an argument `name=` (or a positional `name`), stored as `self.name` or registered as the
    buffer `name`, where this file uses a parameter or attribute `name` as a mask (a layer's
    `forward`), is reported: the other function's uses are not proven to be only masks.

    ## Why is this bad?
    Masks became bool in PyTorch 1.2. Today `masked_fill`, `masked_select`, `masked_scatter` and
    `x[mask] = v` raise `RuntimeError: ... only supports boolean masks` on a uint8 mask, and
    `x[mask]` and `torch.where(mask, ...)` warn that uint8 masks are deprecated. The meaning is at
    stake too: a uint8 tensor used as indices (`x[mask.long()]`, or any NumPy array indexed by
    it) picks rows 0 and 1, not the rows where the mask is set.

    ## Example
    ```python
    import torch


    def attend(scores, tokens):
        pad = (tokens == PAD).byte()
        scores = scores.masked_fill(pad, -1e9)
        keep = torch.ByteTensor([1, 0, 1])
        picked = scores[keep]
    ```

    ## Use instead
    ```python
    import torch


    def attend(scores, tokens):
        pad = (tokens == PAD).bool()
        scores = scores.masked_fill(pad, -1e9)
        keep = torch.BoolTensor([1, 0, 1])
        picked = scores[keep]
    ```

    ## Fix safety
    Safe. A bool mask selects exactly where a uint8 mask is nonzero, so the rewrite is made only
    where the uint8 values are provably those of the bool: the converted value is a comparison,
    a logical test, `ones`/`zeros`/`bernoulli`, a triangle or `&`/`|` of those, or literal data
    (`.bool()` of `0.5` is True where `.byte()` gives 0: such a receiver is reported). A mask also
    read as data (`mask.sum()`, `1 - mask`, `mask.float()`, returned, stored on `self`, read by a
    nested function) is reported, as is `~mask` (bitwise on uint8 since torch 1.2, so `~` of a
    uint8 mask selects everything; before 1.2 it was a logical not), and so is an index into a
    value not shown to be a torch tensor — by a tensor-only method called on it (`x.size()`,
    `x.masked_fill(...)`), a `torch.Tensor` annotation, or being the tensor the mask compares —
    since a NumPy array reads a uint8 tensor index as indices and a bool one as a mask. A mask
    from a parameter or an attribute set elsewhere is left as it is. `.bool()` and the bool dtype
    need torch 1.2: with an older `--target-torch` the site is reported instead.

    ## References
    - https://github.com/pytorch/pytorch/releases/tag/v1.2.0 (bool tensors; uint8 masks deprecated)
    - https://pytorch.org/docs/stable/generated/torch.Tensor.masked_fill_.html
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._plans: dict[int, cst.CSTNode] = {}  # id(maker Call) -> the part to make bool
        self._scope: _Scope | None = None
        self._evidence: set[str] = set()
        self._planned: dict[str, str] = {}  # name -> what the imports this codemod adds bind it to
        self._local: dict[int, frozenset[str]] = {}  # id(maker Call) -> the names its scope binds
        self._site: int | None = None  # the maker being rewritten

    # -- planning, per scope -----------------------------------------------------------------------

    def visit_Module(self, node: cst.Module) -> None:
        self._module = node
        self._masks: tuple[dict, dict] | None = None  # the file's mask parameters and attributes, when first needed
        self._plan(ScopeNodes.of(node), None)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._plan(ScopeNodes.of(node.body), node.params)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._plan(ScopeNodes.of(node.body), node.params)

    def _plan(self, nodes: ScopeNodes, params: cst.Parameters | None) -> None:
        calls = [n for n in nodes.nodes if isinstance(n, cst.Call)]
        if not any(self._maker(call) is not None for call in calls):
            return  # the names of a scope without a uint8 maker are never read
        scope = self._scope = _Scope(nodes, params)  # whether a maker is exact reads the names
        makers = [(n, m) for n in calls if (m := self._maker(n)) is not None]
        self._evidence = self._tensor_names(scope, makers)
        for call, maker in makers:
            kinds, data, sink, escapes = self._reach(call)
            if sink is None:
                self._report_escape(call, escapes)
                continue
            shown, used = _short(self.code_for, call), _short(self.code_for, sink)
            if data is not None:
                other = data if isinstance(data, str) else f"also used as data (`{_short(self.code_for, data)}`)"
                self.finding(
                    call,
                    f"`{shown}` is a uint8 mask for `{used}`, and {other}: a bool mask may change that use",
                    suggestion="keep this value for the data use, and pass `.bool()` of it as the mask",
                )
            elif "invert" in kinds:
                self.finding(
                    call,
                    f"`{shown}` reaches `{used}` through `~`, a bitwise not on uint8 since torch 1.2"
                    " (254/255: every element selected), a logical not before it and on bool",
                    suggestion="`.bool()` here if `~` is meant as a logical not (as torch < 1.2 read it)",
                )
            elif not maker.exact:
                self.finding(
                    call,
                    f"`{shown}` is a uint8 mask for `{used}` (an error or a deprecation today),"
                    f" but {maker.why}: the bool mask may select other elements",
                    suggestion=maker.fix,
                )
            elif "maybe" in kinds:
                self.finding(
                    call,
                    f"`{shown}` indexes `{used}`, which may not be a torch tensor: a NumPy"
                    " array reads a uint8 tensor index as indices, a bool one as a mask",
                    suggestion="make the mask `.bool()` if the indexed value is a torch tensor",
                )
            else:
                self._plans[id(call)] = maker.part
                # a spelling whose head this scope binds itself would not be what the imports bind
                self._local[id(call)] = frozenset((*scope.values, *scope.opaque, *scope.escaped))
        self._scope = None

    def _report_escape(self, call: cst.Call, escapes: list[cst.CSTNode]) -> None:
        """A uint8 value passed on to where this file uses a parameter or attribute of that name as a mask."""
        if not escapes:
            return
        if self._masks is None:
            scope = self._scope
            self._masks = self._mask_names(self._module)
            self._scope = scope
        for escape in escapes:
            found = self._escape_use(escape)
            if found is not None:
                how, use = found
                self.finding(
                    call,
                    f"`{_short(self.code_for, call)}` is uint8 and is passed on as {how}, which this file uses"
                    f" as a mask (`{_short(self.code_for, use)}`: a uint8 mask raises or is deprecated there today)",
                    suggestion="make it `.bool()` if every use of it is a mask",
                )
                return

    # -- the rewrite --------------------------------------------------------------------------------

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        part = self._plans.get(id(original_node))
        if part is None:
            return updated_node
        if not self.available("torch.bool"):
            self.hold_back(original_node, "torch.bool")
            return updated_node
        self._site = id(original_node)
        replacement = self._bool_call(original_node, updated_node, part)
        if replacement is None:
            self.finding(
                original_node,
                f"`{_short(self.code_for, original_node)}` is a uint8 mask, but this file's imports give no spelling of"
                f" its bool counterpart that binds no other name",
                suggestion=BOOL_OF.get(self.qualified_name(part) or "", "torch.BoolTensor"),
            )
            return updated_node
        return self.rewrite(original_node, updated_node, replacement)

    def _bool_call(self, original: cst.Call, updated: cst.Call, part: cst.CSTNode) -> cst.Call | None:
        if isinstance(original.func, cst.Attribute) and part is original.func.attr:
            return updated.with_changes(func=updated.func.with_changes(attr=cst.Name("bool")))
        if part is original.func:
            func = self._bool_spelling(original.func, updated.func)
            return None if func is None else updated.with_changes(func=func)
        for index, arg in enumerate(original.args):
            if arg.value is part:
                value = self._bool_spelling(part, updated.args[index].value)
                if value is None:
                    return None
                args = list(updated.args)
                args[index] = args[index].with_changes(value=value)
                return updated.with_changes(args=args)
        return None

    def _may_import_torch(self) -> bool:
        """Whether an added `import torch` would bind `torch` to torch and hide nothing."""
        name = "torch"
        if name in self._local.get(self._site, ()) or name in self.imports.shadowed:
            return False
        return self.imports.aliases.get(name, name) == name and self._planned.get(name, name) == name

    def _bool_spelling(self, original: cst.BaseExpression, updated: cst.BaseExpression) -> cst.BaseExpression | None:
        """`torch.uint8` -> `torch.bool`, `th.ByteTensor` -> `th.BoolTensor`, `'torch.ByteTensor'`
        -> `'torch.BoolTensor'`, in the spelling the code uses."""
        if isinstance(updated, cst.SimpleString):
            return updated.with_changes(value=updated.value.replace("ByteTensor", "BoolTensor"))
        qualified = self.qualified_name(original)
        target = BOOL_OF[qualified]
        if isinstance(updated, cst.Attribute):
            return updated.with_changes(attr=cst.Name(target.rsplit(".", 1)[1]))
        if not isinstance(updated, cst.Name):
            return None
        module, _, leaf = target.rpartition(".")
        local = self.imports.local_name_for(target)
        taken = self._local.get(self._site, frozenset())
        if local is not None and "." in local and local.partition(".")[0] not in taken:
            replacement: cst.BaseExpression = cst.parse_expression(local)  # `torch.BoolTensor`
        elif qualified != "torch.uint8" and leaf not in taken and self._planned.setdefault(leaf, target) == target and self.imports.aliases.get(leaf, target) == target:
            # (not `from torch import bool`, which would hide the builtin; nor a second `BoolTensor`)
            self.add_needed_import(module, leaf)
            replacement = cst.Name(leaf)
        elif self._may_import_torch():
            # `from torch import uint8` alone: `import torch` and `torch.bool`, as a later codemod
            # adding `import torch` (TM101's device) would otherwise let a second run do.
            self.add_needed_import("torch")
            self._planned["torch"] = "torch"
            replacement = cst.parse_expression(target)
        else:
            return None
        source, _, byte = qualified.rpartition(".")
        self.remove_unused_import(source, byte, None if updated.value == byte else updated.value)
        return replacement
