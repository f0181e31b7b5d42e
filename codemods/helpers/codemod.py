"""The base class every torch-migrate codemod derives from.

A codemod is pure: a tree in, a tree plus findings out. It records each rewrite with `rewrite()`
(which honours `# noqa`) and each undecidable case with `finding()`; the engine reads
`self.rewrites` and `self.findings` afterwards.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import ClassVar, Generator, TypeVar

import libcst as cst
from libcst.codemod import CodemodContext, VisitorBasedCodemodCommand
from libcst.metadata import MetadataWrapper, PositionProvider

from codemods.helpers.facts import RepoFacts
from codemods.helpers.names import Imports
from codemods.helpers.noqa import is_suppressed
from codemods.results import Finding

NodeT = TypeVar("NodeT", bound=cst.CSTNode)


@dataclass(frozen=True)
class FileContext:
    """What a codemod may know beyond the tree: the file, the options, whole-repo facts."""

    path: str = "<string>"
    device_name: str = "device"
    facts: RepoFacts = field(default_factory=RepoFacts)
    noqa: dict[int, frozenset[str]] = field(default_factory=dict)


class MigrationCodemod(VisitorBasedCodemodCommand):
    """Base for codemods: position-aware findings, noqa-aware rewrites, import resolution."""

    CODE: ClassVar[str] = ""
    SAFETY: ClassVar[str] = "safe"
    USES_REPO_FACTS: ClassVar[bool] = False  # ask the engine for the whole-repo first pass
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, context: CodemodContext, file: FileContext | None = None) -> None:
        super().__init__(context)
        self.file = file or FileContext()
        self.findings: list[Finding] = []
        self.rewrites = 0
        self.imports = Imports()

    # -- driving ---------------------------------------------------------------------------

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

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        self.imports = Imports.of(tree)
        return super().transform_module_impl(tree)

    # -- helpers for subclasses ------------------------------------------------------------

    def qualified_name(self, expr: cst.BaseExpression) -> str | None:
        return self.imports.resolve(expr)

    def lines(self, node: cst.CSTNode) -> tuple[int, int, int]:
        """(first line, last line, column) of an original node."""
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
