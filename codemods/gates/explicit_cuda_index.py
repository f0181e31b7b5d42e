"""TM904 explicit-cuda-index: its declaration (SPEC) and trigger regexes (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from codemods.gates import Safety, Spec, Stage


def triggers() -> tuple[str, ...]:
    return (r"\.cuda\s*\(\s*[^)\s]",)


SPEC = Spec(
    code="TM904",
    name="explicit-cuda-index",
    stage=Stage.CHECK,
    safety=Safety.SAFE,
    target="codemods.transforms.explicit_cuda_index:ExplicitCudaIndex",
    triggers=triggers(),
    summary=".cuda(i) with an explicit device index fails without CUDA",
)
