"""TM005 checkpoint-reentrant: its declaration (SPEC) and trigger regexes (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from codemods.gates import Safety, Spec, Stage


def triggers() -> tuple[str, ...]:
    # Only a file that imports torch's checkpoint module can call it; the bare word "checkpoint"
    # is in most training scripts (saving one), which made this fire on most of a corpus.
    return (r"utils\.checkpoint", r"utils\s+import\s+\(?[^)\n]*\bcheckpoint")


SPEC = Spec(
    code="TM005",
    name="checkpoint-reentrant",
    stage=Stage.REWRITE,
    safety=Safety.SAFE,
    target="codemods.transforms.checkpoint_reentrant:CheckpointReentrant",
    triggers=triggers(),
    summary="checkpoint(fn, x) -> checkpoint(fn, x, use_reentrant=True)",
    emits=(
        "torch.utils.checkpoint.checkpoint(use_reentrant)",
        "torch.utils.checkpoint.checkpoint_sequential(use_reentrant)",
    ),
)
