"""TM010 autograd-function: its declaration (SPEC) and trigger regexes and AST gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

import ast

from codemods.gates import Gate, Safety, Spec, Stage
from codemods.helpers.scan import Scan

FUNCTION_BASES = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})


def triggers() -> tuple[str, ...]:
    # The class header names its base (`Function`, `autograd.Function`, or a name an import of
    # `Function` bound, which Scan.hits follows); the AST gate then wants a legacy method.
    return (r"\bFunction\b",)


def _is_static(method: ast.FunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in method.decorator_list)


def _legacy(node: ast.ClassDef, scan: Scan) -> bool:
    """A superset of the classes TM010 converts or reports: a base that may be torch's
    `Function`, and a `forward` or `backward` that is not a staticmethod."""
    if not any(scan.qualified(base) & FUNCTION_BASES for base in node.bases):
        return False
    return any(
        isinstance(item, ast.FunctionDef) and item.name in ("forward", "backward") and not _is_static(item)
        for item in node.body
    )


def may_act(scan: Scan, words, facts) -> bool:
    return any(isinstance(node, ast.ClassDef) and _legacy(node, scan) for node in scan.nodes(words))


GATE = Gate(may_act=may_act)


SPEC = Spec(
    code="TM010",
    name="autograd-function",
    stage=Stage.REWRITE,
    safety=Safety.REVIEW,
    target="codemods.transforms.autograd_function:AutogradFunction",
    triggers=triggers(),
    # whether another file imports the class decides its rewrite (a callable wrapper under the
    # old name), so the per-file cache keys on the repository's facts
    facts=("imported_names",),
    summary="legacy Function with instance forward/backward -> @staticmethod forward(ctx, ...); Fn(a)(x) -> Fn.apply(x, a)",
    gate=GATE,
)
