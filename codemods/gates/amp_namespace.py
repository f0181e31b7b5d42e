"""TM004 amp-namespace: its declaration (SPEC) and trigger regexes (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from codemods.gates import Safety, Spec, Stage


def triggers() -> tuple[str, ...]:
    return (
        r"\b(?:cuda|cpu)\.amp\b",
        r"\bfrom\s+torch\.(?:cuda|cpu)\s+import\b",
        r"\bimport\s+torch\.(?:cuda|cpu)\s+as\b",
    )


SPEC = Spec(
    code="TM004",
    name="amp-namespace",
    stage=Stage.REWRITE,
    safety=Safety.SAFE,
    target="codemods.transforms.amp_namespace:AmpNamespace",
    triggers=triggers(),
    summary='torch.cuda.amp.autocast() -> torch.amp.autocast("cuda")',
    emits=(
        "torch.autocast",
        "torch.amp.autocast",
        "torch.amp.GradScaler",
        "torch.amp.custom_fwd",
        "torch.amp.custom_bwd",
    ),
)
