"""The base class every torch-migrate codemod derives from.

A codemod is pure: a tree in, a tree plus findings out. It records each rewrite with `rewrite()`
(which honours `# noqa`) and each undecidable case with `finding()`; the engine reads
`self.rewrites` and `self.findings` afterwards.

It is a plain `libcst.CSTTransformer` with the little of libcst's codemod commands that the
codemods use: `transform_module`, and imports asked for with `add_needed_import` /
`remove_unused_import`, edited after the walk (helpers/import_edits.py). Importing
`libcst.codemod` would import `libcst.matchers`, about 0.2 s per run that parses anything
(issue 18): a codemod that wants matchers imports them itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Callable, ClassVar, Generator, Iterator, Sequence, TypeVar

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from codemods.helpers import target_gate
from codemods.helpers.context import FileContext  # noqa: F401  (re-exported)
from codemods.helpers.import_edits import ImportItem, TopImportsAdder, UsedNamesRemover
from codemods.helpers.names import Imports
from codemods.helpers.noqa import is_suppressed
from codemods.helpers.patterns import Words
from codemods.helpers.scan import names_taken
from codemods.helpers.sites import Pruner, Sites, prune_visit
from codemods.results import Finding
from codemods.versions import NEWEST, format_version, needed

NodeT = TypeVar("NodeT", bound=cst.CSTNode)

# codemod class -> (prefix, node type, attribute) -> method name or None
_DISPATCH: dict[type, dict[tuple[str, type, str], str | None]] = {}


_MATCHER_ATTRS = (
    "_call_if_inside_matcher", "_call_if_not_inside_matcher", "_visit_matcher", "_leave_matcher",
)  # fmt: skip  # libcst.matchers._decorators: what @call_if_inside, @visit & co. set on a method


_ATTRIBUTE_HANDLER = re.compile(r"(?:visit|leave)_([A-Z][A-Za-z]*)_[a-z][a-z_]*")


@lru_cache(maxsize=None)
def _attribute_handlers(cls: type) -> bool:
    """Whether `cls` (or a base of ours) defines a `visit_X_attr`/`leave_X_attr` method: without
    one, the walk's per-attribute callbacks (several per node) return at once."""
    for klass in cls.__mro__:
        if klass.__module__.startswith("libcst."):
            continue
        for name in vars(klass):
            match = _ATTRIBUTE_HANDLER.fullmatch(name)
            if match and isinstance(getattr(cst, match.group(1), None), type):
                return True
    return False


@dataclass
class CodemodContext:
    """What one codemod runs with on one file: its name, and the import edits the codemod asked
    for, made after its walk (a fresh context per codemod: see engine/pipeline.py)."""

    filename: str | None = None
    added: list[ImportItem] = field(default_factory=list)
    removed: list[tuple[str, str | None, str | None]] = field(default_factory=list)


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


class MigrationCodemod(cst.CSTTransformer):
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

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        # libcst's @m.visit / @m.leave / @m.call_if_inside need its MatcherDecoratableTransformer,
        # which this class is not: refuse them rather than ignore them.
        for name, value in vars(cls).items():
            if any(getattr(value, attr, None) for attr in _MATCHER_ATTRS):
                raise TypeError(f"{cls.__name__}.{name}: libcst matcher decorators are not supported; test in visit_/leave_")

    def __init__(self, context: CodemodContext | None = None, file: FileContext | None = None) -> None:
        super().__init__()
        self.context = context if context is not None else CodemodContext()
        self.file = file or FileContext()
        self.findings: list[Finding] = []
        self.rewrites = 0
        self.imports = Imports()
        self.pruner: Pruner | None = None  # set by the engine when PRUNE and the file allows it
        self.sites: Sites | None = None  # the statement map, when the file allows pruning
        self._skipped: cst.CSTNode | None = None
        # The walk's path, for positions (Sites.position): the statements of this text it is in,
        # each with how many of the open indented blocks enclose it.
        self._open_statements: list[tuple[cst.CSTNode, int]] = []
        self._open_blocks: list[cst.IndentedBlock] = []
        self._where: dict[int, tuple[cst.CSTNode, tuple[cst.IndentedBlock, ...]]] = {}  # see remember()
        self._default_indent = "    "
        # node type -> this codemod's visit_/leave_ method (bound) or None: the walk's dispatch
        self._visits: dict[type, Callable | None] = {}
        self._leaves: dict[type, Callable | None] = {}

    # -- driving ---------------------------------------------------------------------------
    #
    # Speed (DESIGN §9): per codemod and file, libcst's codemod commands would walk the whole
    # tree four times — PositionProvider's code generation, an empty batched-metadata pass, the
    # import scan and the transform itself, the last through the matcher machinery for every
    # node. Here the transform is the only full walk: positions are computed on first use (most
    # files never produce a finding), other providers only when a subclass declares them,
    # imports are read from the statements alone, visit/leave dispatch is cached per node type,
    # and the tree is never copied (each codemod gets a tree nobody else holds metadata for).

    def transform_module(self, tree: cst.Module) -> cst.Module:
        """This codemod over `tree`, then the import edits it asked for: the new tree."""
        wrapper = MetadataWrapper(tree, unsafe_skip_copy=True)
        with self.resolve(wrapper):
            tree = self.transform_module_impl(wrapper.module)
        if self.context.added and self.file.target_torch < NEWEST:
            self.context.added = [item for item in self.context.added if self.available(target_gate.queued_symbol(item))]
        if self.context.added:
            tree = tree.visit(TopImportsAdder(self.context.added))
        if self.context.removed:
            tree = UsedNamesRemover(self.context.removed).transform(tree)
        return tree

    @cached_property
    def interface(self) -> frozenset[str]:
        """The names of this module that other files of the repository import from it: a
        codemod must not remove or rename them (helpers/scan.py names_taken). Read once per
        file: TM008 and TM401 ask at every statement line."""
        return names_taken(self.file.facts, self.file.path)

    def add_needed_import(self, module: str, obj: str | None = None, asname: str | None = None, relative: int = 0) -> None:
        """After the walk, `import module [as asname]` or `from module import obj [as asname]`,
        unless the leading import block has it (helpers/import_edits.py)."""
        if module == "__future__" and obj is None:
            raise ValueError("Cannot import __future__ directly!")
        self.context.added.append(ImportItem(module, obj, asname, relative))

    def remove_unused_import(self, module: str, obj: str | None = None, asname: str | None = None) -> None:
        """After the walk, remove that import if nothing in the module uses its name any more,
        and no other file of the repository imports that name from this one."""
        bound = asname or obj or module.partition(".")[0]
        if bound in self.interface:
            return
        self.context.removed.append((module, obj, asname))
        if obj is None and asname is not None and "." in module:  # `import a.b as c` is also `from a import b as c`
            parent, _, leaf = module.rpartition(".")
            self.context.removed.append((parent, leaf, None if leaf == asname else asname))
        spelled = self.imports.aliases.get(bound)
        if spelled is not None and spelled != (f"{module}.{obj}" if obj else module) and bound not in self.imports.names.star_names():
            # the name came by a re-export (`from ..torch_utils import Variable`): that import goes
            source, _, name = spelled.rpartition(".")
            self.context.removed.append((source, name, None if name == bound else bound))

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
        self.imports = Imports.of(tree, self.file)  # with the names star imports and re-exports give it
        self._default_indent = tree.default_indent
        return tree.visit(self)

    def _handler(self, prefix: str, node: cst.CSTNode, attribute: str = ""):
        """The subclass's `visit_X`/`leave_X[_attr]` method for this node type, or None: also for
        libcst's typed stubs (marked no-op: a visit that returns None, a leave that returns the
        updated node), which every CSTTransformer has for every node type (cached per class)."""
        cache = _DISPATCH.setdefault(type(self), {})
        key = (prefix, type(node), attribute)
        try:
            name = cache[key]
        except KeyError:
            name = f"{prefix}{type(node).__name__}{'_' + attribute if attribute else ''}"
            found = getattr(type(self), name, None)
            name = cache[key] = name if found is not None and not getattr(found, "_is_no_op", False) else None
        return None if name is None else getattr(self, name)

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.sites is not None:
            self._enter(node)
        if self.pruner is not None and self.pruner.skips(node):
            self._skipped = node  # no children are visited: its on_leave comes next
            return False
        try:
            func = self._visits[type(node)]
        except KeyError:
            func = self._visits[type(node)] = self._handler("visit_", node)
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
            try:
                func = self._leaves[type(original_node)]
            except KeyError:
                func = self._leaves[type(original_node)] = self._handler("leave_", original_node)
            return updated_node if func is None else func(original_node, updated_node)
        finally:
            # after the leave_ handler: what it reports about the statement it leaves is laid
            # out within that statement, not within the (maybe huge) one around it
            if self.sites is not None:
                self._leave(original_node)

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        if not _attribute_handlers(type(self)):
            return
        func = self._handler("visit_", node, attribute)
        if func is not None:
            func(node)

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        if not _attribute_handlers(type(self)):
            return
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
        if self.file.target_torch < NEWEST and self._held_back(original, replacement):
            return updated
        self.rewrites += 1
        if review:
            self._record(original, review, kind="review")
        return replacement

    def _held_back(self, original: cst.CSTNode, replacement) -> bool:
        """Whether `replacement` needs a newer torch than the target; then a finding says which."""
        resolve = target_gate.resolver(self.imports.resolve, self.context.added)
        need = target_gate.newest_need(original, replacement, resolve, self.file.target_torch)
        if need is None:
            return False
        self.hold_back(original, need[0])
        return True

    def hold_back(self, node: cst.CSTNode, symbol: str) -> None:
        """The finding for a rewrite left undone because the target torch lacks `symbol`."""
        version = needed(symbol)
        shown, target = format_version(version) if version else "?", format_version(self.file.target_torch)
        self._record(
            node,
            f"not rewritten: the rewrite uses `{symbol}`, which needs torch {shown}; the target is torch {target}",
            suggestion=f"rewrite it once the project runs on torch {shown} (--target-torch {shown})",
        )

    def available(self, symbol: str | None) -> bool:
        """Whether the target torch has `symbol` (codemods/data/torch_minimums.json): for a
        codemod that has a spelling for older targets (TM004's `torch.autocast`)."""
        version = needed(symbol) if symbol is not None else None
        return version is None or version <= self.file.target_torch

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
