"""TM908 import-style: its declaration (SPEC) and trigger regexes (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from codemods.gates import Safety, Spec, Stage
# `import torchvision.<sub> as <sub>`: the modules TorchFix's TOR203 names
SUBMODULES = ("models", "datasets", "transforms")
LIBRARIES = frozenset({"torch.library.Library"})


def triggers() -> tuple[str, ...]:
    return (r"\bimport\s+torchvision\.(?:models|datasets|transforms)\s+as\b", r"\bLibrary\s*\(")


SPEC = Spec(
    code="TM908",
    name="import-style",
    stage=Stage.CHECK,
    safety=Safety.SAFE,
    target="codemods.transforms.import_style:ImportStyle",
    triggers=triggers(),
    summary="import torchvision.models as models -> from torchvision import models; torch.library.Library in tests",
)
