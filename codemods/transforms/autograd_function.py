"""TM010: old-style autograd Functions (instance `forward`/`backward`) -> static methods on `ctx`."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import libcst as cst

from codemods.gates.autograd_function import FUNCTION_BASES
from codemods.helpers.codemod import MigrationCodemod
from codemods.helpers.scan import _index
from codemods.helpers.scope import ScopeNodes
from codemods.helpers.statements import is_docstring

# What `self` offers in a legacy Function and `ctx` offers alike (`saved_variables` is the
# deprecated spelling of `saved_tensors` since torch 0.4, and is written as that).
CTX_API = frozenset(
    {"save_for_backward", "saved_tensors", "saved_variables", "needs_input_grad", "mark_dirty", "mark_non_differentiable"}
)
# Decorators that work the same on a staticmethod (`@staticmethod` is put above them).
DECORATORS = frozenset(
    {
        "torch.cuda.amp.custom_fwd",
        "torch.cuda.amp.custom_bwd",
        "torch.amp.custom_fwd",
        "torch.amp.custom_bwd",
        "torch.autograd.function.once_differentiable",
    }
)
# Builtins an `__init__` may apply to its arguments: the value is recomputed in `forward`, on
# every call. For an instance built once and called many times (the wrapper), only those that
# build no mutable object, so that recomputing gives what the instance kept.
PURE_CALLS = frozenset({"int", "float", "bool", "str", "abs", "min", "max", "round", "tuple", "list", "len", "dict", "set"})
PURE_CALLS_REUSED = frozenset({"int", "float", "bool", "str", "abs", "min", "max", "round"})
# Methods whose result may be a tuple: a `backward` returning one is not known to return one gradient.
TUPLE_METHODS = frozenset(
    {
        "split", "chunk", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit", "max", "min", "sort", "topk",
        "kthvalue", "median", "nanmedian", "mode", "aminmax", "unique", "unique_consecutive", "svd", "qr", "eig",
        "symeig", "slogdet", "lu", "frexp", "var_mean", "std_mean", "histogram", "cummax", "cummin", "nonzero",
        "split_with_sizes", "unflatten", "get", "pop", "items", "values", "keys",
    }
)  # fmt: skip


class Declined(Exception):
    """Why a class (or one of its call sites) is not converted: the finding's message."""

    def __init__(self, node: cst.CSTNode, message: str, suggestion: str | None = None) -> None:
        super().__init__(message)
        self.node, self.message, self.suggestion = node, message, suggestion


@dataclass
class _Plan:
    name: str
    new_name: str | None  # the Function's new name when a wrapper takes the old one
    init_params: list[cst.Param]
    init_assigns: list[int]  # indices in `__init__`'s body of the `self.x = ...` it moves into forward
    forward_params: list[cst.Param]
    self_names: dict[str, str]  # method -> its first parameter's name
    returns: dict[int, list[cst.BaseExpression]] = field(default_factory=dict)  # id(Return) -> the gradients it adds
    reason: str = ""
    star_inputs: bool = False  # forward takes more than plain positional parameters


@dataclass
class _Site:
    plan: _Plan
    init_values: list[int | cst.BaseExpression]  # per __init__ parameter: an index into the constructor's args, or a default
    fill: list[cst.BaseExpression]  # forward defaults the call left out


class AutogradFunction(MigrationCodemod):
    """Convert legacy autograd Functions to static `forward(ctx, ...)`/`backward(ctx, ...)`.

    ## What it does
    Rewrites a class deriving from `torch.autograd.Function` whose `forward`/`backward` are
    instance methods: both become `@staticmethod`s whose first parameter is `ctx`, and `self.`
    becomes `ctx.` (`save_for_backward`, `saved_tensors`, `needs_input_grad`, `mark_dirty`,
    `mark_non_differentiable`, and the attributes `forward` sets for `backward`). The arguments of
    `__init__` become extra inputs of `apply`, after the tensor inputs: `forward` takes them and
    sets on `ctx` what `__init__` set on `self`, and `backward` returns a `None` gradient for each.
    Call sites `Fn(args)(inputs)` become `Fn.apply(inputs, args)`.

    Where the file keeps an instance (`self.fn = Fn(alpha)` in a module's `__init__`, called as
    `self.fn(x)` in its `forward`) or another file of the repository imports the class, the
    converted Function is renamed `_FnFunction` and `Fn` becomes a small callable class with the
    old constructor, whose `__call__(x)` calls `_FnFunction.apply(x, alpha)`: every existing
    `Fn(alpha)` and every call of an instance keeps working, in this file and in others.

    ## Why is this bad?
    Since PyTorch 1.5 calling such a Function raises `RuntimeError: Legacy autograd function with
    non-static forward method is deprecated`: the code no longer runs at all.

    ## Example
    ```python
    class GradReverse(Function):
        def __init__(self, lambd):
            self.lambd = lambd

        def forward(self, x):
            return x.view_as(x)

        def backward(self, grad_output):
            return grad_output * -self.lambd

    y = GradReverse(0.1)(x)
    ```

    ## Use instead
    ```python
    class GradReverse(Function):
        @staticmethod
        def forward(ctx, x, lambd):
            ctx.lambd = lambd
            return x.view_as(x)

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * -ctx.lambd, None

    y = GradReverse.apply(x, 0.1)
    ```

    ## Fix safety
    Review. Outputs and gradients are those of the legacy Function; a reused instance is a
    fresh `ctx` per call now (the legacy one clobbered its saved tensors when called twice before
    `backward`, which torch warned about). `__init__`'s computations move into `forward`, so
    they run on every call: only assignments `self.x = <expression of its arguments>` are moved
    (pure builtins only, and nothing mutable for a reused instance). When `__init__` takes
    arguments, `forward`'s defaults move to the call sites (literals only) or to the wrapper's
    `__call__`, since `apply` takes every input by position. An `__init__` argument that is a
    tensor requiring grad is now an input of `apply`: its gradient is `None` as before, but the
    output now requires grad even when no tensor input does. Whatever cannot be converted
    exactly is a finding with its reason, and the class is left as it is: `__init__` doing more
    than storing its arguments, `self` used otherwise than for an attribute, a method of the
    class called through `self`, `backward` calling `forward`, an attribute read before this call
    sets it (state kept across calls) or one `__init__` set and `forward` changes on a reused
    instance, an instance passed around or the class used as a value, and call sites that pass
    `*args`, keywords or non-literal defaults.

    ## References
    - https://pytorch.org/docs/stable/notes/extending.html#extending-torch-autograd
    - https://pytorch.org/docs/stable/autograd.html#function
    """

    CODE = "TM010"
    SAFETY = "review"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._plans: dict[int, _Plan] = {}
        self._sites: dict[int, _Site] = {}
        self._returns: dict[int, list[cst.BaseExpression]] = {}
        self._parents: dict[cst.CSTNode, cst.CSTNode] = {}

    # -- planning, on the original tree ----------------------------------------------------

    def visit_Module(self, node: cst.Module) -> None:
        scope = _Parents()
        node.visit(scope)
        self._parents = scope.parents
        for cls in scope.classes:
            if not self._is_legacy(cls):
                continue
            try:
                if self._parents.get(cls) is not node:
                    raise Declined(cls, f"legacy autograd Function `{cls.name.value}` is not defined at module level")
                self._plan(node, cls)
            except Declined as why:
                self.finding(why.node, why.message, suggestion=why.suggestion or _suggestion(cls.name.value))

    def _is_legacy(self, cls: cst.ClassDef) -> bool:
        if not any(self.qualified_name(base.value) in FUNCTION_BASES for base in cls.bases):
            return False
        methods = _methods(cls)
        return any(name in methods and not _is_static(methods[name]) for name in ("forward", "backward"))

    def _plan(self, module: cst.Module, cls: cst.ClassDef) -> None:
        name = cls.name.value
        if len(cls.bases) != 1 or cls.keywords or cls.decorators:
            raise Declined(cls, f"`{name}` has other bases, a metaclass or a decorator besides torch's Function")
        methods = _methods(cls)
        legacy = [m for m in ("forward", "backward") if m in methods]
        if any(_is_static(methods[m]) for m in legacy):
            raise Declined(cls, f"`{name}` mixes a static and an instance forward/backward")
        class_names = _class_level_names(cls)
        self_names = {m: self._self_param(methods[m], name) for m in legacy}
        init = methods.get("__init__")
        init_params, init_assigns, init_set = self._init(cls, init) if init is not None else ([], [], {})
        forward = methods.get("forward")
        if forward is None:
            raise Declined(cls, f"`{name}` has no forward")
        forward_params = list(forward.params.params[1:])
        if init_params and (forward.params.star_arg is not cst.MaybeSentinel.DEFAULT or forward.params.kwonly_params or forward.params.star_kwarg):
            raise Declined(forward, f"`{name}.forward` takes *args/keyword-only parameters: `__init__`'s arguments cannot follow them")
        uses = {m: self._self_uses(methods[m], self_names[m], class_names, methods, name) for m in legacy}
        plan = _Plan(name, None, init_params, init_assigns, forward_params, self_names)
        plan.star_inputs = bool(forward.params.kwonly_params or forward.params.star_kwarg or forward.params.star_arg is not cst.MaybeSentinel.DEFAULT)
        sites, instances, other = self._references(module, cls, name)
        if other:
            raise Declined(other[0], f"`{name}` is used here otherwise than as `{name}(...)(...)` or `{name}(...)`: convert it by hand")
        reused = bool(instances) or self._imported_elsewhere(name)
        if reused:
            plan.new_name = name[:-8] if name.endswith("Function") else name
            plan.new_name = f"_{plan.new_name}Function"
            if _binds(module, plan.new_name):
                raise Declined(cls, f"`{name}` needs the name `{plan.new_name}`, which this file already uses")
            for instance in instances:
                self._check_instance(instance, name)
            why = "this file keeps instances of it" if instances else "another file imports it"
            plan.reason = (
                f"legacy autograd Function `{name}` made static as `{plan.new_name}`; {why}, so `{name}` stays "
                f"a small callable with the old constructor whose `__call__` calls `{plan.new_name}.apply`"
            )
        self._check_state(cls, uses, init_set, reused, init)
        forward_names = _name_values(forward)
        for param in init_params:
            if param.name.value in forward_names or param.name.value == "ctx":
                raise Declined(forward, f"`__init__`'s argument `{param.name.value}` would shadow a name `forward` uses")
        free = self._init_free_names(init, init_assigns, init_params, reused) if init is not None else set()
        clash = free & (_bound_names(forward) | {"ctx"})
        if clash:  # at the top of forward, that name would be forward's own (unbound) local
            raise Declined(forward, f"`__init__` reads `{sorted(clash)[0]}`, which `forward` binds itself")
        if init_params and "backward" in methods:
            self._plan_returns(plan, methods["backward"], len(forward_params), len(init_params))
        if reused:
            for param in [*init_params, *forward_params]:  # the wrapper's signatures copy their defaults
                if param.default is not None and _name_values(param.default) & class_names:
                    raise Declined(param, f"a default of `{name}` reads a name of its class body")
        planned = {} if reused else {id(site): self._plan_site(site, plan) for site in sites}
        if self.suppressed(cls) or any(self.suppressed(site) for site in sites):
            return
        self._sites.update(planned)
        self._returns.update(plan.returns)
        self._plans[id(cls)] = plan

    def _imported_elsewhere(self, name: str) -> bool:
        """Whether another file of the repository imports `name` from this one (or all of it):
        its `Fn(...)(...)` there must keep working (helpers/facts.py, the `T` entries)."""
        entries = self.file.facts.imported_names if self.file.facts is not None else frozenset()
        if not entries:
            return False
        marks = _index(entries).taken.get(os.path.abspath(self.file.path), set())
        return bool(marks & {name, "*", "**"})

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

    def _references(self, module, cls, name):
        """Direct call sites `Fn(...)(...)`, instance constructions `Fn(...)`, and other uses of the name."""
        sites, instances, other = [], [], []
        for node in _walk(module):
            if not isinstance(node, cst.Name) or node.value != name or node is cls.name:
                continue
            parent = self._parents.get(node)
            if isinstance(parent, cst.Attribute) and parent.attr is node or isinstance(parent, cst.Arg) and parent.keyword is node:
                continue
            if _inside(node, cls, self._parents):
                init = _methods(cls).get("__init__")
                if isinstance(parent, cst.Call) and parent.func is node and not (init and _inside(node, init, self._parents)):
                    raise Declined(node, f"`{name}` builds an instance of itself: convert it by hand")
                continue  # `super(Fn, self)` in `__init__` (which goes), `Fn.x`: renamed with the class
            if isinstance(parent, cst.Call) and parent.func is node:
                outer = self._parents.get(parent)
                if isinstance(outer, cst.Call) and outer.func is parent:
                    sites.append(outer)
                else:
                    instances.append(parent)
            elif isinstance(parent, cst.ImportAlias):
                continue
            else:
                other.append(node)
        return sites, instances, other

    def _check_instance(self, construction: cst.Call, name: str) -> None:
        """An instance kept under a name or a `self.` attribute and only ever called."""
        assign = self._parents.get(construction)
        target = assign.targets[0].target if isinstance(assign, cst.Assign) and len(assign.targets) == 1 else None
        if isinstance(target, cst.Name):
            function = _enclosing(assign, self._parents, cst.FunctionDef)
            scope = function.body if function is not None else _module_of(assign, self._parents)
            uses = [n for n in _walk(scope) if isinstance(n, cst.Name) and n.value == target.value and n is not target]
        elif isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
            owner = _enclosing(assign, self._parents, cst.ClassDef)
            if owner is None:
                raise Declined(construction, f"an instance of `{name}` is kept outside a class: convert it by hand")
            uses = [n for n in _walk(owner) if isinstance(n, cst.Attribute) and n.attr.value == target.attr.value and n is not target]
        else:
            raise Declined(construction, f"an instance of `{name}` is passed around: convert it by hand")
        for use in uses:
            parent = self._parents.get(use)
            if isinstance(parent, cst.Attribute) and parent.attr is use or isinstance(parent, cst.Arg) and parent.keyword is use:
                continue
            if isinstance(parent, cst.Call) and parent.func is use:
                continue
            if isinstance(parent, cst.AssignTarget) and parent.target is use:
                continue
            raise Declined(use, f"an instance of `{name}` is used here otherwise than called: convert it by hand")

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

    def _plan_site(self, site: cst.Call, plan: _Plan) -> _Site:
        constructor = site.func
        if any(a.star for a in constructor.args) or any(a.star for a in site.args if plan.init_params):
            raise Declined(site, f"`{plan.name}(...)(...)` with *args: cannot place `__init__`'s arguments after the inputs")
        if any(a.keyword is not None for a in site.args):
            raise Declined(site, f"`{plan.name}(...)(...)` passes inputs by keyword: `apply` takes them by position")
        params = [p.name.value for p in plan.init_params]
        values: list[int | cst.BaseExpression | None] = [None] * len(params)
        position = 0
        for index, arg in enumerate(constructor.args):
            if arg.keyword is None:
                if position >= len(params):
                    raise Declined(site, f"`{plan.name}(...)` is given more arguments than its `__init__` takes")
                values[position] = index
                position += 1
            elif arg.keyword.value in params and values[params.index(arg.keyword.value)] is None:
                values[params.index(arg.keyword.value)] = index
            else:
                raise Declined(site, f"`{plan.name}(...)` is given an argument its `__init__` does not take")
        for index, param in enumerate(plan.init_params):
            if values[index] is None:
                if param.default is None or not _literal(param.default):
                    raise Declined(site, f"`{plan.name}(...)` leaves out `{param.name.value}`, whose default is not a literal")
                values[index] = param.default
        fill = []
        given = len(site.args)
        if given > len(plan.forward_params):
            raise Declined(site, f"`{plan.name}(...)(...)` is given more inputs than its forward takes")
        if plan.init_params:
            for param in plan.forward_params[given:]:
                if param.default is None or not _literal(param.default):
                    raise Declined(site, f"`{plan.name}(...)(...)` leaves out `{param.name.value}`, whose default is not a literal")
                fill.append(param.default)
        return _Site(plan, values, fill)

    # -- rewriting -------------------------------------------------------------------------

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        site = self._sites.get(id(original_node))
        if site is None:
            return updated_node
        constructor = updated_node.func
        extra = [constructor.args[v].value if isinstance(v, int) else v for v in site.init_values]
        func = cst.Attribute(value=constructor.func, attr=cst.Name("apply"))
        call = _append(updated_node.with_changes(func=func), [*site.fill, *extra])
        return self.rewrite(original_node, updated_node, call)

    def leave_Return(self, original_node: cst.Return, updated_node: cst.Return) -> cst.Return:
        extra = self._returns.get(id(original_node))
        if extra is None:
            return updated_node
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        value = updated_node.value
        if isinstance(value, cst.Tuple) and value.elements:
            elements = [*value.elements[:-1], value.elements[-1].with_changes(comma=comma)]
            value = value.with_changes(elements=[*elements, *_elements(extra)])
        elif isinstance(value, cst.Tuple):
            value = value.with_changes(elements=_elements(extra))
        else:
            value = cst.Tuple(elements=[cst.Element(value=value, comma=comma), *_elements(extra)], lpar=[], rpar=[])
        return updated_node.with_changes(value=value)

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef):
        plan = self._plans.get(id(original_node))
        if plan is None:
            return updated_node
        body = list(updated_node.body.body)
        methods = {s.name.value: i for i, s in enumerate(body) if isinstance(s, cst.FunctionDef)}
        init_assigns: list[cst.BaseStatement] = []
        if "__init__" in methods:
            init = body[methods["__init__"]]
            me = init.params.params[0].name.value
            init_assigns = [_Renamer(me).visit_statement(_statements(init.body)[i]) for i in plan.init_assigns]
        for method in ("forward", "backward"):
            if method in methods:
                index = methods[method]
                body[index] = self._static(body[index], plan, method, init_assigns if method == "forward" else [])
        if "__init__" in methods:
            index = methods["__init__"]
            gone = body.pop(index)
            if index < len(body):
                body[index] = body[index].with_changes(leading_lines=gone.leading_lines)
        new_class = updated_node.with_changes(body=updated_node.body.with_changes(body=body))
        replacement: cst.CSTNode | cst.FlattenSentinel = new_class
        if plan.new_name is not None:
            new_class = new_class.visit(_ClassRenamer(plan.name, plan.new_name)).with_changes(name=cst.Name(plan.new_name))
            replacement = cst.FlattenSentinel([new_class, self._wrapper(plan)])
        review = plan.reason or (
            f"legacy autograd Function `{plan.name}` made static; its call sites call `{plan.name}.apply`"
            + (" with `__init__`'s arguments after the inputs" if plan.init_params else "")
        )
        return self.rewrite(original_node, updated_node, replacement, review=review)

    def _static(self, method: cst.FunctionDef, plan: _Plan, name: str, assigns: list[cst.BaseStatement]) -> cst.FunctionDef:
        me = plan.self_names[name]
        method = method.with_changes(body=method.body.visit(_Renamer(me)))
        params = list(method.params.params)
        params[0] = params[0].with_changes(name=cst.Name("ctx"))
        if name == "forward" and plan.init_params:
            params[1:] = [p.with_changes(default=None, equal=cst.MaybeSentinel.DEFAULT) for p in params[1:]]
            params[-1] = params[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            params += [cst.Param(name=cst.Name(p.name.value)) for p in plan.init_params]
        block = method.body
        if assigns and isinstance(block, cst.SimpleStatementSuite):  # `def forward(self, x): return x`
            block = cst.IndentedBlock(body=[cst.SimpleStatementLine(body=block.body)])
        body = list(block.body)
        if assigns:
            at = 1 if body and is_docstring(body[0]) else 0
            body[at:at] = assigns
        decorators = [cst.Decorator(decorator=cst.Name("staticmethod")), *method.decorators]
        if method.decorators:
            decorators[0] = decorators[0].with_changes(leading_lines=method.decorators[0].leading_lines)
            decorators[1] = decorators[1].with_changes(leading_lines=())
        return method.with_changes(
            decorators=decorators,
            params=method.params.with_changes(params=params),
            body=block.with_changes(body=body),
        )

    def _wrapper(self, plan: _Plan) -> cst.BaseStatement:
        indent = self._default_indent
        init = [self.code_for(p.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for p in plan.init_params]
        inputs = [self.code_for(p.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for p in plan.forward_params]
        passed = [p.name.value for p in plan.forward_params] + [f"self.{p.name.value}" for p in plan.init_params]
        if plan.star_inputs:  # forward(self, *inputs): no `__init__` arguments (see _plan)
            inputs, passed = ["*inputs"], ["*inputs"]
        built = [p.name.value for p in plan.init_params]
        given = ["*inputs"] if plan.star_inputs else [p.name.value for p in plan.forward_params]
        lines = [
            f"class {plan.name}:",
            f'{indent}"""`{plan.name}({", ".join(built)})({", ".join(given)})` as before: calls `{plan.new_name}.apply({", ".join(given + built)})`."""',
        ]
        if init:
            lines += ["", f"{indent}def __init__(self, {', '.join(init)}):"]
            lines += [f"{indent * 2}self.{p.name.value} = {p.name.value}" for p in plan.init_params]
        lines += ["", f"{indent}def __call__(self{''.join(', ' + i for i in inputs)}):"]
        lines += [f"{indent * 2}return {plan.new_name}.apply({', '.join(passed)})"]
        wrapper = cst.parse_statement("\n".join(lines) + "\n", config=cst.PartialParserConfig())
        return wrapper.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])


def _suggestion(name: str) -> str:
    return (
        f"make {name}.forward/backward @staticmethods taking ctx, and pass what __init__ takes to "
        f"{name}.apply after the inputs (torch-migrate explain TM010)"
    )


# -- tree helpers -------------------------------------------------------------------------


class _Parents(cst.CSTVisitor):
    """Every node's parent, and every class, in one walk."""

    def __init__(self) -> None:
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self.classes: list[cst.ClassDef] = []
        self._stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._stack:
            self.parents[node] = self._stack[-1]
        if isinstance(node, cst.ClassDef):
            self.classes.append(node)
        self._stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()


class _Walk(cst.CSTVisitor):
    def __init__(self) -> None:
        self.nodes: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.nodes.append(node)
        return True


def _walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    walker = _Walk()
    node.visit(walker)
    return walker.nodes


class _Names(cst.CSTVisitor):
    """The names a node reads or binds (not `.attr` parts, not keywords of calls)."""

    def __init__(self) -> None:
        self.found: set[str] = set()

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.found.add(node.value)


def _name_values(node: cst.CSTNode) -> set[str]:
    names = _Names()
    node.visit(names)
    return names.found


class _Bound(cst.CSTVisitor):
    """The names a function binds: its parameters, assignment and loop targets, imports, defs."""

    def __init__(self) -> None:
        self.found: set[str] = set()

    def _add(self, target: cst.CSTNode | None) -> None:
        if isinstance(target, cst.Name):
            self.found.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._add(element.value)
        elif isinstance(target, cst.StarredElement):
            self._add(target.value)

    def visit_Param(self, node: cst.Param) -> None:
        self._add(node.name)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._add(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._add(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._add(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._add(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._add(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._add(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._add(node.name)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is None:
            self._add(cst.Name(_dotted_head(node.name)))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._add(node.name)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._add(node.name)

    def visit_Global(self, node: cst.Global) -> None:
        self.found.update(n.name.value for n in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.found.update(n.name.value for n in node.names)


def _dotted_head(expr: cst.BaseExpression) -> str:
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else ""


def _bound_names(function: cst.FunctionDef) -> set[str]:
    bound = _Bound()
    function.params.visit(bound)
    function.body.visit(bound)
    return bound.found


def _binds(module: cst.Module, name: str) -> bool:
    return name in _name_values(module)


def _statements(block: cst.BaseSuite) -> list[cst.BaseStatement]:
    """A block's statements; a one-line suite (`def f(self): return x`) as one statement line."""
    if isinstance(block, cst.IndentedBlock):
        return list(block.body)
    return [cst.SimpleStatementLine(body=block.body)]


def _methods(cls: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    return {s.name.value: s for s in body if isinstance(s, cst.FunctionDef)}


def _class_level_names(cls: cst.ClassDef) -> set[str]:
    names = set()
    for statement in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [getattr(small, "target", None)]
                names |= {t.value for t in targets if isinstance(t, cst.Name)}
        elif isinstance(statement, cst.ClassDef):
            names.add(statement.name.value)
    return names


def _is_static(method: cst.FunctionDef) -> bool:
    return any(isinstance(d.decorator, cst.Name) and d.decorator.value in ("staticmethod", "classmethod") for d in method.decorators)


def _self_assign(statement: cst.CSTNode, me: str) -> list[str] | None:
    """The attributes a statement `self.x = <expr>` or `self.x, self.y = <a>, <b>` sets (one
    target, one small statement), else None."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
        return None
    small = statement.body[0]
    if not (isinstance(small, cst.Assign) and len(small.targets) == 1):
        return None
    target = small.targets[0].target
    if isinstance(target, cst.Tuple) and isinstance(small.value, cst.Tuple) and len(target.elements) == len(small.value.elements):
        attrs = [_self_attr(e.value, me) if isinstance(e, cst.Element) else None for e in target.elements]
        if all(isinstance(e, cst.Element) for e in small.value.elements) and None not in attrs:
            return attrs
        return None
    attr = _self_attr(target, me)
    return None if attr is None else [attr]


def _self_attr(target: cst.BaseExpression, me: str) -> str | None:
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == me:
        return target.attr.value
    return None


def _pure(expr, params, attrs, me, calls, free, reused) -> bool:
    """Whether `expr` computes a value from `params`, earlier attributes, literals and pure builtins."""
    recurse = lambda e: _pure(e, params, attrs, me, calls, free, reused)  # noqa: E731
    if isinstance(expr, cst.Name):
        if expr.value == me:
            return False
        free.add(expr.value)
        return True
    if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)):
        return True
    if isinstance(expr, cst.Attribute):
        if isinstance(expr.value, cst.Name) and expr.value.value == me:
            return expr.attr.value in attrs
        return recurse(expr.value)
    if isinstance(expr, cst.UnaryOperation):
        return recurse(expr.expression)
    if isinstance(expr, (cst.BinaryOperation, cst.BooleanOperation)):
        return recurse(expr.left) and recurse(expr.right)
    if isinstance(expr, cst.Comparison):
        return recurse(expr.left) and all(recurse(c.comparator) for c in expr.comparisons)
    if isinstance(expr, cst.IfExp):
        return recurse(expr.test) and recurse(expr.body) and recurse(expr.orelse)
    if isinstance(expr, cst.Tuple) or (isinstance(expr, (cst.List, cst.Set)) and not reused):
        return all(isinstance(e, cst.Element) and recurse(e.value) for e in expr.elements)
    if isinstance(expr, cst.Subscript):
        return recurse(expr.value) and all(
            isinstance(s.slice, cst.Index) and recurse(s.slice.value) for s in expr.slice
        )
    if isinstance(expr, cst.Call) and calls(expr.func):
        if isinstance(expr.func, cst.Name) and expr.func.value in params:
            return False
        free.add(_dotted_head(expr.func))
        return all(not a.star and a.keyword is None and recurse(a.value) for a in expr.args)
    return False


def _literal(expr: cst.BaseExpression) -> bool:
    """A default that means the same wherever it is written."""
    if isinstance(expr, cst.Name):
        return expr.value in ("None", "True", "False")
    if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return isinstance(expr.expression, (cst.Integer, cst.Float))
    return False


def _note_assigned(target, value, assigned) -> None:
    if isinstance(target, cst.Name):
        assigned.setdefault(target.value, []).append(value)
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            _note_assigned(element.value, cst.Name("None") if isinstance(element, cst.Element) else cst.Tuple([]), assigned)


def _single(expr, assigned, seen) -> bool:
    """Whether `expr` is one gradient (a tensor or None), not a tuple of them."""
    if isinstance(expr, cst.Name):
        if expr.value == "None":
            return True
        if expr.value in seen:
            return False
        values = assigned.get(expr.value, [])  # a parameter (a grad_output) when never assigned
        return all(v is None or _single(v, assigned, seen | {expr.value}) for v in values)
    if isinstance(expr, (cst.BinaryOperation, cst.Subscript)):
        return True
    if isinstance(expr, cst.UnaryOperation):
        return not isinstance(expr.operator, cst.Not)
    if isinstance(expr, cst.IfExp):
        return _single(expr.body, assigned, seen) and _single(expr.orelse, assigned, seen)
    if isinstance(expr, cst.Call):
        func = expr.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        return name is not None and name not in TUPLE_METHODS and name not in ("tuple", "list", "zip", "map")
    return False


def _inside(node, ancestor, parents) -> bool:
    while node is not None:
        if node is ancestor:
            return True
        node = parents.get(node)
    return False


def _enclosing(node, parents, kind):
    node = parents.get(node)
    while node is not None and not isinstance(node, kind):
        node = parents.get(node)
    return node


def _module_of(node, parents):
    while parents.get(node) is not None:
        node = parents[node]
    return node


def _append(call: cst.Call, values: list[cst.BaseExpression]) -> cst.Call:
    """`call` with `values` appended as positional arguments, following the call's own layout."""
    if not values:
        return call
    args = list(call.args)
    separator = args[-2].comma if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) else None
    if separator is None:
        separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    new = [cst.Arg(value=v, comma=separator) for v in values]
    if args:
        last = args[-1]
        args[-1] = last.with_changes(comma=separator, whitespace_after_arg=cst.SimpleWhitespace(""))
        new[-1] = new[-1].with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg)
    else:
        new[-1] = new[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return call.with_changes(args=[*args, *new])


def _elements(values: list[cst.BaseExpression]) -> list[cst.Element]:
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    elements = [cst.Element(value=v, comma=comma) for v in values]
    elements[-1] = elements[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return elements


class _Renamer(cst.CSTTransformer):
    """`self` -> `ctx` (references only) and `self.saved_variables` -> `ctx.saved_tensors`."""

    def __init__(self, me: str) -> None:
        super().__init__()
        self.me = me
        self._skip: set[int] = set()

    def visit_statement(self, statement: cst.BaseStatement) -> cst.BaseStatement:
        return statement.visit(self)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._skip.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._skip.add(id(node.keyword))

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        if original_node.value == self.me and id(original_node) not in self._skip:
            return updated_node.with_changes(value="ctx")
        return updated_node

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.Attribute:
        value = original_node.value
        if isinstance(value, cst.Name) and value.value == self.me and original_node.attr.value == "saved_variables":
            return updated_node.with_changes(attr=cst.Name("saved_tensors"))
        return updated_node


class _ClassRenamer(_Renamer):
    """References to the class's old name, inside its own body, -> its new name."""

    def __init__(self, old: str, new: str) -> None:
        super().__init__(old)
        self.new = new

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        if original_node.value == self.me and id(original_node) not in self._skip:
            return updated_node.with_changes(value=self.new)
        return updated_node

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.Attribute:
        return updated_node
