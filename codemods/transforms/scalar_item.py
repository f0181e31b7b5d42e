"""TM003: `loss.data[0]` on a provably 0-dim tensor -> `loss.item()`."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Union

import libcst as cst

from codemods.gates.loss_reduction import losses
from codemods.helpers import arguments
from codemods.helpers.bindings import import_binding
from codemods.base import MigrationCodemod
from codemods.helpers.losses import legacy_reduction

# Reductions over every element: 0-dim when no dim is given.
REDUCTIONS = frozenset({"sum", "mean", "norm", "max", "min", "prod", "std", "var", "median", "nansum", "nanmean"})
# Of those, the ones whose first positional argument is not a dim (`x.norm(2)` is a 2-norm).
_FIRST_ARG_NOT_DIM = {"norm": "p"}
_DIM_KEYWORDS = frozenset({"dim", "axis", "dims"})
# Module methods that return the module itself: `nn.CrossEntropyLoss().cuda()` is still the loss.
_MODULE_SELF = frozenset({"cuda", "cpu", "to", "float", "double", "half", "train", "eval"})
# Tensor methods that keep the shape: a 0-dim tensor stays 0-dim.
_SAME_SHAPE = frozenset({"detach", "clone", "cpu", "cuda", "to", "float", "double", "half", "abs", "sqrt", "exp", "log"})
# Names whose `.data[0]` reads like a scalar (statistics), for findings only.
_SCALAR_LOOKING = re.compile(r"loss|acc|correct|err|prec|score|total|reward|dist|criterion", re.IGNORECASE)
# Calls whose first argument is read as a number: a meter's update(value, n), a list of values.
_SCALAR_SINKS = frozenset({"float", "update", "append", "add_scalar", "log", "write"})
_NUMBER_METHODS = frozenset({"numel", "dim", "item"})  # Python numbers, called with no argument
_SCALAR_REDUCTIONS = frozenset({"mean", "sum", "batchmean"})
_MAX_DEPTH = 24  # a bound on how far a value is followed (names, parameters, attributes, arithmetic)


@dataclass(frozen=True)
class _Param:
    """A function's parameter: what it holds is what every call site in the file passes."""

    function: cst.FunctionDef
    name: str
    index: int | None  # its position among the positional parameters (self included); None: keyword-only


@dataclass
class _Scope:
    """Simple bindings of one function (or the module): name -> assigned values, each with the
    environment it was assigned in; a None value is opaque."""

    names: dict[str, list[tuple[_Value, _Env]]] = field(default_factory=dict)
    is_class: bool = False  # a class body: its names are not visible from its methods

    def bind(self, name: str, value: _Value, env: _Env) -> None:
        self.names.setdefault(name, []).append((value, env))


@dataclass
class _Class:
    """One class of the file: its bases (as spelled), its methods, and its methods' `self.<attr>`
    assignments."""

    name: str
    bases: tuple[str, ...]
    methods: dict[str, cst.FunctionDef] = field(default_factory=dict)
    attributes: _Scope = field(default_factory=_Scope)


@dataclass(frozen=True)
class _Env:
    """Where an expression is evaluated: the scopes it sees (innermost last) and the class its
    `self` is an instance of."""

    scopes: tuple[_Scope, ...]
    cls: _Class | None = None


_Value = Union[cst.BaseExpression, _Param, None]


class _Bindings(cst.CSTVisitor):
    """First pass: what each function, the module and each class's `self.x` are assigned, where
    each function is called from, and how often each name is used other than as a callee.

    Not helpers/bindings.py's `collect_scopes`, on purpose: a value is kept with the environment
    it was assigned in (to follow it there), a parameter is bound to the calls that pass it, and a
    tuple unpacking, a loop, `:=` or a multiple assignment binds an opaque value."""

    def __init__(self) -> None:
        self.module = _Scope()
        self.envs: dict[int, _Env] = {}  # FunctionDef / ClassDef id -> the env of its body
        self.classes: dict[str, list[_Class]] = {}  # by name
        self.owner: dict[int, _Class] = {}  # FunctionDef id -> the class it is a method of
        self.defs: Counter[str] = Counter()  # functions and classes defined, by name
        self.calls: list[tuple[cst.Call, _Env]] = []
        self.name_uses: Counter[str] = Counter()  # Names other than callees, bases and definitions
        self.attribute_uses: Counter[str] = Counter()  # `x.attr` other than a callee
        self.foreign_attributes: set[str] = set()  # attributes assigned on something not `self`
        self._env = _Env((self.module,))
        self._stack: list[tuple[_Env, _Class | None]] = []
        self._class: _Class | None = None  # the class whose body is being read (not its methods')
        self._skip: set[int] = set()  # Name/Attribute nodes that are callees, bases or def names

    def _push(self, env: _Env, cls: _Class | None) -> None:
        self._stack.append((self._env, self._class))
        self._env, self._class = env, cls

    def _pop(self) -> None:
        self._env, self._class = self._stack.pop()

    def _bind(self, name: str, value: _Value) -> None:
        self._env.scopes[-1].bind(name, value, self._env)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._bind(node.name.value, None)
        self.defs[node.name.value] += 1
        self._skip.add(id(node.name))
        bases = []
        for base in node.bases:
            if isinstance(base.value, cst.Name) and base.keyword is None:
                bases.append(base.value.value)
                self._skip.add(id(base.value))  # naming a class as a base does not let it escape
        cls = _Class(node.name.value, tuple(bases))
        self.classes.setdefault(cls.name, []).append(cls)
        env = _Env((*self._env.scopes, _Scope(is_class=True)), self._env.cls)
        self.envs[id(node)] = env
        self._push(env, cls)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._bind(node.name.value, None)
        self.defs[node.name.value] += 1
        self._skip.add(id(node.name))
        cls = self._class
        if cls is not None:
            cls.methods.setdefault(node.name.value, node)
            self.owner[id(node)] = cls
        scope = _Scope()
        visible = tuple(s for s in self._env.scopes if not s.is_class)
        env = _Env((*visible, scope), cls if cls is not None else self._env.cls)
        self.envs[id(node)] = env
        params = node.params
        for index, param in enumerate((*params.posonly_params, *params.params)):
            scope.bind(param.name.value, _Param(node, param.name.value, index), env)
        for param in params.kwonly_params:
            scope.bind(param.name.value, _Param(node, param.name.value, None), env)
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                scope.bind(star.name.value, None, env)
        self._push(env, None)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        # Its parameters are its own: opaque inside it, and its calls' arguments are read there.
        scope = _Scope()
        env = _Env((*self._env.scopes, scope), self._env.cls)
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            scope.bind(param.name.value, None, env)
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                scope.bind(star.name.value, None, env)
        self.envs[id(node)] = env
        self._push(env, self._class)

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self._pop()

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._target(node.target, None)  # opaque in the whole scope: never read the outer binding

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append((node, self._env))
        self._skip.add(id(node.func))

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self._skip:
            self.name_uses[node.value] += 1

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._skip.add(id(node.attr))  # `x.train` is no use of a name `train`
        if id(node) not in self._skip:
            self.attribute_uses[node.attr.value] += 1

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._skip.add(id(node.keyword))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._target(target.target, node.value if len(node.targets) == 1 else None)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._target(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        # `loss += other`: as scalar as `loss` and `other` both are.
        if isinstance(node.target, cst.Name):
            self._bind(node.target.value, cst.BinaryOperation(node.target, cst.Add(), node.value))
        else:
            self._target(node.target, None)

    def visit_For(self, node: cst.For) -> None:
        self._target(node.target, None)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._target(node.asname.name, None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._target(node.target, None)

    def visit_Global(self, node: cst.Global) -> None:
        for item in node.names:
            self._bind(item.name.value, None)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        for item in node.names:
            self._bind(item.name.value, None)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        bound = import_binding(node)
        if bound is not None:
            self._bind(bound, None)

    def visit_Del(self, node: cst.Del) -> None:
        self._target(node.target, None)

    def _target(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if isinstance(target, cst.Name):
            self._bind(target.value, value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._target(element.value, None)
        elif isinstance(target, cst.StarredElement):
            self._target(target.value, None)
        elif isinstance(target, cst.Attribute):
            if isinstance(target.value, cst.Name) and target.value.value == "self" and self._env.cls is not None:
                self._env.cls.attributes.bind(target.attr.value, value, self._env)
            else:  # `trainer.criterion = ...`: any class's attribute of that name may hold it
                self.foreign_attributes.add(target.attr.value)


class ScalarItem(MigrationCodemod):
    """Replace `.data[0]` on a provably 0-dim tensor with `.item()`.

    ## What it does
    Rewrites `x.data[0]` (and `x.data.cpu()[0]`, `x.cpu().data[0]`, `x.data.numpy()[0]`) into
    `x.item()` when `x` is provably a 0-dim tensor: the result of a `torch.nn` loss module or
    `torch.nn.functional` loss with a reducing `reduction`, a call of a name, a parameter or a
    `self.<attr>` that holds such a loss module, `.sum()`/`.mean()`/`.norm()`/`.max()`… with no
    dim, arithmetic of those, and names assigned only from those. A parameter holds what every
    call of its function in the file passes (`train(model, nn.CrossEntropyLoss())`,
    `Trainer(criterion=nn.MSELoss())` for `self.criterion = criterion`), when the function is
    called in the file and never used otherwise; `self.<attr>` holds what the methods of its
    class, its bases and its subclasses in the file assign. Anything else is left alone; a
    `.data[0]` that looks like a statistic (`total += x.data[0]`, `meter.update(loss.data[0])`)
    but cannot be proven 0-dim is a finding.

    ## Why is this bad?
    Before PyTorch 0.4 a loss was a 1-element tensor and `.data[0]` read its value. Losses and full
    reductions are 0-dim now, and indexing a 0-dim tensor raises `IndexError: invalid index of a
    0-dim tensor`.

    ## Example
    ```python
    import torch.nn as nn

    criterion = nn.CrossEntropyLoss()
    loss = criterion(output, target)
    total_loss += loss.data[0]
    ```

    ## Use instead
    ```python
    import torch.nn as nn

    criterion = nn.CrossEntropyLoss()
    loss = criterion(output, target)
    total_loss += loss.item()
    ```

    ## Fix safety
    Safe: only values proven 0-dim are rewritten, where the old code raises `IndexError` today and
    `.item()` returns the number `.data[0]` returned on 0.3 (as a Python number; through
    `.numpy()` it was a NumPy scalar). `.data[0]` on a batch, a weight or a Python list
    (`len(self.data[0])`) is never touched. A loss passed in as a parameter is proven only by the
    calls in the same file: a function or class the file never calls (it is called from
    another module) keeps its `.data[0]`, and one that looks like a scalar is reported instead.

    ## References
    - https://pytorch.org/blog/pytorch-0_4_0-migration-guide/ (zero-dimensional tensors)
    """

    PRUNE = True  # its sites are on trigger lines; the bindings it learns from come from its own full pass

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._bindings = _Bindings()
        self._envs: list[_Env] = []
        self._scalar_looking: set[int] = set()
        self._visiting: set[tuple[int, int]] = set()
        self._sites: dict[int, list[tuple[cst.Call, _Env, int]]] = {}

    def visit_Module(self, node: cst.Module) -> None:
        node.visit(self._bindings)
        self._envs = [_Env((self._bindings.module,))]

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._envs.append(self._bindings.envs[id(node)])

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        self._envs.pop()
        return updated_node

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._envs.append(self._bindings.envs[id(node)])

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self._envs.pop()
        return updated_node

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._envs.append(self._bindings.envs[id(node)])

    def leave_Lambda(self, original_node: cst.Lambda, updated_node: cst.Lambda) -> cst.Lambda:
        self._envs.pop()
        return updated_node

    # -- where a `.data[0]` reads like a number --------------------------------------------

    def _mark_scalar(self, expr: cst.BaseExpression) -> None:
        """`expr` is read as a number, and so is each operand of its arithmetic
        (`meter.update(criterion(out, y).data[0] / n, n)`)."""
        self._scalar_looking.add(id(expr))
        if isinstance(expr, cst.BinaryOperation):
            self._mark_scalar(expr.left)
            self._mark_scalar(expr.right)
        elif isinstance(expr, cst.UnaryOperation):
            self._mark_scalar(expr.expression)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._mark_scalar(node.value)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        named = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""
        if named in _SCALAR_SINKS and node.args:
            self._mark_scalar(node.args[0].value)

    # -- the rewrite ------------------------------------------------------------------------

    def leave_Subscript(self, original_node: cst.Subscript, updated_node: cst.Subscript) -> cst.BaseExpression:
        base = _scalar_read(original_node)
        if base is None:
            return updated_node
        if self._zero_dim(base, self._envs[-1], 0):
            new_base = _scalar_read(updated_node)
            item = cst.Call(func=cst.Attribute(value=new_base, attr=cst.Name("item")))
            return self.rewrite(original_node, updated_node, item)
        if self._looks_scalar(original_node, base):
            text = self.code_for(base)
            self.finding(
                original_node,
                f"`{self.code_for(original_node)}` reads like a number, but `{text}` cannot be proven 0-dim here:"
                f" if it is a loss or a full reduction, use `{text}.item()`",
                suggestion=f"{text}.item()",
            )
        return updated_node

    def _looks_scalar(self, node: cst.Subscript, base: cst.BaseExpression) -> bool:
        if isinstance(base, cst.Name) and base.value in ("self", "cls"):
            return False
        if id(node) in self._scalar_looking:
            return True
        if isinstance(base, (cst.BinaryOperation, cst.UnaryOperation)):
            return True  # `(d_loss_real + torch.abs(diff)).data[0]`: arithmetic read as one number
        if isinstance(base, cst.Call):  # `self._loss(model, guide).data[0]`
            base = base.func
        name = base.value if isinstance(base, cst.Name) else base.attr.value if isinstance(base, cst.Attribute) else ""
        return bool(_SCALAR_LOOKING.search(name))

    # -- what is provably 0-dim --------------------------------------------------------------

    def _zero_dim(self, expr: _Value, env: _Env, depth: int) -> bool:
        if depth > _MAX_DEPTH or expr is None:
            return False
        if isinstance(expr, cst.Name):
            key = (id(env.scopes[-1]), hash(expr.value))
            if key in self._visiting:
                return True  # `loss += ...`: as 0-dim as its other assignments make it
            self._visiting.add(key)
            try:
                values = [(v, e) for v, e in self._values(expr.value, env) if not self._number(v, e)]
                return bool(values) and all(self._zero_dim(v, e, depth + 1) for v, e in values)
            finally:
                self._visiting.discard(key)
        if isinstance(expr, _Param):
            arguments = self._arguments(expr)
            return bool(arguments) and all(self._zero_dim(v, e, depth + 1) for v, e in arguments)
        if isinstance(expr, cst.BinaryOperation) and not isinstance(expr.operator, cst.MatrixMultiply):
            tensor_sides = [s for s in (expr.left, expr.right) if not self._number(s, env)]
            return bool(tensor_sides) and all(self._zero_dim(s, env, depth + 1) for s in tensor_sides)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
            return self._zero_dim(expr.expression, env, depth + 1)
        if not isinstance(expr, cst.Call):
            return False
        name = self.qualified_name(expr.func)
        entry = losses().get(name) if name else None
        if entry is not None and name.startswith("torch.nn.functional."):
            return _reduces(expr, entry)
        if name in _TORCH_REDUCTIONS:
            return _full_reduction(expr, _TORCH_REDUCTIONS[name], skip_first=True)
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in REDUCTIONS and name is None:
            return _full_reduction(expr, func.attr.value, skip_first=False)
        if isinstance(func, cst.Attribute) and func.attr.value in _SAME_SHAPE and name is None:
            return self._zero_dim(func.value, env, depth + 1)  # `loss.detach()`, `loss.cpu()`
        return self._is_loss_module(func, env, depth + 1)

    def _number(self, expr: _Value, env: _Env) -> bool:
        """A Python number: a numeric literal, `len(...)`/`int(...)`/`float(...)` (not shadowed),
        `x.size(0)`, `x.numel()`, `x.dim()` or `x.item()`."""
        if isinstance(expr, (cst.Integer, cst.Float)):
            return True
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and not arguments.has_star_args(expr):
            method, given = expr.func.attr.value, [a.value for a in expr.args]
            if method in _NUMBER_METHODS and not given:
                return True
            if method == "size" and len(given) == 1 and isinstance(given[0], cst.Integer):
                return True
        return (
            isinstance(expr, cst.Call)
            and isinstance(expr.func, cst.Name)
            and expr.func.value in ("len", "int", "float")
            and not self._values(expr.func.value, env)
        )

    def _is_loss_module(self, expr: _Value, env: _Env, depth: int) -> bool:
        """`expr` evaluates to a `torch.nn` loss module with a reducing `reduction`."""
        if depth > _MAX_DEPTH or expr is None:
            return False
        if isinstance(expr, cst.Name):
            values = self._values(expr.value, env)
        elif isinstance(expr, _Param):
            values = self._arguments(expr)
        elif isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            values = self._attribute_values(env.cls, expr.attr.value)
        elif isinstance(expr, cst.Call):
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _MODULE_SELF:
                if self.qualified_name(expr.func) is None:  # `.cuda()` on something, not `torch.cuda`
                    return self._is_loss_module(expr.func.value, env, depth + 1)
            name = self.qualified_name(expr.func)
            entry = losses().get(name) if name else None
            return entry is not None and not name.startswith("torch.nn.functional.") and _reduces(expr, entry)
        else:
            return False
        return bool(values) and all(self._is_loss_module(v, e, depth + 1) for v, e in values)

    # -- where values come from ----------------------------------------------------------------

    def _values(self, name: str, env: _Env) -> list[tuple[_Value, _Env]]:
        for scope in reversed(env.scopes):
            if name in scope.names:
                return scope.names[name]
        return []

    def _attribute_values(self, cls: _Class | None, attr: str) -> list[tuple[_Value, _Env]]:
        """What `self.<attr>` may hold in a method of `cls`: every assignment in its family."""
        if cls is None or attr in self._bindings.foreign_attributes:
            return []
        return [bound for member in self._family(cls) for bound in member.attributes.names.get(attr, ())]

    def _family(self, cls: _Class) -> list[_Class]:
        """`cls`, its bases and its subclasses among the file's classes (by name)."""
        classes = self._bindings.classes
        ancestors = {cls.name}
        pending = list(cls.bases)
        while pending:
            base = pending.pop()
            if base not in ancestors:
                ancestors.add(base)
                pending.extend(b for c in classes.get(base, ()) for b in c.bases)
        members = [c for name in ancestors for c in classes.get(name, ())]
        members += [c for group in classes.values() for c in group if c not in members and self._descends(c, cls.name)]
        return members

    def _descends(self, cls: _Class, ancestor: str, depth: int = 0) -> bool:
        if depth > _MAX_DEPTH:
            return False
        return any(b == ancestor or any(self._descends(c, ancestor, depth + 1) for c in self._bindings.classes.get(b, ())) for b in cls.bases)

    def _arguments(self, param: _Param) -> list[tuple[_Value, _Env]]:
        """What `param` receives at each call of its function in the file; [] when one call
        cannot be read or the function is not only called here."""
        key = (id(param.function), hash(param.name))
        if key in self._visiting:
            return []  # a recursive call: no evidence
        self._visiting.add(key)
        try:
            found = []
            for call, env, shift in self._call_sites(param.function):
                value = _argument(call, param, shift)
                if value is None:
                    return []
                found.append((value, env))
            return found
        finally:
            self._visiting.discard(key)

    def _call_sites(self, function: cst.FunctionDef) -> list[tuple[cst.Call, _Env, int]]:
        """Every call of `function` in the file, with the env it is made in and how many of the
        function's positional parameters the call does not pass (`self`); [] when it may be
        called in a way this cannot follow (a decorator, passed as a value, an unbound call)."""
        if id(function) not in self._sites:
            self._sites[id(function)] = self._find_call_sites(function)
        return self._sites[id(function)]

    def _find_call_sites(self, function: cst.FunctionDef) -> list[tuple[cst.Call, _Env, int]]:
        b = self._bindings
        name = function.name.value
        cls = b.owner.get(id(function))
        if function.decorators or b.defs[name] != 1 and cls is None:
            return []
        if cls is None:
            if b.name_uses[name]:
                return []
            return [(c, e, 0) for c, e in b.calls if isinstance(c.func, cst.Name) and c.func.value == name]
        if b.attribute_uses[name] or b.name_uses[name]:
            return []
        sites = []
        created = self._created_by(cls) if name == "__init__" else set()
        if any(b.name_uses[n] or b.defs[n] != 1 for n in created):
            return []
        for call, env in b.calls:
            func = call.func
            if isinstance(func, cst.Name) and func.value in created:
                sites.append((call, env, 1))
            elif isinstance(func, cst.Attribute) and func.attr.value == name:
                if isinstance(func.value, cst.Name) and func.value.value in b.classes:
                    return []  # `Base.__init__(self, ...)`: an unbound call
                if name == "__init__" and not (env.cls is not None and _is_super(func.value) and self._descends(env.cls, cls.name)):
                    continue  # another class's `super().__init__`
                sites.append((call, env, 1))
        return sites

    def _created_by(self, cls: _Class) -> set[str]:
        """The names of the classes whose instances `cls.__init__` initialises: `cls` and its
        subclasses that do not define their own."""
        names = {cls.name}
        for group in self._bindings.classes.values():
            for other in group:
                if "__init__" not in other.methods and self._descends(other, cls.name):
                    path_defines = any(
                        "__init__" in c.methods
                        for base in other.bases
                        for c in self._bindings.classes.get(base, ())
                        if c is not cls and self._descends(c, cls.name)
                    )
                    if not path_defines:
                        names.add(other.name)
        return names


def _is_super(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "super"


def _argument(call: cst.Call, param: _Param, shift: int) -> cst.BaseExpression | None:
    """The expression `call` passes for `param`; None when it passes none, or stars may hide it."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == param.name:
            return arg.value  # a star could not pass it too: that is a TypeError
    if arguments.has_star_args(call):
        return None
    positional = [a for a in call.args if a.keyword is None]
    if param.index is None or param.index < shift:
        return None
    index = param.index - shift
    return positional[index].value if index < len(positional) else None


# `torch.sum(x)` & co.: qualified name -> method name.
_TORCH_REDUCTIONS = {f"torch.{r}": r for r in REDUCTIONS}


def _scalar_read(node: cst.Subscript) -> cst.BaseExpression | None:
    """The tensor `x` of `x.data[0]`, `x.data.cpu()[0]`, `x.cpu().data[0]`, `x.data.numpy()[0]`…"""
    if len(node.slice) != 1:
        return None
    index = node.slice[0].slice
    if not (isinstance(index, cst.Index) and isinstance(index.value, cst.Integer) and index.value.value == "0"):
        return None
    expr = node.value
    seen_data = False
    while True:
        if isinstance(expr, cst.Attribute) and expr.attr.value == "data":
            seen_data = True
            expr = expr.value
        elif (
            isinstance(expr, cst.Call)
            and not expr.args
            and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value in ("cpu", "numpy")
        ):
            expr = expr.func.value
        else:
            break
    return expr if seen_data and expr is not node.value else None


def _reduces(call: cst.Call, entry: dict) -> bool:
    """A loss call whose reduction is literally 'mean'/'sum' (the default), legacy flags included."""
    if arguments.has_star_args(call):
        return False
    bound = arguments.bind(call, entry["positional"])
    values = {p: arguments.literal(bound[p].arg.value) for p in ("size_average", "reduce", "reduction") if p in bound}
    if not all(arguments.is_literal(v) for v in values.values()):
        return False
    if "size_average" in values or "reduce" in values:
        if values.get("size_average") is not None or values.get("reduce") is not None:
            return legacy_reduction(values.get("size_average"), values.get("reduce")) != "none"
    return values.get("reduction", "mean") in _SCALAR_REDUCTIONS


def _full_reduction(call: cst.Call, method: str, *, skip_first: bool) -> bool:
    """`x.sum()`, `torch.sum(x)`, `x.norm(2)`: no dim given (keyword or positional)."""
    if arguments.has_star_args(call):
        return False
    if any(a.keyword is not None and a.keyword.value in _DIM_KEYWORDS for a in call.args):
        return False
    positional = [a for a in call.args if a.keyword is None]
    allowed = (1 if skip_first else 0) + (1 if method in _FIRST_ARG_NOT_DIM else 0)
    return len(positional) <= allowed and (not skip_first or len(positional) >= 1)
