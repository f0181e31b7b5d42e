"""TM104 state-dict-prefix, the transformer: checkpoints without the `module.` prefix of
DataParallel/DDP wrappers, and loads that strip it.

It surveys the module first (survey.py), takes its decisions from plan.py, and applies them
here through `rewrite()`; the `unwrap_model` it calls is one of the generated DDP helpers
(codemods/helpers/ddp.py), shared with TM103.
"""

from __future__ import annotations

import libcst as cst

from codemods.helpers import ddp
from codemods.base import MigrationCodemod
from codemods.helpers.names import dotted
from codemods.helpers.spelling import import_forms, retire
from codemods.transforms.state_dict_prefix import plan
from codemods.transforms.state_dict_prefix.nodes import names_in
from codemods.transforms.state_dict_prefix.plan import APPLIED, TRIED, BlockContext, Decline, Edit
from codemods.transforms.state_dict_prefix.survey import LOAD_WORD, assigned_names, loaded_names, survey_module
from codemods.base import traverse


class StateDictPrefixTransformer(MigrationCodemod):
    """The rewriting behind `StateDictPrefix` (the package's __init__ holds its code, safety and
    documentation): surveys each module, asks plan.py, applies its edits through `rewrite()`."""

    def transform_module(self, tree: cst.Module) -> cst.Module:
        result = super().transform_module(tree)
        # An import removed from the top leaves the blank lines that followed it at the top.
        if result.body and tree.body and not tree.body[0].leading_lines and result.body[0].leading_lines:
            first = result.body[0]
            kept = [line for line in first.leading_lines if line.comment is not None]
            result = result.with_changes(body=[first.with_changes(leading_lines=kept), *result.body[1:]])
        return result

    def visit_Module(self, node: cst.Module) -> bool:
        self.survey = survey_module(self, node)
        self.needed: set[str] = set()  # generated helpers the rewrites tried call
        self.consume = False  # whether the `consume_prefix...` import is needed
        self.saved: set[cst.Call] = set()  # `<wrapped>.state_dict()` calls inside a save
        self.loaded: dict[int, set[str]] = {}  # scope -> names assigned only from torch.load, on demand
        self.bound: dict[int, set[str]] = {}  # scope -> names it assigns, on demand
        self.scopes: list[cst.CSTNode] = [node]
        self._module = node
        self._taken: set[str] | None = None  # every name in the module, when a new one is needed
        self.replaced: list[cst.CSTNode] = []
        return True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scopes.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self.scopes.pop()
        return updated_node

    def visit_Call(self, node: cst.Call) -> None:
        # torch.save, or a project's own `save_checkpoint(...)` / `save_model(...)` around it
        name = dotted(node.func) or ""
        if self.qualified_name(node.func) != "torch.save" and "save" not in name.rsplit(".", 1)[-1].lower():
            return
        for arg in node.args:
            traverse(arg.value, _StateDictCalls(self.survey.wrapped, self.saved))

    # -- saving: unwrap first ---------------------------------------------------------------------

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if original_node not in self.saved:
            return updated_node
        return self._outcome(plan.unwrapped_save(self.survey, original_node, updated_node), updated_node)

    # -- a conditional whose branches this rewrite made the same ----------------------------------

    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> cst.BaseStatement | cst.FlattenSentinel:
        return self._outcome(plan.merged_branches(original_node, updated_node), updated_node)

    # -- loading: statement rewrites, block by block -------------------------------------------------

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        body = self._block(list(original_node.body), list(updated_node.body))
        return updated_node if body is None else updated_node.with_changes(body=body)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body = self._block(list(original_node.body), list(updated_node.body))
        module = updated_node if body is None else updated_node.with_changes(body=body)
        for decline in plan.leftover_strips(self.survey, self.replaced):
            self.finding(decline.node, decline.message)
        if not self.rewrites:
            return updated_node
        if self.consume:
            self.add_needed_import(plan.CONSUME_MODULE, plan.CONSUME)
        if self.needed:
            bound = ddp.top_level_defs(module)
            for name in ddp.imports_for(self.needed):
                if name not in bound:
                    self.add_needed_import(name)
            module = ddp.with_helpers(module, self.needed)
        return module

    def _block(self, original: list, updated: list) -> list | None:
        """The block's statements with the edits plan.block_edits offers applied; None if none was."""
        if len(original) != len(updated):
            return None
        scope = self.scopes[-1]
        context = BlockContext(
            survey=self.survey,
            resolve=self.qualified_name,
            bound=lambda: self._bound(scope),
            loaded=lambda: self._loaded(scope),
            taken=self._names_taken,
        )
        out: list = []
        changed = False
        i = 0
        while i < len(updated):
            # the first edit offered that rewrite() accepts; the later ones are never computed
            offered = plan.block_edits(original, updated, i, out, context)
            applied = next((edit for edit in offered if self._apply(edit)), None)
            if applied is None:
                out.append(updated[i])
                i += 1
            else:
                out.extend(applied.statements)
                i += applied.width
                changed = True
        return out if changed else None

    def _outcome(self, decided: Edit | Decline | None, updated_node):
        """What a leave_ handler returns for one planned edit (or finding, or nothing)."""
        if isinstance(decided, Decline):
            self.finding(decided.node, decided.message)
        elif decided is not None and self._apply(decided):
            return decided.replacement
        return updated_node

    def _apply(self, edit: Edit) -> bool:
        """Try `edit`: ask for what it needs (even if `rewrite()` then keeps the original, as
        `# noqa` does), and rewrite; whether the replacement was made."""
        if edit.retire_import is not None:
            self.remove_unused_import(*edit.retire_import)
        if edit.retire_names:
            forms = import_forms(self._module)
            for name in edit.retire_names:
                retire(self, forms, name)
        if edit.claims is not None:
            self._names_taken().add(edit.claims)
        if edit.unwrap:
            self.needed.add(plan.UNWRAP)
        if edit.consume == TRIED:
            self.consume = True
        if edit.replacement is None:
            return False
        if self.rewrite(edit.original, edit.updated, edit.replacement, review=edit.review) is edit.updated:
            return False
        if edit.consume == APPLIED:
            self.consume = True
        return True

    def rewrite(self, original, updated, replacement, *, review=None):
        result = super().rewrite(original, updated, replacement, review=review)
        if result is replacement:
            self.replaced.append(original)
        return result

    def _names_taken(self) -> set[str]:
        if self._taken is None:
            self._taken = names_in(self._module)
        return self._taken

    def _bound(self, scope: cst.Module | cst.FunctionDef) -> set[str]:
        """Names this scope's own statements assign (not its parameters)."""
        found = self.bound.get(id(scope))
        if found is None:
            body = scope.body if isinstance(scope, cst.Module) else scope.body.body
            found = self.bound[id(scope)] = assigned_names(body)
        return found

    def _loaded(self, scope: cst.Module | cst.FunctionDef) -> set[str]:
        """Names of this scope assigned only from `torch.load` (a scope whose lines never say
        `load` has none, and is not walked)."""
        found = self.loaded.get(id(scope))
        if found is None:
            if isinstance(scope, cst.Module):
                body = scope.body
            else:
                body = scope.body.body if isinstance(scope.body, cst.IndentedBlock) else ()
            if body and not self.mentions(scope, LOAD_WORD):
                body = ()
            found = self.loaded[id(scope)] = loaded_names(self.qualified_name, body)
        return found


class _StateDictCalls(cst.CSTVisitor):
    """`<wrapped>.state_dict()` inside an argument of torch.save or of a `save...()` function."""

    def __init__(self, wrapped: frozenset[str], saved: set[cst.Call]) -> None:
        self.wrapped = wrapped
        self.saved = saved

    def visit_Call(self, node: cst.Call) -> None:
        if (
            isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "state_dict"
            and dotted(node.func.value) in self.wrapped
        ):
            self.saved.add(node)
