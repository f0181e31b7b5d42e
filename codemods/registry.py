"""The codemod pipeline: one ordered table, and how a selection is made from it."""

from __future__ import annotations

from typing import Iterable

# Each codemod declares itself once, in its module of codemods/gates/ (its SPEC); none of those
# imports the codemod's module (nor libcst), which happens on the first use of `Spec.codemod`,
# when a file is parsed for it. `list`, `explain` and a run over files no codemod can act on
# never pay for it.
from codemods.gates import FINDINGS_ONLY, Safety, Spec, Stage
from codemods.gates import (
    amp_namespace,
    autograd_function,
    bool_masks,
    checkpoint_reentrant,
    cuda_to_device,
    dataparallel_to_ddp,
    deprecated_api,
    empty_cache_without_del,
    era_defaults,
    explicit_cuda_index,
    h5py_lazy_open,
    import_style,
    legacy_syntax,
    load_map_location,
    load_trusted_pickles,
    load_weights_only,
    loss_accumulation,
    loss_reduction,
    missing_detach,
    moved_apis,
    numerics,
    performance_hints,
    python_compat,
    removed_apis,
    removed_internals,
    removed_keywords,
    scalar_first,
    scalar_item,
    softmax_without_dim,
    state_dict_prefix,
    torch_six,
    torchvision_weights,
    variable_removal,
)

__all__ = ["FINDINGS_ONLY", "PIPELINE", "CHECKS", "OPT_IN", "Safety", "Spec", "Stage", "all_specs", "get", "select", "held_back", "SelectionError"]


PIPELINE: tuple[Spec, ...] = (
    # First: it runs before parsing, and a file it repairs is what every other codemod reads.
    legacy_syntax.SPEC,
    # TM015 right after TM000, before TM001/TM002/TM003/TM006: it reads the file as its author
    # wrote it. Without a repository era it reads the file's own idioms (`Variable`, `volatile=`,
    # `size_average=`, `loss.data[0]`), which those codemods remove; and after TM006 renames
    # `F.upsample` an `F.interpolate` (0.4.1 or newer: today's default) could not be told from
    # a 0.3 `upsample`.
    era_defaults.SPEC,
    # TM001 by code: it edits loss keywords, which TM003 reads in either spelling.
    loss_reduction.SPEC,
    # TM002 before TM003/TM006/TM010: the codemods after it read values without `Variable(...)`.
    variable_removal.SPEC,
    # After TM002: `Variable(loss).data[0]` must first lose its wrapper to be seen as a loss.
    scalar_item.SPEC,
    # TM004 before TM010, which may find its `custom_fwd` already torch.amp's.
    amp_namespace.SPEC,
    # TM005 by code: it adds a keyword to checkpoint calls, which no other codemod reads.
    checkpoint_reentrant.SPEC,
    # TM006 after TM002/TM003: `Variable(...)` wrappers are gone, so argument positions are final.
    deprecated_api.SPEC,
    # TM007 and TM008 after TM006: the deprecated-API table may rename a name these then move.
    torch_six.SPEC,
    # TM008 after TM007 by code: they move different names.
    removed_internals.SPEC,
    # TM009 reads torchvision's builders only; no torch codemod before or after it reads them.
    # Its emits are the torchvision entries of torch_minimums.json, generated with its table.
    torchvision_weights.SPEC,
    # TM010 after TM004 (its `custom_fwd` may already be torch.amp's) and TM002 (no `Variable`
    # left in forward/backward); it rewrites whole Function classes and their call sites only.
    autograd_function.SPEC,
    # Before TM101: the `torch.cuda.BoolTensor(n)` it may write is one TM101 turns into `torch.empty(...)`.
    bool_masks.SPEC,
    # TM012 by code: the overloads it reorders (`add_(-lr, grad)`) no other codemod reads.
    scalar_first.SPEC,
    # Before TM101: `loss.backward(retain_variables=True)` is torch 0.3's; nothing else reads it.
    removed_keywords.SPEC,
    # TM014 after the TM00x/TM01x table codemods: it moves names none of them reads.
    moved_apis.SPEC,
    # TM1xx after the TM0xx codemods, which modernise the names the device code is written with;
    # TM101 first of them: TM102 and TM103 read the `.to(device)` it writes.
    cuda_to_device.SPEC,
    # after TM101: a load it rewrote to `.to(device)` first (`torch.load(f).cuda()`) keeps that move
    load_map_location.SPEC,
    # after TM101/TM102: their `.to(device)` is what TM103 moves inside the wrap; DDP must see the
    # model on its device before wrapping.
    dataparallel_to_ddp.SPEC,
    # after TM103: it recognises TM103's `ddp_wrap(...)` as a wrapped model, and reuses its helpers.
    state_dict_prefix.SPEC,
    # TM2xx after the TM1xx codemods: they rewrite `.cuda()`/`torch.load` inside datasets first,
    # and TM201 then moves whole statements (the open) without having to know about devices.
    h5py_lazy_open.SPEC,
    # After TM003: `total += loss.data[0]` is already `loss.item()` there, and TM002 has removed
    # `Variable(...)` wrappers that would hide a loss call from TM202.
    loss_accumulation.SPEC,
    # TM301 after TM1xx/TM2xx: TM102 adds `map_location=` first; this adds `weights_only=` after it.
    load_weights_only.SPEC,
    # TM302 right after TM301, whose decision it shares: it writes weights_only=False only where
    # TM301 wrote nothing, and TM301 never reads a load that already says weights_only=.
    load_trusted_pickles.SPEC,
    # TM401 last of the TM4xx slot, after TM3xx: plain Python/NumPy renames no other codemod reads.
    python_compat.SPEC,
)

# Findings-only checks (TM9xx): they rewrite nothing. They run before the codemods, so that their
# line numbers point into the file as its author wrote it (a codemod may add lines, e.g. TM101's
# `device = ...`). Kept out of PIPELINE, whose every entry rewrites something, but selected,
# listed and explained like the codemods. Among themselves by code: none reads another's output.
CHECKS: tuple[Spec, ...] = (
    missing_detach.SPEC,
    empty_cache_without_del.SPEC,
    softmax_without_dim.SPEC,
    explicit_cuda_index.SPEC,
    # TM905-TM908: the cases TorchFix reports, each with its way out.
    removed_apis.SPEC,
    numerics.SPEC,
    performance_hints.SPEC,
    import_style.SPEC,
)

# Opt-in: hints of style, not of migration (TM907's num_workers, TM908's import spelling), which
# would appear on nearly every file; they run only when a selection names them (`--select TM907`,
# a prefix such as `TM9`, or `ALL`).
OPT_IN = frozenset({"TM907", "TM908"})


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

    Unsafe codemods run only with `unsafe=True`, even when selected by name; the `OPT_IN` ones
    only when selected.
    """
    chosen = _matching(select) if select else {s.code for s in all_specs() if s.code not in OPT_IN}
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
