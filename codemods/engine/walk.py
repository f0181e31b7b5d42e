"""How the engine walks a tree for one codemod: dispatch, pruning, positions, queued imports.

The engine side of every codemod (`codemods/base.py` is the author's side). A codemod is a
`libcst.CSTTransformer`; this class drives its walk with less than libcst's codemod commands do,
because per codemod and file those would walk the whole tree four times: PositionProvider's code
generation, an empty batched-metadata pass, the import scan and the transform itself (the last
through the matcher machinery for every node). Here the transform is the only full walk:

- positions are computed on first use (most files never produce a finding), from the layout of
  the one statement that holds the node (`StatementMap.position`), or else libcst's PositionProvider;
- other metadata providers are resolved only when a codemod declares them;
- imports are read from the statements alone (helpers/names.py), and the imports a codemod
  queues are edited after its walk (helpers/import_edits.py);
- `visit_X`/`leave_X` dispatch is looked up once per node type and codemod class;
- the statements that hold none of the codemod's words are skipped unvisited (`PRUNE`,
  engine/statement_map.py), and the tree is never copied (each codemod gets a tree nobody else holds
  metadata for).

Importing `libcst.codemod` would import `libcst.matchers`, a large share of a small run's time:
a codemod that wants matchers imports them itself, and libcst's matcher decorators (which need
libcst's MatcherDecoratableTransformer) are refused at class creation.

The walk itself is engine/traverse.py's: libcst's order and callbacks, without entering tokens or
rebuilding the nodes nothing changed in.

What this relies on of libcst beyond its documented API: the `_is_no_op` mark on
CSTTransformer's typed stubs, `MetadataWrapper(unsafe_skip_copy=True)`, and the attribute
names in the source of each node's `_visit_and_replace_children` (traverse.py). setup.cfg pins
libcst's major version for that reason; tests/test_walk.py checks the first two hold and
tests/test_traverse.py that traverse walks as libcst does.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Generator, Iterator, Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from codemods.helpers import target_gate
from codemods.helpers.context import FileContext
from codemods.helpers.import_edits import ImportItem, TopImportsAdder, UsedNamesRemover
from codemods.helpers.names import Imports
from codemods.helpers.patterns import Words
from codemods.engine.fstrings import requote
from codemods.engine.lazy import unread
from codemods.engine.statement_map import Pruner, StatementMap, prune_visit
from codemods.engine.traverse import attribute_handlers, traverse
from codemods.versions import NEWEST

# codemod class -> (prefix, node type, attribute) -> its handler function, or None
_DISPATCH: dict[type, dict[tuple[str, type, str], Callable | None]] = {}

# codemod class -> node type -> its visit_/leave_ function or None: the walk's dispatch per node
_VISITS: dict[type, dict[type, Callable | None]] = {}
_LEAVES: dict[type, dict[type, Callable | None]] = {}

_MATCHER_ATTRS = (
    "_call_if_inside_matcher", "_call_if_not_inside_matcher", "_visit_matcher", "_leave_matcher",
)  # fmt: skip  # libcst.matchers._decorators: what @call_if_inside, @visit & co. set on a method

@dataclass
class CodemodContext:
    """What one codemod runs with on one file: its name, and the import edits the codemod asked
    for, made after its walk (a fresh context per codemod: chained codemods sharing one would
    re-apply each other's imports)."""

    filename: str | None = None
    codegen: Callable[[cst.Module], str] | None = None  # the file's engine/codegen.ModuleCode
    added: list[ImportItem] = field(default_factory=list)
    removed: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    kept: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    """Imports a removal would have retired but other files of the repository may take."""


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


class _StatementPath:
    """The statements of the statement map a walk is in, each with how many of the open indented
    blocks enclose it: kept by `_enter`/`_leave` at every node (a codemod's walk, and _Locator's
    walk of a whole tree), read as `_where_now()` for StatementMap.position."""

    _statement_map: StatementMap | None
    _open_statements: list[tuple[cst.CSTNode, int]]
    _open_blocks: list[cst.IndentedBlock]

    def _enter(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.IndentedBlock):
            self._open_blocks.append(node)
        elif id(node) in self._statement_map.spans and id(node) not in self._statement_map.elifs:
            self._open_statements.append((node, len(self._open_blocks)))

    def _leave(self, node: cst.CSTNode) -> None:
        if self._open_blocks and self._open_blocks[-1] is node:
            self._open_blocks.pop()
        elif self._open_statements and self._open_statements[-1][0] is node:
            self._open_statements.pop()

    def _where_now(self) -> tuple[cst.CSTNode, tuple[cst.IndentedBlock, ...]]:
        """The innermost open statement and the blocks around it (some statement is open)."""
        statement, depth = self._open_statements[-1]
        return statement, tuple(self._open_blocks[:depth])


class Walk(_StatementPath, cst.CSTTransformer):
    """The engine's half of a codemod. Codemods derive from `codemods.base.MigrationCodemod`
    and use only what that class documents; the names here that start with `_` are the engine's."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        for name, value in vars(cls).items():
            if any(getattr(value, attr, None) for attr in _MATCHER_ATTRS):
                raise TypeError(f"{cls.__name__}.{name}: libcst matcher decorators are not supported; test in visit_/leave_")

    def __init__(self, context: CodemodContext | None = None, file: FileContext | None = None) -> None:
        super().__init__()
        self.context = context if context is not None else CodemodContext()
        self.file = file or FileContext()
        self.imports = Imports()
        self._walk_pruner: Pruner | None = None  # set by the engine when PRUNE and the file allows it
        self._statement_map: StatementMap | None = None  # the statement map, when the file allows pruning
        self._skipped: cst.CSTNode | None = None
        # The walk's path, for positions (StatementMap.position): the statements of this text it is in,
        # each with how many of the open indented blocks enclose it.
        self._open_statements: list[tuple[cst.CSTNode, int]] = []
        self._open_blocks: list[cst.IndentedBlock] = []
        self._where: dict[int, tuple[cst.CSTNode, tuple[cst.IndentedBlock, ...]]] = {}  # see _note_statement
        self._default_indent = "    "
        self._walked: cst.Module | None = None  # the tree after the walk, before the queued import edits
        self._fstrings: list[tuple[int, int]] = []  # per open f-string: the rewrites and findings before it
        self._tree: cst.Module | None = None  # the tree walked, for _locate
        self._located: dict[int, tuple[cst.CSTNode, tuple[cst.IndentedBlock, ...]]] | None = None
        # node type -> this codemod class's visit_/leave_ function or None: the walk's dispatch
        self._visits = _VISITS.setdefault(type(self), {})
        self._leaves = _LEAVES.setdefault(type(self), {})

    # -- what the engine calls -------------------------------------------------------------

    def _prepare(self, statement_map: StatementMap | None, words: Sequence[Words] | None) -> None:
        """Before `transform_module`: the text's statement map, and (for a codemod with PRUNE)
        the words whose lines its walk visits."""
        self._statement_map = statement_map
        if statement_map is not None and words is not None:
            self._walk_pruner = Pruner(statement_map, statement_map.hits(words))

    def transform_module(self, tree: cst.Module) -> cst.Module:
        """This codemod over `tree`, then the import edits it asked for: the new tree."""
        wrapper = MetadataWrapper(tree, unsafe_skip_copy=True)
        with self._resolve(wrapper):
            tree = self._walked = self.transform_module_impl(wrapper.module)
            if self.context.kept:
                self._report_kept(tree)
        if self.context.added and self.file.target_torch < NEWEST:
            self.context.added = [item for item in self.context.added if self.available(target_gate.queued_symbol(item))]
        if self.context.added:
            tree = traverse(tree, TopImportsAdder(self.context.added))
        if self.context.removed:
            tree = UsedNamesRemover(self.context.removed, self.context.codegen).transform(tree)
        return tree

    def _report_kept(self, tree: cst.Module) -> None:
        """A finding on each import this codemod left unused here and kept for other files, so
        that a reviewer knows why it stays (and can remove it where nothing takes it)."""
        remover = UsedNamesRemover(self.context.kept, self.context.codegen)
        remover.plan(tree)
        for alias, statement in remover.unused_imports():
            bound = alias.evaluated_alias or alias.evaluated_name.split(".")[0]
            self.finding(
                statement,
                f"`{bound}` is no longer used in this file; the import stays because other files of the"
                " repository may take it from this module (a star import, or `import` of the module"
                " whose attributes they read dynamically): remove it if none does",
            )

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        self.imports = Imports.of(tree, self.file)  # with the names star imports and re-exports give it
        self._default_indent = tree.default_indent
        self._tree = tree
        try:
            return traverse(tree, self)
        finally:
            self._tree = self._located = None

    def available(self, symbol: str | None) -> bool:  # defined by MigrationCodemod
        raise NotImplementedError

    def finding(self, node: cst.CSTNode, message: str) -> None:  # defined by MigrationCodemod
        raise NotImplementedError

    @contextmanager
    def _resolve(self, wrapper: MetadataWrapper) -> Generator[None, None, None]:
        """Like libcst's `resolve`, but PositionProvider is computed lazily, on the first
        `get_metadata`."""
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

    # -- dispatch --------------------------------------------------------------------------

    def _handler(self, prefix: str, node: cst.CSTNode, attribute: str = ""):
        """The subclass's `visit_X`/`leave_X[_attr]` function (unbound: a bound method kept on the
        instance would make every codemod a reference cycle, and its trees garbage for the cycle
        collector) for this node type, or None: also for libcst's typed stubs (marked no-op: a
        visit that returns None, a leave that returns the updated node), which every
        CSTTransformer has for every node type (cached per class)."""
        cache = _DISPATCH.setdefault(type(self), {})
        key = (prefix, type(node), attribute)
        try:
            return cache[key]
        except KeyError:
            found = getattr(type(self), f"{prefix}{type(node).__name__}{'_' + attribute if attribute else ''}", None)
            cache[key] = found = found if found is not None and not getattr(found, "_is_no_op", False) else None
            return found

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._statement_map is not None:
            self._enter(node)
        if self._walk_pruner is not None and self._walk_pruner.skips(node):
            self._skipped = node  # no children are visited: its on_leave comes next
            return False
        if type(node) is cst.FormattedString:  # what to undo if no rewrite fits in it (_kept_fstring)
            self._fstrings.append((self.rewrites, len(self.findings)))
        try:
            func = self._visits[type(node)]
        except KeyError:
            func = self._visits[type(node)] = self._handler("visit_", node)
        return func is None or func(self, node) is not False

    def on_leave(self, original_node, updated_node):
        try:
            if original_node is self._skipped:
                self._skipped = None
                return updated_node
            try:
                func = self._leaves[type(original_node)]
            except KeyError:
                func = self._leaves[type(original_node)] = self._handler("leave_", original_node)
            result = updated_node if func is None else func(self, original_node, updated_node)
            if type(original_node) is cst.FormattedString:
                marks = self._fstrings.pop()
                if result is not original_node and type(result) is cst.FormattedString:
                    result = requote(original_node, result) or self._kept_fstring(original_node, *marks)
            return result
        finally:
            # after the leave_ handler: what it reports about the statement it leaves is laid
            # out within that statement, not within the (maybe huge) one around it
            if self._statement_map is not None:
                self._leave(original_node)

    def _kept_fstring(self, node: cst.FormattedString, rewrites: int, findings: int) -> cst.FormattedString:
        """An f-string no rewrite can go into before Python 3.12 (see engine/fstrings.py): its
        rewrites are neither counted nor listed for review, and a finding says why."""
        self.rewrites = rewrites
        self.findings[findings:] = [f for f in self.findings[findings:] if f.kind != "review"]
        self.finding(node, "not rewritten: it sits in f-strings of both quote kinds, where no string literal can go before Python 3.12")
        return node

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        if not attribute_handlers(type(self)):
            return
        func = self._handler("visit_", node, attribute)
        if func is not None:
            func(self, node)

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        if not attribute_handlers(type(self)):
            return
        func = self._handler("leave_", original_node, attribute)
        if func is not None:
            func(self, original_node)

    # -- the path, for positions -------------------------------------------------------------

    def _locate(self, node: cst.CSTNode) -> tuple[cst.CSTNode, tuple[cst.IndentedBlock, ...]] | None:
        """The statement that holds `node` and the blocks around it, for a node reported from
        outside the walk's path (a survey's finding, reported in visit_Module after it): found
        by one walk of the tree that notes every node's, made on the first such report. A
        statement's layout then gives the position, not libcst's layout of the whole module."""
        if self._tree is None:
            return None
        if self._located is None:
            self._located = _Locator(self._statement_map).of(self._tree)
        return self._located.get(id(node))

    def _walk_part(self, node: cst.CSTNode, visitor: cst.CSTVisitor, patterns: Sequence[Words], whole: Sequence[cst.CSTNode]) -> None:
        """`node.visit(visitor)` over the statements on lines of `patterns` and inside `whole`
        (every statement without patterns, or without a statement map), keeping the path."""
        if self._statement_map is None:
            traverse(node, visitor)
            return
        pruner = None
        if patterns:
            lines = self._statement_map.hits(patterns)
            spans = [self._statement_map.span(statement) for statement in whole]
            if all(span is not None for span in spans):
                lines = sorted({*lines, *(line for first, last in spans for line in range(first, last + 1))})
                pruner = Pruner(self._statement_map, lines)
        prune_visit(node, visitor, pruner, self._enter, self._leave)

    def _note_statement(self, node: cst.CSTNode) -> None:
        if self._statement_map is not None and self._open_statements:
            self._where[id(node)] = self._where_now()

    def _first_line(self, node: cst.CSTNode) -> int:
        if self._statement_map is not None and self._open_statements:
            statement = self._open_statements[-1][0]
            first, last = self._statement_map.span(statement)
            if first == last:
                return first
            if isinstance(statement, cst.SimpleStatementLine) and statement.body[0] is node:
                return first  # the statement's first line is its first small statement's
        return self._position(node)[0]

    def _position(self, node: cst.CSTNode) -> tuple[int, int, int]:
        found = None
        if self._statement_map is not None:
            if self._open_statements:
                where = self._where_now()
            else:
                where = self._where.get(id(node))
            if where is not None:
                found = self._statement_map.position(where[0], where[1], self._default_indent, node)
            if found is None and (where := self._locate(node)) is not None:
                found = self._statement_map.position(where[0], where[1], self._default_indent, node)
        if found is not None:
            return found
        pos = self.get_metadata(PositionProvider, node, None)
        if pos is None:
            return (0, 0, 0)
        return (pos.start.line, pos.end.line, pos.start.column)


class _Locator(_StatementPath, cst.CSTVisitor):
    """Every node's innermost statement of the statement map, with the indented blocks around
    that statement: the path a codemod's walk keeps, for all nodes at once."""

    def __init__(self, statement_map: StatementMap) -> None:
        super().__init__()
        self._statement_map = statement_map
        self._open_statements, self._open_blocks = [], []
        self._found: dict[int, tuple[cst.CSTNode, tuple[cst.IndentedBlock, ...]]] = {}
        self._current: tuple = (None, None)  # (the innermost open statement's entry, its _where_now())

    def of(self, tree: cst.Module) -> dict[int, tuple[cst.CSTNode, tuple[cst.IndentedBlock, ...]]]:
        traverse(tree, self)
        return self._found

    def on_visit(self, node: cst.CSTNode) -> bool:
        self._enter(node)
        if self._open_statements:
            if self._current[0] is not self._open_statements[-1]:
                self._current = (self._open_statements[-1], self._where_now())
            self._found[id(node)] = self._current[1]
        return not unread(node)  # no node of a body nothing has read was handed to a codemod

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._leave(original_node)
