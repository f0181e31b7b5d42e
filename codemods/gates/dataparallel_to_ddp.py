"""TM103 dataparallel-to-ddp, before parsing: its trigger regexes and gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from codemods.gates import Gate, Safety, Spec, Stage


def triggers() -> tuple[str, ...]:
    return (r"\bDataParallel\b",)


GATE = Gate(uses_repo_facts=True)


SPEC = Spec(
    code="TM103",
    name="dataparallel-to-ddp",
    stage=Stage.REWRITE,
    safety=Safety.REVIEW,
    target="codemods.transforms.dataparallel_to_ddp:DataParallelToDDP",
    triggers=triggers(),
    summary="nn.DataParallel(model) -> DDP scaffolding that runs as one process or under torchrun",
    gate=GATE,
    emits=(
        "torch.distributed.run",
        "torch.utils.data.distributed.DistributedSampler(shuffle)",
    ),
)
