"""TM007 torch-six: its declaration (SPEC) and trigger regexes (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from codemods.gates import Safety, Spec, Stage


def triggers() -> tuple[str, ...]:
    return (r"_six\b",)  # a literal first: `re` scans for it fast


SPEC = Spec(
    code="TM007",
    name="torch-six",
    stage=Stage.REWRITE,
    safety=Safety.SAFE,
    target="codemods.transforms.torch_six:TorchSix",
    triggers=triggers(),
    summary="from torch._six import string_classes -> (str, bytes), and the rest of torch._six",
)
