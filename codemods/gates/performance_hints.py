"""TM907 performance-hints: its declaration (SPEC) and trigger regexes and names (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from codemods.gates import Safety, Spec, Stage
DATALOADERS = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
# DataLoader's positional parameters up to num_workers
LOADER_POSITIONAL = ("dataset", "batch_size", "shuffle", "sampler", "batch_sampler", "num_workers")


def triggers() -> tuple[str, ...]:
    return (r"\bDataLoader\b", r"\bset_to_none\s*=\s*False\b", r"\bzero_grad\s*\(\s*False\b")


SPEC = Spec(
    code="TM907",
    name="performance-hints",
    stage=Stage.CHECK,
    safety=Safety.SAFE,
    target="codemods.transforms.performance_hints:PerformanceHints",
    triggers=triggers(),
    summary="DataLoader without num_workers; zero_grad(set_to_none=False)",
)
