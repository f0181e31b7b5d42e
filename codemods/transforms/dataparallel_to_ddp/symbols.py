"""The names TM103 recognises (qualified, as `qualified_name` spells them) and the words that
find their statements before the tree is walked."""

from __future__ import annotations

from codemods.helpers.patterns import Words
from codemods.helpers.wrapped import WRAPPERS

DDP_NAME = "torch.nn.parallel.DistributedDataParallel"
DDP = frozenset({DDP_NAME, "torch.nn.parallel.distributed.DistributedDataParallel"})
DATAPARALLEL = WRAPPERS - DDP  # the wrappers TM103 replaces
# A script that already has a distributed path keeps DataParallel as its other branch.
ALREADY_DISTRIBUTED = DDP | {
    "torch.distributed.init_process_group",
    "torch.utils.data.distributed.DistributedSampler",
    "torch.utils.data.DistributedSampler",
}
DATALOADER = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
LOADER_POSITIONAL = ("dataset", "batch_size", "shuffle", "sampler", "batch_sampler", "num_workers")
# DataParallel's own arguments, kept for the plain multi-GPU run.
DP_ARGS = ("module", "device_ids", "output_device", "dim")
# What launches the scaffolding's distributed path (`torchrun`); a target without it gets none.
LAUNCHER = "torch.distributed.run"
# What a file that cannot be restructured needs surveyed: its DataParallel sites and its own
# distributed path (each spelled on its line, or through an import on a line that spells it).
SURVEYED = DATAPARALLEL | ALREADY_DISTRIBUTED
WRAP_WORDS = Words(r"\bDataParallel\b")
DISTRIBUTED_WORDS = Words(r"\b(?:DistributedDataParallel|init_process_group|DistributedSampler)\b")
# The helpers a restructured file calls; a module that defines one of its own is left alone.
CALLED_HELPERS = frozenset({"ddp_wrap", "ddp_sampler", "ddp_set_epoch", "is_main_process", "unwrap_model"})
