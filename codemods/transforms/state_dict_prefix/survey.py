"""TM104's read-only survey of a module, before any rewrite: which models are wrapped, whether
its generated helpers can be added, and where `module.` is stripped by hand.

`survey_module` walks the module once per question (each walk only over the statements whose
lines can answer it) and returns a frozen `Survey`; the per-scope questions the rewrites ask
later (`assigned_names`, `loaded_names`) are here too, as functions of a scope's statements.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import libcst as cst

from codemods.gates.state_dict_prefix import _WRAP_WORDS
from codemods.helpers.wrapped import wraps_model
from codemods.helpers import ddp
from codemods.helpers.names import dotted
from codemods.helpers.patterns import Words
from codemods.transforms.state_dict_prefix.nodes import is_len_prefix, is_method_call, is_prefix_string, names_in, one_slice
from codemods.base import traverse

Resolve = Callable[[cst.BaseExpression], "str | None"]

PREFIX_WORD = Words(r"module\.")
# A name assigned from `torch.load` is on a line that says `load` (or an alias of it: StatementMap.hits).
LOAD_WORD = Words(r"\bload\b")


@dataclass(frozen=True)
class Survey:
    """What TM104 knows about a module before rewriting any of it."""

    wrapped: frozenset[str]
    """Dotted names (`model`, `self.model`) that hold a DataParallel/DDP wrapper: assigned one in
    this module, or an attribute the repository's facts say is wrapped in some file."""
    repo_wraps: bool
    """This module or another file of the repository wraps a model: a `module.` prefix on the
    checkpoints it loads is then expected, and the generic `'.'.join(k.split('.')[1:])` strips it."""
    helpers_ok: bool
    """No user definition named like the generated `unwrap_model` (or a helper it needs)."""
    hand_strips: tuple[cst.CSTNode, ...]
    """Hand-written `module.` handling (`.replace("module.", ...)`, `[len("module."):]`, then
    `.startswith("module.")`), in that order: each gets a finding unless a rewrite replaces it."""


class _WrapperAssignments(cst.CSTVisitor):
    """Names (`model`, `self.model`) assigned a DataParallel/DDP wrapper (or TM103's ddp_wrap)."""

    def __init__(self, resolve: Resolve, has_wrap_helper: bool) -> None:
        self.resolve = resolve
        self.has_wrap_helper = has_wrap_helper
        self.found: set[str] = set()

    def visit_Assign(self, node: cst.Assign) -> None:
        if wraps_model(node.value, self.resolve, self.has_wrap_helper):
            for t in node.targets:
                name = dotted(t.target)
                if name:
                    self.found.add(name)


class _HandStrips(cst.CSTVisitor):
    """`x.replace("module.", ...)` and `x[len("module."):]`: stripping written by hand."""

    def __init__(self) -> None:
        self.found: list[cst.CSTNode] = []

    def visit_Call(self, node: cst.Call) -> None:
        if is_method_call(node, "replace") and node.args and is_prefix_string(node.args[0].value):
            self.found.append(node)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        cut = one_slice(node)
        if cut is not None and is_len_prefix(cut.lower):
            self.found.append(node)


class _PrefixTests(cst.CSTVisitor):
    """`x.startswith("module.")`: a test for the prefix, where a strip written by hand may follow."""

    def __init__(self) -> None:
        self.found: list[cst.CSTNode] = []

    def visit_Call(self, node: cst.Call) -> None:
        if (
            isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "startswith"
            and node.args
            and is_prefix_string(node.args[0].value)
        ):
            self.found.append(node)


def survey_module(codemod, module: cst.Module) -> Survey:
    """The survey of `module` for `codemod` (its name resolution, repository facts and
    `visit_where`, which walks only the statements whose lines say what each visitor looks for)."""
    has_wrap_helper = bool(ddp.top_level_defs(module).get("ddp_wrap", False))
    helpers_ok = not ddp.clashes(module, {"unwrap_model"})
    wrappers = _WrapperAssignments(codemod.qualified_name, has_wrap_helper)
    codemod.visit_where(module, wrappers, _WRAP_WORDS)
    wrapped = wrappers.found | {f"self.{name}" for name in codemod.file.facts.wrapped_attributes}
    repo_wraps = bool(wrapped) or bool(codemod.file.facts.dataparallel_files)
    strips = _HandStrips()
    codemod.visit_where(module, strips, PREFIX_WORD)
    tests = _PrefixTests()
    codemod.visit_where(module, tests, PREFIX_WORD)
    return Survey(
        wrapped=frozenset(wrapped),
        repo_wraps=repo_wraps,
        helpers_ok=helpers_ok,
        hand_strips=(*strips.found, *tests.found),
    )


def assigned_names(body) -> set[str]:
    """Plain names bound by assignment, `for` or `with ... as` in these statements (nested
    functions and classes left out)."""

    class Targets(cst.CSTVisitor):
        def __init__(self) -> None:
            self.found: set[str] = set()

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            self.found |= _target_names(node.target)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            self.found |= _target_names(node.target)

        def visit_For(self, node: cst.For) -> None:
            self.found |= _target_names(node.target)

        def visit_AsName(self, node: cst.AsName) -> None:
            self.found |= _target_names(node.name)

    v = Targets()
    for stmt in body:
        traverse(stmt, v)
    return v.found


def _target_names(target: cst.BaseExpression) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {n for e in target.elements for n in _target_names(e.value)}
    return set()


class _Assigns(cst.CSTVisitor):
    """`loaded_names`' walk. At module level, not in the function: a class made per call
    closing over `resolve` (a codemod's bound method) would make each codemod a reference cycle."""

    def __init__(self, resolve: Resolve) -> None:
        self.resolve = resolve
        self.good: set[str] = set()
        self.bad: set[str] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        while isinstance(value, cst.Subscript):
            value = value.value
        ok = isinstance(value, cst.Call) and self.resolve(value.func) == "torch.load"
        for t in node.targets:
            if isinstance(t.target, cst.Name):
                (self.good if ok else self.bad).add(t.target.value)

    def visit_For(self, node: cst.For) -> None:
        self.bad |= names_in(node.target)


def loaded_names(resolve: Resolve, body) -> set[str]:
    """Names in this scope's own statements assigned from `torch.load(...)` and nothing else."""
    v = _Assigns(resolve)
    for stmt in body:
        traverse(stmt, v)
    return v.good - v.bad

