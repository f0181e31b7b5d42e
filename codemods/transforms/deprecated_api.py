"""TM006: deprecated and removed torch APIs -> their replacements, from codemods/data/deprecated_api.json."""

from __future__ import annotations

import libcst as cst

from codemods.gates.deprecated_api import REMOVED_METHODS, table
from codemods.helpers import args as A
from codemods.helpers.codemod import MigrationCodemod
from codemods.helpers.names import every_name
from codemods.helpers.keywords import append_args, keyword_arg
from codemods.helpers.spelling import head, import_forms, reference, retire
from codemods.helpers.statements import reference as reference_key

_INT_FUNCS = frozenset({"len", "int"})
_INT_OPS = (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide)
# set_default_tensor_type's CPU tensor types -> dtypes. CUDA types belong to TM101 (cuda-to-device).
_CPU_TYPES = {"torch.FloatTensor": "torch.float32", "torch.DoubleTensor": "torch.float64"}
# Fields of the old result tuples a use may read (`torch.solve(b, A).solution`, `torch.svd(A).V`).
_FIELDS = frozenset({"eigenvalues", "solution", "U", "S", "V", "cloned_coefficient"})
_INF = frozenset({"math.inf", "numpy.inf", "numpy.Inf", "torch.inf"})
_ATOMIC = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)


def int_value(expr: cst.BaseExpression) -> int | None:
    if isinstance(expr, cst.Integer):
        return int(expr.value, 0)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = int_value(expr.expression)
        return None if inner is None else -inner
    return None


def number(expr: cst.BaseExpression) -> float | None:
    if isinstance(expr, cst.Float):
        return float(expr.value)
    value = int_value(expr)
    return None if value is None else float(value)


def int_literal(value: int) -> cst.BaseExpression:
    if value < 0:
        return cst.UnaryOperation(operator=cst.Minus(), expression=cst.Integer(str(-value)))
    return cst.Integer(str(value))


def provably_int(expr: cst.BaseExpression) -> bool:
    """An expression that is a Python int whatever the program's data: literals, len(), int(), sums."""
    if int_value(expr) is not None:
        return True
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in _INT_FUNCS:
        return True
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _INT_OPS):
        return provably_int(expr.left) and provably_int(expr.right)
    return False


def shifted(expr: cst.BaseExpression, delta: int) -> cst.BaseExpression:
    """`expr + delta`, folded where it reads better: `10` -> `11`, `n - 1` -> `n`."""
    value = int_value(expr)
    if value is not None:
        return int_literal(value + delta)
    if (
        isinstance(expr, cst.BinaryOperation)
        and isinstance(expr.operator, (cst.Add, cst.Subtract))
        and isinstance(expr.right, cst.Integer)
        and not expr.lpar
    ):
        k = int(expr.right.value, 0) * (1 if isinstance(expr.operator, cst.Add) else -1) + delta
        if k == 0:
            return expr.left
        op = cst.Add() if k > 0 else cst.Subtract()
        return expr.with_changes(operator=op, right=cst.Integer(str(abs(k))))
    atomic = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float)
    additive = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.Power)
    if not isinstance(expr, atomic) and not (
        isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, additive)
    ):
        expr = expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    op = cst.Add() if delta > 0 else cst.Subtract()
    return cst.BinaryOperation(left=expr, operator=op, right=cst.Integer(str(abs(delta))))


def _atomic(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`expr`, parenthesized unless it is a name, attribute, call or subscript (for `expr.mT`)."""
    if isinstance(expr, _ATOMIC) or expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _attr(expr: cst.BaseExpression, *names: str) -> cst.BaseExpression:
    for name in names:
        expr = cst.Attribute(value=_atomic(expr), attr=cst.Name(name))
    return expr


def _negated(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`not expr`, folded for a literal bool."""
    value = A.literal(expr)
    if value in (True, False) and isinstance(expr, cst.Name):
        return cst.Name(str(not value))
    return cst.UnaryOperation(operator=cst.Not(), expression=_atomic(expr))


def _tuple(values: list[cst.BaseExpression]) -> cst.BaseExpression:
    """`a, b` (no parentheses) for two or more values; the value itself for one."""
    if len(values) == 1:
        return values[0]
    elements = [cst.Element(v, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for v in values[:-1]]
    return cst.Tuple(elements=[*elements, cst.Element(values[-1])], lpar=[], rpar=[])


class _UnderscoreReads(cst.CSTVisitor):
    """Whether a module reads the name `_` (gettext's `_("...")`, a `print(_)`): every `_`
    outside an assignment, loop, `as` or parameter target counts as a read."""

    def __init__(self) -> None:
        self.binding = 0
        self.read = False

    def _enter(self, node: cst.CSTNode) -> None:
        self.binding += 1

    def _exit(self, node: cst.CSTNode) -> None:
        self.binding -= 1

    visit_AssignTarget = visit_AsName = visit_Param = visit_For_target = visit_CompFor_target = _enter
    leave_AssignTarget = leave_AsName = leave_Param = leave_For_target = leave_CompFor_target = _exit

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == "_" and not self.binding:
            self.read = True


def _pair(targets: list[str] | None) -> bool:
    """`X, Y = call` whose first name is kept (`_, LU = torch.solve(B, A)` would drop the solve)."""
    return targets is not None and len(targets) == 2 and targets[0] != "_"


def _arg(value: cst.BaseExpression, keyword: str | None = None) -> cst.Arg:
    return keyword_arg(keyword, value) if keyword else cst.Arg(value=value)


def _call(func: cst.BaseExpression, args: list[cst.Arg]) -> cst.Call:
    """A fresh call `func(args...)` with `, ` between the arguments."""
    spaced = [a.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for a in args[:-1]]
    return cst.Call(func=func, args=[*spaced, *[a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in args[-1:]]])


class DeprecatedApi(MigrationCodemod):
    """Replace deprecated and removed torch functions, entry by entry from a table.

    ## What it does
    Rewrites calls of deprecated torch APIs listed in `codemods/data/deprecated_api.json`, each
    entry saying how the arguments change, how safe it is, and when torch deprecated/removed it:
    `F.upsample*` -> `F.interpolate` (with the `mode`/`align_corners` the old function used),
    `F.sigmoid`/`F.tanh` -> `torch.sigmoid`/`torch.tanh`, the `nn.init` functions without a trailing
    underscore -> the in-place ones, `clip_grad_norm` -> `clip_grad_norm_`, `torch.ger` ->
    `torch.outer`, `torch.range` -> `torch.arange` (end adjusted, dtype kept), `chain_matmul` ->
    `linalg.multi_dot`, `torch.qr`/`cholesky`/`matrix_rank`/`symeig`/`solve`/`lu`/`lu_solve`/
    `triangular_solve`/`svd`/`norm` -> `torch.linalg` with the arguments in their new order
    (`lu_solve(b, LU, piv)` -> `linalg.lu_solve(LU, piv, b)`), the 0.4 names torch removed
    (`gesv`, `potrf`, `potrs`, `potri`, `trtrs`, `btrifact`, `btriunpack`) -> their current
    functions with the old defaults spelled out (`potrf` was `upper=True`), `assert_allclose` ->
    `assert_close`, `set_default_tensor_type` -> `set_default_dtype`. Where a statement unpacks
    an old result tuple, the same names end up bound to the same values:
    `X, LU = torch.solve(B, A)` -> `X, LU = torch.linalg.solve(A, B), torch.linalg.lu_factor(A).LU`,
    `U, S, V = torch.svd(A)` -> `U, S, V = torch.linalg.svd(A, full_matrices=False)` and `V = V.mH`.

    ## Why is this bad?
    The old names warn on every call, and several (`symeig`, `solve`, `matrix_rank`, `eig`,
    `lstsq`, and every 0.4 name such as `gesv` or `potrf`) now raise instead of computing anything.

    ## Example
    ```python
    y = F.upsample_bilinear(x, scale_factor=2)
    nn.init.xavier_uniform(layer.weight)
    idx = torch.range(0, n - 1)
    x = torch.solve(b, A)[0]
    U, S, V = torch.svd(A)
    y, _ = torch.triangular_solve(b, R, transpose=True)
    ```

    ## Use instead
    ```python
    y = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)
    nn.init.xavier_uniform_(layer.weight)
    idx = torch.arange(0, n, dtype=torch.get_default_dtype())
    x = torch.linalg.solve(A, b)
    U, S, V = torch.linalg.svd(A, full_matrices=False)
    V = V.mH
    y = torch.linalg.solve_triangular(R.mT, b, upper=False)
    ```

    ## Fix safety
    Per entry (see the table). A call is rewritten only where the result is the same: the same
    values, shape and dtype (`torch.range` returned the default float dtype, so `dtype=` is kept;
    `symeig`/`solve` returned pairs, so only `[0]`/`.eigenvalues`/`.solution` uses are rewritten).
    `torch.range` with a non-literal step, `torch.eig`/`torch.lstsq`/`torch.gels` (whose results
    have another shape), `btrisolve` (whose `b` was a batch of vectors in torch 0.4), a tuple result
    kept whole, a `transpose`/`get_infos` that is not a literal, a `torch.norm` whose `p` is not a
    literal (a string makes it a matrix norm), removed tensor methods (`x.potrf()`: the receiver's
    type is unknown) and anything else that cannot be mapped exactly are findings with a suggestion.
    `torch.norm` -> `linalg.vector_norm` is applied for review (exact for dense tensors; the
    `linalg` norms refuse sparse ones), and so is `torch.lu` -> `linalg.lu_factor` (which raises
    on a singular matrix). `X, LU = torch.solve(B, A)` evaluates `A` twice, so only where `A` is a
    name or attribute. `.mH`/`.mT` need torch 1.11: an older target keeps the old call.
    `torch.range` whose bounds are not provably integers, `assert_allclose` (`assert_close` does
    not convert lists or numbers) and `set_default_tensor_type` (which also reset the default
    device) are applied for review.

    ## References
    - https://github.com/pytorch/pytorch/issues/70081 (the `torch.linalg` migration guide)
    - https://github.com/pytorch/pytorch/issues/61844 (`assert_allclose` -> `assert_close`)
    - https://pytorch.org/docs/stable/generated/torch.range.html
    - https://pytorch.org/docs/stable/generated/torch.svd.html, torch.norm.html, torch.triangular_solve.html
    - https://pytorch.org/docs/0.4.1/torch.html#blas-and-lapack-operations (gesv, potrf, trtrs, btrifact, ...)
    """

    CODE = "TM006"
    PRUNE = True  # its sites are the deprecated names on trigger lines

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        self.forms = import_forms(tree)
        self.first: dict[int, str] = {}  # id of a call -> "[0]" or the attribute read from its result
        self.pending: dict[int, tuple[cst.BaseExpression, str | None]] = {}
        # id of a call whose result a statement `a, b = call` unpacks -> the target names
        self.unpacked: dict[int, list[str]] = {}
        # id of such a call -> (the names it binds now, their value, names rebound after: `V = V.mH`)
        self.statements: dict[int, tuple[list[str], cst.BaseExpression, list[str]]] = {}
        self._names: set[str] | None = None
        self._underscore: bool | None = None  # whether the module reads `_`
        self._tree = tree
        return super().transform_module_impl(tree)

    # -- spelling the replacement ------------------------------------------------------------

    def _module_names(self) -> set[str]:
        if self._names is None:
            self._names = every_name(self._tree)
        return self._names

    def _func(self, original_func: cst.BaseExpression, entry: dict) -> cst.BaseExpression:
        """The replacement's name: `from m import old` becomes `from m import new` when `new` is a
        name the module does not use for anything else; otherwise an existing import spells it."""
        new = entry["replacement"]
        module, _, short = new.rpartition(".")
        local = head(original_func)
        # `F.sigmoid` -> `torch.sigmoid` may be the last use of `import torch.nn.functional as F`
        # (the remover keeps it while anything else uses it; never drops `import torch`).
        retire(self, self.forms, local)
        form = self.forms.get(local) if isinstance(original_func, cst.Name) else None
        if form is not None and form.obj is not None:
            if form.module == module and short not in self._module_names():
                self.add_needed_import(module, short)
                return cst.Name(short)
        return reference(self, new, self.forms)

    # -- results used only through their first element ---------------------------------------

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if (
            isinstance(node.value, cst.Call)
            and len(node.slice) == 1
            and isinstance(node.slice[0].slice, cst.Index)
            and int_value(node.slice[0].slice.value) in (0, 1, 2)
        ):
            self.first[id(node.value)] = f"[{int_value(node.slice[0].slice.value)}]"

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if isinstance(node.value, cst.Call) and node.attr.value in _FIELDS:
            self.first[id(node.value)] = node.attr.value

    # -- results unpacked by a statement of their own: `X, LU = torch.solve(B, A)` --------------

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if len(node.body) != 1 or not isinstance(node.body[0], cst.Assign):
            return
        assign = node.body[0]
        if len(assign.targets) != 1 or not isinstance(assign.value, cst.Call):
            return
        target = assign.targets[0].target
        if not isinstance(target, (cst.Tuple, cst.List)):
            return
        names = [e.value.value for e in target.elements if isinstance(e, cst.Element) and isinstance(e.value, cst.Name)]
        if len(names) == len(target.elements):
            self.unpacked[id(assign.value)] = names

    def _reads_underscore(self) -> bool:
        if self._underscore is None:
            visitor = _UnderscoreReads()
            self._tree.visit(visitor)
            self._underscore = visitor.read
        return self._underscore

    def _unpack(self, original: cst.Call, pairs: list[tuple[str, cst.BaseExpression | None]]) -> None:
        """The statement unpacking `original` binds each name of `pairs` to its value instead;
        `_` targets are dropped (`X, _ = torch.solve(B, A)` -> `X = torch.linalg.solve(A, B)`:
        callers check `_unpackable` first)."""
        kept = [(name, value) for name, value in pairs if name != "_"]
        self._restate(original, [n for n, _ in kept], _tuple([v for _, v in kept]))

    def _unpackable(self, targets: list[str] | None, matrix: cst.BaseExpression | None = None) -> bool:
        """`X, Y = call` can become `X, Y = new, value of Y`: the first name is kept; a `_` second
        is dropped only where the module never reads `_`; a named second is computed again from
        `matrix`, so only where evaluating it twice is harmless (a name or attribute)."""
        if not _pair(targets):
            return False
        if targets[1] == "_":
            return not self._reads_underscore()
        return matrix is not None and reference_key(matrix) is not None

    def _restate(
        self, original: cst.Call, names: list[str], value: cst.BaseExpression, after: tuple[str, ...] = ()
    ) -> None:
        """The statement unpacking `original` becomes `names = value`, then `name = name.mH` for
        each name of `after`."""
        self.statements[id(original)] = (names, value, list(after))
        self._retire(original)

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine):
        if len(original_node.body) != 1 or not isinstance(original_node.body[0], cst.Assign):
            return updated_node
        edit = self.statements.pop(id(original_node.body[0].value), None)
        if edit is None:
            return updated_node
        names, value, after = edit
        assign = updated_node.body[0]
        if names == self.unpacked.get(id(original_node.body[0].value)):
            target = assign.targets[0]  # the same names in the same order: the target as written
        else:
            target = cst.AssignTarget(target=_tuple([cst.Name(n) for n in names]))
        first = updated_node.with_changes(body=[assign.with_changes(targets=[target], value=value)])
        if not after:
            return self.rewrite(original_node, updated_node, first)
        lines = [first]
        for name in after:
            rebind = cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=_attr(cst.Name(name), "mH"))
            lines.append(cst.SimpleStatementLine(body=[rebind]))
        return self.rewrite(original_node, updated_node, cst.FlattenSentinel(lines))

    def _tensor_attribute(self, original: cst.Call, symbol: str) -> bool:
        """Whether the target torch has the tensor attribute `symbol` (`torch.Tensor.mH`), which
        the output guard cannot see on a value; if not, the rewrite is held back with a finding."""
        if self.available(symbol):
            return True
        self.hold_back(original, symbol)
        return False

    def _finish(self, original, updated):
        pending = self.pending.pop(id(original.value), None)
        if pending is None:
            return updated
        replacement, review = pending
        replacement = replacement.with_changes(lpar=updated.lpar, rpar=updated.rpar)
        return self.rewrite(original, updated, replacement, review=review)

    def leave_Subscript(self, original_node: cst.Subscript, updated_node: cst.Subscript) -> cst.BaseExpression:
        return self._finish(original_node, updated_node)

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        return self._finish(original_node, updated_node)

    # -- calls ---------------------------------------------------------------------------------

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        name = self.qualified_name(original_node.func)
        entry = table().get(name) if name else None
        if entry is None:
            self._removed_method(original_node, name)
            return updated_node
        handler = getattr(self, f"_{entry['handler']}")
        outcome = handler(original_node, updated_node, entry)
        if outcome is None:
            return updated_node
        replacement, review = outcome
        return self.rewrite(original_node, updated_node, replacement, review=review)

    def _removed_method(self, original: cst.Call, name: str | None) -> None:
        """`x.potrf()` & co.: tensor methods torch removed. The receiver may be anything, so a
        finding; never for a module's function (`scipy.linalg.x`) or the class's own method."""
        func = original.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in REMOVED_METHODS:
            return
        own = isinstance(func.value, cst.Name) and func.value.value in ("self", "cls")
        if own or (name is not None and not name.startswith("torch.")):
            return
        self.finding(
            original,
            f"`.{func.attr.value}()` is a tensor method torch removed (0.4 era)",
            suggestion=REMOVED_METHODS[func.attr.value],
        )

    def _decline(self, original: cst.Call, entry: dict, why: str) -> None:
        self.finding(
            original,
            f"`{self.code_for(original.func)}` is deprecated ({entry['name']}, since torch {entry['deprecated']}):"
            f" {why}",
            suggestion=entry["replacement"],
        )

    def _rename(self, original: cst.Call, call: cst.Call, entry: dict):
        args = list(call.args)
        changes_args = entry["keyword_from"] is not None or entry["add"] or entry["rename"]
        if changes_args and A.has_star_args(call):
            self._decline(original, entry, f"*args/**kwargs hide the arguments; {entry['arguments']}")
            return None
        bound = A.bind(call, entry["positional"])
        if entry["keyword_from"] is not None:
            for param in entry["positional"][entry["keyword_from"] :]:
                if param in bound and bound[param].positional:
                    args[bound[param].index] = A.as_keyword(args[bound[param].index], param)
        for old, new in entry["rename"].items():
            if old in bound:
                args[bound[old].index] = args[bound[old].index].with_changes(keyword=cst.Name(new))
        extra = [keyword_arg(k, cst.parse_expression(v)) for k, v in entry["add"] if k not in bound]
        new_call = append_args(call.with_changes(args=args), extra)
        return new_call.with_changes(func=self._func(original.func, entry)), None

    def _finding(self, original: cst.Call, call: cst.Call, entry: dict):
        self._decline(original, entry, entry["arguments"])
        return None

    def _range(self, original: cst.Call, call: cst.Call, entry: dict):
        bound = A.bind(call, entry["positional"])
        if A.has_star_args(call) or "start" not in bound or "end" not in bound or "out" in bound:
            self._decline(original, entry, "write torch.arange(start, end + step, step) by hand")
            return None
        step = int_value(bound["step"].arg.value) if "step" in bound else 1
        start, end = bound["start"].arg.value, bound["end"].arg.value
        if not step or isinstance(start, cst.Float) or isinstance(end, cst.Float):
            self._decline(
                original,
                entry,
                "torch.arange excludes the end; with a step that is not an integer literal (or float bounds)"
                " `end + step` can add an element, so adjust the end by hand",
            )
            return None
        args = list(call.args)
        args[bound["end"].index] = args[bound["end"].index].with_changes(value=shifted(end, 1 if step > 0 else -1))
        new_call = call.with_changes(func=self._func(original.func, entry), args=args)
        if "dtype" not in bound:  # torch.range always returned the default float dtype
            dtype = cst.Call(func=reference(self, "torch.get_default_dtype", self.forms))
            new_call = append_args(new_call, [keyword_arg("dtype", dtype)])
        if provably_int(start) and provably_int(end):
            return new_call, None
        return new_call, "torch.range -> torch.arange is exact when end - start is a whole number (always for ints)"

    def _chain_matmul(self, original: cst.Call, call: cst.Call, entry: dict):
        args = list(call.args)
        if len(args) < 2 or any(a.star or a.keyword for a in args):
            self._decline(original, entry, "linalg.multi_dot takes a list of two or more matrices and no out=")
            return None
        elements = [cst.Element(value=a.value, comma=a.comma) for a in args]
        elements[-1] = elements[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        new_call = cst.Call(func=self._func(original.func, entry), args=[cst.Arg(value=cst.List(elements=elements))])
        return new_call, None

    def _qr(self, original: cst.Call, call: cst.Call, entry: dict):
        bound = A.bind(call, entry["positional"])
        if A.has_star_args(call):
            self._decline(original, entry, entry["arguments"])
            return None
        args = list(call.args)
        if "some" in bound:
            some = A.literal(bound["some"].arg.value)
            if some not in (True, False):
                self._decline(original, entry, 'mode="reduced" if some else "complete": `some` is not a literal')
                return None
            at = bound["some"].index
            if some:
                args = A.remove_args(args, {at})
            else:
                args[at] = A.as_keyword(args[at], "mode").with_changes(
                    keyword=cst.Name("mode"), value=cst.SimpleString('"complete"')
                )
        return call.with_changes(func=self._func(original.func, entry), args=args), None

    def _symeig(self, original: cst.Call, call: cst.Call, entry: dict):
        bound = A.bind(call, entry["positional"])
        if A.has_star_args(call) or set(bound) - set(entry["positional"]) or "input" not in bound:
            self._decline(original, entry, entry["arguments"])
            return None
        vectors = A.literal(bound["eigenvectors"].arg.value) if "eigenvectors" in bound else False
        upper = A.literal(bound["upper"].arg.value) if "upper" in bound else True
        if vectors not in (True, False) or upper not in (True, False):
            self._decline(original, entry, "`eigenvectors`/`upper` are not literals; " + entry["arguments"])
            return None
        uplo = keyword_arg("UPLO", cst.SimpleString('"U"' if upper else '"L"'))
        matrix = _arg(bound["input"].arg.value)
        if vectors:
            return _call(reference(self, "torch.linalg.eigh", self.forms), [matrix, uplo]), None
        if self.first.get(id(original)) in ("[0]", "eigenvalues"):
            eigvalsh = reference(self, "torch.linalg.eigvalsh", self.forms)
            self.pending[id(original)] = (_call(eigvalsh, [matrix, uplo]), None)
            self._retire(original)
            return None
        targets = self.unpacked.get(id(original))
        if self._unpackable(targets) and targets[1] == "_":
            eigvalsh = reference(self, "torch.linalg.eigvalsh", self.forms)
            self._unpack(original, [(targets[0], _call(eigvalsh, [matrix, uplo])), ("_", None)])
            return None
        self._decline(
            original, entry, "it returned (eigenvalues, empty tensor); use torch.linalg.eigvalsh(A, UPLO=...)"
        )
        return None

    def _solve(self, original: cst.Call, call: cst.Call, entry: dict):
        rhs, matrix = entry["positional"]  # torch.solve(B, A) / torch.gesv(B, A)
        bound = A.bind(call, entry["positional"])
        if A.has_star_args(call) or set(bound) != {rhs, matrix}:
            self._decline(original, entry, entry["arguments"])
            return None
        B, M = bound[rhs].arg.value, bound[matrix].arg.value

        def solve() -> cst.Call:
            return _call(reference(self, "torch.linalg.solve", self.forms), [_arg(M), _arg(B)])  # A first

        targets = self.unpacked.get(id(original))
        if self.first.get(id(original)) in ("[0]", "solution"):
            self.pending[id(original)] = (solve(), None)
            self._retire(original)
        elif self._unpackable(targets, M):
            # the LU it also returned is linalg.lu_factor's (LAPACK getrf of A, as gesv computed it)
            factor = None
            if targets[1] != "_":
                factor = _attr(_call(reference(self, "torch.linalg.lu_factor", self.forms), [_arg(M)]), "LU")
            self._unpack(original, [(targets[0], solve()), (targets[1], factor)])
        else:
            self._decline(
                original, entry, "it returned (solution, LU); torch.linalg.solve(A, B) returns the solution only"
                " (the LU of A: torch.linalg.lu_factor(A).LU)"
            )
        return None

    def _retire(self, original: cst.Call) -> None:
        retire(self, self.forms, head(original.func))

    def _matrix_rank(self, original: cst.Call, call: cst.Call, entry: dict):
        bound = A.bind(call, entry["positional"])
        if A.has_star_args(call) or set(bound) - set(entry["positional"]) or "input" not in bound:
            self._decline(original, entry, entry["arguments"])
            return None
        args = [_arg(bound["input"].arg.value)]
        if "tol" in bound:
            tol = number(bound["tol"].arg.value)
            if tol is None or tol <= 0:
                self._decline(original, entry, "only a positive literal `tol` maps exactly (to atol=)")
                return None
            args.append(_arg(bound["tol"].arg.value, "atol"))
        if "symmetric" in bound:
            args.append(_arg(bound["symmetric"].arg.value, "hermitian"))
        return _call(self._func(original.func, entry), args), None

    def _lu(self, original: cst.Call, call: cst.Call, entry: dict):
        """torch.lu / btrifact / btrifact_with_info -> linalg.lu_factor(_ex): the same tuple order."""
        positional = entry["positional"]
        bound = A.bind(call, positional)
        if A.has_star_args(call) or set(bound) - set(positional) or positional[0] not in bound:
            self._decline(original, entry, entry["arguments"])
            return None
        if "out" in bound or "info" in bound:
            self._decline(original, entry, "the out-argument has no counterpart; use LU, pivots, info ="
                          " torch.linalg.lu_factor_ex(A)")
            return None
        ex = entry["replacement"].endswith("_ex")
        if "get_infos" in bound:
            ex = A.literal(bound["get_infos"].arg.value)
            if ex not in (True, False):
                self._decline(
                    original, entry, "`get_infos` is not a literal: lu_factor_ex(A) if get_infos else lu_factor(A)"
                )
                return None
        if "pivot" in bound and A.literal(bound["pivot"].arg.value) is not True:
            # pivot=False (CUDA only): kept for a hand edit (tests/old_torch_probe.py cannot read
            # 1.13's `bool pivot=True` signature line, so `lu_factor(pivot)` has no checked minimum)
            self._decline(original, entry, "pivot=False: torch.linalg.lu_factor(A, pivot=False) (CUDA only)")
            return None
        args = [_arg(bound[positional[0]].arg.value)]
        func = self._func(original.func, {"replacement": f"torch.linalg.lu_factor{'_ex' if ex else ''}"})
        review = None if ex else "torch.linalg.lu_factor raises on a singular matrix, where the old call returned it"
        return _call(func, args), review

    def _lu_solve(self, original: cst.Call, call: cst.Call, entry: dict):
        positional = entry["positional"]
        args = list(call.args)
        if len(args) == 2 and not args[0].star and not args[0].keyword and args[1].star == "*":
            # the documented idiom `torch.lu_solve(b, *torch.lu(A))`: the (LU, pivots) pair first
            factors, b = args[1].with_changes(comma=cst.MaybeSentinel.DEFAULT), args[0]
            new = cst.Call(func=self._func(original.func, entry), args=[factors.with_changes(comma=cst.Comma(
                whitespace_after=cst.SimpleWhitespace(" "))), _arg(b.value)])
            return new, None
        bound = A.bind(call, positional)
        if A.has_star_args(call) or set(bound) != set(positional):
            self._decline(original, entry, entry["arguments"] + " (spell out b, LU and pivots; no out=)")
            return None
        b, lu, pivots = (bound[p].arg.value for p in positional)
        return _call(self._func(original.func, entry), [_arg(lu), _arg(pivots), _arg(b)]), None

    def _triangular_solve(self, original: cst.Call, call: cst.Call, entry: dict):
        """triangular_solve(b, A, upper=True, transpose=False, unitriangular=False) returned
        (X, A.clone()); linalg.solve_triangular(A, b, *, upper, left=True, unitriangular) returns X."""
        rhs, matrix, upper_p, transpose_p, unit_p = entry["positional"]
        bound = A.bind(call, entry["positional"])
        if A.has_star_args(call) or set(bound) - set(entry["positional"]) or {rhs, matrix} - set(bound):
            self._decline(original, entry, entry["arguments"])
            return None
        transpose = A.literal(bound[transpose_p].arg.value) if transpose_p in bound else False
        if transpose not in (True, False):
            self._decline(
                original, entry, "`transpose` is not a literal: solve with A.mT and upper=not upper when it is true"
            )
            return None
        B, M = bound[rhs].arg.value, bound[matrix].arg.value
        upper = bound[upper_p].arg.value if upper_p in bound else cst.Name("True")  # the old default
        targets = self.unpacked.get(id(original))
        use = self.first.get(id(original))
        solution = use in ("[0]", "solution")
        unpacked = self._unpackable(targets, M)
        if not (solution or unpacked):
            self._decline(
                original, entry, "it returned (solution, a copy of A); use the solution only: " + entry["arguments"]
            )
            return None
        if transpose and not self._tensor_attribute(original, "torch.Tensor.mT"):
            return None
        solved, upper = (_attr(M, "mT"), _negated(upper)) if transpose else (M, upper)  # A^T: the other triangle
        args = [_arg(solved), _arg(B), _arg(upper, "upper")]
        if unit_p in bound and A.literal(bound[unit_p].arg.value) is not False:
            args.append(_arg(bound[unit_p].arg.value, "unitriangular"))
        new = _call(self._func(original.func, entry), args)
        if solution:
            self.pending[id(original)] = (new, None)
        else:
            copy = None if targets[1] == "_" else _call(_attr(M, "clone"), [])
            self._unpack(original, [(targets[0], new), (targets[1], copy)])
        return None

    def _svd(self, original: cst.Call, call: cst.Call, entry: dict):
        """torch.svd(A, some=True) returned (U, S, V); linalg.svd(A, full_matrices) returns
        (U, S, Vh) with Vh = V.mH (torch.svd itself is linalg.svd plus that .mH today)."""
        bound = A.bind(call, entry["positional"])
        if A.has_star_args(call) or set(bound) - set(entry["positional"]) or "input" not in bound:
            self._decline(original, entry, entry["arguments"])
            return None
        if "compute_uv" in bound and A.literal(bound["compute_uv"].arg.value) is not True:
            self._decline(
                original, entry, "with compute_uv=False U and V were zero-filled: S = torch.linalg.svdvals(A)"
            )
            return None
        some = bound["some"].arg.value if "some" in bound else cst.Name("True")
        use, targets = self.first.get(id(original)), self.unpacked.get(id(original))
        rebinds = targets is not None and len(targets) == 3 and targets[2] != "_"
        if not (use in ("[0]", "[1]", "[2]", "U", "S", "V") or (targets is not None and len(targets) == 3)):
            self._decline(original, entry, "its V is linalg.svd's Vh.mH: U, S, Vh = torch.linalg.svd(A,"
                          " full_matrices=not some) and V = Vh.mH where V is read")
            return None
        if (use in ("[2]", "V") or rebinds) and not self._tensor_attribute(original, "torch.Tensor.mH"):
            return None
        matrix = bound["input"].arg.value
        new = _call(self._func(original.func, entry), [_arg(matrix), _arg(_negated(some), "full_matrices")])
        if use in ("[2]", "V"):
            self.pending[id(original)] = (_attr(new, "Vh", "mH"), None)
            return None
        if rebinds:
            self._restate(original, targets, new, after=(targets[2],))
            return None
        return new, None

    def _norm(self, original: cst.Call, call: cst.Call, entry: dict):
        """torch.norm is linalg.vector_norm for a numeric p, no p, or 'fro' (torch/functional.py)."""
        bound = A.bind(call, entry["positional"])
        if A.has_star_args(call) or set(bound) - set(entry["positional"]) or "input" not in bound or "out" in bound:
            self._decline(original, entry, entry["arguments"])
            return None
        p = bound["p"].arg.value if "p" in bound else None
        order, replacement = None, "torch.linalg.vector_norm"
        if p is None or A.literal(p) is None:
            pass
        elif isinstance(p, cst.SimpleString) and p.evaluated_value in ("fro", "nuc"):
            if p.evaluated_value == "nuc":
                order, replacement = p, "torch.linalg.matrix_norm"
        elif self._number(p):
            order = p
        else:
            self._decline(
                original, entry, "`p` is not a numeric literal: a string p is a matrix norm"
                " (torch.linalg.matrix_norm), a number a vector norm (torch.linalg.vector_norm)"
            )
            return None
        args = [_arg(bound["input"].arg.value)] + ([_arg(order)] if order is not None else [])
        args += [_arg(bound[k].arg.value, k) for k in ("dim", "keepdim", "dtype") if k in bound]
        new = _call(self._func(original.func, {"replacement": replacement}), args)
        return new, "exact for dense tensors; torch.linalg norms refuse sparse ones, where torch.norm took them"

    def _number(self, expr: cst.BaseExpression) -> bool:
        """An int/float literal, or infinity (`float("inf")`, `math.inf`), possibly negated."""
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
            expr = expr.expression
        if number(expr) is not None:
            return True
        if (
            isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "float"
            and len(expr.args) == 1 and isinstance(expr.args[0].value, cst.SimpleString)
        ):
            return expr.args[0].value.evaluated_value.strip().lower().lstrip("+-") in ("inf", "infinity")
        return self.qualified_name(expr) in _INF

    def _potrf(self, original: cst.Call, call: cst.Call, entry: dict):
        """potrf/potrs/potri defaulted to upper=True; their replacements default to upper=False."""
        positional = entry["positional"]
        inputs = positional[: positional.index("upper")]
        bound = A.bind(call, positional)
        if A.has_star_args(call) or set(bound) - set(positional) or set(inputs) - set(bound) or "out" in bound:
            self._decline(original, entry, entry["arguments"])
            return None
        upper = bound["upper"].arg.value if "upper" in bound else cst.Name("True")
        args = [_arg(bound[p].arg.value) for p in inputs]
        if not (entry["replacement"] == "torch.linalg.cholesky" and A.literal(upper) is False):
            args.append(_arg(upper, "upper"))
        return _call(self._func(original.func, entry), args), None

    def _set_default_tensor_type(self, original: cst.Call, call: cst.Call, entry: dict):
        bound = A.bind(call, entry["positional"])
        if set(bound) != {"t"} or A.has_star_args(call):
            self._decline(original, entry, entry["arguments"])
            return None
        value = bound["t"].arg.value
        kind = value.evaluated_value if isinstance(value, cst.SimpleString) else self.qualified_name(value)
        if isinstance(kind, str) and kind.startswith("torch.cuda."):
            return None  # TM101 (cuda-to-device) owns the CUDA tensor types
        dtype = _CPU_TYPES.get(kind) if isinstance(kind, str) else None
        if dtype is None:
            self._decline(original, entry, "use torch.set_default_dtype(<float dtype>) (and torch.set_default_device)")
            return None
        new = _call(self._func(original.func, entry), [_arg(reference(self, dtype, self.forms))])
        return new, "set_default_tensor_type also made CPU the default device; add torch.set_default_device if needed"

    def _assert_allclose(self, original: cst.Call, call: cst.Call, entry: dict):
        bound = A.bind(call, entry["positional"])
        if A.has_star_args(call) or "rtol" not in bound or "atol" not in bound:
            self._decline(
                original,
                entry,
                "assert_close has tighter default tolerances; pass them explicitly, e.g."
                " assert_close(actual, expected, rtol=1e-4, atol=1e-5, equal_nan=True, check_dtype=False)"
                " for float32",
            )
            return None
        value = lambda p: bound[p].arg.value  # noqa: E731
        args = [_arg(value("actual")), _arg(value("expected"))]
        args += [_arg(value("rtol"), "rtol"), _arg(value("atol"), "atol")]
        args.append(_arg(value("equal_nan") if "equal_nan" in bound else cst.Name("True"), "equal_nan"))
        args += [_arg(cst.Name("False"), "check_dtype"), _arg(cst.Name("False"), "check_stride")]
        if "msg" in bound:
            msg = A.literal(value("msg"))
            if msg != "":
                args.append(_arg(value("msg") if isinstance(msg, str) else cst.parse_expression(
                    f"({self.code_for(value('msg'))}) or None"), "msg"))
        new = _call(self._func(original.func, entry), args)
        return new, "assert_close does not convert numbers or lists: both sides must be tensors"
