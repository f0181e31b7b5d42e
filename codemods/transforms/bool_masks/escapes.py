"""Where a uint8 mask goes once it leaves the function that makes it, for TM011: the file's
parameters and `self` attributes whose value reaches a mask use (`masked_fill(mask, ...)` in a
layer's `forward`), matched by name with the argument or attribute the mask is passed as.

A mask made in one function and used in another cannot be proven to be only a mask (the callee
may be another class, or read it as data), so it is reported, never rewritten."""

from __future__ import annotations

import libcst as cst

from codemods.base import traverse
from codemods.helpers.bindings import ScopeNodes
from codemods.transforms.bool_masks.scope import _Scope


class MaskEscapes:
    """The file's mask parameters and attributes (a part of `BoolMasks`: `self` is the codemod)."""

    def _mask_names(self, module: cst.Module) -> tuple[dict[str, cst.CSTNode], dict[str, cst.CSTNode]]:
        """Parameter names and `self.<attr>` names whose value reaches a mask use in some function
        of the file (directly, or passed on as `name=` to a parameter that does), each with that use."""
        functions: list[cst.FunctionDef] = []

        class Functions(cst.CSTVisitor):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
                functions.append(node)

        traverse(module, Functions())
        params: dict[str, cst.CSTNode] = {}
        attrs: dict[str, cst.CSTNode] = {}
        forwards: list[tuple[str, str]] = []  # (parameter, the keyword it is passed on as)
        saved = self._scope, self._evidence
        for function in functions:
            scope = self._scope = _Scope(ScopeNodes.of(function.body), function.params)
            self._evidence = self._tensor_names(scope, [])
            for param in (*function.params.params, *function.params.posonly_params, *function.params.kwonly_params):
                name = param.name.value
                _, _, sink, escapes = self._follow(list(scope.loads.get(name, [])))
                if sink is not None:
                    params.setdefault(name, sink)
                forwards += [(name, e.keyword.value) for e in escapes if isinstance(e, cst.Arg) and e.keyword is not None]
            reads = [n for n in scope.nodes.nodes if isinstance(n, cst.Attribute) and _on_self(n)]
            for read in reads:
                if not isinstance(scope.parents.get(read), cst.AssignTarget):
                    _, _, sink, _ = self._follow([read])
                    if sink is not None:
                        attrs.setdefault(read.attr.value, sink)
        self._scope, self._evidence = saved
        changed = True
        while changed:  # `forward(self, x, mask=None): return self.attend(x, mask=mask)`
            changed = False
            for param, keyword in forwards:
                if keyword in params and param not in params:
                    params[param] = params[keyword]
                    changed = True
        return params, attrs

    def _escape_use(self, escape: cst.CSTNode) -> tuple[str, cst.CSTNode] | None:
        """The mask use a value leaving the scope at `escape` may reach: (how it leaves, the use)."""
        params, attrs = self._masks
        if isinstance(escape, cst.Attribute) and _on_self(escape) and escape.attr.value in attrs:
            return f"`self.{escape.attr.value}`", attrs[escape.attr.value]
        if not isinstance(escape, cst.Arg):
            return None
        call = self._scope.parents.get(escape)
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "register_buffer":
            name = call.args[0].value if call.args and call.args[0] is not escape else None
            if isinstance(name, cst.SimpleString) and name.evaluated_value in attrs:
                return f"`self.{name.evaluated_value}`", attrs[name.evaluated_value]
        if escape.keyword is not None:
            keyword = escape.keyword.value
        elif isinstance(escape.value, cst.Name):
            keyword = escape.value.value  # `att(s, mask)` for a parameter `mask`: matched by name
        else:
            return None
        return (f"`{keyword}`", params[keyword]) if keyword in params else None


def _on_self(node: cst.Attribute) -> bool:
    return isinstance(node.value, cst.Name) and node.value.value == "self"
