"""TM012 scalar-first-overloads: its declaration (SPEC) and, before parsing, its trigger regexes and gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

import ast
from typing import Iterator

from codemods.gates import Gate, Safety, Spec, Stage
from codemods.helpers.scan import Scan, ast_dotted, ast_statements

# method -> (positional arguments of the legacy overload, the keyword its scalar becomes)
METHODS = {
    "add_": (2, "alpha"), "add": (2, "alpha"), "sub_": (2, "alpha"), "sub": (2, "alpha"),
    "addcmul_": (3, "value"), "addcmul": (3, "value"), "addcdiv_": (3, "value"), "addcdiv": (3, "value"),
}  # fmt: skip
# torch function -> (positional arguments of the legacy overload, the keyword its scalar becomes)
FUNCTIONS = {
    "torch.add": (3, "alpha"), "torch.sub": (3, "alpha"), "torch.addcmul": (4, "value"), "torch.addcdiv": (4, "value"),
}  # fmt: skip

# What the codemod (transforms/scalar_first.py) and this gate both read to tell a number from a tensor.
# Methods whose result is a tensor whatever their receiver's shape: a chain `exp_avg.mul_(b1).add_(...)`.
TENSOR_METHODS = frozenset(
    "mul mul_ div div_ add add_ sub sub_ addcmul addcmul_ addcdiv addcdiv_ sqrt sqrt_ clone detach pow pow_"
    " abs abs_ sign sign_ exp exp_ neg neg_ zero_ clamp clamp_ float double half".split()
)
DEPTH = 24  # how deep a value is followed through names and arithmetic (cycles stop here)
MATH = frozenset({"math.sqrt", "math.pow", "math.exp", "math.log", "math.cos", "math.sin", "math.pi", "math.e"})
NUMBER_CALLS = frozenset({"float", "int", "abs", "min", "max", "round"})
UNKNOWN = "__unknown__"  # the codemod binds a name whose value it cannot know to `Name(UNKNOWN)`
GROUP_ENTRY = "__group_entry__"  # ... and one unpacked from a param group's entry to `Name(GROUP_ENTRY)`

_FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def triggers() -> tuple[str, ...]:
    return (r"\.(?:add|sub|addcmul|addcdiv)_?\(", r"\b(?:add|sub|addcmul|addcdiv)\(")


# -- what the codemod's `_Binder` binds, on the ast -------------------------------------------------

# A name unpacked from a subscript (`beta1, beta2 = group["betas"]`): the codemod binds it to its
# group-entry mark when the subscript is an entry of a `param_groups` loop variable (a number), else
# to the unknown name; this gate does not follow the loops, and binds it to this mark, which may be
# either (a number; a tensor if the unknown name is one).
_ENTRY = ast.Name(id=GROUP_ENTRY)
_UNKNOWN = ast.Name(id=UNKNOWN)


def _bindings(function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, list[ast.expr]]:
    """Name -> every value the codemod's `_Binder` binds it to in this function's body: `x = v`,
    `x: T = v`, `x += v` (the increment), names unpacked (to _ENTRY or _UNKNOWN), loop variables
    (to _UNKNOWN, but for one over `<x>.param_groups`, bound to nothing) and lambdas' parameters
    (to _UNKNOWN); not the function's own parameters, nor what nested functions and classes bind
    (their decorators and defaults included). Keys of subscripts (`state["step"]`) are left out:
    `_number` takes every subscript of a name for a number."""
    values: dict[str, list[ast.expr]] = {}

    def bind(name: str, value: ast.expr) -> None:
        values.setdefault(name, []).append(value)

    def unknown(target: ast.expr) -> None:
        for name in _target_names(target):
            bind(name, _UNKNOWN)

    stack: list[ast.AST] = list(reversed(function.body))
    while stack:
        node = stack.pop()
        if isinstance(node, _NESTED):
            continue
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bind(target.id, node.value)
                elif isinstance(target, (ast.Tuple, ast.List)):
                    entry = isinstance(node.value, ast.Subscript)
                    for element in target.elts:
                        inner = element.value if isinstance(element, ast.Starred) else element
                        if entry and isinstance(inner, ast.Name):
                            bind(inner.id, _ENTRY)
                        else:
                            unknown(inner)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None and isinstance(node.target, ast.Name):
                bind(node.target.id, node.value)
        elif isinstance(node, ast.AugAssign):
            if isinstance(node.target, ast.Name):
                bind(node.target.id, node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            over_groups = isinstance(node.iter, ast.Attribute) and node.iter.attr == "param_groups"
            if not (isinstance(node.target, ast.Name) and over_groups):
                unknown(node.target)
        elif isinstance(node, ast.Lambda):
            a = node.args
            for arg in (*a.posonlyargs, *a.args, *a.kwonlyargs, *(x for x in (a.vararg, a.kwarg) if x is not None)):
                bind(arg.arg, _UNKNOWN)
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return values


def _target_names(target: ast.expr) -> Iterator[str]:
    """The names the codemod's `_names` finds in a target: `a`, `(a, [b, *c])`."""
    if isinstance(target, ast.Starred):
        target = target.value
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _target_names(element)


class _Reader:
    """The codemod's `_number` and `_tensor` on the ast, for the calls of one file: the same
    recursion over the same bindings, loosened where the ast cannot tell (a superset: each says
    True wherever the codemod's does)."""

    def __init__(self, scan: Scan) -> None:
        self.scan = scan
        self._functions: list[tuple[int, int, ast.FunctionDef | ast.AsyncFunctionDef]] | None = None
        self._scopes: dict[int, dict[str, list[ast.expr]]] = {}
        self._resolved: set[str] | None = None

    @property
    def resolved_heads(self) -> set[str]:
        """The names whose dotted uses libcst's name resolution surely resolves: those this file's
        own imports bind, but for any a def or class binds anywhere (a superset of the top-level
        ones it takes for user code and never resolves)."""
        if self._resolved is None:
            defined = {n.name for n in ast_statements(self.scan.module) if isinstance(n, (*_FUNCTION_DEFS, ast.ClassDef))}
            self._resolved = _imported_names(self.scan) - defined
        return self._resolved

    def scope_of(self, call: ast.Call) -> dict[str, list[ast.expr]] | None:
        """The bindings the codemod reads at `call`: those of the innermost function it is in
        (its decorators, defaults and annotations too: the codemod enters the function's scope
        on visiting the def); None at module level, where it reads none. A def's lines are its
        own (no statement shares a line with a compound one), so the innermost def whose lines
        hold the call's is the one."""
        if self._functions is None:
            self._functions = sorted(
                (
                    (min([n.lineno, *(d.lineno for d in n.decorator_list)]), n.end_lineno or n.lineno, n)
                    for n in ast_statements(self.scan.module)
                    if isinstance(n, _FUNCTION_DEFS)
                ),
                key=lambda entry: entry[0],
            )
        function = None
        for first, last, node in self._functions:  # by first line: the last that holds the call is the innermost
            if first > call.lineno:
                break
            if call.lineno <= last:
                function = node
        if function is None:
            return None
        found = self._scopes.get(id(function))
        if found is None:
            found = self._scopes[id(function)] = _bindings(function)
        return found

    def number(self, expr: ast.expr, scope: dict[str, list[ast.expr]] | None, depth: int = 0) -> bool:
        if depth > DEPTH:
            return False
        if isinstance(expr, ast.Constant):  # libcst's Integer and Float; True/None are its Names, unbound
            return isinstance(expr.value, (int, float)) and not isinstance(expr.value, bool)
        if isinstance(expr, ast.UnaryOp):
            return self.number(expr.operand, scope, depth + 1)
        if isinstance(expr, ast.BinOp):
            return self.number(expr.left, scope, depth + 1) and self.number(expr.right, scope, depth + 1)
        if isinstance(expr, ast.Subscript):
            # `group["lr"]` of a param-groups loop, or an entry the function sets (`state["step"] = 0`):
            # both are subscripts of a name, in a function (whatever it binds: a loop over
            # `param_groups` binds nothing)
            return isinstance(expr.value, ast.Name) and scope is not None
        if isinstance(expr, ast.Attribute):
            return not self.scan.qualified(expr).isdisjoint(MATH)
        if isinstance(expr, ast.Call):
            callees = self.scan.qualified(expr.func) | ({expr.func.id} if isinstance(expr.func, ast.Name) else set())
            if callees.isdisjoint(MATH | NUMBER_CALLS):
                return False
            return all(self.number(a, scope, depth + 1) for a in _argument_values(expr))
        if isinstance(expr, ast.Name):
            values = scope.get(expr.id) if scope is not None else None
            return bool(values) and all(v is _ENTRY or self.number(v, scope, depth + 1) for v in values)
        return False

    def tensor(self, expr: ast.expr, scope: dict[str, list[ast.expr]] | None, depth: int = 0) -> bool:
        if depth > DEPTH:
            return False
        if isinstance(expr, ast.Attribute):
            return expr.attr in ("data", "grad")
        if isinstance(expr, ast.Call):
            if isinstance(expr.func, ast.Attribute) and expr.func.attr in TENSOR_METHODS:
                return True
            return any(name.startswith("torch.") for name in self.scan.qualified(expr.func))
        if isinstance(expr, ast.Name):
            values = scope.get(expr.id) if scope is not None else None
            return bool(values) and all(self.tensor(_UNKNOWN if v is _ENTRY else v, scope, depth + 1) for v in values)
        return False


def _argument_values(call: ast.Call) -> list[ast.expr]:
    """What libcst's `a.value for a in call.args` gives: positional (a starred one's value) and keyword values."""
    return [a.value if isinstance(a, ast.Starred) else a for a in call.args] + [k.value for k in call.keywords]


def _imported_names(scan: Scan) -> set[str]:
    """The names this file's own import statements bind (not a star import's)."""
    names = set()
    for node in scan.imports:
        for alias in node.names:
            if alias.name != "*":
                names.add(alias.asname or (alias.name.split(".")[0] if isinstance(node, ast.Import) else alias.name))
    return names


def _may_act(call: ast.Call, scan: Scan, reader: _Reader) -> bool:
    """The codemod's decision for one call, loosened: whether it may rewrite or report it."""
    if call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
        return False
    names = scan.qualified(call.func) & FUNCTIONS.keys()
    for name in names:
        count, _ = FUNCTIONS[name]
        if len(call.args) != count:
            continue
        # addcmul/addcdiv: rewritten, or reported when the scalar is not provably a number;
        # add/sub: rewritten when it is, else left
        if count == 4 or reader.number(call.args[1], reader.scope_of(call)):
            return True
    if not isinstance(call.func, ast.Attribute) or call.func.attr not in METHODS:
        return False
    count, _ = METHODS[call.func.attr]
    if len(call.args) != count:
        return False
    # The method form is the codemod's only when libcst's name resolution gives the callee no
    # name: surely so when its head is no name this file's own imports bind (or is one a def or
    # class shadows); `torch.add(x, y)` or `np.char.add(a, b)` resolve, and are not this overload.
    dotted = ast_dotted(call.func)
    if dotted is not None and dotted.partition(".")[0] in reader.resolved_heads:
        return False
    if count == 3:  # addcmul_/addcdiv_ of three arguments: rewritten or reported, whatever they are
        return True
    scope = reader.scope_of(call)
    tensors = (call.func.value, *call.args[1:])
    return any(reader.tensor(t, scope) for t in tensors) and reader.number(call.args[0], scope)


def _legacy_arity(call: ast.Call, scan: Scan) -> bool:
    """A call of the legacy overload's arity, all positional: the cheap first test."""
    if call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
        return False
    if isinstance(call.func, ast.Attribute) and call.func.attr in METHODS and len(call.args) == METHODS[call.func.attr][0]:
        return True
    return any(len(call.args) == FUNCTIONS[name][0] for name in scan.qualified(call.func) & FUNCTIONS.keys())


def may_act(scan: Scan, words, facts) -> bool:
    """A superset of the codemod's rewrites and findings: a call of the legacy arity, all
    positional, that its decision may take, reading numbers and tensors as it does (the values a
    name is bound to in the enclosing function; `x.add_(a, b)` wants a tensor among `x`, `b` and
    a number `a`; `p.addcmul_(v, a, b)` and `torch.addcmul(t, v, a, b)` are always taken)."""
    calls = [node for node in scan.nodes(words) if isinstance(node, ast.Call) and _legacy_arity(node, scan)]
    if not calls:
        return False
    reader = _Reader(scan)
    return any(_may_act(call, scan, reader) for call in calls)


# The lines its gate reads besides the triggers' (which want a `(` after the name): an import of
# `add`, `sub`, `addcmul` or `addcdiv` under another name (`from torch import addcmul as amul`:
# `Scan.hits` adds the lines that use `amul`, whose `amul(t, v, a, b)` the codemod rewrites), and
# the uses of a name another module re-exports as torch's (`Scan.hits` matches the sites against
# the qualified names the repository's facts give such names; no line of a text matches this one).
SITES = (r"\b(?:add|sub|addcmul|addcdiv)\s+as\b", r"^torch\.(?:add|sub|addcmul|addcdiv)$")

GATE = Gate(sites=SITES, may_act=may_act)


SPEC = Spec(
    code="TM012",
    name="scalar-first-overloads",
    stage=Stage.REWRITE,
    safety=Safety.SAFE,
    target="codemods.transforms.scalar_first:ScalarFirst",
    triggers=triggers(),
    summary="p.data.add_(-lr, grad) -> add_(grad, alpha=-lr); addcmul_(v, a, b) -> addcmul_(a, b, value=v)",
    gate=GATE,
)
