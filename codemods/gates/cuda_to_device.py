"""TM101 cuda-to-device, before parsing: its trigger regexes and gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from functools import lru_cache

from codemods.gates import Gate, data_table


@lru_cache(maxsize=None)
def legacy_tensor_types() -> dict[str, str]:
    """`FloatTensor` -> `float32`, from codemods/data/legacy_tensor_types.json."""
    return data_table("legacy_tensor_types.json")


def triggers() -> tuple[str, ...]:
    types = "|".join(sorted(legacy_tensor_types()))
    return (r"\.cuda\s*\(", rf"\bcuda\.(?:{types})\b", r"\bfrom\s+torch\.cuda\s+import\b", r"\bimport\s+torch\.cuda\b", r"\bset_default_tensor_type\b")


GATE = Gate(uses_repo_facts=True)
