"""The codemod pipeline: one ordered table, and how a selection is made from it."""

from __future__ import annotations

import ast
import enum
import importlib
import importlib.util
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Iterable

# The codemods' metadata is here and their gates are in codemods/gates/: neither imports a
# codemod's module (nor libcst), which happens on the first use of `Spec.codemod`, when a file is
# parsed for it. `list`, `explain` and a run over files no codemod can act on never pay for it.
from codemods.gates import NO_GATE, Gate
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
from codemods.helpers.patterns import Words

if TYPE_CHECKING:
    from codemods.helpers.codemod import MigrationCodemod


class Safety(str, enum.Enum):
    SAFE = "safe"  # on by default; behaviour kept (or a crash becomes a correct run)
    REVIEW = "review"  # on by default; every change listed for review with its reason
    UNSAFE = "unsafe"  # only with --unsafe


FINDINGS_ONLY = "findings-only"


@dataclass(frozen=True)
class Spec:
    code: str
    name: str
    target: type[MigrationCodemod] | str
    """The codemod class, or where it is (`"package.module:Class"`), imported on the first use of
    `codemod`."""
    safety: Safety
    triggers: tuple[str, ...]
    """Regular expressions; a file matching none of them is never parsed for this codemod."""
    summary: str = ""
    """One line: what it rewrites or reports (`list`, the README's table)."""
    gate: Gate = NO_GATE
    """What else decides, before parsing, whether it can act on a file (gates/__init__.py)."""
    emits: tuple[str, ...] = ()
    """The torch symbols newer than the oldest target (keys of codemods/data/torch_minimums.json)
    that its rewrites may write: where the target lacks one, that rewrite is held back with a
    finding (helpers/target_gate.py). The README's table shows what each needs; the tests check
    every fixture output against this list."""

    def __post_init__(self) -> None:
        if not self.summary and not isinstance(self.target, str):  # a class given in place: its own line
            object.__setattr__(self, "summary", vars(self.target).get("DESCRIPTION", ""))

    @cached_property
    def codemod(self) -> type[MigrationCodemod]:
        if not isinstance(self.target, str):
            return self.target
        module, _, name = self.target.partition(":")
        return getattr(importlib.import_module(module), name)

    @cached_property
    def trigger(self) -> tuple[Words, ...]:
        return tuple(Words(t) for t in self.triggers)

    @cached_property
    def sites(self) -> tuple[Words, ...]:
        """What makes a statement one of this codemod's candidates (see helpers/sites.py)."""
        return (*self.trigger, *(Words(s) for s in self.gate.sites))

    @property
    def doc(self) -> str:
        """The codemod's docstring; read from its module's source while the module is not
        imported (`explain` needs neither it nor libcst)."""
        if isinstance(self.target, str) and "codemod" not in self.__dict__:
            return _docstring(*self.target.split(":"))
        return self.codemod.__doc__ or ""

    @property
    def kind(self) -> str:
        """The label `list`, `run` and every report show: the safety of a codemod, or
        "findings-only" for a TM9xx check (by policy, TM9xx codes rewrite nothing; their
        findings carry the same label, from the codemod's SAFETY)."""
        return FINDINGS_ONLY if self.code.startswith("TM9") else self.safety.value

    @property
    def needs(self) -> tuple[tuple[str, tuple[int, int]], ...]:
        """(symbol, the torch it needs) for each symbol in `emits`, oldest first."""
        from codemods.versions import needed

        return tuple(sorted(((s, needed(s) or (1, 0)) for s in self.emits), key=lambda item: (item[1], item[0])))

    def fires_on(self, text: str) -> bool:
        return any(t.search(text) for t in self.trigger)


PIPELINE: tuple[Spec, ...] = (
    # First: it runs before parsing, and a file it repairs is what every other codemod reads.
    Spec(
        "TM000", "legacy-syntax", "codemods.transforms.legacy_syntax:LegacySyntax", Safety.SAFE,
        legacy_syntax.triggers(),
        summary="x.cuda(async=True) -> x.cuda(non_blocking=True), before parsing",
        gate=legacy_syntax.GATE,
    ),
    # TM015 right after TM000, before TM001/TM002/TM003/TM006: it reads the file as its author
    # wrote it. Without a repository era it reads the file's own idioms (`Variable`, `volatile=`,
    # `size_average=`, `loss.data[0]`), which those codemods remove; and after TM006 renames
    # `F.upsample` an `F.interpolate` (0.4.1 or newer: today's default) could not be told from
    # a 0.3 `upsample`.
    Spec(
        "TM015", "era-defaults", "codemods.transforms.era_defaults:EraDefaults", Safety.REVIEW,
        era_defaults.triggers(),
        summary="F.grid_sample(x, g) in code for torch < 1.3 -> align_corners=True (the old default); >= 1.3: False written out",
        gate=era_defaults.GATE,
        emits=(
            "torch.nn.functional.grid_sample(align_corners)",
            "torch.nn.functional.affine_grid(align_corners)",
        ),
    ),
    Spec(
        "TM001", "loss-reduction", "codemods.transforms.loss_reduction:LossReduction", Safety.SAFE,
        loss_reduction.triggers(),
        summary="nn.MSELoss(reduce=False) -> nn.MSELoss(reduction='none')",
        gate=loss_reduction.GATE,
    ),
    Spec(
        "TM002", "variable-removal", "codemods.transforms.variable_removal:VariableRemoval", Safety.SAFE,
        variable_removal.triggers(),
        summary="Variable(x) -> x; Variable(x, requires_grad=True) -> x.requires_grad_()",
        gate=variable_removal.GATE,
    ),
    # After TM002: `Variable(loss).data[0]` must first lose its wrapper to be seen as a loss.
    Spec(
        "TM003", "scalar-item", "codemods.transforms.scalar_item:ScalarItem", Safety.SAFE,
        scalar_item.triggers(),
        summary="loss.data[0] -> loss.item() (only on provably 0-dim values)",
        gate=scalar_item.GATE,
    ),
    Spec(
        "TM004", "amp-namespace", "codemods.transforms.amp_namespace:AmpNamespace", Safety.SAFE,
        amp_namespace.triggers(),
        summary='torch.cuda.amp.autocast() -> torch.amp.autocast("cuda")',
        emits=(
            "torch.autocast",
            "torch.amp.autocast",
            "torch.amp.GradScaler",
            "torch.amp.custom_fwd",
            "torch.amp.custom_bwd",
        ),
    ),
    Spec(
        "TM005", "checkpoint-reentrant", "codemods.transforms.checkpoint_reentrant:CheckpointReentrant", Safety.SAFE,
        checkpoint_reentrant.triggers(),
        summary="checkpoint(fn, x) -> checkpoint(fn, x, use_reentrant=True)",
        emits=(
            "torch.utils.checkpoint.checkpoint(use_reentrant)",
            "torch.utils.checkpoint.checkpoint_sequential(use_reentrant)",
        ),
    ),
    # TM006 after TM002/TM003: `Variable(...)` wrappers are gone, so argument positions are final.
    Spec(
        "TM006", "deprecated-api", "codemods.transforms.deprecated_api:DeprecatedApi", Safety.SAFE,
        deprecated_api.triggers(),
        summary="F.upsample -> F.interpolate, nn.init.xavier_uniform -> xavier_uniform_, torch.range -> arange,"
        " torch.solve/svd/lu/potrf/... -> torch.linalg (argument order and tuple results kept), ...",
        gate=deprecated_api.GATE,
        emits=(
            "torch.outer",
            "torch.linalg.cholesky",
            "torch.linalg.cholesky(upper)",
            "torch.linalg.eigh",
            "torch.linalg.eigvalsh",
            "torch.linalg.matrix_rank",
            "torch.linalg.matrix_rank(atol)",
            "torch.linalg.multi_dot",
            "torch.linalg.qr",
            "torch.linalg.solve",
            "torch.linalg.lu_factor",
            "torch.linalg.lu_factor_ex",
            "torch.linalg.lu_solve",
            "torch.linalg.solve_triangular",
            "torch.linalg.svd",
            "torch.linalg.vector_norm",
            "torch.linalg.matrix_norm",
            "torch.Tensor.mH",
            "torch.Tensor.mT",
            "torch.cholesky_solve",
            "torch.cholesky_inverse",
            "torch.lu_unpack",
            "torch.testing.assert_close",
        ),
    ),
    # TM007 and TM008 after TM006: the deprecated-API table may rename a name these then move.
    Spec(
        "TM007", "torch-six", "codemods.transforms.torch_six:TorchSix", Safety.SAFE,
        torch_six.triggers(),
        summary="from torch._six import string_classes -> (str, bytes), and the rest of torch._six",
    ),
    Spec(
        "TM008", "removed-internals", "codemods.transforms.removed_internals:RemovedInternals", Safety.SAFE,
        removed_internals.triggers(),
        summary="_LRScheduler -> LRScheduler, private DataLoader paths, zero_gradients, type-name tests -> dtype",
        emits=(
            "torch.hub.load_state_dict_from_url",
            "torch.utils.data.get_worker_info",
            "torch.utils.data.default_collate",
            "torch.utils.data.default_convert",
            "torch.optim.lr_scheduler.LRScheduler",
        ),
    ),
    # TM009 reads torchvision's builders only; no torch codemod before or after it reads them.
    # Its emits are the torchvision entries of torch_minimums.json, generated with its table.
    Spec(
        "TM009", "torchvision-weights", "codemods.transforms.torchvision_weights:TorchvisionWeights", Safety.SAFE,
        torchvision_weights.triggers(),
        summary="models.resnet50(pretrained=True) -> models.resnet50(weights=models.ResNet50_Weights.IMAGENET1K_V1)",
        gate=torchvision_weights.GATE,
        emits=torchvision_weights.emits(),
    ),
    # TM010 after TM004 (its `custom_fwd` may already be torch.amp's) and TM002 (no `Variable`
    # left in forward/backward); it rewrites whole Function classes and their call sites only.
    Spec(
        "TM010", "autograd-function", "codemods.transforms.autograd_function:AutogradFunction", Safety.REVIEW,
        autograd_function.triggers(),
        summary="legacy Function with instance forward/backward -> @staticmethod forward(ctx, ...); Fn(a)(x) -> Fn.apply(x, a)",
        gate=autograd_function.GATE,
    ),
    # Before TM101: the `torch.cuda.BoolTensor(n)` it may write is one TM101 turns into `torch.empty(...)`.
    Spec(
        "TM011", "bool-masks", "codemods.transforms.bool_masks:BoolMasks", Safety.SAFE,
        bool_masks.triggers(),
        summary="(x == pad).byte() / torch.ByteTensor / dtype=torch.uint8 used as a mask -> .bool() / BoolTensor / torch.bool",
        gate=bool_masks.GATE,
        emits=(
            "torch.bool",
            "torch.BoolTensor",
            "torch.cuda.BoolTensor",
        ),
    ),
    Spec(
        "TM012", "scalar-first-overloads", "codemods.transforms.scalar_first:ScalarFirst", Safety.SAFE,
        scalar_first.triggers(),
        summary="p.data.add_(-lr, grad) -> add_(grad, alpha=-lr); addcmul_(v, a, b) -> addcmul_(a, b, value=v)",
        gate=scalar_first.GATE,
    ),
    # Before TM101: `loss.backward(retain_variables=True)` is torch 0.3's; nothing else reads it.
    Spec(
        "TM013", "removed-keywords", "codemods.transforms.removed_keywords:RemovedKeywords", Safety.SAFE,
        removed_keywords.triggers(),
        summary="loss.backward(retain_variables=True) -> retain_graph=True; autograd.backward(variables=, grad_variables=)",
    ),
    # TM014 after the TM00x/TM01x table codemods: it moves names none of them reads.
    Spec(
        "TM014", "moved-apis", "codemods.transforms.moved_apis:MovedApis", Safety.SAFE,
        moved_apis.triggers(),
        summary="functorch.vmap -> torch.func.vmap; weight_norm -> parametrizations.weight_norm; sdp_kernel -> sdpa_kernel; x.require_grad -> requires_grad",
        gate=moved_apis.GATE,
        emits=(
            "torch.func.vmap",
            "torch.func.grad",
            "torch.func.grad_and_value",
            "torch.func.vjp",
            "torch.func.jvp",
            "torch.func.jacrev",
            "torch.func.jacfwd",
            "torch.func.hessian",
            "torch.func.functionalize",
            "torch.nn.utils.parametrizations.weight_norm",
            "torch.nn.utils.parametrize.remove_parametrizations",
            "torch.nn.attention.sdpa_kernel",
            "torch.nn.attention.SDPBackend",
            "torch.nn.attention.SDPBackend.FLASH_ATTENTION",
            "torch.nn.attention.SDPBackend.EFFICIENT_ATTENTION",
            "torch.nn.attention.SDPBackend.MATH",
            "torch.nn.attention.SDPBackend.CUDNN_ATTENTION",
            "torch.utils._pytree.register_pytree_node",
        ),
    ),
    Spec(
        "TM101", "cuda-to-device", "codemods.transforms.cuda_to_device:CudaToDevice", Safety.SAFE,
        cuda_to_device.triggers(),
        summary="x.cuda() -> x.to(device); torch.cuda.FloatTensor(n) -> torch.empty(n, dtype=..., device=device)",
        gate=cuda_to_device.GATE,
        emits=(
            "torch.set_default_device",
        ),
    ),
    # after TM101: a load it rewrote to `.to(device)` first (`torch.load(f).cuda()`) keeps that move
    Spec(
        "TM102", "load-map-location", "codemods.transforms.load_map_location:LoadMapLocation", Safety.REVIEW,
        load_map_location.triggers(),
        summary='torch.load(f) -> torch.load(f, map_location="cpu") for state dicts, else the CPU fallback only',
        gate=load_map_location.GATE,
    ),
    # after TM101/TM102: their `.to(device)` is what TM103 moves inside the wrap; DDP must see the
    # model on its device before wrapping.
    Spec(
        "TM103", "dataparallel-to-ddp", "codemods.transforms.dataparallel_to_ddp:DataParallelToDDP", Safety.REVIEW,
        dataparallel_to_ddp.triggers(),
        summary="nn.DataParallel(model) -> DDP scaffolding that runs as one process or under torchrun",
        gate=dataparallel_to_ddp.GATE,
        emits=(
            "torch.distributed.run",
            "torch.utils.data.distributed.DistributedSampler(shuffle)",
        ),
    ),
    # after TM103: it recognises TM103's `ddp_wrap(...)` as a wrapped model, and reuses its helpers.
    Spec(
        "TM104", "state-dict-prefix", "codemods.transforms.state_dict_prefix:StateDictPrefix", Safety.SAFE,
        state_dict_prefix.triggers(),
        summary="torch.save(dp_model.state_dict()) -> unwrap first; strip `module.` with consume_prefix_in_state_dict_if_present",
        gate=state_dict_prefix.GATE,
        emits=(
            "torch.nn.modules.utils.consume_prefix_in_state_dict_if_present",
        ),
    ),
    # TM2xx after the TM1xx codemods: they rewrite `.cuda()`/`torch.load` inside datasets first,
    # and TM201 then moves whole statements (the open) without having to know about devices.
    Spec(
        "TM201", "h5py-lazy-open", "codemods.transforms.h5py_lazy_open:H5pyLazyOpen", Safety.REVIEW,
        h5py_lazy_open.triggers(),
        summary="self.f = h5py.File(p) in Dataset.__init__ -> one lazily opened handle per process",
        gate=h5py_lazy_open.GATE,
    ),
    # After TM003: `total += loss.data[0]` is already `loss.item()` there, and TM002 has removed
    # `Variable(...)` wrappers that would hide a loss call from TM202.
    Spec(
        "TM202", "loss-accumulation", "codemods.transforms.loss_accumulation:LossAccumulation", Safety.UNSAFE,
        loss_accumulation.triggers(),
        summary="total += loss (a Python number accumulating a loss tensor) -> total += loss.item()",
    ),
    # TM301 after TM1xx/TM2xx: TM102 adds `map_location=` first; this adds `weights_only=` after it.
    Spec(
        "TM301", "load-weights-only", "codemods.transforms.load_weights_only:LoadWeightsOnly", Safety.REVIEW,
        load_weights_only.triggers(),
        summary="torch.load(f) -> torch.load(f, weights_only=True) for state dicts, else False + finding",
        gate=load_weights_only.GATE,
        emits=(
            "torch.load(weights_only)",
            "torch.serialization.load(weights_only)",
        ),
    ),
    # TM401 last of the TM4xx slot, after TM3xx: plain Python/NumPy renames no other codemod reads.
    Spec(
        "TM401", "python-compat", "codemods.transforms.python_compat:PythonCompat", Safety.SAFE,
        python_compat.triggers(),
        summary="collections.Mapping -> collections.abc.Mapping; np.Inf/np.float/... -> np.inf/float/...",
        gate=python_compat.GATE,
    ),
)

# Findings-only checks (TM9xx): they rewrite nothing. They run before the codemods, so that their
# line numbers point into the file as its author wrote it (a codemod may add lines, e.g. TM101's
# `device = ...`). Kept out of PIPELINE, whose every entry rewrites something, but selected,
# listed and explained like the codemods.
CHECKS: tuple[Spec, ...] = (
    Spec(
        "TM901", "missing-detach", "codemods.transforms.missing_detach:MissingDetach", Safety.SAFE,
        missing_detach.triggers(),
        summary="a model's output feeds another model's loss without .detach() (GAN, teacher-student)",
        gate=missing_detach.GATE,
    ),
    Spec(
        "TM902", "empty-cache-without-del", "codemods.transforms.empty_cache_without_del:EmptyCacheWithoutDel", Safety.SAFE,
        empty_cache_without_del.triggers(),
        summary="torch.cuda.empty_cache() with nothing deleted before it",
        gate=empty_cache_without_del.GATE,
    ),
    Spec(
        "TM903", "softmax-without-dim", "codemods.transforms.softmax_without_dim:SoftmaxWithoutDim", Safety.SAFE,
        softmax_without_dim.triggers(),
        summary="F.softmax(x) / nn.Softmax() without dim (the implicit choice is deprecated)",
        gate=softmax_without_dim.GATE,
    ),
    Spec(
        "TM904", "explicit-cuda-index", "codemods.transforms.explicit_cuda_index:ExplicitCudaIndex", Safety.SAFE,
        explicit_cuda_index.triggers(),
        summary=".cuda(i) with an explicit device index fails without CUDA",
    ),
    # TM905-TM907: TorchFix's findings (issue 16), each with its way out; after TM904, by code.
    Spec(
        "TM905", "removed-apis", "codemods.transforms.removed_apis:RemovedApis", Safety.SAFE,
        removed_apis.triggers(),
        summary="torch.utils.ffi, load_lua, torch.legacy, ._backend, the old torch.rfft/fft API: removed, with the code to write instead",
        gate=removed_apis.GATE,
    ),
    Spec(
        "TM906", "numerics", "codemods.transforms.numerics:Numerics", Safety.SAFE,
        numerics.triggers(),
        summary="torch.log(1 + x) -> log1p, torch.exp(x) - 1 -> expm1, log(sum(exp(x))) -> logsumexp",
        gate=numerics.GATE,
    ),
    Spec(
        "TM907", "performance-hints", "codemods.transforms.performance_hints:PerformanceHints", Safety.SAFE,
        performance_hints.triggers(),
        summary="DataLoader without num_workers; zero_grad(set_to_none=False)",
    ),
    Spec(
        "TM908", "import-style", "codemods.transforms.import_style:ImportStyle", Safety.SAFE,
        import_style.triggers(),
        summary="import torchvision.models as models -> from torchvision import models; torch.library.Library in tests",
    ),
)


def _docstring(module: str, name: str) -> str:
    """Class `name`'s docstring, from the ast of `module`'s source (not imported)."""
    source = importlib.util.find_spec(module).loader.get_source(module)
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return ast.get_docstring(node, clean=False) or ""
    raise LookupError(f"{module} defines no class {name}")


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
