"""TM002: `torch.autograd.Variable(x)` -> `x` (and `requires_grad=` / `volatile=` handled)."""

from __future__ import annotations

from typing import Sequence

import libcst as cst

from codemods.gates.variable_removal import VARIABLE
from codemods.helpers import args as A
from codemods.helpers.codemod import MigrationCodemod
from codemods.helpers.names import dotted
from codemods.helpers.patterns import Words
from codemods.helpers.statements import drop_vanished, prune_if, reference

TENSOR_TYPE_WORDS = Words(r"Tensor\b")  # the lines that can bind a name to a legacy tensor type

PARAMETERS = ("data", "requires_grad", "volatile")
# Expressions that can take `.attr` or stand as an operand without parentheses.
_ATOMS = (
    cst.Name,
    cst.Attribute,
    cst.Call,
    cst.Subscript,
    cst.SimpleString,
    cst.ConcatenatedString,
    cst.FormattedString,
    cst.Integer,
    cst.Float,
    cst.Imaginary,
    cst.List,
    cst.Dict,
    cst.Set,
    cst.ListComp,
    cst.SetComp,
    cst.DictComp,
)
# The legacy tensor types: calling one makes a new tensor (`Tensor = torch.cuda.FloatTensor if cuda
# else torch.FloatTensor` makes `Tensor` one too).
TENSOR_TYPES = frozenset(
    f"torch.{prefix}{kind}Tensor"
    for prefix in ("", "cuda.")
    for kind in "Float Double Half BFloat16 Long Int Short Char Byte Bool".split()
) | {"torch.Tensor"}
# Tensor constructors: a new tensor that requires no grad and that nothing else refers to.
FACTORIES = TENSOR_TYPES | frozenset(
    f"torch.{name}"
    for name in (
        "tensor zeros ones empty full rand randn randint randperm arange range linspace logspace eye"
        " from_numpy zeros_like ones_like empty_like full_like rand_like randn_like randint_like"
        " multinomial"  # indices: they never require grad
    ).split()
)
# Functions of tensors that are fresh when every tensor they are given is (`torch.bernoulli(p)`
# requires grad when `p` does; `torch.bernoulli(p.data)` does not).
OF_FRESH = frozenset({"torch.bernoulli", "torch.poisson", "torch.sigmoid", "torch.exp", "torch.log", "torch.abs"})
# Joins of tensors: fresh when every tensor joined is.
JOINS = frozenset({"torch.stack", "torch.cat"})
# Methods whose tensor arguments are indices or masks (which never carry a graph), with the
# position and keyword of the one argument that can (None: no such argument).
INDEXING_METHODS = {
    "masked_fill_": (1, "value"), "masked_fill": (1, "value"), "index_fill_": (2, "value"),
    "index_fill": (2, "value"), "scatter_": (2, "src"), "scatter": (2, "src"), "gather": None,
    "index_select": None, "masked_select": None, "take": None,
}  # fmt: skip
# `with` contexts that only set the grad mode: with nothing left inside, the block does nothing.
GRAD_MODES = frozenset(
    {"torch.no_grad", "torch.enable_grad", "torch.set_grad_enabled", "torch.inference_mode",
     "torch.autograd.no_grad", "torch.autograd.enable_grad", "torch.autograd.set_grad_enabled",
     "torch.autograd.grad_mode.no_grad"}
)  # fmt: skip
NO_GRAD = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad"})
# Tensor methods that make a new tensor requiring no grad, whatever their receiver.
NEW_TENSOR_METHODS = frozenset("detach new new_zeros new_ones new_empty new_full new_tensor".split())
# Tensor methods after which a tensor that required no grad still requires none.
KEEPS_GRAD_FREE = frozenset(
    "cuda cpu to type type_as float double half long int short byte bool char view view_as reshape resize_"
    " unsqueeze squeeze contiguous uniform_ normal_ fill_ zero_ random_ bernoulli_ exponential_ t permute"
    " expand expand_as repeat transpose pin_memory narrow select resize_as_".split()
)


class VariableRemoval(MigrationCodemod):
    """Remove `torch.autograd.Variable` wrappers.

    ## What it does
    Rewrites `Variable(x)` to `x` (to `x.detach()` when `x` is computed and may carry a graph),
    and `Variable(x, requires_grad=True)` to `x.requires_grad_()` (to `x.detach().requires_grad_()`
    when `x` may be a tensor used elsewhere, which is exactly what `Variable` did). `volatile=` is dropped, with a finding that
    suggests `torch.no_grad()`. Every import form is recognised (`from torch.autograd import
    Variable`, `import torch.autograd as ag; ag.Variable`, `torch.autograd.Variable`,
    `from torch.autograd.variable import Variable`), and the import is removed once unused.

    ## Why is this bad?
    Since PyTorch 0.4 tensors carry autograd state themselves; `Variable` is a deprecated shim that
    returns a detached tensor. `volatile=` has had no effect since 0.4 and warns on every call:
    code that relied on it to skip autograd now builds graphs and uses more memory.

    ## Example
    ```python
    from torch.autograd import Variable
    inputs, labels = Variable(inputs), Variable(labels)
    noise = Variable(torch.randn(4, 100), requires_grad=True)
    batch = Variable(images, volatile=True)
    ```

    ## Use instead
    ```python
    inputs, labels = inputs, labels
    noise = torch.randn(4, 100).requires_grad_()
    batch = images  # and run the inference under `with torch.no_grad():`
    ```

    ## Fix safety
    Safe. `Variable(x)` is `x.detach()`, which is what the output says whenever `x` is computed
    (`Variable(x + delta)`, `Variable(torch.clamp(x, 0, 1))`, `Variable(model(x))`): such a value may
    carry a graph that the wrapper cut off. A freshly made tensor (`torch.zeros(...)`, `x.data`,
    `.detach()`, conversions and views of those) and a tensor passed by name (`Variable(images)`)
    lose the wrapper entirely: the 0.3 API only accepted plain tensors, which never require grad,
    so the copy changed nothing there. With `requires_grad=`, only a fresh tensor is flagged in
    place; anything else is detached first, so the caller's tensor does not start requiring grad.
    `volatile=` has no effect today, so removing it changes nothing; wrapping the code in
    `torch.no_grad()` is left to you (a finding says where). Calls with `*args`, `**kwargs`, other
    arguments or a `volatile=` expression with calls in it are findings, not rewrites. A user
    class called `Variable` is never touched. A call of a name bound only to legacy tensor types
    (`Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`) is a fresh tensor, and so is
    a fresh tensor filled in place from numbers (`Tensor(n, 1).fill_(1.0)`, `torch.zeros(n, k)
    .scatter_(1, index, 1)`), and a `torch.stack`/`torch.cat`/`torch.bernoulli` of fresh tensors
    only: no `.detach()` there.

    Nothing is left behind: `x = Variable(x)` (also `self.h = Variable(self.h)`, `a, b = ...`)
    vanishes, its comments kept on lines of their own; a `with torch.no_grad():` (or other grad
    mode) block, an `else:` or an `if` with a side-effect-free test that has nothing left goes too;
    a loop (or an `if` whose test is a call) left with nothing is kept as `pass`, with a finding.
    `x = x` the user wrote is theirs. No `volatile=` finding inside `with torch.no_grad():`.

    ## References
    - https://pytorch.org/blog/pytorch-0_4_0-migration-guide/
    - https://pytorch.org/docs/stable/autograd.html#variable-deprecated
    """

    CODE = "TM002"
    PRUNE = True  # its sites and what decides them (the statement around a `Variable(...)`) are on trigger lines

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._loose: set[int] = set()  # ids of original expressions where no parentheses are needed
        self._heads: set[str] = set()  # local names through which a rewritten Variable was reached
        self._tensor_types: frozenset[str] = frozenset()  # names (`Tensor`, `self.Tensor`) bound only to legacy types
        self._no_grad = 0  # how many `with torch.no_grad():` blocks enclose the walk
        # Updated statements left doing nothing (dropped by their block), and updated suites whose
        # every statement vanished, by id; the values keep the nodes alive so that no id is reused.
        self._vanish: dict[int, cst.CSTNode] = {}
        self._emptied: dict[int, cst.CSTNode] = {}
        # the functions around the walk, each with its bindings once read (`_bindings`)
        self._functions: list[tuple[cst.FunctionDef, dict | None]] = []
        self._resolving: set[str] = set()  # names whose origin is being worked out (cycles)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions.append((node, None))

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self._functions.pop()
        return updated_node

    def _bindings(self) -> dict[str, list[cst.BaseExpression | None]]:
        """What the innermost function around the walk binds each name to (None: a value that
        is not one expression, such as `+=`), read once per function, on the first need."""
        if not self._functions:
            if self._module_bindings is None:
                self._module_bindings = _Bindings.of(self._module)
            return self._module_bindings
        node, found = self._functions[-1]
        if found is None:
            found = _Bindings.of(node)
            self._functions[-1] = (node, found)
        return found

    def visit_Module(self, node: cst.Module) -> None:
        self._module, self._module_bindings = node, None
        survey = _TensorTypeNames(self)
        self.visit_where(node, survey, TENSOR_TYPE_WORDS)
        self._tensor_types = frozenset(n for n, only_types in survey.names.items() if only_types)

    # -- positions where a bare expression needs no parentheses ------------------------------

    def _mark(self, node: cst.CSTNode | None) -> None:
        if node is not None:
            self._loose.add(id(node))

    def visit_Assign(self, node: cst.Assign) -> None:
        self._mark(node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._mark(node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._mark(node.value)

    def visit_Return(self, node: cst.Return) -> None:
        self._mark(node.value)

    def visit_Arg(self, node: cst.Arg) -> None:
        self._mark(node.value)

    def visit_Element(self, node: cst.Element) -> None:
        self._mark(node.value)

    def visit_DictElement(self, node: cst.DictElement) -> None:
        self._mark(node.value)

    def visit_Expr(self, node: cst.Expr) -> None:
        self._mark(node.value)

    # -- the rewrite ------------------------------------------------------------------------

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if self.qualified_name(original_node.func) not in VARIABLE:
            return updated_node
        reason = self._undecidable(updated_node)
        if reason is not None:
            self.finding(original_node, reason, suggestion="pass the tensor itself (`x` or `x.requires_grad_()`)")
            return updated_node
        bound = A.bind(updated_node, PARAMETERS)
        data = bound["data"].arg.value
        volatile = bound.get("volatile")
        requires_grad = bound.get("requires_grad")

        flag = A.literal(requires_grad.arg.value) if requires_grad else False
        origin = self._origin(data)
        if flag is False or flag is None:
            if origin == "computed":  # it may carry a graph: `Variable` cut it off
                replacement = _method(_operand(data), "detach")
            else:
                replacement = data if id(original_node) in self._loose else _operand(data)
        else:
            receiver = _operand(data)
            if origin != "fresh":  # flag a copy, never the caller's tensor (what `Variable` did)
                receiver = _method(receiver, "detach")
            flag_args = [] if flag is True else [cst.Arg(value=requires_grad.arg.value)]
            replacement = _method(receiver, "requires_grad_", flag_args)
        if not self.suppressed(original_node):
            self._heads.add((dotted(original_node.func) or "").split(".")[0])
            if volatile is not None and A.literal(volatile.arg.value) is not False and not self._no_grad:
                self.finding(
                    original_node,
                    "`volatile=` has had no effect since PyTorch 0.4 and was removed: run this code under"
                    " `with torch.no_grad():` to skip autograd",
                    suggestion="with torch.no_grad():",
                )
        return self.rewrite(original_node, updated_node, replacement)

    def _undecidable(self, call: cst.Call) -> str | None:
        if A.has_star_args(call):
            return "`Variable(...)` with *args/**kwargs: remove the wrapper by hand"
        bound = A.bind(call, PARAMETERS)
        if "data" not in bound:
            return "`Variable()` without data: replace it with the tensor it should hold"
        extra = [a.keyword.value for a in call.args if a.keyword is not None and a.keyword.value not in PARAMETERS]
        if extra or len([a for a in call.args if a.keyword is None]) > len(PARAMETERS):
            return f"`Variable(...)` with other arguments ({', '.join(extra) or 'extra positional'}): remove by hand"
        volatile = bound.get("volatile")
        if volatile is not None and _has_call(volatile.arg.value):
            return "`volatile=` is computed by a call that removing it would skip: remove the wrapper by hand"
        return None

    def _origin(self, data: cst.BaseExpression) -> str:
        """Where the tensor handed to `Variable` comes from:

        - "fresh": a new tensor that requires no grad and that nothing else refers to (a factory
          call, `.data`, `.detach()`, conversions and views of those);
        - "named": a tensor referred to by name (`images`, `self.weight`, `batch[0]`); legacy code
          hands `Variable` its input data this way, and 0.3 refused tensors that required grad;
        - "computed": anything else (`torch.clamp(x)`, `x + delta`, `model(x)`), which may carry a
          graph that `Variable` detached.
        """
        if isinstance(data, cst.Attribute):
            return "fresh" if data.attr.value == "data" else "named"
        if isinstance(data, cst.Name):
            return self._name_origin(data.value)
        if isinstance(data, cst.Subscript):
            return "named"
        if isinstance(data, (cst.Integer, cst.Float)):
            return "fresh"
        if isinstance(data, cst.BinaryOperation):  # arithmetic of fresh tensors and numbers
            fresh = self._origin(data.left) == "fresh" and self._origin(data.right) == "fresh"
            return "fresh" if fresh else "computed"
        if isinstance(data, cst.UnaryOperation):
            return self._origin(data.expression)
        if isinstance(data, cst.IfExp):
            branches = {self._origin(data.body), self._origin(data.orelse)}
            return next(o for o in ("computed", "named", "fresh") if o in branches)
        if not isinstance(data, cst.Call):
            return "computed"
        if self.qualified_name(data.func) in VARIABLE and data.args:  # `x = Variable(x)`: x's own
            return self._origin(data.args[0].value)
        if dotted(data.func) in self._tensor_types:
            return "fresh"
        name = self.qualified_name(data.func)
        if name in JOINS and data.args and self._all_fresh(data.args[0].value):
            return "fresh"  # `torch.stack([torch.Tensor([t]) for t in (0, 1)])`
        if name in OF_FRESH and self._adds_no_graph("", data):
            return "fresh"
        if name is not None:
            return "fresh" if name in FACTORIES else "computed"
        if isinstance(data.func, cst.Attribute):
            method, receiver = data.func.attr.value, data.func.value
            if method in NEW_TENSOR_METHODS:
                return "fresh"
            if method == "clone":
                return "computed" if self._origin(receiver) == "computed" else "fresh"
            if method in KEEPS_GRAD_FREE:
                return self._origin(receiver)
            if self._origin(receiver) == "fresh" and self._adds_no_graph(method, data):
                return "fresh"  # `torch.zeros(n, k).scatter_(1, index, 1)`, `Tensor(n).add_(0.5)`
        return "computed"

    def _name_origin(self, name: str) -> str:
        """A name is "computed" when its function binds it to a computed value anywhere
        (`h = w * 3; h = Variable(h)` cut `h`'s graph); else "named" — never "fresh": the tensor
        a name holds may be held elsewhere too, so it is never flagged in place."""
        values = self._bindings().get(name)
        if not values or name in self._resolving:
            return "named"  # a parameter, a loop variable, or `x = f(x)` seen from inside
        self._resolving.add(name)
        try:
            computed = any(value is None or self._origin(value) == "computed" for value in values)
        finally:
            self._resolving.discard(name)
        return "computed" if computed else "named"

    def _all_fresh(self, tensors: cst.BaseExpression) -> bool:
        """Whether a list/tuple display or comprehension holds only fresh tensors."""
        if isinstance(tensors, (cst.List, cst.Tuple)):
            return bool(tensors.elements) and all(
                isinstance(e, cst.Element) and self._origin(e.value) == "fresh" for e in tensors.elements
            )
        if isinstance(tensors, (cst.ListComp, cst.GeneratorExp)):
            return self._origin(tensors.elt) == "fresh"
        return False

    def _adds_no_graph(self, method: str, call: cst.Call) -> bool:
        """Whether `fresh.method(...)` can take a graph from its arguments: not when each argument
        that could carry one is a number or a fresh tensor (indices and masks never carry one)."""
        if A.has_star_args(call):
            return False
        args = list(call.args)
        if method in INDEXING_METHODS:
            where = INDEXING_METHODS[method]
            args = [] if where is None else [a for i, a in enumerate(args) if (a.keyword is None and i == where[0]) or (a.keyword is not None and a.keyword.value in where)]
        return all(A.is_literal(A.literal(a.value)) or self._origin(a.value) == "fresh" for a in args)

    # -- leftovers: `x = x` and blocks with nothing left in them ------------------------------------

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        """`x = Variable(x)` became `x = x`: the statement goes (its block drops the line, and keeps
        its comments)."""
        kept = _without_no_ops(original_node.body, updated_node.body)
        if kept is None:
            return updated_node
        if not kept:
            self._vanish[id(updated_node)] = updated_node
            return updated_node
        return updated_node.with_changes(body=kept)

    def leave_SimpleStatementSuite(
        self, original_node: cst.SimpleStatementSuite, updated_node: cst.SimpleStatementSuite
    ) -> cst.SimpleStatementSuite:
        kept = _without_no_ops(original_node.body, updated_node.body)
        if kept is None:
            return updated_node
        if kept:
            return updated_node.with_changes(body=kept)
        emptied = updated_node.with_changes(body=[cst.Pass()])
        self._emptied[id(emptied)] = emptied
        return emptied

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        if not any(id(s) in self._vanish for s in updated_node.body):
            return updated_node
        body, left = self._drop_vanished(updated_node.body)
        if body:
            return updated_node.with_changes(body=body, footer=[*left, *updated_node.footer])
        emptied = updated_node.with_changes(body=[cst.SimpleStatementLine([cst.Pass()], leading_lines=left)])
        self._emptied[id(emptied)] = emptied
        return emptied

    def _drop_vanished(self, statements) -> tuple[list[cst.BaseStatement], list[cst.EmptyLine]]:
        """`statements` without the vanished ones, whose comments move onto the next statement;
        the comments with no statement after them are returned."""
        return drop_vanished(statements, self._vanish)

    def visit_With(self, node: cst.With) -> None:
        self._no_grad += self._grad_mode(node, NO_GRAD)

    def leave_With(self, original_node: cst.With, updated_node: cst.With) -> cst.With:
        self._no_grad -= self._grad_mode(original_node, NO_GRAD)
        if id(updated_node.body) in self._emptied and self._grad_mode(original_node, GRAD_MODES):
            self._vanish[id(updated_node)] = updated_node  # `with torch.no_grad(): pass`
        return updated_node

    def _grad_mode(self, node: cst.With, modes: frozenset[str]) -> bool:
        return all(
            isinstance(item.item, cst.Call) and item.asname is None and self.qualified_name(item.item.func) in modes
            for item in node.items
        )

    def leave_Else(self, original_node: cst.Else, updated_node: cst.Else) -> cst.Else:
        if id(updated_node.body) in self._emptied:
            self._vanish[id(updated_node)] = updated_node
        return updated_node

    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> cst.If:
        pruned = prune_if(updated_node, original_node.test, self._emptied, self._vanish)
        if pruned is None:
            self._vanish[id(updated_node)] = updated_node
            return updated_node
        return self._left_empty(original_node, pruned, "its condition")

    def leave_For(self, original_node: cst.For, updated_node: cst.For) -> cst.For:
        return self._left_empty(original_node, updated_node, "the loop itself")

    def leave_While(self, original_node: cst.While, updated_node: cst.While) -> cst.While:
        return self._left_empty(original_node, updated_node, "the loop itself")

    def _left_empty(self, original_node, updated_node, effects: str):
        """A block that only wrapped tensors is `pass` now; what holds it may have effects, so it stays, reported."""
        if id(updated_node.body) in self._emptied and not self.suppressed(original_node):
            self.finding(
                original_node,
                f"this block only wrapped tensors in `Variable`, which does nothing today: it is `pass` now;"
                f" delete it ({effects} may have effects, so it is not removed)",
            )
        return updated_node

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if any(id(s) in self._vanish for s in updated_node.body):
            body, left = self._drop_vanished(updated_node.body)
            updated_node = updated_node.with_changes(body=body, footer=[*left, *updated_node.footer])
        for head in self._heads:
            target = self.imports.aliases.get(head)
            if target is None or head in self.imports.shadowed:
                continue
            if self.imports.names.reexported(target) in VARIABLE:  # also through a re-export
                module, _, obj = target.rpartition(".")
                self.remove_unused_import(module, obj, None if head == obj else head)
            elif head != target.split(".")[0]:  # `import torch.autograd as ag`, not `import torch`
                self.remove_unused_import(target, None, head)
        return updated_node


class _Bindings(cst.CSTVisitor):
    """Name -> every value one function assigns it (nested functions and classes are their own)."""

    def __init__(self) -> None:
        self.values: dict[str, list[cst.BaseExpression | None]] = {}

    @classmethod
    def of(cls, scope: cst.FunctionDef | cst.Module) -> dict[str, list[cst.BaseExpression | None]]:
        visitor = cls()
        for statement in scope.body.body if isinstance(scope, cst.FunctionDef) else scope.body:
            statement.visit(visitor)
        return visitor.values

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Name):
            self.values.setdefault(node.target.value, []).append(None)  # `h += w`: arithmetic of tensors

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.values.setdefault(target.value, []).append(value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            values = value.elements if isinstance(value, (cst.Tuple, cst.List)) else None
            pairs = len(values) == len(target.elements) if values is not None else False
            for index, element in enumerate(target.elements):
                if isinstance(element.value, cst.Name) and not isinstance(element, cst.StarredElement):
                    # `a, b = x.cuda(), y.cuda()` pairs up; `a, b = f(x)` takes what f returns
                    self.values.setdefault(element.value.value, []).append(values[index].value if pairs else value)


def _method(receiver: cst.BaseExpression, name: str, args: list[cst.Arg] | None = None) -> cst.Call:
    return cst.Call(func=cst.Attribute(value=receiver, attr=cst.Name(name)), args=args or [])


def _operand(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`expr`, parenthesised when it could not otherwise take an attribute or be an operand."""
    if isinstance(expr, _ATOMS) or expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _is_no_op(statement: cst.BaseSmallStatement) -> bool:
    """`x = x`, `self.h = self.h`, `a, b = a, b`."""
    if not isinstance(statement, cst.Assign) or len(statement.targets) != 1:
        return False
    key = reference(statement.targets[0].target)
    return key is not None and key == reference(statement.value)


def _without_no_ops(original: Sequence[cst.BaseSmallStatement], updated: Sequence[cst.BaseSmallStatement]):
    """The small statements of a line without those this walk made no-ops (None: there are none).
    A `x = x` the user wrote is theirs."""
    kept = [u for o, u in zip(original, updated) if not _is_no_op(u) or _is_no_op(o)]
    if len(kept) == len(updated):
        return None
    if kept:
        kept[-1] = kept[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
    return kept


class _TensorTypeNames(cst.CSTVisitor):
    """Names and `self.` attributes assigned in the module, each with whether every value they
    are given is a legacy tensor type (`Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`)."""

    def __init__(self, codemod: VariableRemoval) -> None:
        self.codemod = codemod
        self.names: dict[str, bool] = {}

    def _is_type(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.IfExp):
            return self._is_type(expr.body) and self._is_type(expr.orelse)
        return self.codemod.qualified_name(expr) in TENSOR_TYPES or dotted(expr) in self.names and self.names[dotted(expr)]

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            name = dotted(target.target)
            if name is not None:
                self.names[name] = self.names.get(name, True) and self._is_type(node.value)


class _Calls(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found = False

    def visit_Call(self, node: cst.Call) -> bool:
        self.found = True
        return False


def _has_call(expr: cst.BaseExpression) -> bool:
    """Whether `expr` is or holds a call."""
    finder = _Calls()
    expr.visit(finder)
    return finder.found
