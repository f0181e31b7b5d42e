"""TM006's handlers for the `torch.linalg` migration: `chain_matmul`, `qr`, `symeig`, `solve`,
`matrix_rank`, `lu`, `lu_solve`, `triangular_solve`, `svd`, `norm` and the 0.4 names (`potrf`
& co.), each with the old argument order and defaults mapped onto the new function."""

from __future__ import annotations

import libcst as cst

from codemods.helpers import arguments
from codemods.helpers.arguments import keyword_arg
from codemods.helpers.spelling import reference
from codemods.transforms.deprecated_api.expressions import _arg, _attr, _call, _negated, number


_INF = frozenset({"math.inf", "numpy.inf", "numpy.Inf", "torch.inf"})


class LinalgHandlers:
    """The handlers `DeprecatedApi.leave_Call` picks by the table's `handler` (`self` is the
    codemod): each returns (replacement, review) or None, declining with a finding."""

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
        bound = arguments.bind(call, entry["positional"])
        if arguments.has_star_args(call):
            self._decline(original, entry, entry["arguments"])
            return None
        args = list(call.args)
        if "some" in bound:
            some = arguments.literal(bound["some"].arg.value)
            if some not in (True, False):
                self._decline(original, entry, 'mode="reduced" if some else "complete": `some` is not a literal')
                return None
            at = bound["some"].index
            if some:
                args = arguments.remove_args(args, {at})
            else:
                args[at] = arguments.as_keyword(args[at], "mode").with_changes(
                    keyword=cst.Name("mode"), value=cst.SimpleString('"complete"')
                )
        return call.with_changes(func=self._func(original.func, entry), args=args), None

    def _symeig(self, original: cst.Call, call: cst.Call, entry: dict):
        bound = arguments.bind(call, entry["positional"])
        if arguments.has_star_args(call) or set(bound) - set(entry["positional"]) or "input" not in bound:
            self._decline(original, entry, entry["arguments"])
            return None
        vectors = arguments.literal(bound["eigenvectors"].arg.value) if "eigenvectors" in bound else False
        upper = arguments.literal(bound["upper"].arg.value) if "upper" in bound else True
        if vectors not in (True, False) or upper not in (True, False):
            self._decline(original, entry, "`eigenvectors`/`upper` are not literals; " + entry["arguments"])
            return None
        uplo = keyword_arg("UPLO", cst.SimpleString('"U"' if upper else '"L"'))
        matrix = _arg(bound["input"].arg.value)
        if vectors:  # in the call's own layout (`torch.symeig(\n    m, eigenvectors=True)`)
            return arguments.with_args(call.with_changes(func=reference(self, "torch.linalg.eigh", self.forms)), [matrix, uplo]), None
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
        bound = arguments.bind(call, entry["positional"])
        if arguments.has_star_args(call) or set(bound) != {rhs, matrix}:
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

    def _matrix_rank(self, original: cst.Call, call: cst.Call, entry: dict):
        bound = arguments.bind(call, entry["positional"])
        if arguments.has_star_args(call) or set(bound) - set(entry["positional"]) or "input" not in bound:
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
        bound = arguments.bind(call, positional)
        if arguments.has_star_args(call) or set(bound) - set(positional) or positional[0] not in bound:
            self._decline(original, entry, entry["arguments"])
            return None
        if "out" in bound or "info" in bound:
            self._decline(original, entry, "the out-argument has no counterpart; use LU, pivots, info ="
                          " torch.linalg.lu_factor_ex(A)")
            return None
        ex = entry["replacement"].endswith("_ex")
        if "get_infos" in bound:
            ex = arguments.literal(bound["get_infos"].arg.value)
            if ex not in (True, False):
                self._decline(
                    original, entry, "`get_infos` is not a literal: lu_factor_ex(A) if get_infos else lu_factor(A)"
                )
                return None
        if "pivot" in bound and arguments.literal(bound["pivot"].arg.value) is not True:
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
        bound = arguments.bind(call, positional)
        if arguments.has_star_args(call) or set(bound) != set(positional):
            self._decline(original, entry, entry["arguments"] + " (spell out b, LU and pivots; no out=)")
            return None
        b, lu, pivots = (bound[p].arg.value for p in positional)
        return _call(self._func(original.func, entry), [_arg(lu), _arg(pivots), _arg(b)]), None

    def _triangular_solve(self, original: cst.Call, call: cst.Call, entry: dict):
        """triangular_solve(b, A, upper=True, transpose=False, unitriangular=False) returned
        (X, A.clone()); linalg.solve_triangular(A, b, *, upper, left=True, unitriangular) returns X."""
        rhs, matrix, upper_p, transpose_p, unit_p = entry["positional"]
        bound = arguments.bind(call, entry["positional"])
        if arguments.has_star_args(call) or set(bound) - set(entry["positional"]) or {rhs, matrix} - set(bound):
            self._decline(original, entry, entry["arguments"])
            return None
        transpose = arguments.literal(bound[transpose_p].arg.value) if transpose_p in bound else False
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
        if unit_p in bound and arguments.literal(bound[unit_p].arg.value) is not False:
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
        bound = arguments.bind(call, entry["positional"])
        if arguments.has_star_args(call) or set(bound) - set(entry["positional"]) or "input" not in bound:
            self._decline(original, entry, entry["arguments"])
            return None
        if "compute_uv" in bound and arguments.literal(bound["compute_uv"].arg.value) is not True:
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
        bound = arguments.bind(call, entry["positional"])
        if arguments.has_star_args(call) or set(bound) - set(entry["positional"]) or "input" not in bound or "out" in bound:
            self._decline(original, entry, entry["arguments"])
            return None
        p = bound["p"].arg.value if "p" in bound else None
        order, replacement = None, "torch.linalg.vector_norm"
        if p is None or arguments.literal(p) is None:
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
        bound = arguments.bind(call, positional)
        if arguments.has_star_args(call) or set(bound) - set(positional) or set(inputs) - set(bound) or "out" in bound:
            self._decline(original, entry, entry["arguments"])
            return None
        upper = bound["upper"].arg.value if "upper" in bound else cst.Name("True")
        args = [_arg(bound[p].arg.value) for p in inputs]
        if not (entry["replacement"] == "torch.linalg.cholesky" and arguments.literal(upper) is False):
            args.append(_arg(upper, "upper"))
        return _call(self._func(original.func, entry), args), None
