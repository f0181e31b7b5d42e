"""The base class every torch-migrate codemod derives from.

A codemod is pure: a tree in, a tree plus findings out. It records each rewrite with `rewrite()`
(which honours `# noqa`) and each undecidable case with `finding()`; the engine reads
`self.rewrites` and `self.findings` afterwards.
"""

from __future__ import annotations

from contextlib import contextmanager
from functools import lru_cache
from dataclasses import replace
from collections.abc import Mapping
from typing import Callable, ClassVar, Generator, Iterator, Sequence, TypeVar

import libcst as cst
from libcst import CSTTransformer
from libcst.codemod import Codemod, CodemodContext, VisitorBasedCodemodCommand
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
from libcst.metadata import MetadataWrapper, PositionProvider

from codemods.helpers.context import FileContext  # noqa: F401  (re-exported)
from codemods.helpers.import_edits import TopImportsAdder, UsedNamesRemover
from codemods.helpers.names import Imports
from codemods.helpers.noqa import is_suppressed
from codemods.helpers.patterns import Words
from codemods.helpers.sites import Pruner, Sites, prune_visit
from codemods.results import Finding

NodeT = TypeVar("NodeT", bound=cst.CSTNode)

# codemod class -> (prefix, node type, attribute) -> method name or None
_DISPATCH: dict[type, dict[tuple[str, type, str], str | None]] = {}


_MATCHER_ATTRS = (
    "_call_if_inside_matcher", "_call_if_not_inside_matcher", "_visit_matcher", "_leave_matcher",
)  # fmt: skip  # libcst.matchers._decorators: what @call_if_inside, @visit & co. set on a method


@lru_cache(maxsize=None)
def _uses_matcher_decorators(cls: type) -> bool:
    return any(getattr(getattr(cls, name, None), attr, None) for name in dir(cls) for attr in _MATCHER_ATTRS)


class _LazyMetadata(Mapping):
    """A metadata mapping computed on first access (libcst's `get_metadata` only needs get/[])."""

    def __init__(self, compute: Callable[[], Mapping]) -> None:
        self._compute = compute
        self._value: Mapping | None = None

    def _mapping(self) -> Mapping:
        if self._value is None:
            self._value = self._compute()
        return self._value

    def __getitem__(self, key):
        return self._mapping()[key]

    def __iter__(self) -> Iterator:
        return iter(self._mapping())

    def __len__(self) -> int:
        return len(self._mapping())


class MigrationCodemod(VisitorBasedCodemodCommand):
    """Base for codemods: position-aware findings, noqa-aware rewrites, import resolution."""

    CODE: ClassVar[str] = ""
    SAFETY: ClassVar[str] = "safe"
    PRUNE: ClassVar[bool] = False
    """True: every site of this codemod, and everything it needs to decide one, lies in statements
    whose lines match its triggers (or its gate's `sites`), so the walk skips every other
    statement (helpers/sites.py). False for a codemod that learns from statements without its
    words. (What the engine decides before parsing, it reads from the registry and
    codemods/gates/, without importing the codemod.)"""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, context: CodemodContext, file: FileContext | None = None) -> None:
        if _uses_matcher_decorators(type(self)):
            super().__init__(context)
        else:
            # libcst's MatcherDecoratableTransformer.__init__ scans every attribute of the
            # instance for decorators (~700 names, tens of ms) for every file; the answer is a
            # property of the class, so it is computed once per class instead.
            Codemod.__init__(self, context)
            CSTTransformer.__init__(self)
            self._extra_visit_funcs = {}
            self._extra_leave_funcs = {}
            self._matchers = {}
        self.file = file or FileContext()
        self.findings: list[Finding] = []
        self.rewrites = 0
        self.imports = Imports()
        self._plain_dispatch = False  # set per run in transform_module_impl
        self.pruner: Pruner | None = None  # set by the engine when PRUNE and the file allows it
        self.sites: Sites | None = None  # the statement map, when the file allows pruning
        self._skipped: cst.CSTNode | None = None
        # The walk's path, for positions (Sites.position): the statements of this text it is in,
        # each with how many of the open indented blocks enclose it.
        self._open_statements: list[tuple[cst.CSTNode, int]] = []
        self._open_blocks: list[cst.IndentedBlock] = []
        self._where: dict[int, tuple[cst.CSTNode, tuple[cst.IndentedBlock, ...]]] = {}  # see remember()
        self._default_indent = "    "

    # -- driving ---------------------------------------------------------------------------
    #
    # Speed (DESIGN §9): per codemod and file, libcst would walk the whole tree four times —
    # PositionProvider's code generation, an empty batched-metadata pass, the import scan and
    # the transform itself, the last through the matcher machinery for every node. Here the
    # transform is the only full walk: positions are computed on first use (most files never
    # produce a finding), other providers only when a subclass declares them, imports are read
    # from the statements alone, and visit/leave dispatch is cached per node type unless the
    # subclass uses matcher decorators.

    def _instantiate_and_run(self, transform, tree: cst.Module) -> cst.Module:
        # libcst runs its import adder/remover after the transform; ours cost what their job
        # costs (helpers/import_edits.py) and, like the codemods, work on the tree uncopied.
        transform = {AddImportsVisitor: TopImportsAdder, RemoveImportsVisitor: UsedNamesRemover}.get(transform, transform)
        inst = transform(self.context)
        wrapper = MetadataWrapper(tree, unsafe_skip_copy=True)
        with inst.resolve(wrapper):
            inst.context = replace(inst.context, wrapper=wrapper)
            return inst.transform_module_impl(wrapper.module)

    @contextmanager
    def _handle_metadata_reference(self, module: cst.Module) -> Generator[cst.Module, None, None]:
        # libcst deep-copies the tree for every wrapper; each codemod gets a tree nobody else
        # holds metadata for, so the copy (~15% of the run) buys nothing here.
        oldwrapper = self.context.wrapper
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        with self.resolve(wrapper):
            self.context = replace(self.context, wrapper=wrapper)
            try:
                yield wrapper.module
            finally:
                self.context = replace(self.context, wrapper=oldwrapper)

    @contextmanager
    def resolve(self, wrapper: MetadataWrapper) -> Generator[None, None, None]:
        """Like libcst's, but PositionProvider is computed lazily, on the first `get_metadata`."""
        dependencies = self.get_inherited_dependencies()
        eager = [p for p in dependencies if p is not PositionProvider]
        metadata: dict = dict(wrapper.resolve_many(eager)) if eager else {}
        if PositionProvider in dependencies:
            metadata[PositionProvider] = _LazyMetadata(lambda: wrapper.resolve(PositionProvider))
        self.metadata = metadata
        try:
            yield
        finally:
            self.metadata = {}

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        self.imports = Imports.of(tree)
        self._default_indent = tree.default_indent
        self._plain_dispatch = not (self._extra_visit_funcs or self._extra_leave_funcs or self._matchers)
        return super().transform_module_impl(tree)

    def _handler(self, prefix: str, node: cst.CSTNode, attribute: str = ""):
        """The subclass's `visit_X`/`leave_X[_attr]` method for this node type, or None (cached per class)."""
        cache = _DISPATCH.setdefault(type(self), {})
        key = (prefix, type(node), attribute)
        try:
            name = cache[key]
        except KeyError:
            name = f"{prefix}{type(node).__name__}{'_' + attribute if attribute else ''}"
            name = cache[key] = name if getattr(type(self), name, None) is not None else None
        return None if name is None else getattr(self, name)

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.sites is not None:
            self._enter(node)
        if self.pruner is not None and self.pruner.skips(node):
            self._skipped = node  # no children are visited: its on_leave comes next
            return False
        if not self._plain_dispatch:
            return super().on_visit(node)
        func = self._handler("visit_", node)
        return func is None or func(node) is not False

    def _enter(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.IndentedBlock):
            self._open_blocks.append(node)
        elif id(node) in self.sites.spans and id(node) not in self.sites.elifs:
            self._open_statements.append((node, len(self._open_blocks)))

    def _leave(self, node: cst.CSTNode) -> None:
        if self._open_blocks and self._open_blocks[-1] is node:
            self._open_blocks.pop()
        elif self._open_statements and self._open_statements[-1][0] is node:
            self._open_statements.pop()

    def on_leave(self, original_node, updated_node):
        try:
            if original_node is self._skipped:
                self._skipped = None
                return updated_node
            if not self._plain_dispatch:
                return super().on_leave(original_node, updated_node)
            func = self._handler("leave_", original_node)
            return updated_node if func is None else func(original_node, updated_node)
        finally:
            # after the leave_ handler: what it reports about the statement it leaves is laid
            # out within that statement, not within the (maybe huge) one around it
            if self.sites is not None:
                self._leave(original_node)

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        if not self._plain_dispatch:
            return super().on_visit_attribute(node, attribute)
        func = self._handler("visit_", node, attribute)
        if func is not None:
            func(node)

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        if not self._plain_dispatch:
            return super().on_leave_attribute(original_node, attribute)
        func = self._handler("leave_", original_node, attribute)
        if func is not None:
            func(original_node)

    # -- helpers for subclasses ------------------------------------------------------------

    def visit_where(
        self,
        node: cst.CSTNode,
        visitor: cst.CSTVisitor,
        *patterns: Words,
        whole: Sequence[cst.CSTNode] = (),
    ) -> None:
        """`node.visit(visitor)` over only the statements whose lines match `patterns`, and every
        statement inside the statements `whole` (every statement without patterns, or when the
        file has no statement map): for a codemod's own extra passes. `self.lines()` works from
        the visitor's callbacks at the cost of one statement, as it does from the codemod's own."""
        if self.sites is None:
            node.visit(visitor)
            return
        pruner = None
        if patterns:
            lines = self.sites.hits(patterns)
            spans = [self.sites.span(statement) for statement in whole]
            if all(span is not None for span in spans):
                lines = sorted({*lines, *(line for first, last in spans for line in range(first, last + 1))})
                pruner = Pruner(self.sites, lines)
        prune_visit(node, visitor, pruner, self._enter, self._leave)

    def qualified_name(self, expr: cst.BaseExpression) -> str | None:
        return self.imports.resolve(expr)

    def first_line(self, node: cst.CSTNode) -> int:
        """`self.lines(node)[0]`, free when the statement being walked is on one line or `node`
        is its first small statement."""
        if self.sites is not None and self._open_statements:
            statement = self._open_statements[-1][0]
            first, last = self.sites.span(statement)
            if first == last:
                return first
            if isinstance(statement, cst.SimpleStatementLine) and statement.body[0] is node:
                return first  # the statement's first line is its first small statement's
        return self.lines(node)[0]

    def remember(self, node: cst.CSTNode) -> None:
        """Note the statement `node` is in, so that `lines(node)` costs one statement's layout
        after the walk that found it too (a survey made in visit_Module with visit_where, whose
        findings are reported once it is over)."""
        if self.sites is not None and self._open_statements:
            statement, depth = self._open_statements[-1]
            self._where[id(node)] = (statement, tuple(self._open_blocks[:depth]))

    def lines(self, node: cst.CSTNode) -> tuple[int, int, int]:
        """(first line, last line, column) of an original node."""
        found = None
        if self.sites is not None:
            if self._open_statements:
                statement, depth = self._open_statements[-1]
                where = (statement, self._open_blocks[:depth])
            else:
                where = self._where.get(id(node))
            if where is not None:
                found = self.sites.position(where[0], where[1], self._default_indent, node)
        if found is not None:
            return found
        pos = self.get_metadata(PositionProvider, node, None)
        if pos is None:
            return (0, 0, 0)
        return (pos.start.line, pos.end.line, pos.start.column)

    def suppressed(self, node: cst.CSTNode, code: str | None = None) -> bool:
        if not self.file.noqa:
            return False
        first, last, _ = self.lines(node)
        return is_suppressed(self.file.noqa, first, last, code or self.CODE)

    def rewrite(
        self,
        original: cst.CSTNode,
        updated: NodeT,
        replacement: cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel,
        *,
        review: str | None = None,
    ):
        """Return `replacement` and count it, unless a `# noqa` on `original`'s lines keeps it.

        `review` is the reason a reviewer should look at this change (for review-level codemods).
        """
        if self.suppressed(original):
            return updated
        self.rewrites += 1
        if review:
            self._record(original, review, kind="review")
        return replacement

    def finding(
        self,
        node: cst.CSTNode,
        message: str,
        *,
        suggestion: str | None = None,
        code: str | None = None,
    ) -> None:
        """Report a case this codemod will not rewrite (silenced by `# noqa` on its lines)."""
        if self.suppressed(node, code):
            return
        self._record(node, message, suggestion=suggestion, code=code)

    def _record(
        self,
        node: cst.CSTNode,
        message: str,
        *,
        kind: str = "finding",
        suggestion: str | None = None,
        code: str | None = None,
    ) -> None:
        first, _, column = self.lines(node)
        self.findings.append(
            Finding(
                code=code or self.CODE,
                path=self.file.path,
                line=first,
                column=column,
                message=message,
                safety=self.SAFETY,
                suggestion=suggestion,
                kind=kind,
            )
        )

    def code_for(self, node: cst.CSTNode) -> str:
        """Source text of a node, for messages and suggestions."""
        return cst.Module(body=[]).code_for_node(node)
