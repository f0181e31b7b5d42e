"""TM006: deprecated and removed torch APIs -> their replacements, from codemods/data/deprecated_api.json."""

from __future__ import annotations

import libcst as cst

from codemods.gates.deprecated_api import table
from codemods.helpers import args as A
from codemods.helpers.codemod import MigrationCodemod
from codemods.helpers.keywords import append_args, keyword_arg
from codemods.helpers.spelling import head, import_forms, reference, retire

_INT_FUNCS = frozenset({"len", "int"})
_INT_OPS = (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide)
# set_default_tensor_type's CPU tensor types -> dtypes. CUDA types belong to TM101 (cuda-to-device).
_CPU_TYPES = {"torch.FloatTensor": "torch.float32", "torch.DoubleTensor": "torch.float64"}


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
    `linalg.multi_dot`, `torch.qr`/`cholesky`/`matrix_rank`/`symeig`/`solve` -> `torch.linalg`,
    `assert_allclose` -> `assert_close`, `set_default_tensor_type` -> `set_default_dtype`.

    ## Why is this bad?
    The old names warn on every call, and several (`symeig`, `solve`, `matrix_rank`, `eig`,
    `lstsq`) now raise instead of computing anything.

    ## Example
    ```python
    y = F.upsample_bilinear(x, scale_factor=2)
    nn.init.xavier_uniform(layer.weight)
    idx = torch.range(0, n - 1)
    x = torch.solve(b, A)[0]
    ```

    ## Use instead
    ```python
    y = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)
    nn.init.xavier_uniform_(layer.weight)
    idx = torch.arange(0, n, dtype=torch.get_default_dtype())
    x = torch.linalg.solve(A, b)
    ```

    ## Fix safety
    Per entry (see the table). A call is rewritten only where the result is the same: the same
    values, shape and dtype (`torch.range` returned the default float dtype, so `dtype=` is kept;
    `symeig`/`solve` returned pairs, so only `[0]`/`.eigenvalues`/`.solution` uses are rewritten).
    `torch.range` with a non-literal step, `torch.eig` and `torch.lstsq` (whose results have another
    shape) and anything else that cannot be mapped exactly are findings with a suggestion.
    `torch.range` whose bounds are not provably integers, `assert_allclose` (`assert_close` does
    not convert lists or numbers) and `set_default_tensor_type` (which also reset the default
    device) are applied for review.

    ## References
    - https://github.com/pytorch/pytorch/issues/70081 (the `torch.linalg` migration guide)
    - https://github.com/pytorch/pytorch/issues/61844 (`assert_allclose` -> `assert_close`)
    - https://pytorch.org/docs/stable/generated/torch.range.html
    """

    CODE = "TM006"
    PRUNE = True  # its sites are the deprecated names on trigger lines

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        self.forms = import_forms(tree)
        self.first: dict[int, str] = {}  # id of a call -> "[0]" or the attribute read from its result
        self.pending: dict[int, tuple[cst.BaseExpression, str | None]] = {}
        self._names: set[str] | None = None
        self._tree = tree
        return super().transform_module_impl(tree)

    # -- spelling the replacement ------------------------------------------------------------

    def _module_names(self) -> set[str]:
        if self._names is None:
            names: set[str] = set()

            class Names(cst.CSTVisitor):
                def visit_Name(self, node: cst.Name) -> None:
                    names.add(node.value)

            self._tree.visit(Names())
            self._names = names
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
            and int_value(node.slice[0].slice.value) == 0
        ):
            self.first[id(node.value)] = "[0]"

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if isinstance(node.value, cst.Call) and node.attr.value in ("eigenvalues", "solution"):
            self.first[id(node.value)] = node.attr.value

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
            return updated_node
        handler = getattr(self, f"_{entry['handler']}")
        outcome = handler(original_node, updated_node, entry)
        if outcome is None:
            return updated_node
        replacement, review = outcome
        return self.rewrite(original_node, updated_node, replacement, review=review)

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
        self._decline(
            original, entry, "it returned (eigenvalues, empty tensor); use torch.linalg.eigvalsh(A, UPLO=...)"
        )
        return None

    def _solve(self, original: cst.Call, call: cst.Call, entry: dict):
        bound = A.bind(call, entry["positional"])
        if A.has_star_args(call) or set(bound) != {"input", "A"}:
            self._decline(original, entry, entry["arguments"])
            return None
        if self.first.get(id(original)) not in ("[0]", "solution"):
            self._decline(
                original, entry, "it returned (solution, LU); torch.linalg.solve(A, B) returns the solution only"
            )
            return None
        solve = reference(self, "torch.linalg.solve", self.forms)
        new = _call(solve, [_arg(bound["A"].arg.value), _arg(bound["input"].arg.value)])  # A first
        self.pending[id(original)] = (new, None)
        self._retire(original)
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
