"""TM002: `torch.autograd.Variable(x)` -> `x` (and `requires_grad=` / `volatile=` handled)."""

from __future__ import annotations

import libcst as cst

from codemods.gates.variable_removal import VARIABLE
from codemods.helpers import arguments
from codemods.helpers.bindings import BodyBindings, target_names
from codemods.base import MigrationCodemod
from codemods.helpers.names import dotted
from codemods.helpers.patterns import Words
from codemods.transforms.variable_removal.leftovers import Leftovers
from codemods.transforms.variable_removal.origin import TensorOrigin, _TensorTypeNames
from codemods.base import traverse

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


class VariableRemoval(TensorOrigin, Leftovers, MigrationCodemod):
    """Remove `torch.autograd.Variable` wrappers.

    ## What it does
    Rewrites `Variable(x)` to `x` (to `x.detach()` unless `x` provably requires no grad),
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
    import torch
    from torch.autograd import Variable

    for inputs, labels in loader:
        inputs, labels = Variable(inputs), Variable(labels)
    noise = Variable(torch.randn(4, 100), requires_grad=True)
    batch = Variable(images, volatile=True)
    ```

    ## Use instead
    ```python
    import torch

    for inputs, labels in loader:
        pass
    noise = torch.randn(4, 100).requires_grad_()
    batch = images.detach()
    ```

    The loop's line goes: a loader's batch requires no grad, and without its wrappers the line
    would only assign each name to itself (the loop, now empty, gets a finding). `images` comes
    from elsewhere and may require grad, so the cut `Variable` made stays as `.detach()`. The
    `volatile=True` call also gets a finding: run the inference under `with torch.no_grad():`.

    ## Fix safety
    Safe. `Variable(x)` is `x.detach()`, which is what the output says whenever `x` may carry a
    graph that the wrapper cut off: a computed value (`Variable(x + delta)`, `Variable(model(x))`),
    a parameter of the function (`return Variable(w)`: the caller's tensor may require grad), an
    attribute (`Variable(self.hidden)`), a name bound elsewhere. A tensor that provably requires
    no grad loses the wrapper entirely: a freshly made one (`torch.zeros(...)`, `torch.from_numpy(a)`,
    `x.data`, `.detach()`, conversions and views of those), a name given only such values, and a
    data loader's batch (`for x, y in loader`, `enumerate(train_loader)`, through `tqdm(...)`: a
    `DataLoader(...)`, a name bound to one, or a name that says `loader`), with its elements and
    attributes (`batch[0]`, `batch.src`). With `requires_grad=`, only a fresh tensor is flagged in
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

    PRUNE = True  # its sites and what decides them (the statement around a `Variable(...)`) are on trigger lines

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._loose: set[int] = set()  # ids of original expressions where no parentheses are needed
        self._detached: set[int] = set()  # ids of original expressions whose `.detach` is taken next
        self._heads: set[str] = set()  # local names through which a rewritten Variable was reached
        self._tensor_types: frozenset[str] = frozenset()  # names (`Tensor`, `self.Tensor`) bound only to legacy types
        self._no_grad = 0  # how many `with torch.no_grad():` blocks enclose the walk
        # Updated statements left doing nothing (dropped by their block), and updated suites whose
        # every statement vanished, by id; the values keep the nodes alive so that no id is reused.
        self._vanish: dict[int, cst.CSTNode] = {}
        self._emptied: dict[int, cst.CSTNode] = {}
        # the functions around the walk, each with its bindings once read (`_bindings`)
        self._functions: list[tuple[cst.FunctionDef, dict | None]] = []
        # names whose origin is being worked out (cycles), each with whether the value being
        # read led back to the name itself (`x = x.cuda()`)
        self._resolving: dict[str, bool] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions.append((node, None))

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self._functions.pop()
        return updated_node

    def _parameters(self) -> frozenset[str]:
        """The parameters of the innermost function around the walk (a caller's tensors)."""
        if not self._functions:
            return frozenset()
        params = self._functions[-1][0].params
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        every += [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
        return frozenset(p.name.value for p in every)

    def _bindings(self) -> dict[str, list[cst.BaseExpression | None]]:
        """What the innermost function around the walk binds each name to (None: a value that
        is not one expression, such as `+=`), read once per function, on the first need."""
        if not self._functions:
            return self._global_bindings()
        node, found = self._functions[-1]
        if found is None:
            found = _Bindings.of(node)
            self._functions[-1] = (node, found)
        return found

    def _global_bindings(self) -> dict[str, list[cst.BaseExpression | None]]:
        if self._module_bindings is None:
            self._module_bindings = _Bindings.of(self._module)
        return self._module_bindings

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

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "detach":  # `Variable(h).detach()` is `h.detach()`, not `h.detach().detach()`
            self._detached.add(id(node.value))

    # -- the rewrite ------------------------------------------------------------------------

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if self.qualified_name(original_node.func) not in VARIABLE:
            return updated_node
        reason = self._undecidable(updated_node)
        if reason is not None:
            self.finding(original_node, reason, suggestion="pass the tensor itself (`x` or `x.requires_grad_()`)")
            return updated_node
        bound = arguments.bind(updated_node, PARAMETERS)
        data = bound["data"].arg.value
        volatile = bound.get("volatile")
        requires_grad = bound.get("requires_grad")

        flag = arguments.literal(requires_grad.arg.value) if requires_grad else False
        origin = self._origin(data)
        if flag is False or flag is None:
            if origin == "computed" and id(original_node) not in self._detached:  # it may carry a graph: `Variable` cut it off
                replacement = _method(_operand(data), "detach")
            else:
                replacement = data if id(original_node) in self._loose else _operand(data)
        else:
            receiver = _operand(data)
            if origin != "fresh":  # flag a copy, never the caller's tensor (what `Variable` did)
                receiver = _method(receiver, "detach")
            flag_args = [] if flag is True else [cst.Arg(value=requires_grad.arg.value)]
            replacement = _method(receiver, "requires_grad_", flag_args)
        if not isinstance(updated_node.whitespace_before_args, cst.ParenthesizedWhitespace):
            # `Variable(torch.Tensor([[1, 2],\n                         [3, 4]]))`: the rows aligned
            # under the data's own brackets move left with it
            width = len(self.code_for(updated_node.func)) + 1 + len(self.code_for(updated_node.whitespace_before_args))
            replacement = replacement.visit(_Dedent(width))
        if not self.suppressed(original_node):
            self._heads.add((dotted(original_node.func) or "").split(".")[0])
            if volatile is not None and arguments.literal(volatile.arg.value) is not False and not self._no_grad:
                self.finding(
                    original_node,
                    "`volatile=` has had no effect since PyTorch 0.4 and was removed: run this code under"
                    " `with torch.no_grad():` to skip autograd",
                    suggestion="with torch.no_grad():",
                )
        return self.rewrite(original_node, updated_node, replacement)

    def _undecidable(self, call: cst.Call) -> str | None:
        if arguments.has_star_args(call):
            return "`Variable(...)` with *args/**kwargs: remove the wrapper by hand"
        bound = arguments.bind(call, PARAMETERS)
        if "data" not in bound:
            return "`Variable()` without data: replace it with the tensor it should hold"
        extra = [a.keyword.value for a in call.args if a.keyword is not None and a.keyword.value not in PARAMETERS]
        if extra or len([a for a in call.args if a.keyword is None]) > len(PARAMETERS):
            return f"`Variable(...)` with other arguments ({', '.join(extra) or 'extra positional'}): remove by hand"
        volatile = bound.get("volatile")
        if volatile is not None and _has_call(volatile.arg.value):
            return "`volatile=` is computed by a call that removing it would skip: remove the wrapper by hand"
        return None

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


class _Bindings(BodyBindings):
    """Name -> every value one function assigns it (nested functions, classes and lambdas are
    their own): `a, b = x, y` pairs up, `h += w` is an unknown value (arithmetic of tensors), a
    loop variable is bound to its `for` (whose iterable tells whether it is a loader's batch)."""

    def visit_For(self, node: cst.For) -> None:
        for name in target_names(node.target):
            self.bind(name, node)


def _method(receiver: cst.BaseExpression, name: str, args: list[cst.Arg] | None = None) -> cst.Call:
    return cst.Call(func=cst.Attribute(value=receiver, attr=cst.Name(name)), args=args or [])


def _operand(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`expr`, parenthesised when it could not otherwise take an attribute or be an operand."""
    if isinstance(expr, _ATOMS) or expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


class _Calls(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found = False

    def visit_Call(self, node: cst.Call) -> bool:
        self.found = True
        return False


def _has_call(expr: cst.BaseExpression) -> bool:
    """Whether `expr` is or holds a call."""
    finder = _Calls()
    traverse(expr, finder)
    return finder.found


class _Dedent(cst.CSTTransformer):
    """Moves the continuation lines of an expression `width` columns left, where each has that
    much indentation to give (a line indented less stays as it is)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.width = width

    def leave_ParenthesizedWhitespace(
        self, original_node: cst.ParenthesizedWhitespace, updated_node: cst.ParenthesizedWhitespace
    ) -> cst.ParenthesizedWhitespace:
        indent = updated_node.last_line.value
        if len(indent) - len(indent.lstrip(" ")) < self.width:
            return updated_node
        return updated_node.with_changes(last_line=cst.SimpleWhitespace(indent[self.width :]))
