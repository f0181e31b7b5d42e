"""TM011 bool-masks: its declaration (SPEC) and trigger regexes and the names both halves share (no libcst;
see gates/__init__.py)."""

from __future__ import annotations

import ast

from codemods.gates import Gate, Safety, Spec, Stage
from codemods.helpers.scan import Scan, ast_star_args

# The uint8 spellings a mask is made with, and their bool counterparts (qualified names).
BOOL_OF = {
    "torch.uint8": "torch.bool",
    "torch.ByteTensor": "torch.BoolTensor",
    "torch.cuda.ByteTensor": "torch.cuda.BoolTensor",
}


# Where a mask is the argument: method -> its position; torch function -> its position, and the
# keyword it also goes by (the codemod's tables, transforms/bool_masks/tables.py, read these).
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
# Method calls on a mask the gate follows (the codemod: SHAPE_METHODS without a dtype argument,
# `.to(device)`, `zero_()`, `fill_(0..255)`, and a call that makes uint8 again)
_KEEPS = SHAPE_METHODS | {"to", "zero_", "fill_"}
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def triggers() -> tuple[str, ...]:
    # A mask can only be made uint8 with one of these words; the sinks (`masked_fill`, `x[m]`,
    # `torch.where`) are too common to be triggers. Each starts with a literal character (a
    # leading `\b` makes `re` try every position).
    return (r"\.byte\(", r"ByteTensor", r"uint8\b")


def _makes_uint8(call: ast.Call, scan: Scan) -> bool:
    """A superset of the transform's makers, from the ast: `.byte()`, a `ByteTensor` call, a
    `dtype=` or `.type`/`.to` argument that is torch's uint8 (not NumPy's)."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "byte" and not call.args:
        return True
    if scan.qualified(func) & {"torch.ByteTensor", "torch.cuda.ByteTensor"}:
        return True
    values = [k.value for k in call.keywords if k.arg == "dtype"]
    if isinstance(func, ast.Attribute) and func.attr in ("type", "to"):
        values += call.args[:2]
    for value in values:
        if isinstance(value, ast.Constant) and value.value in ("torch.ByteTensor", "torch.cuda.ByteTensor"):
            return True
        if scan.qualified(value) & BOOL_OF.keys():
            return True
    return False


class _Scope:
    """The nodes of one scope the codemod plans (the module's, a function's body, a lambda's
    body; not a class body, whose functions are scopes of their own) and each node's parent."""

    def __init__(self, root: ast.AST) -> None:
        self.parents: dict[ast.AST, ast.AST] = {}
        self.loads: dict[str, list[ast.Name]] = {}
        self.calls: list[ast.Call] = []
        body = [root.body] if isinstance(root, ast.Lambda) else root.body  # a lambda's scope: its body
        stack = [(node, root) for node in body]
        while stack:
            node, parent = stack.pop()
            self.parents[node] = parent
            if isinstance(node, _NESTED) and not (parent is root and isinstance(root, ast.Lambda)):
                continue  # a scope of its own (a class body: none), as are its decorators and defaults
            if isinstance(node, ast.Call):
                self.calls.append(node)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                self.loads.setdefault(node.id, []).append(node)
            stack.extend((child, node) for child in ast.iter_child_nodes(node))


def _is_mask_argument(call: ast.Call, node: ast.expr, scan: Scan) -> bool:
    """The codemod's `_is_mask_argument`, with both readings of the callee where the imports
    leave it open: `node` is the mask argument of masked_fill/masked_select/masked_scatter or
    the condition of torch.where."""
    if ast_star_args(call):
        return False
    places = [SINK_FUNCTIONS[name] for name in scan.qualified(call.func) if name in SINK_FUNCTIONS]
    if isinstance(call.func, ast.Attribute) and call.func.attr in SINK_METHODS:
        places.append((SINK_METHODS[call.func.attr], "mask"))
    for position, keyword in places:
        if any(k.value is node and k.arg == keyword for k in call.keywords):
            return True
        if len(call.args) > position and call.args[position] is node:
            return True
    return False


def _destination(node: ast.AST, scope: _Scope, scan: Scan, inverted: bool = False, escapes: bool = False) -> str | bool:
    """The codemod's `MaskFlow._destination`, loosened: True where the value of `node` may reach
    a mask use (an argument, an index, or `~` of a mask kept in a name), or leave the scope (an
    argument, `x.attr = ...`) when `escapes` (the file has mask uses it may reach); a name it is
    bound to, to follow; False where it is only data (or neutral). It follows every path the
    codemod does."""
    parents = scope.parents
    while True:
        parent = parents.get(node)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            call = parents.get(parent)
            if not (isinstance(call, ast.Call) and call.func is parent) or parent.attr in NEUTRAL_METHODS:
                return False
            if parent.attr in _KEEPS or _makes_uint8(call, scan):
                node = call
                continue
            return False
        if isinstance(parent, ast.keyword) or isinstance(parent, ast.Call) and parent.func is not node:
            call = parents.get(parent) if isinstance(parent, ast.keyword) else parent  # an argument
            if not isinstance(call, ast.Call):
                return False  # `class C(metaclass=...)`
            if _is_mask_argument(call, node, scan):
                return True
            if scan.qualified(call.func) & SHAPE_FUNCTIONS:
                node = call  # torch.triu(mask)
                continue
            return escapes
        if isinstance(parent, ast.Subscript):
            if parent.slice is node:
                return True  # `x[mask]`: a mask use, or a finding when `x` may be NumPy's
            node = parent  # `mask[...]`
            continue
        if isinstance(parent, ast.Tuple) and isinstance(parents.get(parent), ast.Subscript) and parents[parent].slice is parent:
            return True  # `x[mask, 0]`
        if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Invert) and not inverted:
            return _destination(parent, scope, scan, True, escapes) is not False  # a name or a mask use: a finding
        if isinstance(parent, ast.BinOp):  # `a & b`, `a * b`, and arithmetic that may still reach a mask
            node = parent
            continue
        if isinstance(parent, ast.IfExp):
            node = parent
            continue
        if isinstance(parent, ast.Assign) and parent.value is node:
            targets = parent.targets
            if len(targets) == 1 and isinstance(targets[0], ast.Attribute):
                return escapes  # `self.mask = ...`
            return targets[0].id if len(targets) == 1 and isinstance(targets[0], ast.Name) else False
        if isinstance(parent, ast.AnnAssign) and parent.value is node:
            return parent.target.id if isinstance(parent.target, ast.Name) else False
        return False


def _reaches_a_mask_use(scope: _Scope, makers: list[ast.Call], scan: Scan, escapes: bool) -> bool:
    """The codemod's `MaskFlow._reach` for every maker of a scope: through the local names it
    is bound to (every read of them in the scope), whether any reaches a mask use."""
    pending: list[ast.AST] = list(makers)
    seen: set[str] = set()
    while pending:
        where = _destination(pending.pop(), scope, scan, escapes=escapes)
        if where is True:
            return True
        if where and where not in seen:
            seen.add(where)
            pending.extend(scope.loads.get(where, ()))
    return False


def _is_sink_call(call: ast.Call, scan: Scan) -> bool:
    """A call of masked_fill & co. (or torch.where): a mask passed from another function may end there."""
    if isinstance(call.func, ast.Attribute) and call.func.attr in SINK_METHODS:
        return True
    return bool(scan.qualified(call.func) & SINK_FUNCTIONS.keys())


def may_act(scan: Scan, words, facts) -> bool:
    """A maker of a uint8 value whose value reaches the mask of masked_fill & co., an index or
    `~`, in one scope: most `.byte()`/`ByteTensor`/`uint8` values are data (an image, a buffer,
    arithmetic, a return value), which the codemod never touches."""
    escapes = any(_is_sink_call(n, scan) for n in ast.walk(scan.module) if isinstance(n, ast.Call))
    roots: list[ast.AST] = [scan.module]
    roots += [n for n in ast.walk(scan.module) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]
    for root in roots:
        scope = _Scope(root)
        makers = [call for call in scope.calls if _makes_uint8(call, scan)]
        if makers and _reaches_a_mask_use(scope, makers, scan, escapes):
            return True
    return False


GATE = Gate(may_act=may_act)


SPEC = Spec(
    code="TM011",
    name="bool-masks",
    stage=Stage.REWRITE,
    safety=Safety.SAFE,
    target="codemods.transforms.bool_masks:BoolMasks",
    triggers=triggers(),
    summary="(x == pad).byte() / torch.ByteTensor / dtype=torch.uint8 used as a mask -> .bool() / BoolTensor / torch.bool",
    gate=GATE,
    emits=(
        "torch.bool",
        "torch.BoolTensor",
        "torch.cuda.BoolTensor",
    ),
)
