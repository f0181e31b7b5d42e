"""TM906 numerics: its declaration (SPEC) and trigger regexes and AST gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

import ast

from codemods.gates import Gate, Safety, Spec, Stage
from codemods.helpers.scan import Scan, ast_star_args


def triggers() -> tuple[str, ...]:
    # every site has a call of `log` or `exp` (function or method) on a trigger line, or of a
    # name an import on a trigger line binds (`from torch import log as tlog`)
    return (r"\blog\s*\(", r"\bexp\s*\(", r"\bimport\s[^\n]*\b(?:log|exp)\b")


def _is_one(expr: ast.expr) -> bool:
    """The codemod's `_is_one`: an int or float literal equal to 1 (`1`, `1.0`, `1e0`; not `True`,
    which libcst reads as a name)."""
    return isinstance(expr, ast.Constant) and type(expr.value) in (int, float) and expr.value == 1


def _single_arg(call: ast.Call) -> ast.expr | None:
    """The argument of `f(x)` (one positional argument, nothing else), else None."""
    if len(call.args) == 1 and not call.keywords and not isinstance(call.args[0], ast.Starred):
        return call.args[0]
    return None


def _operands(node: ast.AST, scan: Scan, function: str) -> list[ast.expr]:
    """What the codemod's `_torch_call` may return for `node`: the `x` of `torch.<function>(x)`
    (one positional argument only) and of the method call `x.<function>()` (no arguments). Both
    readings are kept where the imports leave it open (a superset of libcst's resolution)."""
    if not isinstance(node, ast.Call):
        return []
    found = []
    if f"torch.{function}" in scan.qualified(node.func) and (x := _single_arg(node)) is not None:
        found.append(x)
    if isinstance(node.func, ast.Attribute) and node.func.attr == function and not node.args and not node.keywords:
        found.append(node.func.value)
    return found


def _may_be_log1p(inner: ast.BinOp) -> bool:
    """The codemod's `_log1p`: `1 + x`, `x + 1` or `1 - x`."""
    if isinstance(inner.op, ast.Add):
        return _is_one(inner.left) or _is_one(inner.right)
    return isinstance(inner.op, ast.Sub) and _is_one(inner.left)


def _may_be_logsumexp(total: ast.Call, scan: Scan) -> bool:
    """The codemod's `_logsumexp`: `torch.sum(<exp>, dim, keepdim)` or `<exp>.sum(dim, keepdim)`,
    no `*`/`**`, no keyword but input/dim/keepdim, where <exp> is an exp call."""
    if ast_star_args(total):
        return False
    if any(k.arg not in ("input", "dim", "keepdim") for k in total.keywords):
        return False
    summed = []
    if "torch.sum" in scan.qualified(total.func):
        summed += total.args[:1] + [k.value for k in total.keywords if k.arg == "input"]
    if isinstance(total.func, ast.Attribute) and total.func.attr == "sum":
        summed.append(total.func.value)
    return any(_operands(exps, scan, "exp") for exps in summed)


def _may_report(node: ast.AST, scan: Scan) -> bool:
    """A superset of the codemod's reports: `exp(x) - 1`; `log(1 + x)`, `log(x + 1)`,
    `log(1 - x)`; `log(sum(exp(x)))`, each in its function and method spellings."""
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, ast.Sub) and _is_one(node.right) and bool(_operands(node.left, scan, "exp"))
    for inner in _operands(node, scan, "log"):
        if isinstance(inner, ast.BinOp) and _may_be_log1p(inner):
            return True
        if isinstance(inner, ast.Call) and _may_be_logsumexp(inner, scan):
            return True
    return False


def may_act(scan: Scan, words, facts) -> bool:
    return any(_may_report(node, scan) for node in scan.nodes(words))


GATE = Gate(may_act=may_act)


SPEC = Spec(
    code="TM906",
    name="numerics",
    stage=Stage.CHECK,
    safety=Safety.SAFE,
    target="codemods.transforms.numerics:Numerics",
    triggers=triggers(),
    summary="torch.log(1 + x) -> log1p, torch.exp(x) - 1 -> expm1, log(sum(exp(x))) -> logsumexp",
    gate=GATE,
)
