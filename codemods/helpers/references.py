"""A base for codemods that rewrite references to imported names (`np.Inf`, `_LRScheduler`).

It visits every `Name` and `Attribute` that is read (not assigned, not the `.attr` part of a
longer chain, not inside an import statement), resolves it through the module's imports, and
asks the subclass for a replacement. Calls of a name are told apart from other uses, so that a
call-shaped rewrite (`istuple(x)` -> `isinstance(x, tuple)`) can be done in `leave_Call`.
"""

from __future__ import annotations

import libcst as cst

from codemods.base import MigrationCodemod
from codemods.helpers.names import dotted


class ReferenceCodemod(MigrationCodemod):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # ids of expressions that are assigned or deleted, not read: what libcst's
        # ExpressionContextProvider calls STORE/DEL, marked by this walk as it meets the binding
        # statement (before its targets), instead of by a separate walk of the whole module.
        self._bound: set[int] = set()
        self._not_refs: set[int] = set()  # ids of Names that name no value: `.attr`, `f(kw=...)`
        self._inner: set[int] = set()  # ids of Attributes that are the `.value` of another
        self.called: set[int] = set()  # ids of expressions that are a Call's `func`
        self.type_tests: set[int] = set()  # ids of the types an isinstance/issubclass tests against

    # -- subclass interface ----------------------------------------------------------------

    def replace_reference(
        self, qualified: str, original: cst.BaseExpression, updated: cst.BaseExpression
    ) -> cst.BaseExpression | None:
        """The replacement for a read of `qualified` (None: leave it)."""
        return None

    def review_for(self, qualified: str, original: cst.BaseExpression) -> str | None:
        """The reason a reviewer should look at this rewrite (None: nothing to review)."""
        return None

    # -- traversal -------------------------------------------------------------------------

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._not_refs.add(id(node.attr))
        if isinstance(node.value, cst.Attribute):
            self._inner.add(id(node.value))

    def visit_Global(self, node: cst.Global) -> bool:
        return False

    def visit_Nonlocal(self, node: cst.Nonlocal) -> bool:
        return False

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._not_refs.add(id(node.keyword))

    def visit_Call(self, node: cst.Call) -> None:
        self.called.add(id(node.func))
        if isinstance(node.func, cst.Name) and node.func.value in ("isinstance", "issubclass") and len(node.args) == 2:
            types = node.args[1].value
            self.type_tests.add(id(types))
            if isinstance(types, cst.Tuple):
                self.type_tests.update(id(e.value) for e in types.elements)

    # Binding positions: Assign/AnnAssign/AugAssign/NamedExpr/For/comprehension targets, `as`
    # names, `del`, def/class names and parameters (as libcst's ExpressionContextProvider).
    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._bind(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._bind(node.name)

    def visit_Del(self, node: cst.Del) -> None:
        self._bind(node.target)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._bound.add(id(node.name))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._bound.add(id(node.name))

    def visit_Param(self, node: cst.Param) -> None:
        self._bound.add(id(node.name))

    def _bind(self, target: cst.BaseExpression) -> None:
        self._bound.add(id(target))
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value)

    def is_read(self, node: cst.BaseExpression) -> bool:
        return id(node) not in self._bound

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        if id(original_node) in self._not_refs or not self.is_read(original_node):
            return updated_node
        return self._replace(original_node, updated_node)

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        if not self.is_read(original_node) and id(original_node) not in self._inner:
            return updated_node
        return self._replace(original_node, updated_node)

    def _replace(self, original: cst.BaseExpression, updated: cst.BaseExpression) -> cst.BaseExpression:
        if dotted(original) is None:
            return updated
        qualified = self.qualified_name(original)
        if qualified is None:
            return updated
        new = self.replace_reference(qualified, original, updated)
        if new is None:
            return updated
        return self.rewrite(original, updated, new, review=self.review_for(qualified, original))

    # -- helpers ---------------------------------------------------------------------------

    def module_spelling(self, module: str) -> str | None:
        """How to spell `module` here, queueing `import module` when needed (None: name clash)."""
        spelled = self.imports.local_name_for(module)
        if spelled is not None:
            if "." in module and module not in self.imports.aliases.values() and not module.startswith("torch."):
                # `import collections` alone may not load `.abc`; `import torch` loads its submodules.
                self.add_needed_import(module)
            return spelled
        head = module.split(".")[0]
        bound = self.imports.aliases.get(head)
        if head in self.imports.shadowed or (bound is not None and bound != head):
            return None
        self.add_needed_import(module)
        return module

def parenthesized(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`expr` safe to use as the object of `.attr` or a call (atoms stay as they are)."""
    atoms = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.SimpleString, cst.Integer, cst.Float)
    if isinstance(expr, atoms) or expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
