"""TM000 legacy-syntax: its declaration and trigger regexes (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from codemods.gates import Safety, Spec, Stage


def triggers() -> tuple[str, ...]:
    return (r"\basync\b",)


SPEC = Spec(
    code="TM000",
    name="legacy-syntax",
    stage=Stage.TEXT,
    safety=Safety.SAFE,
    target="codemods.transforms.legacy_syntax:LegacySyntax",
    triggers=triggers(),
    summary="x.cuda(async=True) -> x.cuda(non_blocking=True), before parsing",
)
