"""TM101 cuda-to-device: its declaration (SPEC) and, before parsing, its trigger regexes and gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from functools import lru_cache

from codemods.gates import Safety, Spec, Stage, data_table


@lru_cache(maxsize=None)
def legacy_tensor_types() -> dict[str, str]:
    """`FloatTensor` -> `float32`, from codemods/data/legacy_tensor_types.json."""
    return data_table("legacy_tensor_types.json")


def triggers() -> tuple[str, ...]:
    types = "|".join(sorted(legacy_tensor_types()))
    return (r"\.cuda\s*\(", rf"\bcuda\.(?:{types})\b", r"\bfrom\s+torch\.cuda\s+import\b", r"\bimport\s+torch\.cuda\b", r"\bset_default_tensor_type\b")


SPEC = Spec(
    code="TM101",
    name="cuda-to-device",
    stage=Stage.REWRITE,
    safety=Safety.SAFE,
    target="codemods.transforms.cuda_to_device:CudaToDevice",
    triggers=triggers(),
    facts=("module_classes", "cuda_classes", "gpu_selectors"),  # gpu_selectors: where the device goes
    summary="x.cuda() -> x.to(device); torch.cuda.FloatTensor(n) -> torch.empty(n, dtype=..., device=device)",
    emits=(
        "torch.set_default_device",
    ),
)
