"""TM010: old-style autograd Functions (instance `forward`/`backward`) -> static methods on `ctx`.

This module holds the codemod: the survey of the module's classes, the plan of each conversion
and the rewrite of classes, call sites and `backward`'s returns. Its parts: `class_checks`
(the class's own body), `call_sites` (its uses in the file), `rewrite` (building the new class),
`plan` (what a conversion holds), `expressions` and `tree` (pure reads of libcst trees),
`tables` (the names it knows)."""

from __future__ import annotations

import os

import libcst as cst

from codemods.gates.autograd_function import FUNCTION_BASES
from codemods.base import MigrationCodemod
from codemods.helpers.scan import _index
from codemods.transforms.autograd_function.call_sites import CallSites
from codemods.transforms.autograd_function.class_checks import ClassChecks
from codemods.transforms.autograd_function.plan import Declined, _Plan, _Site
from codemods.transforms.autograd_function.rewrite import Rewrites, _append, _ClassRenamer, _elements, _Renamer
from codemods.transforms.autograd_function.tree import (
    _binds,
    _bound_names,
    _class_level_names,
    _is_static,
    _methods,
    _name_values,
    _Parents,
    _statements,
)
from codemods.base import traverse


class AutogradFunction(ClassChecks, CallSites, Rewrites, MigrationCodemod):
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
    from torch.autograd import Function


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
    from torch.autograd import Function


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

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._plans: dict[int, _Plan] = {}
        self._sites: dict[int, _Site] = {}
        self._returns: dict[int, list[cst.BaseExpression]] = {}
        self._parents: dict[cst.CSTNode, cst.CSTNode] = {}

    # -- planning, on the original tree ----------------------------------------------------

    def visit_Module(self, node: cst.Module) -> None:
        scope = _Parents()
        traverse(node, scope)
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
            new_class = traverse(new_class, _ClassRenamer(plan.name, plan.new_name)).with_changes(name=cst.Name(plan.new_name))
            replacement = cst.FlattenSentinel([new_class, self._wrapper(plan)])
        review = plan.reason or (
            f"legacy autograd Function `{plan.name}` made static; its call sites call `{plan.name}.apply`"
            + (" with `__init__`'s arguments after the inputs" if plan.init_params else "")
        )
        return self.rewrite(original_node, updated_node, replacement, review=review)


def _suggestion(name: str) -> str:
    return (
        f"make {name}.forward/backward @staticmethods taking ctx, and pass what __init__ takes to "
        f"{name}.apply after the inputs (torch-migrate explain TM010)"
    )
