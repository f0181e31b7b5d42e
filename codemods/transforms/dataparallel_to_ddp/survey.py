"""TM103's survey: one read-only walk of the original module, before anything is decided.

`survey_module` records every site TM103 may touch (the DataParallel wraps, the DataLoaders, the
epoch loops, the `torch.save` and print/logging lines, the GPU tests a wrap sits under) with the
scope it is in, and whether the module is a training entry point. Its result, `ModuleSurvey`, is
frozen: the plan (plan.py) decides from it alone, and the transform only reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Mapping, NamedTuple

import libcst as cst

from codemods.helpers import arguments
from codemods.helpers import ddp
from codemods.helpers.names import dotted
from codemods.helpers.scan import exports_read

from .symbols import (
    ALREADY_DISTRIBUTED,
    DATALOADER,
    DATAPARALLEL,
    DISTRIBUTED_WORDS,
    LOADER_POSITIONAL,
    SURVEYED,
    WRAP_WORDS,
)
from .syntax import assigned_name, is_main_guard, opened

if TYPE_CHECKING:
    from codemods.base import MigrationCodemod
    from codemods.helpers.context import FileContext

# Top-level calls that make a module a command-line entry point.
ENTRY_CALLS = frozenset({"parse_args", "parse_known_args"})


@dataclass(frozen=True)
class Scope:
    """The function and the class a site is in (None at module level)."""

    func: cst.CSTNode | None = None
    klass: cst.ClassDef | None = None


class WrapSite(NamedTuple):
    """A `DataParallel(...)` call, the statement line it is on, and its scope."""

    call: cst.Call
    line: cst.SimpleStatementLine | None
    scope: Scope


class ClassBase(NamedTuple):
    """A base of a class: its qualified name, and the last part of its spelling."""

    qualified: str | None
    last: str


@dataclass(frozen=True)
class LoaderSite:
    """A `DataLoader(...)` call; `line` is set when it is assigned to `target` on its own line."""

    call: cst.Call
    line: cst.SimpleStatementLine | None
    target: str | None
    scope: Scope
    shuffle: cst.BaseExpression | None = None
    inside: tuple[cst.For, ...] = ()  # the for loops around it


@dataclass(frozen=True)
class ModuleSurvey:
    """What one read of the original module found (every node is the original tree's)."""

    module: cst.Module
    lean: bool  # only the statements naming DataParallel or a distributed path were read
    wraps: tuple[WrapSite, ...]
    wrapped_where: Mapping[str, frozenset]  # name -> scopes (class, function, "module") it is wrapped in
    wrap_lines: Mapping[cst.SimpleStatementLine, cst.Call]  # `x = DataParallel(...)` lines
    conditions: Mapping[cst.Call, cst.If]  # a wrap -> the innermost `if` it is under
    loaders: tuple[LoaderSite, ...]
    epoch_loops: tuple[tuple[cst.For, Scope], ...]  # `for epoch in range(...)`
    # the writes of checkpoints: `torch.save(...)` lines, or the `with open(...)` around one
    saves: tuple[cst.BaseStatement, ...]
    ifs: tuple[cst.If, ...]
    ifexps: tuple[cst.IfExp, ...]
    names: frozenset[str]  # every plain name the module uses
    distributed: tuple[cst.Call, ...]  # calls of its own distributed path
    methods: Mapping[tuple[int, str], cst.FunctionDef]  # (id of the class, name) -> method
    functions: Mapping[str, cst.FunctionDef]  # the module's own top-level functions
    class_bases: Mapping[int, tuple[ClassBase, ...]]  # id of a class a wrap is in -> its bases
    # a training entry point: `if __name__ == "__main__":`, top-level argument parsing or a
    # training loop run at module level, with a backward pass and an optimizer step that the
    # module's own code reaches (an evaluation script's unused `def train` is no training)
    entry: bool
    backward: bool
    step: bool

    @property
    def trains(self) -> bool:
        return self.entry and self.backward and self.step


def survey_module(codemod: MigrationCodemod, module: cst.Module) -> ModuleSurvey:
    """Survey `module` for `codemod` (its imports resolve names; its positions are remembered
    for the findings reported once the walk is over)."""
    # Speed: a file that cannot be a training entry point is never restructured, and then only
    # its DataParallel sites, its distributed path and its type tests matter: the survey (and the
    # transform's walk) read just the statements that name them.
    source = codemod.source
    lean = source is not None and not may_train(source) and not renamed_by_repo(codemod.file)
    visitor = _SurveyVisitor(codemod)
    if lean:
        codemod.visit_where(module, visitor, WRAP_WORDS, DISTRIBUTED_WORDS)
    else:
        codemod.visit_where(module, visitor)
    return visitor.result(module, lean)


def may_train(text: str) -> bool:
    """Whether the survey could find a training entry point in `text`: a `backward()` and a
    `step()` (a training loop at module level is an entry point without a `__main__` guard).
    Each is a name the survey compares as libcst spells it, so each is in the text wherever it
    is in the tree."""
    return "backward" in text and "step" in text


def renamed_by_repo(file: FileContext) -> bool:
    """Whether a module of the repository that this file imports from (by a star import or an
    import of the module) exports DataParallel or the distributed path under another name (`DP`,
    `DDP`): then a site may be on a line without the words."""
    return any(
        qualified in SURVEYED and qualified.rsplit(".", 1)[-1] != name
        for exports in exports_read(file.facts, file.path).values()
        for name, qualified in exports.items()
    )


class _SurveyVisitor(cst.CSTVisitor):
    """The walk behind `survey_module`: every site TM103 may touch, with its enclosing scope."""

    def __init__(self, codemod: MigrationCodemod) -> None:
        self.codemod = codemod
        self.scopes: list[Scope] = [Scope()]
        self.lines: list[cst.SimpleStatementLine] = []
        self.fors: list[cst.For] = []
        self.open_ifs: list[cst.If] = []
        self.not_names: set[int] = set()  # the ids of the Names that are keywords or attributes
        self.loggers: set[str] = set()
        self.wraps: list[WrapSite] = []
        self.wrapped_where: dict[str, set] = {}
        self.wrap_lines: dict[cst.SimpleStatementLine, cst.Call] = {}
        self.conditions: dict[cst.Call, cst.If] = {}
        self.loaders: list[LoaderSite] = []
        self.epoch_loops: list[tuple[cst.For, Scope]] = []
        self.saves: list[cst.BaseStatement] = []
        self.withs: list[cst.With] = []  # the `with` statements the walk is in
        self.ifs: list[cst.If] = []
        self.ifexps: list[cst.IfExp] = []
        self.names: set[str] = set()
        self.distributed: list[cst.Call] = []
        self.methods: dict[tuple[int, str], cst.FunctionDef] = {}
        self.functions: dict[str, cst.FunctionDef] = {}
        self.entry = False
        # Which top-level def or class (None: the module's own statements) each backward pass and
        # optimizer step is in, which names each refers to, and which functions the module calls.
        self.top: str | None = None
        self.backward_in: list[str | None] = []
        self.step_in: list[str | None] = []
        self.refs: dict[str | None, set[str]] = {}
        self.top_calls: set[str] = set()

    def result(self, module: cst.Module, lean: bool) -> ModuleSurvey:
        classes = {id(site.scope.klass): site.scope.klass for site in self.wraps if site.scope.klass is not None}
        return ModuleSurvey(
            module=module,
            lean=lean,
            wraps=tuple(self.wraps),
            wrapped_where=MappingProxyType({k: frozenset(v) for k, v in self.wrapped_where.items()}),
            wrap_lines=MappingProxyType(self.wrap_lines),
            conditions=MappingProxyType(self.conditions),
            loaders=tuple(self.loaders),
            epoch_loops=tuple(self.epoch_loops),
            saves=tuple(self.saves),
            ifs=tuple(self.ifs),
            ifexps=tuple(self.ifexps),
            names=frozenset(self.names),
            distributed=tuple(self.distributed),
            methods=MappingProxyType(self.methods),
            functions=MappingProxyType(self.functions),
            class_bases=MappingProxyType({key: self._bases(klass) for key, klass in classes.items()}),
            entry=self.entry or None in self.backward_in or bool(self._reached(self.top_calls) & set(self.backward_in)),
            backward=bool(self._live() & set(self.backward_in)),
            step=bool(self._live() & set(self.step_in)),
        )

    def _reached(self, names: set[str]) -> set[str | None]:
        """The top-level defs and classes `names` lead to, through the names each refers to."""
        seen: set[str | None] = set()
        todo = sorted(names)
        while todo:
            name = todo.pop()
            if name in seen or name not in self.refs:
                continue
            seen.add(name)
            todo.extend(sorted(self.refs[name]))
        return seen

    def _live(self) -> set[str | None]:
        """The module's own statements and every def or class they lead to."""
        return {None} | self._reached(self.refs.get(None, set()))

    # scopes
    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if ddp.MARKER in (node.get_docstring(clean=False) or ""):
            return False  # a helper generated by an earlier run
        klass = self.scopes[-1].klass
        if self._at_top():
            self.top = node.name.value
            self.refs.setdefault(self.top, set())
        if klass is not None and self.scopes[-1].func is None:
            self.methods[(id(klass), node.name.value)] = node
        elif self._at_top():
            self.functions[node.name.value] = node
        self.scopes.append(Scope(node, klass))
        return True

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        if ddp.MARKER not in (original_node.get_docstring(clean=False) or ""):
            self.scopes.pop()
            if self._at_top():
                self.top = None

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if self._at_top():
            self.top = node.name.value
            self.refs.setdefault(self.top, set())
        self.scopes.append(Scope(None, node))

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.scopes.pop()
        if self._at_top():
            self.top = None

    def visit_With(self, node: cst.With) -> None:
        self.withs.append(node)

    def leave_With(self, original_node: cst.With) -> None:
        self.withs.pop()

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.lines.append(node)
        if len(node.body) == 1 and isinstance(node.body[0], cst.Expr) and isinstance(node.body[0].value, cst.Call):
            call = node.body[0].value
            name = self.codemod.qualified_name(call.func)
            write = self._whole_write(node) if name == "torch.save" else None
            if write is not None and not any(w is write for w in self.saves):
                self.saves.append(write)
        if len(node.body) == 1 and isinstance(node.body[0], cst.Assign):
            assign = node.body[0]
            value = assign.value
            if isinstance(value, cst.Call) and self.codemod.qualified_name(value.func) == "logging.getLogger":
                for t in assign.targets:
                    if dotted(t.target):
                        self.loggers.add(dotted(t.target))

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine) -> None:
        self.lines.pop()

    def visit_For(self, node: cst.For) -> None:
        self.fors.append(node)
        if isinstance(node.target, cst.Name) and self._counts_epochs(node.iter):
            self.epoch_loops.append((node, self.scopes[-1]))

    def leave_For(self, original_node: cst.For) -> None:
        self.fors.pop()

    def visit_If(self, node: cst.If) -> None:
        if self._at_top() and is_main_guard(node.test):
            self.entry = True
        self.ifs.append(node)
        self.open_ifs.append(node)

    def leave_If(self, original_node: cst.If) -> None:
        self.open_ifs.pop()

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self.ifexps.append(node)

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.not_names.add(id(node.keyword))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.not_names.add(id(node.attr))

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self.not_names:
            self.names.add(node.value)
            self.refs.setdefault(self.top, set()).add(node.value)

    def visit_Call(self, node: cst.Call) -> None:
        name = self.codemod.qualified_name(node.func)
        line = self.lines[-1] if self.lines else None
        if isinstance(node.func, cst.Attribute):
            method, owner = node.func.attr.value, (dotted(node.func.value) or "").lower()
            if method == "backward":
                self.backward_in.append(self.top)
            # an optimizer's (or a GradScaler's) step; a scheduler's step alone is no training
            if method == "step" and "sched" not in owner:
                self.step_in.append(self.top)
            if method in ENTRY_CALLS and self._at_top():
                self.entry = True
        if isinstance(node.func, cst.Name) and self.top is None:
            self.top_calls.add(node.func.value)
        if name in ALREADY_DISTRIBUTED:
            self.distributed.append(node)
        if name in DATAPARALLEL or name in DATALOADER:
            self.codemod.remember(node)  # reported from visit_Module, after this walk
        if name in DATAPARALLEL:
            self.wraps.append(WrapSite(node, line, self.scopes[-1]))
            if self.open_ifs:
                self.conditions[node] = self.open_ifs[-1]
            target = assigned_name(line, node)
            if target is not None:
                scope = self.scopes[-1]
                where = id(scope.klass) if target.startswith("self.") else (id(scope.func) if scope.func else "module")
                self.wrapped_where.setdefault(target, set()).add(where)
                self.wrap_lines[line] = node
        elif name in DATALOADER:
            target = assigned_name(line, node, chain=False)
            bound = arguments.bind(node, LOADER_POSITIONAL)
            shuffle = bound["shuffle"].arg.value if "shuffle" in bound else None
            self.loaders.append(
                LoaderSite(node, line if target else None, target, self.scopes[-1], shuffle, tuple(self.fors))
            )

    def _whole_write(self, line: cst.SimpleStatementLine) -> cst.BaseStatement:
        """The `torch.save` line, or the `with open(...)` whose body it is directly in: the file's
        opening is part of the write (opened for writing on another rank, it is emptied)."""
        outer = self.withs[-1] if self.withs else None
        if outer is not None and opened(outer) is not None and isinstance(outer.body, cst.IndentedBlock):
            if any(stmt is line for stmt in outer.body.body):
                return outer
        return line

    def _bases(self, klass: cst.ClassDef) -> tuple[ClassBase, ...]:
        return tuple(
            ClassBase(self.codemod.qualified_name(base.value), (dotted(base.value) or "").rsplit(".", 1)[-1])
            for base in klass.bases
        )

    # predicates
    def _at_top(self) -> bool:
        return self.scopes[-1].func is None and self.scopes[-1].klass is None

    def _counts_epochs(self, expr: cst.BaseExpression) -> bool:
        if not isinstance(expr, cst.Call):
            return False
        func = dotted(expr.func) or ""
        if func in {"range", "trange"} or func.endswith(".trange"):
            return True
        if (func == "tqdm" or func.endswith(".tqdm")) and expr.args:
            return self._counts_epochs(expr.args[0].value)
        return False
