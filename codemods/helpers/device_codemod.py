"""`DeviceCodemod`: the base of codemods whose rewrites refer to the device (TM101 and friends).

It tracks the scope of each node visited, picks the device's name at each rewrite
(`with_device`, by the rules of helpers/device.py) and, after the walk, defines the module-level
device once if a rewrite needed it (or in the function that needs it, where torch is imported
lazily). The scope analysis is made on first use, and where the walk is pruned, from only the
statements that can tell anything about the names asked for (`scopes_for`).
"""

from __future__ import annotations

import ast
import keyword
import re
from dataclasses import dataclass
from typing import Callable

import libcst as cst

from codemods.helpers.bindings import SCOPE_NODES, ModuleScopes, Scope, collect_scopes
from codemods.base import MigrationCodemod, NodeT
from codemods.helpers.device import (
    FRESH_PATTERN,
    DevicePlan,
    module_level_imports,
    plan_device,
    with_block_definition,
    with_definition,
    with_local_definition,
)
from codemods.helpers.facts.gpu_selectors import selectors
from codemods.helpers.gpu_selection import GpuSelection, gpu_selection
from codemods.helpers.names import Imports, attribute_chain
from codemods.helpers.patterns import Words
from codemods.helpers.placement import after_import_block


# The partial scope collection (DeviceCodemod.scopes_for) reads the statements that spell the
# names on the codemod's own site lines; these are spelled there but asked about rarely or never,
# and would bring most of a module into the walk (a question about one falls back to the full walk).
_NEVER_ASKED = frozenset({"self", "torch", "print", "super", "range", "len", *keyword.kwlist, *keyword.softkwlist})
_IDENTIFIER = re.compile(r"(?<![\w.])[^\W\d]\w*")
_NEWLINE = re.compile(r"\r\n|\n")


@dataclass
class _PartialScopes:
    words: frozenset[str]
    scopes: ModuleScopes

    def covers(self, name: str) -> bool:
        return name in self.words or FRESH_PATTERN.fullmatch(name) is not None


class DeviceCodemod(MigrationCodemod):
    """A codemod whose rewrites refer to the device: tracks scopes, picks the name at each site
    (`self.with_device`) and defines the module-level device once, if a rewrite needed it.

    Subclasses that override `visit_Module`/`leave_Module`/`on_visit`/`on_leave` call `super()`.
    """

    def visit_Module(self, node: cst.Module) -> bool:
        # The scope analysis (a full walk) and the device plan are made on first use: most files
        # a device codemod parses for get no rewrite, and never need them.
        self._module_node = node
        self._scopes: ModuleScopes | None = None
        self._partial: _PartialScopes | None | bool = None  # False: none can be made here
        self._device_plan: DevicePlan | None = None
        self._open_scopes: list[cst.CSTNode] = [node]
        self._top_ids = {id(statement): index for index, statement in enumerate(node.body)}
        self._top_index: int | None = None
        self._deferred = 0  # depth of function/lambda bodies: code there runs later
        self._first_use: int | None = None
        self._first_any_use: int | None = None  # also uses inside lambdas and defs
        self._global_used = False
        self._module_imports: Imports | None = None
        self._functions: list[tuple[cst.FunctionDef, dict[int, int] | None]] = []  # open defs: body ids -> index
        self._statement_in: dict[int, int] = {}  # id(open def) -> index of its body statement being visited
        self._local_first: dict[int, int] = {}  # id(def) -> its first body statement using a local device
        self._selection: GpuSelection | None | bool = False  # False: not read yet
        self.extra_top_statements: dict[int, int] = {}
        """Top-level index -> statements a subclass added there (keeps the insertion index right)."""
        return True

    @property
    def scopes(self) -> ModuleScopes:
        """Every scope of the module, from a walk of all of it."""
        if self._scopes is None:
            self._scopes = collect_scopes(self._module_node)
        return self._scopes

    def scopes_for(self, *names: str) -> ModuleScopes:
        """The module's scopes, exact in all they say of `names` and of the device's names (the
        preferred one and every fresh one): where this codemod's walk is pruned, read from only
        the statements that spell a name of its site lines, a device name or a star import, and
        those its walk visits (speed: the full walk would cost more than the rest of the codemod).

        Why that is exact for such a name: each binding, parameter, `global` and use of it is
        spelled on a line of the statements read, and so are the statements around them; every
        scope the codemod's walk is in is one of those, with the scopes around it. A question about
        any other name is answered from the full walk (`scopes`)."""
        if self._scopes is None:
            if self._partial is None:
                self._partial = self._partial_scopes()
            if self._partial and all(self._partial.covers(name) for name in names):
                return self._partial.scopes
        return self.scopes

    def _partial_scopes(self) -> _PartialScopes | bool:
        walked, source, scan = self.walked_lines, self.source, self.scan
        if walked is None or source is None or scan is None:
            return False
        text = _NEWLINE.split(source)
        words = {word for line in walked for word in _IDENTIFIER.findall(text[line - 1])}
        words = (words - _NEVER_ASKED) | {self.file.device_name}
        pattern = r"\b(?:%s|%s)\b" % ("|".join(map(re.escape, sorted(words))), FRESH_PATTERN.pattern)
        stars = [
            node.lineno
            for node in scan.imports
            if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names)
        ]
        lines = sorted({*self.lines_matching(Words(pattern)), *walked, *stars})
        walk = lambda node, visitor: self.visit_lines(node, visitor, lines)  # noqa: E731
        return _PartialScopes(frozenset(words), collect_scopes(self._module_node, walk))

    def scope_for(self, *names: str) -> Scope:
        """The scope of the node being visited, in `scopes_for(*names)`."""
        return self.scopes_for(*names).scope_of(self._open_scopes[-1])  # the module node maps to the module scope

    @property
    def device_plan(self) -> DevicePlan:
        if self._device_plan is None:
            self._device_plan = plan_device(self._module_node, self.scopes_for(), self.imports, self.file.device_name)
        return self._device_plan

    @property
    def current_scope(self) -> Scope:
        return self.scopes.scope_of(self._open_scopes[-1])  # the module node maps to the module scope

    @property
    def top_index(self) -> int | None:
        """Index in the module body of the top-level statement being visited."""
        return self._top_index

    def on_visit(self, node: cst.CSTNode) -> bool:
        top = getattr(self, "_top_ids", {}).get(id(node))
        if top is not None:
            self._top_index = top
        if hasattr(self, "_module_node"):
            if self._functions:
                function, statements = self._functions[-1]
                if statements is None:  # its first statement visited: the body is read by now
                    statements = {id(s): i for i, s in enumerate(function.body.body)}
                    self._functions[-1] = (function, statements)
                if id(node) in statements:
                    self._statement_in[id(function)] = statements[id(node)]
            if isinstance(node, SCOPE_NODES):
                self._open_scopes.append(node)
                if isinstance(node, (cst.FunctionDef, cst.Lambda)):
                    self._deferred += 1
                if isinstance(node, cst.FunctionDef) and isinstance(node.body, cst.IndentedBlock):
                    # its statements' indexes, made when the walk enters it (a pruned walk may
                    # not: then a body not parsed yet stays so, engine/lazy.py)
                    self._functions.append((node, None))
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):
        if isinstance(original_node, SCOPE_NODES) and hasattr(self, "_module_node"):
            self._open_scopes.pop()
            if isinstance(original_node, (cst.FunctionDef, cst.Lambda)):
                self._deferred -= 1
            if self._functions and self._functions[-1][0] is original_node:
                self._functions.pop()
                first = self._local_first.pop(id(original_node), None)
                if first is not None and isinstance(updated_node, cst.FunctionDef):
                    assert isinstance(original_node, cst.FunctionDef)
                    name = self.device_plan.global_name
                    selection = self.gpu_selection
                    after = selection.after(original_node.body.body, first, self.code_for) if selection else 0
                    module_torch = self.module_imports.local_name_for("torch")
                    updated_node = with_local_definition(updated_node, original_node, name, first, after, module_torch)
        return super().on_leave(original_node, updated_node)

    @property
    def module_imports(self) -> Imports:
        """The imports the module's own code sees (not those inside its functions)."""
        if self._module_imports is None:
            self._module_imports = module_level_imports(self._module_node, self.imports)
        return self._module_imports

    def _torch_is_lazy(self) -> bool:
        """Whether the module imports torch only inside functions (or not at all): then a module-level
        `import torch` would make an optional dependency a hard one, and the device is defined in
        the function that uses it."""
        return not any(t == "torch" or t.startswith("torch.") for t in self.module_imports.aliases.values())

    @property
    def gpu_selection(self) -> GpuSelection | None:
        """Where the module selects its GPU (helpers/gpu_selection.py): read once, for a rewrite."""
        if self._selection is False:
            facts = getattr(self.file.facts, "gpu_selectors", frozenset())
            self._selection = gpu_selection(self.module_code(self._module_node), selectors(facts))
        return self._selection  # type: ignore[return-value]

    def _selected_late(self) -> bool:
        """Whether the GPU is selected where a module-level device cannot follow: in a function
        the script calls (`main()`, which also uses CUDA), or in a top-level statement that also
        calls such a function. `is_available()` must then run in the functions that use the
        device, after the selection."""
        selection = self.gpu_selection
        return selection is not None and selection.late(self._module_node.body, self.code_for) is not None

    def _local_site(self) -> cst.FunctionDef | None:
        """The function that defines the device for a site here, when the module cannot."""
        if not self._functions or not (self._torch_is_lazy() or self._selected_late()):
            return None
        function = self._functions[-1][0]
        name = self.device_plan.global_name
        if name in self.scopes_for(name).scope_of(function).globals:
            return None
        return function

    def with_device(
        self,
        original: cst.CSTNode,
        updated: NodeT,
        build: Callable[[cst.Name], cst.CSTNode],
        *,
        review: str | None = None,
    ):
        """`self.rewrite(original, updated, build(device))`, noting whether the module-level device
        is now needed and from which top-level statement on."""
        plan = self.device_plan
        name, is_global = plan.name_at(self.scope_for(plan.preferred), self.imports)
        replacement = build(cst.Name(name))
        result = self.rewrite(original, updated, replacement, review=review)
        if result is replacement and is_global:
            function = self._local_site()
            if function is not None:
                at = self._statement_in.get(id(function), 0)
                self._local_first[id(function)] = min(self._local_first.get(id(function), at), at)
                return result
            self._global_used = True
            if self._top_index is not None:
                self._first_any_use = min(self._first_any_use if self._first_any_use is not None else self._top_index, self._top_index)
            if not self._deferred and self._top_index is not None:
                first = self._first_use
                self._first_use = self._top_index if first is None else min(first, self._top_index)
        return result

    def spell(self, qualified: str) -> cst.BaseExpression:
        """`torch.float32` as this module can write it, queuing `import torch` when it cannot."""
        local = self.imports.local_name_for(qualified)
        if local is None:
            self.add_needed_import(qualified.split(".")[0])
            local = qualified
        return attribute_chain(local)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if not self._global_used or not self.device_plan.needs_definition(self._first_use):
            return updated_node
        spelling = self.module_imports.local_name_for("torch.device")
        needs = spelling.split(".")[0] if spelling else None
        uses = [u for u in (self._first_use, self._first_any_use) if u is not None]
        at = after_import_block(original_node.body, min(uses) if uses else None, needs)
        name, add_torch = self.device_plan.global_name, lambda: self.add_needed_import("torch")
        selection = self.gpu_selection
        if selection is not None:  # is_available() initialises CUDA: after the script picks its GPU
            at = max(at, selection.after(original_node.body, self._first_use, self.code_for))
            first = self._first_use
            if first is not None and selection.selects(self.code_for(original_node.body[first])):
                # the block that selects the GPU uses the device too: define it there, after the selection
                inner = self._inside_selecting_block(original_node.body[first], updated_node, first, name)
                if inner is not None:
                    top = first + sum(n for index, n in self.extra_top_statements.items() if index < first)
                    return with_block_definition(updated_node, top, name, self.module_imports, inner, add_torch)
                self.finding(
                    original_node.body[first],
                    f"this statement selects the GPU (CUDA_VISIBLE_DEVICES) and uses `{name}`, defined before"
                    " it: `torch.cuda.is_available()` initialises CUDA, so the selection is ignored (as it is"
                    " where CUDA is used before it); move the device's definition after the selection",
                )
        at += sum(n for index, n in self.extra_top_statements.items() if index < at)
        return with_definition(updated_node, name, self.module_imports, at, add_torch)

    def _inside_selecting_block(self, original: cst.BaseStatement, module: cst.Module, first: int, name: str) -> int | None:
        """Where in the top-level `if` block `original` (which selects the GPU and uses the device)
        the device goes: after its last statement that selects, before its first that names the
        device; None when that order does not exist or the statement is no such block."""
        selection = self.gpu_selection
        if selection is None or not isinstance(original, cst.If) or not isinstance(original.body, cst.IndentedBlock):
            return None
        if selection.selects(self.code_for(original.test)):
            return None
        after = selection.after(original.body.body, None, self.code_for)
        top = first + sum(n for index, n in self.extra_top_statements.items() if index < first)
        updated = module.body[top]
        if not isinstance(updated, cst.If) or not isinstance(updated.body, cst.IndentedBlock):
            return None
        uses = re.compile(rf"(?<![\w.]){re.escape(name)}\b")
        named = [i for i, s in enumerate(updated.body.body) if uses.search(self.code_for(s))]
        if not named or len(updated.body.body) != len(original.body.body) or after > named[0]:
            return None
        return after
