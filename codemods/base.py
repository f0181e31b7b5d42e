"""What a codemod author uses: the base class every torch-migrate codemod derives from.

A codemod is pure: a tree in, a tree plus findings out. It is a `libcst.CSTTransformer` whose
`visit_X`/`leave_X` methods find its sites, and it tells the engine what it did through this
class only:

- `rewrite(original, updated, replacement)` for every change (it honours `# noqa`, and holds
  back a replacement that needs a newer torch than the target, with a finding saying so);
- `finding(node, message, suggestion=...)` for every case it will not rewrite;
- `qualified_name(expr)` to know what a name is (`torch.nn.MSELoss`), whatever the imports;
- `add_needed_import(...)` / `remove_unused_import(...)`, edited after its walk;
- `lines(node)` / `first_line(node)` for positions;
- for a codemod that must read other statements before deciding (a survey): `visit_where(node,
  visitor, *words)` walks only the statements holding those words, and `remember(node)` keeps a
  node's position for a finding reported after that walk;
- `self.file` (codemods/helpers/context.py): the path, the options, the repository's facts;
- `traverse(node, visitor)` in place of `node.visit(visitor)` for a walk of its own (a survey, a
  nested transformer): the same callbacks, without entering tokens or copying unchanged nodes.

Its declaration (code, name, safety, triggers, gate, what it writes) is its `SPEC` in
codemods/gates/; the class reads its `CODE` and `SAFETY` from there. `PRUNE = True` is a speed
hint: every site, and everything needed to decide one, lies in statements on the lines its
words match, so the walk may skip every other statement. What the engine does with all this is
codemods/engine/walk.py; a codemod never touches the names there that start with `_`.
"""

from __future__ import annotations

import re

from functools import cached_property
from typing import ClassVar, Iterator, Sequence, TypeVar

import libcst as cst

from codemods.engine.walk import CodemodContext, Walk
from codemods.helpers import target_gate
from codemods.helpers.context import FileContext
from codemods.helpers.import_edits import ImportItem
from codemods.helpers.noqa import is_suppressed, silences
from codemods.helpers.patterns import Words
from codemods.helpers.scan import Scan, names_read, names_taken
from codemods.engine.statement_map import Pruner, prune_visit
from codemods.engine.traverse import traverse
from codemods.results import Finding
from codemods.versions import NEWEST, format_version, needed

__all__ = ["CodemodContext", "FileContext", "MigrationCodemod", "NodeT", "traverse"]

NodeT = TypeVar("NodeT", bound=cst.CSTNode)


def _declaration(cls: type):
    """The SPEC (codemods/gates/) that names `cls` as its codemod, if any."""
    from codemods.registry import all_specs

    for spec in all_specs():
        if not isinstance(spec.target, str):
            continue
        module, _, name = spec.target.partition(":")
        if name == cls.__name__ and (cls.__module__ == module or cls.__module__.startswith(module + ".")):
            return spec
    return None


class MigrationCodemod(Walk):
    """Base for codemods: position-aware findings, noqa-aware rewrites, import resolution."""

    CODE: ClassVar[str] = ""
    """From the codemod's SPEC (set when the class is made); a test's codemod sets its own."""
    SAFETY: ClassVar[str] = "safe"
    """The label its findings carry: its SPEC's safety, or "findings-only" for a check."""
    PRUNE: ClassVar[bool] = False
    """True: every site of this codemod, and everything it needs to decide one, lies in statements
    whose lines match its triggers (or its gate's `sites`), so the walk skips every other
    statement (engine/statement_map.py). False for a codemod that learns from statements without its
    words."""

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        spec = _declaration(cls)
        if spec is not None:
            for attribute, value in (("CODE", spec.code), ("SAFETY", spec.label)):
                declared = vars(cls).get(attribute)
                if declared is not None and declared != value:
                    raise TypeError(f"{cls.__name__}.{attribute} = {declared!r}, but its SPEC says {value!r}: declare it once, in the SPEC")
                setattr(cls, attribute, value)

    def __init__(self, context: CodemodContext | None = None, file: FileContext | None = None) -> None:
        super().__init__(context, file)
        self.findings: list[Finding] = []
        self.rewrites = 0
        self._lines_read: list[str] | None = None
        self._longest: int | None = None

    # -- what to report --------------------------------------------------------------------

    def rewrite(
        self,
        original: cst.CSTNode,
        updated: NodeT,
        replacement: cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel,
        *,
        review: str | None = None,
    ):
        """Return `replacement` and count it, unless a `# noqa` on `original`'s lines keeps it,
        or it needs a newer torch than the target (then a finding says so).

        `review` is the reason a reviewer should look at this change (for review-level codemods).
        """
        if self.suppressed(original):
            return updated
        if self.file.target_torch < NEWEST and self._held_back(original, replacement):
            return updated
        if isinstance(original, cst.Call) and isinstance(updated, cst.Call) and isinstance(replacement, cst.Call):
            replacement = self._fitted(original, updated, replacement)
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

    def suppressed(self, node: cst.CSTNode, code: str | None = None) -> bool:
        """Whether a `# noqa` on `node`'s lines silences this codemod (or `code`)."""
        code = code or self.CODE
        if not silences(self.file.noqa, code):
            return False
        first, last, _ = self.lines(node)
        return is_suppressed(self.file.noqa, first, last, code)

    # -- what names mean ---------------------------------------------------------------------

    def qualified_name(self, expr: cst.BaseExpression) -> str | None:
        """What `expr` names (`torch.nn.MSELoss`), through this module's imports and the names
        its star imports and re-exports give it; None for anything else."""
        return self.imports.resolve(expr)

    @cached_property
    def interface(self) -> frozenset[str]:
        """The names of this module that other files of the repository import from it: a
        codemod must not remove or rename them (helpers/scan.py names_taken). Read once per
        file: some codemods ask at every statement line."""
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
            if bound not in names_read(self.file.facts, self.file.path):
                self.context.kept.append((module, obj, asname))  # kept for a reader that may not exist: say so
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

    # -- layout --------------------------------------------------------------------------------

    def _fitted(self, original: cst.Call, updated: cst.Call, replacement: cst.Call) -> cst.Call:
        """`replacement`, a one-line call that gained arguments after its own (`map_location=`,
        `weights_only=`, `dtype=`), with the new ones on a line of their own under its `(` when
        they would take the line past the file's length (the longest line it has, and at least
        79), together with the keyword arguments that end the call's own after a positional one
        (`load(path,\n     map_location="cpu", weights_only=True)`, whichever codemod added which)."""
        kept = len(updated.args)
        if not kept or len(replacement.args) <= kept or not _same_call(updated, replacement):
            return replacement
        first, last, column = self.lines(original)
        text = self._text_lines()
        if first > len(text) or _FSTRING_START.search(text[first - 1][:column]):
            return replacement  # perhaps inside an f-string, where a line break does not compile
        opening = replacement.whitespace_before_args
        under = column + len(self.code_for(replacement.func)) + len(self.code_for(replacement.whitespace_after_func)) + 1
        under += len(opening.value) if isinstance(opening, cst.SimpleWhitespace) else 0  # under the first argument
        if first != last:  # `load(os.path.join(root,\n               name))`: under the `(`, not after `)`
            return self._below_one(updated, replacement, under) if kept == 1 else self._last_line_fitted(updated, replacement, text[last - 1])
        if "\n" in self.code_for(replacement):
            return replacement
        if any(a.keyword is not None and (b.keyword is None or a.keyword.value != b.keyword.value) for a, b in zip(updated.args, replacement.args)):
            return replacement  # rearranged, not appended to
        grown = len(text[first - 1].rstrip("\r\n")) - len(self.code_for(original)) + len(self.code_for(replacement))
        limit = max(79, self._longest_line())
        if grown <= limit:
            return replacement
        break_ = cst.ParenthesizedWhitespace(indent=False, last_line=cst.SimpleWhitespace(" " * under))
        args = list(replacement.args)
        start = kept  # the keywords that end the call's own arguments, after a positional, go down too
        while start > 0 and args[start - 1].keyword is not None:
            start -= 1
        cut = start if 0 < start < kept else kept
        if cut < kept and under + len(", ".join(self.code_for(a.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for a in args[cut:])) + 1 > limit:
            cut = kept  # they would not fit under it: only the new ones go down
        args[cut - 1] = args[cut - 1].with_changes(comma=cst.Comma(whitespace_after=break_))
        return replacement.with_changes(args=args)

    def _last_line_fitted(self, updated: cst.Call, replacement: cst.Call, last_line: str) -> cst.Call:
        """A wrapped call whose new arguments follow its last line: on a line of their own,
        indented as that line is, when they would take it past the file's length."""
        kept = len(updated.args)
        comma = replacement.args[kept - 1].comma
        if isinstance(comma, cst.Comma) and isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace):
            return replacement
        grown = len(last_line.rstrip("\r\n")) + len(self.code_for(replacement)) - len(self.code_for(updated))
        if grown <= max(79, self._longest_line()):
            return replacement
        indent = len(last_line) - len(last_line.lstrip(" "))
        args = list(replacement.args)
        args[kept - 1] = args[kept - 1].with_changes(comma=cst.Comma(whitespace_after=cst.ParenthesizedWhitespace(indent=False, last_line=cst.SimpleWhitespace(" " * indent))))
        return replacement.with_changes(args=args)

    @staticmethod
    def _below_one(updated: cst.Call, replacement: cst.Call, under: int) -> cst.Call:
        """A call of one argument over several lines, started after its `(`: the new arguments
        go on a line of their own under the `(` (else they would follow the argument's `)`)."""
        comma = replacement.args[0].comma
        if isinstance(updated.whitespace_before_args, cst.ParenthesizedWhitespace) or isinstance(updated.args[0].whitespace_after_arg, cst.ParenthesizedWhitespace):
            return replacement  # `f(\n    arg\n)` or `)` on a line of its own: laid out already
        if isinstance(comma, cst.Comma) and isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace):
            return replacement
        args = list(replacement.args)
        args[0] = args[0].with_changes(comma=cst.Comma(whitespace_after=cst.ParenthesizedWhitespace(indent=False, last_line=cst.SimpleWhitespace(" " * under))))
        return replacement.with_changes(args=args)

    def _text_lines(self) -> list[str]:
        """The lines of the text this codemod walks (read once)."""
        if self._lines_read is None:
            source = self.source if self.source is not None else (self.module_code(self._tree) if self._tree is not None else "")
            self._lines_read = source.splitlines()
        return self._lines_read

    def _longest_line(self) -> int:
        if self._longest is None:
            self._longest = max((len(line) for line in self._text_lines()), default=0)
        return self._longest

    # -- positions and surveys ----------------------------------------------------------------

    def lines(self, node: cst.CSTNode) -> tuple[int, int, int]:
        """(first line, last line, column) of an original node."""
        return self._position(node)

    def first_line(self, node: cst.CSTNode) -> int:
        """`self.lines(node)[0]`, free when the statement being walked is on one line or `node`
        is its first small statement."""
        return self._first_line(node)

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
        self._walk_part(node, visitor, patterns, whole)

    def remember(self, node: cst.CSTNode) -> None:
        """Note the statement `node` is in, so that `lines(node)` costs one statement's layout
        after the walk that found it too (a survey made in visit_Module with visit_where, whose
        findings are reported once it is over)."""
        self._note_statement(node)

    @property
    def source(self) -> str | None:
        """The text of the module being walked; None when the engine has no statement map for
        it (then the surveys below read every statement)."""
        return self._statement_map.source if self._statement_map is not None else None

    def lines_matching(self, *patterns: Words) -> list[int]:
        """The lines of this text that match `patterns`, ascending ([] without a statement map)."""
        return self._statement_map.hits(patterns) if self._statement_map is not None else []

    @property
    def walked_lines(self) -> list[int] | None:
        """The lines this codemod's pruned walk visits; None when it visits every statement."""
        return self._walk_pruner.lines if self._walk_pruner is not None else None

    @property
    def scan(self) -> Scan | None:
        """CPython's ast of the text being walked (helpers/scan.py); None without a statement map."""
        return self._statement_map.scan if self._statement_map is not None else None

    def visit_lines(self, node: cst.CSTNode, visitor: cst.CSTVisitor, lines: list[int]) -> None:
        """`node.visit(visitor)` over only the statements that span one of `lines` (ascending);
        every statement without a statement map. Positions are not tracked in it: for surveys
        that report nothing themselves."""
        prune_visit(node, visitor, Pruner(self._statement_map, lines) if self._statement_map is not None else None)

    def statements(self) -> Iterator[tuple[cst.CSTNode, int, int]]:
        """(statement, first line, last line) for each statement of this text, outer ones first;
        nothing without a statement map."""
        return iter(self._statement_map.spans.values()) if self._statement_map is not None else iter(())

    def mentions(self, statement: cst.CSTNode, *patterns: Words) -> bool:
        """Whether any line of `statement` matches `patterns`; True when that cannot be told
        (a node the statement map does not know, or no map)."""
        if self._statement_map is None:
            return True
        lines = self._statement_map.hits(patterns)
        return bool(lines) and not Pruner(self._statement_map, lines).skips(statement)

    def walk_only(self, *patterns: Words) -> None:
        """From now on, this codemod's own walk visits only the statements on lines matching
        `patterns` (from visit_Module, once a survey has shown nothing else can matter)."""
        if self._statement_map is not None:
            self._walk_pruner = Pruner(self._statement_map, self._statement_map.hits(patterns))

    def code_for(self, node: cst.CSTNode) -> str:
        """Source text of a node, for messages and suggestions."""
        return cst.Module(body=[]).code_for_node(node)

    def module_code(self, tree: cst.Module) -> str:
        """`tree.code`, from the engine's per-file code generator when it runs this codemod (the
        statements no codemod changed are not generated again)."""
        return self.context.codegen(tree) if self.context.codegen is not None else tree.code

    # -- the engine's side of rewrite() ------------------------------------------------------

    def _held_back(self, original: cst.CSTNode, replacement) -> bool:
        """Whether `replacement` needs a newer torch than the target; then a finding says which."""
        resolve = target_gate.resolver(self.imports.resolve, self.context.added)
        need = target_gate.newest_need(original, replacement, resolve, self.file.target_torch)
        if need is None:
            return False
        self.hold_back(original, need[0])
        return True

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


_FSTRING_START = re.compile(r"(?<![\w.])[rRbB]?[fF][rRbB]?['\"]")  # f" rf' Fr"... before the call on its line


def _same_call(updated: cst.Call, replacement: cst.Call) -> bool:
    """Whether `replacement` is `updated` itself, perhaps renamed (`torch.range` -> `torch.arange`,
    `nn.UpsamplingBilinear2d` -> `nn.Upsample`), not a call it held (`Variable(torch.zeros(...))`
    -> `torch.zeros(...)`)."""
    if any(arg.value.deep_equals(replacement) for arg in updated.args):
        return False
    old, new = updated.func, replacement.func
    if isinstance(old, cst.Name) and isinstance(new, cst.Name):
        return True
    return isinstance(old, cst.Attribute) and isinstance(new, cst.Attribute) and old.value.deep_equals(new.value)
