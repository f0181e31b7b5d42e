"""TM006: deprecated and removed torch APIs -> their replacements, from codemods/data/deprecated_api.json.

This module holds the codemod: the table lookup, the generic handlers (renames, findings), and
the results a statement unpacks or reads through `[0]`/`.solution`. The special handlers are in
`linalg` and `torch_handlers`; `expressions` holds the expression helpers they share."""

from __future__ import annotations

import libcst as cst

from codemods.gates.deprecated_api import REMOVED_METHODS, table
from codemods.helpers import arguments
from codemods.base import MigrationCodemod
from codemods.helpers.names import every_name
from codemods.helpers.arguments import append_args, keyword_arg
from codemods.helpers.spelling import head, import_forms, reference, respelled, retire
from codemods.helpers.statements import reference as reference_key
from codemods.transforms.deprecated_api.expressions import _attr, _tuple, int_value
from codemods.transforms.deprecated_api.linalg import LinalgHandlers
from codemods.transforms.deprecated_api.torch_handlers import TorchHandlers
from codemods.base import traverse


# Fields of the old result tuples a use may read (`torch.solve(b, A).solution`, `torch.svd(A).V`).
_FIELDS = frozenset({"eigenvalues", "solution", "U", "S", "V", "cloned_coefficient"})


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


class DeprecatedApi(LinalgHandlers, TorchHandlers, MigrationCodemod):
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
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    y = F.upsample_bilinear(x, scale_factor=2)
    nn.init.xavier_uniform(layer.weight)
    idx = torch.range(0, n - 1)
    x = torch.solve(b, A)[0]
    U, S, V = torch.svd(A)
    y, _ = torch.triangular_solve(b, R, transpose=True)
    ```

    ## Use instead
    ```python
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

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
        return respelled(self, original_func, new) or reference(self, new, self.forms)

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
            traverse(self._tree, visitor)
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
        if changes_args and arguments.has_star_args(call):
            self._decline(original, entry, f"*args/**kwargs hide the arguments; {entry['arguments']}")
            return None
        bound = arguments.bind(call, entry["positional"])
        if entry["keyword_from"] is not None:
            for param in entry["positional"][entry["keyword_from"] :]:
                if param in bound and bound[param].positional:
                    args[bound[param].index] = arguments.as_keyword(args[bound[param].index], param)
        for old, new in entry["rename"].items():
            if old in bound:
                args[bound[old].index] = args[bound[old].index].with_changes(keyword=cst.Name(new))
        extra = [keyword_arg(k, cst.parse_expression(v)) for k, v in entry["add"] if k not in bound]
        new_call = append_args(call.with_changes(args=args), extra)
        return new_call.with_changes(func=self._func(original.func, entry)), None

    def _finding(self, original: cst.Call, call: cst.Call, entry: dict):
        self._decline(original, entry, entry["arguments"])
        return None

    def _retire(self, original: cst.Call) -> None:
        retire(self, self.forms, head(original.func))
