"""The codemod pipeline: one ordered table, and how a selection is made from it."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Iterable

from codemods.helpers.codemod import MigrationCodemod
from codemods.transforms import (
    cuda_to_device,
    empty_cache_without_del,
    explicit_cuda_index,
    load_map_location,
    loss_reduction,
    missing_detach,
    softmax_without_dim,
)


class Safety(str, enum.Enum):
    SAFE = "safe"  # on by default; behaviour kept (or a crash becomes a correct run)
    REVIEW = "review"  # on by default; every change listed for review with its reason
    UNSAFE = "unsafe"  # only with --unsafe


@dataclass(frozen=True)
class Spec:
    code: str
    name: str
    codemod: type[MigrationCodemod]
    safety: Safety
    triggers: tuple[str, ...]
    """Regular expressions; a file matching none of them is never parsed for this codemod."""

    @cached_property
    def trigger(self) -> re.Pattern[str]:
        return re.compile("|".join(f"(?:{t})" for t in self.triggers))

    @property
    def summary(self) -> str:
        return self.codemod.DESCRIPTION

    @property
    def doc(self) -> str:
        return self.codemod.__doc__ or ""

    def fires_on(self, text: str) -> bool:
        return self.trigger.search(text) is not None


PIPELINE: tuple[Spec, ...] = (
    Spec("TM001", "loss-reduction", loss_reduction.LossReduction, Safety.SAFE, loss_reduction.triggers()),
    Spec("TM101", "cuda-to-device", cuda_to_device.CudaToDevice, Safety.SAFE, cuda_to_device.triggers()),
    # after TM101: reuses the `device` TM101 defined (or defines it the same way)
    Spec("TM102", "load-map-location", load_map_location.LoadMapLocation, Safety.REVIEW, load_map_location.triggers()),
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

ALL: tuple[Spec, ...] = CHECKS + PIPELINE
"""Everything `run` can apply, in run order: the findings-only checks, then the codemods."""

_BY_KEY = {**{s.code: s for s in ALL}, **{s.name: s for s in ALL}}


class SelectionError(ValueError):
    pass


def get(key: str) -> Spec:
    """A spec by code (`TM001`) or name (`loss-reduction`)."""
    try:
        return _BY_KEY[key.strip().upper() if key.strip().upper() in _BY_KEY else key.strip()]
    except KeyError:
        raise SelectionError(f"unknown codemod {key!r}; `torch-migrate list` shows them") from None


def _matching(keys: Iterable[str]) -> set[str]:
    codes: set[str] = set()
    for raw in keys:
        key = raw.strip()
        if not key:
            continue
        upper = key.upper()
        hits = {s.code for s in ALL if s.code.startswith(upper) or s.name == key}
        if upper == "ALL":
            hits = {s.code for s in ALL}
        if not hits:
            raise SelectionError(f"unknown codemod or prefix {key!r}; `torch-migrate list` shows them")
        codes |= hits
    return codes


def select(
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    unsafe: bool = False,
) -> tuple[Spec, ...]:
    """The specs to run, in run order (`ALL`). Codes, names and prefixes (`TM1`) are accepted.

    Unsafe codemods run only with `unsafe=True`, even when selected by name.
    """
    chosen = _matching(select) if select else {s.code for s in ALL}
    dropped = _matching(ignore) if ignore else set()
    return tuple(
        s
        for s in ALL
        if s.code in chosen and s.code not in dropped and (unsafe or s.safety is not Safety.UNSAFE)
    )
