"""TM011: uint8 masks (`.byte()`, `torch.ByteTensor`, `dtype=torch.uint8`) -> bool masks."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from codemods.gates.bool_masks import BOOL_OF
from codemods.helpers import args as A
from codemods.helpers.codemod import MigrationCodemod
from codemods.helpers.names import dotted
from codemods.helpers.scope import ScopeNodes

# Where a mask is the argument: method -> its position; torch function -> its position, and the
# keyword it also goes by.
SINK_METHODS = {"masked_fill": 0, "masked_fill_": 0, "masked_select": 0, "masked_scatter": 0, "masked_scatter_": 0}
SINK_FUNCTIONS = {
    "torch.masked_fill": (1, "mask"),
    "torch.masked_select": (1, "mask"),
    "torch.masked_scatter": (1, "mask"),
    "torch.where": (0, "condition"),
}
# Methods that keep a mask a mask of the same dtype and values (shape, layout, device).
SHAPE_METHODS = frozenset(
    {
        "unsqueeze", "squeeze", "view", "reshape", "expand", "expand_as", "t", "transpose", "permute",
        "contiguous", "clone", "detach", "cuda", "cpu", "flatten", "repeat", "triu", "tril", "narrow",
    }
)  # fmt: skip
SHAPE_FUNCTIONS = frozenset({"torch.triu", "torch.tril"})  # the mask is the first argument
# Uses that read nothing a bool mask gives differently from a 0/1 uint8 one.
NEUTRAL_METHODS = frozenset({"bool", "size", "dim", "numel", "nonzero"})
NEUTRAL_ATTRIBUTES = frozenset({"shape", "device", "is_cuda"})
# Values that are 0/1 whatever their input (or bool by construction).
BOOL_METHODS = frozenset(
    {
        "eq", "ne", "gt", "lt", "ge", "le", "logical_not", "logical_and", "logical_or", "logical_xor",
        "isnan", "isinf", "isfinite", "isclose", "isneginf", "isposinf", "signbit", "bool",
    }
)  # fmt: skip
ZERO_ONE_METHODS = frozenset({"new_ones", "new_zeros", "bernoulli", "bernoulli_"})
ZERO_ONE_FUNCTIONS = frozenset({"torch.ones", "torch.zeros", "torch.ones_like", "torch.zeros_like", "torch.bernoulli"})
# Keep 0/1 values 0/1 (a dtype or device change, a reshape).
VALUE_METHODS = SHAPE_METHODS | {"byte", "float", "long", "int", "double", "half", "short", "char", "to", "type"}
# Methods only a torch tensor has: a receiver of one is a tensor (NumPy arrays read a uint8
# tensor index as integer indices, a bool one as a mask).
TENSOR_METHODS = frozenset(
    {
        "size", "dim", "unsqueeze", "clone", "masked_fill", "masked_fill_", "masked_select", "masked_scatter",
        "float", "long", "byte", "cuda", "cpu", "contiguous", "detach", "numel", "new_zeros", "new_ones",
        "new_full", "new_empty", "expand", "expand_as", "view_as", "type_as", "permute", "to",
    }
)  # fmt: skip  # (not `eq`, `bool`, `where`: pandas objects have those)
# Factories that take `dtype=torch.uint8`: name -> how their values are known.
FACTORIES = {
    "zeros": "fixed", "ones": "fixed", "empty": "fixed", "zeros_like": "fixed", "ones_like": "fixed",
    "empty_like": "fixed", "full": "fill", "full_like": "fill", "tensor": "data", "as_tensor": "data",
}  # fmt: skip
FACTORY_METHODS = {"new_zeros": "fixed", "new_ones": "fixed", "new_empty": "fixed", "new_full": "fill", "new_tensor": "data"}
COMPARISONS = (cst.LessThan, cst.GreaterThan, cst.LessThanEqual, cst.GreaterThanEqual, cst.Equal, cst.NotEqual)


@dataclass(frozen=True)
class Maker:
    """A uint8 mask's making: what to rewrite (`part`: the `.byte` name, the dtype/type argument's
    value, or the callee) and whether bool gives the same mask (`exact`; else `why` not)."""

    part: cst.CSTNode
    exact: bool
    why: str = ""
    fix: str = "`.bool()` if the values are 0 and 1 (`.byte().bool()` keeps uint8's wrap-around)"


def _is_byte_literal(expr: cst.BaseExpression) -> bool:
    value = A.literal(expr)
    return isinstance(value, bool) or (type(value) is int and 0 <= value <= 255)


def _is_literal_data(expr: cst.BaseExpression) -> bool:
    """Nested lists/tuples of 0..255 integers and booleans (a nonzero value is True either way)."""
    if isinstance(expr, (cst.List, cst.Tuple)):
        return all(not isinstance(e, cst.StarredElement) and _is_literal_data(e.value) for e in expr.elements)
    return _is_byte_literal(expr)


def _is_size(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Integer):
        return True
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "size":
        return True
    return isinstance(expr, cst.Attribute) and expr.attr.value == "shape"


def _short(code_for, node: cst.CSTNode) -> str:
    """A use, for a message: `x.masked_fill(...)`, `x[...]`, or its code when it is short."""
    text = code_for(node)
    if len(text) <= 40 and "\n" not in text:
        return text
    if isinstance(node, cst.Call):
        return f"{_short(code_for, node.func)}(...)"
    if isinstance(node, cst.Subscript):
        return f"{_short(code_for, node.value)}[...]"
    return text.split("\n", 1)[0][:40] + "..."


class _Scope:
    """One function body (or the module): its local names, their bindings and their reads."""

    def __init__(self, nodes: ScopeNodes, params: cst.Parameters | None) -> None:
        self.nodes = nodes
        self.parents = nodes.parents
        self.module = params is None
        self.values: dict[str, list[cst.BaseExpression]] = {}  # `name = value` bindings
        self.opaque: set[str] = set()  # names bound some other way (a parameter, a loop, `+=`)
        self.escaped: set[str] = set()  # read by a nested function, or global/nonlocal
        self.loads: dict[str, list[cst.Name]] = {}
        self.annotated: set[str] = set()  # parameters annotated as torch tensors
        self.assigned_in_place: set[int] = set()  # ids of AugAssign target Names (a read too)
        skip: set[int] = set()
        if params is not None:
            for param in (*params.params, *params.posonly_params, *params.kwonly_params):
                self.opaque.add(param.name.value)
                if param.annotation is not None and "Tensor" in (dotted(param.annotation.annotation) or ""):
                    self.annotated.add(param.name.value)
            for star in (params.star_arg, params.star_kwarg):
                if isinstance(star, cst.Param):
                    self.opaque.add(star.name.value)
        root = nodes.nodes[0] if nodes.nodes else None
        for node in nodes.nodes:
            if node is not root and isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                self._nested(node, skip)
            elif isinstance(node, (cst.Import, cst.ImportFrom)):
                for alias in node.names if not isinstance(node.names, cst.ImportStar) else ():
                    bound = alias.asname.name if alias.asname is not None else alias.name
                    if isinstance(bound, cst.Name):
                        self.opaque.add(bound.value)
                self._skip_all(node, skip)
            elif isinstance(node, (cst.Global, cst.Nonlocal)):
                for item in node.names:
                    self.escaped.add(item.name.value)
                    skip.add(id(item.name))
            elif isinstance(node, cst.Assign):
                plain = len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name)
                for target in node.targets:
                    for name in self._targets(target.target, skip):
                        if plain:
                            self.values.setdefault(name, []).append(node.value)
                        else:
                            self.opaque.add(name)
            elif isinstance(node, cst.AnnAssign):
                for name in self._targets(node.target, skip):
                    if node.value is not None and isinstance(node.target, cst.Name):
                        self.values.setdefault(name, []).append(node.value)
            elif isinstance(node, cst.AugAssign):
                if isinstance(node.target, cst.Name):
                    self.opaque.add(node.target.value)
                    self.assigned_in_place.add(id(node.target))
            elif isinstance(node, (cst.For, cst.CompFor)):
                self.opaque.update(self._targets(node.target, skip))
            elif isinstance(node, cst.AsName):
                self.opaque.update(self._targets(node.name, skip))
            elif isinstance(node, cst.NamedExpr):
                self.opaque.update(self._targets(node.target, skip))
            elif isinstance(node, cst.Attribute):
                skip.add(id(node.attr))
            elif isinstance(node, cst.Arg) and node.keyword is not None:
                skip.add(id(node.keyword))
            elif isinstance(node, cst.Name) and id(node) not in skip:
                self.loads.setdefault(node.value, []).append(node)

    def _nested(self, node: cst.CSTNode, skip: set[int]) -> None:
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            self.opaque.add(node.name.value)
            skip.add(id(node.name))
        scope = self

        class Reads(cst.CSTVisitor):
            def visit_Name(self, name: cst.Name) -> None:
                scope.escaped.add(name.value)

        node.visit(Reads())

    @staticmethod
    def _skip_all(node: cst.CSTNode, skip: set[int]) -> None:
        class All(cst.CSTVisitor):
            def on_visit(self, inner: cst.CSTNode) -> bool:
                skip.add(id(inner))
                return True

        node.visit(All())

    @staticmethod
    def _targets(target: cst.BaseExpression, skip: set[int]) -> list[str]:
        """Names a target binds (marked as no reads); a subscript or attribute target binds none."""
        if isinstance(target, cst.Name):
            skip.add(id(target))
            return [target.value]
        if isinstance(target, (cst.Tuple, cst.List)):
            return [n for e in target.elements for n in _Scope._targets(e.value, skip)]
        if isinstance(target, cst.StarredElement):
            return _Scope._targets(target.value, skip)
        return []

    def local(self, name: str) -> bool:
        """A name whose every read this scope sees (not the module's, which other code can read)."""
        return not self.module and name not in self.escaped


class BoolMasks(MigrationCodemod):
    """Make masks bool where old code made them uint8.

    ## What it does
    Finds masks made as uint8 — `cond.byte()`, `.type(torch.uint8)`, `.to(torch.uint8)`,
    `torch.ByteTensor(...)`/`torch.cuda.ByteTensor(...)`, `torch.zeros(..., dtype=torch.uint8)`
    and the other factories — that flow, directly or through a local name of the same function
    (and through reshapes, `.cuda()`, `[None]` and the like), into the mask of `masked_fill(_)`,
    `masked_select`, `masked_scatter(_)`, into an index (`x[mask]`, `x[mask] = v`) or into the
    condition of `torch.where`, and makes them bool there: `.bool()`, `torch.BoolTensor`,
    `dtype=torch.bool`. A uint8 value that is used only as data (an image, a count, arithmetic,
    an attribute, a return value) is never touched; one used both as a mask and as data, or one
    whose values may be other than 0 and 1, is reported.

    ## Why is this bad?
    Masks became bool in PyTorch 1.2. Today `masked_fill`, `masked_select`, `masked_scatter` and
    `x[mask] = v` raise `RuntimeError: ... only supports boolean masks` on a uint8 mask, and
    `x[mask]` and `torch.where(mask, ...)` warn that uint8 masks are deprecated. The meaning is at
    stake too: a uint8 tensor used as indices (`x[mask.long()]`, or any NumPy array indexed by
    it) picks rows 0 and 1, not the rows where the mask is set.

    ## Example
    ```python
    pad = (tokens == PAD).byte()
    scores = scores.masked_fill(pad, -1e9)
    keep = torch.ByteTensor([1, 0, 1])
    picked = x[keep]
    ```

    ## Use instead
    ```python
    pad = (tokens == PAD).bool()
    scores = scores.masked_fill(pad, -1e9)
    keep = torch.BoolTensor([1, 0, 1])
    picked = x[keep]
    ```

    ## Fix safety
    Safe. A bool mask selects exactly where a uint8 mask is nonzero, so the rewrite is made only
    where the uint8 values are provably those of the bool: the converted value is a comparison,
    a logical test, `ones`/`zeros`/`bernoulli`, a triangle or `&`/`|` of those, or literal data
    (`.bool()` of `0.5` is True where `.byte()` gives 0: such a receiver is reported). A mask also
    read as data (`mask.sum()`, `1 - mask`, `mask.float()`, returned, stored on `self`, read by a
    nested function) is reported, as is `~mask` (bitwise on uint8 since torch 1.2, so `~` of a
    uint8 mask selects everything; before 1.2 it was a logical not), and so is an index into a
    value not shown to be a torch tensor — by a tensor-only method called on it (`x.size()`,
    `x.masked_fill(...)`), a `torch.Tensor` annotation, or being the tensor the mask compares —
    since a NumPy array reads a uint8 tensor index as indices and a bool one as a mask. A mask
    from a parameter or an attribute set elsewhere is left as it is. `.bool()` and the bool dtype
    need torch 1.2: with an older `--target-torch` the site is reported instead.

    ## References
    - https://github.com/pytorch/pytorch/releases/tag/v1.2.0 (bool tensors; uint8 masks deprecated)
    - https://pytorch.org/docs/stable/generated/torch.Tensor.masked_fill_.html
    """

    CODE = "TM011"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._plans: dict[int, cst.CSTNode] = {}  # id(maker Call) -> the part to make bool
        self._scope: _Scope | None = None
        self._evidence: set[str] = set()
        self._planned: dict[str, str] = {}  # name -> what the imports this codemod adds bind it to

    # -- planning, per scope -----------------------------------------------------------------------

    def visit_Module(self, node: cst.Module) -> None:
        self._plan(ScopeNodes.of(node), None)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._plan(ScopeNodes.of(node.body), node.params)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._plan(ScopeNodes.of(node.body), node.params)

    def _plan(self, nodes: ScopeNodes, params: cst.Parameters | None) -> None:
        calls = [n for n in nodes.nodes if isinstance(n, cst.Call)]
        if not any(self._maker(call) is not None for call in calls):
            return  # the names of a scope without a uint8 maker are never read
        scope = self._scope = _Scope(nodes, params)  # whether a maker is exact reads the names
        makers = [(n, m) for n in calls if (m := self._maker(n)) is not None]
        self._evidence = self._tensor_names(scope, makers)
        for call, maker in makers:
            kinds, data, sink = self._reach(call)
            if sink is None:
                continue
            shown, used = _short(self.code_for, call), _short(self.code_for, sink)
            if data is not None:
                other = data if isinstance(data, str) else f"also used as data (`{_short(self.code_for, data)}`)"
                self.finding(
                    call,
                    f"`{shown}` is a uint8 mask for `{used}`, and {other}: a bool mask may change that use",
                    suggestion="keep this value for the data use, and pass `.bool()` of it as the mask",
                )
            elif "invert" in kinds:
                self.finding(
                    call,
                    f"`{shown}` reaches `{used}` through `~`, a bitwise not on uint8 since torch 1.2"
                    " (254/255: every element selected), a logical not before it and on bool",
                    suggestion="`.bool()` here if `~` is meant as a logical not (as torch < 1.2 read it)",
                )
            elif not maker.exact:
                self.finding(
                    call,
                    f"`{shown}` is a uint8 mask for `{used}` (an error or a deprecation today),"
                    f" but {maker.why}: the bool mask may select other elements",
                    suggestion=maker.fix,
                )
            elif "maybe" in kinds:
                self.finding(
                    call,
                    f"`{shown}` indexes `{used}`, which may not be a torch tensor: a NumPy"
                    " array reads a uint8 tensor index as indices, a bool one as a mask",
                    suggestion="make the mask `.bool()` if the indexed value is a torch tensor",
                )
            else:
                self._plans[id(call)] = maker.part
        self._scope = None

    # -- what makes a uint8 mask ---------------------------------------------------------------------

    def _maker(self, call: cst.Call) -> Maker | None:
        func = call.func
        name = self.qualified_name(func)
        if name in ("torch.ByteTensor", "torch.cuda.ByteTensor"):
            args = [a.value for a in call.args]
            exact = not A.has_star_args(call) and (
                all(_is_size(a) for a in args) or (len(args) == 1 and _is_literal_data(args[0]))
            )
            why = "its argument may be data a bool tensor reads differently (0.5 is 0 as uint8, True as bool)"
            return Maker(func, exact, why, "`BoolTensor(...)` if the argument is a size or integers 0..255")
        dtype = A.keyword(call, "dtype")
        if dtype is not None and self.qualified_name(dtype.value) == "torch.uint8":
            kind = None
            if name is not None and name.startswith("torch."):
                kind = FACTORIES.get(name[len("torch."):])
            elif name is None and isinstance(func, cst.Attribute):
                kind = FACTORY_METHODS.get(func.attr.value)
                if kind is None and func.attr.value == "to":
                    return Maker(dtype.value, self._zero_one(func.value), "its values may be other than 0 and 1")
            if kind is None:
                return None
            why = "its values may be other than 0 and 1"
            return Maker(dtype.value, self._factory_exact(call, kind), why, "`dtype=torch.bool` if the values are 0 and 1")
        if name is not None or not isinstance(func, cst.Attribute):
            return None
        method = func.attr.value
        if method == "byte" and not call.args:
            return Maker(func.attr, self._zero_one(func.value), f"`{self.code_for(func.value)}` may hold values other than 0 and 1")
        if method in ("type", "to") and call.args and not A.has_star_args(call):
            positional = [a for a in call.args if a.keyword is None]
            for arg in positional[:2]:
                if self._is_uint8_spelling(arg.value):
                    return Maker(arg.value, self._zero_one(func.value), f"`{self.code_for(func.value)}` may hold values other than 0 and 1")
        return None

    def _is_uint8_spelling(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.SimpleString):
            return expr.evaluated_value in ("torch.ByteTensor", "torch.cuda.ByteTensor")
        return self.qualified_name(expr) in BOOL_OF

    def _factory_exact(self, call: cst.Call, kind: str) -> bool:
        if A.has_star_args(call):
            return False
        if kind == "fixed":
            return True
        positional = [a.value for a in call.args if a.keyword is None]
        method = self.qualified_name(call.func) is None
        if kind == "fill":
            fill = A.keyword(call, "fill_value")
            value = fill.value if fill is not None else positional[0 if method else 1] if len(positional) > (0 if method else 1) else None
            return value is not None and _is_byte_literal(value)
        data = A.keyword(call, "data")
        value = data.value if data is not None else positional[0] if positional else None
        return value is not None and _is_literal_data(value)

    # -- which values are 0/1 ------------------------------------------------------------------------

    def _zero_one(self, expr: cst.BaseExpression, assuming: frozenset[str] = frozenset()) -> bool:
        """Whether every value of `expr` is 0 or 1 (or bool): then `.byte()` and `.bool()` of it
        select the same elements."""
        if isinstance(expr, cst.Comparison):
            return all(isinstance(t.operator, COMPARISONS) for t in expr.comparisons)
        if _is_byte_literal(expr):
            return A.literal(expr) in (0, 1)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
            return self._is_bool(expr.expression, assuming)
        if isinstance(expr, cst.BinaryOperation):
            op = expr.operator
            if isinstance(op, (cst.BitAnd, cst.BitOr, cst.BitXor, cst.Multiply)):
                return self._zero_one(expr.left, assuming) and self._zero_one(expr.right, assuming)
            if isinstance(op, cst.Subtract) and A.literal(expr.left) == 1 and not isinstance(A.literal(expr.left), bool):
                return self._zero_one(expr.right, assuming)
            return False
        if isinstance(expr, cst.IfExp):
            return self._zero_one(expr.body, assuming) and self._zero_one(expr.orelse, assuming)
        if isinstance(expr, cst.Subscript):
            return self._zero_one(expr.value, assuming)
        if isinstance(expr, cst.Call):
            name = self.qualified_name(expr.func)
            if name is not None:
                short = name[len("torch."):] if name.startswith("torch.") else None
                if name in ZERO_ONE_FUNCTIONS or short in BOOL_METHODS:
                    return A.keyword(expr, "out") is None
                if name in SHAPE_FUNCTIONS and expr.args:
                    return self._zero_one(expr.args[0].value, assuming)
                return False
            if isinstance(expr.func, cst.Attribute):
                method = expr.func.attr.value
                if method in BOOL_METHODS or method in ZERO_ONE_METHODS:
                    return True
                if method in VALUE_METHODS and not (method == "view" and self._has_dtype(expr)):
                    return self._zero_one(expr.func.value, assuming)
            return False
        if isinstance(expr, cst.Name):
            return self._name_is(expr.value, assuming, self._zero_one)
        return False

    def _is_bool(self, expr: cst.BaseExpression, assuming: frozenset[str] = frozenset()) -> bool:
        """Whether `expr` is a bool tensor (`~` is a logical not on it)."""
        if isinstance(expr, cst.Comparison):
            return all(isinstance(t.operator, COMPARISONS) for t in expr.comparisons)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
            return self._is_bool(expr.expression, assuming)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
            return self._is_bool(expr.left, assuming) and self._is_bool(expr.right, assuming)
        if isinstance(expr, cst.Subscript):
            return self._is_bool(expr.value, assuming)
        if isinstance(expr, cst.Call):
            name = self.qualified_name(expr.func)
            if name is not None:
                return name.startswith("torch.") and name[len("torch."):] in BOOL_METHODS
            if isinstance(expr.func, cst.Attribute):
                method = expr.func.attr.value
                if method in BOOL_METHODS:
                    return True
                if method in SHAPE_METHODS and not self._has_dtype(expr):
                    return self._is_bool(expr.func.value, assuming)
            return False
        if isinstance(expr, cst.Name):
            return self._name_is(expr.value, assuming, self._is_bool)
        return False

    def _name_is(self, name: str, assuming: frozenset[str], test) -> bool:
        """A local name all of whose `name = value` bindings pass `test` (assuming it of itself)."""
        scope = self._scope
        if scope is None or name in assuming:
            return name in assuming
        if name in scope.opaque or name in scope.escaped or name not in scope.values:
            return False
        return all(test(value, assuming | {name}) for value in scope.values[name])

    # -- where a value goes ------------------------------------------------------------------------

    def _reach(self, call: cst.Call) -> tuple[set[str], cst.CSTNode | str | None, cst.CSTNode | None]:
        """Where the maker's value ends up, through local names: the kinds of use (see
        `_destination`), the first data use (or why one is assumed) and the first mask use."""
        kinds: set[str] = set()
        data: list[cst.CSTNode | str] = []
        sinks: list[cst.CSTNode] = []
        seen: set[str] = set()
        pending: list[cst.CSTNode] = [call]
        scope = self._scope
        while pending:
            node = pending.pop()
            kind, where = self._destination(node)
            if kind == "name":
                if where in seen:
                    continue
                seen.add(where)
                if not scope.local(where):  # read where this scope cannot see: data, as far as it knows
                    kinds.add("data")
                    data.append(f"`{where}` is also read by a nested function or as a global")
                pending.extend(scope.loads.get(where, []))
                continue
            kinds.add(kind)
            if kind == "data":
                data.append(where)
            elif kind in ("sink", "maybe", "invert"):
                sinks.append(where)
        return kinds, (data[0] if data else None), (sinks[0] if sinks else None)

    def _destination(self, node: cst.CSTNode, inverted: bool = False) -> tuple[str, object]:
        """Where the value of `node` goes: ("sink"|"maybe", the mask use), ("name", a local it is
        bound to), ("invert", the mask use it reaches through `~`), ("neutral"|"data", the use)."""
        parents = self._scope.parents
        if id(node) in self._scope.assigned_in_place:
            return "data", parents.get(node, node)
        while True:
            parent = parents.get(node)
            if parent is None:
                return "data", node
            if isinstance(parent, cst.Attribute) and parent.value is node:
                call = parents.get(parent)
                method = parent.attr.value
                if not (isinstance(call, cst.Call) and call.func is parent):
                    return ("neutral" if method in NEUTRAL_ATTRIBUTES else "data"), parent
                if method in NEUTRAL_METHODS:
                    return "neutral", call
                refill = method == "zero_" and not call.args or method == "fill_" and len(call.args) == 1 and _is_byte_literal(call.args[0].value)
                if refill or self._keeps_mask(call, method) or self._maker(call) is not None:
                    node = call
                    continue
                return "data", call
            if isinstance(parent, cst.Arg) and parent.value is node:
                call = parents.get(parent)
                if isinstance(call, cst.Call):
                    if self._is_mask_argument(call, parent):
                        return "sink", call
                    if self.qualified_name(call.func) in SHAPE_FUNCTIONS and call.args and call.args[0] is parent:
                        node = call
                        continue
                return "data", call
            if isinstance(parent, cst.Index) and parent.value is node:
                subscript = parents.get(parents.get(parent))
                if isinstance(subscript, cst.Subscript):
                    return ("sink" if self._is_tensor(subscript.value) else "maybe"), subscript
                return "data", parent
            if isinstance(parent, cst.Subscript) and parent.value is node:
                target = parents.get(parent)
                if isinstance(target, cst.AssignTarget):
                    assign = parents.get(target)
                    stored = isinstance(assign, cst.Assign) and _is_byte_literal(assign.value)
                    return ("neutral" if stored else "data"), parent
                node = parent
                continue
            if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.BitInvert) and not inverted:
                kind, where = self._destination(parent, inverted=True)
                if kind == "name":
                    return "invert", parent
                return ("invert" if kind in ("sink", "maybe") else kind), where
            if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
                # `a.byte() & b.byte()`: bool with bool is the same mask; with anything else, data
                other = parent.right if parent.left is node else parent.left
                if not (isinstance(other, cst.Call) and self._maker(other) is not None) and not self._is_bool(other):
                    return "data", parent
                node = parent
                continue
            if isinstance(parent, cst.IfExp) and parent.test is not node:
                node = parent
                continue
            if isinstance(parent, cst.Comparison) and len(parent.comparisons) == 1:
                operator = parent.comparisons[0].operator
                other = parent.comparisons[0].comparator if parent.left is node else parent.left
                if isinstance(operator, (cst.Is, cst.IsNot)) and A.literal(other) is None and isinstance(other, cst.Name):
                    return "neutral", parent
                return "data", parent
            if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is node:
                targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
                if len(targets) == 1 and isinstance(targets[0], cst.Name):
                    return "name", targets[0].value
                return "data", targets[0]
            if isinstance(parent, cst.Expr):
                return "neutral", parent
            return "data", parent

    def _keeps_mask(self, call: cst.Call, method: str) -> bool:
        """A method call on a mask whose result is the same mask, reshaped or moved."""
        if method == "to":
            return bool(call.args) and all(self._is_device(a) for a in call.args)
        return method in SHAPE_METHODS and not self._has_dtype(call)

    def _has_dtype(self, call: cst.Call) -> bool:
        """Whether an argument may be a dtype: `.view(torch.uint8)` reinterprets the bytes."""
        return any(self.qualified_name(a.value) is not None for a in call.args)

    def _is_device(self, arg: cst.Arg) -> bool:
        if arg.keyword is not None:
            return arg.keyword.value in ("device", "non_blocking", "copy")
        value = arg.value
        if isinstance(value, cst.SimpleString):
            return True
        if isinstance(value, cst.Attribute) and value.attr.value == "device":
            return True
        if isinstance(value, cst.Call) and self.qualified_name(value.func) == "torch.device":
            return True
        return isinstance(value, cst.Name) and value.value == "device"

    def _is_mask_argument(self, call: cst.Call, arg: cst.Arg) -> bool:
        if A.has_star_args(call):
            return False
        name = self.qualified_name(call.func)
        if name is not None:
            if name not in SINK_FUNCTIONS:
                return False
            position, keyword = SINK_FUNCTIONS[name]
        elif isinstance(call.func, cst.Attribute) and call.func.attr.value in SINK_METHODS:
            position, keyword = SINK_METHODS[call.func.attr.value], "mask"
        else:
            return False
        if arg.keyword is not None:
            return arg.keyword.value == keyword
        positional = [a for a in call.args if a.keyword is None]
        return len(positional) > position and positional[position] is arg

    # -- which values are torch tensors --------------------------------------------------------------

    def _tensor_names(self, scope: _Scope, makers) -> set[str]:
        """Dotted names this scope shows to be tensors: receivers of tensor-only methods, the one
        non-literal side of a comparison a mask is made of, parameters annotated as tensors."""
        found = set(scope.annotated)
        for node in scope.nodes.nodes:
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in TENSOR_METHODS:
                if (name := dotted(node.func.value)) is not None and self.qualified_name(node.func.value) is None:
                    found.add(name)
        for call, _ in makers:
            receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
            if isinstance(receiver, cst.Comparison) and len(receiver.comparisons) == 1:
                sides = [receiver.left, receiver.comparisons[0].comparator]
                named = [dotted(s) for s in sides if not A.is_literal(A.literal(s)) and not isinstance(s, cst.Float)]
                if len(named) == 1 and named[0] is not None:
                    found.add(named[0])
        return found

    def _is_tensor(self, expr: cst.BaseExpression, assuming: frozenset[str] = frozenset()) -> bool:
        while True:
            if isinstance(expr, cst.Subscript):
                expr = expr.value
            elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and self.qualified_name(expr.func) is None:
                if expr.func.attr.value in TENSOR_METHODS:
                    return True
                if expr.func.attr.value not in SHAPE_METHODS:
                    return False
                expr = expr.func.value
            else:
                break
        name = dotted(expr)
        if name is not None and name in self._evidence:
            return True
        if isinstance(expr, cst.Call):
            called = self.qualified_name(expr.func) or ""
            return called.startswith("torch.") and called[len("torch."):] in (*FACTORIES, "randn", "rand", "arange")
        if isinstance(expr, cst.Name):
            return self._name_is(expr.value, assuming, self._is_tensor)
        return False

    # -- the rewrite --------------------------------------------------------------------------------

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        part = self._plans.get(id(original_node))
        if part is None:
            return updated_node
        if not self.available("torch.bool"):
            self.hold_back(original_node, "torch.bool")
            return updated_node
        replacement = self._bool_call(original_node, updated_node, part)
        if replacement is None:
            self.finding(
                original_node,
                f"`{_short(self.code_for, original_node)}` is a uint8 mask, but this file's imports give no spelling of"
                f" its bool counterpart that binds no other name",
                suggestion=BOOL_OF.get(self.qualified_name(part) or "", "torch.BoolTensor"),
            )
            return updated_node
        return self.rewrite(original_node, updated_node, replacement)

    def _bool_call(self, original: cst.Call, updated: cst.Call, part: cst.CSTNode) -> cst.Call | None:
        if isinstance(original.func, cst.Attribute) and part is original.func.attr:
            return updated.with_changes(func=updated.func.with_changes(attr=cst.Name("bool")))
        if part is original.func:
            func = self._bool_spelling(original.func, updated.func)
            return None if func is None else updated.with_changes(func=func)
        for index, arg in enumerate(original.args):
            if arg.value is part:
                value = self._bool_spelling(part, updated.args[index].value)
                if value is None:
                    return None
                args = list(updated.args)
                args[index] = args[index].with_changes(value=value)
                return updated.with_changes(args=args)
        return None

    def _bool_spelling(self, original: cst.BaseExpression, updated: cst.BaseExpression) -> cst.BaseExpression | None:
        """`torch.uint8` -> `torch.bool`, `th.ByteTensor` -> `th.BoolTensor`, `'torch.ByteTensor'`
        -> `'torch.BoolTensor'`, in the spelling the code uses."""
        if isinstance(updated, cst.SimpleString):
            return updated.with_changes(value=updated.value.replace("ByteTensor", "BoolTensor"))
        qualified = self.qualified_name(original)
        target = BOOL_OF[qualified]
        if isinstance(updated, cst.Attribute):
            return updated.with_changes(attr=cst.Name(target.rsplit(".", 1)[1]))
        if not isinstance(updated, cst.Name):
            return None
        module, _, leaf = target.rpartition(".")
        local = self.imports.local_name_for(target)
        if local is not None and "." in local:
            replacement: cst.BaseExpression = cst.parse_expression(local)  # `torch.BoolTensor`
        elif qualified != "torch.uint8" and self._planned.setdefault(leaf, target) == target and self.imports.aliases.get(leaf, target) == target:
            # (not `from torch import bool`, which would hide the builtin; nor a second `BoolTensor`)
            self.add_needed_import(module, leaf)
            replacement = cst.Name(leaf)
        else:
            return None
        source, _, byte = qualified.rpartition(".")
        self.remove_unused_import(source, byte, None if updated.value == byte else updated.value)
        return replacement
