"""TM010's survey of a legacy Function's uses in its file: direct call sites `Fn(...)(...)`,
kept instances `Fn(...)` (only ever called), and what each call site passes to `apply`."""

from __future__ import annotations

import libcst as cst

from codemods.transforms.autograd_function.expressions import _literal
from codemods.transforms.autograd_function.plan import Declined, _Plan, _Site
from codemods.transforms.autograd_function.tree import _enclosing, _inside, _methods, _module_of, _walk


class CallSites:
    """The uses `AutogradFunction._plan` surveys (a part of that codemod: `self` is the codemod,
    with `_parents` filled by its survey)."""

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
