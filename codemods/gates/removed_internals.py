"""TM008 removed-internals: its declaration (SPEC) and trigger regexes (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from functools import lru_cache

from codemods.gates import Safety, Spec, Stage, data_table
from codemods.gates.python_compat import _attribute_or_import


@lru_cache(maxsize=None)
def table() -> dict:
    return data_table("removed_internals.json")


def triggers() -> tuple[str, ...]:
    t = table()
    names = {k.rsplit(".", 1)[1] for part in ("renames", "helpers", "removed") for k in t[part]}
    return (
        *_attribute_or_import("|".join(sorted(names))),
        # Type-name tests: only a comparison of the name can be one.
        r"__class__\s*\.\s*__name__\s*(?:[!=]=|(?:not\s+)?in\b)",
        r"type\([^()]*\)\s*\.\s*__name__\s*(?:[!=]=|(?:not\s+)?in\b)",
        r"\.type\(\)",
    )


SPEC = Spec(
    code="TM008",
    name="removed-internals",
    stage=Stage.REWRITE,
    safety=Safety.SAFE,
    target="codemods.transforms.removed_internals:RemovedInternals",
    triggers=triggers(),
    summary="_LRScheduler -> LRScheduler, private DataLoader paths, zero_gradients, type-name tests -> dtype",
    emits=(
        "torch.hub.load_state_dict_from_url",
        "torch.utils.data.get_worker_info",
        "torch.utils.data.default_collate",
        "torch.utils.data.default_convert",
        "torch.optim.lr_scheduler.LRScheduler",
    ),
)
