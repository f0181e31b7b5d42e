"""TM103 dataparallel-to-ddp: its declaration (SPEC) and, before parsing, its trigger regexes and gate (no libcst; see gates/__init__.py)."""

from __future__ import annotations

from codemods.gates import Safety, Spec, Stage


def triggers() -> tuple[str, ...]:
    return (r"\bDataParallel\b",)


SPEC = Spec(
    code="TM103",
    name="dataparallel-to-ddp",
    stage=Stage.REWRITE,
    safety=Safety.REVIEW,
    target="codemods.transforms.dataparallel_to_ddp:DataParallelToDDP",
    triggers=triggers(),
    facts=("module_classes", "gpu_selectors"),  # gpu_selectors: ddp_setup() goes after the GPU selection
    summary="nn.DataParallel(model) -> DDP scaffolding that runs as one process or under torchrun",
    report_note=(
        "Launching with DDP",
        "TM103 rewrote `nn.DataParallel` into DDP scaffolding. `python train.py` behaves as before "
        "(one process); launch multi-GPU training with `torchrun --nproc_per_node=N train.py`. "
        "`batch_size` is now **per process**: divide it by N to keep the global batch size.",
    ),
    emits=(
        "torch.distributed.run",
        "torch.utils.data.distributed.DistributedSampler(shuffle)",
    ),
)
