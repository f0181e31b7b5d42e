"""TM013 removed-keywords: its declaration (SPEC) and trigger regexes (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from codemods.gates import Safety, Spec, Stage


def triggers() -> tuple[str, ...]:
    # The old keywords themselves: a file without one has nothing to rename.
    return (r"\bretain_variables\b", r"\bgrad_variables\b", r"\bonly_inputs\b", r"\bvariables\s*=")


SPEC = Spec(
    code="TM013",
    name="removed-keywords",
    stage=Stage.REWRITE,
    safety=Safety.SAFE,
    target="codemods.transforms.removed_keywords:RemovedKeywords",
    triggers=triggers(),
    summary="loss.backward(retain_variables=True) -> retain_graph=True; autograd.backward(variables=, grad_variables=)",
)
