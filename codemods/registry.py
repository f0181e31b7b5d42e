"""The codemod pipeline: one ordered table, and how a selection is made from it."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from functools import cached_property
from typing import Iterable

from codemods.helpers.codemod import MigrationCodemod
from codemods.helpers.patterns import Words
from codemods.transforms import (
    amp_namespace,
    checkpoint_reentrant,
    cuda_to_device,
    dataparallel_to_ddp,
    deprecated_api,
    empty_cache_without_del,
    explicit_cuda_index,
    h5py_lazy_open,
    legacy_syntax,
    load_map_location,
    load_weights_only,
    loss_accumulation,
    loss_reduction,
    missing_detach,
    python_compat,
    removed_internals,
    scalar_item,
    softmax_without_dim,
    state_dict_prefix,
    torch_six,
    variable_removal,
)


class Safety(str, enum.Enum):
    SAFE = "safe"  # on by default; behaviour kept (or a crash becomes a correct run)
    REVIEW = "review"  # on by default; every change listed for review with its reason
    UNSAFE = "unsafe"  # only with --unsafe


FINDINGS_ONLY = "findings-only"


@dataclass(frozen=True)
class Spec:
    code: str
    name: str
    codemod: type[MigrationCodemod]
    safety: Safety
    triggers: tuple[str, ...]
    """Regular expressions; a file matching none of them is never parsed for this codemod."""

    @cached_property
    def trigger(self) -> tuple[Words, ...]:
        return tuple(Words(t) for t in self.triggers)

    @cached_property
    def sites(self) -> tuple[Words, ...]:
        """What makes a statement one of this codemod's candidates (see helpers/sites.py)."""
        return (*self.trigger, *(Words(s) for s in self.codemod.SITES))

    @property
    def summary(self) -> str:
        return self.codemod.DESCRIPTION

    @property
    def doc(self) -> str:
        return self.codemod.__doc__ or ""

    @property
    def kind(self) -> str:
        """The label `list`, `run` and every report show: the safety of a codemod, or
        "findings-only" for a TM9xx check (by policy, TM9xx codes rewrite nothing; their
        findings carry the same label, from the codemod's SAFETY)."""
        return FINDINGS_ONLY if self.code.startswith("TM9") else self.safety.value

    def fires_on(self, text: str) -> bool:
        return any(t.search(text) for t in self.trigger)


PIPELINE: tuple[Spec, ...] = (
    # First: it runs before parsing, and a file it repairs is what every other codemod reads.
    Spec("TM000", "legacy-syntax", legacy_syntax.LegacySyntax, Safety.SAFE, legacy_syntax.triggers()),
    Spec("TM001", "loss-reduction", loss_reduction.LossReduction, Safety.SAFE, loss_reduction.triggers()),
    Spec("TM002", "variable-removal", variable_removal.VariableRemoval, Safety.SAFE, variable_removal.triggers()),
    # After TM002: `Variable(loss).data[0]` must first lose its wrapper to be seen as a loss.
    Spec("TM003", "scalar-item", scalar_item.ScalarItem, Safety.SAFE, scalar_item.triggers()),
    Spec("TM004", "amp-namespace", amp_namespace.AmpNamespace, Safety.SAFE, amp_namespace.triggers()),
    Spec(
        "TM005",
        "checkpoint-reentrant",
        checkpoint_reentrant.CheckpointReentrant,
        Safety.SAFE,
        checkpoint_reentrant.triggers(),
    ),
    # TM006 after TM002/TM003: `Variable(...)` wrappers are gone, so argument positions are final.
    Spec("TM006", "deprecated-api", deprecated_api.DeprecatedApi, Safety.SAFE, deprecated_api.triggers()),
    # TM007 and TM008 after TM006: the deprecated-API table may rename a name these then move.
    Spec("TM007", "torch-six", torch_six.TorchSix, Safety.SAFE, torch_six.triggers()),
    Spec("TM008", "removed-internals", removed_internals.RemovedInternals, Safety.SAFE, removed_internals.triggers()),
    Spec("TM101", "cuda-to-device", cuda_to_device.CudaToDevice, Safety.SAFE, cuda_to_device.triggers()),
    # after TM101: reuses the `device` TM101 defined (or defines it the same way)
    Spec("TM102", "load-map-location", load_map_location.LoadMapLocation, Safety.REVIEW, load_map_location.triggers()),
    # after TM101/TM102: their `.to(device)` is what TM103 moves inside the wrap; DDP must see the
    # model on its device before wrapping.
    Spec(
        "TM103",
        "dataparallel-to-ddp",
        dataparallel_to_ddp.DataParallelToDDP,
        Safety.REVIEW,
        dataparallel_to_ddp.triggers(),
    ),
    # after TM103: it recognises TM103's `ddp_wrap(...)` as a wrapped model, and reuses its helpers.
    Spec(
        "TM104",
        "state-dict-prefix",
        state_dict_prefix.StateDictPrefix,
        Safety.SAFE,
        state_dict_prefix.triggers(),
    ),
    # TM2xx after the TM1xx codemods: they rewrite `.cuda()`/`torch.load` inside datasets first,
    # and TM201 then moves whole statements (the open) without having to know about devices.
    Spec("TM201", "h5py-lazy-open", h5py_lazy_open.H5pyLazyOpen, Safety.REVIEW, h5py_lazy_open.triggers()),
    # After TM003: `total += loss.data[0]` is already `loss.item()` there, and TM002 has removed
    # `Variable(...)` wrappers that would hide a loss call from TM202.
    Spec("TM202", "loss-accumulation", loss_accumulation.LossAccumulation, Safety.UNSAFE, loss_accumulation.triggers()),
    # TM301 after TM1xx/TM2xx: TM102 adds `map_location=` first; this adds `weights_only=` after it.
    Spec("TM301", "load-weights-only", load_weights_only.LoadWeightsOnly, Safety.REVIEW, load_weights_only.triggers()),
    # TM401 last of the TM4xx slot, after TM3xx: plain Python/NumPy renames no other codemod reads.
    Spec("TM401", "python-compat", python_compat.PythonCompat, Safety.SAFE, python_compat.triggers()),
)

# Findings-only checks (TM9xx): they rewrite nothing. They run before the codemods, so that their
# line numbers point into the file as its author wrote it (a codemod may add lines, e.g. TM101's
# `device = ...`). Kept out of PIPELINE, whose every entry rewrites something, but selected,
# listed and explained like the codemods.
CHECKS: tuple[Spec, ...] = (
    Spec("TM901", "missing-detach", missing_detach.MissingDetach, Safety.SAFE, missing_detach.triggers()),
    Spec("TM902", "empty-cache-without-del", empty_cache_without_del.EmptyCacheWithoutDel, Safety.SAFE, empty_cache_without_del.triggers()),
    Spec("TM903", "softmax-without-dim", softmax_without_dim.SoftmaxWithoutDim, Safety.SAFE, softmax_without_dim.triggers()),
    Spec("TM904", "explicit-cuda-index", explicit_cuda_index.ExplicitCudaIndex, Safety.SAFE, explicit_cuda_index.triggers()),
)



def all_specs() -> tuple[Spec, ...]:
    """Everything `run` can apply, in run order: the findings-only checks, then the codemods."""
    return CHECKS + PIPELINE


class SelectionError(ValueError):
    pass


def get(key: str) -> Spec:
    """A spec by code (`TM001`) or name (`loss-reduction`)."""
    wanted = key.strip()
    for spec in all_specs():
        if spec.code == wanted.upper() or spec.name == wanted:
            return spec
    raise SelectionError(f"unknown codemod {key!r}; `torch-migrate list` shows them")


def _matching(keys: Iterable[str]) -> set[str]:
    codes: set[str] = set()
    for raw in keys:
        key = raw.strip()
        if not key:
            continue
        upper = key.upper()
        hits = {s.code for s in all_specs() if s.code.startswith(upper) or s.name == key}
        if upper == "ALL":
            hits = {s.code for s in all_specs()}
        if not hits:
            raise SelectionError(f"unknown codemod or prefix {key!r}; `torch-migrate list` shows them")
        codes |= hits
    return codes


def select(
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    unsafe: bool = False,
) -> tuple[Spec, ...]:
    """The specs to run, in run order (`all_specs()`). Codes, names and prefixes (`TM1`) are accepted.

    Unsafe codemods run only with `unsafe=True`, even when selected by name.
    """
    chosen = _matching(select) if select else {s.code for s in all_specs()}
    dropped = _matching(ignore) if ignore else set()
    return tuple(
        s
        for s in all_specs()
        if s.code in chosen and s.code not in dropped and (unsafe or s.safety is not Safety.UNSAFE)
    )


def held_back(
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    unsafe: bool = False,
) -> tuple[Spec, ...]:
    """The unsafe specs an explicit `select` asks for that `select()` leaves out for want of
    `unsafe=True`: a selection that silently ran nothing would read as "nothing to do"."""
    if unsafe or not select:
        return ()
    asked = _matching(select) - (_matching(ignore) if ignore else set())
    return tuple(s for s in all_specs() if s.code in asked and s.safety is Safety.UNSAFE)
