"""TM003: `loss.data[0]` on a provably 0-dim tensor -> `loss.item()`.

- this module: the codemod, `ScalarItem` (its docstring is the rule's documentation);
- `environments.py`: the module's bindings it follows a value through;
- `reads.py`: what a `.data[0]` read and a full reduction look like.
"""

from __future__ import annotations

import re

import libcst as cst

from codemods.base import MigrationCodemod
from codemods.gates.loss_reduction import losses
from codemods.helpers import arguments
from codemods.transforms.scalar_item.environments import Bindings, ClassFacts, Env, Param, Value
from codemods.transforms.scalar_item.reads import (
    REDUCTIONS,
    TORCH_REDUCTIONS,
    argument_for,
    element,
    full_reduction,
    is_super,
    reduces,
    scalar_read,
    through_numpy,
)
from codemods.transforms.scalar_item.uses import ReadUses
from codemods.base import traverse

# Module methods that return the module itself: `nn.CrossEntropyLoss().cuda()` is still the loss.
_MODULE_SELF = frozenset({"cuda", "cpu", "to", "float", "double", "half", "train", "eval"})
# Tensor methods that keep the shape: a 0-dim tensor stays 0-dim.
_SAME_SHAPE = frozenset({"detach", "clone", "cpu", "cuda", "to", "float", "double", "half", "abs", "sqrt", "exp", "log"})
# Names whose `.data[0]` reads like a scalar (statistics), for findings only.
_SCALAR_LOOKING = re.compile(r"loss|acc|correct|err|prec|score|total|reward|dist|criterion", re.IGNORECASE)
# Calls whose first argument is read as a number: a meter's update(value, n), a list of values.
_SCALAR_SINKS = frozenset({"float", "update", "append", "add_scalar", "log", "write"})
_NUMBER_METHODS = frozenset({"numel", "dim", "item"})  # Python numbers, called with no argument
_MAX_DEPTH = 24  # a bound on how far a value is followed (names, parameters, attributes, arithmetic)


class ScalarItem(ReadUses, MigrationCodemod):
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
    class, its bases and its subclasses in the file assign. Every other `.data[0]` (and a chain
    such as `x.data[0][0]`, read as one) is a finding — one that looks like a statistic
    (`total += x.data[0]`, `meter.update(loss.data[0])`) says so — except where the old code
    provably read a tensor, whose meaning is unchanged: the value is indexed by a slice, a
    method only tensors have is called on it (`x.data[0].cpu()`, `(x.data[0] > 0.5).nonzero()`),
    it is written to (`p.data[0] = 0.5`), or `.data` is an attribute of `self`.

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
    `.numpy()` it was a NumPy scalar). A read whose dims are unknown is reported, never
    rewritten: on a 0-dim tensor it raises, on a 1-d one it now gives a 0-dim tensor where 0.3
    gave a Python number (`'{}'.format(x)`, a dict key and `json` see the difference), and on a
    larger one it reads the same row as before. A loss passed in as a parameter is proven only
    by the calls in the same file: a function or class the file never calls (it is called from
    another module) keeps its `.data[0]`, reported.

    ## References
    - https://pytorch.org/blog/pytorch-0_4_0-migration-guide/ (zero-dimensional tensors)
    """

    PRUNE = True  # its sites are on trigger lines; the bindings it learns from come from its own full pass

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._bindings = Bindings()
        self._envs: list[Env] = []
        self._scalar_looking: set[int] = set()
        self._visiting: set[tuple[int, int]] = set()
        self._sites: dict[int, list[tuple[cst.Call, Env, int]]] = {}

    def visit_Module(self, node: cst.Module) -> None:
        traverse(node, self._bindings)
        self._envs = [Env((self._bindings.module,))]

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
        self._stored.add(id(node.target))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        named = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""
        if named in _SCALAR_SINKS and node.args:
            self._mark_scalar(node.args[0].value)
        self._note_tensor_method(node)

    # -- the rewrite ------------------------------------------------------------------------

    def leave_Subscript(self, original_node: cst.Subscript, updated_node: cst.Subscript) -> cst.BaseExpression:
        base = scalar_read(original_node)
        if base is None:
            return updated_node
        if self._zero_dim(base, self._envs[-1], 0):
            new_base = scalar_read(updated_node)
            item = cst.Call(func=cst.Attribute(value=new_base, attr=cst.Name("item")))
            return self.rewrite(original_node, updated_node, item)
        if isinstance(base, cst.Name) and base.value in ("self", "cls"):
            return updated_node  # `self.data[0]`: an attribute of the object, not a tensor's `.data`
        if self._unchanged(original_node, through_numpy(original_node)):
            return updated_node
        chain = self._chain(original_node)  # `x.data[0][0]`: read as one
        outer, dims = chain[-1], len(chain)
        text, read = self.code_for(base), self.code_for(outer)
        if self._looks_scalar(outer, base):
            self.finding(
                original_node,
                f"`{read}` reads like a number, but `{text}` cannot be proven 0-dim here:"
                f" if it is a loss or a full reduction, use `{text}.item()`",
                suggestion=f"{text}.item()",
            )
        elif through_numpy(original_node):
            self.finding(
                original_node,
                f"`{read}`: `{text}` is not shown to have a dim: if it is 0-dim (a loss, a full reduction),"
                " its NumPy array has no element 0 (IndexError today)",
                suggestion=f"{text}.item()",
            )
        else:
            self.finding(
                original_node,
                f"`{read}`: `{text}` is not shown to be 0-dim (`.data[0]` raises IndexError on it today) nor to"
                f" have more than {dims} dim{'s' if dims > 1 else ''} (torch 0.3 read a Python number from"
                f" {dims} dim{'s' if dims > 1 else ''}, today a 0-dim tensor)",
                suggestion=f"`{text}.item()` if it is a loss or a full reduction;"
                f" `{element(self.code_for, chain)}.item()` for one element as a number",
            )
        return updated_node

    def _looks_scalar(self, node: cst.Subscript, base: cst.BaseExpression) -> bool:
        if id(node) in self._scalar_looking:
            return True
        if isinstance(base, (cst.BinaryOperation, cst.UnaryOperation)):
            return True  # `(d_loss_real + torch.abs(diff)).data[0]`: arithmetic read as one number
        if isinstance(base, cst.Call):  # `self._loss(model, guide).data[0]`
            base = base.func
        name = base.value if isinstance(base, cst.Name) else base.attr.value if isinstance(base, cst.Attribute) else ""
        return bool(_SCALAR_LOOKING.search(name))

    # -- what is provably 0-dim --------------------------------------------------------------

    def _zero_dim(self, expr: Value, env: Env, depth: int) -> bool:
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
        if isinstance(expr, Param):
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
            return reduces(expr, entry)
        if name in TORCH_REDUCTIONS:
            return full_reduction(expr, TORCH_REDUCTIONS[name], skip_first=True)
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in REDUCTIONS and name is None:
            return full_reduction(expr, func.attr.value, skip_first=False)
        if isinstance(func, cst.Attribute) and func.attr.value in _SAME_SHAPE and name is None:
            return self._zero_dim(func.value, env, depth + 1)  # `loss.detach()`, `loss.cpu()`
        return self._is_loss_module(func, env, depth + 1)

    def _number(self, expr: Value, env: Env) -> bool:
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

    def _is_loss_module(self, expr: Value, env: Env, depth: int) -> bool:
        """`expr` evaluates to a `torch.nn` loss module with a reducing `reduction`."""
        if depth > _MAX_DEPTH or expr is None:
            return False
        if isinstance(expr, cst.Name):
            values = self._values(expr.value, env)
        elif isinstance(expr, Param):
            values = self._arguments(expr)
        elif isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            values = self._attribute_values(env.cls, expr.attr.value)
        elif isinstance(expr, cst.Call):
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _MODULE_SELF:
                if self.qualified_name(expr.func) is None:  # `.cuda()` on something, not `torch.cuda`
                    return self._is_loss_module(expr.func.value, env, depth + 1)
            name = self.qualified_name(expr.func)
            entry = losses().get(name) if name else None
            return entry is not None and not name.startswith("torch.nn.functional.") and reduces(expr, entry)
        else:
            return False
        return bool(values) and all(self._is_loss_module(v, e, depth + 1) for v, e in values)

    # -- where values come from ----------------------------------------------------------------

    def _values(self, name: str, env: Env) -> list[tuple[Value, Env]]:
        for scope in reversed(env.scopes):
            if name in scope.names:
                return scope.names[name]
        return []

    def _attribute_values(self, cls: ClassFacts | None, attr: str) -> list[tuple[Value, Env]]:
        """What `self.<attr>` may hold in a method of `cls`: every assignment in its family."""
        if cls is None or attr in self._bindings.foreign_attributes:
            return []
        return [bound for member in self._family(cls) for bound in member.attributes.names.get(attr, ())]

    def _family(self, cls: ClassFacts) -> list[ClassFacts]:
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

    def _descends(self, cls: ClassFacts, ancestor: str, depth: int = 0) -> bool:
        if depth > _MAX_DEPTH:
            return False
        return any(b == ancestor or any(self._descends(c, ancestor, depth + 1) for c in self._bindings.classes.get(b, ())) for b in cls.bases)

    def _arguments(self, param: Param) -> list[tuple[Value, Env]]:
        """What `param` receives at each call of its function in the file; [] when one call
        cannot be read or the function is not only called here."""
        key = (id(param.function), hash(param.name))
        if key in self._visiting:
            return []  # a recursive call: no evidence
        self._visiting.add(key)
        try:
            found = []
            for call, env, shift in self._call_sites(param.function):
                value = argument_for(call, param, shift)
                if value is None:
                    return []
                found.append((value, env))
            return found
        finally:
            self._visiting.discard(key)

    def _call_sites(self, function: cst.FunctionDef) -> list[tuple[cst.Call, Env, int]]:
        """Every call of `function` in the file, with the env it is made in and how many of the
        function's positional parameters the call does not pass (`self`); [] when it may be
        called in a way this cannot follow (a decorator, passed as a value, an unbound call)."""
        if id(function) not in self._sites:
            self._sites[id(function)] = self._find_call_sites(function)
        return self._sites[id(function)]

    def _find_call_sites(self, function: cst.FunctionDef) -> list[tuple[cst.Call, Env, int]]:
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
                if name == "__init__" and not (env.cls is not None and is_super(func.value) and self._descends(env.cls, cls.name)):
                    continue  # another class's `super().__init__`
                sites.append((call, env, 1))
        return sites

    def _created_by(self, cls: ClassFacts) -> set[str]:
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
