"""TM010's checks on a legacy Function's own body: the methods' `self`, what `__init__` does,
how `self` is used, the state kept between calls, and how many gradients `backward` returns.
Each raises `Declined` with the reason when the class cannot be converted exactly."""

from __future__ import annotations

import libcst as cst

from codemods.gates.autograd_function import FUNCTION_BASES
from codemods.helpers.bindings import ScopeNodes
from codemods.helpers.statements import is_docstring
from codemods.transforms.autograd_function.expressions import _note_assigned, _pure, _self_assign, _single
from codemods.transforms.autograd_function.plan import Declined, _Plan
from codemods.transforms.autograd_function.tables import CTX_API, DECORATORS, PURE_CALLS, PURE_CALLS_REUSED
from codemods.transforms.autograd_function.tree import _name_values, _statements, _walk


class ClassChecks:
    """The checks `AutogradFunction._plan` makes on the class itself (a part of that codemod:
    `self` is the codemod, with `_parents` filled by its survey)."""

    def _self_param(self, method: cst.FunctionDef, name: str) -> str:
        params = method.params
        if params.posonly_params or not params.params:
            raise Declined(method, f"`{name}.{method.name.value}` has no plain `self` parameter")
        for decorator in method.decorators:
            target = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
            if self.qualified_name(target) not in DECORATORS:
                raise Declined(decorator, f"`{name}.{method.name.value}` has a decorator torch-migrate does not know to keep on a staticmethod")
        names = _name_values(method)
        if "ctx" in names:
            raise Declined(method, f"`{name}.{method.name.value}` already uses the name `ctx`")
        if "super" in names or "__class__" in names:
            raise Declined(method, f"`{name}.{method.name.value}` calls `super()`: a staticmethod has no class to look it up from")
        return params.params[0].name.value

    def _init(self, cls: cst.ClassDef, init: cst.FunctionDef) -> tuple[list[cst.Param], list[int], dict[str, int]]:
        """`__init__`'s parameters, the indices of its `self.x = ...` statements, and the attributes it sets."""
        params = init.params
        if params.posonly_params or params.kwonly_params or params.star_kwarg or params.star_arg is not cst.MaybeSentinel.DEFAULT or not params.params:
            raise Declined(init, f"`{cls.name.value}.__init__` takes *args/**kwargs or keyword-only parameters")
        if init.decorators:
            raise Declined(init, f"`{cls.name.value}.__init__` is decorated")
        me = params.params[0].name.value
        assigns, attrs = [], {}
        for index, statement in enumerate(_statements(init.body)):
            if is_docstring(statement) or self._is_super_init(statement, cls.name.value, me):
                continue
            target = _self_assign(statement, me)
            if target is None:
                where = statement if isinstance(init.body, cst.IndentedBlock) else init
                raise Declined(where, f"`{cls.name.value}.__init__` does more than store its arguments: move that work out of it by hand")
            assigns.append(index)
            for attr in target:
                attrs.setdefault(attr, index)
        return list(params.params[1:]), assigns, attrs

    def _is_super_init(self, statement: cst.CSTNode, name: str, me: str) -> bool:
        """`super().__init__()`, `super(Fn, self).__init__()` or `Function.__init__(self)`."""
        if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and isinstance(statement.body[0], cst.Expr)):
            return False
        call = statement.body[0].value
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "__init__"):
            return False
        owner = call.func.value
        if isinstance(owner, cst.Call) and isinstance(owner.func, cst.Name) and owner.func.value == "super" and not call.args:
            given = [a.value for a in owner.args]
            return not given or (
                len(given) == 2 and isinstance(given[0], cst.Name) and given[0].value == name
                and isinstance(given[1], cst.Name) and given[1].value == me
            )  # fmt: skip
        return (
            self.qualified_name(owner) in FUNCTION_BASES
            and len(call.args) == 1 and isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == me
        )  # fmt: skip

    def _init_free_names(self, init, assigns, params, reused) -> set[str]:
        """The global names `__init__`'s moved expressions read; Declined when one is not pure."""
        me = init.params.params[0].name.value
        body = _statements(init.body)
        allowed = {p.name.value for p in params}
        set_so_far: set[str] = set()
        free: set[str] = set()
        builtins = PURE_CALLS_REUSED if reused else PURE_CALLS

        def calls(func: cst.BaseExpression) -> bool:
            if isinstance(func, cst.Name) and func.value in builtins:
                return func.value not in self.imports.aliases and func.value not in self.imports.shadowed
            return (self.qualified_name(func) or "").startswith("math.")  # math's functions of numbers
        for index in assigns:
            assign = body[index].body[0]
            if not _pure(assign.value, allowed, set_so_far, me, calls, free, reused):
                raise Declined(body[index] if isinstance(init.body, cst.IndentedBlock) else init, "`__init__` computes an attribute with more than pure builtins of its arguments: it would run on every call")
            set_so_far.update(_self_assign(body[index], me))
        return free - allowed - {"True", "False", "None"}

    def _self_uses(self, method, me, class_names, methods, name) -> list[tuple[str, str, int, bool]]:
        """(attribute, "read"/"write", index of the top-level statement holding it, whether that
        one is a simple statement) of each `self.x`."""
        uses = []
        top = method.body.body if isinstance(method.body, cst.IndentedBlock) else []
        for node in _walk(method.body):
            if isinstance(node, cst.Param) and node.name.value in (me, "ctx"):
                raise Declined(node, f"a function inside `{name}.{method.name.value}` rebinds `{node.name.value}`")
            if not isinstance(node, cst.Name) or node.value != me:
                continue
            parent = self._parents.get(node)
            if isinstance(parent, cst.Attribute) and parent.attr is node or isinstance(parent, cst.Arg) and parent.keyword is node:
                continue
            if not (isinstance(parent, cst.Attribute) and parent.value is node):
                raise Declined(node, f"`{name}.{method.name.value}` uses `{me}` as a value, not only for attributes: ctx is no Function instance")
            attr = parent.attr.value
            if attr in ("forward", "backward"):
                raise Declined(parent, f"`{name}.{method.name.value}` calls `{me}.{attr}`: a static Function cannot call its own forward")
            if attr in methods or attr.startswith("__"):
                raise Declined(parent, f"`{name}.{method.name.value}` calls `{me}.{attr}`, a method of the class: ctx has no methods")
            if attr in class_names:
                raise Declined(parent, f"`{name}.{method.name.value}` reads `{me}.{attr}`, a class attribute: ctx does not have it")
            kinds = self._access(parent)
            index, simple = self._top_statement(parent, top)
            uses.extend((attr, kind, index, simple) for kind in kinds)
        return uses

    def _access(self, attribute: cst.Attribute) -> tuple[str, ...]:
        node, parent = attribute, self._parents.get(attribute)
        while isinstance(parent, (cst.Element, cst.Tuple, cst.List, cst.StarredElement)):
            node, parent = parent, self._parents.get(parent)
        if isinstance(parent, cst.AugAssign) and parent.target is node:
            return ("read", "write")
        if isinstance(parent, (cst.AssignTarget, cst.For, cst.CompFor, cst.Del)) and getattr(parent, "target", None) is node:
            return ("write",)
        if isinstance(parent, cst.AnnAssign) and parent.target is node:
            return ("write",)
        if isinstance(parent, (cst.AsName, cst.NamedExpr)) and (getattr(parent, "name", None) is node or getattr(parent, "target", None) is node):
            return ("write",)
        return ("read",)

    def _top_statement(self, node: cst.CSTNode, top) -> tuple[int, bool]:
        """The index in `top` of the statement holding `node`, and whether it is a simple one."""
        positions = {id(statement): index for index, statement in enumerate(top)}
        while node is not None:
            if id(node) in positions:
                return positions[id(node)], isinstance(node, cst.SimpleStatementLine)
            node = self._parents.get(node)
        return len(top), False

    def _check_state(self, cls, uses, init_set, reused, init) -> None:
        name = cls.name.value
        written = {m: {a for a, kind, _, _ in found if kind == "write"} for m, found in uses.items()}
        everywhere = set(init_set).union(*written.values())
        for method, found in uses.items():
            for attr, kind, statement, _ in found:
                if attr in CTX_API:
                    continue
                if kind == "write":
                    if reused and attr in init_set:
                        raise Declined(cls, f"`{name}.{method}` changes `self.{attr}`, which `__init__` set: an instance called again kept that state")
                    continue
                if attr not in everywhere:
                    raise Declined(cls, f"`{name}.{method}` reads `self.{attr}`, which neither `__init__`, `forward` nor `backward` sets")
                if attr in init_set or not reused:
                    continue  # a fresh object per call, before and after: same reads
                # set unconditionally, earlier in this method (or in forward, for backward)
                earlier = [s for a, k, s, simple in found if a == attr and k == "write" and simple and s < statement]
                if method == "backward":
                    earlier += [s for a, k, s, simple in uses.get("forward", ()) if a == attr and k == "write" and simple]
                if not earlier:
                    raise Declined(cls, f"`{name}.{method}` reads `self.{attr}` before this call sets it: an instance called again kept that state")

    def _plan_returns(self, plan: _Plan, backward: cst.FunctionDef, n: int, k: int) -> None:
        scope = ScopeNodes.of(backward.body)
        returns = [node for node in scope.nodes if isinstance(node, cst.Return)]
        if any(isinstance(node, (cst.Yield, cst.Await)) for node in scope.nodes) or not returns:
            raise Declined(backward, f"`{plan.name}.backward` has no plain return of its gradients")
        assigned: dict[str, list[cst.BaseExpression | None]] = {}
        for node in scope.nodes:
            if isinstance(node, cst.Assign):
                for target in node.targets:
                    _note_assigned(target.target, node.value, assigned)
            elif isinstance(node, (cst.AugAssign, cst.AnnAssign)) and isinstance(node.target, cst.Name):
                assigned.setdefault(node.target.value, []).append(None if isinstance(node, cst.AugAssign) else node.value)
            elif isinstance(node, (cst.For, cst.CompFor, cst.AsName, cst.NamedExpr)):
                target = getattr(node, "target", None) or getattr(node, "name", None)
                _note_assigned(target, cst.Tuple([]), assigned)  # unknown values
        nones = [cst.Name("None")] * k
        for ret in returns:
            value = ret.value
            if value is None:
                raise Declined(ret, f"`{plan.name}.backward` returns nothing here: it must return a gradient per input")
            if isinstance(value, cst.Tuple):
                if any(not isinstance(e, cst.Element) for e in value.elements):
                    raise Declined(ret, f"`{plan.name}.backward` returns a starred tuple: cannot count its gradients")
                grads = [e.value for e in value.elements]
                if len(grads) > n:
                    raise Declined(ret, f"`{plan.name}.backward` returns more gradients than forward has inputs")
                plan.returns[id(ret)] = [cst.Name("None")] * (n - len(grads)) + nones
            elif _single(value, assigned, set()):
                # one gradient: legacy torch took it only from a call with one input, whose
                # other inputs (given now: filled defaults) get None
                plan.returns[id(ret)] = [cst.Name("None")] * (n - 1) + nones
            else:
                raise Declined(ret, f"`{plan.name}.backward` returns `{self.code_for(value)}`: cannot tell how many gradients it holds")
